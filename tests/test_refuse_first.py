"""Refuse before working: every output of every command (found by walking the parser through `add_output`, never
listed here), aimed at a file or folder of the user's, is refused before the command's first expensive step. No
progress bar or announcement was started (every long step shows progress, so none started means none ran), the
user's bytes are unchanged, and the refusal is one line naming the path."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import tqdm.std
from test_output_layer import World, _argv, _digests, _kind, _outputs, _run, _suffix
from test_output_layer import world as world  # noqa: F401 (the fixture)

REFUSAL_SECONDS = 30
"""A generous bound for a refusal in-process on a loaded machine; the real check is that no long step began."""


@pytest.fixture()
def long_steps(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every progress bar (ours or a library's tqdm) and announcement started while the test runs."""
    started: list[str] = []
    original = tqdm.std.tqdm.__init__

    def bar(self: tqdm.std.tqdm, *args: object, **kwargs: object) -> None:
        started.append(f"progress bar {kwargs.get('desc')!r}")
        original(self, *args, **kwargs)

    def announce(cls: type, line: str, *args: object, **kwargs: object) -> None:
        started.append(f"announcement {line!r}")

    monkeypatch.setattr(tqdm.std.tqdm, "__init__", bar)
    monkeypatch.setattr(tqdm.std.tqdm, "write", classmethod(announce))  # what `progress.announce` prints through
    monkeypatch.delenv("SCIDOCS_EVAL_QUIET", raising=False)
    return started


def _users(target: Path, kind: str) -> None:
    """A file of the user's at `target`, or a folder of the user's holding one."""
    if kind == "folder":
        target.mkdir()
        (target / "notes.txt").write_bytes(b"the user's notes")
    else:
        target.write_bytes(b"the user's own file")


@pytest.mark.parametrize(("command", "flag"), _outputs())
def test_an_output_of_the_users_is_refused_before_any_work(command: str, flag: str, world: World, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str],
                                                           long_steps: list[str]) -> None:
    kind = _kind(command, flag)
    spare = tmp_path / "spare"
    spare.mkdir()
    target = tmp_path / ("mine" + (_suffix(command, flag) if kind == "file" else ""))
    _users(target, kind)
    argv = [arg for arg in _argv(world, command, flag, target, spare) if arg != "--quiet"]
    if kind == "folder" and _run(argv, capsys)[0] == 0:
        # a folder the command writes loose files into (baseline's --out-dir): the files it wrote, each edited
        # by the user, are the user's files in the way
        for written in (p for p in target.rglob("*") if p.is_file() and p.name != "notes.txt"):
            written.write_bytes(written.read_bytes() + b"\nthe user's edit\n")
        long_steps.clear()
    before = _digests(tmp_path)
    started = time.perf_counter()
    code, err = _run(argv, capsys)
    seconds = time.perf_counter() - started
    assert code == 2 and err and err[-1].startswith("scidocs-eval: error: ") and str(target) in err[-1], (argv, err)
    assert not long_steps, f"{command} {flag}: work began before the refusal: {long_steps}"
    assert _digests(tmp_path) == before
    assert seconds < REFUSAL_SECONDS, f"{command} {flag}: refused after {seconds:.1f} s"
