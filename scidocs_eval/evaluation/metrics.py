"""The metrics, exactly as the official SciDocs code computes them.

The ranking and retrieval measures are trec_eval's (as pytrec_eval, which SciDocs and MTEB call, computes them)
and MTEB's MRR, computed in numpy over each query's grades in ranked order (`RankedGrades`), with trec_eval's sums
in trec_eval's order: equal to pytrec_eval's bit for bit (tests/test_metrics_numpy.py), and a retrieval task scores
its search's top-k arrays without a run of dicts (`mteb_top_k_measures`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.lazy_modules import lazy_module

np = lazy_module("numpy", __name__)


def percent(value: float) -> float:
    """×100 and rounded to 2 decimals, as the official code prints every number (numpy rounding)."""
    return float(np.round(100 * value, 2))


def macro_f1(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Macro-averaged F1 × 100, rounded to 2 decimals."""
    return percent(f1_score(y_true, y_pred, "macro"))


def f1_score(gold: np.ndarray, predicted: np.ndarray, average: str) -> float:
    """scikit-learn's `f1_score(gold, predicted, average=average)` ("binary" or "macro"), in its own arithmetic
    where `f1_of_indicators` can decide, so that a run need not import scikit-learn (about two seconds) or pay its
    input checks; scikit-learn itself elsewhere (its warnings, zero division, other labels)."""
    gold, predicted = np.asarray(gold), np.asarray(predicted)
    direct = f1_of_indicators(gold, predicted, average)
    if direct is None and average == "macro" and (indicators := label_indicators(gold, predicted)) is not None:
        direct = f1_of_indicators(*indicators, average)
    if direct is None:
        from sklearn.metrics import f1_score as scikit_learns

        return float(scikit_learns(gold, predicted, average=average))
    return direct


def label_indicators(gold: np.ndarray, predicted: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(n, classes) 0/1 indicators of one class a row, over the classes of either (sorted, as scikit-learn's
    `unique_labels`): its multi-class F1 is the multi-label F1 of these. None for other than integer or string
    labels of one dimension."""
    if gold.ndim != 1 or gold.shape != predicted.shape or gold.dtype.kind not in "iuU" \
            or predicted.dtype.kind != gold.dtype.kind:
        return None
    classes = np.unique(np.concatenate([gold, predicted]))
    return ((gold[:, None] == classes).astype(np.int64), (predicted[:, None] == classes).astype(np.int64))


def f1_of_indicators(gold: np.ndarray, predicted: np.ndarray, average: str) -> float | None:
    """scikit-learn's F1 of 0/1 indicators (binary: one column; macro: the mean over the columns of a multi-label
    matrix of at least two columns) in its own arithmetic, 2·tp / (true + predicted) per column then numpy's
    nanmean, without its input checks (most of the few-shot tasks' time); None where scikit-learn must decide
    (other labels, or a column with neither true nor predicted positives, its zero-division case)."""
    if (gold.ndim, average) not in ((1, "binary"), (2, "macro")) or gold.shape != predicted.shape or not gold.size:
        return None
    if gold.ndim == 2 and gold.shape[1] < 2:  # scikit-learn reads one column as a vector of classes
        return None
    if not (np.isin(gold, (0, 1)).all() and np.isin(predicted, (0, 1)).all()):
        return None
    gold, predicted = gold.reshape(len(gold), -1).astype(bool), predicted.reshape(len(predicted), -1).astype(bool)
    true_positives = np.sum(gold & predicted, axis=0).astype(np.float64)
    denominator = 1.0 * gold.sum(axis=0).astype(np.float64) + predicted.sum(axis=0).astype(np.float64)
    if not denominator.all():
        return None
    return float(np.nanmean((1 + 1.0) * true_positives / denominator))


RELEVANCE_LEVEL = 1
"""pytrec_eval's (trec_eval's) default relevance level: a document is relevant when its grade is at least 1."""
_FULL_DEPTH = ("map", "ndcg")
_AT_CUTOFF = ("ndcg_cut", "map_cut", "recall", "P", "success")
"""The trec_eval measures computed here over arrays (full depth; at a cut-off: `ndcg_cut_10`, `P_5`, ...); any
other measure is pytrec_eval's."""


