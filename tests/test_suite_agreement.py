"""`data verify` finds exactly what `run` rejects: both read every suite file through the same reader.

Each breakage below used to pass one of them: a csv without its header row lost its first row in `run` and gave
0 warnings in `verify`; recomm metadata whose `authors` is a string was "usable" to verify and an error to run;
an invalid paper_metadata_view_cite_read.json was "not usable" to verify while `run --tasks cite` succeeded.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import orjson
import pytest

from scidocs_eval.cli.main import main
from scidocs_eval.errors import InputError
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.evaluation.verify import verify_suite
from scidocs_eval.formats.embeddings import EmbeddingStore
from scidocs_eval.formats.suite import Suite


@pytest.fixture
def suite_copy(demo_suite: Suite, tmp_path: Path) -> Path:
    return Path(shutil.copytree(demo_suite.root, tmp_path / "suite"))


@pytest.fixture(scope="module")
def embeddings(demo_suite: Suite) -> EmbeddingStore:
    rng = np.random.default_rng(0)
    return EmbeddingStore.from_mapping({p.paper_id: rng.standard_normal(8) for p in demo_suite.papers()})


def drop_first_line(path: Path) -> None:
    path.write_text("".join(path.read_text().splitlines(keepends=True)[1:]))


def edit_metadata(path: Path, edit: Callable[[dict], None]) -> None:
    data = orjson.loads(path.read_bytes())
    edit(data)
    path.write_bytes(orjson.dumps(data))


def first_record(data: dict) -> dict:
    return next(iter(data.values()))


REJECTED = {
    "mag_train_without_header": ("mag", "mag/train.csv", 1, lambda root: drop_first_line(root / "mag/train.csv"),
                                 "the first line is a data row, not a header: the header row (such as "
                                 "paper_id,class_label) is missing, and without it this row would be skipped"),
    "mesh_test_without_header": ("mesh", "mesh/test.csv", 1, lambda root: drop_first_line(root / "mesh/test.csv"),
                                 "the first line is a data row, not a header"),
    "recomm_val_without_header": ("recomm", "recomm/val.csv", 1,
                                  lambda root: drop_first_line(root / "recomm/val.csv"),
                                  "the first line is a data row, not a header: the header row (such as "
                                  "query_id,clicked_id,shown) is missing"),
    "recomm_authors_a_string": ("recomm", "paper_metadata_recomm.json", None, lambda root: edit_metadata(
        root / "paper_metadata_recomm.json", lambda data: first_record(data).update(authors="A. Author")),
        "field 'authors' is string 'A. Author', expected a list"),
    "recomm_metadata_not_json": ("recomm", "paper_metadata_recomm.json", None,
                                 lambda root: (root / "paper_metadata_recomm.json").write_text("{oops"),
                                 "malformed JSON"),
}


@pytest.mark.parametrize("breakage", sorted(REJECTED))
def test_verify_and_run_reject_the_same_files(suite_copy: Path, embeddings: EmbeddingStore, breakage: str) -> None:
    task, relative, line, breaks, message = REJECTED[breakage]
    breaks(suite_copy)
    report = verify_suite(suite_copy)
    where = relative if line is None else f"{relative}:{line}"
    assert [p.where for p in report.errors] == [where], report.format()
    assert message in report.errors[0].message
    assert task not in report.complete and not report.usable()
    with pytest.raises(InputError) as raised:
        evaluate(embeddings, RunConfig(data=suite_copy, tasks=[task], task_params={"recomm": {"seeds": 1}},
                                       progress=False))
    assert raised.value.path == str(suite_copy / relative) and raised.value.line == line
    assert message in str(raised.value)


TOLERATED = {
    "view_cite_read_not_json": ("cite", "paper_metadata_view_cite_read.json",
                                lambda root: (root / "paper_metadata_view_cite_read.json").write_text("{oops"),
                                "malformed JSON"),
    "view_cite_read_record_not_object": ("coview", "paper_metadata_view_cite_read.json",
                                         lambda root: edit_metadata(root / "paper_metadata_view_cite_read.json",
                                                                    lambda data: data.update(extra=[1, 2])),
                                         "paper 'extra': the row is list [1, 2], expected an object"),
    "mag_mesh_title_a_list": ("mesh", "paper_metadata_mag_mesh.json", lambda root: edit_metadata(
        root / "paper_metadata_mag_mesh.json", lambda data: first_record(data).update(title=["a", "b"])),
        "field 'title' is list ['a', 'b'], expected a string"),
}


@pytest.mark.parametrize("breakage", sorted(TOLERATED))
def test_verify_and_run_both_accept_a_broken_metadata_file_that_run_does_not_read(
        suite_copy: Path, embeddings: EmbeddingStore, breakage: str) -> None:
    """The ranking and classification tasks score without their metadata file: verify warns (the file is still
    broken, and `baseline` would need it) but keeps the task usable, as `run` scores it."""
    task, relative, breaks, message = TOLERATED[breakage]
    breaks(suite_copy)
    report = verify_suite(suite_copy)
    assert report.errors == [] and task in report.complete and report.usable()
    (warning,) = [p for p in report.problems if p.where == relative]
    assert message in warning.message and "`run` does not read it" in warning.message
    if task != "mesh":  # the SVM grid takes long; mesh is covered by the cite/coview cases' mechanism
        assert task in evaluate(embeddings, RunConfig(data=suite_copy, tasks=[task], progress=False)).tasks


def test_run_without_a_header_exits_2_and_verify_exits_1(suite_copy: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    drop_first_line(suite_copy / "mag/train.csv")
    store = tmp_path / "e.jsonl"
    store.write_bytes(b"".join(orjson.dumps({"paper_id": p.paper_id, "embedding": [1.0, float(i % 7)]}) + b"\n"
                               for i, p in enumerate(Suite(suite_copy).papers(("mag_mesh",)))))
    out = tmp_path / "out.json"
    assert main(["run", "--embeddings", str(store), "--data", str(suite_copy), "--tasks", "mag", "--quiet",
                 "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"scidocs-eval: error: {suite_copy / 'mag/train.csv'}:1: the first line is a data row")
    assert not out.exists()
    assert main(["data", "verify", str(suite_copy)]) == 1
    assert "ERROR mag/train.csv:1: the first line is a data row" in capsys.readouterr().out


def test_a_suite_without_metadata_files_still_runs_and_verifies_the_same(suite_copy: Path,
                                                                         embeddings: EmbeddingStore) -> None:
    """Only recomm reads its metadata file in `run`; verify then warns but keeps the other tasks usable."""
    for name in ("paper_metadata_view_cite_read.json", "paper_metadata_mag_mesh.json"):
        (suite_copy / name).unlink()
    report = verify_suite(suite_copy)
    assert report.errors == [] and {"mag", "cite"} <= set(report.complete)
    assert set(evaluate(embeddings, RunConfig(data=suite_copy, tasks=["cite"], progress=False)).tasks) == {"cite"}
