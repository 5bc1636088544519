"""Paper matching at three strengths: the same id, the same normalised title, near-duplicate text.

Near-duplicate text is MinHash LSH (the `datasketch` package's scheme and banding), computed in bulk:

- a paper's text is its title and abstract, Unicode-normalised (NFKC) and case-folded; its shingles are the
  word `SHINGLE_WORDS`-grams (a word: a run of letters and digits), each hashed to 32 bits;
- each paper's signature is what `datasketch.MinHash(num_perm, seed, scheme="affine32")` computes from those
  hashes with `update_batch` (`test_near_duplicates.py` checks they agree), for all papers at once in numpy;
- candidate pairs are the pairs that share a band of the signature, with the bands and rows
  `datasketch.MinHashLSH(threshold, num_perm)` chooses (the test checks the pairs are the ones its index finds);
- a candidate is a near-duplicate when the exact Jaccard similarity of the two shingle sets is at least the
  threshold: no pair below it is reported (LSH may miss a pair just above it; see docs/audit.md).

Texts with fewer than `min_shingles` shingles are too short to call near-duplicates and are not matched.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from scidocs_eval.extras import require
from scidocs_eval.lazy_modules import lazy_module

np = lazy_module("numpy", __name__)

NEEDED_BY = "MinHash near-duplicate matching (audit, data build)"
SHINGLE_WORDS = 3
MIN_SHINGLES = 8
DEFAULT_THRESHOLD = 0.5
DEFAULT_NUM_PERM = 128
DEFAULT_SEED = 1
MIN_TITLE_WORDS = 3
"""Normalised titles with fewer words ("Introduction", "Editorial") are not matched by title."""
LSH_WEIGHTS = (0.2, 0.8)
"""datasketch's weights of false positives and false negatives when it chooses bands and rows: every candidate
is checked by its exact Jaccard, so a false candidate costs only time and a missed pair is the error to avoid."""
_CHUNK_BYTES = 4 << 20
_TITLE_JUNK = re.compile(r"[^\w\s]|_", re.UNICODE)
_WORD_BYTES = (range(ord("0"), ord("9") + 1), range(ord("a"), ord("z") + 1), range(0x80, 256))
"""The bytes of a word (UTF-8, after normalisation); the others separate words."""
_BASE = 0x100000001B3
_BASE_INVERSE = pow(0x100000001B3, -1, 1 << 64)
_SHINGLE_MULTIPLIERS = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
                        0xFF51AFD7ED558CCD)
"""uint64 multipliers (plain ints here, so that importing this module does not import numpy)."""
_FMIX32 = (16, 0x85EBCA6B, 13, 0xC2B2AE35, 16)


def normalise_title(title: str) -> str:
    """Case, punctuation, whitespace and Unicode normalised: NFKC, case-folded, punctuation and symbols dropped,
    whitespace runs made one space. "" for a title of fewer than MIN_TITLE_WORDS words."""
    text = _TITLE_JUNK.sub(" ", unicodedata.normalize("NFKC", title).casefold())
    words = text.split()
    return " ".join(words) if len(words) >= MIN_TITLE_WORDS else ""


def normalise_text(title: str, abstract: str) -> str:
    """The text shingled: title and abstract, NFKC-normalised and case-folded."""
    return unicodedata.normalize("NFKC", f"{title} {abstract}").casefold().replace("\x00", " ")


def _mix64(values: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser (an avalanching bijection on uint64)."""
    values = values ^ (values >> np.uint64(30))
    values = values * np.uint64(0xBF58476D1CE4E5B9)
    values = values ^ (values >> np.uint64(27))
    values = values * np.uint64(0x94D049BB133111EB)
    return values ^ (values >> np.uint64(31))


def fmix32(values: np.ndarray) -> np.ndarray:
    """MurmurHash3's 32-bit finaliser, which datasketch's affine32 scheme applies to every input hash."""
    s1, m1, s2, m2, s3 = _FMIX32
    values = values ^ (values >> np.uint32(s1))
    values = values * np.uint32(m1)
    values = values ^ (values >> np.uint32(s2))
    values = values * np.uint32(m2)
    return values ^ (values >> np.uint32(s3))


@dataclass
class Shingles:
    """The shingle hashes of n texts: text i's are `hashes[offsets[i]:offsets[i + 1]]` (uint32, with repeats)."""

    hashes: np.ndarray
    offsets: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def counts(self) -> np.ndarray:
        return np.diff(self.offsets)

    def distinct(self, index: int) -> np.ndarray:
        return np.unique(self.hashes[self.offsets[index]:self.offsets[index + 1]])


def _chunks(texts: Sequence[str]) -> Iterator[list[str]]:
    chunk: list[str] = []
    size = 0
    for text in texts:
        chunk.append(text)
        size += len(text) + 1
        if size >= _CHUNK_BYTES:
            yield chunk
            chunk, size = [], 0
    yield chunk


_POWERS: list[np.ndarray] = []


