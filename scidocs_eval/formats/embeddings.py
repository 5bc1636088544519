"""The embedding store shared by every task: one matrix, one id index.

An embeddings file is JSON lines, one paper per line::

    {"paper_id": "abc", "embedding": [0.1, -0.2, ...]}

(`doc_id` is accepted for the key, as the successor suite writes it). A later line with the same id replaces an
earlier one, as in the official code; the number of such repeats is kept. ``"embedding": []`` is a deliberate
"no embedding" (the reference embedder writes it for papers without a title): the row stays zero and is
flagged, and each task applies the official rule for it.

A value that does not fit the matrix's dtype (above 3.4e38 for float32) is an error naming file, line and
paper, never an infinity. A gzip-compressed file (``.jsonl.gz``) is read as is. Ids repeated in the file and ids
with surrounding whitespace (which match no suite id) are reported as warnings.

Parsing a SciDocs-sized file takes seconds, so the parsed matrix is cached (`scidocs_eval.formats.embeddings_cache`:
keyed by the file's path, inode, size, modification and status-change times, checked on every hit) and a second
run on the same file loads it with `numpy.load`.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import logging
import os
from collections import Counter, deque
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import orjson
import pandas as pd

from scidocs_eval.errors import InputError
from scidocs_eval.formats.embeddings_cache import CacheEntry, ParsedEmbeddings, wait_for_cache_writes
from scidocs_eval.formats.embeddings_files import check_embeddings_file, is_gzip
from scidocs_eval.progress import progress_bar

PRESENT, EMPTY, MISSING = 0, 1, 2
"""Status codes returned by `EmbeddingStore.status`."""

_CHUNK_BYTES = 1 << 24
_PARALLEL_BYTES = 64 << 20
_MAX_WORKERS = 4
_NUMBER_BYTES = b"0123456789.eE+-, \t\r\n"
SHOWN_IDS = 5
"""how many ids a warning lists."""

log = logging.getLogger("scidocs_eval")


@dataclass
class EmbeddingStore:
    """Embeddings of many papers as one matrix.

    Attributes:
        ids: paper ids (strings), one per row of `matrix`.
        matrix: (n_papers, dim) array; rows of papers with an empty embedding are zero.
        empty: (n_papers,) bool, True where the file gave ``"embedding": []``.
        source: the file the store was read from, or None when built in memory.
        duplicates: how many lines repeated an id seen before (the later line won).
        sha256: hex digest of the file's bytes, or None when built in memory.
        repeated: the ids that more than one line gave.
    """

    ids: list[str]
    matrix: np.ndarray
    empty: np.ndarray
    source: str | None = None
    duplicates: int = 0
    sha256: str | None = None
    repeated: list[str] = field(default_factory=list)
    index: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.index = {paper_id: row for row, paper_id in enumerate(self.ids)}

    @property
    def dim(self) -> int:
        return int(self.matrix.shape[1])

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def padded_ids(self) -> list[str]:
        """Ids with leading or trailing whitespace (a suite's ids have none, so these match nothing)."""
        return [paper_id for paper_id in self.ids if paper_id != paper_id.strip()]

    def warn_about_ids(self) -> None:
        """Log a warning for repeated ids and for ids with surrounding whitespace, with examples."""
        where = self.source or "<memory>"
        if self.duplicates:
            log.warning("%s: %d line(s) repeat the id of an earlier line (the later line is used, as in the "
                        "official code): %s", where, self.duplicates, _examples(self.repeated))
        padded = self.padded_ids
        if padded:
            log.warning("%s: %d id(s) have leading or trailing whitespace and match no suite id: %s", where,
                        len(padded), _examples(padded))

    def __contains__(self, paper_id: object) -> bool:
        return paper_id in self.index

    def rows(self, ids: Sequence[str]) -> np.ndarray:
        """Row of each id, -1 where the id is absent; shape (len(ids),)."""
        index = self.index
        return np.fromiter((index.get(i, -1) for i in ids), dtype=np.int64, count=len(ids))

    def status(self, ids: Sequence[str]) -> np.ndarray:
        """PRESENT, EMPTY or MISSING for each id; shape (len(ids),), int8."""
        rows = self.rows(ids)
        codes = np.full(len(ids), MISSING, dtype=np.int8)
        found = rows >= 0
        codes[found] = np.where(self.empty[rows[found]], EMPTY, PRESENT)
        return codes

    def vectors(self, ids: Sequence[str], dtype: np.dtype | type = np.float32) -> np.ndarray:
        """(len(ids), dim) matrix; absent and empty embeddings give zero rows."""
        rows = self.rows(ids)
        out = np.zeros((len(ids), self.dim), dtype=dtype)
        found = rows >= 0
        out[found] = self.matrix[rows[found]]
        return out

    @classmethod
    def from_mapping(cls, embeddings: Mapping[str, Sequence[float] | np.ndarray],
                     dtype: np.dtype | type = np.float32) -> EmbeddingStore:
        """Build a store in memory from ``{paper_id: vector}``; an empty vector means "no embedding"."""
        builder = _StoreBuilder("<memory>", dtype)
        for line_number, (paper_id, vector) in enumerate(embeddings.items(), start=1):
            builder.add(str(paper_id), np.asarray(vector, dtype=np.float64), line_number)
        return builder.finish(sha256=None, source=None)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, cache: bool = True,
             dtype: np.dtype | type = np.float32, progress: bool = True) -> EmbeddingStore:
        """Read a JSON lines embeddings file (see the module docstring), using the parse cache if allowed."""
        path = Path(path)
        check_embeddings_file(path)
        dtype = np.dtype(dtype)
        entry = None
        if cache:
            try:
                entry = CacheEntry(path, dtype)
            except OSError as error:
                log.warning("embeddings parse cache unusable (%s); parsing without it", error)
        cached = entry.read() if entry is not None else None
        if cached is not None:
            store = cls(cached.ids, cached.matrix, cached.empty, source=str(path), duplicates=cached.duplicates,
                        sha256=cached.sha256, repeated=cached.repeated)
        else:
            store = _parse_file(path, dtype, progress)
            if entry is not None:
                entry.write_in_background(ParsedEmbeddings(store.ids, store.matrix, store.empty, store.repeated,
                                                           store.duplicates, str(store.sha256)))
        store.warn_about_ids()
        return store


