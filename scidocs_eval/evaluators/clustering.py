"""Clustering scored as MTEB 2.x scores its clustering tasks (`AbsTaskClustering`, the "fast" protocol).

MTEB embeds a random share of the documents (`max_fraction_of_documents_to_embed`, 4%: `random.Random(seed)
.sample`), then, level by level of the gold labels (one level, or the levels of a hierarchical label), runs
`n_experiments` experiments: each draws `cluster_size` documents with replacement (the same `random.Random`,
`choices`) from those with a label at that level and clusters them with MiniBatchKMeans (k = the number of distinct
labels at the level, k-means++, one init, batch 512, `random_state=seed`). A document without a label at a level
is in that level's clustering under the label "-1" when labels are text (MTEB's filter compares them with the
number -1), and left out when labels are numbers. Each experiment's V-measure and adjusted
mutual information are kept; the scores are their means (and population standard deviations) over every
experiment of every level.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from scidocs_eval.lazy_modules import lazy_module

np = lazy_module("numpy", __name__)

SEED = 42
"""MTEB's default task seed (`AbsTask(seed=42)`)."""
EMBED_FRACTION = 0.04
"""`AbsTaskClustering.max_fraction_of_documents_to_embed`."""
CLUSTER_SIZE = 16_384
"""`AbsTaskClustering.max_documents_per_cluster`: documents drawn (with replacement) per experiment."""
N_EXPERIMENTS = 10
"""`AbsTaskClustering.n_clusters`: experiments per level."""
KMEANS_BATCH_SIZE = 512
"""`AbsTaskClustering.k_mean_batch_size`."""
CLUSTERING_METRICS = ("v_measure", "ami")


@dataclass(frozen=True)
class ClusteringScores:
    """Per level ("Level 0", ...) the value of each experiment, per metric (fractions, not ×100)."""

    by_level: dict[str, dict[str, list[float]]]

    def flat(self, metric: str) -> list[float]:
        """Every experiment's value of `metric`, level after level (what MTEB's mean and std are over)."""
        return [value for level in self.by_level[metric].values() for value in level]

    def mteb_scores(self) -> dict[str, object]:
        """MTEB's scores dict: `v_measures` and `ami_scores` per level, each metric's mean and `_std`."""
        scores: dict[str, object] = {}
        for metric in CLUSTERING_METRICS:
            flat = self.flat(metric)
            scores["v_measures" if metric == "v_measure" else f"{metric}_scores"] = \
                {level: list(values) for level, values in self.by_level[metric].items()}
            scores[metric] = float(np.mean(flat))
            scores[f"{metric}_std"] = float(np.std(flat))
        return scores


def embedded_sample(n_documents: int, rng: random.Random, fraction: float | None = EMBED_FRACTION) -> list[int]:
    """The indices of the documents MTEB embeds, in its order (all of them when `fraction` is None)."""
    if fraction is None:
        return list(range(n_documents))
    return rng.sample(range(n_documents), k=min(n_documents, int(fraction * n_documents)))


def sample_stage(n_documents: int, fraction: float | None = EMBED_FRACTION) -> str:
    """What `embedded_sample` of `n_documents` is, in words, for the data's errors and warnings."""
    if fraction is None:
        return f"the {n_documents} documents"
    drawn = min(n_documents, int(fraction * n_documents))
    return f"MTEB's {fraction:.0%} sample of {n_documents} documents ({drawn} drawn: int({fraction} × {n_documents}))"


def hf_test_split(n_rows: int, test_size: int, seed: int = SEED) -> list[int]:
    """The rows `datasets.Dataset.train_test_split(test_size=test_size, seed=seed)["test"]` holds, in its order."""
    if not 0 < test_size < n_rows:
        raise ValueError(f"a test split of {test_size} rows needs more than {test_size} rows, not {n_rows}")
    return np.random.default_rng(seed).permutation(n_rows)[:test_size].tolist()


def level_count(labels: Sequence[Sequence[str]], max_depth: int | None = None) -> int:
    """The levels MTEB scores: the deepest label's, or `max_depth` if fewer."""
    deepest = max(map(len, labels))
    return deepest if max_depth is None else min(max_depth, deepest)


def cluster_experiments(vectors: np.ndarray, labels: Sequence[Sequence[str]], rng: random.Random, *,
                        seed: int = SEED, n_experiments: int = N_EXPERIMENTS, cluster_size: int = CLUSTER_SIZE,
                        batch_size: int = KMEANS_BATCH_SIZE, max_depth: int | None = None) -> ClusteringScores:
    """Score `vectors` (row i has gold labels `labels[i]`, outermost level first) as MTEB's clustering does;
    `rng` continues the generator that drew the embedded sample (MTEB's `rng_state`)."""
    from sklearn.cluster import MiniBatchKMeans
    from sklearn.metrics.cluster import adjusted_mutual_info_score, v_measure_score
    from threadpoolctl import threadpool_limits

    functions = {"v_measure": v_measure_score, "ami": adjusted_mutual_info_score}
    by_level: dict[str, dict[str, list[float]]] = {metric: {} for metric in functions}
    for level in range(level_count(labels, max_depth)):
        gold = np.array([label[level] if len(label) > level else -1 for label in labels])
        # MTEB drops the documents without a label at this level by comparing each with -1: with text labels the
        # array is of strings, "-1" != -1, and they stay in, as one more cluster "-1"; kept, to give its numbers.
        kept = np.array([value != -1 for value in gold])
        gold, level_vectors = gold[kept], vectors[kept]
        model = MiniBatchKMeans(n_clusters=np.unique(gold).size, batch_size=batch_size, init="k-means++", n_init=1,
                                random_state=seed)
        for metric in functions:
            by_level[metric][f"Level {level}"] = []
        for _ in range(n_experiments):
            drawn = rng.choices(range(len(gold)), k=cluster_size)
            # one thread: the same assignments, and on batches of 512 OpenMP's threads cost far more than they
            # give (measured 80 times slower on 2 busy cores)
            with threadpool_limits(1):
                assigned = model.fit_predict(level_vectors[drawn])
            for metric, function in functions.items():
                by_level[metric][f"Level {level}"].append(float(function(gold[drawn], assigned)))
    return ClusteringScores(by_level)
