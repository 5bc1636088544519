"""The rankers of the recommendation task: a feed-forward network (PyTorch) and LambdaRank (LightGBM).

Both learn a score for (query, shown paper) from the eleven features of `scidocs_eval.evaluators.recomm_features`,
weight each impression by the inverse propensity of its clicked position, pick their few hyperparameters and their
stopping point on the val impressions by adj-nDCG, and give bit-identical scores for the same seed on CPU.

`MLPRanker` follows the official AllenNLP model (`train_similar_papers_model.json`): 11 → 50 ReLU, dropout 0.4,
→ 1 sigmoid; margin ranking loss (margin 0.1) on (clicked, other) pairs, at most 5 per impression; Adadelta
(rho 0.95), batches of 128, gradient values clipped to ±5. Where it differs: each pair's loss is divided by the
propensity of the *clicked* paper's position (the official code divides every pair by the last position's
propensity, since its position feature is 0), the epoch is chosen by val adj-nDCG rather than a fixed 5, and
the dropout is chosen on val from `dropout_grid`.
"""

from __future__ import annotations

import contextlib
import copy
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any, ClassVar

from scidocs_eval.evaluation.metrics import propensity_adjusted, rank_terms
from scidocs_eval.evaluators.recomm_features import COSINE, FEATURE_NAMES, ShownPapers
from scidocs_eval.extras import Requirement
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.params import AT_LEAST_ONE, POSITIVE, SEED, Constraints, Interval, ListOf
from scidocs_eval.registry import ENTRY_POINT_GROUPS, Registry

np = lazy_module("numpy", __name__)


def impression_metrics(shown: ShownPapers, scores: np.ndarray, adjusted: bool = True) -> dict[str, float]:
    """{"adj-NDCG", "adj-P@1"} (×100, 2 decimals) of `scores` (n_rows,) on the impressions of `shown`;
    `adjusted=False` weights every impression 1 and gives the plain {"NDCG", "P@1"}."""
    clicked, others = shown.split_scores(np.asarray(scores))
    if adjusted:
        return propensity_adjusted(clicked, others, shown.weights)
    plain = propensity_adjusted(clicked, others, np.ones(shown.n_impressions))
    return {"NDCG": plain["adj-NDCG"], "P@1": plain["adj-P@1"]}


def impression_terms(shown: ShownPapers, scores: np.ndarray) -> dict[str, np.ndarray]:
    """{"adj-NDCG", "adj-P@1"}: per impression of `shown`, the term `impression_metrics` averages."""
    return rank_terms(*shown.split_scores(np.asarray(scores)))


def _selection_score(shown: ShownPapers, scores: np.ndarray) -> float:
    """adj-nDCG ×100 with every digit: settings and epochs are compared unrounded."""
    clicked, others = shown.split_scores(np.asarray(scores))
    return propensity_adjusted(clicked, others, shown.weights, rounded=False)["adj-NDCG"]


@contextlib.contextmanager
def _reproducible_torch(seed: int, threads: int) -> Iterator[None]:
    """Seed torch's global RNG (restored afterwards), use deterministic kernels and `threads` threads."""
    torch = MLPRanker.requirement().import_module()

    previous_threads = torch.get_num_threads()
    previous_deterministic = torch.are_deterministic_algorithms_enabled()
    previous_warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(True)
        try:
            yield
        finally:
            torch.set_num_threads(previous_threads)
            torch.use_deterministic_algorithms(previous_deterministic, warn_only=previous_warn_only)


def _build_network(n_features: int, hidden: int, dropout: float, embedding_dim: int | None) -> Any:
    """The scorer: the MLP over the features; with `embedding_dim`, a query projection (identity at start)
    whose output replaces the cosine column."""
    torch = MLPRanker.requirement().import_module()
    nn = torch.nn

    class PairScorer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.projection = None
            if embedding_dim is not None:
                self.projection = nn.Linear(embedding_dim, embedding_dim)
                with torch.no_grad():
                    self.projection.weight.copy_(torch.eye(embedding_dim))
                    self.projection.bias.zero_()
            self.feedforward = nn.Sequential(nn.Linear(n_features, hidden), nn.ReLU(), nn.Dropout(dropout),
                                             nn.Linear(hidden, 1), nn.Sigmoid())

        def forward(self, features: torch.Tensor, projected_query: torch.Tensor | None = None,
                    candidate: torch.Tensor | None = None) -> torch.Tensor:
            """(n,) scores of (n, 11) features; with the projection, (n, d) projected queries and candidates."""
            if self.projection is not None:
                cosine = nn.functional.cosine_similarity(projected_query, candidate, dim=1)
                features = torch.cat([features[:, :COSINE], cosine[:, None], features[:, COSINE + 1:]], dim=1)
            return self.feedforward(features).squeeze(1)

    return PairScorer()


