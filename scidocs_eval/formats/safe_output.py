"""The output layer: every file and folder a command writes passes through here, and nothing of the user's is
replaced, deleted or written through.

Ownership is decided by proof, never by shape:
- a loose file (a results JSON, a table, an image, an embeddings file, a settings record) is the tool's when the
  per-user ledger (`{cache}/outputs/ledger/`, one record per absolute real path) holds the sha256 it had when
  the tool wrote it, and the file still has that sha256. A file edited since, or one that merely looks like
  ours (a JSON with a `tasks` key, a markdown table), is the user's.
- a folder the tool built (a suite, a report site, a checkpoint folder, a download) holds a manifest
  (`.scidocs-eval-files.json`, itself a ledger-proved file) listing every file with its sha256 as written; a
  listed file whose sha256 differs is the user's.

Every write is atomic (a temporary sibling, flushed and fsynced, renamed into place; no symlink followed out of
the destination folder), holds an exclusive lock on the output for the whole command (`output_session`; lock
files live in the cache, not beside the output), gives a new file the mode the umask gives and keeps the mode of
a file it replaces, and turns a full disk, a read-only folder or a refused permission into one line naming the
file, leaving no partial file. `--overwrite` (`output_session(overwrite=True)`) is the one way to replace a file
of the user's; a file of the user's is then replaced (the link itself, for a symlink), never written through.

Every write names the file's rows (`Rows`: the papers of an embeddings file, the tasks of a results file; None
for a file that is one whole, a settings record or an image), which the ledger keeps beside the file's sha256.
Replacing a file of the tool's that held rows the new one lacks says so in one warning line per file and command,
naming how many go and the first of them (docs/errors_and_files.md, "One rule for every file the tool writes").
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import shutil
import stat
import tempfile
import zlib
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import orjson

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.paths import cache_dir

if TYPE_CHECKING:
    from filelock import FileLock

MANIFEST = ".scidocs-eval-files.json"
"""In a folder the tool built: {"written_by": command, "files": {path relative to the folder: sha256}}."""

HOW_TO_PROCEED = "pass --overwrite to replace it, or choose another path"
DISK_ERRORS = {errno.ENOSPC: "no space left on the device", errno.EROFS: "read-only file system",
               errno.EACCES: "permission denied", errno.EPERM: "permission denied",
               errno.EDQUOT: "disk quota exceeded"}
_CHUNK = 1 << 22
_NAMED_ROWS = 5
"""rows named in the warning about rows a replaced file lost (the count says how many more)."""

log = logging.getLogger("scidocs_eval")


@dataclass
class Rows:
    """The rows a written file holds, each by its key: the papers of an embeddings file, the tasks of a results
    file. The output layer records them with the file and, when the file is replaced, names the rows the new file
    lacks. A writer that learns its rows as it writes `add`s them."""

    kind: str
    """what a row is, a plural noun: "papers", "tasks"."""
    keys: set[str] = field(default_factory=set)

    def add(self, keys: Iterable[str]) -> None:
        self.keys.update(keys)


@dataclass
class OutputSession:
    """The outputs one command claimed: their locks (held until the session ends) and `overwrite`; `inputs`: every
    file the command reads ({resolved path: how it was given and who reads it}, `declare_inputs`), none of which
    it may write,
    replace or delete, `--overwrite` or not; `input_folders`: the folders it reads whole; `before`: the rows each
    claimed file of the tool's held when the command first claimed it (None: a new file, a file of the user's, or
    one without recorded rows); `told`: the files whose lost rows were already named."""

    overwrite: bool = False
    locks: dict[str, FileLock] = field(default_factory=dict)
    inputs: dict[Path, str] = field(default_factory=dict)
    input_folders: dict[Path, str] = field(default_factory=dict)
    """{resolved folder: how it was given and who reads it} of the folders a command reads as folders (a dataset
    folder whose files it lists, a checkpoint): no path below one may be written, an existing file or a new one."""
    before: dict[str, Rows | None] = field(default_factory=dict)
    told: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Read:
    """A path a command reads, and who reads it (`by`: "task mag: its data file", "baseline specter: its 'model'
    parameter", "the command's --data option"), which a refusal to write there names. A path-like: it may stand
    wherever a path does."""

    path: str | os.PathLike[str]
    by: str

    def __fspath__(self) -> str:
        return os.fspath(self.path)

    def __str__(self) -> str:
        return str(self.path)


def given_as(option: str, paths: Iterable[str | os.PathLike[str] | None], reader: str = "the command"
             ) -> list[Read]:
    """The paths an option (or argument) names, as `Read`s: "read by the command as its --embeddings"."""
    return [path if isinstance(path, Read) else Read(path, f"{reader} as its {option}") for path in paths if path]


_SESSIONS: list[OutputSession] = []


@contextmanager
def output_session(overwrite: bool = False) -> Iterator[OutputSession]:
    """The scope of one command: every output it claims stays locked until the block ends; `overwrite` lets it
    replace files of the user's."""
    session = OutputSession(overwrite)
    _SESSIONS.append(session)
    try:
        yield session
    finally:
        _SESSIONS.remove(session)
        for lock in session.locks.values():
            lock.release()


@contextmanager
def _session() -> Iterator[OutputSession]:
    """The command's session, or (a call from Python outside any) one for this write only."""
    if _SESSIONS:
        yield _SESSIONS[-1]
    else:
        with output_session() as session:
            yield session


def _real(path: Path) -> Path:
    """The absolute path with every folder on the way resolved, the last component kept as is."""
    return Path(os.path.realpath(path.parent)) / path.name


def _key(real: Path) -> str:
    return hashlib.sha256(str(real).encode("utf-8", "surrogateescape")).hexdigest()


def _lock(session: OutputSession, path: Path, option: str) -> None:
    real = _real(path)
    key = _key(real)
    if key in session.locks:
        return
    from filelock import FileLock, Timeout  # filelock loads asyncio: not at start-up

    lock = FileLock(cache_dir("outputs", "locks") / f"{key}.lock", timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise ScidocsEvalError(f"{option} {path} is being written by another scidocs-eval command right now; wait "
                               "for it to finish, or choose another path") from None
    session.locks[key] = lock


def sha256_of(path: Path, size: int | None = None) -> str:
    """sha256 of the file at `path` (of its first `size` bytes when given)."""
    digest = hashlib.sha256()
    left = size
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK if left is None else min(_CHUNK, left)):
            digest.update(chunk)
            if left is not None:
                left -= len(chunk)
    return digest.hexdigest()


# -- the ledger of loose files ---------------------------------------------------------------------------------

def _ledger_file(real: Path) -> Path:
    return cache_dir("outputs", "ledger") / f"{_key(real)}.json"


def _write_ledger(path: Path, entry: dict[str, Any]) -> None:
    real = _real(path)
    record = _ledger_file(real)
    temporary = record.with_name(f"{record.name}.{os.getpid()}.tmp")
    temporary.write_bytes(orjson.dumps({"path": str(real), **entry}))
    os.replace(temporary, record)


def record_written(path: Path, rows: Rows | None = None) -> str:
    """Note in the ledger that the tool wrote `path` as it is now, holding `rows`; its sha256."""
    digest = sha256_of(path)
    _write_ledger(path, {"sha256": digest})
    _write_rows(path, rows)
    return digest


def _rows_file(real: Path) -> Path:
    return cache_dir("outputs", "ledger") / f"{_key(real)}.rows"


def _write_rows(path: Path, rows: Rows | None) -> None:
    record = _rows_file(_real(path))
    if rows is None:
        record.unlink(missing_ok=True)
        return
    temporary = record.with_name(f"{record.name}.{os.getpid()}.tmp")
    temporary.write_bytes(zlib.compress(orjson.dumps({"kind": rows.kind, "keys": sorted(rows.keys)}), 1))
    os.replace(temporary, record)


def recorded_rows(path: str | os.PathLike[str]) -> Rows | None:
    """The rows the ledger recorded when the tool last finished writing `path` (None when it recorded none); what
    they are worth depends on the file still being the tool's (`is_ours`)."""
    try:
        record = orjson.loads(zlib.decompress(_rows_file(_real(Path(path))).read_bytes()))
    except (OSError, zlib.error, orjson.JSONDecodeError):
        return None
    return Rows(record["kind"], set(record["keys"]))


def _tell_lost_rows(path: Path, rows: Rows | None, session: OutputSession) -> None:
    """One warning when the file of the tool's that `path` was when the command first claimed it held rows that
    `rows` (what it holds now) lacks; at most once per file and command."""
    key = _key(_real(path))
    before = session.before.get(key)
    if before is None or rows is None or before.kind != rows.kind or key in session.told:
        return
    lost = sorted(before.keys - rows.keys)
    if not lost:
        return
    session.told.add(key)
    named = ", ".join(lost[:_NAMED_ROWS]) + (f" and {len(lost) - _NAMED_ROWS} more" if len(lost) > _NAMED_ROWS
                                             else "")
    log.warning("%s replaced: %d of the %d %s it held are not in the new file and are gone (%s; it now holds %d); "
                "to keep them, write to another path, or write them all in one run", path, len(lost),
                len(before.keys), before.kind, named, len(rows.keys))


def _ledger_entry(real: Path) -> dict[str, Any] | None:
    """The ledger's record of the file at the resolved path `real` (what the tool wrote there), or None."""
    try:
        entry = orjson.loads(_ledger_file(real).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return entry if isinstance(entry, dict) and entry.get("path") == str(real) else None


def is_ours(path: str | os.PathLike[str]) -> bool:
    """Whether the tool wrote `path` as it is now (its sha256 is the one the ledger recorded; for a file a
    command was appending to when it stopped, its first bytes are those recorded when the appending began)."""
    path = Path(path)
    if path.is_symlink() or not path.is_file():
        return False
    entry = _ledger_entry(_real(path))
    if entry is None:
        return False
    if "sha256" in entry:
        return sha256_of(path) == entry["sha256"]
    info = path.stat()
    growing = entry.get("growing")
    return (isinstance(growing, dict) and growing.get("inode") == [info.st_dev, info.st_ino]
            and info.st_size >= growing["size"] and sha256_of(path, growing["size"]) == growing["sha256"])


# -- claiming an output ------------------------------------------------------------------------------------------

def check_output_file(path: str | os.PathLike[str], option: str = "output") -> Path:
    """`path` as a Path if a file can be written there; else a one-line error naming `option` and the path."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        raise ScidocsEvalError(f"{option} {path} is a folder; give a file path")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ScidocsEvalError(f"{option} {path}: {parent} is a file, not a folder")
            break
    return path


def _refuse_foreign(path: Path, option: str, session: OutputSession) -> bool:
    """Refuse a file of the user's (unless `--overwrite`); whether `path` is a file of the tool's."""
    if not (path.exists() or path.is_symlink()):
        return False
    if is_ours(path):
        return True
    if session.overwrite:
        return False
    if path.is_symlink():
        raise ScidocsEvalError(f"{option} {path} is a symbolic link (to {os.readlink(path)}); nothing is written "
                               f"through it: {HOW_TO_PROCEED}")
    raise ScidocsEvalError(f"{option} {path} already exists and {_not_ours_because(path)}; it is not replaced: "
                           f"{HOW_TO_PROCEED}")


def _not_ours_because(path: Path) -> str:
    """Why `path`, which the ledger does not prove a loose output of the tool's, is refused: a file of a folder the
    tool built (its manifest lists it), a file the tool wrote and the user changed since, or one this cache's
    ledger has no record of (a file of the user's, or the tool's written with another cache or before it was
    cleared: the likelier cause when the user did not make the file)."""
    real = _real(path)
    for folder in real.parents:
        manifest = folder / MANIFEST
        if manifest.is_file() and not manifest.is_symlink() and is_ours(manifest):
            recorded = orjson.loads(manifest.read_bytes())
            digest = recorded.get("files", {}).get(real.relative_to(folder).as_posix())
            built = f"the folder {folder} that {recorded.get('written_by')} built"
            if digest == sha256_of(path):
                return f"is a file of {built} (its {MANIFEST} lists it), not an output of this command"
            if digest is not None:
                return f"was not written by scidocs-eval as it is now (it was changed since it was written in {built})"
            break
    if _ledger_entry(real) is not None:
        return "was not written by scidocs-eval as it is now (it was changed since)"
    return (f"was not written by scidocs-eval (no record of it in this cache's ledger, "
            f"{cache_dir('outputs', 'ledger')}: if scidocs-eval wrote it, it was with another $SCIDOCS_EVAL_CACHE or "
            "before the cache was cleared)")


def claim_output(path: str | os.PathLike[str], option: str = "output") -> Path:
    """Lock the file `path` for the command and check that it may be written: not one of the command's inputs
    (`declare_inputs`), and new, or the tool's (see `is_ours`), or `--overwrite` given. Call it before long work so
    a refusal comes at once; every writer calls it too."""
    path = check_output_file(path, option)
    with _session() as session:
        _refuse_input(path, option, session.inputs, session.input_folders)
        _lock(session, path, option)
        ours = _refuse_foreign(path, option, session)
        session.before.setdefault(_key(_real(path)), recorded_rows(path) if ours else None)
    return path


def _finish_write(path: Path, rows: Rows | None, session: OutputSession) -> None:
    record_written(path, rows)
    _tell_lost_rows(path, rows, session)


def _input_source(path: Path, inputs: dict[Path, str], folders: dict[Path, str] | None = None) -> str | None:
    """How the command was given `path`, when it is one of `inputs` or below one of `folders`."""
    for key in (_real(path), Path(os.path.realpath(path))):
        if (source := inputs.get(key)) is not None:
            return source
        for folder, source in (folders or {}).items():
            if key == folder or folder in key.parents:
                return source
    return None


def _refuse_input(path: Path, option: str, inputs: dict[Path, str], folders: dict[Path, str] | None = None) -> None:
    if (source := _input_source(path, inputs, folders)) is not None:
        raise ScidocsEvalError(f"{option} {path} is also an input of this command ({source}); it is not replaced, "
                               "--overwrite or not: choose another path")


def declare_inputs(inputs: Collection[str | os.PathLike[str] | None],
                   folders: Collection[str | os.PathLike[str]] = ()) -> dict[Path, str]:
    """Note every file `inputs` names (each file inside an input folder too, `input_files`) and every folder of
    `folders` (read whole: every path below it, present or not) as read by the command: no writer of its output
    session then writes, replaces or deletes one of them, `--overwrite` or not; a refusal names who reads the path
    (a `Read`'s `by`). Returns the files."""
    with _session() as session:
        return _declare(session, inputs, folders)


def _declare(session: OutputSession, inputs: Collection[str | os.PathLike[str] | None],
             folders: Collection[str | os.PathLike[str]]) -> dict[Path, str]:
    read = input_files(inputs)
    for key, source in read.items():
        session.inputs.setdefault(key, source)
    for given in folders:
        source = f"in {given}, read whole by {given.by}" if isinstance(given, Read) else \
            f"in the folder {given}, which it reads"
        for key in (Path(os.path.realpath(given)), Path(os.path.abspath(given))):
            session.input_folders.setdefault(key, source)
    return read


def input_files(inputs: Collection[str | os.PathLike[str] | None]) -> dict[Path, str]:
    """{resolved path: how the command was given it} of every file a command reads: each input file, and each
    file inside an input folder (a suite, a training folder, an HF dataset), however deep; a link is resolved."""
    read: dict[Path, str] = {}
    for given in inputs:
        if not given:
            continue
        path = Path(given)
        by = f", read by {given.by}" if isinstance(given, Read) else ""
        if path.is_dir():
            for folder, _, names in os.walk(path, followlinks=True):
                for name in names:
                    inside = Path(folder) / name
                    source = f"{inside}, in {given}{by}" if by else f"{inside}, in the input folder {given}"
                    read.setdefault(_real(inside), source)
                    read.setdefault(Path(os.path.realpath(inside)), source)
        else:
            read.setdefault(_real(path), f"{given}{by}")
            read.setdefault(Path(os.path.realpath(path)), f"{given}{by}")
    return read


def claim_inputs_are_not_outputs(inputs: Collection[str | os.PathLike[str] | None], outputs: dict[str, Any],
                                 folders: Collection[str | os.PathLike[str]] = ()) -> None:
    """A one-line error when an output option names a file the command reads (`plot --json emb.jsonl`; a file of
    an input folder: `audit --train FOLDER --out FOLDER/data.json`) or a path below a folder it reads whole
    (`folders`), `--overwrite` or not; the inputs stay declared for the command's other writes
    (`declare_inputs`)."""
    with _session() as session:
        _declare(session, inputs, folders)
        for option, output in outputs.items():
            if output:
                _refuse_input(Path(output), option, session.inputs, session.input_folders)


@contextmanager
def disk_errors(path: Path, option: str) -> Iterator[None]:
    """A full disk, a read-only folder, a refused permission: one line naming the file `option` writes."""
    try:
        yield
    except OSError as error:
        if error.errno in DISK_ERRORS:
            raise ScidocsEvalError(f"{option} {path}: cannot write ({DISK_ERRORS[error.errno]}); nothing was "
                                   "written there") from None
        raise


def _new_file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _mode_for(path: Path) -> int:
    if path.is_file() and not path.is_symlink():
        return stat.S_IMODE(path.stat().st_mode)
    return _new_file_mode()


# -- writing a loose file ----------------------------------------------------------------------------------------

@contextmanager
def atomic_write(path: str | os.PathLike[str], option: str = "output", *, rows: Rows | None) -> Iterator[IO[bytes]]:
    """A binary handle whose bytes replace `path` only when the block ends without an exception (claimed first,
    see `claim_output`); the file is then recorded as the tool's, holding `rows` (see `Rows`; None: one whole)."""
    with _session() as session:
        path = claim_output(path, option)
        with _atomic_handle(path, option) as handle:
            yield handle
        _finish_write(path, rows, session)


@contextmanager
def _atomic_handle(path: Path, option: str) -> Iterator[IO[bytes]]:
    with disk_errors(path, option):
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = _mode_for(path)
        descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
        try:
            os.fchmod(descriptor, mode)
            with os.fdopen(descriptor, "wb") as handle:
                yield handle
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


def write_bytes_atomically(path: str | os.PathLike[str], data: bytes, option: str = "output", *,
                           rows: Rows | None) -> Path:
    """`path.write_bytes(data)` through `atomic_write`."""
    with atomic_write(path, option, rows=rows) as handle:
        handle.write(data)
    return Path(path)


@contextmanager
def growing_file(path: str | os.PathLike[str], option: str = "output", append: bool = False,
                 keep_bytes: int | None = None, *, rows: Rows | None) -> Iterator[IO[bytes]]:
    """A handle (positioned at the end) on `path` for a long write that an interrupted run may continue
    (`append`: keep what is there, its first `keep_bytes` bytes when given; else start empty). The file stays the
    tool's while it grows, so an interrupted run's file can be resumed; a full disk or a read-only folder puts
    back what was there (nothing, for a new file). `rows`: what the file holds when the block ends (see `Rows`)."""
    with _session() as session:
        path = claim_output(path, option)
        with _growing_handle(path, option, append, keep_bytes) as handle:
            yield handle
        _finish_write(path, rows, session)


@contextmanager
def _growing_handle(path: Path, option: str, append: bool, keep_bytes: int | None) -> Iterator[IO[bytes]]:
    with disk_errors(path, option):
        path.parent.mkdir(parents=True, exist_ok=True)
        existed = append and path.is_file() and not path.is_symlink()
        if not existed:
            mode = _mode_for(path)
            path.unlink(missing_ok=True)
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode))
            os.chmod(path, mode)
        elif keep_bytes is not None:
            os.truncate(path, keep_bytes)
        info = path.stat()
        _write_ledger(path, {"growing": {"inode": [info.st_dev, info.st_ino], "size": info.st_size,
                                         "sha256": sha256_of(path)}})
        try:
            with open(path, "r+b") as handle:
                handle.seek(0, os.SEEK_END)
                yield handle
                handle.flush()
                os.fsync(handle.fileno())
        except BaseException as error:
            if isinstance(error, OSError) and error.errno in DISK_ERRORS and existed:
                os.truncate(path, info.st_size)
            elif not existed and (isinstance(error, OSError) and error.errno in DISK_ERRORS
                                  or path.stat().st_size == 0):
                path.unlink(missing_ok=True)  # nothing to resume: no file left
            raise


def move_ours(source: str | os.PathLike[str], target: str | os.PathLike[str], option: str = "output") -> Path:
    """Move a file the tool wrote (`is_ours`) to `target`, which must be claimable (`claim_output`); the ledger
    then knows `target`. A `source` that is not the tool's is an error and nothing moves."""
    with _session() as session:
        source, target = Path(source), claim_output(target, option)
        if not is_ours(source):
            raise ScidocsEvalError(f"{option} {source} was not written by scidocs-eval (or was changed since); it is "
                                   f"not moved to {target}")
        rows = recorded_rows(source)
        with disk_errors(target, option):
            os.replace(source, target)
        _write_rows(source, None)
        _finish_write(target, rows, session)
    return target


def discard(path: str | os.PathLike[str]) -> None:
    """Delete `path` if the tool wrote it as it is now (see `is_ours`) and the command does not read it; anything
    else is left alone."""
    path = Path(path)
    with _session() as session:
        if is_ours(path) and _input_source(path, session.inputs, session.input_folders) is None:
            path.unlink()


# -- folders the tool builds -------------------------------------------------------------------------------------

def _inside(folder: Path, target: Path) -> bool:
    """Whether `target`'s folder, all links resolved, is inside `folder` (resolved): no link on the way leads out."""
    return Path(os.path.realpath(target.parent)).is_relative_to(os.path.realpath(folder))


class OwnedFolder:
    """A folder the tool writes (with its manifest); see `open_owned_folder`."""

    def __init__(self, folder: Path, command: str, option: str, files: dict[str, str]):
        self.folder, self.command, self.option = folder, command, option
        self.files = files
        """{relative path: sha256 as written} of every file the tool wrote here."""

    def owns(self, name: str) -> bool:
        """Whether the tool wrote `name` (relative) as it is now."""
        target = self.folder / name
        return (name in self.files and not target.is_symlink() and target.is_file()
                and _inside(self.folder, target) and sha256_of(target) == self.files[name])

    def _in_the_way(self, name: str, overwrite: bool) -> str | None:
        """Why `name` cannot be written in the folder: a link on the way leading out, a file of the user's."""
        target = self.folder / name
        for parent in [*reversed(target.parents[: len(Path(name).parts) - 1])]:
            if parent.is_symlink():
                return f"{parent} is a symbolic link; nothing is written through it: choose another folder"
            if parent.exists() and not parent.is_dir():
                return f"{parent} is a file of yours where a folder is to be written; {HOW_TO_PROCEED}"
        if not (target.exists() or target.is_symlink()) or overwrite or self.owns(name):
            return None
        return f"{target} is in the way and was not written by {self.command} (or was changed since); {HOW_TO_PROCEED}"

    def refuse_in_the_way(self, names: Collection[str], removed: Collection[str] = ()) -> None:
        """A one-line error naming the first of `names` (relative) that is the user's, or a link on its way, or
        the first of `names` and `removed` that is an input of the command."""
        with _session() as session:
            for name in [*names, *removed]:
                _refuse_input(self.folder / name, self.option, session.inputs, session.input_folders)
            for name in names:
                if (why := self._in_the_way(name, session.overwrite)) is not None:
                    raise ScidocsEvalError(f"{self.option} {why}; nothing was changed")

    def install(self, staging: Path, under: str = "", replace_all: bool = False) -> None:
        """Move every file of `staging` into the folder (below `under`), replacing only files the tool wrote;
        with `replace_all`, the tool's other files there go (a rebuild). Nothing changes if a file is in the way."""
        self._move({str(Path(under, p.relative_to(staging))): p for p in sorted(staging.rglob("*"))
                    if p.is_file() and not p.is_symlink()}, replace_all)

    def install_file(self, source: Path, name: str) -> None:
        """Move the finished file `source` (same file system) to `name` (relative), as `install` would."""
        self._move({name: source}, replace_all=False)

    def write_bytes(self, name: str, data: bytes) -> None:
        """Write `data` as the file `name` (relative), atomically, as `install` would."""
        with self.staging() as staging:
            (staging / "file").write_bytes(data)
            self.install_file(staging / "file", name)

    def _move(self, new: dict[str, Path], replace_all: bool) -> None:
        old = set(self.files) - set(new) if replace_all else set()
        self.refuse_in_the_way(new, [name for name in old if self.owns(name)])
        if old:
            named = ", ".join(sorted(old)[:_NAMED_ROWS]) + (f" and {len(old) - _NAMED_ROWS} more"
                                                           if len(old) > _NAMED_ROWS else "")
            log.warning("%s %s rebuilt: %d of the %d files the earlier build wrote are not in this one and are gone "
                        "(%s); to keep them, build into another folder, or build them all in one run", self.option,
                        self.folder, len(old), len(self.files), named)
        with disk_errors(self.folder, self.option):
            self.folder.mkdir(parents=True, exist_ok=True)
            digests = {name: sha256_of(source) for name, source in new.items()}
            self.files.update(digests)
            self.write_manifest()
            self.remove(old)
            for name, source in new.items():
                target = self.folder / name
                mode = _mode_for(target)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.chmod(source, mode)
                os.replace(source, target)

    def remove(self, names: Collection[str]) -> None:
        """Delete the tool's files `names` (a changed one is the user's and stays) and the folders left empty; an
        input of the command is refused."""
        self.refuse_in_the_way([], [name for name in names if self.owns(name)])
        emptied: set[Path] = set()
        for name in names:
            target = self.folder / name
            if self.owns(name):
                target.unlink()
                emptied.update(p for p in target.parents if self.folder in p.parents)
            self.files.pop(name, None)
        for directory in sorted(emptied, key=lambda p: len(p.parts), reverse=True):
            if directory.is_dir() and not directory.is_symlink() and not any(directory.iterdir()):
                directory.rmdir()
        self.write_manifest()

    def remove_under(self, under: str) -> None:
        """`remove` every file the tool wrote below the relative folder `under`."""
        self.remove([name for name in self.files if Path(under) in Path(name).parents])

    def write_manifest(self) -> None:
        write_bytes_atomically(self.folder / MANIFEST, orjson.dumps(
            {"written_by": self.command, "files": dict(sorted(self.files.items()))}, option=orjson.OPT_INDENT_2),
            self.option, rows=None)  # the folder's files are its rows: a rebuild names those it drops (`_move`)

    @contextmanager
    def staging(self) -> Iterator[Path]:
        """An empty folder beside the folder (same file system) to write files into before `install`."""
        with disk_errors(self.folder, self.option):
            self.folder.parent.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=f".{self.folder.name}.", suffix=".building",
                                            dir=self.folder.parent))
        try:
            with disk_errors(self.folder, self.option):
                yield staging
        except ScidocsEvalError as error:  # name the file where it was to go, not its staging copy
            raise ScidocsEvalError(str(error).replace(str(staging), str(self.folder))) from None
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def _read_manifest(folder: Path, command: str, option: str, replaces: Collection[str] | None,
                   overwrite: bool) -> dict[str, str]:
    """The files an earlier run of the tool wrote in `folder` (see `open_owned_folder`)."""
    if not folder.exists():
        return {}
    if not folder.is_dir():
        raise ScidocsEvalError(f"{option} {folder} is a file; give a folder to write into")
    manifest = folder / MANIFEST
    if not manifest.exists() and not manifest.is_symlink():
        if any(folder.iterdir()) and not overwrite:
            raise ScidocsEvalError(f"{option} {folder} is not empty and was not written by {command} (no {MANIFEST} "
                                   f"in it); nothing was changed: give a new or empty folder, or pass --overwrite "
                                   "to write into it (files of yours that are in the way are replaced, the others "
                                   "kept)")
        return {}
    if not is_ours(manifest):
        if overwrite:
            return {}
        raise ScidocsEvalError(f"{option} {manifest} was not written by scidocs-eval (or was changed since); nothing "
                               f"was changed: give a new or empty folder, or pass --overwrite to write into it")
    recorded = orjson.loads(manifest.read_bytes())
    written_by = recorded.get("written_by")
    if replaces is not None and written_by not in replaces and not overwrite:
        raise ScidocsEvalError(f"{option} {folder} was written by {written_by or 'another command'}, not {command} "
                               f"(its {MANIFEST} says so); nothing was changed: give a new or empty folder, or pass "
                               "--overwrite to write into it")
    files = recorded.get("files")
    return {name: digest for name, digest in files.items()
            if not Path(name).is_absolute() and ".." not in Path(name).parts}


