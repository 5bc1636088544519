"""A two-process torchrun run before and after: every results file and every saved embeddings file identical, and
the issue's measured case (after a torchrun `baseline transformer`, the same command without torchrun embeds
nothing: a cache hit).

For each checkout (this one, and `--before`, each with its own `.venv`), with a fresh embedding cache of its own:

1. `python -m torch.distributed.run --standalone --nproc-per-node 2 -m scidocs_eval.cli baseline transformer
   --model all-MiniLM-L6-v2 --data SUITE --tasks cite,cocite --max-length 64 --device cpu --out-dir torchrun/`
   (the packaged MiniLM, gloo on CPU; each checkout's own Python, so its own code runs);
2. the same command on one process (`--out-dir single/`), with the cache's vector count before and after it.

SUITE is one demo suite (`scidocs-eval demo`) built once and read by both. Prints every value of the results files
that differs (timings, each task's seconds, paths and the settings record aside), whether the embeddings files are
byte-identical, and how many vectors each one-process run added to the cache; exit status 1 when anything differs.

    python bench/torchrun_equal.py --before /work/wt/before [--reuse-before]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from results_equal import differences

OUT = Path(__file__).resolve().parent / "out" / "torchrun"
COMMAND = ["baseline", "transformer", "--model", "all-MiniLM-L6-v2", "--tasks", "cite,cocite", "--max-length", "64",
           "--device", "cpu", "--quiet"]
NOT_COMPARED = ("settings", "model_info")
"""what a results file records of how it was run (its shape changed with the typed config): not a score."""


def _environment(cache: Path) -> dict[str, str]:
    return {**os.environ, "SCIDOCS_EVAL_CACHE": str(cache), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1"}


def cached_vectors(python: Path, checkout: Path, cache: Path) -> str:
    """`scidocs-eval cache info`'s line of how many vectors the cache holds."""
    done = subprocess.run([str(python), "-m", "scidocs_eval.cli", "cache", "info", "--quiet"], cwd=checkout,
                          env=_environment(cache), check=True, capture_output=True, text=True)
    return next((line for line in done.stdout.splitlines() if "vector" in line), done.stdout.strip())


def run_checkout(checkout: Path, label: str, suite: Path, reuse: bool = False) -> dict[str, Any]:
    python = checkout / ".venv" / "bin" / "python"
    folder, cache = OUT / label, OUT / label / "cache"
    record = folder / "run.json"
    if reuse and record.is_file():
        return {**json.loads(record.read_text(encoding="utf-8")), "folder": folder}
    if folder.exists():
        shutil.rmtree(folder)  # bench/out is this script's own scratch folder
    folder.mkdir(parents=True, exist_ok=True)
    command = [*COMMAND, "--data", str(suite)]
    started = time.perf_counter()
    subprocess.run([str(python), "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m",
                    "scidocs_eval.cli", *command, "--out-dir", str(folder / "torchrun")], cwd=checkout,
                   env=_environment(cache), check=True)
    torchrun_seconds = time.perf_counter() - started
    before = cached_vectors(python, checkout, cache)
    started = time.perf_counter()
    subprocess.run([str(python), "-m", "scidocs_eval.cli", *command, "--out-dir", str(folder / "single")],
                   cwd=checkout, env=_environment(cache), check=True)
    single_seconds = time.perf_counter() - started
    after = cached_vectors(python, checkout, cache)
    single = json.loads((folder / "single" / "transformer.results.json").read_text(encoding="utf-8"))
    run = {"cache_before": before, "cache_after": after, "torchrun_s": torchrun_seconds, "single_s": single_seconds,
           "single_embed_s": single.get("timings", {}).get("embed")}
    record.write_text(json.dumps(run), encoding="utf-8")
    return {**run, "folder": folder}


def _scores(path: Path) -> dict[str, Any]:
    record = json.loads(path.read_text(encoding="utf-8"))
    return {key: value for key, value in record.items() if key not in NOT_COMPARED}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="the other checkout (with its .venv)")
    parser.add_argument("--reuse-before", action="store_true",
                        help="keep the other checkout's run of an earlier call of this script (its code is fixed)")
    args = parser.parse_args()
    after_checkout = Path(__file__).resolve().parents[1]
    suite = OUT / "suite"
    if not suite.exists():
        subprocess.run([str(after_checkout / ".venv" / "bin" / "python"), "-m", "scidocs_eval.cli", "demo",
                        str(suite), "--quiet"], check=True, capture_output=True)
    runs = {"before": run_checkout(args.before.resolve(), "before", suite, args.reuse_before),
            "after": run_checkout(after_checkout, "after", suite)}
    failed = False
    for kind in ("torchrun", "single"):
        found, compared = differences(_scores(runs["before"]["folder"] / kind / "transformer.results.json"),
                                      _scores(runs["after"]["folder"] / kind / "transformer.results.json"))
        print(f"{kind} results file: {compared} values compared, {len(found)} differ")
        for line in found:
            print("  " + line)
        failed |= bool(found)
        names = sorted(p.name for p in (runs["after"]["folder"] / kind).glob("*.jsonl"))
        for name in names:
            same = (runs["before"]["folder"] / kind / name).read_bytes() == \
                (runs["after"]["folder"] / kind / name).read_bytes()
            print(f"{kind} embeddings file {name}: {'identical' if same else 'DIFFERENT'}")
            failed |= not same
    for label, run in runs.items():
        print(f"{label}: torchrun run {run['torchrun_s']:.1f} s; then one process {run['single_s']:.1f} s "
              f"(embed {run['single_embed_s']} s); cache before the one-process run: {run['cache_before']}; "
              f"after: {run['cache_after']}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
