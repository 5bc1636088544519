"""A fuzzer over every leaf command, generated from the parser itself.

Each example runs `main(argv)` in-process, in a fresh folder holding copies of hostile inputs (empty, binary,
non-UTF-8, truncated JSON, results files with fields removed or retyped) and of a tiny valid suite, embeddings
and results file; the options get random values of random types. Every run must end with exit status 0, or 2
with one line `scidocs-eval: error: ...` (other stderr lines only our own warnings); an exception that is not ours
propagates and fails the test with its traceback; no library warning may be raised; no file may change outside
the outputs the command declares (`add_output`). Commands too slow to run for real here (training, transformer
models, the network) always get one out-of-range value as well, so they are fuzzed on their argument and
validation paths: those must fail before any work starts.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scidocs_eval.cli.main import build_parser, leaf_parsers, main
from scidocs_eval.cli.options import output_actions
from scidocs_eval.data.demo import DemoConfig, build_demo_suite
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.runner import evaluate

PARSER = build_parser()
LEAVES = {leaf.prog.removeprefix("scidocs-eval").strip(): leaf for leaf in leaf_parsers(PARSER)}
VALIDATION_ONLY = {"train specter": ["--epochs", "0"], "data download": ["--retries", "-1"]}
"""commands that only get fuzzed up to their checks, with the bad value that must stop them before any work."""
CHEAP_ADAPTERS = ("random", "tfidf")
EXPENSIVE_CHOICES = {"--scale": {"scidocs"}}
INPUTS = ["empty.txt", "binary.bin", "latin1.txt", "truncated.json", "emb.jsonl", "results.json", "suite",
          "metadata.json", "papers.jsonl", "citations.tsv", "suite/cite/test.qrel", "suite/mag/train.csv",
          "no-such-file", "suite/..", "results_damaged.json"]
PLAUSIBLE = {"embeddings": "emb.jsonl", "cls": "emb.jsonl", "user_citation": "emb.jsonl", "recomm": "emb.jsonl",
             "results": "results.json", "data": "suite", "dir": "suite", "metadata": "metadata.json",
             "papers": "papers.jsonl", "citations": "citations.tsv", "train_corpus": "papers.jsonl",
             "run_dir": "suite", "task": "mag", "data_dir": "suite", "name": "mine"}
"""a value that makes sense for an option, so that many examples get past the checks and do the work."""
NUMBERS = ["0", "1", "-1", "2", "3", "0.5", "1e309", "nan", "inf", "-0", "99999999999999999999999", "1.5", "abc",
           "", " ", "0x10"]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder every example starts from (copied, never run in)."""
    root = tmp_path_factory.mktemp("fuzz-inputs")
    config = DemoConfig(mag_papers=250, mesh_papers=120, ranking_queries=4, positives=2, negatives=6,
                        recomm_impressions=(40, 10, 10), recomm_papers=80, topics=5)
    suite = build_demo_suite(root / "suite", config)
    rng = np.random.default_rng(0)
    papers = suite.papers()
    (root / "emb.jsonl").write_bytes(b"".join(orjson.dumps({"paper_id": p.paper_id,
                                                           "embedding": rng.normal(size=8).tolist()}) + b"\n"
                                              for p in papers))
    evaluate(str(root / "emb.jsonl"), RunConfig(data=suite, tasks=["cite", "mag"], output=root / "results.json",
                                                progress=False, cache=False))
    (root / "empty.txt").write_bytes(b"")
    (root / "binary.bin").write_bytes(bytes(range(256)) * 4)
    (root / "latin1.txt").write_bytes("paper_id,class_label\ncaf\xe9,1\n".encode("latin-1"))
    (root / "truncated.json").write_bytes(b'{"paper_id": "a", "embedding": [1.0, 2')
    (root / "metadata.json").write_bytes(orjson.dumps({p.paper_id: {"paper_id": p.paper_id, "title": p.title,
                                                                    "abstract": p.abstract} for p in papers[:5]}))
    (root / "papers.jsonl").write_bytes(b"".join(orjson.dumps({"paper_id": p.paper_id, "title": p.title,
                                                               "abstract": p.abstract}) + b"\n"
                                                 for p in papers[:40]))
    (root / "citations.tsv").write_text("".join(f"{a.paper_id}\t{b.paper_id}\n"
                                                for a, b in zip(papers[:40], papers[1:41])), encoding="utf-8")
    return root


