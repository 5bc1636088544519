"""Readers of embeddings held as tables or arrays: Parquet, Arrow IPC (file or stream), a saved HF dataset,
NumPy ``.npz`` / ``.npy`` + ids sidecar, safetensors.

Each reader only takes the columns out of the file: raw id values, the vectors' values laid end to end and each
row's length (0 = no embedding: an empty list or a null). Every rule (id types, non-numeric and non-finite
values, the dimension, repeats) is applied by the one store builder in `scidocs_eval.formats.embeddings`, so a
Parquet file and the same vectors as JSON lines give the same store or the same error.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import os
import stat
import threading
import zipfile
import zlib
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from scidocs_eval.errors import InputError, ScidocsEvalError
from scidocs_eval.extras import require
from scidocs_eval.formats.embeddings_files import (
    ARROW_FILE,
    ARROW_STREAM,
    HF_DATASET,
    NPY,
    NPZ,
    PARQUET,
    SAFETENSORS,
    EmbeddingsInput,
    file_identity,
)
from scidocs_eval.lazy_modules import lazy_module

np = lazy_module("numpy", __name__)

ID_COLUMNS = ("paper_id", "doc_id")
EMBEDDING_COLUMNS = ("embedding", "embeddings")
ID_ARRAYS = ("ids", "paper_ids", "doc_ids")
"""names of the ids array in an .npz (and of the ids metadata key in safetensors)."""
EMPTY_ARRAY = "empty"
"""an .npz's optional (n,) bool array: True where the paper has no embedding (its row is ignored)."""
_HASH_BLOCK = 1 << 22
_UNREADABLE = (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error)
"""what numpy raises on a damaged .npy or .npz (a zip member's CRC, a short read, a bad header)."""


@dataclass
class ReadOptions:
    """How to find ids and vectors in a table or array file (JSON lines need none of these).

    Attributes:
        ids_file: one id per line, for a ``.npy`` matrix or a safetensors file without ids in its metadata.
        id_column: the id column of a table (default: ``paper_id``, else ``doc_id``).
        embedding_columns: one list column, or several numeric columns (one per dimension) of a table
            (default: ``embedding``, else every numeric column other than the id).
    """

    ids_file: str | Path | None = None
    id_column: str | None = None
    embedding_columns: Sequence[str] = field(default_factory=tuple)


@dataclass
class Columns:
    """What a reader hands the store builder.

    Attributes:
        ids: the id of each row as the file holds it (str, int, or anything the builder then refuses).
        values: every row's values, end to end (numeric; an object array when some value is not a number).
        lengths: (n_rows,) number of values per row; 0 means "no embedding".
        digest: hex sha256 of the file's bytes (of the data files in order, for a saved HF dataset), or the
            `FilePass` whose thread still reads the file (`sha256` waits for it).
    """

    ids: list[Any]
    values: np.ndarray
    lengths: np.ndarray
    digest: str | FilePass

    @property
    def sha256(self) -> str:
        return self.digest if isinstance(self.digest, str) else self.digest.sha256


class FilePass:
    """The checks of an array or table file that read all of it, each by a thread of its own (file reads, hashlib
    and zlib release the GIL): the sha256 of its bytes and, for an .npz, the CRC-32 of each stored member, the
    check `np.load` makes. A run starts it before it reads its data files (`start_file_pass`), so the file is checked
    while the corpus is read; daemons, so an error in the file is not held back until they are done, and
    `stop` ends them when the file will not be used. The threads read with `read`, not through a memory map:
    a file cut short while they read it (by another program, or a test rewriting it) ends a read early
    instead of killing the process with SIGBUS."""

    def __init__(self, path: Path):
        self.path = path
        self.identity = file_identity(path)
        """the file's `file_identity` when its reads began."""
        self._stopped = threading.Event()
        self._digest = _in_thread(lambda: _files_digest([path], self._stopped), "embeddings-digest")
        self._crcs = _in_thread(lambda: _member_crcs(path, self._stopped), "embeddings-crc")

    @property
    def sha256(self) -> str:
        return self._digest.result()

    def crc(self, start: int) -> int | None:
        """The CRC-32 of the stored member whose bytes start at offset `start` (None: no such member)."""
        return self._crcs.result().get(start)

    def stop(self) -> None:
        """Ends both reads at their next block; asking for their results then raises."""
        self._stopped.set()


