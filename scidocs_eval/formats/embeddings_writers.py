"""Writing embeddings in the kind an output's name asks for, and `convert` between kinds.

An output name ending in ``.parquet`` gets Parquet (a ``paper_id`` string column and an ``embedding`` list of
float32, an empty list for "no embedding"), ``.npz`` a NumPy archive (``ids``, ``embeddings``, ``empty``),
``.arrow`` or ``.feather`` an Arrow IPC file with Parquet's columns; any other name gets the official JSON lines.
Each writer takes batches of (ids, rows, empty mask) and holds at most one batch in memory (the ``.npz`` writer
keeps its ids, and spools rows to a temporary file until the archive is assembled). Every output is written to a
temporary sibling and renamed into place when complete (`safe_output.atomic_write`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Protocol

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.extras import require
from scidocs_eval.formats.embeddings import format_embedding_line, iter_embeddings
from scidocs_eval.formats.embeddings_tables import ReadOptions
from scidocs_eval.formats.provenance import settings_file
from scidocs_eval.formats.safe_output import Rows, atomic_write, discard, move_ours, recorded_rows
from scidocs_eval.lazy_modules import lazy_module

np = lazy_module("numpy", __name__)

TABLE_SUFFIXES = {".parquet": "parquet", ".npz": "npz", ".arrow": "arrow", ".feather": "arrow"}
"""output suffixes written as tables or arrays; any other name gets JSON lines."""

Batch = tuple[list[str], "np.ndarray", "np.ndarray"]
"""(ids, (n, dim) rows, (n,) bool "no embedding" mask)."""


def output_kind(path: str | os.PathLike[str]) -> str:
    """"jsonl", or the table kind `path`'s suffix asks for."""
    return TABLE_SUFFIXES.get(Path(path).suffix.lower(), "jsonl")


class _Writer(Protocol):
    def write(self, ids: list[str], rows: np.ndarray, empty: np.ndarray) -> None: ...

    def close(self) -> None: ...


class _JsonLinesWriter:
    def __init__(self, handle: IO[bytes]):
        self.handle = handle

    def write(self, ids: list[str], rows: np.ndarray, empty: np.ndarray) -> None:
        self.handle.write(b"".join(format_embedding_line(paper_id, None if blank else row)
                                   for paper_id, row, blank in zip(ids, rows, empty)))

    def close(self) -> None:
        pass


class _ArrowWriter:
    """Parquet or Arrow IPC file: one record batch (row group) per batch written."""

    def __init__(self, handle: IO[bytes], kind: str):
        pa = require("pyarrow", f"writing {kind}")
        pq = require("pyarrow.parquet", f"writing {kind}")

        self.pa = pa
        self.schema = pa.schema([("paper_id", pa.string()), ("embedding", pa.list_(pa.float32()))])
        self.writer = pq.ParquetWriter(handle, self.schema, use_dictionary=["paper_id"]) if kind == "parquet" else \
            pa.ipc.new_file(handle, self.schema)

    def write(self, ids: list[str], rows: np.ndarray, empty: np.ndarray) -> None:
        pa = self.pa
        lengths = np.where(empty, 0, rows.shape[1]).astype(np.int32)
        offsets = np.concatenate([[0], np.cumsum(lengths, dtype=np.int32)])
        values = pa.array(np.ascontiguousarray(rows[~empty], dtype=np.float32).reshape(-1))
        vectors = pa.ListArray.from_arrays(pa.array(offsets), values)
        self.writer.write_batch(pa.record_batch([pa.array(ids, pa.string()), vectors], schema=self.schema))

    def close(self) -> None:
        self.writer.close()


class _NpzWriter:
    """Rows spool to a temporary file; `close` assembles ``ids``, ``embeddings`` and ``empty`` in the archive."""

    def __init__(self, handle: IO[bytes], spool_dir: Path):
        self.handle = handle
        self.spool = tempfile.TemporaryFile(dir=spool_dir, prefix=".embeddings-rows-")  # noqa: SIM115 (closed in close)
        self.ids: list[str] = []
        self.empty: list[np.ndarray] = []
        self.dim: int | None = None

    def write(self, ids: list[str], rows: np.ndarray, empty: np.ndarray) -> None:
        cut = next((paper_id for paper_id in ids if paper_id.endswith("\x00")), None)
        if cut is not None:  # NumPy drops a string's trailing NULs: the id would be read back as another one
            raise ScidocsEvalError(f"id {cut!r} ends in a NUL character, which a NumPy string array cannot hold; "
                                   "write JSON lines, Parquet or Arrow instead")
        self.dim = rows.shape[1]
        self.ids += ids
        self.empty.append(np.asarray(empty, dtype=bool))
        self.spool.write(np.ascontiguousarray(rows, dtype=np.float32).tobytes())

    def close(self) -> None:
        rows = len(self.ids)
        with zipfile.ZipFile(self.handle, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
            with archive.open("embeddings.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array_header_1_0(member, {"descr": "<f4", "fortran_order": False,
                                                              "shape": (rows, self.dim or 0)})
                self.spool.seek(0)
                shutil.copyfileobj(self.spool, member, 1 << 22)
            for name, array in (("ids", np.array(self.ids, dtype=str)),
                                ("empty", np.concatenate(self.empty) if self.empty else np.zeros(0, bool))):
                with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, array, allow_pickle=False)
        self.spool.close()