def _damaged_results(data: st.DataObject, original: dict[str, Any]) -> bytes:
    """The results file with random fields removed or given values of other types."""
    damaged = orjson.loads(orjson.dumps(original))
    targets = [(damaged, key) for key in damaged] + [(task, key) for task in damaged["tasks"].values()
                                                     for key in task]
    for _ in range(data.draw(st.integers(1, 3), label="damages")):
        holder, key = data.draw(st.sampled_from(targets), label="field")
        if key not in holder:
            continue
        if data.draw(st.booleans(), label="remove"):
            del holder[key]
        else:
            holder[key] = data.draw(st.sampled_from([None, [], [1], "x", 3, -1.5, True, {}, {"a": None}]),
                                    label="value")
    if data.draw(st.booleans(), label="unknown field"):
        damaged["field_of_a_newer_version"] = {"x": 1}
    return orjson.dumps(damaged)


def _value(data: st.DataObject, action: argparse.Action, command: str, hostility: float) -> str:
    plausible = _plausible(action, command)
    if plausible is not None and data.draw(st.floats(0, 1), label="dice") >= hostility:
        return plausible
    if getattr(action, "output_kind", None):
        return data.draw(st.sampled_from(["out", "out.json", "out/x.png", "sub/deeper/o.jsonl", "results.json",
                                          "emb.jsonl", "suite", "o.md", "o.svg"]), label=action.dest)
    if action.choices:
        choices = [c for c in action.choices if c not in EXPENSIVE_CHOICES.get(action.option_strings[0]
                                                                                if action.option_strings else "", ())]
        if command in ("baseline", "embed") and action.dest in ("name", "adapter"):
            choices = list(CHEAP_ADAPTERS)
        return data.draw(st.sampled_from(choices) | st.sampled_from(["nope", ""]), label=action.dest)
    if action.dest == "tasks":
        return data.draw(st.sampled_from(["cite", "cite,mag", "mag", "nope", ",", "cite,cite"]), label="tasks")
    if action.dest == "task_param":
        return data.draw(st.sampled_from(["mag.folds=2", "mag.folds=1", "mag.c_grid=[0]", "cite.x=1", "x",
                                          "recomm.seeds=0", "mag.c_grid=[1e309]", 'mag.c_grid="a"']),
                         label="task_param")
    if action.dest == "param":
        return data.draw(st.sampled_from(["dim=4", "dim=-1", "dim=1e309", "seed=-1", "x=1", "=", "dim"]),
                         label="param")
    if action.dest == "data":
        return data.draw(st.sampled_from(["suite", "empty.txt", "no-such-dir", "demo", "binary.bin"]), label="data")
    kind = data.draw(st.sampled_from(["number", "input", "text"]), label=f"{action.dest} kind")
    if kind == "number":
        return data.draw(st.sampled_from(NUMBERS) | st.integers(-10**6, 10**6).map(str), label=action.dest)
    if kind == "input":
        return data.draw(st.sampled_from(INPUTS), label=action.dest)
    return data.draw(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                             max_size=12), label=action.dest)


def _plausible(action: argparse.Action, command: str) -> str | None:
    if getattr(action, "output_kind", None):
        return {"folder": "out", "file": "out.json"}[action.output_kind] if action.dest != "out" or \
            command not in ("plot", "plot figure2", "plot results", "plot training") else "out.png"
    if hasattr(action.type, "rules") and action.default is not None:
        return str(action.default)
    if command in ("baseline", "embed") and action.dest in ("name", "adapter"):
        return "random"
    if action.dest == "results" and command in ("compare", "leaderboard"):
        return "results.json"
    return PLAUSIBLE.get(action.dest)


def _argv(data: st.DataObject, command: str) -> list[str]:
    parser = LEAVES[command]
    argv = command.split()
    hostility = data.draw(st.sampled_from([0.0, 0.0, 0.15, 0.5]), label="hostility")
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) or action.dest in ("quiet",
                                                                                                     "verbose"):
            continue
        if not action.option_strings:
            count = {None: 1, "+": data.draw(st.integers(1, 2)), "*": data.draw(st.integers(0, 2)),
                     "?": data.draw(st.integers(0, 1))}.get(action.nargs, 1)
            argv += [_value(data, action, command, hostility) for _ in range(count)]
            continue
        wanted = action.required or action.dest in ("tasks", "data")
        if not wanted and not hostility and _plausible(action, command) is None and action.nargs != 0:
            continue
        odds = [True] * 9 + [False] if wanted else [True, False, False, False] if action.nargs == 0 else [True, False]
        if not data.draw(st.sampled_from(odds), label=f"use {action.dest}"):
            continue
        flag = data.draw(st.sampled_from(action.option_strings), label="flag")
        if action.nargs == 0:
            argv.append(flag)
            continue
        repeats = data.draw(st.integers(1, 2)) if isinstance(action, argparse._AppendAction) else 1
        for _ in range(repeats):
            argv += [flag, _value(data, action, command, hostility)]
    return argv + VALIDATION_ONLY.get(command, []) + ["--quiet"]