@contextmanager
def open_owned_folder(folder: str | os.PathLike[str], command: str, option: str = "output",
                      replaces: Collection[str] | None = None) -> Iterator[OwnedFolder]:
    """Lock `folder` for the command and open it for writing: new, empty, or built by the tool (its manifest, a
    file of the tool's, lists what the tool wrote; with `replaces`, it must name one of these commands). A
    non-empty folder without a manifest is refused unless `--overwrite` is given."""
    folder = Path(folder)
    with _session() as session:
        _lock(session, folder, option)
        files = _read_manifest(folder, command, option, replaces, session.overwrite)
        yield OwnedFolder(folder, command, option, files)


def claim_output_folder(folder: str | os.PathLike[str], command: str, option: str = "output",
                        replaces: Collection[str] | None = None) -> Path:
    """Lock `folder` for the command and refuse now, before any work, what `owned_folder` would refuse when the
    command writes it at the end: a folder of the user's, one another command built, a file of the tool's that the
    user changed since."""
    with open_owned_folder(folder, command, option, replaces) as owned:
        owned.refuse_in_the_way(list(owned.files))
    return Path(folder)


@contextmanager
def owned_folder(folder: str | os.PathLike[str], command: str, replaces: Collection[str] | None = None,
                 option: str = "output") -> Iterator[Path]:
    """A fresh staging folder to write into; when the block succeeds, its files replace those an earlier run of
    the tool wrote in `folder` (other files there are kept; see `open_owned_folder` for what is refused)."""
    with open_owned_folder(folder, command, option, replaces) as owned:
        owned.refuse_in_the_way(list(owned.files))  # a file of the tool's that you changed: refused before the work
        with owned.staging() as staging:
            yield staging
            owned.install(staging, replace_all=True)
