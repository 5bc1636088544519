"""`owned_folder`: which earlier folders a run may replace (the manifest's `written_by` against `replaces`);
`move_ours`: only a file of the tool's moves, and the ledger follows it; every write names its rows, and a
replacement that lacks some of them says so once."""

from __future__ import annotations

import ast
import hashlib
import logging
from pathlib import Path

import orjson
import pytest

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.formats.safe_output import (
    MANIFEST,
    Rows,
    claim_output,
    is_ours,
    move_ours,
    output_session,
    owned_folder,
    recorded_rows,
    write_bytes_atomically,
)

REPO = Path(__file__).resolve().parent.parent


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


# -- one rule for every file the tool writes: rows a replacement lacks are named -----------------------------------

WRITERS = ("atomic_write", "write_bytes_atomically", "growing_file", "write_embeddings_file")
"""The output layer's loose-file writers, and the embeddings writer above them; each call says what rows it writes."""
ROWS_KEYWORDS = {"rows", "paper_ids"}


def _writer_calls() -> list[tuple[str, int, str, set[str]]]:
    found = []
    for package in ("scidocs_eval", "leaderboard", "baselines", "tasks"):
        for source in sorted((REPO / package).rglob("*.py")):
            for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call):
                    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                    if name in WRITERS:
                        found.append((source.relative_to(REPO).as_posix(), node.lineno, name,
                                      {keyword.arg for keyword in node.keywords if keyword.arg}))
    return found


def test_every_write_says_which_rows_it_writes() -> None:
    """Rows (or None, for a file that is one whole) are a keyword with no default, named at every call: a new
    writer cannot leave the rule out."""
    calls = _writer_calls()
    assert len(calls) >= 15
    unnamed = [f"{file}:{line} {name}" for file, line, name, keywords in calls if not keywords & ROWS_KEYWORDS]
    assert not unnamed, f"name the rows these writes hold (rows=Rows(kind, keys), or rows=None): {unnamed}"


def test_replacing_a_file_that_held_rows_the_new_one_lacks_says_so_once(tmp_path: Path,
                                                                         caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "vectors.jsonl"
    write_bytes_atomically(path, b"abc", rows=Rows("papers", {"a", "b", "c"}))
    with caplog.at_level(logging.WARNING):
        write_bytes_atomically(path, b"abcd", rows=Rows("papers", {"a", "b", "c", "d"}))  # more rows: nothing said
        assert not caplog.records
        with output_session():  # one command writing the file twice: one line, against what it held before
            write_bytes_atomically(path, b"a", rows=Rows("papers", {"a"}))
            write_bytes_atomically(path, b"", rows=Rows("papers", set()))
    assert [r.getMessage() for r in caplog.records] == [
        f"{path} replaced: 3 of the 4 papers it held are not in the new file and are gone (b, c, d; it now holds 1); "
        "to keep them, write to another path, or write them all in one run"]
    assert recorded_rows(path) == Rows("papers", set())
    # a file of the user's replaced with --overwrite: its rows are not known, nothing is claimed about them
    path.write_bytes(b"the user's")
    caplog.clear()
    with caplog.at_level(logging.WARNING), output_session(overwrite=True):
        write_bytes_atomically(path, b"x", rows=Rows("papers", set()))
    assert not caplog.records


def test_moving_a_file_of_the_tools_carries_its_rows(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    staging, final = tmp_path / "staging.jsonl", tmp_path / "final.jsonl"
    write_bytes_atomically(final, b"old", rows=Rows("papers", {"a", "b"}))
    write_bytes_atomically(staging, b"new", rows=Rows("papers", {"a"}))
    with caplog.at_level(logging.WARNING):
        move_ours(staging, final)
    assert recorded_rows(final) == Rows("papers", {"a"}) and recorded_rows(staging) is None
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [f"{final} replaced"]


def test_a_rebuilt_folder_names_the_files_the_rebuild_drops(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = tmp_path / "suite"
    build(folder, "tool a", {"mag/train.csv": "1", "cite/test.qrel": "2"})
    with caplog.at_level(logging.WARNING):
        build(folder, "tool a", {"cite/test.qrel": "3"})
    assert [r.getMessage() for r in caplog.records] == [
        f"output {folder} rebuilt: 1 of the 2 files the earlier build wrote are not in this one and are gone "
        "(mag/train.csv); to keep them, build into another folder, or build them all in one run"]


def test_a_loose_output_onto_a_file_of_a_built_folder_names_the_folder(tmp_path: Path) -> None:
    """An output file aimed at a file of a folder the tool built (`convert` or `table -o` onto a suite's file) is
    refused as that folder's file, not as a file "not written by scidocs-eval"; once the user changed it, as
    changed."""
    folder = tmp_path / "suite"
    build(folder, "scidocs-eval demo", {"SYNTHETIC.md": "synthetic", "cite/test.qrel": "q 0 p 1\n"})
    target = folder / "cite" / "test.qrel"
    with output_session(), pytest.raises(ScidocsEvalError) as refused:
        claim_output(target, "--out")
    assert str(refused.value) == (f"--out {target} already exists and is a file of the folder {folder.resolve()} that "
                                  f"scidocs-eval demo built (its {MANIFEST} lists it), not an output of this command; "
                                  "it is not replaced: pass --overwrite to replace it, or choose another path")
    target.write_text("q 0 p 0\n")
    with output_session(), pytest.raises(ScidocsEvalError, match=r"already exists and was not written by "
                                         r"scidocs-eval as it is now \(it was changed since it was written in the "
                                         r"folder .* that scidocs-eval demo built\)"):
        claim_output(target, "--out")
    assert target.read_text() == "q 0 p 0\n"