class Ranker(ABC):
    """A recommendation ranker: learns a score per (query, shown paper) from the features; `name` registers it."""

    name: ClassVar[str]
    package: ClassVar[str]
    """The optional package (see `scidocs_eval.extras`) it trains with; the `recomm` extra installs it."""

    @classmethod
    def requirement(cls) -> Requirement:
        return Requirement(cls.package, "recomm", f"recomm's {cls.name} ranker")
    parameter_constraints: ClassVar[Constraints] = {}
    """every constructor parameter's type and range (`scidocs_eval.params`)."""

    @abstractmethod
    def fit(self, train: ShownPapers, val: ShownPapers) -> Ranker:
        """Learn on `train`, choosing settings and the stopping point on `val` by adj-nDCG."""

    @abstractmethod
    def score(self, shown: ShownPapers) -> np.ndarray:
        """(n_shown,) float scores, higher ranks first."""


RANKERS: Registry[type[Ranker]] = Registry("ranker", Ranker, entry_points=ENTRY_POINT_GROUPS["ranker"])


class MLPRanker(Ranker):
    """Feed-forward pairwise ranker (see the module docstring).

    Args:
        hidden: width of the hidden layer.
        dropout_grid: dropout rates tried; the one with the best val adj-nDCG is kept.
        margin: margin of the ranking loss (score units; scores are sigmoid outputs in (0, 1)).
        batch_size: pairs per step.
        max_epochs: epochs at most per grid point.
        patience: stop after this many epochs without a better val adj-nDCG.
        query_projection: pass the query embedding through a learned d×d linear map (identity at start)
            before the cosine feature, as the official model's `project_query` option does.
        propensity_weights: divide each pair's loss by the propensity of the clicked position; False weights
            every pair alike (what the official training amounts to, up to a constant).
        max_pairs: (clicked, other) pairs per impression, the first ones in display order.
        threads: torch CPU threads while training and scoring (results are bit-identical for a given count).
        seed: seeds the weights' initialisation, the dropout masks and the batch order.
    """

    name = "mlp"
    package = "torch"
    parameter_constraints = {
        "hidden": [AT_LEAST_ONE], "dropout_grid": [ListOf(Interval(float, 0, 1, closed="left"), min_length=1)],
        "margin": [Interval(float, 0, None)], "batch_size": [AT_LEAST_ONE], "max_epochs": [AT_LEAST_ONE],
        "patience": [AT_LEAST_ONE], "query_projection": [bool], "propensity_weights": [bool],
        "max_pairs": [AT_LEAST_ONE], "threads": [AT_LEAST_ONE], "seed": [SEED],
    }

    def __init__(self, hidden: int = 50, dropout_grid: tuple[float, ...] = (0.0, 0.4), margin: float = 0.1,
                 batch_size: int = 128, max_epochs: int = 20, patience: int = 3, query_projection: bool = False,
                 propensity_weights: bool = True, max_pairs: int = 5, threads: int = 1, seed: int = 0):
        self.hidden = hidden
        self.dropout_grid = tuple(dropout_grid)
        self.margin = margin
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.patience = patience
        self.query_projection = query_projection
        self.propensity_weights = propensity_weights
        self.max_pairs = max_pairs
        self.threads = threads
        self.seed = seed

    def fit(self, train: ShownPapers, val: ShownPapers) -> MLPRanker:
        """Train one network per grid point with early stopping on `val`; keep the best.

        Sets `network_`, `best_params_` ({"dropout", "epochs"}), `val_adj_ndcg_` (best val adj-nDCG per
        dropout rate) and `n_pairs_`.
        """
        clicked, other, impression = train.training_pairs(self.max_pairs)
        weights = train.weights[impression] if self.propensity_weights else np.ones(len(impression))
        self.n_pairs_ = len(clicked)
        self.val_adj_ndcg_: dict[float, float] = {}
        best_score = -np.inf
        with _reproducible_torch(self.seed, self.threads):
            pairs = self._pair_tensors(train, clicked, other, weights)
            for dropout in self.dropout_grid:
                network, score, epochs = self._fit_one(pairs, val, dropout, train.vectors.shape[1])
                self.val_adj_ndcg_[dropout] = float(np.round(score, 2))
                if score > best_score:
                    best_score = score
                    self.network_ = network
                    self.best_params_ = {"dropout": dropout, "epochs": epochs}
        return self

    def _pair_tensors(self, train: ShownPapers, clicked: np.ndarray, other: np.ndarray,
                      weights: np.ndarray) -> dict[str, Any]:
        """The training pairs as tensors: features of both sides (n_pairs, 2, 11), weights, and with the
        projection the query and both candidates' embeddings (n_pairs, d) / (n_pairs, 2, d)."""
        torch = self.requirement().import_module()

        rows = np.stack([clicked, other], axis=1)
        pairs = {"features": torch.from_numpy(train.features[rows]),
                 "weights": torch.as_tensor(weights, dtype=torch.float32)}
        if self.query_projection:
            pairs["query"] = torch.from_numpy(train.vectors[train.query_index[clicked]])
            pairs["candidates"] = torch.from_numpy(train.vectors[train.candidate_index[rows]])
        return pairs

    def _fit_one(self, pairs: dict[str, Any], val: ShownPapers, dropout: float,
                 embedding_dim: int) -> tuple[Any, float, int]:
        """(network at its best epoch, its val adj-nDCG, that epoch)."""
        torch = self.requirement().import_module()

        torch.manual_seed(self.seed)
        network = _build_network(len(FEATURE_NAMES), self.hidden, dropout,
                                 embedding_dim if self.query_projection else None)
        optimizer = torch.optim.Adadelta(network.parameters(), rho=0.95)
        loss_function = torch.nn.MarginRankingLoss(margin=self.margin, reduction="none")
        order_generator = torch.Generator().manual_seed(self.seed)
        n_pairs = len(pairs["weights"])
        best = (copy.deepcopy(network.state_dict()), -np.inf, 0)
        for epoch in range(1, self.max_epochs + 1):
            network.train()
            for batch in torch.randperm(n_pairs, generator=order_generator).split(self.batch_size):
                features = pairs["features"][batch].reshape(-1, len(FEATURE_NAMES))
                if self.query_projection:
                    projected = network.projection(pairs["query"][batch]).repeat_interleave(2, dim=0)
                    scores = network(features, projected, pairs["candidates"][batch].reshape(len(features), -1))
                else:
                    scores = network(features)
                clicked_scores, other_scores = scores.view(-1, 2).unbind(1)
                losses = loss_function(clicked_scores, other_scores, torch.ones_like(clicked_scores))
                loss = (losses * pairs["weights"][batch]).mean()
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_value_(network.parameters(), 5.0)
                optimizer.step()
            score = _selection_score(val, self._score(network, val))
            if score > best[1]:
                best = (copy.deepcopy(network.state_dict()), score, epoch)
            elif epoch - best[2] >= self.patience:
                break
        network.load_state_dict(best[0])
        return network, best[1], best[2]

    def _score(self, network: Any, shown: ShownPapers) -> np.ndarray:
        """(n_rows,) scores in eval mode; each distinct query is projected once."""
        torch = self.requirement().import_module()

        network.eval()
        with torch.no_grad():
            features = torch.from_numpy(shown.features)
            if not self.query_projection:
                return network(features).numpy()
            queries, row_query = np.unique(shown.query_index, return_inverse=True)
            projected = network.projection(torch.from_numpy(shown.vectors[queries]))
            return network(features, projected[torch.from_numpy(row_query)],
                           torch.from_numpy(shown.vectors[shown.candidate_index])).numpy()

    def score(self, shown: ShownPapers) -> np.ndarray:
        """(n_rows,) float32 score of every shown paper (higher = recommended first)."""
        with _reproducible_torch(self.seed, self.threads):
            return self._score(self.network_, shown)


