"""Issue #24's examples: no wrong number with exit status 0, no traceback, no misleading message.

Each test here failed on main before the fix (a number printed with exit 0, a traceback, or a wrong reason).
"""

from __future__ import annotations

import dataclasses
import hashlib
import warnings
from pathlib import Path

import numpy as np
import orjson
import pytest

from scidocs_eval.cli.main import main
from scidocs_eval.data.download import STATE_FILE, _State
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.evaluation.task import DEFAULT_MIN_COVERAGE, CoverageError
from scidocs_eval.evaluation.verify import verify_suite
from scidocs_eval.formats.safe_output import OwnedFolder
from scidocs_eval.formats.suite import Suite


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if not line.startswith("WARNING ")]
    assert len(lines) == 1 and lines[0].startswith("scidocs-eval: error: "), err
    return lines[0]


def _write_embeddings(path: Path, ids: list[str], dim: int = 6, seed: int = 0, zero: bool = False) -> Path:
    rng = np.random.default_rng(seed)
    path.write_bytes(b"".join(orjson.dumps({"paper_id": i, "embedding": [0.0] * dim if zero else
                                            rng.normal(size=dim).tolist()}) + b"\n" for i in ids))
    return path


def _ranking_ids(suite: Suite) -> list[str]:
    return list(suite.metadata("view_cite_read"))


def _labelled_suite(root: Path, train: list[tuple[str, int]], test: list[tuple[str, int]]) -> Path:
    (root / "mag").mkdir(parents=True)
    for split, rows in (("train", train), ("test", test)):
        (root / "mag" / f"{split}.csv").write_text("pid,class_label\n" + "".join(f"{p},{c}\n" for p, c in rows),
                                                   encoding="utf-8")
    return root


# --- coverage guard ---------------------------------------------------------------------------------------------

