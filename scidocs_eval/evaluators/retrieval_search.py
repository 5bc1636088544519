"""Top-k search of a corpus by embedding similarity, in bounded memory, ranked as MTEB ranks.

Similarities are MTEB's: cosine (each vector scaled to unit length, then dot products), dot product, or the
negative Euclidean distance, all in float32 as MTEB computes them from float32 embeddings. The top k of each
query are the k largest by (score, document id): a document tied with the k-th on score is kept when its id is
larger, the order trec_eval (and so MTEB's metrics) breaks ties in.

Engines: "numpy" multiplies blocks of queries by blocks of documents (memory: one block of scores, set by
`block_bytes`, plus k per query), exact. "faiss" uses a flat (exact) FAISS index; a query whose k-th and
(k+1)-th scores tie is searched again by numpy, so the kept set is the same as numpy's. "faiss-hnsw" and
"faiss-ivf" are approximate (opt-in): their recall against the exact top k is measured on a sample of queries
and reported beside the scores.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scidocs_eval.extras import require

SIMILARITIES = ("cosine", "dot", "neg-l2")
ENGINES = ("numpy", "faiss", "faiss-hnsw", "faiss-ivf")
APPROXIMATE_ENGINES = ("faiss-hnsw", "faiss-ivf")
RECALL_SAMPLE = 100
"""queries on which an approximate engine's recall against the exact top k is measured."""


@dataclass
class SearchResult:
    """`indices[i]` (document rows) and `scores[i]` of query i's top k, best first (-1 / -inf pad a short row)."""

    indices: np.ndarray
    scores: np.ndarray
    details: dict[str, Any] = field(default_factory=dict)


def prepare(vectors: np.ndarray, similarity: str) -> np.ndarray:
    """float32 vectors as the similarity uses them (unit length for cosine, as torch's normalize: eps 1e-12)."""
    if similarity not in SIMILARITIES:
        raise ValueError(f"similarity must be one of {', '.join(SIMILARITIES)}, not {similarity!r}")
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if similarity == "cosine":
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = vectors / np.maximum(norms, np.float32(1e-12))
    return vectors


def similarity_matrix(queries: np.ndarray, documents: np.ndarray, similarity: str,
                      document_norms: np.ndarray | None = None) -> np.ndarray:
    """(n_queries, n_documents) float32 scores of prepared vectors (`prepare`)."""
    products = queries @ documents.T
    if similarity != "neg-l2":
        return products
    squared_q = np.einsum("ij,ij->i", queries, queries)[:, None]
    squared_d = (document_norms if document_norms is not None else np.einsum("ij,ij->i", documents, documents))
    return -np.sqrt(np.maximum(squared_q + squared_d[None, :] - 2 * products, 0, dtype=np.float32))


