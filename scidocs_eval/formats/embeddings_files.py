"""What a file given as embeddings appears to be, so that a wrong kind of file gets a message that says so.

The embeddings format is JSON lines, one ``{"paper_id": ..., "embedding": [...]}`` object per line, plain or
gzip-compressed. A folder, a NumPy array, a zip or pickle file, a single JSON array or a pretty-printed JSON
document is refused before parsing, naming what the file looks like and what is expected.
"""

from __future__ import annotations

from pathlib import Path

from scidocs_eval.errors import InputError

EXPECTED = 'expected JSON lines, one {"paper_id": ..., "embedding": [...]} object per line'
GZIP_MAGIC = b"\x1f\x8b"
_MAGIC = {
    b"\x93NUMPY": "a NumPy .npy array (it has no paper ids)",
    b"PK\x03\x04": "a zip archive (for example a NumPy .npz file)",
    b"\x80": "a Python pickle",
    b"\x89HDF": "an HDF5 file",
}
_PEEK_BYTES = 4096


def is_gzip(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(2) == GZIP_MAGIC


def check_embeddings_file(path: Path) -> None:
    """Raise an `InputError` saying what `path` appears to be when it cannot be an embeddings file."""
    if path.is_dir():
        raise InputError(path, f"is a directory, not a file ({EXPECTED})")
    if not path.exists():
        raise InputError(path, "embeddings file not found")
    try:
        with open(path, "rb") as handle:
            head = handle.read(_PEEK_BYTES)
    except OSError as error:
        raise InputError(path, str(error.strerror)) from None
    if head.startswith(GZIP_MAGIC):
        return
    for magic, kind in _MAGIC.items():
        if head.startswith(magic):
            raise InputError(path, f"appears to be {kind}; {EXPECTED}")
    text = head.lstrip()
    line = head[: len(head) - len(text)].count(b"\n") + 1  # of the first non-blank line, where the problem shows
    if text.startswith(b"["):
        raise InputError(path, f"appears to be one JSON array, not JSON lines; {EXPECTED}", line)
    if text.split(b"\n", 1)[0].strip() == b"{":
        raise InputError(path, f"appears to be a pretty-printed JSON document (this line is only '{{'); {EXPECTED}",
                         line)