def _in_thread(work: Callable[[], Any], name: str) -> Future[Any]:
    future: Future[Any] = Future()

    def run() -> None:
        try:
            future.set_result(work())
        except BaseException as error:  # raised again where the result is asked for
            future.set_exception(error)

    threading.Thread(target=run, name=name, daemon=True).start()
    return future


def _member_crcs(path: Path, stopped: threading.Event) -> dict[int, int]:
    """{offset of its first byte: CRC-32} of each uncompressed member of the zip file `path`."""
    crcs = {}
    with open(path, "rb", buffering=0) as handle:
        for start, stop in _stored_members(path).items():
            crc = 0
            for block in _blocks(handle, start, stop, stopped):
                crc = zlib.crc32(block, crc)
            crcs[start] = crc
    return crcs


def start_file_pass(spec: str | os.PathLike[str]) -> FilePass | None:
    """A `FilePass` of `spec` when `read_columns` would hash it (a regular .npy, .npz, safetensors, Parquet or
    Arrow file); None otherwise, or when the file cannot be opened: its read then reports that, in its turn. A
    pipe or a device is never opened here: what this would read from it, the read could not."""
    try:
        if not stat.S_ISREG(os.stat(spec).st_mode):
            return None
        with EmbeddingsInput(spec) as source:
            if not source.regular or source.kind not in (NPY, NPZ, SAFETENSORS, PARQUET, ARROW_FILE, ARROW_STREAM):
                return None
    except (InputError, OSError):
        return None
    assert source.path is not None
    return FilePass(source.path)


def _stored_members(path: Path) -> dict[int, int]:
    """{offset of its first byte: offset past its last} of each uncompressed member of the zip file `path` ({}
    for a file that is not a zip, or a damaged one: its reader then says so)."""
    members = {}
    try:
        with zipfile.ZipFile(path) as archive, open(path, "rb") as handle:
            for member in archive.infolist():
                if member.compress_type == zipfile.ZIP_STORED:
                    start = _member_data_start(handle, member)
                    members[start] = start + member.compress_size
    except (zipfile.BadZipFile, OSError, ValueError):
        return {}
    return members


def _member_data_start(handle: BinaryIO, member: zipfile.ZipInfo) -> int:
    """The offset in the zip file open as `handle` where `member`'s bytes start (past its local header)."""
    handle.seek(member.header_offset)
    local = handle.read(30)
    if len(local) < 30 or local[:4] != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"bad local header of member {member.filename}")
    return member.header_offset + 30 + int.from_bytes(local[26:28], "little") + int.from_bytes(local[28:30], "little")


def read_columns(source: EmbeddingsInput, options: ReadOptions, file_pass: FilePass | None = None) -> Columns:
    """The ids and vectors of a table or array `source` (any kind in `TABLE_KINDS`); `file_pass`, the one
    `start_file_pass` started on its file, if any (else a regular array file gets one here)."""
    if options.ids_file is not None and source.kind not in (NPY, SAFETENSORS):
        raise ScidocsEvalError(f"--ids is for a .npy matrix or a safetensors file without ids; {source.name} is "
                               f"{source.kind} and holds its own ids")
    if source.kind in (NPY, NPZ, SAFETENSORS):
        digest: str | FilePass
        if source.regular:  # read from the file (a .npy memory-mapped), not from a copy of its bytes
            assert source.path is not None
            data: bytes | Path = source.path
            digest = _file_pass_of(source.path, file_pass)
        else:
            data = source.read_all()
            digest = hashlib.sha256(data).hexdigest()
        npz = functools.partial(_npz, file_pass=digest if isinstance(digest, FilePass) else None)
        reader = {NPY: _npy, NPZ: npz, SAFETENSORS: _safetensors}[source.kind]
        with stopped_on_error(digest):
            ids, matrix, empty = reader(source.name, data, options)
        return _matrix_columns(source.name, ids, matrix, empty, digest)
    table, digest = _arrow_table(source, file_pass)
    with stopped_on_error(digest):
        return _table_columns(source.name, table, options, digest)


