"""The parse cache of embeddings files: a parsed matrix saved once, loaded by later runs on the same bytes.

An entry is two files under the cache folder, ``KEY.npy`` (the matrix) and ``KEY.json`` (ids, empty rows, repeats,
the file's sha256 and checks). The key covers the parser's version (so an entry written by another parser is never
served) and what identifies one version of one file: its absolute path, device, inode, size, modification time and
status-change time (ctime, which the kernel sets on every write or rename and no user can set back: `cp -p`, `rsync
-a` or `touch -d` over a file change it). On a hit the first and last 64 KiB of the file are read and compared with
the digest recorded at parse time, so the sha256 an entry carries is the one of the file as it is now. An entry
whose matrix and metadata disagree (a shape, dtype, id list or sampled rows other than those recorded) or that does
not load is never used: a warning names it, the file is parsed again and the entry replaced.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import orjson

from scidocs_eval.formats.embeddings_files import file_identity
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.paths import cache_dir

np = lazy_module("numpy", __name__)

CACHE_FORMAT = 2
EDGE_BYTES = 1 << 16
SAMPLED_ROWS = 64
_PENDING_WRITES: dict[Path, threading.Thread] = {}
"""Entries still being written by a background thread, by entry base path."""

log = logging.getLogger("scidocs_eval")


@dataclass
class ParsedEmbeddings:
    """What the cache keeps of a parse: ids (one per row), the (n, dim) matrix, the (n,) empty mask, the ids
    repeated in the file (the later line won), how many lines repeated an id, and the file's sha256."""

    ids: list[str]
    matrix: np.ndarray
    empty: np.ndarray
    repeated: list[str]
    duplicates: int
    sha256: str


class UnusableEntry(Exception):
    """A cache entry that must not be used; the message says why."""


def _file_key(path: Path) -> str:
    return "|".join([str(path.resolve()), *map(str, file_identity(path))])


