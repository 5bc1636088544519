"""The embedding store shared by every task: one matrix, one id index.

The official embeddings file is JSON lines, one paper per line::

    {"paper_id": "abc", "embedding": [0.1, -0.2, ...]}

(`doc_id` is accepted for the key, as the successor suite writes it; only the value of the top-level
``embedding`` key is read, whatever other keys a line holds). Parquet, Arrow, NumPy, safetensors files and saved
HF datasets are read too (`scidocs_eval.formats.embeddings_files` tells the kind by content;
`scidocs_eval.formats.embeddings_tables` takes their columns out), and every rule below holds for each, checked by
one builder: a later line (row) with the same id replaces an earlier one, as in the official code, and the
number of such repeats is kept. ``"embedding": []`` (or a null) is a deliberate "no embedding" (the reference
embedder writes it for papers without a title): the row stays zero and is flagged, and each task applies the
official rule for it.

A value that does not fit the matrix's dtype (above 3.4e38 for float32), NaN or infinity is an error naming file,
line (or row) and paper, never an infinity. A gzip-compressed file (``.jsonl.gz``) is read as is. Ids repeated
in the file and ids with surrounding whitespace (which match no suite id) are reported as warnings.

JSON lines are parsed by one parser (orjson), in blocks of lines whose checks are vectorised; any block it cannot
take whole is decoded line by line by the same parser, which names the line at fault. Parsing a SciDocs-sized
JSON lines file takes seconds, so the parsed matrix is cached (`scidocs_eval.formats.embeddings_cache`: keyed by
the parser's version and the file's path, inode, size, modification and status-change times, checked on every
hit) and a second run on the same file loads it with `numpy.load`. Tables and arrays are read directly (no
cache). A pipe, FIFO or standard input (``-``) is read exactly once and never cached.
"""

from __future__ import annotations

import gzip
import hashlib
import itertools
import json
import logging
import os
from collections import Counter, deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import orjson

from scidocs_eval.errors import InputError
from scidocs_eval.formats.embeddings_cache import CacheEntry, ParsedEmbeddings, wait_for_cache_writes
from scidocs_eval.formats.embeddings_files import JSON_LINES, EmbeddingsInput, file_identity
from scidocs_eval.formats.embeddings_tables import (
    Columns,
    FilePass,
    ReadOptions,
    iter_columns,
    read_columns,
    stopped_on_error,
)
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.progress import progress_bar

np = lazy_module("numpy", __name__)

PRESENT, EMPTY, MISSING = 0, 1, 2
"""Status codes returned by `EmbeddingStore.status`."""

