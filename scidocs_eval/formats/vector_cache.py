"""The embedding cache across runs: content-addressed vectors on disk, safe under concurrent runs, verified on read.

A vector is found by (model fingerprint, the model's view of a role, the exact input): the fingerprint says which
weights and settings made it (`Adapter.cache_fingerprint`), the view what the model was told (an input format, a
prompt type), the input key the text (and the id, for a model that reads ids). Each (fingerprint, view) is an
entry: a folder of segment files and the entry's probe (the vectors of a few fixed texts, `run.embedding_plan`
compares them with the model's before any cached vector is served). A run adds segments with the vectors it
computed, every few batches of a long encode, so the cache is also the checkpoint of an interrupted run. A segment
is written to a temporary name and renamed, under a lock of its folder (`filelock`), so a reader never sees half
of one and two runs never collide; on read its sha256 (over the header and the payload) must match the one it
ends with and its header must name the same fingerprint and view: a corrupt or foreign segment is never used (a
warning names it; its vectors are computed again). Reading a segment touches it, so `prune(older_than)` removes
what no run has used for that long.

Layout: `{root}/{sha256(PRODUCER, fingerprint, view)[:32]}/{segment}.vec` (and `probe.probe`), each file `MAGIC`,
an 8-byte little-endian header length, a JSON header (fingerprint, view, dtype, dim, count), the payload (`count`
32-byte sha256 digests of the input keys, then the `count` x `dim` vectors) and the sha256 of everything before it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import orjson

from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.paths import cache_dir

np = lazy_module("numpy", __name__)

try:
    PRODUCER = f"scidocs-eval {metadata.version('scidocs-eval')}"
except metadata.PackageNotFoundError:  # run from a source tree that is not installed
    PRODUCER = "scidocs-eval (not installed)"
"""Part of every folder's key: a release whose texts or encoders differ never reads an earlier release's vectors."""

log = logging.getLogger("scidocs_eval")

MAGIC = b"SCIDOCS-EVAL-VECTORS 2\n"
SUFFIX = ".vec"
PROBE = "probe.probe"
LOCK = ".lock"
_KEY_BYTES = 32


def key_digest(key: bytes) -> bytes:
    """The 32-byte address of an input key inside a (fingerprint, view) folder."""
    return hashlib.sha256(key).digest()


@dataclass(frozen=True)
class CacheInfo:
    """What `cache info` prints: where the cache is, how many models (fingerprint and view), segments, vectors and
    bytes it holds, and when it was last used."""

    root: Path
    models: int
    segments: int
    vectors: int
    bytes: int
    newest: float | None

    def format(self) -> str:
        used = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.newest)) if self.newest else "never"
        return (f"embedding cache {self.root}: {self.vectors} vectors of {self.models} model/role pair(s) in "
                f"{self.segments} segment(s), {self.bytes / 2**20:.1f} MiB; last used {used}")


class VectorCache:
    """Vectors by (fingerprint, view, input key) under `root` (default: the user cache folder's `vectors/`)."""

    def __init__(self, root: str | os.PathLike[str] | None = None):
        self.root = Path(root) if root is not None else cache_dir("vectors")
        self.root.mkdir(parents=True, exist_ok=True)

    def _folder(self, fingerprint: str, view: str) -> Path:
        return self.root / hashlib.sha256(f"{PRODUCER}\0{fingerprint}\0{view}".encode()).hexdigest()[:32]

    def get(self, fingerprint: str, view: str, keys: Sequence[bytes]) -> dict[int, np.ndarray]:
        """{position in `keys`: vector} of the keys the cache holds for (fingerprint, view)."""
        from filelock import FileLock

        folder = self._folder(fingerprint, view)
        if not folder.is_dir():
            return {}
        wanted: dict[bytes, list[int]] = {}
        for position, key in enumerate(keys):
            wanted.setdefault(key_digest(key), []).append(position)
        found: dict[int, np.ndarray] = {}
        with FileLock(folder / LOCK):
            for segment in sorted(folder.glob(f"*{SUFFIX}")):
                read = _read_segment(segment, fingerprint, view)
                if read is None:
                    continue
                digests, vectors = read
                used = False
                for row, digest in enumerate(digests):
                    for position in wanted.pop(digest, ()):
                        found[position] = vectors[row]
                        used = True
                if used:
                    os.utime(segment)
                if not wanted:
                    break
        return found

    def put(self, fingerprint: str, view: str, keys: Sequence[bytes], vectors: np.ndarray,
            probe: tuple[Sequence[bytes], np.ndarray] | None = None) -> None:
        """Add the vectors of `keys` (row i of `vectors` for keys[i]) as one new segment; `probe` (its texts' keys
        and vectors) is recorded as the entry's probe when the entry has none yet."""
        if not len(keys):
            return
        folder = self._folder(fingerprint, view)
        folder.mkdir(parents=True, exist_ok=True)
        from filelock import FileLock

        with FileLock(folder / LOCK):
            if probe is not None and not (folder / PROBE).is_file():
                _write_segment(folder, PROBE, fingerprint, view, *probe)
            _write_segment(folder, f"{time.time_ns()}-{uuid.uuid4().hex[:8]}{SUFFIX}", fingerprint, view, keys,
                           vectors)

    def probe(self, fingerprint: str, view: str, keys: Sequence[bytes]) -> np.ndarray | None:
        """The entry's probe vectors, row i for keys[i]; None when it has none for these keys (or it is unusable)."""
        path = self._folder(fingerprint, view) / PROBE
        if not path.is_file():
            return None
        read = _read_segment(path, fingerprint, view)
        if read is None or read[0] != [key_digest(key) for key in keys]:
            return None
        return read[1]

    def drop(self, fingerprint: str, view: str) -> int:
        """Remove the entry (its segments and probe: vectors its model no longer makes); returns the segments."""
        folder = self._folder(fingerprint, view)
        if not folder.is_dir():
            return 0
        from filelock import FileLock

        with FileLock(folder / LOCK):
            segments = list(folder.glob(f"*{SUFFIX}"))
            for path in [*segments, folder / PROBE]:
                path.unlink(missing_ok=True)
        return len(segments)

    def info(self) -> CacheInfo:
        models = segments = vectors = size = 0
        newest: float | None = None
        for folder in self._folders():
            files = list(folder.glob(f"*{SUFFIX}"))
            models += bool(files)
            for segment in files:
                stat = segment.stat()
                segments += 1
                size += stat.st_size
                vectors += _count(segment)
                newest = max(newest or 0.0, stat.st_mtime)
        return CacheInfo(self.root, models, segments, vectors, size, newest)

    def prune(self, older_than_seconds: float) -> tuple[int, int]:
        """Remove the segments no run has read or written for `older_than_seconds`; returns (segments, bytes)."""
        from filelock import FileLock

        limit = time.time() - older_than_seconds
        removed = freed = 0
        for folder in self._folders():
            with FileLock(folder / LOCK):
                for segment in folder.glob(f"*{SUFFIX}"):
                    stat = segment.stat()
                    if stat.st_mtime < limit:
                        segment.unlink()
                        removed, freed = removed + 1, freed + stat.st_size
                if not any(folder.glob(f"*{SUFFIX}")):
                    (folder / PROBE).unlink(missing_ok=True)
        return removed, freed

    def clear(self) -> tuple[int, int]:
        """Remove every segment (and the folders the cache made); returns (segments, bytes)."""
        from filelock import FileLock

        removed = freed = 0
        for folder in self._folders():
            with FileLock(folder / LOCK):
                for segment in folder.glob(f"*{SUFFIX}"):
                    removed, freed = removed + 1, freed + segment.stat().st_size
                    segment.unlink()
                (folder / PROBE).unlink(missing_ok=True)
            if not any(path.name != LOCK for path in folder.iterdir()):
                shutil.rmtree(folder, ignore_errors=True)
        return removed, freed

    def _folders(self) -> list[Path]:
        """The cache's (fingerprint, view) folders: only names it makes (32 hex digits); nothing else is touched."""
        return sorted(path for path in self.root.iterdir() if path.is_dir() and len(path.name) == 32
                      and all(c in "0123456789abcdef" for c in path.name))


def _write_segment(folder: Path, name: str, fingerprint: str, view: str, keys: Sequence[bytes],
                   vectors: np.ndarray) -> None:
    """Write a segment (see the module docstring) to a temporary name, then rename it `name` (caller holds the
    folder's lock). The vectors are written and hashed in place: no copy of them."""
    vectors = np.ascontiguousarray(vectors)
    header = orjson.dumps({"fingerprint": fingerprint, "view": view, "dtype": vectors.dtype.str,
                           "dim": int(vectors.shape[1]), "count": len(keys)})
    parts = (MAGIC + len(header).to_bytes(8, "little") + header, b"".join(key_digest(key) for key in keys),
             memoryview(vectors).cast("B"))
    digest = hashlib.sha256()
    temporary = folder / f".{name}.{uuid.uuid4().hex[:8]}.tmp"
    with open(temporary, "wb") as handle:
        for part in parts:
            digest.update(part)
            handle.write(part)
        handle.write(digest.digest())
    os.replace(temporary, folder / name)


def _header(data: bytes | memoryview) -> tuple[dict, int] | None:
    """(header, where the payload starts) of a segment's bytes; None when they do not start like a segment."""
    if bytes(data[:len(MAGIC)]) != MAGIC:
        return None
    start = len(MAGIC) + 8
    length = int.from_bytes(data[len(MAGIC):start], "little")
    try:
        header = orjson.loads(bytes(data[start:start + length]))
    except orjson.JSONDecodeError:
        return None
    return (header, start + length) if isinstance(header, dict) else None


def _count(segment: Path) -> int:
    with open(segment, "rb") as handle:
        start = handle.read(len(MAGIC) + 8)
        read = _header(start + handle.read(int.from_bytes(start[len(MAGIC):], "little")))
    return int(read[0].get("count", 0)) if read else 0


def _read_segment(segment: Path, fingerprint: str, view: str) -> tuple[list[bytes], np.ndarray] | None:
    """(key digests, vectors) of a segment that is whole and of (fingerprint, view); None, with a warning, else."""
    try:
        data = memoryview(segment.read_bytes())
    except FileNotFoundError:  # pruned meanwhile
        return None
    read = _header(data)
    problem = None
    if read is None:
        problem = "not a cache segment of this release's format (unreadable header)"
    elif len(data) < read[1] + _KEY_BYTES or hashlib.sha256(data[:-_KEY_BYTES]).digest() != data[-_KEY_BYTES:]:
        problem = "corrupt (its bytes do not match the digest it records)"
    elif read[0].get("fingerprint") != fingerprint or read[0].get("view") != view:
        problem = "of another model or role than its folder says"
    if problem is None:
        assert read is not None
        header, start = read
        try:
            count, dim, dtype = int(header["count"]), int(header["dim"]), np.dtype(header["dtype"])
            payload = data[start:-_KEY_BYTES]
            vectors = np.frombuffer(payload, dtype=dtype, offset=count * _KEY_BYTES).reshape(count, dim)
        except (KeyError, TypeError, ValueError) as error:
            problem = f"malformed ({error})"
    if problem is not None:
        log.warning("embedding cache: %s is %s; not used, its vectors are computed again (`scidocs-eval cache "
                    "clear` removes it)", segment, problem)
        return None
    digests = [bytes(payload[row * _KEY_BYTES:(row + 1) * _KEY_BYTES]) for row in range(count)]
    return digests, vectors
