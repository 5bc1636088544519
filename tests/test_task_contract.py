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
from builders import build_every_format_suite, build_retrieval_dataset, write_one_vector

from scidocs_eval.cli.main import main
from scidocs_eval.evaluation.integrity import (
    ClusteredSplit,
    DataShape,
    ImpressionsSplit,
    JudgedSplit,
    LabelledSplit,
    Problem,
    SampledEvaluation,
)
from scidocs_eval.evaluation.task import (
    TASKS,
    Task,
    TaskData,
    TaskResult,
    TaskSpec,
    get_task,
    register_task,
    task_names,
)
from scidocs_eval.evaluation.verify import verify_suite
from scidocs_eval.formats.embeddings import EmbeddingStore
from scidocs_eval.formats.suite import Impression, LabelledPapers, Suite
from scidocs_eval.tasks.scirepeval import write_synthetic_scirepeval


@dataclasses.dataclass(frozen=True)
class TinyLabels(TaskData):
    """The tiny task's data: its train and scored labels."""

    train: LabelledPapers
    scored: LabelledPapers


class TinyLabelTask(Task[TinyLabels]):
    """A task no other module knows: the contract must cover it through its declarations alone (its reader, and
    its questions asked of the data a command loads once)."""

    spec = TaskSpec("contract-tiny", "a tiny labelled task registered by the contract test", "classification",
                    ("f1",), "f1", "contract-tiny", "", benchmark="contract-test")

    def required_files(self, split: str) -> list[str]:
        return ["mag/train.csv", f"mag/{split}.csv"]

    def read(self, suite: Suite, split: str, texts: bool = True) -> TinyLabels:
        return TinyLabels(split, texts, suite.labels("mag", "train"), suite.labels("mag", split))

    def data_shapes(self, data: TinyLabels) -> list[DataShape]:
        return [LabelledSplit(self.name, "mag/train.csv", f"mag/{data.split}.csv", data.train.ids, data.train.labels,
                              data.scored.ids, data.scored.labels, "classes", 3)]

    def evaluate(self, data: TinyLabels, embeddings: EmbeddingStore, missing: str = "official") -> TaskResult:
        return TaskResult(self.name, {"f1": 0.0}, {"papers": len(data.scored.ids)})


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
    root = build_every_format_suite(tmp_path_factory.mktemp("contract"))
    _beir_datasets(root)
    return root


@pytest.fixture(scope="module")
def embeddings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_one_vector(tmp_path_factory.mktemp("vectors"))


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
    scored_ids, scored_labels = list(shape.scored_ids), np.asarray(shape.scored_labels)
    variants.append(("some test papers also in train", dataclasses.replace(
        shape, scored_ids=[*scored_ids, train_ids[0]], scored_labels=np.concatenate([scored_labels, train_labels[:1]])),
        shape.overlap, "test-in-train"))
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
        ("a pair judged twice, later grade kept", dataclasses.replace(shape, conflicts=1), "warning",
         "pair-judged-twice"),
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


def _clustered(shape: ClusteredSplit) -> list[tuple[str, DataShape, str, str]]:
    twice = [*shape.ids, shape.ids[0]], [*shape.labels, [f"not {shape.labels[0][0]}"]]
    return [("an empty split", dataclasses.replace(shape, ids=[], labels=[]), "error", "empty-split"),
            ("one label only", dataclasses.replace(shape, labels=[["same"]] * len(shape.ids)), "error", "one-class"),
            ("a text under two labels", dataclasses.replace(shape, ids=twice[0], labels=twice[1]), "warning",
             "repeated-paper")]


