"""SciRepEval's tasks: registry, data layout, exact solvers, agreement with SciRepEval's own evaluator, end to end."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import orjson
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.svm import LinearSVC, LinearSVR

from scidocs_eval.cli.main import main
from scidocs_eval.data.scirepeval import write_embeddings_jsonl
from scidocs_eval.errors import InputError, MissingEmbeddingsError, ScidocsEvalError
from scidocs_eval.evaluation.comparison import compare
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.evaluation.task import BENCHMARKS, TASKS, get_task, group_input_formats, task_names
from scidocs_eval.evaluators import scirepeval as models
from scidocs_eval.formats.embeddings import EmbeddingStore
from scidocs_eval.formats.scirepeval import read_labels
from scidocs_eval.run.model_object import evaluate_model
from scidocs_eval.tasks.scirepeval import TASK_TABLE, task_name, write_synthetic_scirepeval

REPO = Path(__file__).resolve().parents[1]
CHECKOUT = Path(os.environ.get("SCIREPEVAL_CHECKOUT", "/work/.mirror/allenai+scirepeval/repo"))
needs_checkout = pytest.mark.skipif(not CHECKOUT.exists(), reason="no allenai/scirepeval checkout (set "
                                    "SCIREPEVAL_CHECKOUT to a work tree or git dir of it)")
QUICK = ["scirepeval-drsm", "scirepeval-relish", "scirepeval-paper-reviewer-matching", "scirepeval-tweet-mentions",
         "scirepeval-biomimicry"]


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A synthetic SciRepEval copy and the float16-exact vectors of its papers; do not modify."""
    folder = tmp_path_factory.mktemp("scirepeval")
    vectors = write_synthetic_scirepeval(folder / "data", seed=1)
    return folder / "data", write_embeddings_jsonl(folder / "embeddings.jsonl", vectors)


def test_every_task_of_scirepevals_table_is_registered_under_its_benchmark() -> None:
    assert "scirepeval" in BENCHMARKS.names()
    names = task_names(benchmark="scirepeval")
    expected = len(TASK_TABLE) + sum(len(row[5]) for row in TASK_TABLE)
    assert len(names) == expected == 28
    assert all(TASKS[name].spec.benchmark == "scirepeval" for name in names)
    assert not set(names) & set(task_names(benchmark="scidocs"))
    # tasks reading one metadata config share its embeddings group: those papers are embedded once
    groups = {TASKS[name].spec.metadata_file: TASKS[name].spec.embedding_group for name in names}
    assert len(set(groups.values())) == len(groups) == len({row[2] for row in TASK_TABLE})


def _exact_sklearn(estimator: object, grid: dict, cv: object, x: np.ndarray, y: np.ndarray) -> GridSearchCV:
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return GridSearchCV(estimator, grid, cv=cv).fit(x, y)


@pytest.mark.parametrize("environment", models.ENVIRONMENTS)
def test_single_label_and_regression_solve_scirepevals_problem_exactly(copy: tuple[Path, Path],
                                                                       environment: str) -> None:
    """Ours equals scikit-learn's liblinear run to a tight tolerance on the same problem (intercept or not)."""
    data, embeddings = copy
    store = EmbeddingStore.load(embeddings, cache=False, progress=False)
    spec = models.ENVIRONMENT_SPECS[environment]
    intercept = spec.intercept
    for config, regression in (("drsm", False), ("tweet_mentions", True)):
        train = read_labels(data / f"scirepeval_test/{config}/train.jsonl", numeric=regression)
        test = read_labels(data / f"scirepeval_test/{config}/test.jsonl", numeric=regression)
        x_train, x_test = store.vectors(train.ids, dtype=np.float64), store.vectors(test.ids, dtype=np.float64)
        if regression:
            ours = models.regression(x_train, train.labels, x_test, environment)
            reference = _exact_sklearn(LinearSVR(epsilon=0.0, dual=True, fit_intercept=intercept, tol=1e-10,
                                                 max_iter=10**7), {"C": list(models.REGRESSION_GRID)}, KFold(3),
                                       x_train, train.labels)
            assert ours.chosen_c == [reference.best_params_["C"]]
            np.testing.assert_allclose(ours.predicted, reference.predict(x_test), atol=1e-5)
        else:
            ours = models.single_label(x_train, train.labels, x_test, environment, n_jobs=1)
            # GridSearchCV stratifies only for an estimator it sees as a classifier (not lightning's, today)
            reference = _exact_sklearn(LinearSVC(fit_intercept=intercept, tol=1e-12, max_iter=10**7),
                                       {"C": list(models.CLASSIFICATION_GRID)}, 3 if spec.classifier_tags else
                                       KFold(3), x_train, train.labels)
            assert ours.chosen_c == [reference.best_params_["C"]]
            assert np.array_equal(ours.predicted, reference.predict(x_test))


