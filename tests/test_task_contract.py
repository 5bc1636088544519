"""The task contract, checked for every registered task (as scikit-learn's `parametrize_with_checks` does for
estimators): generated from each task's declarations (`input_files`, `data_shapes`), the hostile inputs give the
promised one-line error or named warning, with nothing written and no traceback. A task registered later, here
or in a plugin, is covered with no change to this file (`test_a_task_registered_here_is_covered`)."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from builders import build_retrieval_dataset

from scidocs_eval.cli.main import main
from scidocs_eval.data.demo import DemoConfig, build_demo_suite
from scidocs_eval.data.scirepeval import write_synthetic_scirepeval
from scidocs_eval.evaluation.integrity import DataShape, JudgedSplit, LabelledSplit, Problem, SampledEvaluation
from scidocs_eval.evaluation.task import TASKS, Task, TaskResult, TaskSpec, get_task, register_task, task_names
from scidocs_eval.evaluation.verify import verify_suite
from scidocs_eval.formats.suite import Suite


class TinyLabelTask(Task):
    """A task no other module knows: the contract must cover it through its declarations alone."""

    spec = TaskSpec("contract-tiny", "a tiny labelled task registered by the contract test", "classification",
                    ("f1",), "f1", "contract-tiny", "", benchmark="contract-test")

    def required_files(self, split: str) -> list[str]:
        return ["mag/train.csv", f"mag/{split}.csv"]

    def data_shapes(self, suite: Suite, split: str) -> list[DataShape]:
        train, scored = suite.labels("mag", "train"), suite.labels("mag", split)
        return [LabelledSplit(self.name, "mag/train.csv", f"mag/{split}.csv", train.ids, train.labels, scored.ids,
                              scored.labels, "classes", 3)]

    def evaluate(self, suite, embeddings, split="test", missing="official") -> TaskResult:  # noqa: ANN001
        return TaskResult(self.name, {"f1": 0.0}, {})


register_task(TinyLabelTask)
NAMES = task_names()
"""every registered task, the tiny one included; it is unregistered again until this module's tests run, so that
it is seen by no other test module."""
TASKS.unregister("contract-tiny")


@pytest.fixture(scope="module", autouse=True)
def _tiny_task_registered() -> Iterator[None]:
    register_task(TinyLabelTask)
    yield
    TASKS.unregister("contract-tiny")


def _beir_datasets(root: Path) -> None:
    """A BEIR dataset wherever a registered task declares BEIR files (reranking: with candidate lists)."""
    suite = Suite(root)
    for name in NAMES:
        files = get_task(name).input_files(suite, "test")
        qrels = [f for f in files if "/qrels/" in f and f.endswith(".tsv")]
        if qrels and not suite.has(qrels[0]):
            folder = root / qrels[0].split("/qrels/")[0]
            build_retrieval_dataset(folder, documents=60, queries=8, split=Path(qrels[0]).stem,
                                    candidates=6 if any("/top_ranked/" in f for f in files) else None)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder with data of every format a registered task declares: the suite layout, SciRepEval's, BEIR."""
    base = tmp_path_factory.mktemp("contract")
    root = build_demo_suite(base / "world", DemoConfig(
        mag_papers=250, mesh_papers=120, ranking_queries=4, positives=2, negatives=6, recomm_impressions=(40, 10, 10),
        recomm_papers=80, topics=5)).root
    write_synthetic_scirepeval(base / "scirepeval", seed=3)
    for folder in (base / "scirepeval").iterdir():
        if folder.is_dir():
            shutil.copytree(folder, root / folder.name)
    _beir_datasets(root)
    return root


@pytest.fixture(scope="module")
def embeddings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("vectors") / "one.jsonl"
    path.write_text('{"paper_id": "nobody", "embedding": [0.5, 1.0]}\n', encoding="utf-8")
    return path


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("scidocs-eval: error")]
    assert "Traceback" not in err and len(lines) == 1, err
    return lines[0]


# --- the hostile variants of each shape: (what, variant, severity, rule) -----------------------------------------

def _labelled(shape: LabelledSplit) -> list[tuple[str, DataShape, str, str]]:
    train_ids, train_labels = list(shape.train_ids), np.asarray(shape.train_labels)
    variants = [
        ("test papers also in train", dataclasses.replace(shape, scored_ids=train_ids[:3],
                                                          scored_labels=train_labels[:3]), "error", "test-in-train"),
        ("a duplicated id", dataclasses.replace(shape, train_ids=train_ids + train_ids[:1],
                                                train_labels=np.concatenate([train_labels, train_labels[:1]])),
         "warning", "repeated-paper"),
        ("an empty split", dataclasses.replace(shape, scored_ids=[], scored_labels=train_labels[:0]), "error",
         "empty-split"),
        ("a NaN label", dataclasses.replace(shape, train_labels=np.where(np.arange(len(train_labels)).reshape(
            (-1,) + (1,) * (train_labels.ndim - 1)) == 0, np.nan, train_labels.astype(np.float64))), "error",
         "label-kind"),
    ]
    if shape.kind == "classes":
        keep = np.asarray(train_labels) != train_labels[0]
        one = [i for i, label in enumerate(train_labels) if label == train_labels[0]][:1]
        index = np.concatenate([np.where(keep)[0], one]).astype(int)
        variants.append(("a class below the folds", dataclasses.replace(
            shape, train_ids=[train_ids[i] for i in index], train_labels=train_labels[index], folds=3), "error",
            "class-below-folds"))
    return variants


