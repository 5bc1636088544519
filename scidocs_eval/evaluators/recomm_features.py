"""The eleven (query, candidate) features of the recommendation task (SPEC §5), computed for all pairs at once.

Columns, in the official order (`FEATURE_NAMES`):

 0. author Jaccard            |authors(q) ∩ authors(c)| / |authors(q) ∪ authors(c)|
 1. display position          always 0, as in the official code (kept so the layout matches; it carries nothing)
 2. title-token Jaccard       over the sets of title tokens (case kept, punctuation as tokens)
 3. cosine                    of the two embeddings (a missing or empty embedding is a zero vector: cosine 0)
 4. cited-by Jaccard
 5. references Jaccard
 6. candidate cites query     1 if c is in cited_by(q) or q is in references(c)
 7. query cites candidate     1 if q is in cited_by(c) or c is in references(q)
 8. oldness                   clip((2020 − year(c)) / 20, −1, 1)
 9. relative oldness          clip((year(q) − year(c)) / 20, −1, 1)
10. citation count            ln(|cited_by(c)| + 1) / 10

Missing metadata (a paper absent from `paper_metadata_recomm.json`, a field absent or null, a year that is
not a number) gives 0 for every feature that needs it. Set overlaps are row-wise products of sparse
paper-by-item indicator matrices, so the cost is linear in the number of pairs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scidocs_eval.errors import InputError
from scidocs_eval.formats.embeddings import EMPTY, MISSING, EmbeddingStore
from scidocs_eval.formats.suite import METADATA_FILES, Impression
from scidocs_eval.lazy_modules import lazy_module

if TYPE_CHECKING:
    import scipy.sparse as sp

np = lazy_module("numpy", __name__)

FEATURE_NAMES = ("author_jaccard", "position", "title_jaccard", "cosine", "cited_by_jaccard",
                 "references_jaccard", "candidate_cites_query", "query_cites_candidate", "oldness",
                 "relative_oldness", "citation_count")
COSINE = FEATURE_NAMES.index("cosine")
REFERENCE_YEAR = 2020.0
_TOKEN = re.compile(r"\w+|[^\w\s]")
_SET_FIELDS = ("authors", "references", "cited_by")


@dataclass
class ShownPapers:
    """Every paper shown in a list of impressions, flattened impression by impression in display order.

    Attributes:
        features: (n_rows, 11) float32, the features of (query, shown paper), columns as FEATURE_NAMES.
        impression: (n_rows,) int64, index of the row's impression; rows of one impression are contiguous.
        position: (n_rows,) int64, 1-based display position.
        clicked: (n_rows,) bool, True for the clicked paper (one per impression).
        query_index, candidate_index: (n_rows,) int64 rows of `vectors` holding the query's and the
            shown paper's embedding (a zero row where there is none).
        vectors: (n_papers, dim) float32 embeddings, shared by every split of one task run.
        clicked_position: (n_impressions,) int64, 1-based display position of each click.
        weights: (n_impressions,) float64, 1 / propensity of the clicked position (propensities scaled to
            mean 1, as the official code does; the scale cancels in every weighted mean).
    """

    features: np.ndarray
    impression: np.ndarray
    position: np.ndarray
    clicked: np.ndarray
    query_index: np.ndarray
    candidate_index: np.ndarray
    vectors: np.ndarray
    clicked_position: np.ndarray
    weights: np.ndarray

    @property
    def n_impressions(self) -> int:
        return len(self.weights)

    @property
    def group_sizes(self) -> np.ndarray:
        """(n_impressions,) number of papers shown in each impression."""
        return np.bincount(self.impression, minlength=self.n_impressions)

    def training_pairs(self, max_per_impression: int = 5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(clicked row, other row, impression) for the first `max_per_impression` non-clicked papers of each
        impression in display order (the official sampler), each an (n_pairs,) int64 array."""
        others = np.flatnonzero(~self.clicked)
        impression = self.impression[others]
        starts = np.r_[0, np.flatnonzero(np.diff(impression)) + 1]
        rank_in_impression = np.arange(len(others)) - np.repeat(starts, np.diff(np.r_[starts, len(others)]))
        kept = others[rank_in_impression < max_per_impression]
        clicked_rows = np.flatnonzero(self.clicked)
        return clicked_rows[self.impression[kept]], kept, self.impression[kept]

    def split_scores(self, scores: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """Scores of the rows, (n_rows,), as (clicked scores (n_impressions,), other scores per impression)."""
        others_per_impression = self.group_sizes - 1
        return scores[self.clicked], np.split(scores[~self.clicked], np.cumsum(others_per_impression)[:-1])


class RecommFeaturizer:
    """Computes `ShownPapers` for impressions from the recommendation metadata and one embeddings store.

    Args:
        metadata: ``{paper_id: record}`` of paper_metadata_recomm.json (records may carry authors,
            references, cited_by lists, a title and a year; anything absent counts as missing).
        embeddings: the "recomm" embeddings.
        paper_ids: every id the task will ask about (queries and shown papers of all splits).
        metadata_source: the metadata file, named in errors.
    """

    def __init__(self, metadata: Mapping[str, Mapping], embeddings: EmbeddingStore, paper_ids: Sequence[str],
                 metadata_source: str = METADATA_FILES["recomm"]):
        self.metadata_source = metadata_source
        self.paper_ids = list(dict.fromkeys(paper_ids))
        self.row = {paper_id: i for i, paper_id in enumerate(self.paper_ids)}
        self.status = embeddings.status(self.paper_ids)
        self.has_metadata = np.fromiter((p in metadata for p in self.paper_ids), dtype=bool,
                                        count=len(self.paper_ids))
        self.vectors = embeddings.vectors(self.paper_ids)
        self.norms = np.linalg.norm(self.vectors.astype(np.float64), axis=1)
        records = [metadata.get(p) or {} for p in self.paper_ids]
        self.sets = {name: _indicator_matrix([self._items(r, name, p) for p, r in zip(self.paper_ids, records)])
                     for name in _SET_FIELDS}
        self.sets["title"] = _indicator_matrix([_TOKEN.findall(str(r.get("title") or "")) for r in records])
        self.cited_by_ids = _id_matrix([self._items(r, "cited_by", p) for p, r in zip(self.paper_ids, records)],
                                       self.row)
        self.reference_ids = _id_matrix([self._items(r, "references", p) for p, r in zip(self.paper_ids, records)],
                                        self.row)
        self.year = np.array([_year(r.get("year")) for r in records], dtype=np.float64)
        self.citations = np.asarray(self.sets["cited_by"].sum(axis=1), dtype=np.float64).ravel()

    def _items(self, record: Mapping, name: str, paper_id: str) -> list[str]:
        """The list field `name` of a metadata record as strings ([] when absent or null)."""
        value = record.get(name)
        if value is None:
            return []
        if not isinstance(value, list):
            raise InputError(self.metadata_source, f"paper {paper_id!r}: {name!r} must be a list, got "
                             f"{type(value).__name__}")
        return [item if isinstance(item, str) else str(item) for item in value]

    def pair_features(self, query_rows: np.ndarray, candidate_rows: np.ndarray) -> np.ndarray:
        """(n_pairs, 11) float32 features of the pairs (rows of `paper_ids`, each (n_pairs,) int64)."""
        q, c = query_rows, candidate_rows
        features = np.zeros((len(q), len(FEATURE_NAMES)), dtype=np.float64)
        features[:, 0] = _jaccard(self.sets["authors"], q, c)
        features[:, 2] = _jaccard(self.sets["title"], q, c)
        features[:, COSINE] = self.cosine(q, c)
        features[:, 4] = _jaccard(self.sets["cited_by"], q, c)
        features[:, 5] = _jaccard(self.sets["references"], q, c)
        features[:, 6] = self._cites(citing=c, cited=q)
        features[:, 7] = self._cites(citing=q, cited=c)
        features[:, 8] = np.nan_to_num(np.clip((REFERENCE_YEAR - self.year[c]) / 20.0, -1.0, 1.0))
        features[:, 9] = np.nan_to_num(np.clip((self.year[q] - self.year[c]) / 20.0, -1.0, 1.0))
        features[:, 10] = np.log(self.citations[c] + 1.0) / 10.0
        return features.astype(np.float32)

    def cosine(self, query_rows: np.ndarray, candidate_rows: np.ndarray) -> np.ndarray:
        """(n_pairs,) float64 cosine of the embeddings; 0 where either is a zero vector."""
        dots = np.einsum("ij,ij->i", self.vectors[query_rows].astype(np.float64),
                         self.vectors[candidate_rows].astype(np.float64))
        norms = self.norms[query_rows] * self.norms[candidate_rows]
        return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)

    def _cites(self, citing: np.ndarray, cited: np.ndarray) -> np.ndarray:
        """1.0 where `citing` cites `cited` by either paper's record (cited_by of the cited one, or references
        of the citing one), else 0.0; (n_pairs,)."""
        listed_as_citer = np.asarray(self.cited_by_ids[cited, citing]).ravel()
        listed_as_reference = np.asarray(self.reference_ids[citing, cited]).ravel()
        return ((listed_as_citer + listed_as_reference) > 0).astype(np.float64)

    def transform(self, impressions: Sequence[Impression], propensities: np.ndarray,
                  source: str) -> ShownPapers:
        """The `ShownPapers` of `impressions`, read from the file `source` (named in errors).

        Raises:
            InputError: an impression whose clicked position has no propensity (the list is too short).
        """
        n_positions = len(propensities)
        for impression in impressions:
            if impression.clicked_position > n_positions:
                raise InputError(source, f"query {impression.query_id!r}: clicked paper is at position "
                                 f"{impression.clicked_position}, but the propensity list has only "
                                 f"{n_positions} positions", impression.line)
        sizes = np.array([len(i.shown) for i in impressions], dtype=np.int64)
        query_rows = np.repeat(np.array([self.row[i.query_id] for i in impressions], dtype=np.int64), sizes)
        candidate_rows = np.array([self.row[p] for i in impressions for p in i.shown], dtype=np.int64)
        clicked_position = np.array([i.clicked_position for i in impressions], dtype=np.int64)
        impression_index = np.repeat(np.arange(len(impressions)), sizes)
        position = np.arange(len(candidate_rows)) - np.repeat(np.cumsum(sizes) - sizes, sizes) + 1
        clicked = position == clicked_position[impression_index]
        # a later repeat of the clicked id in the shown list is neither the click nor an "other" (official rule)
        kept = clicked | (candidate_rows != candidate_rows[clicked][impression_index])
        scaled = propensities * len(propensities) / propensities.sum()
        return ShownPapers(
            features=self.pair_features(query_rows[kept], candidate_rows[kept]), impression=impression_index[kept],
            position=position[kept], clicked=clicked[kept], query_index=query_rows[kept],
            candidate_index=candidate_rows[kept], vectors=self.vectors, clicked_position=clicked_position,
            weights=1.0 / scaled[clicked_position - 1])

    def coverage(self, query_ids: Sequence[str], candidate_ids: Sequence[str]) -> dict[str, int]:
        """Counts of distinct queries and candidates without an embedding (absent, or empty) or metadata."""
        counts: dict[str, int] = {}
        for role, ids in (("queries", query_ids), ("candidates", candidate_ids)):
            rows = np.array([self.row[p] for p in dict.fromkeys(ids)], dtype=np.int64)
            counts[role] = len(rows)
            counts[f"{role}_missing"] = int(np.sum(self.status[rows] == MISSING))
            counts[f"{role}_empty"] = int(np.sum(self.status[rows] == EMPTY))
            counts[f"{role}_without_metadata"] = int(np.sum(~self.has_metadata[rows]))
        return counts


