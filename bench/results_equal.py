"""Every results file equal before and after: the demo suite's and the synthetic `sci` suite's, on this checkout
and another (``--before``), each in its own virtual environment.

- demo: `scidocs-eval baseline random --data demo --out-dir ...` (the seven SciDocs tasks, their intervals);
- sci: the synthetic copies of MTEB's retrieval and reranking tasks (`tests/builders.py`) and synthetic SciRepEval
  data with its ranking tasks, scored by `evaluate_model` with a hash encoder.

Prints every value that differs (times and the embeddings file's path aside) and how many were compared; exit
status 1 when any differs.

    python bench/results_equal.py --before /work/main
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "out"

SCI = r"""
import hashlib, sys
from pathlib import Path
import numpy as np
sys.path.insert(0, "tests")
from builders import write_mteb_copies
from scidocs_eval import evaluate_model
from scidocs_eval.evaluation.task import task_names
try:
    from scidocs_eval.tasks.scirepeval import write_synthetic_scirepeval
except ImportError:  # a checkout before the benchmark owned its task table
    from scidocs_eval.data.scirepeval import write_synthetic_scirepeval

class HashEncoder:
    def encode(self, texts, batch_size=32, **kwargs):
        return np.stack([np.frombuffer(hashlib.sha256(t.encode()).digest(), dtype=np.uint8)[:16].astype(np.float32)
                         / 127.5 - 1 for t in texts])

data, output = Path(sys.argv[1]), Path(sys.argv[2])
if not data.exists():
    write_synthetic_scirepeval(data)
    write_mteb_copies(data, ("mteb-scidocs", "mteb-sci"))
tasks = [name for benchmark in ("mteb-scidocs", "mteb-sci") for name in task_names(benchmark=benchmark)
         if not any(kind in name for kind in ("clustering", "arxiv"))]  # the retrieval and reranking tasks
tasks += ["scirepeval-search", "scirepeval-relish", "scirepeval-scidocs-cite", "scirepeval-paper-reviewer-matching"]
evaluate_model(HashEncoder(), data, tasks=tasks, benchmark="sci", cache=False, progress=False, name="org/hash",
               output=output)
"""

IGNORED = ("timings", "seconds", "path")
"""keys whose values differ from run to run: times, and where each checkout wrote its embeddings file."""


def differences(before: Any, after: Any, path: str = "") -> tuple[list[str], int]:
    """(the paths whose values differ, the number of values compared)."""
    if path.rsplit("/", 1)[-1] in IGNORED:
        return [], 0
    if type(before) is not type(after):
        return [f"{path}: {before!r} != {after!r}"], 1
    if isinstance(before, dict):
        found, compared = [f"{path}/{k}: only one side" for k in set(before) ^ set(after)], 0
        for key in set(before) & set(after):
            more, count = differences(before[key], after[key], f"{path}/{key}")
            found, compared = found + more, compared + count
        return found, compared
    if isinstance(before, list):
        if len(before) != len(after):
            return [f"{path}: {len(before)} values != {len(after)}"], 1
        found, compared = [], 0
        for index, (one, other) in enumerate(zip(before, after)):
            more, count = differences(one, other, f"{path}[{index}]")
            found, compared = found + more, compared + count
        return found, compared
    return ([] if before == after else [f"{path}: {before!r} != {after!r}"]), 1


def results(checkout: Path, label: str) -> dict[str, Any]:
    python, folder = checkout / ".venv" / "bin" / "python", OUT / f"results-{label}"
    subprocess.run([str(python), "-m", "scidocs_eval.cli", "baseline", "random", "--data", "demo", "--out-dir",
                    str(folder), "--quiet", "--overwrite"], cwd=checkout, check=True, capture_output=True)
    subprocess.run([str(python), "-c", SCI, str(OUT / "sci-synthetic"), str(folder / "sci.results.json")],
                   cwd=checkout, check=True, capture_output=True)
    return {name: json.loads((folder / f"{name}.results.json").read_text()) for name in ("random", "sci")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="the other checkout (with its .venv)")
    args = parser.parse_args()
    before = results(args.before.resolve(), "before")
    after = results(Path(__file__).resolve().parents[1], "after")
    failed = False
    for name in before:
        found, compared = differences(before[name], after[name])
        print(f"{name}: {compared} values compared, {len(found)} differ")
        for line in found:
            print("  " + line)
        failed |= bool(found)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