def _impressions(shape: ImpressionsSplit) -> list[tuple[str, DataShape, str, str]]:
    first = shape.impressions[0]
    alone = Impression(first.query_id, first.clicked_id, (first.clicked_id,), 99)
    twice = Impression(first.query_id, first.clicked_id, first.shown + first.shown[-1:], 98)
    return [
        ("an empty split", dataclasses.replace(shape, impressions=[]), "error", "empty-split"),
        ("a row its reader refuses", dataclasses.replace(shape, bad_rows=[(7, "clicked paper 'x' is not shown")]),
         "error", ""),
        ("a click beyond the propensities", dataclasses.replace(shape, positions=first.clicked_position - 1 or 0),
         "error", "propensity-positions"),
        ("an impression with no unclicked paper", dataclasses.replace(shape, impressions=[*shape.impressions, alone]),
         "warning", "impression-without-unclicked"),
        ("no impression with an unclicked paper", dataclasses.replace(shape, impressions=[alone]), "error",
         "impression-without-unclicked"),
        ("a paper shown twice in one impression", dataclasses.replace(shape, impressions=[*shape.impressions, twice]),
         "warning", "paper-shown-twice"),
        ("a repeated impression", dataclasses.replace(shape, impressions=[*shape.impressions, first]), "warning",
         "repeated-impression"),
        ("a paper without metadata", dataclasses.replace(shape, known=set()), "warning", "paper-without-metadata"),
    ]


HOSTILE: dict[type, Callable[..., list[tuple[str, DataShape, str, str]]]] = {
    LabelledSplit: _labelled, JudgedSplit: _judged, SampledEvaluation: _sampled, ClusteredSplit: _clustered,
    ImpressionsSplit: _impressions}
"""A new shape (a subclass of DataShape) adds its hostile variants here."""


@pytest.mark.parametrize("name", NAMES)
def test_declared_inputs_are_there_and_clean(world: Path, name: str) -> None:
    task, suite = get_task(name), Suite(world)
    files = task.input_files(suite, "test")
    assert files and all(suite.has(f) for f in files), f"{name}: no example data of its declared files {files}"
    assert [f for f in task.findings(task.load(suite, "test")) if f.severity == "error"] == []


@pytest.mark.parametrize("name", NAMES)
def test_every_rule_of_its_shapes_fires(world: Path, name: str) -> None:
    task = get_task(name)
    shapes = task.data_shapes(task.load(Suite(world), "test"))
    assert shapes, f"{name}: declares no data shape, so no integrity rule applies to it"
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
        task = get_task(name)
        for finding in task.findings(task.load(suite, "test")):
            assert finding in report.problems, (name, finding)


def test_a_task_registered_here_is_covered() -> None:
    assert "contract-tiny" in NAMES


# --- the examples, end to end -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def scirepeval_copy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from scidocs_eval.data.scirepeval import write_embeddings_jsonl

    folder = tmp_path_factory.mktemp("scirepeval-copy")
    vectors = write_synthetic_scirepeval(folder / "data", seed=1)
    return folder / "data", write_embeddings_jsonl(folder / "embeddings.jsonl", vectors)


def _copy_of(source: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(source, tmp_path / "data"))


def _run(data: Path, embeddings: Path, task: str, *extra: str) -> int:
    return main(["run", "--embeddings", str(embeddings), "--data", str(data), "--tasks", task, "--quiet", *extra])