class _StoreBuilder:
    """Accumulates validated vectors, a line or a block of lines at a time; later ids replace earlier ones."""

    def __init__(self, source: str, dtype: np.dtype | type):
        self.source = source
        self.dtype = np.dtype(dtype)
        self.ids: list[str] = []
        self.blocks: list[np.ndarray] = []
        self.empty: list[np.ndarray] = []
        self.pending: list[np.ndarray | None] = []
        self.dim: int | None = None
        self.dim_line: int | None = None

    def add(self, paper_id: str, vector: np.ndarray, line_number: int) -> None:
        """One line's vector (float64, shape (dim,) or (0,) for "no embedding"), fully validated."""
        if vector.ndim != 1:
            raise InputError(self.source, f"paper {paper_id!r}: embedding must be a flat list of numbers",
                             line_number)
        if vector.size:
            if not np.isfinite(vector).all():
                bad = int(np.flatnonzero(~np.isfinite(vector))[0])
                raise InputError(self.source, f"paper {paper_id!r}: embedding value {bad} is {vector[bad]} "
                                 "(NaN and infinity are not allowed)", line_number)
            _check_fits(self.source, paper_id, vector, self.dtype, line_number)
            if self.dim is None:
                self.dim, self.dim_line = vector.size, line_number
            elif vector.size != self.dim:
                raise InputError(self.source, f"paper {paper_id!r}: embedding has {vector.size} values, but "
                                 f"line {self.dim_line} set the dimension to {self.dim}", line_number)
        self.ids.append(paper_id)
        self.pending.append(vector if vector.size else None)

    def add_block(self, block: _DecodedBlock) -> bool:
        """A block decoded by `_decode_block`; False (nothing added) if its width contradicts the dimension."""
        filled = np.flatnonzero(~block.empty)
        if filled.size:
            width = block.matrix.shape[1]
            if self.dim is None:
                self.dim, self.dim_line = width, block.line_numbers[filled[0]]
            elif width != self.dim:
                return False
            self._flush()
            self.ids += block.ids
            self.blocks.append(block.matrix.astype(self.dtype, copy=False))
            self.empty.append(block.empty)
        else:
            self.ids += block.ids
            self.pending += [None] * len(block.ids)
        return True

    def _flush(self) -> None:
        """Turn the lines added one by one into a block (possible once the dimension is known)."""
        if not self.pending or self.dim is None:
            return
        block = np.zeros((len(self.pending), self.dim), dtype=self.dtype)
        empty = np.zeros(len(self.pending), dtype=bool)
        for row, vector in enumerate(self.pending):
            if vector is None:
                empty[row] = True
            else:
                block[row] = vector
        self.blocks.append(block)
        self.empty.append(empty)
        self.pending = []

    def finish(self, sha256: str | None, source: str | None) -> EmbeddingStore:
        if not self.ids:
            raise InputError(self.source, "no embeddings in file (it is empty)")
        if self.dim is None:
            raise InputError(self.source, "every embedding in the file is empty, so there is no dimension")
        self._flush()
        last_line_of = {}
        for line, paper_id in enumerate(self.ids):
            last_line_of[paper_id] = line
        rows = np.fromiter(last_line_of.values(), dtype=np.int64, count=len(last_line_of))
        every_line = np.concatenate(self.blocks) if len(self.blocks) > 1 else self.blocks[0]
        matrix = every_line if len(rows) == len(every_line) else every_line[rows]
        empty = np.concatenate(self.empty)[rows]
        repeated = [] if len(rows) == len(self.ids) else \
            [paper_id for paper_id, count in Counter(self.ids).items() if count > 1]
        return EmbeddingStore(list(last_line_of), matrix, empty, source=source,
                              duplicates=len(self.ids) - len(rows), sha256=sha256, repeated=repeated)


