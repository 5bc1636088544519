"""The propensity-adjusted metric (SPEC §5) on hand-worked cases, and the features on a hand-made corpus."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scidocs_eval.errors import InputError
from scidocs_eval.evaluation.metrics import propensity_adjusted
from scidocs_eval.evaluators.recomm_features import FEATURE_NAMES, RecommFeaturizer
from scidocs_eval.evaluators.recomm_rankers import impression_metrics
from scidocs_eval.formats.embeddings import EmbeddingStore
from scidocs_eval.formats.suite import Impression


def test_clicked_on_top_and_a_tie_below_weighted_by_inverse_propensity():
    # impression 1: clicked 0.9 beats 0.5 and 0.3 -> above 0, nDCG 1, P@1 1 (weight 1)
    # impression 2: clicked 0.4; 0.6 above, 0.4 tied, 0.1 below -> above 1.5, nDCG 1/log2(3.5), P@1 0 (weight 3)
    result = propensity_adjusted(np.array([0.9, 0.4]), [np.array([0.5, 0.3]), np.array([0.6, 0.4, 0.1])],
                                 np.array([1.0, 3.0]))
    assert result == {"adj-NDCG": round(100 * (1 + 3 / math.log2(3.5)) / 4, 2), "adj-P@1": 25.0}
    assert result["adj-NDCG"] == 66.5


def test_a_tie_at_the_top_gives_p_at_1_zero_and_half_a_rank():
    result = propensity_adjusted(np.array([0.5]), [np.array([0.5, 0.2])], np.array([2.0]))
    assert result == {"adj-NDCG": 75.65, "adj-P@1": 0.0}  # 1 / log2(2.5) = 0.75647


def test_no_other_paper_shown_is_rank_one_and_weights_scale_out():
    clicked, others = np.array([0.1, 0.2]), [np.array([]), np.array([0.3])]
    first = propensity_adjusted(clicked, others, np.array([1.0, 1.0]))
    assert first == {"adj-NDCG": round(100 * (1 + 1 / math.log2(3)) / 2, 2), "adj-P@1": 50.0}
    assert propensity_adjusted(clicked, others, np.array([7.0, 7.0])) == first
    assert propensity_adjusted(clicked, others, np.array([3.0, 1.0]))["adj-P@1"] == 75.0


def _corpus() -> tuple[dict, EmbeddingStore]:
    metadata = {
        "q": {"title": "Deep nets, deep nets", "authors": ["a1", "a2"], "references": ["c", "x"],
              "cited_by": ["y"], "year": 2010},
        "c": {"title": "Deep trees", "authors": ["a2", "a3"], "references": ["x", "z"],
              "cited_by": ["q", "y", "w"], "year": 1980},
        "d": {"title": None, "authors": None, "references": ["q"], "cited_by": [], "year": "unknown"},
    }
    store = EmbeddingStore.from_mapping({"q": [1.0, 0.0], "c": [1.0, 1.0], "d": []})
    return metadata, store


def test_features_of_hand_made_pairs():
    metadata, store = _corpus()
    featurizer = RecommFeaturizer(metadata, store, ["q", "c", "d", "e"])
    features = featurizer.pair_features(np.array([0, 0, 0]), np.array([1, 2, 3]))
    by_name = [dict(zip(FEATURE_NAMES, row.tolist())) for row in features]
    # title tokens keep case: {Deep, nets, ",", deep} and {Deep, trees} share one of five
    expected_c = {"author_jaccard": 1 / 3, "position": 0.0, "title_jaccard": 1 / 5,
                  "cosine": 1 / math.sqrt(2), "cited_by_jaccard": 1 / 3, "references_jaccard": 1 / 3,
                  "candidate_cites_query": 0.0, "query_cites_candidate": 1.0, "oldness": 1.0,
                  "relative_oldness": 1.0, "citation_count": math.log(4) / 10}
    assert by_name[0] == pytest.approx(expected_c, rel=1e-6)
    # d: no title, authors or year; empty embedding; it cites q (its references)
    assert by_name[1] == pytest.approx(dict.fromkeys(FEATURE_NAMES, 0.0) | {"candidate_cites_query": 1.0})
    # e: no metadata and no embedding at all
    assert by_name[2] == dict.fromkeys(FEATURE_NAMES, 0.0)
    assert featurizer.coverage(["q"], ["c", "d", "e"]) == {
        "queries": 1, "queries_missing": 0, "queries_empty": 0, "queries_without_metadata": 0,
        "candidates": 3, "candidates_missing": 1, "candidates_empty": 1, "candidates_without_metadata": 1}


def test_shown_papers_pairs_weights_and_metric_by_impression():
    metadata, store = _corpus()
    featurizer = RecommFeaturizer(metadata, store, ["q", "c", "d", "e"])
    impressions = [Impression("q", "d", ("c", "d", "e"), 2), Impression("c", "q", ("q",), 3)]
    propensities = np.array([2.0, 1.0, 1.0])  # scaled to mean 1: [1.5, 0.75, 0.75]
    shown = featurizer.transform(impressions, propensities, "train.csv")
    assert shown.clicked.tolist() == [False, True, False, True]
    assert shown.position.tolist() == [1, 2, 3, 1]
    assert shown.weights == pytest.approx([1 / 0.75, 1 / 1.5])
    clicked, other, impression = shown.training_pairs(max_per_impression=1)
    assert (clicked.tolist(), other.tolist(), impression.tolist()) == ([1], [0], [0])
    scores = np.array([0.3, 0.5, 0.5, 0.1])  # impression 0: one below, one tied -> above 0.5
    expected = (1 / math.log2(2.5) * 4 / 3 + 1 * 2 / 3) / 2
    assert impression_metrics(shown, scores) == {"adj-NDCG": round(100 * expected, 2), "adj-P@1": 33.33}
    assert impression_metrics(shown, scores, adjusted=False) == {
        "NDCG": round(100 * (1 / math.log2(2.5) + 1) / 2, 2), "P@1": 50.0}


def test_training_pairs_take_the_first_five_others_in_display_order():
    store = EmbeddingStore.from_mapping({"q": [1.0]})
    shown_ids = tuple(f"p{i}" for i in range(1, 9))
    featurizer = RecommFeaturizer({}, store, ["q", *shown_ids])
    shown = featurizer.transform([Impression("q", "p3", shown_ids, 2)], np.ones(10), "train.csv")
    clicked, other, _ = shown.training_pairs()
    assert clicked.tolist() == [2] * 5
    assert shown.position[other].tolist() == [1, 2, 4, 5, 6]


def test_a_repeat_of_the_clicked_id_is_left_out_as_the_official_code_does():
    store = EmbeddingStore.from_mapping({"q": [1.0]})
    featurizer = RecommFeaturizer({}, store, ["q", "a", "b"])
    shown = featurizer.transform([Impression("q", "a", ("b", "a", "a", "b"), 2)], np.ones(4), "test.csv")
    assert shown.position.tolist() == [1, 2, 4]
    assert shown.clicked.tolist() == [False, True, False]
    clicked, others = shown.split_scores(np.array([0.1, 0.5, 0.9]))
    assert clicked.tolist() == [0.5] and others[0].tolist() == [0.1, 0.9]


def test_clicked_position_beyond_the_propensities_names_file_and_line():
    store = EmbeddingStore.from_mapping({"q": [1.0]})
    featurizer = RecommFeaturizer({}, store, ["q", "a", "b", "c"])
    with pytest.raises(InputError, match=r"^val\.csv:7: query 'q': clicked paper is at position 3, but the "
                       r"propensity list has only 2 positions"):
        featurizer.transform([Impression("q", "c", ("a", "b", "c"), 7)], np.ones(2), "val.csv")


def test_metadata_field_that_is_not_a_list_names_file_and_paper():
    store = EmbeddingStore.from_mapping({"q": [1.0]})
    with pytest.raises(InputError, match=r"^meta\.json: paper 'q': 'authors' must be a list, got str"):
        RecommFeaturizer({"q": {"authors": "Smith"}}, store, ["q"], "meta.json")