_CHUNK_BYTES = 1 << 24
_PARALLEL_BYTES = 64 << 20
_MAX_WORKERS = 4
_FINITE_CHUNK = 1 << 18
"""values checked for NaN and infinity at a time (their mask stays in the cache)."""
PARSER_VERSION = 3
"""part of every parse-cache key: a change to what the parser reads must bump it, so no entry outlives it."""
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
        unit: what the file is made of, "line" (JSON lines) or "row" (tables and arrays), for messages.
        file_identity: the `file_identity` of a table or array file when its read began (its matrix may map the
            file, and its digest is a read of its own): `check_unchanged` compares it with the file's now.
    """

    ids: list[str]
    matrix: np.ndarray
    empty: np.ndarray
    source: str | None = None
    duplicates: int = 0
    sha256: str | None = None
    repeated: list[str] = field(default_factory=list)
    unit: str = "line"
    file_identity: tuple[int, ...] | None = None
    index: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.index = dict(zip(self.ids, range(len(self.ids))))

    @property
    def dim(self) -> int:
        return int(self.matrix.shape[1])

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def padded_ids(self) -> list[str]:
        """Ids with leading or trailing whitespace (a suite's ids have none, so these match nothing)."""
        return [paper_id for paper_id, stripped in zip(self.ids, map(str.strip, self.ids)) if paper_id != stripped]

    def warn_about_ids(self) -> None:
        """Log a warning for repeated ids and for ids with surrounding whitespace, with examples."""
        where = self.source or "<memory>"
        if self.duplicates:
            log.warning("%s: %d %s(s) repeat the id of an earlier %s (the later %s is used, as in the official "
                        "code): %s", where, self.duplicates, self.unit, self.unit, self.unit,
                        _examples(self.repeated))
        padded = self.padded_ids
        if padded:
            log.warning("%s: %d id(s) have leading or trailing whitespace and match no suite id: %s", where,
                        len(padded), _examples(padded))

    def check_unchanged(self) -> None:
        """An error when the table or array file read is no longer the file that was read: written, replaced or
        cut while the run used it, its scores and digest could each be of other bytes."""
        if self.file_identity is None or self.source is None:
            return
        try:
            now: tuple[int, ...] | None = file_identity(Path(self.source))
        except OSError:
            now = None
        if now != self.file_identity:
            raise InputError(self.source, "was changed, replaced or removed while this run used it, so its scores "
                             "could be of other vectors than its digest; no result was kept. Run again once "
                             "nothing writes the file (or score a copy of it)")

    def __contains__(self, paper_id: object) -> bool:
        return paper_id in self.index

    def rows(self, ids: Sequence[str]) -> np.ndarray:
        """Row of each id, -1 where the id is absent; shape (len(ids),)."""
        index = self.index
        return np.fromiter(map(index.get, ids, itertools.repeat(-1)), dtype=np.int64, count=len(ids))

    def status(self, ids: Sequence[str]) -> np.ndarray:
        """PRESENT, EMPTY or MISSING for each id; shape (len(ids),), int8."""
        rows = self.rows(ids)
        codes = np.full(len(ids), MISSING, dtype=np.int8)
        found = rows >= 0
        codes[found] = np.where(self.empty[rows[found]], EMPTY, PRESENT)
        return codes

    def vectors(self, ids: Sequence[str], dtype: np.dtype | type | str = "float32") -> np.ndarray:
        """(len(ids), dim) matrix; absent and empty embeddings give zero rows. Ids that are consecutive rows of the
        store give a read-only view of them (no copy), others a new array."""
        rows = self.rows(ids)
        if len(rows) and rows[0] >= 0 and self.matrix.dtype == dtype and \
                np.array_equal(rows, np.arange(rows[0], rows[0] + len(rows))):
            view = np.asarray(self.matrix[rows[0]: rows[0] + len(rows)])
            view.flags.writeable = False
            return view
        out = np.zeros((len(ids), self.dim), dtype=dtype)
        found = rows >= 0
        out[found] = self.matrix[rows[found]]
        return out

    @classmethod
    def from_mapping(cls, embeddings: Mapping[str, Sequence[float] | np.ndarray],
                     dtype: np.dtype | type | str = "float32") -> EmbeddingStore:
        """Build a store in memory from ``{paper_id: vector}``; an empty vector means "no embedding"."""
        builder = _StoreBuilder("<memory>", dtype)
        for line_number, (paper_id, vector) in enumerate(embeddings.items(), start=1):
            builder.add(str(paper_id), np.asarray(vector, dtype=np.float64), line_number)
        return builder.finish(sha256=None, source=None)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, cache: bool = True, dtype: np.dtype | type | str = "float32",
             progress: bool = True, options: ReadOptions | None = None,
             file_pass: FilePass | None = None) -> EmbeddingStore:
        """Read an embeddings file of any accepted kind (see the module docstring); ``"-"`` is standard input.

        JSON lines use the parse cache if `cache` (a regular file only); `options` say where the ids and vectors
        of a table or array are (`ReadOptions`); `file_pass`, the hashing read `start_file_pass` began earlier
        on the same file, if any.
        """
        dtype = np.dtype(dtype)
        with EmbeddingsInput(path) as source:
            if source.kind != JSON_LINES:
                store = _read_table(source, dtype, options or ReadOptions(), file_pass)
            else:
                _refuse_options(source, options)
                store = _load_json_lines(source, dtype, cache and source.regular, progress)
        store.warn_about_ids()
        return store


def _refuse_options(source: EmbeddingsInput, options: ReadOptions | None) -> None:
    """JSON lines name their own ids and vectors: an option saying where they are would be ignored."""
    if options is not None and (options.ids_file or options.id_column or options.embedding_columns):
        raise InputError(source.name, "holds JSON lines, with their own ids and vectors; --ids, --id-column and "
                         "--embedding-column are for a table or array file")


