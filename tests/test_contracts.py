"""Contract tests over everything registered (as scikit-learn's `parametrize_with_checks`): every task, adapter,
ranker and command group keeps the promises of its interface, so a new one is checked by adding it, not by
writing tests for it."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from scidocs_eval.cli import main
from scidocs_eval.cli.options import COMMANDS
from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.evaluation.task import TASKS, Task, TaskSpec, task_names
from scidocs_eval.evaluators.recomm_rankers import RANKERS, Ranker
from scidocs_eval.formats.embeddings import EmbeddingStore
from scidocs_eval.formats.suite import Paper, Suite
from scidocs_eval.leaderboard import COLUMNS
from scidocs_eval.models.adapter import ADAPTERS, Adapter, NotFittedError, get_adapter
from scidocs_eval.models.sif_weighting import A_GRID
from scidocs_eval.models.text import analyzer
from scidocs_eval.models.tuning import TunedAdapter, ValScorer
from scidocs_eval.registry import Registry, constructor_parameters
from tests.builders import build_retrieval_dataset

OFFLINE_ADAPTERS = {
    "random": {},
    "sif": {"dim": 20, "epochs": 2, "min_count": 2},
    "sgc": {"dim": 20, "epochs": 2, "min_count": 2, "k": 1},
    "fasttext-sum": {"dim": 20, "epochs": 2, "min_count": 2},
    "doc2vec": {"dim": 20, "epochs": 2},
    "sent-bert": {"batch_size": 8},
}
"""Adapters that fit and embed offline in seconds with these settings; the others need hub checkpoints
(specter, scibert, transformer) or train for minutes (citeomatic, see test_citeomatic)."""
REQUIRED_PARAMS = {"transformer": {"model": "all-MiniLM-L6-v2"}}
"""Constructor parameters without a default."""
HEAVY_MODULES = ("torch", "gensim", "transformers", "sentence_transformers", "lightgbm")


@pytest.fixture(scope="module")
def demo_result(demo_suite: Suite, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Every registered task's result: the suite's tasks on the demo suite, the retrieval tasks on datasets the
    builder writes (one per task, the same ids and vectors in each)."""
    rng = np.random.default_rng(0)
    store = EmbeddingStore.from_mapping({p.paper_id: rng.standard_normal(8) for p in demo_suite.papers()})
    results = evaluate(store, RunConfig(data=demo_suite, task_params={"recomm": {"seeds": 1}}, progress=False)).tasks
    retrieval = [name for name in task_names() if TASKS[name].spec.query_group is not None]
    root = tmp_path_factory.mktemp("retrieval")
    for name in retrieval:
        built = build_retrieval_dataset(root / name, documents=120, queries=10, dim=8,
                                        candidates=10 if TASKS[name].spec.family == "reranking" else None,
                                        split=TASKS[name].spec.dataset.get("split", "test"))
    if retrieval:
        stores = {group: EmbeddingStore.from_mapping(built[group]) for group in ("queries", "corpus")}
        results.update(evaluate(stores, RunConfig(data=root, tasks=retrieval, progress=False)).tasks)
    return results


def test_registries_refuse_duplicates_wrong_types_and_suggest_close_names() -> None:
    registry: Registry[type[Adapter]] = Registry("widget", Adapter)

    class Widget(Adapter):
        name = "widget"

        def transform(self, papers: list) -> np.ndarray:
            return np.zeros((len(papers), 1), np.float32)

    class Other(Widget):
        pass

    registry.register(Widget)
    registry.register(Widget)  # the same class again (a module imported twice) is no duplicate
    with pytest.raises(ValueError, match="widget 'widget' is already registered"):
        registry.register(Other)
    with pytest.raises(TypeError, match="a widget must be a Adapter subclass"):
        registry.register(int)
    with pytest.raises(ScidocsEvalError, match="unknown widget 'widgte'; did you mean 'widget'\\?; known widgets: "):
        registry["widgte"]
    with pytest.raises(ScidocsEvalError, match="unknown baseline 'sfi'; did you mean 'sif'"):
        get_adapter("sfi")


def test_task_specs_are_checked_when_built() -> None:
    with pytest.raises(ValueError, match="main_score 'f1' is not one of its metrics"):
        TaskSpec("x", "x", "ranking", ("map",), "f1", "cls", "paper_metadata_mag_mesh.json")
    assert TaskSpec("x", "x", "clustering", ("map",), "map", "cls", "paper_metadata_mag_mesh.json").family == \
        "clustering"  # a new family needs no edit to the core
    with pytest.raises(ValueError, match="family 'Clustering!' must be lowercase letters"):
        TaskSpec("x", "x", "Clustering!", ("map",), "map", "cls", "paper_metadata_mag_mesh.json")
    with pytest.raises(ValueError, match=r"table1 maps \['p@5'\] which are not among its metrics"):
        TaskSpec("x", "x", "ranking", ("map",), "map", "cls", "paper_metadata_mag_mesh.json", {"p@5": "cite_map"})