def _judged(shape: JudgedSplit) -> list[tuple[str, DataShape, str, str]]:
    query = next(iter(shape.judgements))
    huge = {**{q: dict(g) for q, g in shape.judgements.items()}, query: {"x": 10**20}}
    zero = {**{q: dict(g) for q, g in shape.judgements.items()}, "lonely": {"x": 0}}
    variants = [
        ("a grade of 1e20", dataclasses.replace(shape, judgements=huge), "error", "grade-range"),
        ("a query without a positive", dataclasses.replace(shape, judgements=zero), "warning",
         "query-without-positive"),
        ("an empty split", dataclasses.replace(shape, judgements={}), "error", "empty-split"),
        ("a repeated judgement", dataclasses.replace(shape, repeated=2), "warning", "repeated-judgement"),
    ]
    if shape.corpus is not None:
        variants.append(("a candidate missing from the corpus", dataclasses.replace(shape, judgements=huge | {
            query: {"not-in-corpus": 1}}), "warning", "candidate-not-in-corpus"))
    if shape.candidate_lists is not None:
        variants.append(("a query without candidates", dataclasses.replace(shape, candidate_lists={}), "warning",
                         "query-without-candidates"))
    return variants


def _sampled(shape: SampledEvaluation) -> list[tuple[str, DataShape, str, str]]:
    papers = len(shape.train_labels)
    variants = [("sample_size larger than train", dataclasses.replace(shape, sample_size=papers + 1), "error",
                 "sample-size")]
    if not shape.label_sets:
        variants.append(("sample_size 1", dataclasses.replace(shape, sample_size=1), "error", "sample-size"))
    return variants


HOSTILE: dict[type, Callable[..., list[tuple[str, DataShape, str, str]]]] = {
    LabelledSplit: _labelled, JudgedSplit: _judged, SampledEvaluation: _sampled}
"""A new shape (a subclass of DataShape) adds its hostile variants here."""


@pytest.mark.parametrize("name", NAMES)
def test_declared_inputs_are_there_and_clean(world: Path, name: str) -> None:
    task, suite = get_task(name), Suite(world)
    files = task.input_files(suite, "test")
    assert files and all(suite.has(f) for f in files), f"{name}: no example data of its declared files {files}"
    assert [f for f in task.findings(suite, "test") if f.severity == "error"] == []


@pytest.mark.parametrize("name", NAMES)
def test_every_rule_of_its_shapes_fires(world: Path, name: str) -> None:
    shapes = get_task(name).data_shapes(Suite(world), "test")
    for shape in shapes:
        assert type(shape) in HOSTILE, f"{name}: shape {type(shape).__name__} has no hostile variants"
        for what, variant, severity, rule in HOSTILE[type(shape)](shape):
            findings: list[Problem] = variant.findings()
            assert any(f.severity == severity and f.rule == rule for f in findings), (name, what, findings)


@pytest.mark.parametrize("name", NAMES)
def test_an_output_that_is_an_input_is_refused(world: Path, embeddings: Path, name: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    suite = Suite(world)
    for relative in get_task(name).input_files(suite, "test"):
        path = suite.path(relative)
        before = path.read_bytes()
        assert main(["run", "--embeddings", str(embeddings), "--data", str(world), "--tasks", name,
                     "--out", str(path), "--overwrite"]) == 2
        assert "is also an input of this command" in _one_line_error(capsys)
        assert path.read_bytes() == before


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("content", [b"\xff\xfe not text\n", b""], ids=["bytes", "empty"])
def test_a_broken_or_empty_input_is_one_line_naming_it(world: Path, embeddings: Path, tmp_path: Path, name: str,
                                                       content: bytes, capsys: pytest.CaptureFixture[str]) -> None:
    files = get_task(name).input_files(Suite(world), "test")
    for broken in files:
        copy = tmp_path / broken.replace("/", "_") / "suite"
        for relative in files:
            (copy / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(world / relative, copy / relative)
        (copy / broken).write_bytes(content)
        out = copy.parent / "results.json"
        assert main(["run", "--embeddings", str(embeddings), "--data", str(copy), "--tasks", name,
                     "--out", str(out), "--quiet"]) == 2, (name, broken)
        assert Path(broken).name in _one_line_error(capsys), (name, broken)
        assert not out.exists()


def test_data_verify_lists_what_run_refuses(world: Path, tmp_path: Path) -> None:
    """`data verify` reports the findings `run` applies, for every registered task."""
    report = verify_suite(world)
    assert report.errors == []
    suite = Suite(world)
    for name in NAMES:
        for finding in get_task(name).findings(suite, "test"):
            assert finding in report.problems, (name, finding)


def test_a_task_registered_here_is_covered() -> None:
    assert "contract-tiny" in NAMES
