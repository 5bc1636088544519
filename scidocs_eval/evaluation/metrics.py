"""The metrics, exactly as the official SciDocs code computes them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


def percent(value: float) -> float:
    """×100 and rounded to 2 decimals, as the official code prints every number (numpy rounding)."""
    return float(np.round(100 * value, 2))


def macro_f1(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Macro-averaged F1 × 100, rounded to 2 decimals."""
    from sklearn.metrics import f1_score

    return percent(f1_score(y_true, y_pred, average="macro"))


def trec_measures(relevance: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]],
                  measures: Sequence[str] = ("map", "ndcg")) -> dict[str, dict[str, float]]:
    """Per-query trec_eval measures by pytrec_eval (full depth; ties broken by docid, descending).

    Queries absent from `run`, or with no ranked candidate, are left out, as trec_eval does.
    """
    import pytrec_eval

    evaluator = pytrec_eval.RelevanceEvaluator(
        {q: dict(grades) for q, grades in relevance.items()}, set(measures))
    return evaluator.evaluate({q: dict(scores) for q, scores in run.items() if scores})


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


def mteb_retrieval_measures(relevance: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]],
                            k_values: Sequence[int] = MTEB_K_VALUES) -> dict[str, dict[str, float]]:
    """Per query, MTEB's retrieval metrics (`mteb_metric_names`) as its evaluator computes them.

    nDCG, MAP, recall, precision and hit rate at each k by pytrec_eval (MTEB's measures `ndcg_cut`, `map_cut`,
    `recall`, `P`, `success`; ties by document id, descending); MRR@k as MTEB's `mrr`: the reciprocal rank of the
    first document with a positive grade among the top k sorted by (score, id) descending. Every query of
    `relevance` gets a value; one with no ranked document (no embedding) scores 0 on every metric, which MTEB
    never meets (it embeds every query).
    """
    cuts = ",".join(str(k) for k in k_values)
    import pytrec_eval

    evaluator = pytrec_eval.RelevanceEvaluator(
        {q: dict(grades) for q, grades in relevance.items()},
        {f"{measure.split('_{k}')[0]}.{cuts}" for measure in _TREC_OF_MTEB.values()})
    trec = evaluator.evaluate({q: dict(scores) for q, scores in run.items() if scores and q in relevance})
    k_max = max(k_values)
    per_query: dict[str, dict[str, float]] = {}
    for query_id, grades in relevance.items():
        values = trec.get(query_id, {})
        measures = {f"{family}_at_{k}": float(values.get(pattern.format(k=k), 0.0))
                    for family, pattern in _TREC_OF_MTEB.items() for k in k_values}
        relevant = {doc for doc, grade in grades.items() if grade > 0}
        ranked = sorted(run.get(query_id, {}).items(), key=lambda item: (item[1], item[0]), reverse=True)[:k_max]
        first = next((rank for rank, (doc, _) in enumerate(ranked, start=1) if doc in relevant), None)
        measures.update({f"mrr_at_{k}": 1.0 / first if first is not None and first <= k else 0.0
                         for k in k_values})
        per_query[query_id] = {name: measures[name] for name in mteb_metric_names(k_values)}
    return per_query


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