@pytest.mark.parametrize("name", task_names())
def test_task_declares_a_valid_spec(name: str) -> None:
    cls = TASKS[name]
    assert issubclass(cls, Task) and isinstance(cls.spec, TaskSpec) and cls.spec.name == name
    assert set(cls.spec.table1.values()) <= set(COLUMNS)
    assert (cls.name, cls.metrics, cls.embedding_group) == (name, cls.spec.metrics, cls.spec.embedding_group)


def test_table1_columns_are_filled_once_and_all() -> None:
    filled = [column for name in task_names() for column in TASKS[name].spec.table1.values()]
    assert sorted(filled) == sorted(COLUMNS)


@pytest.mark.parametrize("name", task_names(benchmark="scidocs"))  # other benchmarks: tests/test_scirepeval.py
def test_task_yields_exactly_its_declared_metrics_on_the_demo_suite(name: str, demo_result: dict) -> None:
    result = demo_result[name]
    assert tuple(result.metrics) == TASKS[name].spec.metrics
    assert all(isinstance(v, float) and 0 <= v <= 100 for v in result.metrics.values())
    assert result.seconds > 0


@pytest.mark.parametrize("name", sorted(ADAPTERS.names()))
def test_adapter_round_trips_its_parameters(name: str) -> None:
    adapter = get_adapter(name, **REQUIRED_PARAMS.get(name, {}))
    params = adapter.get_params()
    assert type(adapter)(**params).get_params() == params
    assert isinstance(adapter, Adapter) and adapter.name == name


@pytest.mark.parametrize("name", sorted(OFFLINE_ADAPTERS))
def test_adapter_transform_gives_float32_rows(name: str, demo_suite: Suite) -> None:
    if name == "sent-bert":
        pytest.importorskip("transformers")
    papers = [p for p in demo_suite.papers() if p.has_text][:300]
    adapter = get_adapter(name, **OFFLINE_ADAPTERS[name]).fit(papers)
    vectors = adapter.transform(papers[:7])
    assert vectors.dtype == np.float32 and vectors.ndim == 2 and vectors.shape[0] == 7 and vectors.shape[1] > 0
    assert np.isfinite(vectors).all()


@pytest.mark.parametrize("name", RANKERS.names())
def test_rankers_are_registered_rankers(name: str) -> None:
    assert issubclass(RANKERS[name], Ranker) and RANKERS[name].name == name


def test_the_package_imports_and_registers_without_torch_gensim_or_transformers() -> None:
    blocker = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name.split('.')[0] in {HEAVY_MODULES!r}:\n"
        "            raise ImportError(f'blocked {name}')\n"
        "sys.meta_path.insert(0, Block())\n"
        "from scidocs_eval.cli.main import build_parser\n"
        "from scidocs_eval.evaluation.task import TASKS\n"
        "from scidocs_eval.models.adapter import ADAPTERS\n"
        "build_parser()\n"
        "print(len(TASKS.names()), len(ADAPTERS.names()))\n"
    )
    done = subprocess.run([sys.executable, "-c", blocker], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(len(TASKS.names())), str(len(ADAPTERS.names()))]


def test_command_groups_are_registered() -> None:
    assert COMMANDS.names() == ["audit", "cache", "compare", "convert", "core", "data", "export", "figures",
                                "leaderboard", "transformers"]


class _Unvalidated:
    """A value no declared constraint allows, to see who checks it (only `fit` may)."""

    def __repr__(self) -> str:
        return "<unvalidated>"


@pytest.mark.parametrize("name", sorted(ADAPTERS.names()))
def test_adapter_init_stores_its_parameters_as_given_and_checks_nothing(name: str) -> None:
    """scikit-learn's rule: `__init__` stores each parameter as given (no validation, no defaults filled in),
    so `get_params` gives back exactly what the user gave; `fit` validates."""
    cls = ADAPTERS[name]
    given = {key: _Unvalidated() for key in constructor_parameters(cls)}
    adapter = cls(**given)
    assert adapter.get_params() == given
    defaults = {key: p.default for key, p in constructor_parameters(cls).items()}
    assert cls().get_params() == defaults


@pytest.mark.parametrize("name", sorted(ADAPTERS.names()))
def test_adapter_fit_validates_its_declared_parameters_before_any_work(name: str) -> None:
    cls = ADAPTERS[name]
    for key in cls.parameter_constraints:
        adapter = cls(**{**REQUIRED_PARAMS.get(name, {}), key: _Unvalidated()})
        with pytest.raises(ScidocsEvalError, match=key):
            adapter.fit([])