def _snapshot(root: Path) -> dict[str, str]:
    return {str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in root.rglob("*") if path.is_file()}


def _declared_outputs(command: str, argv: list[str]) -> list[tuple[str, str]]:
    """(path, kind) of every output the command was given (or defaults to); none when argv does not parse."""
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            args = PARSER.parse_args(argv)
    except (SystemExit, Exception):  # noqa: BLE001 - an invocation that does not parse writes nothing
        return []
    outputs = []
    for action in output_actions(LEAVES[command]):
        value = getattr(args, action.dest, None)
        for path in value if isinstance(value, list) else [value]:
            if path:
                outputs.append((os.path.normpath(path), action.output_kind))
    return outputs


def _allowed(changed: str, outputs: list[tuple[str, str]]) -> bool:
    for path, kind in outputs:
        if changed == path or (kind == "folder" and changed.startswith(path + os.sep)):
            return True
        folder, name = os.path.split(path)
        if os.path.dirname(changed) == folder and os.path.basename(changed).startswith(name):
            return True  # the output's own sidecars: NAME.settings.json, NAME.lock
    return False


def _check(command: str, argv: list[str], inputs: Path) -> None:
    with tempfile.TemporaryDirectory() as folder:
        cwd = Path(folder) / "work"
        shutil.copytree(inputs, cwd)
        before = _snapshot(cwd)
        stdout, stderr = io.StringIO(), io.StringIO()
        previous = os.getcwd()
        os.chdir(cwd)
        try:
            with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(stdout), \
                    contextlib.redirect_stderr(stderr):
                warnings.simplefilter("always")
                try:
                    code = main(argv)
                except SystemExit as exit_:
                    code = exit_.code
        finally:
            os.chdir(previous)
        after = _snapshot(cwd)
        err = stderr.getvalue()
        context = f"argv={argv}\nstderr={err}"
        assert not caught, f"raw warnings {[f'{w.category.__name__}: {w.message}' for w in caught]}\n{context}"
        assert "Traceback" not in err, context
        lines = err.splitlines()
        ours = [line for line in lines if line.startswith(("scidocs-eval: warning:", "WARNING "))]
        if code == 2:
            assert len(lines) - len(ours) == 1 and lines[-1].startswith("scidocs-eval: error: "), context
        else:
            assert code == 0 or (code == 1 and command == "data verify"), f"exit {code}\n{context}"
            assert lines == ours, context
        outputs = _declared_outputs(command, argv)
        changed = sorted(name for name in set(before) | set(after) if before.get(name) != after.get(name))
        stray = [name for name in changed if not _allowed(name, outputs)]
        assert not stray, f"files changed outside the declared outputs {outputs}: {stray}\n{context}"


def _fuzz(command: str, inputs: Path, data: st.DataObject) -> None:
    argv = _argv(data, command)
    if "results_damaged.json" in argv:
        original = orjson.loads((inputs / "results.json").read_bytes())
        damaged = _damaged_results(data, original)
        with tempfile.TemporaryDirectory() as folder:
            staged = Path(folder) / "inputs"
            shutil.copytree(inputs, staged)
            (staged / "results_damaged.json").write_bytes(damaged)
            _check(command, argv, staged)
        return
    _check(command, argv, inputs)


HEALTH = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large]


EXAMPLES = {"demo": 1}
"""examples per command in the default suite where the default (4) would cost too long (demo builds a suite)."""
LONG_EXAMPLES = {"demo": 12}
"""examples per command in the long run where the default (60) would repeat itself at a cost: demo has four options
(two of them flags, --scale two values), so 12 examples cover their combinations; each builds a suite, at the
official sizes for --scale scidocs (60 examples were 4 to 6 minutes, the longest test of CI)."""


def _run_fuzzer(command: str, inputs: Path, examples: int, derandomize: bool) -> None:
    @settings(max_examples=examples, deadline=None, derandomize=derandomize, suppress_health_check=HEALTH,
              database=None)
    @given(data=st.data())
    def fuzz(data: st.DataObject) -> None:
        _fuzz(command, inputs, data)

    fuzz()


@pytest.mark.parametrize("command", sorted(LEAVES))
def test_every_command_fails_cleanly_or_succeeds(command: str, inputs: Path) -> None:
    _run_fuzzer(command, inputs, EXAMPLES.get(command, 4), derandomize=True)


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(LEAVES))
def test_every_command_fails_cleanly_or_succeeds_long(command: str, inputs: Path) -> None:
    _run_fuzzer(command, inputs, LONG_EXAMPLES.get(command, 60), derandomize=False)