LIGHTNING = os.environ.get("SCIREPEVAL_LIGHTNING")
"""A folder holding a build of sklearn-contrib-lightning 0.6.2 (put on PYTHONPATH for SciRepEval's evaluator)."""


def _agreement(tmp_path: Path, tasks: list[str], iterations: int, lightning: str | None = None) -> dict:
    out = tmp_path / "agreement.json"
    environment = {**os.environ, "PYTHONPATH": lightning} if lightning else None
    subprocess.run([sys.executable, str(REPO / "bench" / "scirepeval_agreement.py"), "--checkout", str(CHECKOUT),
                    "--iterations", str(iterations), "--json", str(out), "--tasks", *tasks],
                   check=True, capture_output=True, cwd=tmp_path, env=environment)
    return json.loads(out.read_text())


@needs_checkout
def test_same_numbers_as_scirepevals_own_evaluator(tmp_path: Path) -> None:
    """SciRepEval's evaluator classes (sklearn environment) and ours on the same data and vectors: single-label
    (binary and macro F1), few-shot, reviewer matching (its proximity ranking), regression."""
    report = _agreement(tmp_path, ["Biomimicry", "DRSM", "Paper-Reviewer Matching", "Tweet Mentions"], 2)
    assert report["environment"] == "sklearn"
    assert {row["task"] for row in report["rows"]} >= {"Biomimicry", "Biomimicry 16 shot", "DRSM 24 shot",
                                                      "Paper-Reviewer Matching", "Tweet Mentions"}
    assert all(row["ours"] is not None for row in report["rows"])
    assert report["largest_gap"] <= 0.01


@needs_checkout
@pytest.mark.skipif(not LIGHTNING, reason="no sklearn-contrib-lightning build (set SCIREPEVAL_LIGHTNING to its folder)")
def test_same_multi_label_numbers_as_scirepevals_own_evaluator_in_its_lightning_environment(tmp_path: Path) -> None:
    """Fields of study and its few-shot variants, SciRepEval's evaluator with lightning (scikit-learn >= 1.6):
    ours solves that environment's problem (KFold folds, threshold 0.5) and gives its numbers."""
    report = _agreement(tmp_path, ["Fields of study"], 2, LIGHTNING)
    assert report["environment"] == "lightning"
    assert {row["task"] for row in report["rows"]} == {"Fields of study", "Fields of study 10 shot",
                                                      "Fields of study 5 shot"}
    assert all(row["ours_not_converged"] == 0 for row in report["rows"])
    assert report["largest_gap"] <= 0.01


@pytest.mark.slow
@needs_checkout
def test_same_numbers_as_scirepevals_own_evaluator_every_format(tmp_path: Path) -> None:
    """... and multi-label (with its few-shot draws), proximity, ad-hoc search and the remaining tasks."""
    report = _agreement(tmp_path, [row[0] for row in TASK_TABLE], 3)
    assert all(row["ours"] is not None for row in report["rows"])
    regression = {row[0] for row in TASK_TABLE if row[1] == "regression"}
    for row in report["rows"]:
        if row["task"] not in regression:
            assert abs(row["gap"]) <= 0.01, row
        elif not row["scirepeval_stalled"]:  # its liblinear stops at tol 1e-4, ours at the optimum (1e-8)
            assert abs(row["gap"]) <= 0.05, row
        # else: SciRepEval's SVR stopped before convergence (counted in the row): ours is the optimum, documented