@contextlib.contextmanager
def stopped_on_error(digest: str | FilePass) -> Iterator[None]:
    """An error within the block (the file refused) stops `digest`'s reads, when it is a `FilePass` still reading:
    they would only read a file no run uses."""
    try:
        yield
    except BaseException:
        if isinstance(digest, FilePass):
            digest.stop()
        raise


def _file_pass_of(path: Path, file_pass: FilePass | None) -> FilePass:
    """`file_pass` when it reads `path`, else a new one on it."""
    return file_pass if file_pass is not None and file_pass.path == path else FilePass(path)


def iter_columns(source: EmbeddingsInput, options: ReadOptions) -> Iterator[Columns]:
    """`read_columns` a row group at a time for a Parquet file on disk (bounded memory), at once otherwise."""
    if source.kind != PARQUET or not source.regular:
        yield read_columns(source, options)
        return
    pa, pq = _pyarrow(source.name)
    assert source.path is not None
    try:
        parquet = pq.ParquetFile(str(source.path), memory_map=True)
        for index in range(parquet.num_row_groups):
            yield _table_columns(source.name, parquet.read_row_group(index), options, "")
    except (pa.ArrowException, OSError, ValueError) as error:
        raise InputError(source.name, f"cannot be read as Parquet ({error})") from None


def _arrow_table(source: EmbeddingsInput, file_pass: FilePass | None) -> tuple[Any, str | FilePass]:
    """The file's table and its digest: a regular file is hashed by a `FilePass` (`file_pass` when it reads this
    file) while pyarrow reads it."""
    pa, pq = _pyarrow(source.name)
    what = {PARQUET: "Parquet", ARROW_FILE: "an Arrow IPC file", ARROW_STREAM: "an Arrow IPC stream",
            HF_DATASET: "a saved HF dataset"}[source.kind]
    try:
        if source.kind == HF_DATASET:
            assert source.path is not None
            files = _dataset_files(source.path)
            tables = [pa.ipc.open_stream(pa.memory_map(str(file))).read_all() for file in files]
            return pa.concat_tables(tables), _files_digest(files)
        digest: str | FilePass
        if source.regular:
            assert source.path is not None
            digest = _file_pass_of(source.path, file_pass)
            data = pa.memory_map(str(source.path))
        else:
            raw = source.read_all()
            digest = hashlib.sha256(raw).hexdigest()
            data = pa.BufferReader(raw)
        with stopped_on_error(digest):
            if source.kind == PARQUET:
                return pq.read_table(data), digest
            opener = pa.ipc.open_file if source.kind == ARROW_FILE else pa.ipc.open_stream
            return opener(data).read_all(), digest
    except (pa.ArrowException, OSError, ValueError) as error:
        raise InputError(source.name, f"cannot be read as {what} ({error})") from None


def _pyarrow(name: str) -> tuple[Any, Any]:
    needed_by = f"reading {name} (a Parquet/Arrow file)"
    return require("pyarrow", needed_by), require("pyarrow.parquet", needed_by)


def _dataset_files(folder: Path) -> list[Path]:
    try:
        state = json.loads((folder / "state.json").read_text(encoding="utf-8"))
        names = [entry["filename"] for entry in state["_data_files"]]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise InputError(folder / "state.json", f"not the state of a saved HF dataset ({error!r})") from None
    files = [folder / name for name in names]
    absent = [str(file) for file in files if not file.is_file()]
    if not files or absent:
        raise InputError(folder, f"the dataset's data files are missing: {', '.join(absent) or 'none listed'}")
    return files


def _files_digest(files: Sequence[Path], stopped: threading.Event | None = None) -> str:
    digest = hashlib.sha256()
    for file in files:
        with open(file, "rb", buffering=0) as handle:
            for block in _blocks(handle, 0, None, stopped):
                digest.update(block)
    return digest.hexdigest()


def _blocks(handle: BinaryIO, start: int, stop: int | None, stopped: threading.Event | None) -> Iterator[memoryview]:
    """The bytes of `handle` from offset `start` to `stop` (None: its end), a block at a time in one reused
    buffer; the reads end early at the end of the file. Once `stopped` is set they raise instead, so a stopped
    pass has no result that could be taken for the file's."""
    buffer = memoryview(bytearray(_HASH_BLOCK))
    handle.seek(start)
    left = None if stop is None else stop - start
    while left is None or left > 0:
        if stopped is not None and stopped.is_set():
            raise RuntimeError(f"the read of {handle.name} was stopped")
        size = handle.readinto(buffer if left is None or left >= _HASH_BLOCK else buffer[:left])
        if not size:
            return
        yield buffer[:size]
        if left is not None:
            left -= size


