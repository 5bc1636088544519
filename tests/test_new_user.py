"""A new user's smaller stumbles, each a rule: an option naming no task is an error, a mistyped choice gets a
did-you-mean, every file output spelt --out also takes -o, figure 2 names what it needs, nothing ignored is
tracked."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from scidocs_eval.cli.main import build_parser, leaf_parsers, main
from scidocs_eval.cli.options import output_actions

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("command", [["run", "--embeddings", "e.jsonl"], ["baseline", "random"],
                                     ["audit", "--train", "t.jsonl"]])
@pytest.mark.parametrize("value", ["", ",", " , "])
def test_an_option_naming_no_task_is_an_error(command: list[str], value: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*command, "--data", str(tmp_path), "--tasks", value]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--tasks {value!r} names no task" in err


@pytest.mark.parametrize(("argv", "guess"), [(["baseline", "tfid"], "did you mean tfidf?"),
                                              (["basline"], "did you mean baseline?"),
                                              (["run", "--split", "tset"], "did you mean test?")])
def test_a_mistyped_choice_gets_a_did_you_mean(argv: list[str], guess: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and guess in err


def test_every_file_output_spelt_out_also_takes_o() -> None:
    missing = [command.prog for command in leaf_parsers(build_parser()) for action in output_actions(command)
               if "--out" in action.option_strings and "-o" not in action.option_strings
               and getattr(action, "output_kind", None) == "file"]
    assert missing == []


def test_figure2_of_a_ranking_task_says_it_wants_a_classification_task(capsys: pytest.CaptureFixture[str],
                                                                       tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the [plot] extra (matplotlib) is not installed")
    assert main(["plot", "figure2", "--embeddings", "e.jsonl", "--data", "demo", "--task", "cite", "--out",
                 str(tmp_path / "f.png")]) == 2
    err = capsys.readouterr().err
    assert "cite is not a classification task" in err and "mag, mesh" in err and "test.csv" not in err


def test_no_tracked_file_is_ignored() -> None:
    """A generated folder (`site/`, `dist/`) that .gitignore lists is never committed."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(["git", "ls-files", "--cached", "--ignored", "--exclude-standard"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout.split()
    assert listed == []


def test_a_failure_on_a_missing_extra_or_command_reads_as_a_skip_with_the_reason(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule of conftest's report hook: only what this environment lacks turns a failure into a skip."""
    import conftest

    monkeypatch.setattr(conftest, "_not_installed", lambda module: module in ("gensim", "moto"))
    assert conftest.missing_requirement("E   ModuleNotFoundError: No module named 'gensim.models'") == \
        "needs the [text] extra: gensim is not installed"
    assert conftest.missing_requirement("No module named 'moto'") == "needs the [test] extra: moto is not installed"
    assert conftest.missing_requirement("scidocs-eval: error: sif needs gensim, which is not installed (the [text] "
                                        "extra): pip install 'gensim>=4.3'") == \
        "needs the [text] extra: gensim is not installed"
    assert conftest.missing_requirement("No module named 'lightgbm'") is None  # installed here: a real failure
    assert conftest.missing_requirement("No module named 'numpy'") is None  # the core: a real failure
    monkeypatch.setattr(conftest.shutil, "which", lambda name: None)
    assert conftest.missing_requirement("bash: line 1: scidocs-eval: command not found").startswith(
        "needs the scidocs-eval command on PATH")