def _check_fits(source: str, paper_id: str, vector: np.ndarray, dtype: np.dtype, line_number: int) -> None:
    """An error when a finite float64 value of `vector` would become infinite in `dtype`."""
    with np.errstate(over="ignore"):
        overflows = ~np.isfinite(vector.astype(dtype))
    if overflows.any():
        bad = int(np.flatnonzero(overflows)[0])
        raise InputError(source, f"paper {paper_id!r}: embedding value {bad} is {vector[bad]}, beyond the largest "
                         f"{dtype.name} ({float(np.finfo(dtype).max):.7g}); scale the vectors, or read them with "
                         "--dtype float64", line_number)


def _examples(ids: list[str]) -> str:
    more = f" (and {len(ids) - SHOWN_IDS} more)" if len(ids) > SHOWN_IDS else ""
    return ", ".join(repr(paper_id) for paper_id in ids[:SHOWN_IDS]) + more


def _record_id(path: Path, record: object, line_number: int) -> tuple[str, object]:
    """The paper id of a decoded line and its 'embedding' value, after checking the object's shape."""
    if not isinstance(record, dict):
        raise InputError(path, f"expected a JSON object, got {type(record).__name__}", line_number)
    paper_id = record.get("paper_id", record.get("doc_id"))
    if paper_id is None:
        raise InputError(path, "missing key 'paper_id' (or 'doc_id')", line_number)
    if isinstance(paper_id, bool) or not isinstance(paper_id, (str, int)):
        raise InputError(path, f"paper id must be a string, got {paper_id!r}", line_number)
    paper_id = str(paper_id)
    if "embedding" not in record:
        raise InputError(path, f"paper {paper_id!r}: missing key 'embedding'", line_number)
    values = record["embedding"]
    if not isinstance(values, list):
        raise InputError(path, f"paper {paper_id!r}: 'embedding' must be a list, got "
                         f"{type(values).__name__}", line_number)
    return paper_id, values