def _table_columns(name: str, table: Any, options: ReadOptions, digest: str | FilePass) -> Columns:
    pa, _ = _pyarrow(name)
    columns = list(table.column_names)
    id_column = options.id_column or next((c for c in ID_COLUMNS if c in columns), None)
    if id_column is None or id_column not in columns:
        wanted = repr(id_column) if id_column else "'paper_id' (or 'doc_id')"
        raise InputError(name, f"missing id column {wanted}; its columns are {columns} (name the id column with "
                         "--id-column)")
    ids = table.column(id_column).to_pylist()
    chosen = list(options.embedding_columns) or next(([c] for c in EMBEDDING_COLUMNS if c in columns), None)
    if chosen is None:
        chosen = [c for c in columns if c != id_column]
        if not chosen or not all(_is_number_type(pa, table.schema.field(c).type) for c in chosen):
            raise InputError(name, f"missing embedding column 'embedding'; its columns are {columns} (name a list "
                             "column, or the numeric columns in order, with --embedding-column)")
    absent = [c for c in chosen if c not in columns]
    if absent:
        raise InputError(name, f"missing embedding column(s) {absent}; its columns are {columns}")
    if len(chosen) == 1 and not _is_number_type(pa, table.schema.field(chosen[0]).type):
        return _list_column(name, pa, chosen[0], table.column(chosen[0]), ids, digest)
    return _number_columns(name, pa, [table.column(c) for c in chosen], chosen, ids, digest)


def _is_number_type(pa: Any, kind: Any) -> bool:
    return pa.types.is_integer(kind) or pa.types.is_floating(kind)


def _list_column(name: str, pa: Any, column_name: str, column: Any, ids: list[Any], digest: str | FilePass
                 ) -> Columns:
    kind = column.type
    if not (pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind)):
        raise InputError(name, f"column {column_name!r} holds {kind}, not lists of numbers")
    array = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    null = array.is_null().to_numpy(zero_copy_only=False)
    if pa.types.is_fixed_size_list(kind):
        lengths = np.where(null, 0, kind.list_size).astype(np.int64)
    else:
        lengths = array.value_lengths().fill_null(0).to_numpy().astype(np.int64)
    flat = array.flatten()
    if flat.null_count or not _is_number_type(pa, flat.type):
        values = np.array(flat.to_pylist(), dtype=object)
    else:
        values = flat.to_numpy()
    return Columns(ids, values, lengths, digest)


def _number_columns(name: str, pa: Any, columns: list[Any], names: list[str], ids: list[Any],
                    digest: str | FilePass) -> Columns:
    for column_name, column in zip(names, columns):
        if not _is_number_type(pa, column.type):
            raise InputError(name, f"column {column_name!r} holds {column.type}, not numbers")
    nulls = np.column_stack([column.is_null().to_numpy() for column in columns])
    matrix = np.column_stack([column.to_numpy() for column in columns])
    lengths = np.where(nulls.all(axis=1), 0, len(columns)).astype(np.int64)
    if nulls.any(axis=1).sum() > (lengths == 0).sum():  # a row with some values missing: report the None
        matrix = matrix.astype(object)
        matrix[nulls] = None
    return Columns(ids, matrix[lengths > 0].ravel(), lengths, digest)


def _matrix_columns(name: str, ids: list[Any], matrix: np.ndarray, empty: np.ndarray | None,
                    digest: str) -> Columns:
    if matrix.ndim != 2:
        raise InputError(name, f"the embeddings array has shape {matrix.shape}; expected (papers, dimension)")
    if len(ids) != matrix.shape[0]:
        raise InputError(name, f"{len(ids)} ids for {matrix.shape[0]} rows of embeddings")
    if empty is None:
        return Columns(ids, matrix.reshape(-1), np.full(matrix.shape[0], matrix.shape[1], dtype=np.int64), digest)
    if empty.shape != (matrix.shape[0],) or empty.dtype != bool:
        raise InputError(name, f"the 'empty' array must be one bool per row; it has shape {empty.shape} and dtype "
                         f"{empty.dtype}")
    return Columns(ids, matrix[~empty].reshape(-1), np.where(empty, 0, matrix.shape[1]).astype(np.int64), digest)


