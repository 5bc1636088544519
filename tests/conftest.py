"""Shared fixtures: a small synthetic demo suite, the real corpora in ../shared/data, an isolated cache."""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import orjson
import pytest
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import TfidfVectorizer

from scidocs_eval.data.demo import DemoConfig, build_demo_suite
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.formats.suite import Suite
from scidocs_eval.models.text import analyzer
from scidocs_eval.run.baseline import run_baseline

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("SCIDOCS_EVAL_SHARED_DATA", REPO.parent / "shared" / "data"))
sys.path.insert(0, str(REPO / "tests"))  # test-only helpers (`import builders`)
SHARED_DATA_MISSING = (f"real corpora not found at {SHARED_DATA}: the project's shared data folder (Cora, CiteSeer, "
                       "the SPECTER and SciRepEval samples; ../shared/data/MANIFEST.md), which CI keeps beside the "
                       "checkout and the repository does not hold; set SCIDOCS_EVAL_SHARED_DATA to a copy")
TEST_ONLY_MODULES = {"hypothesis": "test", "moto": "test", "playwright": "test", "xdist": "test"}
"""Modules only the tests import -> the extra that installs them (the package's own: scidocs_eval.extras)."""


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own cache dir, so no test sees another's parsed embeddings or models."""
    monkeypatch.setenv("SCIDOCS_EVAL_CACHE", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.setenv("SCIDOCS_EVAL_QUIET", "1")


@pytest.fixture(scope="session")
def demo_suite(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    """A small synthetic suite (all seven tasks), built once per test session; do not modify it."""
    config = DemoConfig(mag_papers=400, mesh_papers=300, ranking_queries=25, recomm_impressions=(300, 80, 80),
                        recomm_papers=600)
    return build_demo_suite(tmp_path_factory.mktemp("demo") / "suite", config)


@pytest.fixture()
def cite_suite(tmp_path: Path) -> tuple[Path, Path]:
    """A suite with one cite split and a matching embeddings file: MAP 50 (relevant paper ranked 2nd)."""
    root = tmp_path / "suite"
    (root / "cite").mkdir(parents=True)
    (root / "cite" / "test.qrel").write_text("q 0 a 1\nq 0 b 0\n", encoding="utf-8")
    embeddings = tmp_path / "mine.jsonl"
    embeddings.write_text('{"paper_id": "q", "embedding": [0, 0]}\n{"paper_id": "a", "embedding": [2, 0]}\n'
                          '{"paper_id": "b", "embedding": [0, 1]}\n', encoding="utf-8")
    return root, embeddings


@pytest.fixture(scope="session")
def tiny_suite(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    """A 736-paper synthetic suite for tests that run a real model over every paper; do not modify it. Every
    class has at least 3 train papers, so the classification tasks' 3 CV folds pass the integrity check."""
    config = DemoConfig(mag_papers=250, mesh_papers=120, ranking_queries=4, positives=2, negatives=6,
                        recomm_impressions=(40, 10, 10), recomm_papers=80, topics=5)
    return build_demo_suite(tmp_path_factory.mktemp("tiny") / "suite", config)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data (real corpora); tests that need it skip with the reason when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(SHARED_DATA_MISSING)
    return SHARED_DATA


@pytest.fixture(scope="session")
def optional_shared_data() -> Path | None:
    """../shared/data, or None where it is absent (for tests that use it when they can and say so otherwise)."""
    return SHARED_DATA if SHARED_DATA.is_dir() else None


@pytest.fixture(scope="session")
def sample_dir(shared_data: Path) -> Path:
    """The SPECTER training-format sample (data.json, metadata.json, train/val/test ids)."""
    return shared_data / "specter-sample"


@pytest.fixture(scope="session")
def demo_vectors(demo_suite: Suite, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A .vec file of seeded random 20-d vectors for every demo word (fast stand-in for trained vectors)."""
    analyze = analyzer()
    words = sorted({w for p in demo_suite.papers() for w in analyze(f"{p.title} {p.abstract}")})
    vectors = np.random.default_rng(0).standard_normal((len(words), 20))
    path = tmp_path_factory.mktemp("vectors") / "demo.vec"
    lines = [f"{len(words)} 20"] + [w + " " + " ".join(f"{x:.5f}" for x in v) for w, v in zip(words, vectors)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def figure_suite(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    """A demo suite with `--data demo`'s 1500 MAG papers (300 test papers, ~16 per class: enough for DBSCAN's
    default min_samples, which the shared fixture's 80 test papers are not); smaller other tasks."""
    config = DemoConfig(mag_papers=1500, mesh_papers=300, ranking_queries=25, recomm_impressions=(300, 80, 80),
                        recomm_papers=600)
    return build_demo_suite(tmp_path_factory.mktemp("figure-demo") / "suite", config)


@pytest.fixture(scope="session")
def word_vectors(figure_suite: Suite, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """30-d LSA word vectors of the demo papers (TF-IDF, truncated SVD) as a .vec file: topical like trained
    fastText vectors, so `sif` separates the classes, but fitted in about a second."""
    tfidf = TfidfVectorizer(analyzer=analyzer())
    counts = tfidf.fit_transform([f"{p.title} {p.abstract}" for p in figure_suite.papers()])
    svd = TruncatedSVD(30, random_state=0).fit(counts)
    vectors = svd.components_.T * svd.singular_values_
    words = tfidf.get_feature_names_out()
    path = tmp_path_factory.mktemp("vectors") / "demo-lsa.vec"
    lines = [f"{len(words)} 30"] + [w + " " + " ".join(f"{x:.5f}" for x in v) for w, v in zip(words, vectors)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def baseline_runs(figure_suite: Suite, word_vectors: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """random and sif on the demo suite's mag, mesh and cite tasks: embeddings and results files in one folder."""
    out = tmp_path_factory.mktemp("runs")
    run_baseline("random", RunConfig(data=figure_suite, tasks=["mag", "mesh", "cite"], progress=False), out_dir=out)
    run_baseline("sif", RunConfig(data=figure_suite, tasks=["mag", "mesh", "cite"], progress=False), out_dir=out,
                 params={"vectors": str(word_vectors)})
    return out


@pytest.fixture(scope="session")
def add_intervals() -> Callable[..., Path]:
    """`add_intervals(source, dest, model=None)`: a copy of a results file with intervals as branch `compare`
    writes them (`ci` {metric: [low, high]} and per-item `items` in each task), optionally another model name;
    each interval is [value - 2.5, min(100, value + 1.5)]."""

    def copy(source: Path, dest: Path, model: str | None = None) -> Path:
        data = orjson.loads(source.read_bytes())
        for entry in data["tasks"].values():
            entry["ci"] = {metric: [value - 2.5, min(100.0, value + 1.5)]
                           for metric, value in entry["metrics"].items()}
            entry["items"] = {"ids": ["a"], "values": [1.0]}
        if model:
            data["model"] = model
        dest.write_bytes(orjson.dumps(data))
        return dest

    return copy


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


PAGE_VARIANTS = ("test_page_examples_run", "test_page_examples_run_with_slow_blocks",
                 "test_page_examples_run_with_long_blocks")
"""a docs page's runs, each executing every block the one before it does (and checking every output it checks)."""


def _covered_by_a_longer_variant(items: list[pytest.Item]) -> list[pytest.Item]:
    """The docs pages' runs whose page also runs in this session with more of its blocks (`PAGE_VARIANTS`)."""
    def variant(item: pytest.Item) -> int | None:
        name = getattr(item, "originalname", None)
        return PAGE_VARIANTS.index(name) if name in PAGE_VARIANTS else None

    longest: dict[str, int] = {}
    for item in items:
        if (rank := variant(item)) is not None:
            longest[item.callspec.id] = max(rank, longest.get(item.callspec.id, rank))
    return [item for item in items
            if (rank := variant(item)) is not None and rank < longest[item.callspec.id]]


THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist, each worker's BLAS and OpenMP (torch) threads get their share of the CPUs, the commands
    the tests start inheriting it: with every worker's libraries using every core, OpenMP's threads spin waiting
    for each other (two concurrent runs of the offline sent-bert test: 101 s at 2 threads each, 82 s at 1 on 2
    cores). A run in one process, and a variable the user set, are left as they are."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers < 2 or any(name in os.environ for name in THREAD_VARIABLES):
        return
    threads = max(1, len(os.sched_getaffinity(0)) // workers)
    for name in THREAD_VARIABLES:
        os.environ[name] = str(threads)
    from threadpoolctl import threadpool_limits

    threadpool_limits(threads)  # numpy's OpenBLAS read its variable when it was imported, before this
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)


@pytest.hookimpl(trylast=True)  # after `-m` and `-k` deselected theirs
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `gpu` skip, with the reason, where torch sees no CUDA device. Where slow tests are selected
    (CI runs the whole suite in one `pytest -n auto --dist worksteal`), they run first, so the longest start while
    the many short ones are left to balance the workers; a test that a selected slow one repeats is deselected."""
    gpu_tests = [item for item in items if "gpu" in item.keywords]
    if gpu_tests and not _cuda_available():
        for item in gpu_tests:
            item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is False)"))
    if repeated := _covered_by_a_longer_variant(items):
        config.hook.pytest_deselected(items=repeated)
        items[:] = [item for item in items if item not in repeated]
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: each kind keeps its order


def _not_installed(module: str) -> bool:
    from scidocs_eval.extras import available

    return not available(module)


def missing_requirement(text: str) -> str | None:
    """Why a failure (its report's text) is only something this environment lacks: an optional package that is not
    installed (an extra), or the `scidocs-eval` command not on PATH; None for any other failure."""
    from scidocs_eval.extras import EXTRA_OF

    extras = {**EXTRA_OF, **TEST_ONLY_MODULES}
    for module in (name.split(".")[0] for name in re.findall(r"No module named '([\w.]+)'", text)):
        if module in extras and _not_installed(module):
            return f"needs the [{extras[module]}] extra: {module} is not installed"
    for module, extra in re.findall(r"needs ([\w.]+), which is not installed \(the \[([\w-]+)\] extra\)", text):
        if _not_installed(module):
            return f"needs the [{extra}] extra: {module} is not installed"
    if re.search(r"scidocs-eval: (?:command )?not found|No such file or directory: 'scidocs-eval'", text) \
            and shutil.which("scidocs-eval") is None:
        return "needs the scidocs-eval command on PATH (pip install -e . in this environment)"
    return None


_EXTRAS_MET: list[tuple[str, str]] = []
"""(module, extra) of every MissingExtraError made in this session, in order, one the code handled too (a task left
in `RunResult.failed` for want of torch): a test failing after its run or a fixture of it met one is a skip."""


def _note_missing_extras() -> None:
    from scidocs_eval.extras import MissingExtraError

    made = MissingExtraError.__init__

    def noted(self: MissingExtraError, module: str, extra: str, needed_by: str, cause: ImportError) -> None:
        made(self, module, extra, needed_by, cause)
        _EXTRAS_MET.append((module.split(".")[0], extra))

    MissingExtraError.__init__ = noted  # type: ignore[method-assign]


_note_missing_extras()


def missing_extra_met(met: list[tuple[str, str]]) -> str | None:
    """The reason to skip for the first of `met` ((module, extra) pairs) whose module is not installed here."""
    return next((f"needs the [{extra}] extra: {module} is not installed" for module, extra in met
                 if _not_installed(module)), None)


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[object], request: pytest.FixtureRequest) -> Iterator[None]:
    """Note on the fixture the extras its setup met (a shared fixture is set up once, for many tests)."""
    start = len(_EXTRAS_MET)
    yield
    if met := _EXTRAS_MET[start:]:
        fixturedef.extras_met = [*getattr(fixturedef, "extras_met", []), *met]  # type: ignore[attr-defined]


def _extras_met_by(item: pytest.Item, start: int) -> list[tuple[str, str]]:
    """The extras `item`'s run (since `start`) and every fixture it uses met."""
    fixtures = getattr(item, "_fixtureinfo", None)
    definitions = [d for defs in (fixtures.name2fixturedefs.values() if fixtures else []) for d in defs]
    return [*_EXTRAS_MET[start:], *(pair for d in definitions for pair in getattr(d, "extras_met", []))]


_STARTED = pytest.StashKey[int]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    item.stash[_STARTED] = len(_EXTRAS_MET)
    yield


_MISSING: dict[int, tuple[BaseException, str]] = {}
"""id of a failure's exception -> (that exception, kept alive so the id is not reused; the missing requirement)."""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A test (or its fixture) that fails only because an extra or the installed command is missing here is a
    skip with that reason, not a failure or an error; every other failure stays one."""
    outcome = yield
    report = outcome.get_result()
    if not report.failed or call.excinfo is None:
        return
    printed = "".join(content for _, content in report.sections)  # a command's error line in captured stderr
    error = call.excinfo.value  # a failed shared fixture raises the same error again in each test using it
    known = _MISSING.get(id(error))
    reason = known[1] if known and known[0] is error else missing_requirement(f"{report.longrepr}{printed}") \
        or missing_extra_met(_extras_met_by(item, item.stash.get(_STARTED, len(_EXTRAS_MET))))
    if reason:
        _MISSING[id(error)] = (error, reason)
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {reason}")


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    """A test module that imports an optional package at its top is skipped with the reason where it is missing."""
    outcome = yield
    report = outcome.get_result()
    if report.failed and (reason := missing_requirement(str(report.longrepr))):
        report.outcome = "skipped"
        report.longrepr = (str(collector.path), 0, f"Skipped: {reason}")