@contextmanager
def embeddings_writer(path: str | os.PathLike[str], option: str = "output") -> Iterator[_Writer]:
    """A writer of the kind `path`'s name asks for (`output_kind`); the file appears, complete, when the block
    ends without an exception."""
    path = Path(path)
    kind = output_kind(path)
    rows = Rows("papers")
    with atomic_write(path, option, rows=rows) as handle:
        writer: _Writer
        if kind == "jsonl":
            writer = _JsonLinesWriter(handle)
        elif kind == "npz":
            writer = _NpzWriter(handle, path.parent)
        else:
            writer = _ArrowWriter(handle, kind)
        try:
            yield _RowsNoted(writer, rows)
        finally:  # also on an error, so no half-made writer is left to fail when collected
            writer.close()


class _RowsNoted:
    """A writer that notes the ids it writes in `rows` (what the output layer records of the file)."""

    def __init__(self, writer: _Writer, rows: Rows):
        self.writer, self.rows = writer, rows

    def write(self, ids: list[str], rows: np.ndarray, empty: np.ndarray) -> None:
        self.writer.write(ids, rows, empty)
        self.rows.add(ids)

    def close(self) -> None:
        self.writer.close()


def write_batches(path: str | os.PathLike[str], batches: Iterable[Batch], option: str = "output") -> int:
    """Write `batches` to `path` in the kind its name asks for; returns the number of rows."""
    count = 0
    with embeddings_writer(path, option) as writer:
        for ids, rows, empty in batches:
            writer.write(ids, rows, empty)
            count += len(ids)
    return count


def convert_embeddings(source: str | os.PathLike[str], target: str | os.PathLike[str],
                       options: ReadOptions | None = None, dtype: Any = "float32", progress: bool = True,
                       option: str = "OUT") -> int:
    """Convert an embeddings file of any readable kind into the kind `target`'s name asks for, a batch at a
    time; every line (row) is kept, repeats too, and the input is checked by the reader's rules (an error names
    its line or row, and `target` is not written). Returns the number of rows written."""
    if np.dtype(dtype) != np.float32 and output_kind(target) != "jsonl":
        raise ScidocsEvalError(f"{target}: Parquet, Arrow and .npz outputs hold float32; convert to JSON lines to "
                               "keep float64")
    return write_batches(target, iter_embeddings(source, options, dtype, progress), option)


def save_embeddings_as(source: Path, target: Path) -> Path:
    """Put the JSON lines `source` at `target`, converted when `target`'s name asks for a table (`output_kind`)."""
    if output_kind(target) == "jsonl":
        with atomic_write(target, "save_embeddings", rows=recorded_rows(source)) as handle, \
                open(source, "rb") as read:
            shutil.copyfileobj(read, handle, 1 << 22)
    else:
        convert_embeddings(source, target, progress=False, option="save_embeddings")
    return target


def write_through_json_lines(path: Path, resume: bool, write_json_lines: Callable[[Path], object]) -> Path:
    """Write a table output (`output_kind` not "jsonl") by way of JSON lines: `write_json_lines(staging)` fills
    ``{path}.partial.jsonl`` (resumable like any JSON lines output, settings record included), which is then
    converted into `path` and removed. With `resume` and a finished `path` but no staging file, `path`'s rows
    are first converted back into the staging file, so they are kept and not embedded again."""
    staging = path.with_name(path.name + ".partial.jsonl")
    if resume and path.is_file() and not staging.exists():
        convert_embeddings(path, staging, progress=False)
        if settings_file(path).is_file():
            move_ours(settings_file(path), settings_file(staging))
    write_json_lines(staging)
    convert_embeddings(staging, path, progress=False)
    if settings_file(staging).is_file():
        move_ours(settings_file(staging), settings_file(path))
    discard(staging)
    return path
