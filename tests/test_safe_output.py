"""`owned_folder`: which earlier folders a run may replace (the manifest's `written_by` against `replaces`);
`move_ours`: only a file of the tool's moves, and the ledger follows it."""

from __future__ import annotations

import hashlib
from pathlib import Path

import orjson
import pytest

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.formats.safe_output import MANIFEST, is_ours, move_ours, owned_folder, write_bytes_atomically


def build(folder: Path, command: str, files: dict[str, str], replaces: tuple[str, ...] | None = None) -> None:
    with owned_folder(folder, command, replaces=replaces) as staging:
        for name, text in files.items():
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            (staging / name).write_text(text, encoding="utf-8")


def test_replaces_limits_the_folders_a_run_may_replace_to_those_its_commands_wrote(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    build(folder, "tool a", {"x.txt": "a", "sub/y.txt": "a"})
    # without `replaces`, any command of the tool replaces an earlier run's files (suite builders share them)
    build(folder, "tool b", {"x.txt": "b"})
    assert orjson.loads((folder / MANIFEST).read_bytes()) == {"written_by": "tool b", "files": {
        "x.txt": hashlib.sha256(b"b").hexdigest()}}
    assert not (folder / "sub").exists()
    # with it, a folder another command wrote is refused before the block runs, and nothing changes
    with pytest.raises(ScidocsEvalError, match=rf"^output {folder} was written by tool b, not tool c \(its {MANIFEST} "
                       r"says so\); nothing was changed: give a new or empty folder, or pass --overwrite"):
        build(folder, "tool c", {"x.txt": "c"}, replaces=("tool c",))
    assert (folder / "x.txt").read_text(encoding="utf-8") == "b"
    build(folder, "tool c", {"x.txt": "c"}, replaces=("tool c", "tool b"))
    build(folder, "tool c", {"z.txt": "c"}, replaces=("tool c",))
    assert sorted(p.name for p in folder.iterdir()) == [MANIFEST, "z.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no staging folder left behind
    # a manifest the tool did not write (a hand-made one, or ours edited) proves nothing
    (folder / MANIFEST).write_bytes(orjson.dumps({"written_by": "tool c", "files": {"z.txt": "0" * 64}}))
    with pytest.raises(ScidocsEvalError, match=f"{MANIFEST} was not written by scidocs-eval"):
        build(folder, "tool c", {"z.txt": "c"}, replaces=("tool c",))


def test_move_ours_moves_only_the_tools_files_and_the_ledger_follows(tmp_path: Path) -> None:
    ours = write_bytes_atomically(tmp_path / "record.json", b'{"a": 1}', rows=None)
    moved = move_ours(ours, tmp_path / "moved.json")
    assert moved.read_bytes() == b'{"a": 1}' and is_ours(moved) and not ours.exists()
    theirs = tmp_path / "notes.json"
    theirs.write_bytes(b"mine")
    with pytest.raises(ScidocsEvalError, match="notes.json was not written by scidocs-eval"):
        move_ours(theirs, tmp_path / "elsewhere.json")
    assert theirs.read_bytes() == b"mine" and not (tmp_path / "elsewhere.json").exists()
    with pytest.raises(ScidocsEvalError, match="notes.json already exists and was not written by scidocs-eval"):
        move_ours(moved, theirs)  # nor over a file of the user's
    assert theirs.read_bytes() == b"mine" and moved.is_file()