def _keep_top(scores: np.ndarray, indices: np.ndarray, id_rank: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the k largest by (score, id_rank), sorted best first; `indices` are document rows."""
    if scores.shape[1] > k:
        part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        kth = np.take_along_axis(scores, part, axis=1).min(axis=1)
        tied_rows = np.nonzero((scores >= kth[:, None]).sum(axis=1) > k)[0]
        top_scores = np.take_along_axis(scores, part, axis=1)
        top_indices = np.take_along_axis(indices, part, axis=1)
        for row in tied_rows:  # rare: ties at the k-th score, settled by document id as trec_eval does
            order = np.lexsort((-id_rank[indices[row]], -scores[row]))[:k]
            top_scores[row], top_indices[row] = scores[row, order], indices[row, order]
        scores, indices = top_scores, top_indices
    valid = indices >= 0
    ranks = np.where(valid, id_rank[np.where(valid, indices, 0)], -1)
    order = np.lexsort((-ranks, -scores), axis=1)
    return np.take_along_axis(scores, order, axis=1), np.take_along_axis(indices, order, axis=1)


def exact_top_k(queries: np.ndarray, documents: np.ndarray, id_rank: np.ndarray, k: int, similarity: str,
                block_bytes: int = 1 << 26) -> SearchResult:
    """Exact top k of prepared vectors by blocked matrix products; at most `block_bytes` of scores at a time."""
    n_queries, n_documents = len(queries), len(documents)
    k = min(k, n_documents)
    norms = np.einsum("ij,ij->i", documents, documents) if similarity == "neg-l2" else None
    query_block = max(1, min(n_queries, 256))
    document_block = max(k, min(n_documents, block_bytes // (4 * query_block)))
    all_scores = np.empty((n_queries, k), dtype=np.float32)
    all_indices = np.empty((n_queries, k), dtype=np.int64)
    for q_start in range(0, n_queries, query_block):
        q_block = queries[q_start:q_start + query_block]
        best_scores = np.full((len(q_block), 0), -np.inf, dtype=np.float32)
        best_indices = np.empty((len(q_block), 0), dtype=np.int64)
        for d_start in range(0, n_documents, document_block):
            d_stop = min(n_documents, d_start + document_block)
            block_norms = norms[d_start:d_stop] if norms is not None else None
            scores = similarity_matrix(q_block, documents[d_start:d_stop], similarity, block_norms)
            indices = np.broadcast_to(np.arange(d_start, d_stop, dtype=np.int64), scores.shape)
            block_scores, block_indices = _keep_top(scores, indices, id_rank, k)
            best_scores, best_indices = _keep_top(np.concatenate([best_scores, block_scores], axis=1),
                                                  np.concatenate([best_indices, block_indices], axis=1), id_rank, k)
        all_scores[q_start:q_start + len(q_block)] = best_scores
        all_indices[q_start:q_start + len(q_block)] = best_indices
    return SearchResult(all_indices, all_scores, {"engine": "numpy", "exact": True})


def _faiss_index(documents: np.ndarray, similarity: str, engine: str) -> Any:
    faiss = require("faiss", f"the {engine} search engine")

    metric = faiss.METRIC_L2 if similarity == "neg-l2" else faiss.METRIC_INNER_PRODUCT
    dim = documents.shape[1]
    if engine == "faiss":
        index = faiss.IndexFlat(dim, metric)
    elif engine == "faiss-hnsw":
        index = faiss.IndexHNSWFlat(dim, 32, metric)
        index.hnsw.efSearch = 256
    else:
        lists = max(1, int(np.sqrt(len(documents))))
        index = faiss.IndexIVFFlat(faiss.IndexFlat(dim, metric), dim, lists, metric)
        index.train(documents)
        index.nprobe = max(1, lists // 8)
    index.add(documents)
    return index


def faiss_top_k(queries: np.ndarray, documents: np.ndarray, id_rank: np.ndarray, k: int, similarity: str,
                engine: str = "faiss", seed: int = 0) -> SearchResult:
    """Top k by a FAISS index (flat: exact, ties at the k-th score re-searched by numpy; others: approximate,
    with their recall@k against the exact search measured on `RECALL_SAMPLE` queries)."""
    k = min(k, len(documents))
    index = _faiss_index(documents, similarity, engine)
    depth = min(k + 1, len(documents))
    raw, indices = index.search(queries, depth)
    scores = -np.sqrt(np.maximum(raw, 0)) if similarity == "neg-l2" else raw
    details: dict[str, Any] = {"engine": engine, "exact": engine == "faiss"}
    if engine == "faiss":
        tied = np.nonzero(scores[:, k - 1] == scores[:, -1])[0] if depth > k else np.empty(0, dtype=np.int64)
        scores, indices = _keep_top(scores[:, :k], indices[:, :k].astype(np.int64), id_rank, k)
        if len(tied):
            redo = exact_top_k(queries[tied], documents, id_rank, k, similarity)
            scores[tied], indices[tied] = redo.scores, redo.indices
        details["requeried_for_ties"] = len(tied)
        return SearchResult(indices, scores, details)
    scores, indices = _keep_top(scores[:, :k], indices[:, :k].astype(np.int64), id_rank, k)
    sample = np.random.default_rng(seed).choice(len(queries), min(RECALL_SAMPLE, len(queries)), replace=False)
    exact = exact_top_k(queries[sample], documents, id_rank, k, similarity)
    found = [len(set(indices[row]) & set(exact.indices[i])) / k for i, row in enumerate(sample)]
    details.update(recall_at_k=float(np.mean(found)), recall_sample=len(sample), k=k)
    return SearchResult(indices, scores, details)


def search(queries: np.ndarray, documents: np.ndarray, document_ids: list[str], k: int, similarity: str = "cosine",
           engine: str = "numpy") -> SearchResult:
    """Top k documents of each query (rows of `documents`, whose ids break ties); see the module docstring."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    queries, documents = prepare(queries, similarity), prepare(documents, similarity)
    id_rank = np.empty(len(document_ids), dtype=np.int64)
    id_rank[np.argsort(np.asarray(document_ids, dtype=object), kind="stable")] = np.arange(len(document_ids))
    if engine == "numpy":
        return exact_top_k(queries, documents, id_rank, k, similarity)
    return faiss_top_k(queries, documents, id_rank, k, similarity, engine)