def edge_digest(path: Path) -> str:
    """sha256 of the file's first and last `EDGE_BYTES` bytes (the whole file when it is smaller)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        digest.update(handle.read(EDGE_BYTES))
        size = os.fstat(handle.fileno()).st_size
        if size > EDGE_BYTES:
            handle.seek(max(EDGE_BYTES, size - EDGE_BYTES))
            digest.update(handle.read())
    return digest.hexdigest()


def _ids_digest(ids: list[str]) -> str:
    return hashlib.sha256(orjson.dumps(ids)).hexdigest()


def _rows_digest(matrix: np.ndarray) -> str:
    """sha256 of up to `SAMPLED_ROWS` rows spread over the matrix, and of its shape and dtype."""
    rows = np.unique(np.linspace(0, len(matrix) - 1, num=min(SAMPLED_ROWS, len(matrix))).astype(np.int64))
    digest = hashlib.sha256(f"{matrix.shape}|{matrix.dtype.str}".encode())
    digest.update(np.ascontiguousarray(matrix[rows]).tobytes())
    return digest.hexdigest()


class CacheEntry:
    """The cache entry of this version of `path` parsed to `dtype` by version `parser_version` of the parser (its
    key is taken when this is made)."""

    def __init__(self, path: Path, dtype: np.dtype, parser_version: int):
        self.path = path
        self.dtype = np.dtype(dtype)
        self.file_key = _file_key(path)
        key = f"{CACHE_FORMAT}|parser {parser_version}|{self.file_key}|{self.dtype.str}"
        self.base = cache_dir("embeddings") / hashlib.sha1(key.encode()).hexdigest()

    def read(self) -> ParsedEmbeddings | None:
        """The entry; None when there is none or (with a warning naming it) it is unusable."""
        writer = _PENDING_WRITES.pop(self.base, None)
        if writer is not None:
            writer.join()
        matrix_file, meta_file = self.base.with_suffix(".npy"), self.base.with_suffix(".json")
        if not (matrix_file.exists() or meta_file.exists()):
            return None
        try:
            return _checked_entry(matrix_file, meta_file, self.path, self.dtype)
        except UnusableEntry as reason:
            log.warning("embeddings parse cache entry %s is unusable (%s); parsing %s again and replacing it",
                        meta_file, reason, self.path)
            return None

    def write_in_background(self, parsed: ParsedEmbeddings) -> None:
        """Save `parsed` while the caller goes on, unless the file changed since this entry was made.

        (Saving a SciDocs-size matrix takes seconds; a later read of the same entry waits for it, and the
        interpreter waits for it at exit.)
        """
        if _file_key(self.path) != self.file_key:
            log.warning("%s changed while it was parsed; its parse is not cached", self.path)
            return
        writer = threading.Thread(target=_write_entry, args=(self.base, self.path, parsed),
                                  name="embeddings-cache-writer")
        _PENDING_WRITES[self.base] = writer
        writer.start()


def _checked_entry(matrix_file: Path, meta_file: Path, path: Path, dtype: np.dtype) -> ParsedEmbeddings:
    try:
        meta = orjson.loads(meta_file.read_bytes())
        matrix = np.load(matrix_file, allow_pickle=False)
    except (OSError, ValueError, EOFError) as error:
        raise UnusableEntry(f"it does not load: {error}") from None
    if not isinstance(meta, dict) or meta.get("format") != CACHE_FORMAT:
        raise UnusableEntry(f"metadata is not a format-{CACHE_FORMAT} entry")
    ids, empty_rows = meta.get("ids"), meta.get("empty_rows")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids) or len(set(ids)) != len(ids):
        raise UnusableEntry("'ids' is not a list of distinct strings")
    if matrix.ndim != 2 or matrix.shape[0] != len(ids) or matrix.dtype != dtype:
        raise UnusableEntry(f"matrix of shape {matrix.shape} and dtype {matrix.dtype} for {len(ids)} ids of "
                            f"dtype {dtype}")
    if meta.get("ids_sha256") != _ids_digest(ids) or meta.get("rows_sha256") != _rows_digest(matrix):
        raise UnusableEntry("ids or matrix rows differ from those recorded")
    if (not isinstance(empty_rows, list) or not all(type(r) is int and 0 <= r < len(ids) for r in empty_rows)
            or matrix[empty_rows].any()):
        raise UnusableEntry("'empty_rows' are not rows of zeros of the matrix")
    repeated, duplicates, sha256 = meta.get("repeated"), meta.get("duplicates"), meta.get("sha256")
    if (not isinstance(repeated, list) or type(duplicates) is not int or duplicates < len(repeated)
            or not isinstance(sha256, str) or len(sha256) != 64):
        raise UnusableEntry("'repeated', 'duplicates' or 'sha256' is malformed")
    try:
        edges = edge_digest(path)
    except OSError as error:
        raise UnusableEntry(f"{path} cannot be read: {error}") from None
    if meta.get("edges_sha256") != edges:
        raise UnusableEntry(f"the first or last {EDGE_BYTES} bytes of {path} differ from those parsed")
    empty = np.zeros(len(ids), dtype=bool)
    empty[empty_rows] = True
    return ParsedEmbeddings(ids, matrix, empty, repeated, duplicates, sha256)


def _write_entry(base: Path, path: Path, parsed: ParsedEmbeddings) -> None:
    """Write the entry (.npy matrix + .json metadata); a failure only costs the next run a parse."""
    tmp_matrix = base.with_suffix(f".{os.getpid()}.tmp.npy")
    tmp_meta = base.with_suffix(f".{os.getpid()}.tmp.json")
    try:
        meta = {"format": CACHE_FORMAT, "ids": parsed.ids, "ids_sha256": _ids_digest(parsed.ids),
                "rows_sha256": _rows_digest(parsed.matrix), "empty_rows": np.flatnonzero(parsed.empty).tolist(),
                "repeated": parsed.repeated, "duplicates": parsed.duplicates, "sha256": parsed.sha256,
                "edges_sha256": edge_digest(path)}
        base.parent.mkdir(parents=True, exist_ok=True)
        np.save(tmp_matrix, parsed.matrix)
        tmp_meta.write_bytes(orjson.dumps(meta))
        os.replace(tmp_matrix, base.with_suffix(".npy"))
        os.replace(tmp_meta, base.with_suffix(".json"))
    except OSError as error:
        tmp_matrix.unlink(missing_ok=True)
        tmp_meta.unlink(missing_ok=True)
        log.warning("could not write the embeddings parse cache under %s (%s); the next run parses again",
                    base.parent, error)


def wait_for_cache_writes() -> None:
    """Block until every parse-cache entry started in this process is on disk."""
    while _PENDING_WRITES:
        _PENDING_WRITES.popitem()[1].join()