def test_embeddings_of_none_of_the_papers_are_an_error_not_a_score(demo_suite: Suite, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    emb = _write_embeddings(tmp_path / "other.jsonl", [f"zz{i}" for i in range(50)])
    assert main(["run", "--embeddings", str(emb), "--data", str(demo_suite.root), "--tasks", "cite",
                 "-o", str(tmp_path / "r.json")]) == 2
    line = _one_error_line(capsys)
    assert "task cite" in line and "none of its" in line and "usable" in line
    assert not (tmp_path / "r.json").exists()


def test_half_coverage_fails_the_default_minimum_and_min_coverage_lowers_it(demo_suite: Suite, tmp_path: Path,
                                                                         caplog: pytest.LogCaptureFixture) -> None:
    ids = _ranking_ids(demo_suite)
    emb = _write_embeddings(tmp_path / "half.jsonl", ids[::2])
    with pytest.raises(CoverageError, match=r"task cite: .*below the minimum coverage 80%"):
        evaluate(str(emb), RunConfig(data=demo_suite, tasks=["cite"], progress=False))
    result = evaluate(str(emb), RunConfig(data=demo_suite, tasks=["cite"], progress=False, min_coverage=0.3))
    assert result.settings.min_coverage == 0.3
    warned = [r.getMessage() for r in caplog.records if "no usable embedding" in r.getMessage()]
    assert len(warned) == 1 and "absent" in warned[0] and "of" in warned[0]


def test_a_few_empty_vectors_like_the_official_reference_pass_with_a_warning(demo_suite: Suite, tmp_path: Path,
                                                                          caplog: pytest.LogCaptureFixture) -> None:
    ids = _ranking_ids(demo_suite)
    emb = tmp_path / "ref.jsonl"
    rng = np.random.default_rng(1)
    emb.write_bytes(b"".join(orjson.dumps({"paper_id": i, "embedding": [] if n % 20 == 0 else
                                           rng.normal(size=6).tolist()}) + b"\n" for n, i in enumerate(ids)))
    result = evaluate(str(emb), RunConfig(data=demo_suite, tasks=["cite"], progress=False))
    assert result.settings.min_coverage == DEFAULT_MIN_COVERAGE
    assert any("empty" in r.getMessage() for r in caplog.records)


def test_min_coverage_outside_0_1_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--embeddings", "e.jsonl", "--min-coverage", "1.5"]) == 2
    assert "--min-coverage" in _one_error_line(capsys)


def test_all_zero_vectors_raise_no_raw_numpy_warning(tmp_path: Path) -> None:
    rows = [(f"p{i}", i % 2) for i in range(12)]
    root = _labelled_suite(tmp_path / "suite", rows[:9], rows[9:] and [(f"t{i}", i % 2) for i in range(4)])
    emb = _write_embeddings(tmp_path / "zero.jsonl", [p for p, _ in rows] + [f"t{i}" for i in range(4)], zero=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = evaluate(str(emb), RunConfig(data=Suite(root), tasks=["mag"], progress=False, cache=False))
    assert "f1" in result.tasks["mag"].metrics


# --- one integrity checker ---------------------------------------------------------------------------------------

def test_test_papers_also_in_train_stop_run_and_fail_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    train = [(f"p{i}", i % 2) for i in range(12)]
    root = _labelled_suite(tmp_path / "suite", train, train[:4])
    emb = _write_embeddings(tmp_path / "e.jsonl", [p for p, _ in train])
    assert main(["run", "--embeddings", str(emb), "--data", str(root), "--tasks", "mag"]) == 2
    line = _one_error_line(capsys)
    assert "mag/test.csv" in line and "4 of its 4 papers are also in mag/train.csv" in line
    report = verify_suite(root)
    assert not report.usable() and any("also in mag/train.csv" in p.message for p in report.errors)


@pytest.mark.parametrize("folds", ["3", "5"])
def test_a_train_split_too_small_for_the_folds_is_one_line_in_run_and_an_error_in_verify(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], folds: str) -> None:
    root = _labelled_suite(tmp_path / "suite", [("a", 0), ("b", 1), ("c", 0), ("d", 1)], [("t", 0), ("u", 1)])
    emb = _write_embeddings(tmp_path / "e.jsonl", list("abcdtu"))
    assert main(["run", "--embeddings", str(emb), "--data", str(root), "--tasks", "mag",
                 "--task-param", f"mag.folds={folds}"]) == 2
    assert f"fewer than the {folds} cross-validation folds" in _one_error_line(capsys)
    assert any("cross-validation folds" in p.message for p in verify_suite(root).errors)


@pytest.mark.parametrize(("relative", "content", "line"), [
    ("mag/train.csv", "pid,class_label\na,0\ncaf\xe9,1\n".encode("latin-1"), 3),
    ("cite/test.qrel", "q 0 a 1\nq 0 caf\xe9 0\n".encode("latin-1"), 2),
])
def test_non_utf8_bytes_name_file_and_line_in_run_and_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              relative: str, content: bytes, line: int) -> None:
    root = tmp_path / "suite"
    _labelled_suite(root, [(f"p{i}", i % 2) for i in range(9)], [("t", 0), ("u", 1)])
    (root / relative).parent.mkdir(exist_ok=True)
    (root / relative).write_bytes(content)
    emb = _write_embeddings(tmp_path / "e.jsonl", ["q", "a", "t", "u"] + [f"p{i}" for i in range(9)])
    task = relative.split("/")[0]
    assert main(["run", "--embeddings", str(emb), "--data", str(root), "--tasks", task]) == 2
    assert f"{relative}:{line}: byte 0xe9" in _one_error_line(capsys)
    assert any(p.where == f"{relative}:{line}" and "not UTF-8" in p.message for p in verify_suite(root).errors)


# --- results files --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def results_pair(tmp_path_factory: pytest.TempPathFactory, demo_suite: Suite) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("results")
    emb = _write_embeddings(folder / "e.jsonl", _ranking_ids(demo_suite))
    test = evaluate(str(emb), RunConfig(data=demo_suite, tasks=["cite"], progress=False,
                                        output=folder / "test.results.json"))
    evaluate(str(emb), RunConfig(data=demo_suite, tasks=["cite"], split="val", progress=False,
                                 output=folder / "val.results.json"))
    assert test.tasks
    return folder / "test.results.json", folder / "val.results.json"