@pytest.mark.parametrize("name", sorted(ADAPTERS.names()))
def test_adapter_fit_takes_its_corpus_and_only_what_the_pipeline_gives_it(name: str) -> None:
    """No adapter's `fit` or `learn` receives the suite (whose test judgements it must not see): `fit` takes the
    corpus and, for an adapter that says it propagates over citations (`citation_files`), the guarded edges
    (`run.fit_inputs`); `--tune` is a wrapper, so no adapter takes a `tune` parameter."""
    cls = ADAPTERS[name]
    adapter = get_adapter(name, **REQUIRED_PARAMS.get(name, {}))
    takes_citations = adapter.citation_files() is not None
    assert list(inspect.signature(cls.fit).parameters) == ["self", "papers", *(["citations"] * takes_citations)]
    assert list(inspect.signature(cls.learn).parameters) == ["self", "papers"]
    assert "tune" not in constructor_parameters(cls) and cls.transform_params <= set(constructor_parameters(cls))
    grid = adapter.tuning_grid([Paper("p", "a title", "an abstract")])
    assert grid is None or (grid and all(set(setting) <= set(constructor_parameters(cls)) for setting in grid))


@pytest.mark.parametrize("name", sorted(ADAPTERS.names()))
def test_adapter_says_whether_it_learns_and_refuses_transform_before_fit(name: str) -> None:
    """An adapter that learns from a corpus (`learn`) says so with `requires_fit`; its `transform` (and
    `transform_batches`) before `fit` is a `NotFittedError` naming it and the command that fits it."""
    cls = ADAPTERS[name]
    assert cls.requires_fit == (cls.learn is not Adapter.learn), "requires_fit must say whether it learns"
    if not cls.requires_fit:
        return
    papers = [Paper("p1", "A title", "An abstract.")]
    adapter = get_adapter(name, **REQUIRED_PARAMS.get(name, {}))
    for call in (adapter.transform, lambda papers: next(iter(adapter.transform_batches(papers)))):
        with pytest.raises(NotFittedError, match=rf"adapter '{name}' is not fitted.*scidocs-eval baseline {name}"):
            call(papers)


def test_embed_refuses_an_adapter_that_must_be_fitted_in_one_line(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    metadata = tmp_path / "papers.jsonl"
    metadata.write_text('{"paper_id": "p1", "title": "A title", "abstract": "An abstract."}\n', encoding="utf-8")
    for name in (n for n in ADAPTERS.names() if ADAPTERS[n].requires_fit):
        assert main(["embed", "--adapter", name, "--metadata", str(metadata), "--out",
                     str(tmp_path / f"{name}.jsonl")]) == 2
        error = capsys.readouterr().err
        assert error.count("\n") == 1 and f"scidocs-eval baseline {name}" in error, error
        assert not (tmp_path / f"{name}.jsonl").exists()


def test_tuned_values_go_to_best_params_and_a_second_fit_searches_the_same_grid(demo_suite: Suite,
                                                                                 tmp_path: Path) -> None:
    words = sorted({w for p in demo_suite.papers() for w in analyzer()(p.title + " " + p.abstract)})
    rng = np.random.default_rng(0)
    vectors = tmp_path / "v.vec"
    vectors.write_text(f"{len(words)} 8\n" + "".join(f"{w} {' '.join(f'{x:.4f}' for x in rng.standard_normal(8))}\n"
                                                     for w in words), encoding="utf-8")
    adapter = TunedAdapter(get_adapter("sif", vectors=str(vectors)))
    given = adapter.adapter.get_params()
    first = dict(adapter.fit(demo_suite.papers(), val=ValScorer(demo_suite)).best_params_)
    assert set(first) == {"a"} and adapter.adapter.get_params() == given  # the constructor's `a` is untouched
    assert adapter.fit(demo_suite.papers(), val=ValScorer(demo_suite)).best_params_ == first
    assert [score["params"] for score in adapter.scores_] == [{"a": a} for a in A_GRID]


def test_a_renamed_adapter_parameter_keeps_its_old_spelling_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    """"model" means a checkpoint; fastText's cbow/skipgram switch of the word-vector adapters is "architecture"."""
    with caplog.at_level("WARNING", logger="scidocs_eval"):
        adapter = get_adapter("sif", model="skipgram")
    assert adapter.get_params()["architecture"] == "skipgram" and "model" not in adapter.get_params()
    assert "parameter 'model' is deprecated, it is now 'architecture'" in caplog.text


@pytest.mark.parametrize("name", sorted(OFFLINE_ADAPTERS))
def test_an_adapter_that_does_not_read_ids_gives_equal_texts_equal_vectors(name: str, demo_suite: Suite) -> None:
    """What lets the embedding plan share one vector between papers of equal text (`Adapter.reads_ids`): an adapter
    that says it reads no ids must give two ids of one text the same vector; one that reads ids keys by them."""
    if name == "sent-bert":
        pytest.importorskip("transformers")
    papers = [p for p in demo_suite.papers() if p.has_text][:300]
    adapter = get_adapter(name, **OFFLINE_ADAPTERS[name]).fit(papers)
    twin = Paper("twin-of-" + papers[0].paper_id, papers[0].title, papers[0].abstract)
    if adapter.reads_ids or adapter.transductive:
        assert adapter.input_key(twin) != adapter.input_key(papers[0])
        return
    assert adapter.input_key(twin) == adapter.input_key(papers[0])
    vectors = adapter.transform([papers[0], twin, papers[1]])
    np.testing.assert_array_equal(vectors[0], vectors[1])