def _powers(length: int) -> tuple[np.ndarray, np.ndarray]:
    """(BASE^j, BASE^−j) for j < length, uint64 (mod 2^64); computed once and grown when a chunk needs more."""
    if not _POWERS or len(_POWERS[0]) < length:
        size = max(length, 2 * _CHUNK_BYTES)
        tables = []
        for base in (_BASE, _BASE_INVERSE):
            table = np.full(size, np.uint64(base), dtype=np.uint64)
            table[0] = 1
            tables.append(np.cumprod(table))
        _POWERS[:] = tables
    return _POWERS[0], _POWERS[1]


@functools.cache
def _word_byte() -> np.ndarray:
    """(256,) bool: whether each byte is part of a word (`_WORD_BYTES`)."""
    table = np.zeros(256, dtype=bool)
    for word_bytes in _WORD_BYTES:
        table[word_bytes.start:word_bytes.stop] = True
    return table


def _chunk_shingles(texts: list[str], width: int) -> tuple[np.ndarray, np.ndarray]:
    """(shingle hashes, shingles per text) of one chunk of normalised texts."""
    data = np.frombuffer(("\x00".join(texts) + "\x00").encode("utf-8"), dtype=np.uint8)
    edges = np.diff(_word_byte()[data].view(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    # a word's hash: Σ byte_j · BASE^(j − start), from prefix sums of byte_j · BASE^j (uint64 arithmetic wraps)
    powers, inverse = _powers(len(data))
    prefix = np.concatenate(([np.uint64(0)], np.cumsum(data * powers[:len(data)])))
    words = _mix64((prefix[ends] - prefix[starts]) * inverse[starts] + (ends - starts).astype(np.uint64))
    text_of_word = np.searchsorted(np.flatnonzero(data == 0), starts)
    n_words = len(words) - width + 1
    if n_words <= 0:
        return np.zeros(0, dtype=np.uint32), np.zeros(len(texts), dtype=np.int64)
    combined = np.zeros(n_words, dtype=np.uint64)
    for position in range(width):
        multiplier = np.uint64(_SHINGLE_MULTIPLIERS[position % len(_SHINGLE_MULTIPLIERS)])
        combined += words[position:position + n_words] * multiplier
    same_text = text_of_word[:n_words] == text_of_word[width - 1:]
    hashes = (_mix64(combined[same_text]) >> np.uint64(32)).astype(np.uint32)
    counts = np.bincount(text_of_word[:n_words][same_text], minlength=len(texts))
    return hashes, counts.astype(np.int64)


def shingle(texts: Sequence[str], width: int = SHINGLE_WORDS, threads: int = 2) -> Shingles:
    """The word `width`-gram hashes of every (already normalised) text, computed in chunks on `threads`."""
    with ThreadPoolExecutor(max_workers=threads) as pool:
        parts = list(pool.map(lambda chunk: _chunk_shingles(chunk, width), _chunks(texts)))
    hashes = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, dtype=np.uint32)
    counts = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
    return Shingles(hashes, np.concatenate(([0], np.cumsum(counts))).astype(np.int64))


def permutations(num_perm: int, seed: int) -> np.ndarray:
    """(2, num_perm) uint32: datasketch's affine32 permutations (a, b) for `num_perm` and `seed`."""
    MinHash = require("datasketch", NEEDED_BY).MinHash  # noqa: N806 (a class)

    return np.asarray(MinHash(num_perm=num_perm, seed=seed, scheme="affine32").permutations, dtype=np.uint32)


def signatures(shingles: Shingles, num_perm: int, seed: int, threads: int = 2) -> np.ndarray:
    """(n, num_perm) uint32 MinHash signatures, as datasketch's MinHash (scheme "affine32") computes them from each
    text's shingle hashes; a text without shingles gets datasketch's empty value (all 2^32 − 1)."""
    a, b = permutations(num_perm, seed)
    n = len(shingles)
    result = np.full((n, num_perm), np.iinfo(np.uint32).max, dtype=np.uint32)
    counts = shingles.counts()
    bounds = list(range(0, n, 2_000)) + [n]

    def fill(span: tuple[int, int]) -> None:
        low, high = span
        start, stop = shingles.offsets[low], shingles.offsets[high]
        if stop == start:
            return
        mixed = fmix32(shingles.hashes[start:stop])
        nonempty = np.flatnonzero(counts[low:high]) + low
        firsts = shingles.offsets[nonempty] - start
        permuted = np.empty_like(mixed)
        for p in range(num_perm):
            np.multiply(mixed, a[p], out=permuted)
            permuted += b[p]
            result[nonempty, p] = np.minimum.reduceat(permuted, firsts)

    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(fill, zip(bounds[:-1], bounds[1:])))
    return result


def lsh_bands(threshold: float, num_perm: int) -> tuple[int, int]:
    """(bands, rows per band) that `datasketch.MinHashLSH(threshold, num_perm, weights=LSH_WEIGHTS)` uses."""
    MinHashLSH = require("datasketch", NEEDED_BY).MinHashLSH  # noqa: N806 (a class)

    index = MinHashLSH(threshold=threshold, num_perm=num_perm, weights=LSH_WEIGHTS)
    return index.b, index.r