def _decode_line(path: Path, raw: bytes, line_number: int) -> tuple[str, np.ndarray]:
    try:
        record = orjson.loads(raw)
    except orjson.JSONDecodeError:
        record = _decode_nonstandard(path, raw, line_number)
    paper_id, values = _record_id(path, record, line_number)
    try:
        vector = np.asarray(values) if values else np.zeros(0)
    except ValueError:
        raise InputError(path, f"paper {paper_id!r}: embedding must be a flat list of numbers", line_number) from None
    # numpy silently turns true/false into 1.0/0.0 in a list of floats; look for them only when the line could hold one
    has_bool = (b"true" in raw or b"false" in raw) and any(isinstance(v, bool) for v in values)
    if vector.dtype.kind not in "iuf" or has_bool:
        bad = next((v for v in values if isinstance(v, bool) or not isinstance(v, (int, float))), values[0])
        raise InputError(path, f"paper {paper_id!r}: embedding has a non-numeric value {bad!r}", line_number)
    return paper_id, vector.astype(np.float64, copy=False)


@dataclass
class _DecodedBlock:
    """Lines decoded together: ids, (n_lines, dim) float32 rows (zero where empty) and the empty mask."""

    line_numbers: list[int]
    ids: list[str]
    matrix: np.ndarray
    empty: np.ndarray


def _decode_block(path: Path, chunk: bytes) -> tuple[int, _DecodedBlock | None]:
    """Decode the lines of `chunk` at once: the number lists go through pandas' C CSV parser in one call.

    Line numbers count from 0 at the chunk's first line (the caller shifts them: a worker does not know where
    its chunk starts). Returns the chunk's number of lines and the block, or None for the block whenever a
    line is not plainly well formed
    (anything but digits, signs, dots, exponents and commas in a list, a nested list, a non-finite or missing
    value, ragged lengths, a bad key): the caller then decodes the lines one by one, which gives the precise error.
    Runs in worker processes, so it raises nothing.
    """
    pieces = _split_lines(chunk)
    lines = [(i, raw) for i, raw in enumerate(pieces) if raw.strip()]
    skeletons, bodies = [], []
    for _, raw in lines:
        key = raw.find(b'"embedding"')
        opening = raw.find(b"[", key)
        closing = raw.find(b"]", opening)
        if key < 0 or opening < 0 or closing < 0:
            return len(pieces), None
        skeletons.append(raw[: opening + 1] + raw[closing:])
        bodies.append(raw[opening + 1 : closing].strip())
    empty = np.array([not body for body in bodies], dtype=bool)
    filled = [body for body in bodies if body]
    joined = b"\n".join(filled)
    if joined.translate(None, _NUMBER_BYTES):
        return len(pieces), None
    values = np.zeros((len(filled), 0), dtype=np.float32)
    if filled:
        try:
            values = pd.read_csv(io.BytesIO(joined), header=None, dtype=np.float64, engine="c").to_numpy()
        except (ValueError, pd.errors.ParserError):
            return len(pieces), None
        if values.shape[0] != len(filled):
            return len(pieces), None
    matrix = np.zeros((len(lines), values.shape[1]), dtype=np.float32)
    with np.errstate(over="ignore"):
        matrix[~empty] = values
    if not np.isfinite(matrix).all():  # a non-finite value, or one beyond float32's range
        return len(pieces), None
    try:
        ids = [_record_id(path, orjson.loads(skeleton), line)[0] for (line, _), skeleton in zip(lines, skeletons)]
    except (orjson.JSONDecodeError, InputError):
        return len(pieces), None
    return len(pieces), _DecodedBlock([line for line, _ in lines], ids, matrix, empty)


def _decode_nonstandard(path: Path, raw: bytes, line_number: int) -> object:
    """Python's json accepts NaN/Infinity, which orjson rejects; use it so the error can say so."""
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InputError(path, f"malformed JSON ({error})", line_number) from None


def _split_lines(chunk: bytes) -> list[bytes]:
    """The lines of a chunk of whole lines (the last one may lack its newline at the end of a file)."""
    lines = chunk.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return lines


class _HashingReader:
    """A binary file that feeds every byte read from it to `digest` and counts them."""

    def __init__(self, handle: io.BufferedReader, digest: hashlib._Hash):
        self.handle, self.digest, self.position = handle, digest, 0

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        self.digest.update(data)
        self.position += len(data)
        return data


