"""Wall clock and CPU time of docs/baselines.md's `baseline sif --data demo --tune` and its quicker variant, each
in a fresh process with an empty cache (so every fastText model of the grid is trained), and what the grid trains.

    python bench/sif_tune_demo.py [--variant full|quick|both] [--work-dir DIR]

`--tune` trains one fastText model per (epochs, lr) of its grid, single-threaded (threads=1 keeps the vectors
reproducible), and scores SIF's five values of `a` on each: on the demo suite 9 models, 84M corpus tokens x
epochs, at about 0.12M tokens per CPU second. CPU time is what an idle core would take; the wall clock on a shared
machine is that divided by the process's share of a core. Prints one markdown row per variant with the load
average before and after.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

VARIANTS = {
    "full": ["--tune"],
    "quick": ["--tune", "-p", "tune_max_tokens=13000000"],
}
"""The documented command and its quicker variant (the 3 cheapest fastText models: half the default epochs)."""


def timed(arguments: list[str], work: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of `scidocs-eval baseline sif --data demo ARGUMENTS` in a fresh cache."""
    cache = Path(tempfile.mkdtemp(prefix="cache-", dir=work))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "scidocs_eval.cli", "baseline", "sif", "--data", "demo", *arguments,
                    "--quiet", "--out-dir", str(cache / "results")], check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "SCIDOCS_EVAL_CACHE": str(cache)})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return time.perf_counter() - started, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=[*VARIANTS, "both"], default="both")
    parser.add_argument("--work-dir", type=Path, default=Path(tempfile.gettempdir()) / "scidocs-sif-tune")
    args = parser.parse_args()
    args.work_dir.mkdir(parents=True, exist_ok=True)
    print(f"{platform.node()}, {os.cpu_count()} cores, {date.today()}")
    print("| variant | arguments | wall | CPU | load average before, after |\n|---|---|---|---|---|")
    for name in VARIANTS if args.variant == "both" else [args.variant]:
        load_before = os.getloadavg()[0]
        wall, cpu = timed(VARIANTS[name], args.work_dir)
        print(f"| {name} | `{' '.join(VARIANTS[name])}` | {wall / 60:.1f} min | {cpu / 60:.1f} min | "
              f"{load_before:.1f}, {os.getloadavg()[0]:.1f} |", flush=True)


if __name__ == "__main__":
    main()
