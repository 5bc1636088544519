"""Writing outputs without harming what is already there.

- `check_output_file` fails at once, in one line, when a path cannot be a file we write (a folder, a path
  under a file), before any long work starts.
- `atomic_write` writes through a temporary sibling renamed into place: an error or Ctrl-C leaves the old file
  (or nothing), never an empty or partial one.
- `refuse_existing` stops before replacing a non-empty file the user did not ask us to replace.
- `owned_folder` builds a folder (a suite, a report site) in a staging folder beside it, then moves the files
  in. A manifest in the folder lists the files the tool wrote; a rebuild removes only those. A non-empty folder
  without a manifest is refused, so a user's files are never deleted or overwritten; so is, where the caller
  says which commands' folders it may replace (`replaces`), a folder another command wrote.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import orjson

from scidocs_eval.errors import ScidocsEvalError

MANIFEST = ".scidocs-eval-files.json"
"""In a folder the tool built: {"written_by": command, "files": [paths relative to the folder]}."""


def check_output_file(path: str | os.PathLike[str], option: str = "output") -> Path:
    """`path` as a Path if a file can be written there; else a one-line error naming `option` and the path."""
    path = Path(path)
    if path.is_dir():
        raise ScidocsEvalError(f"{option} {path} is a folder; give a file path")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ScidocsEvalError(f"{option} {path}: {parent} is a file, not a folder")
            break
    return path


@contextmanager
def atomic_write(path: str | os.PathLike[str], option: str = "output") -> Iterator[IO[bytes]]:
    """A binary handle whose bytes replace `path` only when the block ends without an exception."""
    path = check_output_file(path, option)
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            yield handle
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_bytes_atomically(path: str | os.PathLike[str], data: bytes, option: str = "output") -> Path:
    """`path.write_bytes(data)` through `atomic_write`."""
    with atomic_write(path, option) as handle:
        handle.write(data)
    return Path(path)


def refuse_existing(path: str | os.PathLike[str], option: str, how: str) -> None:
    """A one-line error if `path` is a non-empty file: it is not replaced unless the user says so (`how`)."""
    path = Path(path)
    if path.is_file() and path.stat().st_size:
        raise ScidocsEvalError(f"{option} {path} already exists ({path.stat().st_size} bytes) and would be "
                               f"replaced; {how}")


def refuse_replacing_foreign(path: str | os.PathLike[str], option: str, ours: Callable[[Path], bool],
                             what: str) -> Path:
    """`path` (checked as `check_output_file` does) if it is new, empty, or `ours(path)` says the tool wrote it (it
    is `what`); else a one-line error: a file of another kind is never replaced."""
    path = check_output_file(path, option)
    if path.is_file() and path.stat().st_size and not ours(path):
        raise ScidocsEvalError(f"{option} {path} exists and is not {what}; it is not replaced: give another path")
    return path


def _owned_files(folder: Path, command: str, replaces: Collection[str] | None) -> set[str]:
    """The files an earlier run of the tool wrote in `folder` (none if it is new or empty); an error if `folder`
    is a file, holds files and no manifest, or (with `replaces`) was written by a command not in `replaces`."""
    if not folder.exists():
        return set()
    if not folder.is_dir():
        raise ScidocsEvalError(f"{folder} is a file; give a folder to write into")
    manifest = folder / MANIFEST
    if not manifest.is_file():
        if any(folder.iterdir()):
            raise ScidocsEvalError(f"{folder} is not empty and was not written by {command} (no {MANIFEST} in it); "
                                   "nothing was changed: give a new or empty folder")
        return set()
    try:
        recorded = orjson.loads(manifest.read_bytes())
    except orjson.JSONDecodeError:
        recorded = None
    files = recorded.get("files") if isinstance(recorded, dict) else None
    if not isinstance(files, list):
        raise ScidocsEvalError(f"{manifest}: not a valid list of written files; nothing was changed: give a new "
                               "or empty folder")
    written_by = recorded.get("written_by")
    if replaces is not None and written_by not in replaces:
        raise ScidocsEvalError(f"{folder} was written by {written_by or 'another command'}, not {command} (its "
                               f"{MANIFEST} says so); nothing was changed: give a new or empty folder")
    outside = [f for f in files if not isinstance(f, str) or Path(f).is_absolute() or ".." in Path(f).parts]
    if outside:
        raise ScidocsEvalError(f"{manifest}: lists {outside[0]!r}, not a path inside {folder}; nothing was changed")
    return set(files)


def _write_manifest(folder: Path, command: str, files: set[str]) -> None:
    write_bytes_atomically(folder / MANIFEST, orjson.dumps({"written_by": command, "files": sorted(files)},
                                                           option=orjson.OPT_INDENT_2))


def _remove_owned(folder: Path, files: set[str]) -> None:
    """Delete `files` (relative to `folder`) and the folders they leave empty, never `folder` itself."""
    emptied: set[Path] = set()
    for name in files:
        path = folder / name
        path.unlink(missing_ok=True)
        emptied.update(p for p in path.parents if folder in p.parents)
    for directory in sorted(emptied, key=lambda p: len(p.parts), reverse=True):
        if directory.is_dir() and not any(directory.iterdir()):
            directory.rmdir()


def _in_the_way(folder: Path, name: str, owned: set[str]) -> Path | None:
    """What of the user's would stop `name` being written in `folder`: the file itself, or a file where a
    folder on its way should be."""
    target = folder / name
    if target.exists() and name not in owned:
        return target
    for parent in (p for p in target.parents if folder in p.parents):
        if parent.exists() and not parent.is_dir() and str(parent.relative_to(folder)) not in owned:
            return parent
    return None


def _install(staging: Path, folder: Path, command: str, owned: set[str]) -> None:
    new = {str(p.relative_to(staging)) for p in staging.rglob("*") if p.is_file()}
    for name in sorted(new):
        if (taken := _in_the_way(folder, name, owned)) is not None:
            raise ScidocsEvalError(f"{taken} is in the way and was not written by {command}; nothing was "
                                   "changed: move it away or give another folder")
    folder.mkdir(parents=True, exist_ok=True)
    _write_manifest(folder, command, owned | new)
    _remove_owned(folder, owned - new)
    for name in sorted(new):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / name, folder / name)
    _write_manifest(folder, command, new)


@contextmanager
def owned_folder(folder: str | os.PathLike[str], command: str,
                 replaces: Collection[str] | None = None) -> Iterator[Path]:
    """A fresh staging folder to write into; when the block succeeds, its files replace those an earlier run of
    `command` wrote in `folder` (other files there are kept). Refuses (before the block runs) a folder that
    holds files but no manifest, or whose manifest names a command not in `replaces` (None: any command of the
    tool, as `demo` and `data build` write the same kind of folder), and (after) any file of the user's that a
    new file would replace."""
    folder = Path(folder)
    owned = _owned_files(folder, command, replaces)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".building", dir=folder.parent))
    try:
        yield staging
        _install(staging, folder, command, owned)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