@dataclass(frozen=True)
class RankedGrades:
    """What trec_eval's measures read of each query's ranking (one row per query).

    Attributes:
        grades: (n_queries, depth) float64: the grade of the document at each rank, in trec_eval's order (score
            descending, ties by document id descending); 0 for an unjudged document, a negative grade, and past
            the end of a shorter ranking.
        ideal: (n_queries, n_ideal) float64: the query's positive grades, largest first, 0-padded.
        relevant: (n_queries,) int64: the query's judged documents with a grade of at least `RELEVANCE_LEVEL`.
    """

    grades: np.ndarray
    ideal: np.ndarray
    relevant: np.ndarray


def _judged(relevance: Mapping[str, Mapping[str, int]], query_ids: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(ideal, relevant) of `RankedGrades` for `query_ids`."""
    positive = [sorted((g for g in relevance.get(q, {}).values() if g > 0), reverse=True) for q in query_ids]
    ideal = np.zeros((len(query_ids), max(map(len, positive), default=0)))
    for row, grades in enumerate(positive):
        ideal[row, :len(grades)] = grades
    relevant = np.array([sum(1 for g in relevance.get(q, {}).values() if g >= RELEVANCE_LEVEL) for q in query_ids],
                        dtype=np.int64)
    return ideal, relevant


def _check_scores(scores: Iterable[float], query_id: str) -> None:
    if any(math.isnan(score) for score in scores):
        raise ScidocsEvalError(f"query {query_id!r}: a document scores NaN, which ranks nowhere (trec_eval's order "
                               "of it is undefined); check the embeddings for NaN or all-zero vectors")


def ranked_grades(relevance: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]],
                  query_ids: Sequence[str]) -> RankedGrades:
    """`RankedGrades` of `run` (query -> document -> score) for `query_ids` (a query without a ranking: an empty
    row)."""
    rankings = []
    for query_id in query_ids:
        scores = run.get(query_id, {})
        _check_scores(scores.values(), query_id)
        grades = relevance.get(query_id, {})
        ranked = sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)
        rankings.append([max(grades.get(doc, 0), 0) for doc, _ in ranked])
    matrix = np.zeros((len(query_ids), max(map(len, rankings), default=0)))
    for row, grades_at_rank in enumerate(rankings):
        matrix[row, :len(grades_at_rank)] = grades_at_rank
    return RankedGrades(matrix, *_judged(relevance, query_ids))


def ranked_grades_of_top_k(relevance: Mapping[str, Mapping[str, int]], query_ids: Sequence[str],
                           doc_ids: Sequence[str], indices: np.ndarray, scores: np.ndarray) -> RankedGrades:
    """`RankedGrades` of a search's top k: row i of `indices` (rows of `doc_ids`; -1 for none) and `scores` ranks
    documents for `query_ids[i]`, in any order (they are put in trec_eval's)."""
    indices = np.asarray(indices, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    if np.isnan(scores[indices >= 0]).any():
        _check_scores([math.nan], query_ids[int(np.argwhere(np.isnan(scores) & (indices >= 0))[0, 0])])
    # trec_eval's order: ranked documents first, by score descending, ties by document id descending; only the
    # documents tied with another in their row need their ids' order
    ranked_row = indices >= 0
    scores = np.where(ranked_row, scores, -np.inf)
    by_score = np.argsort(-scores, axis=1, kind="stable")
    sorted_scores = np.take_along_axis(scores, by_score, axis=1)
    tied_sorted = np.zeros(scores.shape, dtype=bool)
    tied_sorted[:, 1:] = sorted_scores[:, 1:] == sorted_scores[:, :-1]
    tied_sorted[:, :-1] |= tied_sorted[:, 1:]
    tied = np.zeros(scores.shape, dtype=bool)
    np.put_along_axis(tied, by_score, tied_sorted, axis=1)
    tied &= ranked_row
    tie_key = np.zeros(scores.shape, dtype=np.int64)
    if tied.any():
        tied_docs = np.unique(indices[tied])
        key_of = np.empty(len(tied_docs), dtype=np.int64)
        key_of[sorted(range(len(tied_docs)), key=lambda i: doc_ids[tied_docs[i]])] = np.arange(len(tied_docs))
        tie_key[tied] = key_of[np.searchsorted(tied_docs, indices[tied])]
    ranked = np.lexsort((-tie_key, -scores, ~ranked_row), axis=1)
    ranked_indices = np.take_along_axis(indices, ranked, axis=1)
    return RankedGrades(_grades_at(relevance, query_ids, doc_ids, ranked_indices), *_judged(relevance, query_ids))


def _grades_at(relevance: Mapping[str, Mapping[str, int]], query_ids: Sequence[str], doc_ids: Sequence[str],
               ranked_indices: np.ndarray) -> np.ndarray:
    """(n_queries, depth) float64: the positive grade of each ranked document (rows of `doc_ids`), else 0."""
    positive = {doc for query_id in query_ids for doc, grade in relevance.get(query_id, {}).items() if grade > 0}
    row_of = {doc_ids[row]: row for row in [row for row, doc_id in enumerate(doc_ids) if doc_id in positive]}
    n_docs = len(doc_ids)
    judged = [(query_row * n_docs + row_of[doc], grade) for query_row, query_id in enumerate(query_ids)
              for doc, grade in relevance.get(query_id, {}).items() if grade > 0 and doc in row_of]
    keys = np.array([key for key, _ in judged], dtype=np.int64)
    grades = np.array([grade for _, grade in judged], dtype=np.float64)
    order = np.argsort(keys)
    keys, grades = keys[order], grades[order]
    wanted = np.arange(len(query_ids), dtype=np.int64)[:, None] * n_docs + ranked_indices
    position = np.searchsorted(keys, wanted).clip(0, max(len(keys) - 1, 0))
    found = (ranked_indices >= 0) & (keys[position] == wanted) if len(keys) else np.zeros(wanted.shape, dtype=bool)
    return np.where(found, grades[position] if len(keys) else 0.0, 0.0)


def _discounts(depth: int) -> np.ndarray:
    """log2(rank + 1) for ranks 1..depth, by the C library's log2 as trec_eval takes it."""
    return np.array([math.log2(i + 2) for i in range(depth)])


def _padded(matrix: np.ndarray, depth: int) -> np.ndarray:
    return np.pad(matrix, ((0, 0), (0, max(depth - matrix.shape[1], 0))))[:, :max(depth, 1)]


def trec_arrays(ranked: RankedGrades, measures: Iterable[str]) -> dict[str, np.ndarray]:
    """Per query (n_queries,) float64, each of `measures` as pytrec_eval computes it (names as it returns them:
    "map", "ndcg", "ndcg_cut_10", "map_cut_10", "recall_10", "P_10", "success_10"; see `_AT_CUTOFF`).

    trec_eval's definitions, sum for sum in its order: DCG adds grade / log2(rank + 1) over the ranked documents
    with a positive grade; the ideal DCG the query's positive grades largest first (every one at full depth, the
    first k at cut-off k); nDCG = DCG / ideal (0 without a positive grade). AP adds the precision at each relevant
    document (grade >= 1) and divides by the query's relevant documents; recall, P (over k, the ranking padded
    with non-relevant documents) and success count the relevant documents among the first k.
    """
    measures = list(measures)
    cutoffs = [int(m.rsplit("_", 1)[1]) for m in measures if m not in _FULL_DEPTH]
    depth = max([1, ranked.grades.shape[1], ranked.ideal.shape[1], *cutoffs])
    grades, ideal = _padded(ranked.grades, depth), _padded(ranked.ideal, depth)
    discounts = _discounts(grades.shape[1])
    dcg = np.cumsum(grades / discounts, axis=1)
    ideal_dcg = np.cumsum(ideal / discounts, axis=1)
    hits = grades >= RELEVANCE_LEVEL
    found = np.cumsum(hits, axis=1)
    precision_sum = np.cumsum(np.where(hits, found / np.arange(1, depth + 1), 0.0), axis=1)
    relevant = ranked.relevant.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        def per_relevant(values: np.ndarray) -> np.ndarray:
            return np.where(relevant > 0, values / relevant, 0.0)

        def ndcg(at: int) -> np.ndarray:
            return np.where(ideal_dcg[:, at] > 0, dcg[:, at] / ideal_dcg[:, at], dcg[:, at])

        out: dict[str, np.ndarray] = {}
        for measure in measures:
            if measure == "map":
                out[measure] = per_relevant(precision_sum[:, -1])
            elif measure == "ndcg":
                out[measure] = ndcg(depth - 1)
            else:
                family, k = measure.rsplit("_", 1)
                at = int(k) - 1
                if family == "ndcg_cut":
                    out[measure] = ndcg(at)
                elif family == "map_cut":
                    out[measure] = per_relevant(precision_sum[:, at])
                elif family == "recall":
                    out[measure] = per_relevant(found[:, at].astype(np.float64))
                elif family == "P":
                    out[measure] = found[:, at] / float(at + 1)
                else:
                    out[measure] = (found[:, at] > 0).astype(np.float64)
    return out


def _computed_here(measure: str) -> bool:
    family, _, k = measure.rpartition("_")
    return measure in _FULL_DEPTH or (family in _AT_CUTOFF and k.isdigit() and int(k) > 0)


def trec_measures(relevance: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]],
                  measures: Sequence[str] = ("map", "ndcg")) -> dict[str, dict[str, float]]:
    """Per-query trec_eval measures, equal to pytrec_eval's (full depth; ties broken by docid, descending):
    `trec_arrays` for the measures it computes, pytrec_eval for any other.

    Queries absent from `run`, with no ranked candidate, or without judgements are left out, as trec_eval does;
    the others keep `run`'s order, as pytrec_eval returns them.
    """
    query_ids = [q for q, scores in run.items() if scores and q in relevance]
    ours = [m for m in measures if _computed_here(m)]
    values = {m: v.tolist() for m, v in trec_arrays(ranked_grades(relevance, run, query_ids), ours).items()}
    per_query = {q: {m: values[m][row] for m in ours} for row, q in enumerate(query_ids)}
    if others := [m for m in measures if m not in ours]:
        import pytrec_eval

        evaluator = pytrec_eval.RelevanceEvaluator({q: dict(grades) for q, grades in relevance.items()}, set(others))
        theirs = evaluator.evaluate({q: dict(run[q]) for q in query_ids})
        for q in query_ids:
            per_query[q].update({m: theirs[q][m] for m in others})
    return {q: {m: per_query[q][m] for m in measures} for q in query_ids}


def mean_measures(per_query: Mapping[str, Mapping[str, float]], measures: Sequence[str]) -> dict[str, float]:
    """Mean of each measure over the queries, ×100, rounded to 2 decimals (0 when there is no query)."""
    return {m: percent(float(np.mean([q[m] for q in per_query.values()]))) if per_query else 0.0
            for m in measures}


def rank_terms(clicked_scores: np.ndarray, other_scores: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """Per impression, the nDCG and P@1 terms of the clicked paper's rank among those shown (SPEC §5).

    `above` counts others scoring strictly higher plus half of those tied; the nDCG term is 1/log2(2 + above),
    the P@1 term 1.0 only when above == 0. Returns {"adj-NDCG", "adj-P@1"}, each (n_impressions,) float64.
    """
    above = np.array([np.sum(others > clicked) + 0.5 * np.sum(others == clicked)
                      for clicked, others in zip(clicked_scores, other_scores)], dtype=np.float64)
    return {"adj-NDCG": 1.0 / np.log2(2.0 + above), "adj-P@1": (above == 0).astype(np.float64)}


def propensity_adjusted(clicked_scores: np.ndarray, other_scores: Sequence[np.ndarray],
                        weights: np.ndarray, rounded: bool = True) -> dict[str, float]:
    """Propensity-adjusted nDCG and P@1 of the clicked paper's rank among those shown (SPEC §5).

    Args:
        clicked_scores: (n_impressions,) the ranker's score of each impression's clicked paper.
        other_scores: n_impressions arrays with the scores of the other papers shown.
        weights: (n_impressions,) inverse propensity of each clicked paper's display position.

    The weighted means of `rank_terms`: returns {"adj-NDCG", "adj-P@1"} ×100, rounded to 2 decimals (`rounded`)
    or with every digit (for choosing between settings, where rounding would make near-ties exact ones).
    """
    terms = rank_terms(clicked_scores, other_scores)
    ndcg, p_at_1 = terms["adj-NDCG"], terms["adj-P@1"]
    total = weights.sum()
    scale = percent if rounded else (lambda value: 100 * value)
    return {"adj-NDCG": scale(float(weights @ ndcg / total)), "adj-P@1": scale(float(weights @ p_at_1 / total))}


MTEB_K_VALUES = (1, 3, 5, 10, 20, 100, 1000)
"""The cut-offs MTEB's retrieval and reranking tasks report (`AbsTaskRetrieval.k_values`)."""
_TREC_OF_MTEB = {"ndcg": "ndcg_cut_{k}", "map": "map_cut_{k}", "recall": "recall_{k}", "precision": "P_{k}",
                 "hit_rate": "success_{k}"}
MTEB_FAMILIES = ("ndcg", "map", "recall", "precision", "mrr", "hit_rate")


def mteb_metric_names(k_values: Sequence[int] = MTEB_K_VALUES) -> tuple[str, ...]:
    """MTEB's names of its retrieval metrics ("ndcg_at_10", ...), family by family."""
    return tuple(f"{family}_at_{k}" for family in MTEB_FAMILIES for k in k_values)


def mteb_arrays(ranked: RankedGrades, k_values: Sequence[int] = MTEB_K_VALUES) -> dict[str, np.ndarray]:
    """Per query (n_queries,), MTEB's retrieval metrics (`mteb_metric_names`) as its evaluator computes them.

    nDCG, MAP, recall, precision and hit rate at each k as pytrec_eval computes them (MTEB's measures `ndcg_cut`,
    `map_cut`, `recall`, `P`, `success`: `trec_arrays`); MRR@k as MTEB's `mrr`: the reciprocal rank of the first
    document with a positive grade among the top k sorted by (score, id) descending.
    """
    trec = trec_arrays(ranked, [pattern.format(k=k) for pattern in _TREC_OF_MTEB.values() for k in k_values])
    positive = _padded(ranked.grades, max(k_values)) > 0
    first = np.where(positive.any(axis=1), positive.argmax(axis=1) + 1, 0)
    values = {f"{family}_at_{k}": trec[pattern.format(k=k)] for family, pattern in _TREC_OF_MTEB.items()
              for k in k_values}
    values.update({f"mrr_at_{k}": np.where((first > 0) & (first <= k), 1.0 / np.maximum(first, 1), 0.0)
                   for k in k_values})
    return {name: values[name] for name in mteb_metric_names(k_values)}


def _per_query(query_ids: Sequence[str], arrays: Mapping[str, np.ndarray]) -> dict[str, dict[str, float]]:
    columns = {name: values.tolist() for name, values in arrays.items()}
    return {query_id: {name: column[row] for name, column in columns.items()} for row, query_id in enumerate(query_ids)}


def mteb_retrieval_measures(relevance: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]],
                            k_values: Sequence[int] = MTEB_K_VALUES) -> dict[str, dict[str, float]]:
    """Per query of `relevance` (in its order), MTEB's retrieval metrics (`mteb_arrays`) of `run`. A query with no
    ranked document (no embedding) scores 0 on every metric, which MTEB never meets (it embeds every query)."""
    query_ids = list(relevance)
    return _per_query(query_ids, mteb_arrays(ranked_grades(relevance, run, query_ids), k_values))