def _load_json_lines(source: EmbeddingsInput, dtype: np.dtype, cache: bool, progress: bool) -> EmbeddingStore:
    entry = None
    if cache:
        assert source.path is not None
        try:
            entry = CacheEntry(source.path, dtype, PARSER_VERSION)
        except OSError as error:
            log.warning("embeddings parse cache unusable (%s); parsing without it", error)
    cached = entry.read() if entry is not None else None
    if cached is not None:
        return EmbeddingStore(cached.ids, cached.matrix, cached.empty, source=source.name,
                              duplicates=cached.duplicates, sha256=cached.sha256, repeated=cached.repeated)
    store = _parse_json_lines(source, dtype, progress)
    if entry is not None:
        entry.write_in_background(ParsedEmbeddings(store.ids, store.matrix, store.empty, store.repeated,
                                                   store.duplicates, str(store.sha256)))
    return store


class _StoreBuilder:
    """Accumulates validated vectors (a line, a block of lines or a table's columns at a time); later ids replace
    earlier ones. Every rule of the format is checked here, whatever the file's kind; `unit` ("line" or "row")
    is what an error's location counts."""

    def __init__(self, source: str, dtype: np.dtype | type, unit: str = "line"):
        self.source = source
        self.dtype = np.dtype(dtype)
        self.unit = unit
        self.ids: list[str] = []
        self.blocks: list[np.ndarray] = []
        self.empty: list[np.ndarray] = []
        self.pending: list[np.ndarray | None] = []
        self.dim: int | None = None
        self.dim_at: int | None = None
        self.taken = 0

    def error(self, message: str, at: int | None) -> InputError:
        return InputError(self.source, message, row=at) if self.unit == "row" else \
            InputError(self.source, message, at)

    def add(self, paper_id: str, vector: np.ndarray, at: int) -> None:
        """One line's vector (float64, shape (dim,) or (0,) for "no embedding"), fully validated."""
        if vector.ndim != 1:
            raise self.error(f"paper {paper_id!r}: embedding must be a flat list of numbers", at)
        if vector.size:
            self._check_values(paper_id, vector, at)
            self._check_dimension(paper_id, vector.size, at)
        self.ids.append(paper_id)
        self.pending.append(vector if vector.size else None)

    def _check_values(self, paper_id: str, vector: np.ndarray, at: int) -> None:
        """An error at the first NaN or infinity of `vector` (float64), or value the matrix's dtype cannot hold."""
        if not np.isfinite(vector).all():
            bad = int(np.flatnonzero(~np.isfinite(vector))[0])
            raise self.error(f"paper {paper_id!r}: embedding value {bad} is {vector[bad]} (NaN and infinity are not "
                             "allowed)", at)
        with np.errstate(over="ignore"):
            overflows = ~np.isfinite(vector.astype(self.dtype))
        if overflows.any():
            bad = int(np.flatnonzero(overflows)[0])
            raise self.error(f"paper {paper_id!r}: embedding value {bad} is {vector[bad]}, beyond the largest "
                             f"{self.dtype.name} ({float(np.finfo(self.dtype).max):.7g}); scale the vectors, or "
                             "read them with --dtype float64", at)

    def _check_dimension(self, paper_id: str, size: int, at: int) -> None:
        if self.dim is None:
            self.dim, self.dim_at = size, at
        elif size != self.dim:
            raise self.error(f"paper {paper_id!r}: embedding has {size} values, but {self.unit} {self.dim_at} set "
                             f"the dimension to {self.dim}", at)

    def add_block(self, block: _DecodedBlock) -> bool:
        """A block decoded by `_decode_block`; False (nothing added) if its width contradicts the dimension."""
        filled = np.flatnonzero(~block.empty)
        if filled.size:
            width = block.matrix.shape[1]
            if self.dim is None:
                self.dim, self.dim_at = width, block.line_numbers[filled[0]]
            elif width != self.dim:
                return False
            self._append(block.ids, block.matrix, block.empty)
        else:
            self.ids += block.ids
            self.pending += [None] * len(block.ids)
        return True

    def add_columns(self, columns: Columns, first_row: int = 1) -> None:
        """A table's rows (`embeddings_tables.Columns`), the first being row `first_row`, under the rules `add`
        applies."""
        ids = columns.ids if set(map(type, columns.ids)) <= {str} else \
            [_checked_id(self, value, row) for row, value in enumerate(columns.ids, start=first_row)]
        values, lengths = columns.values, columns.lengths
        ends = np.cumsum(lengths)
        if values.dtype.kind not in "iuf":
            listed = values.tolist()
            index = next((i for i, value in enumerate(listed) if type(value) not in (int, float)), 0)
            row = int(np.searchsorted(ends, index, side="right"))
            raise self.error(f"paper {ids[row]!r}: embedding has a non-numeric value {listed[index]!r}",
                             first_row + row)
        filled = lengths > 0
        if not filled.any():
            self.ids += ids
            self.pending += [None] * len(ids)
            return
        for row in (int(np.argmax(filled)), *np.flatnonzero(filled & (lengths != lengths[filled][0]))[:1]):
            self._check_dimension(ids[row], int(lengths[row]), first_row + int(row))  # the first sets or checks
        with np.errstate(over="ignore"):  # integers round as JSON's do: to float64 first
            converted = values.astype(self.dtype, copy=False) if values.dtype.kind == "f" else \
                values.astype(np.float64).astype(self.dtype, copy=False)
        bad = _first_non_finite(converted)
        if bad is not None:
            row = int(np.searchsorted(ends, bad, side="right"))
            self._check_values(ids[row], values[ends[row] - lengths[row]: ends[row]].astype(np.float64),
                               first_row + row)
        rows = converted.reshape(-1, self.dim)
        if not filled.all():
            rows = np.zeros((len(ids), self.dim), dtype=self.dtype)
            rows[filled] = converted.reshape(-1, self.dim)
        self._append(ids, rows, ~filled)

    def _append(self, ids: list[str], matrix: np.ndarray, empty: np.ndarray) -> None:
        self._flush()
        self.ids += ids
        self.blocks.append(matrix.astype(self.dtype, copy=False))
        self.empty.append(empty)

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

    def take(self) -> tuple[list[str], np.ndarray, np.ndarray]:
        """(ids, rows, empty mask) added since the last `take`, every line kept (repeats too); nothing while no
        line has set the dimension yet."""
        self._flush()
        if self.dim is None or not self.blocks:
            return [], np.zeros((0, self.dim or 0), dtype=self.dtype), np.zeros(0, dtype=bool)
        taken = (self.ids, np.concatenate(self.blocks), np.concatenate(self.empty))
        self.taken += len(self.ids)
        self.ids, self.blocks, self.empty = [], [], []
        return taken

    def check_complete(self) -> None:
        """An error when the file held no line, or no line with an embedding (so no dimension)."""
        if not self.ids and not self.taken:
            raise InputError(self.source, "no embeddings in file (it is empty)")
        if self.dim is None:
            raise InputError(self.source, "every embedding in the file is empty, so there is no dimension")

    def finish(self, sha256: str | None, source: str | None) -> EmbeddingStore:
        self.check_complete()
        self._flush()
        last_line_of = dict(zip(self.ids, range(len(self.ids))))  # a repeated id: its place, its last line
        rows = np.fromiter(last_line_of.values(), dtype=np.int64, count=len(last_line_of))
        every_line = np.concatenate(self.blocks) if len(self.blocks) > 1 else self.blocks[0]
        matrix = every_line if len(rows) == len(every_line) else every_line[rows]
        empty = np.concatenate(self.empty)[rows]
        repeated = [] if len(rows) == len(self.ids) else \
            [paper_id for paper_id, count in Counter(self.ids).items() if count > 1]
        return EmbeddingStore(list(last_line_of), matrix, empty, source=source,
                              duplicates=len(self.ids) - len(rows), sha256=sha256, repeated=repeated, unit=self.unit)


