"""The numpy search engine (`evaluators/retrieval_search.py`) keeps exactly the top k by (score, document id).

Each case compares the blocked engine with a straightforward reference (the whole score matrix, each row sorted by
score then document id, both descending) on vectors whose scores tie a lot: entries in {-1, 0, 1} with four
nonzeros, so every product, norm and unit vector is exact in float32 and a tie is a tie in any blocking. Block
sizes are forced small, so a search runs many blocks, merges and thresholds.
"""

from __future__ import annotations

import numpy as np
import pytest

from scidocs_eval.evaluators.retrieval_search import block_shape, exact_top_k, prepare, search


def _tied_vectors(rng: np.random.Generator, rows: int, dim: int = 6) -> np.ndarray:
    vectors = np.zeros((rows, dim), dtype=np.float32)
    for row in vectors:
        row[rng.choice(dim, 4, replace=False)] = rng.choice([-1.0, 1.0], 4)
    return vectors


def _reference(queries: np.ndarray, documents: np.ndarray, ids: list[str], k: int,
               similarity: str) -> tuple[np.ndarray, np.ndarray]:
    queries, documents = prepare(queries, similarity), prepare(documents, similarity)
    scores = queries @ documents.T
    if similarity == "neg-l2":
        squared = (queries ** 2).sum(axis=1)[:, None] + (documents ** 2).sum(axis=1)[None, :]
        scores = -np.sqrt(np.maximum(squared - 2 * scores, 0))
    rank = np.argsort(np.argsort(np.asarray(ids, dtype=object), kind="stable"))
    order = np.lexsort((np.broadcast_to(-rank, scores.shape), -scores), axis=1)[:, :k]
    return order, np.take_along_axis(scores, order, axis=1)


@pytest.mark.parametrize("similarity", ["cosine", "dot", "neg-l2"])
@pytest.mark.parametrize("k", [1, 7, 64, 300, 1000])
@pytest.mark.parametrize("block_bytes", [1, 4096, 1 << 23])
def test_blocked_search_keeps_the_reference_top_k_with_ties(similarity: str, k: int, block_bytes: int) -> None:
    rng = np.random.default_rng(k + block_bytes)
    queries, documents = _tied_vectors(rng, 37), _tied_vectors(rng, 300)
    ids = [f"d{i}" for i in rng.permutation(300)]  # the id order is not the row order
    indices, scores = _reference(queries, documents, ids, k, similarity)
    found = search(queries, documents, ids, k, similarity)
    np.testing.assert_array_equal(found.indices, indices)
    np.testing.assert_array_equal(found.scores, scores)
    rank = np.argsort(np.argsort(np.asarray(ids, dtype=object), kind="stable"))
    small = exact_top_k(queries, documents, rank, k, similarity,
                        block_bytes=block_bytes, memory_bytes=block_bytes * 64)
    np.testing.assert_array_equal(small.indices, indices)
    np.testing.assert_array_equal(small.scores, scores)


def test_documents_in_worst_order_and_all_equal_scores() -> None:
    """Each block better than the last (every score passes every threshold), and one score for every document."""
    rng = np.random.default_rng(1)
    documents = np.repeat(np.arange(1, 401, dtype=np.float32)[:, None], 2, axis=1)
    queries = rng.integers(1, 4, (5, 2)).astype(np.float32)
    ids = [f"d{i:04d}" for i in rng.permutation(400)]
    rank = np.argsort(np.argsort(np.asarray(ids, dtype=object)))
    for vectors in (documents, np.ones_like(documents)):
        indices, scores = _reference(queries, vectors, ids, 50, "dot")
        found = exact_top_k(queries, vectors, rank, 50, "dot", block_bytes=4 * 5 * 60)
        np.testing.assert_array_equal(found.indices, indices)
        np.testing.assert_array_equal(found.scores, scores)


def test_block_shape_keeps_to_the_memory_limit() -> None:
    queries, documents = block_shape(1000, 1_000_000, 1000)
    assert (queries, documents) == (1000, 8388)
    queries, documents = block_shape(1000, 1_000_000, 100_000, memory_bytes=1 << 28)
    assert documents == 100_000 and queries * 12 * (100_000 + documents) <= 1 << 28
    assert block_shape(3, 10, 20) == (3, 20)


@pytest.mark.parametrize("similarity", ["cosine", "dot", "neg-l2"])
def test_any_number_of_threads_keeps_the_same_top_k(similarity: str) -> None:
    """Threads share each block (a slice of its documents prepared and a slice of the queries scored by each):
    the result is the reference's whatever their number, with more threads than queries too."""
    rng = np.random.default_rng(5)
    queries, documents = _tied_vectors(rng, 23), _tied_vectors(rng, 400)
    ids = [f"d{i}" for i in rng.permutation(400)]
    rank = np.argsort(np.argsort(np.asarray(ids, dtype=object), kind="stable"))
    indices, scores = _reference(queries, documents, ids, 40, similarity)
    for threads in (1, 2, 3, 64):
        found = exact_top_k(queries, documents, rank, 40, similarity, block_bytes=4 * 23 * 50, threads=threads)
        np.testing.assert_array_equal(found.indices, indices)
        np.testing.assert_array_equal(found.scores, scores)


@pytest.mark.parametrize("similarity", ["cosine", "dot", "neg-l2"])
def test_unaligned_and_float64_documents_are_prepared_as_a_float32_copy_would_be(similarity: str) -> None:
    """A block read from an unaligned memory map is normalised from it, and float64 rows are cast first: the same
    scores, bit for bit, as from an aligned float32 copy of the same rows."""
    rng = np.random.default_rng(6)
    queries = rng.standard_normal((9, 16), dtype=np.float32)
    documents = rng.standard_normal((500, 16), dtype=np.float32)
    raw = np.empty(documents.nbytes + 1, dtype=np.uint8)
    unaligned = raw[1:].view(np.float32).reshape(documents.shape)
    unaligned[...] = documents
    assert not unaligned.flags.aligned
    rank = np.arange(500)
    expected = exact_top_k(queries, documents, rank, 30, similarity, block_bytes=4 * 9 * 64)
    for variant in (unaligned, documents.astype(np.float64)):
        found = exact_top_k(queries, variant, rank, 30, similarity, block_bytes=4 * 9 * 64)
        np.testing.assert_array_equal(found.indices, expected.indices)
        np.testing.assert_array_equal(found.scores, expected.scores)


def test_cosine_preparation_is_numpy_s_normalisation_bit_for_bit() -> None:
    """`prepare` takes `np.linalg.norm`'s steps into reused buffers: the same bits as dividing by its result."""
    vectors = np.random.default_rng(7).standard_normal((300, 768), dtype=np.float32) * 3
    vectors[5] = 0  # a zero row: divided by the 1e-12 floor, as torch's normalize
    expected = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), np.float32(1e-12))
    np.testing.assert_array_equal(prepare(vectors, "cosine"), expected)
    np.testing.assert_array_equal(prepare(vectors[1:], "cosine"), expected[1:])
    np.testing.assert_array_equal(prepare(vectors[:257], "cosine"), expected[:257])  # a last chunk of one row