class LambdaRankRanker(Ranker):
    """LightGBM LambdaRank over the same features, each impression a query group weighted by the inverse
    propensity of its clicked position (labels: clicked 1, others 0).

    Args:
        num_leaves_grid: tree sizes tried; the one with the best val adj-nDCG is kept.
        learning_rate: shrinkage per boosting round.
        max_rounds: boosting rounds at most.
        patience: stop after this many rounds without a better val adj-nDCG (the best round is kept).
        subsample: fraction of rows drawn (afresh each round, by the seed) for each tree.
        min_child_samples: rows per leaf at least.
        propensity_weights: weight impressions by 1 / propensity of the clicked position (False: all 1).
        threads: LightGBM threads.
        seed: seeds the row sampling.
    """

    name = "lgbm"
    package = "lightgbm"
    parameter_constraints = {
        "num_leaves_grid": [ListOf(Interval(int, 2, None), min_length=1)], "learning_rate": [POSITIVE],
        "max_rounds": [AT_LEAST_ONE], "patience": [AT_LEAST_ONE],
        "subsample": [Interval(float, 0, 1, closed="right")], "min_child_samples": [AT_LEAST_ONE],
        "propensity_weights": [bool], "threads": [AT_LEAST_ONE], "seed": [SEED],
    }

    def __init__(self, num_leaves_grid: tuple[int, ...] = (7, 31), learning_rate: float = 0.05,
                 max_rounds: int = 300, patience: int = 30, subsample: float = 0.8, min_child_samples: int = 20,
                 propensity_weights: bool = True, threads: int = 1, seed: int = 0):
        self.num_leaves_grid = tuple(num_leaves_grid)
        self.learning_rate = learning_rate
        self.max_rounds = max_rounds
        self.patience = patience
        self.subsample = subsample
        self.min_child_samples = min_child_samples
        self.propensity_weights = propensity_weights
        self.threads = threads
        self.seed = seed

    def fit(self, train: ShownPapers, val: ShownPapers) -> LambdaRankRanker:
        """Boost one model per grid point with early stopping on `val`; keep the best.

        Sets `model_`, `best_params_` ({"num_leaves", "rounds"}) and `val_adj_ndcg_` (per num_leaves).
        """
        lightgbm = self.requirement().import_module()

        weights = train.weights[train.impression] if self.propensity_weights else None
        self.val_adj_ndcg_: dict[int, float] = {}

        def val_adj_ndcg(_labels: np.ndarray, scores: np.ndarray) -> tuple[str, float, bool]:
            return "adj_ndcg", _selection_score(val, scores), True

        best_score = -np.inf
        for num_leaves in self.num_leaves_grid:
            model = lightgbm.LGBMRanker(
                objective="lambdarank", metric="None", n_estimators=self.max_rounds, num_leaves=num_leaves,
                learning_rate=self.learning_rate, subsample=self.subsample, subsample_freq=1,
                min_child_samples=self.min_child_samples, random_state=self.seed, n_jobs=self.threads,
                deterministic=True, force_row_wise=True, verbose=-1)
            model.fit(train.features, train.clicked.astype(np.int32), group=train.group_sizes,
                      sample_weight=weights, eval_X=(val.features,), eval_y=(val.clicked.astype(np.int32),),
                      eval_group=[val.group_sizes], eval_metric=val_adj_ndcg,
                      callbacks=[lightgbm.early_stopping(self.patience, verbose=False)])
            score = model.best_score_["valid_0"]["adj_ndcg"]
            self.val_adj_ndcg_[num_leaves] = float(np.round(score, 2))
            if score > best_score:
                best_score = score
                self.model_ = model
                self.best_params_ = {"num_leaves": num_leaves, "rounds": int(model.best_iteration_)}
        return self

    def score(self, shown: ShownPapers) -> np.ndarray:
        """(n_rows,) float64 score of every shown paper (higher = recommended first), at the best round."""
        return self.model_.predict(shown.features, num_iteration=self.best_params_["rounds"])


RANKERS.register(MLPRanker)
RANKERS.register(LambdaRankRanker)