def test_run_end_to_end_on_a_generated_copy(copy: tuple[Path, Path], tmp_path: Path) -> None:
    """Every SciRepEval task through `run` yields exactly its declared metrics (few-shot: 2 iterations)."""
    data, embeddings = copy
    output = tmp_path / "results.json"
    tasks = task_names(benchmark="scirepeval")
    few_shot = [arg for name in tasks if name.endswith("-shot") for arg in ("--task-param", f"{name}.iterations=2")]
    assert main(["run", "--embeddings", str(embeddings), "--data", str(data), "--tasks", ",".join(tasks),
                 *few_shot, "--output", str(output), "--quiet"]) == 0
    result = orjson.loads(output.read_bytes())
    assert list(result["tasks"]) == tasks
    for name, task in result["tasks"].items():
        assert tuple(task["metrics"]) == TASKS[name].spec.metrics
        assert all(isinstance(v, float) and -100 <= v <= 100 for v in task["metrics"].values())
    assert result["tasks"]["scirepeval-drsm-24-shot"]["details"]["iterations"] == 2
    assert result["synthetic"] is True
    for task in result["tasks"].values():
        assert set(task["ci"]) == set(task["metrics"])
    assert result["tasks"]["scirepeval-paper-reviewer-matching"]["metrics"].keys() == {
        "hard_P_5", "hard_P_10", "soft_P_5", "soft_P_10"}


def test_evaluate_model_embeds_each_config_once_and_compare_works(copy: tuple[Path, Path]) -> None:
    data, embeddings = copy
    records = [json.loads(line) for line in embeddings.read_text().splitlines()]
    vectors = {record["doc_id"]: record["embedding"] for record in records}
    texts_seen: list[str] = []

    def model(texts: list[str]) -> np.ndarray:
        texts_seen.extend(texts)
        return np.array([[len(t) % 7, t.count("x1"), t.count("x2"), 1.0] for t in texts])

    tasks = ["scirepeval-scidocs-mag", "scirepeval-scidocs-mesh", "scirepeval-scidocs-cite"]
    run = evaluate_model(model, RunConfig(data=data, tasks=tasks, progress=False))
    assert set(run.tasks) == set(tasks)
    papers = {paper_id for paper_id in vectors if paper_id.startswith(("scidocs_mag_mesh-", "scidocs_view_cite"))}
    assert len(texts_seen) == len(papers)  # MAG and MeSH share their config's papers: embedded once
    reference = evaluate(embeddings, RunConfig(data=data, tasks=tasks, progress=False, cache=False))
    comparison = compare(reference, run, resamples=200, progress=False)
    assert comparison is not None


def test_compare_covers_every_scirepeval_metric_kind(copy: tuple[Path, Path], tmp_path: Path) -> None:
    """Binary F1, macro F1, Kendall/Pearson, per-query means and few-shot iterations: intervals and paired tests."""
    data, embeddings = copy
    rng = np.random.default_rng(0)
    noisy = tmp_path / "noisy.jsonl"
    with noisy.open("w") as handle:
        for line in embeddings.read_text().splitlines():
            record = json.loads(line)
            vector = np.asarray(record["embedding"]) + rng.normal(scale=1.5, size=len(record["embedding"]))
            vector = vector.astype(np.float16).tolist()
            handle.write(json.dumps({"doc_id": record["doc_id"], "embedding": vector}) + "\n")
    tasks = ["scirepeval-biomimicry", "scirepeval-drsm-24-shot", "scirepeval-tweet-mentions", "scirepeval-relish"]
    params = {"scirepeval-drsm-24-shot": {"iterations": 4}}
    a = evaluate(embeddings, RunConfig(data=data, tasks=tasks, task_params=params, progress=False, cache=False))
    b = evaluate(noisy, RunConfig(data=data, tasks=tasks, task_params=params, progress=False, cache=False))
    comparison = compare(a, b, resamples=300, progress=False)
    compared = {(row.task, row.metric) for row in comparison.pairs[0].rows}
    assert compared == {(task, metric) for task in tasks for metric in a.tasks[task].metrics}
    assert all(0 < row.p_value <= 1 for row in comparison.pairs[0].rows)
    for result in (a, b):
        for task in tasks:
            assert set(result.tasks[task].ci) == set(result.tasks[task].metrics)