def _band_keys(signature: np.ndarray, band: int, rows: int) -> np.ndarray:
    """One uint64 per signature for its `band`: its rows packed two by two into 64 bits, combined and mixed (a
    collision only adds a candidate, which the exact Jaccard check then drops)."""
    block = signature[:, band * rows:(band + 1) * rows].astype(np.uint64)
    key = np.zeros(len(signature), dtype=np.uint64)
    for row in range(0, rows, 2):
        packed = block[:, row] << np.uint64(32)
        if row + 1 < rows:
            packed |= block[:, row + 1]
        key = key * np.uint64(_SHINGLE_MULTIPLIERS[(row // 2) % len(_SHINGLE_MULTIPLIERS)]) ^ packed
    return _mix64(key)


def candidate_pairs(left: np.ndarray, right: np.ndarray, bands: int, rows: int) -> set[tuple[int, int]]:
    """(i, j) for every row i of `left` and j of `right` whose signatures agree on all rows of some band."""
    pairs: set[tuple[int, int]] = set()
    for band in range(bands):
        left_keys, right_keys = _band_keys(left, band, rows), _band_keys(right, band, rows)
        left_order, right_order = np.argsort(left_keys, kind="stable"), np.argsort(right_keys, kind="stable")
        left_sorted, right_sorted = left_keys[left_order], right_keys[right_order]
        if not len(left_sorted) or not len(right_sorted):
            continue
        position = np.minimum(np.searchsorted(right_sorted, left_sorted), len(right_sorted) - 1)
        shared = np.unique(left_sorted[right_sorted[position] == left_sorted])
        if not len(shared):
            continue
        left_lo, left_hi = np.searchsorted(left_sorted, shared), np.searchsorted(left_sorted, shared, "right")
        right_lo, right_hi = np.searchsorted(right_sorted, shared), np.searchsorted(right_sorted, shared, "right")
        for i0, i1, j0, j1 in zip(left_lo, left_hi, right_lo, right_hi):
            pairs.update((int(i), int(j)) for i in left_order[i0:i1] for j in right_order[j0:j1])
    return pairs


def jaccard(left: np.ndarray, right: np.ndarray) -> float:
    """Jaccard similarity of two sets of distinct hashes."""
    shared = len(np.intersect1d(left, right, assume_unique=True))
    return shared / (len(left) + len(right) - shared) if len(left) + len(right) else 0.0


@dataclass(frozen=True)
class NearDuplicate:
    """Text `left` of the first collection and text `right` of the second, with their exact Jaccard similarity."""

    left: int
    right: int
    jaccard: float


def near_duplicates(left_texts: Sequence[str], right_texts: Sequence[str], threshold: float, num_perm: int,
                    seed: int, min_shingles: int = MIN_SHINGLES, threads: int = 2) -> list[NearDuplicate]:
    """Every pair (left text, right text) of near-duplicates (see the module docstring), sorted by (left, right).

    Both collections hold normalised texts (`normalise_text`); texts under `min_shingles` shingles are left out.
    """
    bands, rows = lsh_bands(threshold, num_perm)
    left, right = shingle(left_texts, threads=threads), shingle(right_texts, threads=threads)
    left_kept = np.flatnonzero(left.counts() >= min_shingles)
    right_kept = np.flatnonzero(right.counts() >= min_shingles)
    left_signatures = signatures(left, num_perm, seed, threads)[left_kept]
    right_signatures = signatures(right, num_perm, seed, threads)[right_kept]
    found = []
    left_sets: dict[int, np.ndarray] = {}
    for i, j in sorted(candidate_pairs(left_signatures, right_signatures, bands, rows)):
        li, rj = int(left_kept[i]), int(right_kept[j])
        if li not in left_sets:
            left_sets[li] = left.distinct(li)
        similarity = jaccard(left_sets[li], right.distinct(rj))
        if similarity >= threshold:
            found.append(NearDuplicate(li, rj, similarity))
    return found


@dataclass(frozen=True)
class PaperMatch:
    """Paper `left` of one collection matches paper `right` of another at `strength` ("title" or "text")."""

    left: str
    right: str
    strength: str
    jaccard: float | None = None


def title_and_text_matches(left: Mapping[str, tuple[str, str]], right: Mapping[str, tuple[str, str]],
                           threshold: float, num_perm: int, seed: int) -> list[PaperMatch]:
    """Every pair of papers (id -> (title, abstract)) of `left` and `right` with the same normalised title, then
    every near-duplicate pair (see the module docstring)."""
    titles: dict[str, list[str]] = {}
    for right_id, (title, _) in right.items():
        if key := normalise_title(title):
            titles.setdefault(key, []).append(right_id)
    found = [PaperMatch(left_id, right_id, "title") for left_id, (title, _) in left.items()
             for right_id in titles.get(normalise_title(title) or "\x00", ())]
    left_ids, right_ids = list(left), list(right)
    pairs = near_duplicates([normalise_text(*left[i]) for i in left_ids], [normalise_text(*right[i])
                                                                           for i in right_ids],
                            threshold, num_perm, seed)
    found += [PaperMatch(left_ids[p.left], right_ids[p.right], "text", p.jaccard) for p in pairs]
    return found