def _sidecar_ids(path: str | Path) -> list[str]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise InputError(path, f"not UTF-8 text (byte {error.start})") from None
    except OSError as error:
        raise InputError(path, f"cannot be read ({error.strerror or error})") from None
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")


def _array_ids(name: str, ids: np.ndarray) -> list[Any]:
    if ids.ndim != 1:
        raise InputError(name, f"the ids array has shape {ids.shape}; expected one id per row")
    return ids.tolist()


def _load_npy(name: str, data: bytes | Path | BinaryIO, what: str) -> Any:
    try:
        if isinstance(data, Path):
            return np.load(data, allow_pickle=False, mmap_mode="r" if what.endswith(".npy array") else None)
        return np.load(io.BytesIO(data) if isinstance(data, bytes) else data, allow_pickle=False)
    except _UNREADABLE as error:
        raise InputError(name, f"cannot be read as {what} ({error})") from None


MatrixWithIds = tuple[list[Any], "np.ndarray", "np.ndarray | None"]
"""ids, (n, dim) matrix, and (n,) bool "no embedding" mask (None: every row has one)."""


def _npy(name: str, data: bytes | Path, options: ReadOptions) -> MatrixWithIds:
    if options.ids_file is None:
        raise InputError(name, "is a NumPy .npy array, which holds no paper ids; give them with --ids FILE (one "
                         "id per line, in row order), or save an .npz with 'ids' and 'embeddings'")
    return _sidecar_ids(options.ids_file), _load_npy(name, data, "a NumPy .npy array"), None


def _npz(name: str, data: bytes | Path, options: ReadOptions, file_pass: FilePass | None) -> MatrixWithIds:
    # the file is opened here, not by np.load, which leaves its own handle open when the archive is damaged
    with contextlib.ExitStack() as files:
        source: bytes | BinaryIO = data if isinstance(data, bytes) else _open_binary(name, data, files)
        archive = files.enter_context(_load_npy(name, source, "a NumPy .npz archive"))
        keys = list(archive.keys())
        matrix_key = next((k for k in EMBEDDING_COLUMNS if k in keys), None)
        ids_key = next((k for k in ID_ARRAYS if k in keys), None)
        if matrix_key is None or ids_key is None:
            raise InputError(name, f"an .npz needs arrays 'ids' and 'embeddings'; it holds {keys}")
        try:
            empty = archive[EMPTY_ARRAY] if EMPTY_ARRAY in keys else None
            matrix = _mapped_member(data, archive.zip.getinfo(f"{matrix_key}.npy"), file_pass) \
                if isinstance(data, Path) else None
            return _array_ids(name, archive[ids_key]), archive[matrix_key] if matrix is None else matrix, empty
        except _UNREADABLE as error:  # a damaged member, or an object array (which needs pickle)
            raise InputError(name, f"cannot be read as a NumPy .npz archive ({error})") from None


def _mapped_member(path: Path, member: zipfile.ZipInfo, file_pass: FilePass | None) -> np.ndarray | None:
    """An uncompressed (``np.savez``) .npz member memory-mapped where it lies in the file, its CRC checked as
    `np.load` checks it (the one `file_pass` took on its read, when it has it); None for a member that cannot be
    mapped (compressed, an object or version-3 array): `np.load` then reads it into memory."""
    if member.compress_type != zipfile.ZIP_STORED:
        return None
    with path.open("rb") as handle:
        start = _member_data_start(handle, member)
        handle.seek(start)
        version = np.lib.format.read_magic(handle)
        if version not in ((1, 0), (2, 0)):
            return None
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
            np.lib.format.read_array_header_2_0
        shape, fortran_order, dtype = read_header(handle)
        offset = handle.tell()
        handle.seek(start)
        header = handle.read(offset - start)
    size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if dtype.hasobject or size == 0:
        return None
    if offset - start + size != member.file_size:
        raise ValueError(f"member {member.filename} holds {member.file_size - offset + start} bytes of data for an "
                         f"array of {size}")
    raw = np.memmap(path, dtype=np.uint8, mode="r", offset=offset, shape=(size,))
    crc = file_pass.crc(start) if file_pass is not None else None
    if (crc if crc is not None else zlib.crc32(raw, zlib.crc32(header))) != member.CRC:
        raise zipfile.BadZipFile(f"Bad CRC-32 for file {member.filename!r}")
    return raw.view(dtype).reshape(shape[::-1]).T if fortran_order else raw.view(dtype).reshape(shape)