def _year(value: object) -> float:
    """A year as float; NaN when absent or not a number (the feature then becomes 0)."""
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return float("nan")


def _indicator_matrix(item_lists: list[list[str]]) -> sp.csr_matrix:
    """(n_papers, n_distinct_items) 0/1 CSR matrix: row i marks the distinct items of item_lists[i]."""
    vocabulary: dict[str, int] = {}
    columns = [sorted({vocabulary.setdefault(item, len(vocabulary)) for item in items}) for items in item_lists]
    return _csr(columns, max(len(vocabulary), 1))


def _id_matrix(id_lists: list[list[str]], row: Mapping[str, int]) -> sp.csr_matrix:
    """(n_papers, n_papers) 0/1 CSR matrix: [i, j] = 1 when paper j is in id_lists[i] (ids outside `row` dropped)."""
    columns = [sorted({row[i] for i in ids if i in row}) for ids in id_lists]
    return _csr(columns, len(row))


def _csr(columns: list[list[int]], width: int) -> sp.csr_matrix:
    import scipy.sparse as sp

    indptr = np.r_[0, np.cumsum([len(c) for c in columns])].astype(np.int64)
    indices = np.fromiter((j for c in columns for j in c), dtype=np.int64, count=int(indptr[-1]))
    return sp.csr_matrix((np.ones(len(indices), dtype=np.float64), indices, indptr), shape=(len(columns), width))


def _jaccard(sets: sp.csr_matrix, q: np.ndarray, c: np.ndarray) -> np.ndarray:
    """(n_pairs,) |A ∩ B| / |A ∪ B| of the rows' sets; 0 when both are empty."""
    intersection = np.asarray(sets[q].multiply(sets[c]).sum(axis=1), dtype=np.float64).ravel()
    sizes = np.diff(sets.indptr).astype(np.float64)
    union = sizes[q] + sizes[c] - intersection
    return np.divide(intersection, union, out=np.zeros_like(intersection), where=union > 0)