def test_missing_vectors_are_left_out_as_scirepeval_does_or_stop_the_run(copy: tuple[Path, Path],
                                                                         tmp_path: Path) -> None:
    data, embeddings = copy
    lines = embeddings.read_text().splitlines()
    dropped = [line for line in lines if json.loads(line)["doc_id"] not in ("drsm-0", "relish-q0")]
    partial = tmp_path / "partial.jsonl"
    partial.write_text("\n".join(dropped) + "\n")
    run = evaluate(partial, RunConfig(data=data, tasks=["scirepeval-drsm", "scirepeval-relish"], progress=False,
                                      cache=False))
    assert run.tasks["scirepeval-drsm"].coverage["train_papers_without_vector"] == 1
    assert run.tasks["scirepeval-relish"].coverage["queries_without_vector"] == 1
    with pytest.raises(MissingEmbeddingsError, match="drsm-0"):
        evaluate(partial, RunConfig(data=data, tasks=["scirepeval-drsm"], missing="error", progress=False, cache=False))
    records = [json.loads(line) for line in lines]
    for record in records:
        if record["doc_id"] == "relish-q1":
            record["embedding"][0] = 1e6
    huge = tmp_path / "huge.jsonl"
    huge.write_text("".join(json.dumps(record) + "\n" for record in records))
    unrelated = tmp_path / "unrelated.jsonl"
    unrelated.write_text('{"doc_id": "someone-else", "embedding": [1, 2]}\n')
    for task in ("scirepeval-drsm", "scirepeval-relish", "scirepeval-paper-reviewer-matching"):
        with pytest.raises(ScidocsEvalError, match="wrong embeddings file|wrong file"):
            evaluate(unrelated, RunConfig(data=data, tasks=[task], progress=False, cache=False))
    with pytest.raises(ScidocsEvalError, match="relish-q1.*float16"):
        evaluate(huge, RunConfig(data=data, tasks=["scirepeval-relish"], progress=False, cache=False))


def test_bad_files_and_parameters_are_errors_naming_where(copy: tuple[Path, Path], tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    data, embeddings = copy
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"paper_id": "a", "label": 1}\n{"paper_id": "b", "label": "x"}\n')
    with pytest.raises(InputError, match=r"labels.jsonl:2: field 'label' is string 'x', expected an integer"):
        read_labels(labels)
    labels.write_text('{"paper_id": "a", "label": 1}\nnot json\n')
    with pytest.raises(InputError, match=r"labels.jsonl:2: malformed JSON"):
        read_labels(labels)
    with pytest.raises(ScidocsEvalError, match="environment"):
        get_task("scirepeval-drsm", environment="liblinear")
    with pytest.raises(ScidocsEvalError, match="iterations"):
        get_task("scirepeval-drsm-24-shot", iterations=0)
    assert main(["run", "--embeddings", str(embeddings), "--data", str(data), "--tasks", "scirepeval-drsm",
                 "--task-param", "scirepeval-drsm.environment=liblinear", "--quiet"]) == 2
    assert "scidocs-eval: error:" in capsys.readouterr().err