def _open_binary(name: str, path: Path, files: contextlib.ExitStack) -> BinaryIO:
    try:
        return files.enter_context(path.open("rb"))
    except OSError as error:
        raise InputError(name, f"cannot be read ({error.strerror or error})") from None


def _has_bfloat16(header: Any) -> bool:
    return isinstance(header, dict) and any(isinstance(entry, dict) and entry.get("dtype") == "BF16"
                                            for key, entry in header.items() if key != "__metadata__")


def _bfloat16_tensors(name: str, data: bytes, header: dict) -> dict[str, np.ndarray]:
    """The 2-D tensors of a safetensors file that holds bfloat16 ones (NumPy has no bfloat16, so safetensors'
    NumPy loader refuses them): a bfloat16 value is the upper half of a float32's bits, so each becomes that
    float32 exactly. Other tensors are left to `load` (an error naming their dtype)."""
    start = 8 + int.from_bytes(data[:8], "little")
    tensors = {}
    for key, entry in header.items():
        if key == "__metadata__" or not isinstance(entry, dict) or entry.get("dtype") != "BF16":
            continue
        begin, end = (int(offset) for offset in entry["data_offsets"])
        shape = tuple(int(size) for size in entry["shape"])
        if start + end > len(data) or end - begin != 2 * int(np.prod(shape)):
            raise InputError(name, f"tensor {key!r}: its data offsets do not match its shape {list(shape)}")
        bits = np.frombuffer(data, dtype="<u2", count=(end - begin) // 2, offset=start + begin)
        tensors[key] = (bits.astype(np.uint32) << 16).view(np.float32).reshape(shape)
    return tensors


def _safetensors(name: str, data: bytes | Path, options: ReadOptions) -> MatrixWithIds:
    needed_by = f"reading {name} (a safetensors file)"
    SafetensorError = require("safetensors", needed_by).SafetensorError  # noqa: N806 (a class)
    load = require("safetensors.numpy", needed_by).load
    if isinstance(data, Path):
        data = data.read_bytes()
    try:
        header = json.loads(data[8 : 8 + int.from_bytes(data[:8], "little")])
        tensors = _bfloat16_tensors(name, data, header) if _has_bfloat16(header) else load(data)
    except (SafetensorError, ValueError, TypeError, KeyError) as error:
        raise InputError(name, f"cannot be read as safetensors ({error!r})") from None
    keys = sorted(tensors)
    matrix_key = next((k for k in EMBEDDING_COLUMNS if k in tensors), keys[0] if len(keys) == 1 else None)
    if matrix_key is None:
        raise InputError(name, f"a safetensors file needs an 'embeddings' tensor; it holds {keys}")
    metadata = header.get("__metadata__") or {}
    ids_key = next((k for k in ID_ARRAYS if k in metadata), None)
    if ids_key is not None and options.ids_file is not None:
        raise ScidocsEvalError(f"{name} holds its ids in its metadata ({ids_key!r}); do not give --ids as well")
    if ids_key is None:
        if options.ids_file is None:
            raise InputError(name, "a safetensors file needs its ids in its metadata ('ids': a JSON list of "
                             "strings) or in a sidecar given with --ids FILE")
        return _sidecar_ids(options.ids_file), tensors[matrix_key], None
    try:
        ids = json.loads(metadata[ids_key])
    except ValueError as error:
        raise InputError(name, f"metadata {ids_key!r} is not a JSON list ({error})") from None
    if not isinstance(ids, list):
        raise InputError(name, f"metadata {ids_key!r} is not a JSON list of ids")
    return ids, tensors[matrix_key], None