def _first_non_finite(values: np.ndarray) -> int | None:
    """Index of the first NaN or infinity in 1-d `values`, None if none; a chunk at a time (no mask of the whole
    array: a corpus' vectors are checked at the speed of reading them)."""
    values = values.view(np.ndarray)  # a memory map's slices would each run np.memmap's Python hooks
    for start in range(0, len(values), _FINITE_CHUNK):
        chunk = values[start:start + _FINITE_CHUNK]
        if not np.isfinite(chunk).all():
            return start + int(np.flatnonzero(~np.isfinite(chunk))[0])
    return None


def _id_problem(value: object) -> str | None:
    """Why `value` cannot be a paper id (None when it can: a string, or an integer written without quotes)."""
    if value is None:
        return "missing key 'paper_id' (or 'doc_id')"
    if isinstance(value, _NumberLiteral):
        return f"paper id must be a string, got {value.literal}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (str, int, np.integer)):
        return f"paper id must be a string, got {value!r}"
    return None


def _checked_id(builder: _StoreBuilder, value: object, at: int) -> str:
    if type(value) is str:
        return value
    problem = "paper id is missing (null)" if value is None else _id_problem(value)
    if problem is not None:
        raise builder.error(problem, at)
    return str(value)


def _examples(ids: list[str]) -> str:
    more = f" (and {len(ids) - SHOWN_IDS} more)" if len(ids) > SHOWN_IDS else ""
    return ", ".join(repr(paper_id) for paper_id in ids[:SHOWN_IDS]) + more