def test_generator_refuses_a_folder_with_files(tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("keep me")
    with pytest.raises(ScidocsEvalError, match="not an empty folder"):
        write_synthetic_scirepeval(tmp_path)
    assert (tmp_path / "mine.txt").read_text() == "keep me"


def test_data_verify_checks_every_scirepeval_file_once(copy: tuple[Path, Path], tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    data, _ = copy
    assert main(["data", "verify", str(data)]) == 0
    out = capsys.readouterr().out
    assert "0 error(s), 4 warning(s)" in out and "scirepeval-paper-reviewer-matching" in out, out
    # the synthetic copy's 130 training papers make fewer few-shot draws than SciRepEval's iterations
    assert out.count("WARNING [fewer-iterations]") == 4
    broken = tmp_path / "broken"
    shutil.copytree(data, broken)
    train = broken / "scirepeval_test" / "drsm" / "train.jsonl"
    lines = train.read_text().splitlines()
    lines[2] = '{"paper_id": "x", "label": 1.5}'
    train.write_text("\n".join(lines) + "\n")
    assert main(["data", "verify", str(broken)]) == 1
    out = capsys.readouterr().out
    assert out.count("drsm/train.jsonl:3: field 'label' is number 1.5, expected an integer") == 1
    usable = out.split("tasks with all their files:")[1]
    assert "scirepeval-drsm" not in usable and "scirepeval-relish" in usable


def test_each_scirepeval_group_is_embedded_for_its_tasks_format_and_search_queries_apart() -> None:
    """SciRepEval's task ids: [CLF] classification, [RGN] regression, [PRX] proximity and search candidates,
    [QRY] search queries (a group of their own)."""
    expected = {"classification": "classification", "multi_label": "classification", "regression": "regression",
                "proximity": "proximity", "reviewer_matching": "proximity", "adhoc_search": "proximity"}
    formats = group_input_formats()
    for title, kind, *_ in TASK_TABLE:
        spec = TASKS[task_name(title)].spec
        assert formats[spec.embedding_group] == spec.input_format == expected[kind]
        assert (spec.query_group is not None) == (kind == "adhoc_search")
        if spec.query_group:
            assert formats[spec.query_group] == "adhoc_query"
    assert {formats[g] for g in ("cls", "user-citation", "recomm")} == {"classification", "proximity"}


@pytest.mark.parametrize("statistic", ["f1_binary", "f1_macro_multilabel", "kendalltau", "pearsonr"])
def test_recomputed_statistics_equal_the_printed_metric(statistic: str) -> None:
    from scipy.stats import kendalltau, pearsonr
    from sklearn.metrics import f1_score

    from scidocs_eval.statistics.significance import StatisticItems

    rng = np.random.default_rng(3)
    shape = (60, 4) if statistic == "f1_macro_multilabel" else (60,)
    if statistic.startswith("f1"):
        gold, mine, theirs = (rng.integers(0, 2, size=shape) for _ in range(3))
        expected = f1_score(gold, mine, average="macro" if gold.ndim == 2 else "binary")
    else:
        gold = rng.normal(size=60)
        mine, theirs = gold + rng.normal(size=60), gold + 2 * rng.normal(size=60)
        expected = (kendalltau if statistic == "kendalltau" else pearsonr)(gold, mine)[0]
    ids = [str(i) for i in range(60)]
    a, b = StatisticItems(ids, statistic, gold, mine), StatisticItems(ids, statistic, gold, theirs)
    assert a.value() == models.rounded(expected)
    low, high = a.interval(resamples=300)
    assert low <= a.value() <= high
    assert 0 < a.paired_p_value(b, resamples=300) <= 1
    low, high = a.paired_interval(b, resamples=300)
    assert low <= b.value() - a.value() <= high


def test_download_writes_the_hub_configs_in_the_local_layout(copy: tuple[Path, Path], tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The hub is answered from the generated copy through `datasets` itself (no network here): every split of
    every config the named tasks need comes back in the same layout, row for row."""
    datasets = pytest.importorskip("datasets")
    from scidocs_eval.data.scirepeval import download_scirepeval
    from scidocs_eval.formats.scirepeval import META_DATASET

    data, _ = copy
    original = datasets.load_dataset

    def from_copy(path: str, name: str | None = None, split: str | None = None, **kwargs: object) -> object:
        folder = data / ("scirepeval" if path == META_DATASET else "scirepeval_test") / str(name)
        loaded = original("json", data_files={p.stem: str(p) for p in sorted(folder.glob("*.jsonl"))},
                          cache_dir=str(tmp_path / "hf-cache"))
        return loaded[split] if split else loaded

    monkeypatch.setattr(datasets, "load_dataset", from_copy)
    titles = ["Paper-Reviewer Matching", "SciDocs MAG", "SciDocs MeSH"]
    target = download_scirepeval(tmp_path / "copy", TASK_TABLE, titles)
    written = sorted(p.relative_to(target).as_posix() for p in target.rglob("*.jsonl"))
    assert written == sorted(f"{top}/{config}/{p.name}" for top in ("scirepeval", "scirepeval_test")
                             for config in ("paper_reviewer_matching", "reviewers", "scidocs_mag_mesh",
                                            "scidocs_mag", "scidocs_mesh")
                             for p in (data / top / config).glob("*.jsonl"))
    for relative in written:
        assert [json.loads(line) for line in (target / relative).read_text().splitlines()] == \
            [json.loads(line) for line in (data / relative).read_text().splitlines()]
    with pytest.raises(ScidocsEvalError, match="not an empty folder"):
        download_scirepeval(target, TASK_TABLE, titles)


def test_kendall_on_resamples_equals_scipy_on_the_repeated_items() -> None:
    from scipy.stats import kendalltau

    from scidocs_eval.statistics.significance import STATISTICS

    rng = np.random.default_rng(1)
    gold = np.round(rng.normal(size=40), 1)  # rounding makes ties, which τ-b corrects for
    predicted = np.round(gold + rng.normal(size=40), 1)
    counts = rng.multinomial(40, np.full(40, 1 / 40), size=50).astype(np.float64)
    fast = STATISTICS["kendalltau"](gold, np.broadcast_to(predicted, counts.shape), counts)
    slow = [kendalltau(np.repeat(gold, c.astype(int)), np.repeat(predicted, c.astype(int)))[0] for c in counts]
    np.testing.assert_allclose(fast, slow, atol=1e-12)
