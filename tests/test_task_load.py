"""`Task.load`: each dataset file is parsed once per run, and with vectors given a retrieval corpus' ids only.

Every dataset reader parses through `formats.lines` (`json_lines`, `utf8_lines`); the tests count those calls per
file over a whole run, on `run`'s road (`evaluate` of a vectors file) and on a model's (`evaluate_model`), for
the retrieval, clustering and SciDocs tasks (`bench/parses_per_run.py` prints the same counts).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from builders import build_retrieval_dataset, write_clustering_copy, write_vectors

import scidocs_eval.formats.lines as lines
import scidocs_eval.formats.retrieval as retrieval
from scidocs_eval.data.demo import DemoConfig, build_demo_suite
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.evaluation.task import TASKS, get_task
from scidocs_eval.formats.hf_rows import text_id
from scidocs_eval.formats.suite import Suite
from scidocs_eval.run.model_object import evaluate_model

TASK_NAMES = ["mag", "cite", "scidocs-retrieval", "scidocs-rr", "biorxiv-clustering-p2p"]
PARAMS: dict = {}
DIM = 12


@pytest.fixture(scope="module")
def suite_and_vectors(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("load")
    suite = build_demo_suite(base / "suite", DemoConfig(
        mag_papers=250, mesh_papers=120, ranking_queries=4, positives=2, negatives=6, recomm_impressions=(40, 10, 10),
        recomm_papers=80, topics=5))
    found = build_retrieval_dataset(suite.root / "scidocs-retrieval", documents=150, queries=15, dim=DIM)
    ranked = build_retrieval_dataset(suite.root / "scidocs-rr", documents=80, queries=8, dim=DIM, candidates=10,
                                     seed=1)
    texts = write_clustering_copy(suite.root, "biorxiv-clustering-p2p", 300)
    rng = np.random.default_rng(0)
    vectors = {paper.paper_id: rng.standard_normal(DIM) for paper in suite.papers()}
    for built in (found, ranked):
        vectors.update({**built["queries"], **built["corpus"]})
    vectors.update({text_id(text): vector for text, vector in texts.items()})
    return suite.root, write_vectors(base / "vectors.jsonl", vectors)


@pytest.fixture()
def parses(monkeypatch: pytest.MonkeyPatch) -> tuple[Counter, Counter]:
    """(parses per file through the line readers, retrieval corpora read with their texts), counted from now."""
    TASKS.names()  # every task module imported, so that each reader's module is patched
    counts: Counter = Counter()
    with_texts: Counter = Counter()

    def counting(read):  # noqa: ANN001, ANN202
        def wrapped(path, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
            counts[Path(path).resolve()] += 1
            return read(path, *args, **kwargs)
        return wrapped

    originals = {name: getattr(lines, name) for name in ("json_lines", "utf8_lines")}
    for module in [m for name, m in list(sys.modules.items()) if name.startswith("scidocs_eval")]:
        for name, read in originals.items():
            if getattr(module, name, None) is read:
                monkeypatch.setattr(module, name, counting(read))
    read_corpus = retrieval._read_beir_corpus

    def corpus_with_texts(path: Path) -> dict:
        with_texts[Path(path).resolve()] += 1
        return read_corpus(path)

    monkeypatch.setattr(retrieval, "_read_beir_corpus", corpus_with_texts)
    return counts, with_texts


def _dataset_files(root: Path) -> set[Path]:
    suite = Suite(root)
    return {suite.path(name).resolve() for task in TASK_NAMES for name in get_task(task).input_files(suite, "test")}


def test_a_run_with_vectors_parses_each_file_once_and_reads_no_corpus_text(
        suite_and_vectors: tuple[Path, Path], parses: tuple[Counter, Counter]) -> None:
    root, vectors = suite_and_vectors
    counts, with_texts = parses
    result = evaluate(vectors, RunConfig(data=root, tasks=TASK_NAMES, task_params=PARAMS, cache=False, progress=False))
    assert set(result.tasks) == set(TASK_NAMES)
    read = {path: n for path, n in counts.items() if root.resolve() in path.parents}
    assert set(read) >= _dataset_files(root)
    assert {path: n for path, n in read.items() if n != 1} == {}
    assert with_texts == {}, "a retrieval corpus was read with its texts though the vectors were given"


def test_a_models_run_parses_each_file_once(suite_and_vectors: tuple[Path, Path],
                                            parses: tuple[Counter, Counter]) -> None:
    root, _ = suite_and_vectors
    counts, with_texts = parses

    def model(texts: list[str]) -> np.ndarray:
        return np.random.default_rng(len(texts)).standard_normal((len(texts), DIM)).astype(np.float32)

    result = evaluate_model(model, RunConfig(data=root, tasks=TASK_NAMES, task_params=PARAMS, cache=False,
                                             progress=False))
    assert set(result.tasks) == set(TASK_NAMES)
    read = {path: n for path, n in counts.items() if root.resolve() in path.parents}
    assert set(read) >= _dataset_files(root)
    assert {path: n for path, n in read.items() if n != 1} == {}
    corpora = {(root / task / "corpus.jsonl").resolve() for task in ("scidocs-retrieval", "scidocs-rr")}
    assert with_texts == dict.fromkeys(corpora, 1)


def test_load_is_kept_per_suite_and_parameters(suite_and_vectors: tuple[Path, Path]) -> None:
    root, _ = suite_and_vectors
    suite = Suite(root)
    task = get_task("scidocs-retrieval")
    first = task.load(suite, "test", texts=False)
    assert first.data.corpus is None and len(first.data.document_ids) == 150 and first.suite is suite
    assert task.load(suite, "test", texts=False).data is first.data  # what was parsed, not parsed again
    with_texts = get_task("scidocs-retrieval", similarity="dot").load(suite, "test", texts=True)
    assert with_texts.data.corpus is not None and with_texts.data is not first.data
    assert get_task("scidocs-retrieval").load(suite, "test").data is not first.data  # a suite that scores no vectors
    other = Suite(root)
    assert task.load(other, "test", texts=False).data is not first.data  # another run's suite reads again


def test_a_load_keeps_no_suite_alive(suite_and_vectors: tuple[Path, Path]) -> None:
    """What a run loaded goes with its suite: the memo holds its data without the suite (the data a command is
    handed carries it), so a suite nobody holds is collected, with its entry."""
    import gc
    import weakref

    from scidocs_eval.evaluation.task import _LOADED

    root, _ = suite_and_vectors
    suite = Suite(root)
    assert get_task("cite").load(suite, "test").suite is suite
    gone = weakref.ref(suite)
    del suite
    gc.collect()
    assert gone() is None and all(data.suite is None for entry in _LOADED.values() for data in entry.values())


def test_recomms_questions_parse_each_impressions_file_once(suite_and_vectors: tuple[Path, Path],
                                                           parses: tuple[Counter, Counter]) -> None:
    """recomm's data shapes (with every bad row), the papers it needs and its scoring read one load."""
    root, _ = suite_and_vectors
    counts, _ = parses
    suite, task = Suite(root), get_task("recomm")
    task.data_shapes(task.load(suite, "test"))
    task.paper_ids(task.load(suite, "test"))
    task.load(suite, "test").impressions("test")
    assert {path.name: n for path, n in counts.items() if path.parent.name == "recomm"} == \
        {"train.csv": 1, "val.csv": 1, "test.csv": 1}


@pytest.mark.parametrize("layout", ["beir", "hf-parquet"])
def test_the_ids_only_read_gives_the_corpus_ids_in_order(layout: str, tmp_path: Path) -> None:
    from test_retrieval_data import to_parquet_layout

    from scidocs_eval.formats.retrieval import read_retrieval_data

    build_retrieval_dataset(tmp_path / "beir", documents=40, queries=5)
    folder = tmp_path / "beir"
    if layout == "hf-parquet":
        to_parquet_layout(folder, tmp_path / "parquet")
        folder = tmp_path / "parquet"
    full, ids_only = read_retrieval_data(folder), read_retrieval_data(folder, texts=False)
    assert ids_only.corpus is None and full.corpus is not None
    assert ids_only.document_ids == full.document_ids == tuple(full.corpus)
    assert (ids_only.queries, ids_only.qrels, ids_only.layout) == (full.queries, full.qrels, layout)