def _read_chunks(path: Path, digest: hashlib._Hash, progress: bool) -> Iterator[bytes]:
    """Yield whole lines in pieces of about 16 MB (decompressed from gzip if need be), hashing the file's bytes."""
    with open(path, "rb") as raw, progress_bar(total=path.stat().st_size, unit="B", unit_scale=True,
                                               desc=f"reading {path.name}", enabled=progress) as bar:
        hashed = _HashingReader(raw, digest)
        handle = gzip.GzipFile(fileobj=hashed, mode="rb") if is_gzip(path) else raw
        read_before = 0
        try:
            while data := handle.read(_CHUNK_BYTES):
                if not data.endswith(b"\n"):
                    data += handle.readline()
                if handle is raw:
                    digest.update(data)
                    bar.update(len(data))
                else:
                    bar.update(hashed.position - read_before)
                    read_before = hashed.position
                yield data
        except (OSError, EOFError) as error:  # gzip.BadGzipFile is an OSError
            raise InputError(path, f"cannot be decompressed ({error})") from None


def _decoded_blocks(path: Path, chunks: Iterator[bytes], parallel: bool
                    ) -> Iterator[tuple[int, bytes, _DecodedBlock | None]]:
    """(number of the chunk's first line, chunk, `_decode_block`'s block) for each chunk, in order, the block's
    line numbers shifted to count from 1 at the file's first line; in worker processes (a bounded window) when
    `parallel`."""
    next_line = 1
    for chunk, count, block in _decode_all(path, chunks, parallel):
        if block is not None:
            block.line_numbers = [next_line + line for line in block.line_numbers]
        yield next_line, chunk, block
        next_line += count


def _decode_all(path: Path, chunks: Iterator[bytes], parallel: bool
                ) -> Iterator[tuple[bytes, int, _DecodedBlock | None]]:
    if not parallel:
        for chunk in chunks:
            yield chunk, *_decode_block(path, chunk)
        return
    wait_for_cache_writes()  # the pool forks: no cache-writer thread may be running then
    workers = min(os.cpu_count() or 1, _MAX_WORKERS)
    window: deque = deque()

    def finished(keep: int) -> Iterator[tuple[bytes, int, _DecodedBlock | None]]:
        while len(window) > keep:
            chunk, future = window.popleft()
            yield chunk, *future.result()

    with ProcessPoolExecutor(max_workers=workers) as pool:
        for chunk in chunks:
            window.append((chunk, pool.submit(_decode_block, path, chunk)))
            yield from finished(2 * workers)
        yield from finished(0)


def _parse_file(path: Path, dtype: np.dtype, progress: bool) -> EmbeddingStore:
    digest = hashlib.sha256()
    builder = _StoreBuilder(str(path), dtype)
    chunks = _read_chunks(path, digest, progress)
    if dtype == np.float64:
        # float64 keeps every digit through Python's own float parsing, line by line
        next_line = 1
        for chunk in chunks:
            next_line += _add_line_by_line(builder, path, chunk, next_line)
    else:
        parallel = path.stat().st_size > _PARALLEL_BYTES
        for first_line, chunk, block in _decoded_blocks(path, chunks, parallel):
            if block is None or not builder.add_block(block):
                _add_line_by_line(builder, path, chunk, first_line)
    return builder.finish(sha256=digest.hexdigest(), source=str(path))


def _add_line_by_line(builder: _StoreBuilder, path: Path, chunk: bytes, first_line: int) -> int:
    """Decode a chunk's lines one at a time (each error names its line); returns the chunk's number of lines."""
    lines = _split_lines(chunk)
    for line_number, raw in enumerate(lines, first_line):
        if raw.strip():
            builder.add(*_decode_line(path, raw, line_number), line_number)
    return len(lines)


def format_embedding_line(paper_id: str, vector: np.ndarray | Sequence[float] | None) -> bytes:
    """One line of the official format; None or an empty vector writes ``"embedding": []``."""
    values = np.zeros(0, dtype=np.float32) if vector is None else np.ascontiguousarray(vector)
    if values.dtype.kind != "f":
        values = values.astype(np.float64)
    if not np.isfinite(values).all():
        raise ValueError(f"paper {paper_id!r}: refusing to write a non-finite embedding")
    return orjson.dumps({"paper_id": paper_id, "embedding": values}, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n"