def test_table_labels_say_which_row_is_val(results_pair: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["table", *map(str, results_pair), "--no-paper"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| e ")]
    assert len(rows) == 2 and "test split" in rows[0] and "val split" in rows[1]


def test_a_newer_files_unknown_field_is_kept_and_named_in_one_warning(results_pair: tuple[Path, Path],
                                                                     tmp_path: Path,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    data = orjson.loads(results_pair[0].read_bytes())
    data["judge_notes"] = {"x": 1}
    data["tasks"]["cite"]["per_seed"] = [1]
    newer = tmp_path / "newer.results.json"
    newer.write_bytes(orjson.dumps(data))
    result = RunResult.load(newer)
    warned = [r.getMessage() for r in caplog.records if "does not know" in r.getMessage()]
    assert len(warned) == 1 and "judge_notes" in warned[0] and "tasks.cite.per_seed" in warned[0]
    saved = orjson.loads(orjson.dumps(result.to_dict()))
    assert saved["judge_notes"] == {"x": 1} and saved["tasks"]["cite"]["per_seed"] == [1]


@pytest.mark.parametrize(("field", "value"), [("settings", [1]), ("fingerprints", None), ("versions", "x")])
@pytest.mark.parametrize("command", ["table", "compare", "report"])
def test_a_malformed_field_is_one_line_naming_it(results_pair: tuple[Path, Path], tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str], field: str, value: object,
                                                 command: str) -> None:
    data = orjson.loads(results_pair[0].read_bytes())
    data[field] = value
    bad = tmp_path / "bad.results.json"
    bad.write_bytes(orjson.dumps(data))
    argv = {"table": ["table", str(bad)], "compare": ["compare", str(results_pair[0]), str(bad)],
            "report": ["report", str(bad), "--out", str(tmp_path / "site")]}[command]
    assert main(argv) == 2
    assert f"malformed results file: field {field!r}" in _one_error_line(capsys)


# --- misc ------------------------------------------------------------------------------------------------------

def test_data_demo_is_refused_when_the_folder_has_a_demo_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "demo").mkdir()
    assert main(["run", "--embeddings", "e.jsonl", "--data", "demo"]) == 2
    assert "--data ./demo" in _one_error_line(capsys)


def test_a_cache_variable_naming_an_unknown_user_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SCIDOCS_EVAL_CACHE", "~nosuchuser-scidocs/x")
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--embeddings", "e.jsonl", "--data", "demo"]) == 2
    assert "$SCIDOCS_EVAL_CACHE" in _one_error_line(capsys)


@pytest.mark.parametrize("adapter", ["tfidf", "sif"])
def test_embed_with_an_adapter_that_must_be_fitted_is_refused(adapter: str, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "m.json").write_text('{"a": {"paper_id": "a", "title": "x y", "abstract": "z"}}', encoding="utf-8")
    assert main(["embed", "--metadata", str(tmp_path / "m.json"), "--out", str(tmp_path / "o.jsonl"),
                 "--adapter", adapter]) == 2
    assert f"scidocs-eval baseline {adapter}" in _one_error_line(capsys)
    assert not (tmp_path / "o.jsonl").exists()


def test_a_truncated_download_state_file_only_costs_a_recheck(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    truncated = b'{"specter/scidocs/a": {"si'
    (tmp_path / STATE_FILE).write_bytes(truncated)
    owned = OwnedFolder(tmp_path, "data download", "--dest", {STATE_FILE: hashlib.sha256(truncated).hexdigest()})
    assert _State(owned).entries == {}
    assert any(STATE_FILE in r.getMessage() for r in caplog.records)


def test_baseline_resume_over_a_malformed_middle_line_is_refused_and_keeps_the_file(
        demo_suite: Suite, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["baseline", "random", "--data", str(demo_suite.root), "--tasks", "cite", "--out-dir", str(tmp_path)]
    assert main(argv) == 0
    capsys.readouterr()
    embeddings = tmp_path / "random.jsonl"
    written = embeddings.read_bytes()
    lines = written.splitlines(keepends=True)
    lines[3] = lines[3][:20] + b"\n"
    embeddings.write_bytes(b"".join(lines))
    before = embeddings.read_bytes()
    assert main([*argv, "--resume"]) == 2  # an edited file is the user's now: the output layer refuses it
    assert "random.jsonl already exists and was not written by scidocs-eval" in _one_error_line(capsys)
    assert embeddings.read_bytes() == before
    # taken on purpose: a resume continues from the embedding cache, never from the file's lines, so the edited
    # line reaches no score and the file is written whole again
    assert main([*argv, "--resume", "--overwrite"]) == 0
    assert embeddings.read_bytes() == written


def test_an_undefined_metric_is_not_scored_never_a_nan(demo_suite: Suite, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """The guard behind every task (`check_defined`): a task whose metric comes out NaN is reported as not scored
    (exit 2, one line), its number absent from the results, the other tasks scored; a task of any family."""
    from scidocs_eval.evaluation.task import TASKS, Task, TaskData, TaskResult, get_task, register_task
    from scidocs_eval.formats.embeddings import EmbeddingStore

    @register_task
    class UndefinedMeshTask(Task):
        """mesh's files and numbers, but its F1 comes out NaN."""

        spec = dataclasses.replace(TASKS["mesh"].spec, name="mesh-undefined", table1={})

        def required_files(self, split: str) -> list[str]:
            return get_task("mesh").required_files(split)

        def evaluate(self, data: TaskData, embeddings: EmbeddingStore, missing: str = "official") -> TaskResult:
            mesh = get_task("mesh")
            result = mesh.evaluate(mesh.load(data.suite, data.split), embeddings, missing)
            result.metrics["f1"] = float("nan")
            return result

    vectors = _write_embeddings(tmp_path / "e.jsonl", [p.paper_id for p in demo_suite.papers(("mag_mesh",))])
    try:
        out = tmp_path / "r.json"
        assert main(["run", "--embeddings", str(vectors), "--data", str(demo_suite.root), "--tasks",
                     "mesh,mesh-undefined", "-o", str(out), "--quiet"]) == 2
        captured = capsys.readouterr()
        assert "scidocs-eval: error: task mesh-undefined not scored: f1 is nan on these embeddings, not a score" \
            in captured.err
        saved = orjson.loads(out.read_bytes())
        assert list(saved["tasks"]) == ["mesh"] and "mesh-undefined" in saved["failed"]
        assert all(np.isfinite(v) for task in saved["tasks"].values() for v in task["metrics"].values())
    finally:
        TASKS.unregister("mesh-undefined")


def test_a_regressor_predicting_one_value_is_not_scored_with_why(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Constant vectors: SciRepEval's SVR predicts one value, whose Kendall's tau SciRepEval prints as nan; here
    the task is not scored, with the reason, and the results file it writes loads again (it used not to)."""
    from scidocs_eval.formats.scirepeval import meta_file, read_meta
    from scidocs_eval.tasks.scirepeval import write_synthetic_scirepeval

    data = tmp_path / "data"
    write_synthetic_scirepeval(data, seed=0)
    ids = list(read_meta(data / meta_file("tweet_mentions")).records)
    embeddings = tmp_path / "constant.jsonl"
    embeddings.write_bytes(b"".join(orjson.dumps({"paper_id": i, "embedding": [1.0, 2.0, 3.0]}) + b"\n" for i in ids))
    with embeddings.open("ab") as handle:  # and another task, scored
        handle.write(_write_embeddings(tmp_path / "d.jsonl", list(read_meta(data / meta_file("drsm")).records),
                                       dim=3).read_bytes())
    out = tmp_path / "r.json"
    assert main(["run", "--embeddings", str(embeddings), "--data", str(data), "--tasks",
                 "scirepeval-tweet-mentions,scirepeval-drsm", "-o", str(out), "--quiet"]) == 2
    captured = capsys.readouterr()
    assert "scirepeval-tweet-mentions NOT SCORED: the regressor (C=" in captured.out
    assert "predicts 0.56 for every one of the 40 test papers" in captured.err
    loaded = RunResult.load(out)
    assert loaded.failed["scirepeval-tweet-mentions"].startswith("the regressor") and list(loaded.tasks) == [
        "scirepeval-drsm"]
    assert main(["table", "--benchmark", "scirepeval", str(out)]) == 0