def mteb_top_k_measures(relevance: Mapping[str, Mapping[str, int]], query_ids: Sequence[str], doc_ids: Sequence[str],
                        indices: np.ndarray, scores: np.ndarray, k_values: Sequence[int] = MTEB_K_VALUES
                        ) -> dict[str, dict[str, float]]:
    """`mteb_retrieval_measures` of a search's top k without a run of dicts: row i of `indices` (rows of `doc_ids`;
    -1 for none) and `scores` ranks documents for `query_ids[i]`; a query of `relevance` without a row scores 0."""
    every_query = list(relevance)
    row_of = {query_id: row for row, query_id in enumerate(query_ids)}
    rows = np.array([row_of.get(q, -1) for q in every_query], dtype=np.int64)
    depth = indices.shape[1] if indices.ndim == 2 else 0
    all_indices = np.full((len(every_query), depth), -1, dtype=np.int64)
    all_scores = np.full((len(every_query), depth), -np.inf)
    all_indices[rows >= 0], all_scores[rows >= 0] = indices[rows[rows >= 0]], scores[rows[rows >= 0]]
    ranked = ranked_grades_of_top_k(relevance, every_query, doc_ids, all_indices, all_scores)
    return _per_query(every_query, mteb_arrays(ranked, k_values))


def mteb_scores(per_query: Mapping[str, Mapping[str, float]], k_values: Sequence[int] = MTEB_K_VALUES,
                main_score: str = "ndcg_at_10") -> dict[str, float]:
    """The scores dict MTEB writes for a retrieval task: each mean rounded to 5 decimals as MTEB rounds it (MRR
    unrounded, as MTEB leaves it), `accuracy` (= recall_at_1) and `main_score`."""
    count = len(per_query)
    scores: dict[str, float] = {}
    for name in mteb_metric_names(k_values):
        mean = sum(values[name] for values in per_query.values()) / count if count else 0.0
        scores[name] = mean if name.startswith("mrr_") else round(mean, 5)
    scores["accuracy"] = scores[f"recall_at_{min(k_values)}"]
    scores["main_score"] = scores[main_score]
    return scores


def capped_recall(relevance: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]],
                  k_values: Sequence[int]) -> dict[str, float]:
    """MTEB's capped recall (`recall_cap`, the LMEB tasks' `R_cap_at_k`): per ranked query, the relevant documents
    (grade > 0) among its top k by (score, id) descending over min(relevant, k); the mean over the queries with a
    relevant document (0.0 when none has one, as MTEB's `_average_optional`)."""
    values: dict[str, list[float]] = {f"R_cap_at_{k}": [] for k in k_values}
    for query_id, scores in run.items():
        ranked = sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)[:max(k_values)]
        grades = relevance[query_id]
        relevant = sum(1 for grade in grades.values() if grade > 0)
        for k in k_values:
            if min(relevant, k):
                found = sum(1 for doc, _ in ranked[:k] if grades.get(doc, 0) > 0)
                values[f"R_cap_at_{k}"].append(found / min(relevant, k))
    return {name: sum(found) / len(found) if found else 0.0 for name, found in values.items()}