class _NumberLiteral(str):
    """A JSON number as written in the file (for messages about a number where a string belongs)."""

    @property
    def literal(self) -> str:
        return str(self)


def _exact_id(raw: bytes, key: str) -> object:
    """The id as the line writes it: orjson reads an integer beyond 64 bits as a float, Python's json exactly."""
    record = json.loads(raw, parse_float=_NumberLiteral, parse_constant=_NumberLiteral)
    return record.get(key) if isinstance(record, dict) else None


def _record_id(name: str, raw: bytes, record: object, line_number: int) -> tuple[str, object]:
    """The paper id of a decoded line and its 'embedding' value, after checking the object's shape."""
    if not isinstance(record, dict):
        raise InputError(name, f"expected a JSON object, got {type(record).__name__}", line_number)
    key = "paper_id" if "paper_id" in record else "doc_id"
    paper_id = record.get(key)
    if isinstance(paper_id, float):
        paper_id = _exact_id(raw, key)
    problem = _id_problem(paper_id)
    if problem is not None:
        raise InputError(name, problem, line_number)
    paper_id = str(paper_id)
    if "embedding" not in record:
        raise InputError(name, f"paper {paper_id!r}: missing key 'embedding'", line_number)
    values = record["embedding"]
    if type(values) is not list:
        raise InputError(name, f"paper {paper_id!r}: 'embedding' must be a list, got "
                         f"{type(values).__name__}", line_number)
    return paper_id, values


def _decode_line(name: str, raw: bytes, line_number: int) -> tuple[str, np.ndarray]:
    try:
        record = orjson.loads(raw)
    except orjson.JSONDecodeError:
        record = _decode_nonstandard(name, raw, line_number)
    paper_id, values = _record_id(name, raw, record, line_number)
    if any(type(value) is list for value in values):
        raise InputError(name, f"paper {paper_id!r}: embedding must be a flat list of numbers", line_number)
    bad = next((value for value in values if type(value) not in (int, float)), _ALL_NUMBERS)
    if bad is not _ALL_NUMBERS:
        raise InputError(name, f"paper {paper_id!r}: embedding has a non-numeric value {bad!r}", line_number)
    return paper_id, np.array(values, dtype=np.float64) if values else np.zeros(0)


_ALL_NUMBERS = object()


@dataclass
class _DecodedBlock:
    """Lines decoded together: ids, (n_lines, dim) rows in the store's dtype (zero where empty), the empty mask."""

    line_numbers: list[int]
    ids: list[str]
    matrix: np.ndarray
    empty: np.ndarray