def test_scirepeval_test_papers_copied_from_train_stop_run_and_verify(
        scirepeval_copy: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _copy_of(scirepeval_copy[0], tmp_path)
    train = (data / "scirepeval_test/biomimicry/train.jsonl").read_text().splitlines()
    (data / "scirepeval_test/biomimicry/test.jsonl").write_text("\n".join(train[:40]) + "\n")
    assert _run(data, scirepeval_copy[1], "scirepeval-biomimicry") == 2
    line = _one_line_error(capsys)
    assert "biomimicry/test.jsonl" in line and "40 of its 40 papers are also in" in line and "[test-in-train]" in line
    assert any(p.rule == "test-in-train" for p in verify_suite(data).errors)


def test_scirepeval_class_below_the_folds_is_one_line_not_sklearns_warning(
        scirepeval_copy: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _copy_of(scirepeval_copy[0], tmp_path)
    train = data / "scirepeval_test/biomimicry/train.jsonl"
    train.write_text(train.read_text() + '{"paper_id": "rare-0", "label": 7}\n')
    assert _run(data, scirepeval_copy[1], "scirepeval-biomimicry") == 2
    assert "class 7 has 1 paper(s), fewer than the 3 cross-validation folds" in _one_line_error(capsys)
    assert any(p.rule == "class-below-folds" for p in verify_suite(data).errors)


@pytest.mark.parametrize(("sample_size", "message"), [
    ("1", "sample_size 1 splits the 130 training papers into 130 draws"),
    ("500", "sample_size 500 is not below the 130 training papers")])
def test_few_shot_sample_sizes_the_data_cannot_give(scirepeval_copy: tuple[Path, Path], sample_size: str,
                                                    message: str, capsys: pytest.CaptureFixture[str]) -> None:
    data, vectors = scirepeval_copy
    assert _run(data, vectors, "scirepeval-drsm-24-shot", "--task-param",
                f"scirepeval-drsm-24-shot.sample_size={sample_size}") == 2
    assert message in _one_line_error(capsys)


def test_a_suite_qrel_pair_judged_twice_is_a_named_warning_in_run_and_verify(
        world: Path, tmp_path: Path, embeddings: Path, caplog: pytest.LogCaptureFixture) -> None:
    data = _copy_of(world, tmp_path)
    qrels = data / "cite/test.qrel"
    query, _, candidate, grade = qrels.read_text().splitlines()[0].split()
    qrels.write_text(qrels.read_text() + f"{query} 0 {candidate} {1 - int(grade)}\n")
    main(["run", "--embeddings", str(embeddings), "--data", str(data), "--tasks", "cite", "--quiet"])
    assert "[pair-judged-twice]" in caplog.text
    assert any(p.rule == "pair-judged-twice" for p in verify_suite(data).problems)


@pytest.mark.parametrize("layout", ["beir", "scirepeval"])
def test_a_pair_judged_twice_with_different_grades_is_an_error_in_run_and_verify(
        layout: str, world: Path, scirepeval_copy: tuple[Path, Path], tmp_path: Path, embeddings: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    if layout == "beir":
        data = tmp_path / "data"
        build_retrieval_dataset(data / "scidocs-retrieval", documents=30, queries=4)
        qrels, task = data / "scidocs-retrieval/qrels/test.tsv", "scidocs-retrieval"
        query, doc, grade = qrels.read_text().splitlines()[1].split("\t")
        qrels.write_text(qrels.read_text() + f"{query}\t{doc}\t{int(grade) + 1}\n")
    else:
        data = _copy_of(scirepeval_copy[0], tmp_path)
        qrels, task = data / "scirepeval_test/relish/test.jsonl", "scirepeval-relish"
        import orjson
        first = orjson.loads(qrels.read_text().splitlines()[0])
        qrels.write_text(qrels.read_text() + orjson.dumps({**first, "score": first["score"] + 1}).decode() + "\n")
    assert _run(data, embeddings, task) == 2
    assert "judged twice with different grades" in _one_line_error(capsys)
    assert any("judged twice with different grades" in p.message for p in verify_suite(data).errors)


def _parquet_dataset(folder: Path, qrels_rows: list[dict]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    for config, rows in (("corpus", [{"_id": "d1", "title": "", "text": "a paper"},
                                     {"_id": "d2", "title": "", "text": "another"}]),
                         ("queries", [{"_id": "q1", "text": "a query"}]), ("default", qrels_rows)):
        (folder / config).mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows), folder / config / "test-00000-of-00001.parquet")


@pytest.mark.parametrize(("rows", "message"), [
    ([{"query-id": "q1", "score": 1}], "row 1: field 'corpus-id' is missing"),
    ([{"query-id": "q1", "corpus-id": "d1", "score": 1e20}], "row 1: field 'score' is 1e+20: beyond what pytrec_eval "
                                                             "takes"),
    ([{"query-id": "q1", "corpus-id": "d1", "score": float("nan")}], "row 1: field 'score' is nan: not an integer")])
def test_hf_parquet_qrels_errors_name_the_file_and_row(tmp_path: Path, embeddings: Path, rows: list[dict],
                                                       message: str, capsys: pytest.CaptureFixture[str]) -> None:
    _parquet_dataset(tmp_path / "data" / "scidocs-retrieval", rows)
    assert _run(tmp_path / "data", embeddings, "scidocs-retrieval") == 2
    line = _one_line_error(capsys)
    assert "test-00000-of-00001.parquet" in line and message in line


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_safetensors_are_read_exactly(tmp_path: Path, dtype: str) -> None:
    import json

    import torch
    from safetensors.torch import save_file

    from scidocs_eval.formats.embeddings import EmbeddingStore

    tensor = torch.tensor([[1.5, -2.25, 3e4], [0.001, 7.0, -1.0]]).to(getattr(torch, dtype))
    save_file({"embeddings": tensor}, tmp_path / "e.safetensors", metadata={"ids": json.dumps(["a", "b"])})
    store = EmbeddingStore.load(tmp_path / "e.safetensors", cache=False)
    assert store.ids == ["a", "b"]
    np.testing.assert_array_equal(store.vectors(["a", "b"]), tensor.to(torch.float32).numpy())


def test_an_output_inside_an_input_folder_or_read_through_an_option_is_refused(
        world: Path, embeddings: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    training = tmp_path / "training"
    training.mkdir()
    (training / "metadata.json").write_text('{"p1": {"paper_id": "p1", "title": "a title", "abstract": ""}}')
    before = (training / "metadata.json").read_bytes()
    assert main(["audit", "--train", str(training), "--data", str(world), "--tasks", "mag",
                 "--out", str(training / "metadata.json"), "--overwrite"]) == 2
    assert f"in {training}, read by the command as its --train" in _one_line_error(capsys)
    assert (training / "metadata.json").read_bytes() == before
    audit = tmp_path / "audit.json"
    audit.write_text("{}")
    assert main(["run", "--embeddings", str(embeddings), "--data", str(world), "--tasks", "cite",
                 "--exclude", str(audit), "--out", str(audit), "--overwrite"]) == 2
    assert "is also an input" in _one_line_error(capsys) and audit.read_text() == "{}"


def test_the_audit_covers_every_registered_task(world: Path, tmp_path: Path) -> None:
    """No task is "not audited": each one's items come from its declarations, and an id seen in training leaks."""
    from scidocs_eval.evaluation.contamination import audit_suite
    from scidocs_eval.formats.training_data import read_training_data

    suite = Suite(world)
    seen = {}
    for name in NAMES:
        task = get_task(name)
        items = task.evaluation_items(task.load(suite, "test"))
        assert items is not None and items.items, name
        seen[name] = next(iter(items.items.values()))
    ids = tmp_path / "seen.txt"
    ids.write_text("\n".join(dict.fromkeys(seen.values())) + "\n")
    report = audit_suite(read_training_data([ids]), suite, tasks=NAMES, examples=0)
    assert report.data["skipped"] == {}
    for name in NAMES:
        assert report.tasks[name]["leaked"] >= 1, name


def test_run_exclude_scores_mteb_and_scirepeval_tasks_on_their_clean_part(
        scirepeval_copy: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import orjson
    from builders import write_vectors

    data = _copy_of(scirepeval_copy[0], tmp_path)
    vectors = build_retrieval_dataset(data / "scidocs-retrieval", documents=40, queries=6)
    mine = tmp_path / "mine.jsonl"
    write_vectors(mine, {**vectors["queries"], **vectors["corpus"]})
    shutil.copyfile(scirepeval_copy[1], tmp_path / "scirepeval.jsonl")
    leaked = ["query0000", *[line.split('"')[3] for line in
                             (data / "scirepeval_test/biomimicry/test.jsonl").read_text().splitlines()[:5]]]
    (tmp_path / "train.txt").write_text("\n".join(leaked) + "\n")
    audit = tmp_path / "audit.json"
    tasks = "scidocs-retrieval,scirepeval-biomimicry"
    assert main(["audit", "--train", str(tmp_path / "train.txt"), "--data", str(data), "--tasks", tasks,
                 "--out", str(audit)]) == 0
    for task, embeddings, left_out in (("scidocs-retrieval", mine, 1),
                                       ("scirepeval-biomimicry", scirepeval_copy[1], 5)):
        out = tmp_path / f"{task}.json"
        assert main(["run", "--embeddings", str(embeddings), "--data", str(data), "--tasks", task, "--exclude",
                     str(audit), "--out", str(out), "--quiet"]) == 0
        result = orjson.loads(out.read_bytes())["tasks"][task]
        assert result["coverage"]["items_excluded_as_leaked"] == left_out
    capsys.readouterr()
    few_shot = "scirepeval-biomimicry-16-shot"
    assert main(["audit", "--train", str(tmp_path / "train.txt"), "--data", str(data), "--tasks", few_shot,
                 "--out", str(tmp_path / "few.json")]) == 0
    assert main(["run", "--embeddings", str(scirepeval_copy[1]), "--data", str(data), "--tasks", few_shot,
                 "--exclude", str(tmp_path / "few.json"), "--task-param", f"{few_shot}.iterations=2", "--quiet"]) == 2
    assert "its results are per iteration, the audit's items are papers" in _one_line_error(capsys)


def _recomm_copy(world: Path, tmp_path: Path) -> Path:
    data = tmp_path / "data"
    for relative in get_task("recomm").input_files(Suite(world), "test"):
        (data / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(world / relative, data / relative)
    return data


def test_recomm_impressions_without_an_unclicked_paper_are_a_named_warning_in_run_and_verify(
        world: Path, tmp_path: Path, embeddings: Path, caplog: pytest.LogCaptureFixture) -> None:
    data = _recomm_copy(world, tmp_path)
    test = data / "recomm/test.csv"
    query, clicked = Suite(data).impressions("test")[0].query_id, Suite(data).impressions("test")[0].clicked_id
    test.write_text(test.read_text() + f'{query},{clicked},"{clicked}"\n{query},{clicked},"{clicked},{clicked}"\n')
    main(["run", "--embeddings", str(embeddings), "--data", str(data), "--tasks", "recomm", "--quiet",
          "--task-param", "recomm.seeds=1"])
    assert "2 of its 12 impression(s) show only the clicked paper" in caplog.text
    assert "[impression-without-unclicked]" in caplog.text and "[paper-shown-twice]" in caplog.text
    rules = {p.rule for p in verify_suite(data).problems}
    assert {"impression-without-unclicked", "paper-shown-twice"} <= rules


def test_recomm_clicks_beyond_the_propensities_stop_run_and_fail_verify(
        world: Path, tmp_path: Path, embeddings: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _recomm_copy(world, tmp_path)
    (data / "recomm/propensity_scores.json").write_text('{"scores": [1.0, 0.5]}')
    out = tmp_path / "results.json"
    assert main(["run", "--embeddings", str(embeddings), "--data", str(data), "--tasks", "recomm", "--quiet",
                 "-o", str(out)]) == 2
    line = _one_line_error(capsys)
    assert "recomm/train.csv" in line and "beyond the 2 of recomm/propensity_scores.json" in line
    assert "[propensity-positions]" in line and not out.exists()
    assert any(p.rule == "propensity-positions" for p in verify_suite(data).errors)
    assert "recomm" not in verify_suite(data).complete


# --- every command x every input it reads: an output that is the input is refused, --overwrite or not ------------

def _cite_suite(world: Path, folder: Path) -> Path:
    for relative in [*get_task("cite").input_files(Suite(world), "test"), "paper_metadata_view_cite_read.json"]:
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(world / relative, folder / relative)
    return folder


def _results_of_scidocs_retrieval(tmp_path: Path) -> Path:
    from builders import write_vectors

    data = tmp_path / "retrieval"
    vectors = build_retrieval_dataset(data / "scidocs-retrieval", documents=30, queries=4)
    embeddings = write_vectors(tmp_path / "mine.jsonl", {**vectors["queries"], **vectors["corpus"]})
    out = tmp_path / "run.json"
    assert main(["run", "--embeddings", str(embeddings), "--data", str(data), "--tasks", "scidocs-retrieval",
                 "--name", "org/model", "-o", str(out), "--quiet"]) == 0
    return out


def _case(command: str, source: str, world: Path, embeddings: Path, tmp_path: Path) -> tuple[list[str], Path]:
    """(argv whose output is a file the command reads through `source`, that file)."""
    suite = _cite_suite(world, tmp_path / "suite")
    training = tmp_path / "training"
    training.mkdir()
    (training / "papers.jsonl").write_text('{"paper_id": "p1", "title": "a title", "abstract": ""}\n')
    (training / "metadata.json").write_text('{"p1": {"paper_id": "p1", "title": "a title", "abstract": ""}}')
    run = ["run", "--embeddings", str(embeddings), "--data", str(suite), "--tasks", "cite", "--quiet"]
    audit = ["audit", "--train", str(training), "--data", str(suite), "--tasks", "cite"]
    if command == "run":
        target = {"--embeddings": embeddings, "--data": suite / "cite/test.qrel",
                  "--exclude": tmp_path / "audit.json"}[source]
        if source == "--exclude":
            assert main([*audit, "--out", str(target)]) == 0
            return [*run, "--exclude", str(target), "-o", str(target)], target
        return [*run, "-o", str(target)], target
    if command == "baseline":
        inside = {"--data": suite, "--train-corpus": training}[source]
        target, extra = inside / "random.results.json", []
        target.write_text("{}")
        if source == "--train-corpus":
            target = training / "random.jsonl"
            shutil.copyfile(training / "papers.jsonl", target)
            extra = ["--train-corpus", str(target)]
        return ["baseline", "random", "--data", str(suite), "--tasks", "cite", "--out-dir", str(inside), "--quiet",
                *extra], target
    if command == "audit":
        target = {"--train": training / "metadata.json", "--data": suite / "cite/test.qrel"}[source]
        return [*audit, "--out", str(target)], target
    results = _results_of_scidocs_retrieval(tmp_path)
    out = tmp_path / "mteb"
    target = out / "org__model" / "no_revision_available" / "SCIDOCS.json"
    target.parent.mkdir(parents=True)
    shutil.copyfile(results, target)
    return ["export", "mteb", str(target), "--out-dir", str(out)], target


COMMAND_INPUTS = [("run", "--embeddings"), ("run", "--data"), ("run", "--exclude"), ("baseline", "--data"),
                  ("baseline", "--train-corpus"), ("audit", "--train"), ("audit", "--data"), ("export", "RESULTS")]
"""Each command with each option through which it reads files (a folder's files included)."""
READERS_NAMED = {("run", "--embeddings"): "read by the command as its --embeddings", ("run", "--data"): "by task cite",
                 ("run", "--exclude"): "read by the command as its --exclude",
                 ("baseline", "--data"): "read by the command as its --data",
                 ("baseline", "--train-corpus"): "read by the command as its --train-corpus",
                 ("audit", "--train"): "read by the command as its --train", ("audit", "--data"): "by task cite",
                 ("export", "RESULTS"): "read by export as its RESULTS.json"}
"""What the refusal says of who reads the file (a suite's file: the task that reads it)."""


@pytest.mark.parametrize(("command", "source"), COMMAND_INPUTS, ids=[f"{c} {s}" for c, s in COMMAND_INPUTS])
def test_no_command_writes_a_file_it_reads(command: str, source: str, world: Path, embeddings: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    argv, target = _case(command, source, world, embeddings, tmp_path)
    before = target.read_bytes()
    capsys.readouterr()
    assert main([*argv, "--overwrite"]) == 2, argv
    error = _one_line_error(capsys)
    assert "is also an input of this command" in error and READERS_NAMED[command, source] in error, error
    assert target.read_bytes() == before


def test_scirepeval_test_papers_partly_in_train_are_a_named_warning_with_the_clean_split_number(
        scirepeval_copy: tuple[Path, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """SciRepEval's evaluator scores test papers also in train as they are (real configs can share a paper); `run`
    scores them too, names them, and gives the number without them beside (the issue's 89.47 vs 81.82)."""
    import orjson

    data = _copy_of(scirepeval_copy[0], tmp_path)
    train, test = (data / f"scirepeval_test/biomimicry/{s}.jsonl" for s in ("train", "test"))
    copied = [orjson.loads(line) for line in train.read_text().splitlines()[:5]]
    test.write_text(test.read_text() + "".join(orjson.dumps(r).decode() + "\n" for r in copied))
    out = tmp_path / "results.json"
    assert _run(data, scirepeval_copy[1], "scirepeval-biomimicry", "-o", str(out)) == 0
    assert "[test-in-train]" in caplog.text and "5 of its" in caplog.text
    result = orjson.loads(out.read_bytes())["tasks"]["scirepeval-biomimicry"]
    clean = result["details"]["clean_split"]["test-in-train"]
    assert clean["excluded"] == 5 and clean["scored"] == len(result["items"]["ids"]) - 5
    keep = [i for i, paper in enumerate(result["items"]["ids"]) if paper not in {r["paper_id"] for r in copied}]
    from sklearn.metrics import f1_score

    gold, predicted = (np.asarray(result["items"][k])[keep] for k in ("gold", "predicted"))
    assert clean["metrics"]["f1"] == round(100 * f1_score(gold, predicted, average="binary"), 2)
    report = verify_suite(data)
    assert any(p.rule == "test-in-train" and p.severity == "warning" for p in report.problems)
    assert "scirepeval-biomimicry" in report.complete


def test_a_task_written_before_taskdata_scores_the_same_with_a_warning(world: Path) -> None:
    """A plugin's task of the form before TaskData (`data_shapes(suite, split)`, `evaluate(suite, embeddings, split,
    missing)`) works for a release: a DeprecationWarning when its class is defined, then the runner's calls with the
    loaded data reach it with the data's suite and split; a caller of the old form gets the same numbers, warned."""
    with pytest.warns(DeprecationWarning, match="the form before TaskData") as warned:
        class OldFormTask(Task):
            spec = TinyLabelTask.spec

            def required_files(self, split: str) -> list[str]:
                return ["mag/train.csv", f"mag/{split}.csv"]

            def data_shapes(self, suite: Suite, split: str) -> list[DataShape]:
                train, scored = suite.labels("mag", "train"), suite.labels("mag", split)
                return [LabelledSplit(self.name, "mag/train.csv", f"mag/{split}.csv", train.ids, train.labels,
                                      scored.ids, scored.labels, "classes", 3)]

            def evaluate(self, suite, embeddings, split="test", missing="official") -> TaskResult:  # noqa: ANN001
                return TaskResult(self.name, {"f1": 0.0}, {"papers": len(suite.labels("mag", split).ids)})

    assert sorted(str(w.message).split(" defines ")[1].split(",")[0] for w in warned) == [
        "data_shapes(suite", "evaluate(suite"]
    suite, store = Suite(world), EmbeddingStore.from_mapping({"nobody": [1.0]})
    old, new = OldFormTask(), TinyLabelTask()
    def counts(shapes: list[DataShape]) -> list[dict[str, int]]:
        return [shape.counts() for shape in shapes]

    for split in ("val", "test"):
        assert counts(old.data_shapes(old.load(suite, split))) == counts(new.data_shapes(new.load(suite, split)))
        assert old.findings(old.load(suite, split)) == new.findings(new.load(suite, split))
        assert old.evaluation_items(old.load(suite, split)) == new.evaluation_items(new.load(suite, split))
        assert old.evaluate(old.load(suite, split), store) == new.evaluate(new.load(suite, split), store)
        with pytest.warns(DeprecationWarning, match=r"TinyLabelTask\.evaluate\(suite, embeddings, split, missing\) is"):
            assert new.evaluate(suite, store, split) == new.evaluate(new.load(suite, split), store)
        with pytest.warns(DeprecationWarning, match=r"TinyLabelTask\.data_shapes\(suite, split\) is deprecated"):
            assert counts(new.data_shapes(suite, split)) == counts(new.data_shapes(new.load(suite, split)))
