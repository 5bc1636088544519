"""What a small run costs around its arithmetic: building the demo suite, `baseline random` on MeSH and cite, and a
seven-task `run` on the demo, on this checkout and (``--before``) another, each in its own virtual environment.

Each command runs `--repeat` times in a fresh interpreter, with a cache of its own that already holds the demo
suite (built once first, not timed, except by the `demo` command itself); the script prints the median wall time
and whether the command imported scikit-learn (about two seconds of a run before the folds and the F1 were
computed in its own steps). `--scidocs-scale` adds `demo --scale scidocs` (tens of seconds each).

    python bench/run_costs.py --before /work/main
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

PROBE = r"""
import sys
from scidocs_eval.cli.main import main
status = main(sys.argv[1:])
print(status, "sklearn" in sys.modules)
"""


def commands(folder: Path, scidocs_scale: bool) -> dict[str, list[str]]:
    embeddings = folder / "all" / "random.jsonl"
    listed = {
        "demo (small)": ["demo", str(folder / "demo-small"), "--quiet"],
        "baseline random, mesh and cite": ["baseline", "random", "--data", "demo", "--tasks", "mesh,cite", "--quiet",
                                           "--out-dir", str(folder / "mesh-cite")],
        "run, seven tasks": ["run", "--embeddings", str(embeddings), "--data", "demo", "--quiet", "-o",
                             str(folder / "run.results.json")],
    }
    if scidocs_scale:
        listed["demo --scale scidocs"] = ["demo", str(folder / "demo-scidocs"), "--scale", "scidocs", "--quiet"]
    return listed


def measure(checkout: Path, argv: list[str], repeat: int, environment: dict[str, str]) -> tuple[float, bool]:
    """Median wall seconds (interpreter start included) and whether scikit-learn was imported; run in `checkout`
    (`python -c` imports the package of its working directory)."""
    python = checkout / ".venv" / "bin" / "python"
    walls, imported = [], False
    for _ in range(repeat):
        began = time.perf_counter()
        done = subprocess.run([str(python), "-c", PROBE, *argv], capture_output=True, text=True, check=True,
                              env=environment, cwd=checkout)
        walls.append(time.perf_counter() - began)
        status, sklearn = done.stdout.split()[-2:]
        assert status == "0", done.stderr
        imported = sklearn == "True"
    return statistics.median(walls), imported


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="another checkout (with its .venv) to measure first")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scidocs-scale", action="store_true", help="also time `demo --scale scidocs`")
    args = parser.parse_args()
    here = Path(__file__).resolve().parents[1]
    print(f"{platform.node()}, {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d %H:%M')}, load before "
          f"{os.getloadavg()[0]:.1f}; median of {args.repeat}")
    for label, checkout in ([("before", args.before)] if args.before else []) + [("after", here)]:
        checkout = checkout.resolve()
        with tempfile.TemporaryDirectory() as temporary:
            folder = Path(temporary)
            environment = {**os.environ, "SCIDOCS_EVAL_CACHE": str(folder / "cache"), "SCIDOCS_EVAL_QUIET": "1"}
            subprocess.run([str(checkout / ".venv" / "bin" / "python"), "-m", "scidocs_eval.cli", "baseline", "random",
                            "--data", "demo", "--quiet", "--out-dir", str(folder / "all")], check=True, env=environment,
                           capture_output=True, cwd=checkout)
            for name, argv in commands(folder, args.scidocs_scale).items():
                wall, sklearn = measure(checkout, argv, args.repeat, environment)
                print(f"{label:6} {name:32} wall {wall:6.2f} s  imports scikit-learn: {'yes' if sklearn else 'no'}")
    print(f"load after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