def _decode_block(chunk: bytes, dtype: np.dtype) -> tuple[int, _DecodedBlock | None]:
    """Decode the lines of `chunk` at once, with the parser `_decode_line` uses (orjson), checks vectorised.

    Line numbers count from 0 at the chunk's first line (the caller shifts them: a worker does not know where
    its chunk starts). Returns the chunk's number of lines and the block, or None for the block whenever a
    line is not plainly well formed (not JSON, an id that is not a string or an integer within 64 bits, an
    embedding that is not a flat list of numbers, ragged lengths, a value beyond `dtype`): the caller then
    decodes the lines one by one, which gives the precise error. Runs in worker processes, so it raises nothing.
    """
    pieces = _split_lines(chunk)
    line_numbers, ids, lists = [], [], []
    for line, raw in enumerate(pieces):
        if not raw.strip():
            continue
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return len(pieces), None
        if type(record) is not dict:
            return len(pieces), None
        paper_id = record["paper_id"] if "paper_id" in record else record.get("doc_id")
        values = record.get("embedding")
        if type(values) is not list or type(paper_id) not in (str, int):
            return len(pieces), None
        line_numbers.append(line)
        ids.append(paper_id if type(paper_id) is str else str(paper_id))
        lists.append(values)
    empty = np.array([not values for values in lists], dtype=bool)
    filled = [values for values in lists if values]
    width = len(filled[0]) if filled else 0
    try:
        values = np.array(filled) if filled else np.zeros((0, 0))
    except ValueError:  # ragged
        return len(pieces), None
    if values.ndim != 2 or values.dtype.kind not in "iuf" or \
            ((b"true" in chunk or b"false" in chunk) and any(type(v) is bool for row in filled for v in row)):
        return len(pieces), None
    with np.errstate(over="ignore"):
        rows = values.astype(np.float64, copy=False).astype(dtype, copy=False)
    if not np.isfinite(rows).all():  # orjson reads no NaN or infinity: a value beyond `dtype`
        return len(pieces), None
    matrix = np.zeros((len(lists), width), dtype=dtype)
    matrix[~empty] = rows
    return len(pieces), _DecodedBlock(line_numbers, ids, matrix, empty)


def _decode_nonstandard(name: str, raw: bytes, line_number: int) -> object:
    """Python's json accepts NaN/Infinity, which orjson rejects; use it so the error can say so."""
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InputError(name, f"malformed JSON ({error})", line_number) from None


def _split_lines(chunk: bytes) -> list[bytes]:
    """The lines of a chunk of whole lines (the last one may lack its newline at the end of a file)."""
    lines = chunk.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return lines


class _HashingReader:
    """A binary stream that feeds every byte read from it to `digest`."""

    def __init__(self, handle: BinaryIO, digest: hashlib._Hash):
        self.handle, self.digest, self.position = handle, digest, 0

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        self.digest.update(data)
        self.position += len(data)
        return data

    def readline(self, size: int = -1) -> bytes:
        data = self.handle.readline(size)
        self.digest.update(data)
        self.position += len(data)
        return data


def _read_chunks(source: EmbeddingsInput, digest: hashlib._Hash, progress: bool) -> Iterator[bytes]:
    """Yield whole lines in pieces of about 16 MB (decompressed from gzip if need be), hashing the source's
    bytes as they are read (once: a pipe is never read twice)."""
    hashed = _HashingReader(source.stream(), digest)
    name = Path(source.name).name
    with progress_bar(total=source.size(), unit="B", unit_scale=True, desc=f"reading {name}",
                      enabled=progress) as bar:
        handle = gzip.GzipFile(fileobj=hashed, mode="rb") if source.gzipped else hashed
        read_before = 0
        try:
            while data := handle.read(_CHUNK_BYTES):
                if not data.endswith(b"\n"):
                    data += handle.readline()
                bar.update(hashed.position - read_before)
                read_before = hashed.position
                yield data
        except (OSError, EOFError) as error:  # gzip.BadGzipFile is an OSError
            raise InputError(source.name, f"cannot be decompressed ({error})") from None


def _decoded_blocks(chunks: Iterator[bytes], dtype: np.dtype, parallel: bool
                    ) -> Iterator[tuple[int, bytes, _DecodedBlock | None]]:
    """(number of the chunk's first line, chunk, `_decode_block`'s block) for each chunk, in order, the block's
    line numbers shifted to count from 1 at the file's first line; in worker processes (a bounded window) when
    `parallel`."""
    next_line = 1
    for chunk, count, block in _decode_all(chunks, dtype, parallel):
        if block is not None:
            block.line_numbers = [next_line + line for line in block.line_numbers]
        yield next_line, chunk, block
        next_line += count


