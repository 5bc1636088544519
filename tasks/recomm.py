"""Recommendation: a ranker trained on clickthrough data, scored by propensity-adjusted nDCG and P@1 (SPEC §5).

The embedding enters as one of eleven features (`scidocs_eval.evaluators.recomm_features`). A ranker
(`scidocs_eval.evaluators.recomm_rankers`: the feed-forward network by default, LightGBM LambdaRank with
ranker="lgbm") is trained on recomm/train.csv, tuned and stopped on recomm/val.csv by adj-nDCG, and scored on the split
asked for. This repeats for `seeds` seeds; the metrics are the mean over seeds and `details` keeps each seed's
numbers and the standard deviation. The same seed gives the same numbers, bit for bit, on CPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scidocs_eval.errors import InputError, ScidocsEvalError
from scidocs_eval.evaluation.integrity import DataShape, ImpressionsSplit
from scidocs_eval.evaluation.task import (
    MissingPolicy,
    Task,
    TaskData,
    TaskResult,
    TaskSpec,
    check_missing,
    register_task,
)
from scidocs_eval.evaluators.recomm_features import RecommFeaturizer, ShownPapers
from scidocs_eval.evaluators.recomm_rankers import RANKERS, impression_metrics, impression_terms
from scidocs_eval.extras import Requirement
from scidocs_eval.formats.embeddings import EmbeddingStore
from scidocs_eval.formats.suite import METADATA_FILES, Impression, Suite
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.params import AT_LEAST_ONE, SEED, InstanceOf, Options
from scidocs_eval.progress import progress_bar
from scidocs_eval.registry import check_params

np = lazy_module("numpy", __name__)

METRICS = ("adj-NDCG", "adj-P@1")


@dataclass(frozen=True)
class ImpressionSplits(TaskData):
    """The impressions of train, val and the scored split ({split: rows}), each bad row left out and kept in
    `problems` ({split: its InputErrors}) for the findings; `impressions` refuses a split that has one."""

    rows: dict[str, list[Impression]]
    problems: dict[str, list[InputError]]
    files: dict[str, str]

    def impressions(self, split: str) -> list[Impression]:
        """The rows of `split`: the first bad row, or none at all, is an error naming the file."""
        if self.problems[split]:
            raise self.problems[split][0]
        if not self.rows[split]:
            raise InputError(self.files[split], "no rows after the header")
        return self.rows[split]


@register_task
class RecommTask(Task[ImpressionSplits]):
    """The recommendation task.

    Args:
        seeds: number of rankers trained (seeds `seed`, `seed`+1, ...); the metrics are their mean.
        seed: the first seed.
        ranker: "mlp" (feed-forward network, margin ranking loss) or "lgbm" (LightGBM LambdaRank).
        query_projection: (mlp only) learn a linear map on the query embedding before the cosine feature.
        propensity_weights: weight training impressions by 1 / propensity of the clicked position.
        threads: CPU threads per ranker.
        ranker_params: further constructor parameters of the ranker class (see
            `scidocs_eval.evaluators.recomm_rankers`).
    """

    spec = TaskSpec("recomm", "recommendations: clicks on similar-paper lists, propensity-adjusted", "recomm",
                    METRICS, "adj-NDCG", "recomm", METADATA_FILES["recomm"],
                    {"adj-NDCG": "recomm_ndcg", "adj-P@1": "recomm_p1"})

    parameter_constraints = {
        "seeds": [AT_LEAST_ONE], "seed": [SEED], "ranker": [Options(RANKERS.names())], "query_projection": [bool],
        "propensity_weights": [bool], "threads": [AT_LEAST_ONE],
        "ranker_params": [InstanceOf(dict), None],
    }

    def __init__(self, seeds: int = 5, seed: int = 0, ranker: str = "mlp", query_projection: bool = False,
                 propensity_weights: bool = True, threads: int = 1, ranker_params: dict[str, Any] | None = None):
        if query_projection and ranker != "mlp":
            raise ScidocsEvalError("recomm: query_projection needs ranker='mlp' (a tree model has no embedding "
                                   "input to project)")
        check_params(RANKERS[ranker], ranker_params or {}, f"task 'recomm' ranker_params of ranker {ranker!r}")
        self.seeds = int(seeds)
        self.seed = int(seed)
        self.ranker = ranker
        self.query_projection = bool(query_projection)
        self.propensity_weights = bool(propensity_weights)
        self.threads = int(threads)
        self.ranker_params = dict(ranker_params or {})

    def requirements(self) -> list[Requirement]:
        return [RANKERS[self.ranker].requirement()]

    def required_files(self, split: str) -> list[str]:
        splits = dict.fromkeys(("train", "val", split))
        return [f"recomm/{s}.csv" for s in splits] + ["recomm/propensity_scores.json", METADATA_FILES["recomm"]]

    def read(self, suite: Suite, split: str, texts: bool = True) -> ImpressionSplits:
        rows, problems, files = {}, {}, {}
        for role in dict.fromkeys(("train", "val", split)):
            rows[role], problems[role] = suite.impression_rows(role)  # train and val: read once for every split
            files[role] = str(suite.path(f"recomm/{role}.csv"))
        return ImpressionSplits(split, texts, rows, problems, files)

    def paper_ids(self, data: ImpressionSplits) -> list[str]:
        return [paper for s in data.rows for impression in data.impressions(s)
                for paper in (impression.query_id, *impression.shown)]

    def data_shapes(self, data: ImpressionSplits) -> list[DataShape]:
        """The impressions of train and val (what the ranker learns from and is tuned on) and of its split (scored),
        every bad row of each, checked against the propensities and the metadata `evaluate` reads."""
        suite, split = data.suite, data.split
        propensities = "recomm/propensity_scores.json"
        positions = len(suite.propensities)
        metadata = METADATA_FILES["recomm"]
        known = suite.metadata("recomm").keys()
        return [ImpressionsSplit(self.name, f"recomm/{role}.csv", impressions, propensities, positions,
                                 "scored" if role == split else role,
                                 [(problem.line or 0, _reason(problem)) for problem in data.problems[role]],
                                 known, metadata)
                for role, impressions in data.rows.items()]

    def make_ranker(self, seed: int) -> Any:
        """An unfitted ranker of the configured kind for `seed`."""
        params: dict[str, Any] = {"propensity_weights": self.propensity_weights, "threads": self.threads,
                                  "seed": seed, **self.ranker_params}
        if self.ranker == "mlp":
            params.setdefault("query_projection", self.query_projection)
        return RANKERS[self.ranker](**params)

    def shown_papers(self, data: ImpressionSplits, embeddings: EmbeddingStore, missing: MissingPolicy = "official"
                     ) -> tuple[dict[str, ShownPapers], dict[str, int]]:
        """The `ShownPapers` of train, val and the scored split, and the coverage counts."""
        suite = data.suite
        splits = list(data.rows)
        impressions = {s: data.impressions(s) for s in splits}
        queries = [i.query_id for s in splits for i in impressions[s]]
        candidates = [p for s in splits for i in impressions[s] for p in i.shown]
        for role, ids in (("queries", queries), ("candidates", candidates)):
            distinct = list(dict.fromkeys(ids))
            check_missing(self.name, role, distinct, embeddings.status(distinct), missing)
        featurizer = RecommFeaturizer(suite.metadata("recomm"), embeddings, queries + candidates,
                                      str(suite.path(METADATA_FILES["recomm"])))
        shown = {s: featurizer.transform(impressions[s], suite.propensities, str(suite.path(f"recomm/{s}.csv")))
                 for s in splits}
        coverage = {f"impressions_{s}": len(impressions[s]) for s in splits}
        coverage["shown_papers"] = len(candidates)
        coverage["clicked_repeated_in_shown"] = sum(i.shown.count(i.clicked_id) - 1 for s in splits
                                                    for i in impressions[s])
        coverage.update(featurizer.coverage(queries, candidates))
        return shown, coverage

    def evaluate(self, data: ImpressionSplits, embeddings: EmbeddingStore,
                 missing: MissingPolicy = "official") -> TaskResult:
        split = data.split
        shown, coverage = self.shown_papers(data, embeddings, missing)
        runs, terms = [], []
        with progress_bar(total=self.seeds, desc=f"recomm ({self.ranker})", unit="seed") as bar:
            for seed in range(self.seed, self.seed + self.seeds):
                ranker = self.make_ranker(seed).fit(shown["train"], shown["val"])
                scores = ranker.score(shown[split])
                terms.append(impression_terms(shown[split], scores))
                runs.append({"seed": seed, **impression_metrics(shown[split], scores),
                             "unadjusted": impression_metrics(shown[split], scores, adjusted=False),
                             "val_adj_ndcg": {str(k): v for k, v in ranker.val_adj_ndcg_.items()},
                             "chosen": ranker.best_params_})
                bar.update(1)
        means, stds = summarise(runs)
        details = {"ranker": self.ranker, "seeds": runs, "std": stds,
                   "unadjusted": summarise([r["unadjusted"] for r in runs], ("NDCG", "P@1"))[0]}
        items = {"unit": "impression", "ids": [i.item_id for i in data.impressions(split)],
                 "weight": shown[split].weights.tolist(), "seeds": [r["seed"] for r in runs],
                 **{m: [t[m].tolist() for t in terms] for m in METRICS}}
        return TaskResult(self.name, means, coverage, details, items=items)


def _reason(problem: InputError) -> str:
    """An InputError's message without its "file:line: " prefix."""
    return str(problem).removeprefix(f"{problem.path}:{problem.line}: ")


def summarise(runs: list[dict[str, Any]], metrics: tuple[str, ...] = METRICS
              ) -> tuple[dict[str, float], dict[str, float]]:
    """Mean and standard deviation (ddof 1; 0 for one run) of each metric over runs, rounded to 2 decimals."""
    values = {m: np.array([r[m] for r in runs], dtype=np.float64) for m in metrics}
    means = {m: float(np.round(v.mean(), 2)) for m, v in values.items()}
    stds = {m: float(np.round(v.std(ddof=1), 2)) if len(v) > 1 else 0.0 for m, v in values.items()}
    return means, stds
