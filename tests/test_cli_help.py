"""The CLI explains itself: every command and option (of every command, whoever adds it) has help text, `--version`
and a bare `scidocs-eval` work, and each idea has one spelling across commands."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from scidocs_eval.cli.main import build_parser, main


def walk(parser: argparse.ArgumentParser, path: str = "scidocs-eval") -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """(command path, parser) for the root and every (sub)command, nested groups included."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helped = {choice.dest for choice in action._choices_actions}
            for name, child in action.choices.items():
                if name in helped:  # an alias shares its command's parser and help
                    yield from walk(child, f"{path} {name}")


def visible(action: argparse.Action) -> bool:
    return action.help != argparse.SUPPRESS


def test_every_command_and_option_has_help_text() -> None:
    missing = []
    for path, parser in walk(build_parser()):
        if not (parser.description or path == "scidocs-eval"):
            subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
            if not subparsers:
                missing.append(f"{path}: no description")
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                missing += [f"{path} {choice.dest}: no help" for choice in action._choices_actions if not choice.help]
            elif visible(action) and not (action.help or "").strip():
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}: no help")
    assert not missing, "\n".join(missing)


def test_one_spelling_per_output_idea() -> None:
    """A written file is -o/--out, a written folder --out-dir (or a positional); other spellings only as hidden
    aliases."""
    wrong = []
    for path, parser in walk(build_parser()):
        for action in parser._actions:
            kind = getattr(action, "output_kind", None)
            if kind is None or not action.option_strings:
                continue
            wanted = {"file": "--out", "folder": "--out-dir"}[kind]
            if wanted not in action.option_strings and not any(
                    wanted in other.option_strings for other in parser._actions if getattr(other, "output_kind", None)
                    == kind and other is not action):
                wrong.append(f"{path} {'/'.join(action.option_strings)}: a {kind} is {wanted}")
    assert not wrong, "\n".join(wrong)


def test_version_and_bare_command(capsys) -> None:  # noqa: ANN001 - pytest fixture
    try:
        main(["--version"])
    except SystemExit as stop:
        assert stop.code == 0
    assert capsys.readouterr().out.startswith("scidocs-eval ")
    assert main([]) == 0
    printed = capsys.readouterr().out
    for path, _ in walk(build_parser()):
        if path.count(" ") == 1:
            assert f"  {path.split()[1]} " in printed, path


@pytest.mark.parametrize(("argv", "command"), [
    (["run", "--embeddings", "e.jsonl", "--bogus"], "run"),
    (["cache", "info", "--bogus"], "cache info"),
    (["--bogus"], ""),
])
def test_an_unknown_option_is_named_by_its_command(argv: list[str], command: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """`scidocs-eval run ... --bogus` points at `scidocs-eval run --help`, where the options it takes are listed,
    not at the list of commands."""
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    where = f"{command}: " if command else ""
    assert capsys.readouterr().err == (f"scidocs-eval: error: {where}unrecognized arguments: --bogus (see "
                                       f"`scidocs-eval {command} --help`)\n".replace("scidocs-eval  --help",
                                                                                     "scidocs-eval --help"))