def _decode_all(chunks: Iterator[bytes], dtype: np.dtype, parallel: bool
                ) -> Iterator[tuple[bytes, int, _DecodedBlock | None]]:
    if not parallel:
        for chunk in chunks:
            yield chunk, *_decode_block(chunk, dtype)
        return
    wait_for_cache_writes()  # the pool forks: no cache-writer thread may be running then
    workers = min(os.cpu_count() or 1, _MAX_WORKERS)
    window: deque = deque()

    def finished(keep: int) -> Iterator[tuple[bytes, int, _DecodedBlock | None]]:
        while len(window) > keep:
            chunk, future = window.popleft()
            yield chunk, *future.result()

    from concurrent.futures import ProcessPoolExecutor  # with multiprocessing: a cost only where a file is parsed

    with ProcessPoolExecutor(max_workers=workers) as pool:
        for chunk in chunks:
            window.append((chunk, pool.submit(_decode_block, chunk, dtype)))
            yield from finished(2 * workers)
        yield from finished(0)


def _parse_json_lines(source: EmbeddingsInput, dtype: np.dtype, progress: bool) -> EmbeddingStore:
    digest = hashlib.sha256()
    builder = _StoreBuilder(source.name, dtype)
    chunks = _read_chunks(source, digest, progress)
    parallel = (source.size() or 0) > _PARALLEL_BYTES
    for first_line, chunk, block in _decoded_blocks(chunks, dtype, parallel):
        if block is None or not builder.add_block(block):
            _add_line_by_line(builder, source.name, chunk, first_line)
    return builder.finish(sha256=digest.hexdigest(), source=source.name)


def _add_line_by_line(builder: _StoreBuilder, name: str, chunk: bytes, first_line: int) -> int:
    """Decode a chunk's lines one at a time (each error names its line); returns the chunk's number of lines."""
    lines = _split_lines(chunk)
    for line_number, raw in enumerate(lines, first_line):
        if raw.strip():
            builder.add(*_decode_line(name, raw, line_number), line_number)
    return len(lines)


def iter_embeddings(path: str | os.PathLike[str], options: ReadOptions | None = None,
                    dtype: np.dtype | type | str = "float32", progress: bool = True
                    ) -> Iterator[tuple[list[str], np.ndarray, np.ndarray]]:
    """Every line (row) of an embeddings file of any kind as (ids, rows, empty mask) batches, in file order and
    with repeats kept, under every rule `EmbeddingStore.load` applies; JSON lines and Parquet a chunk (row group)
    at a time, so memory stays bounded by a batch."""
    dtype = np.dtype(dtype)
    options = options or ReadOptions()
    with EmbeddingsInput(path) as source:
        builder = _StoreBuilder(source.name, dtype, unit="line" if source.kind == JSON_LINES else "row")
        if source.kind == JSON_LINES:
            _refuse_options(source, options)
            chunks = _read_chunks(source, hashlib.sha256(), progress)
            parallel = (source.size() or 0) > _PARALLEL_BYTES  # a bounded window of chunks in flight
            for first_line, chunk, block in _decoded_blocks(chunks, dtype, parallel):
                if block is None or not builder.add_block(block):
                    _add_line_by_line(builder, source.name, chunk, first_line)
                if (batch := builder.take())[0]:
                    yield batch
        else:
            first_row = 1
            for columns in iter_columns(source, options):
                builder.add_columns(columns, first_row)
                first_row += len(columns.ids)
                yield builder.take()
        builder.check_complete()
        if (batch := builder.take())[0]:
            yield batch


def _read_table(source: EmbeddingsInput, dtype: np.dtype, options: ReadOptions,
                file_pass: FilePass | None) -> EmbeddingStore:
    identity = None
    if source.regular:
        assert source.path is not None
        identity = file_pass.identity if file_pass is not None and file_pass.path == source.path else \
            file_identity(source.path)
    columns = read_columns(source, options, file_pass)
    with stopped_on_error(columns.digest):
        builder = _StoreBuilder(source.name, dtype, unit="row")
        builder.add_columns(columns)
        store = builder.finish(sha256=columns.sha256, source=source.name)
    store.file_identity = identity
    return store


def format_embedding_line(paper_id: str, vector: np.ndarray | Sequence[float] | None) -> bytes:
    """One line of the official format; None or an empty vector writes ``"embedding": []``."""
    values = np.zeros(0, dtype=np.float32) if vector is None else np.ascontiguousarray(vector)
    if values.dtype.kind != "f":
        values = values.astype(np.float64)
    if not np.isfinite(values).all():
        raise ValueError(f"paper {paper_id!r}: refusing to write a non-finite embedding")
    return orjson.dumps({"paper_id": paper_id, "embedding": values}, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n"
