"""Opening what a user gave as embeddings, once, and telling by its content what kind of file it is.

Accepted, by content and not by file name (docs/embeddings_formats.md):

- JSON lines, one ``{"paper_id": ..., "embedding": [...]}`` object per line, plain or gzip-compressed;
- Parquet, Arrow IPC file (Feather v2) or Arrow IPC stream, with an id column and an embedding column;
- a NumPy ``.npz`` holding ``ids`` and ``embeddings``, or a ``.npy`` matrix with an ids sidecar (``--ids``);
- safetensors with an ``embeddings`` tensor, the ids in its metadata (``"ids"``: a JSON list) or a sidecar;
- a folder written by HF ``datasets``' ``save_to_disk`` (Arrow files listed in its ``state.json``).

A pipe, a FIFO or standard input (``-``) is read exactly once: the bytes looked at to tell the kind are the
first bytes of the same read, never read again from a reopened path. A folder of another kind, a pickle, an
HDF5 file, a single JSON array or a pretty-printed JSON document is refused, naming what it appears to be.
"""

from __future__ import annotations

import io
import os
import stat
import struct
import sys
from pathlib import Path
from typing import BinaryIO

from scidocs_eval.errors import InputError

EXPECTED = 'expected JSON lines, one {"paper_id": ..., "embedding": [...]} object per line'
GZIP_MAGIC = b"\x1f\x8b"
STDIN = "-"
JSON_LINES, PARQUET, ARROW_FILE, ARROW_STREAM, NPY, NPZ, SAFETENSORS, HF_DATASET = (
    "jsonl", "parquet", "arrow-file", "arrow-stream", "npy", "npz", "safetensors", "hf-dataset")
TABLE_KINDS = (PARQUET, ARROW_FILE, ARROW_STREAM, NPY, NPZ, SAFETENSORS, HF_DATASET)
"""Kinds read whole by `embeddings_tables` (JSON lines are parsed as a stream)."""
_REFUSED_MAGIC = {
    b"\x80": "a Python pickle",
    b"\x89HDF": "an HDF5 file",
}
_MAGIC = {
    b"PAR1": PARQUET,
    b"ARROW1": ARROW_FILE,
    b"\xff\xff\xff\xff": ARROW_STREAM,
    b"\x93NUMPY": NPY,
    b"PK\x03\x04": NPZ,
    b"PK\x05\x06": NPZ,
}
_PEEK_BYTES = 4096
_SAFETENSORS_HEADER_LIMIT = 100 << 20


def file_identity(path: Path) -> tuple[int, ...]:
    """What changes when a file is written or replaced: its device, inode, size, mtime and ctime (ctime cannot be
    set back, as `cp -p` or `touch -d` set back mtime)."""
    info = os.stat(path)
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns


class _Prepended(io.RawIOBase):
    """`head` followed by the rest of `handle`: the bytes already read to sniff the kind are not read again."""

    def __init__(self, head: bytes, handle: BinaryIO):
        self.head, self.handle = head, handle

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self.head:
            count = min(len(buffer), len(self.head))
            buffer[:count] = self.head[:count]
            self.head = self.head[count:]
            return count
        data = self.handle.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


class EmbeddingsInput:
    """One opened embeddings source: its name in messages, its kind, and its bytes (readable once)."""

    def __init__(self, spec: str | os.PathLike[str]):
        self.path: Path | None = None if str(spec) == STDIN else Path(spec)
        self.name = "<stdin>" if self.path is None else str(self.path)
        self.handle: BinaryIO | None = None
        self.regular = False
        if self.path is not None and self.path.is_dir():
            self.kind = _folder_kind(self.path)
            self.head = b""
            return
        if self.path is None:
            self.handle = sys.stdin.buffer
        else:
            try:
                self.handle = open(self.path, "rb")  # noqa: SIM115 (closed by close(), after the caller read it)
            except FileNotFoundError:
                raise InputError(self.path, "embeddings file not found") from None
            except OSError as error:
                raise InputError(self.path, str(error.strerror or error)) from None
            self.regular = stat.S_ISREG(os.fstat(self.handle.fileno()).st_mode)
        try:
            self.head = self.handle.read(_PEEK_BYTES)
            self.kind = _file_kind(self.name, self.head)
        except OSError as error:
            self.close()
            raise InputError(self.name, f"cannot be read ({error.strerror or error})") from None
        except InputError:
            self.close()
            raise

    def __enter__(self) -> EmbeddingsInput:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.handle is not None and self.handle is not sys.stdin.buffer:
            self.handle.close()
        self.handle = None

    @property
    def gzipped(self) -> bool:
        return self.head.startswith(GZIP_MAGIC)

    def stream(self) -> BinaryIO:
        """The source's bytes from the first one (a regular file is rewound; a pipe gets the sniffed bytes back)."""
        assert self.handle is not None, "a folder has no stream"
        if self.regular:
            self.handle.seek(0)
            return self.handle
        return io.BufferedReader(_Prepended(self.head, self.handle), buffer_size=1 << 20)

    def size(self) -> int | None:
        """The file's size in bytes, None for a pipe or standard input."""
        return os.fstat(self.handle.fileno()).st_size if self.regular and self.handle is not None else None

    def read_all(self) -> bytes:
        return self.stream().read()


def _folder_kind(path: Path) -> str:
    if (path / "state.json").is_file() and (path / "dataset_info.json").is_file():
        return HF_DATASET
    if (path / "dataset_dict.json").is_file():
        raise InputError(path, "is a saved HF DatasetDict; give the folder of one split (for example "
                         f"{path / 'train'})")
    raise InputError(path, f"is a directory, not a file ({EXPECTED}, or a folder saved by HF datasets' "
                     "save_to_disk)")


def _file_kind(name: str, head: bytes) -> str:
    """The kind `head` (the first bytes) shows, or an `InputError` saying what the file appears to be."""
    if head.startswith(GZIP_MAGIC):
        return JSON_LINES
    for magic, kind in _MAGIC.items():
        if head.startswith(magic):
            return kind
    for magic, what in _REFUSED_MAGIC.items():
        if head.startswith(magic):
            raise InputError(name, f"appears to be {what}; {EXPECTED}")
    if _is_safetensors(head):
        return SAFETENSORS
    text = head.lstrip()
    line = head[: len(head) - len(text)].count(b"\n") + 1  # of the first non-blank line, where the problem shows
    if text.startswith(b"["):
        raise InputError(name, f"appears to be one JSON array, not JSON lines; {EXPECTED}", line)
    if text.split(b"\n", 1)[0].strip() == b"{":
        raise InputError(name, f"appears to be a pretty-printed JSON document (this line is only '{{'); {EXPECTED}",
                         line)
    return JSON_LINES


def _is_safetensors(head: bytes) -> bool:
    """A safetensors file starts with its JSON header's length (8 bytes, little-endian), then ``{``."""
    if len(head) < 10:
        return False
    (length,) = struct.unpack("<Q", head[:8])
    return 2 <= length < _SAFETENSORS_HEADER_LIMIT and head[8:9] == b"{"
