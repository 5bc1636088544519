"""A new user's smaller stumbles, each a rule: an option naming no task is an error, a mistyped choice gets a
did-you-mean, every file output spelt --out also takes -o, figure 2 names what it needs, nothing ignored is
tracked, an embeddings file replaced with fewer papers says so and a run names why it lacks a task's papers, the
tool's own records are no warning, and each warning comes once."""

from __future__ import annotations

import io
import logging
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from scidocs_eval.cli.main import build_parser, leaf_parsers, main
from scidocs_eval.cli.options import output_actions
from scidocs_eval.formats.suite import Suite
from scidocs_eval.warning_groups import each_warning_once

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


def test_a_baselines_embeddings_replaced_with_fewer_papers_say_so_and_a_run_names_why_they_lack_a_task(
        tiny_suite: Suite, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture) -> None:
    out = tmp_path / "results"
    common = ["baseline", "random", "--data", str(tiny_suite.root), "--out-dir", str(out), "--quiet"]
    assert main([*common, "--tasks", "mag,cite"]) == 0
    with caplog.at_level(logging.WARNING):
        assert main([*common, "--tasks", "cite"]) == 0
    replaced = sorted(r.getMessage().split(":")[0] for r in caplog.records if "replaced" in r.getMessage())
    assert replaced == [f"{out / 'random.jsonl'} replaced", f"{out / 'random.results.json'} replaced"]
    capsys.readouterr()
    embeddings = str(out / "random.jsonl")
    assert main(["run", "--embeddings", embeddings, "--data", str(tiny_suite.root), "--tasks", "mag"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{embeddings} was written for task(s) cite only (its random.jsonl.settings.json " \
        "says so), so it has not mag's papers" in err
    assert main(["run", "--embeddings", embeddings, "--data", str(tiny_suite.root), "--tasks", "cite",
                 "--split", "val"]) == 2
    err = capsys.readouterr().err
    assert f"{embeddings} was written for the test split (its random.jsonl.settings.json says so)" in err


def test_a_results_folder_with_the_tools_own_records_gets_no_warning(tiny_suite: Suite, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str],
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    out = tmp_path / "results"
    for adapter in ("random", "tfidf"):
        assert main(["baseline", adapter, "--data", str(tiny_suite.root), "--tasks", "cite", "--out-dir", str(out),
                     "--quiet"]) == 0
    assert (out / "random.jsonl.settings.json").is_file()
    (out / "notes.json").write_text('{"mine": 1}', encoding="utf-8")
    (out / "more.json").write_text("[]", encoding="utf-8")
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert main(["leaderboard", str(out), "--resamples", "200", "--quiet"]) == 0
    assert [r.getMessage() for r in caplog.records] == [
        f"2 JSON file(s) that are not results files, left out: {out / 'more.json'}, {out / 'notes.json'}"]


def test_each_warning_is_printed_once_with_its_count() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    log = logging.getLogger("scidocs_eval")
    log.addHandler(handler)
    try:
        with each_warning_once([handler]):
            for _ in range(5):
                log.warning("vectors look under-trained")
            log.warning("another one")
    finally:
        log.removeHandler(handler)
    assert stream.getvalue().splitlines() == [
        "vectors look under-trained", "another one",
        "the warning 'vectors look under-trained' came 5 times in this run (shown once)"]


def test_a_suite_built_from_the_demo_keeps_the_synthetic_label(tiny_suite: Suite, tmp_path: Path) -> None:
    built = tmp_path / "demo-beir"
    assert main(["data", "build", "--format", "beir", "--data", str(tiny_suite.root), "--out-dir", str(built),
                 "--quiet"]) == 0
    results = tmp_path / "results"
    assert main(["baseline", "random", "--data", str(built), "--benchmark", "full-corpus", "--tasks", "cite-full",
                 "--out-dir", str(results), "--quiet"]) == 0
    assert orjson.loads((results / "random.results.json").read_bytes())["synthetic"] is True
    copied = tmp_path / "mteb-data"  # a task folder copied alone into a suite of its own (docs/mteb.md)
    shutil.copytree(built / "cite-full", copied / "scidocs-retrieval")
    assert Suite(copied).is_synthetic


def test_a_cache_variable_naming_a_file_is_an_error_naming_the_variable(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    afile = tmp_path / "cache"
    afile.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv("SCIDOCS_EVAL_CACHE", str(afile))
    assert main(["baseline", "random", "--data", "demo", "--out-dir", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"$SCIDOCS_EVAL_CACHE={str(afile)!r}: {afile} is a file, not a folder" in err


def test_a_failure_after_a_handled_missing_extra_reads_as_a_skip(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that leaves recomm in `failed` for want of torch, then a test asserting on recomm's numbers: conftest
    notes every MissingExtraError made (handled ones too) by the test and by its fixtures."""
    import conftest

    from scidocs_eval.extras import MissingExtraError, require

    monkeypatch.setattr(conftest, "_not_installed", lambda module: module == "torch")
    start = len(conftest._EXTRAS_MET)
    monkeypatch.setitem(sys.modules, "torch", None)  # importing it fails, as where it is not installed
    with pytest.raises(MissingExtraError):
        require("torch", "recomm's mlp ranker", "recomm")
    met = conftest._EXTRAS_MET[start:]
    assert met == [("torch", "recomm")]
    assert conftest.missing_extra_met(met) == "needs the [recomm] extra: torch is not installed"
    assert conftest.missing_extra_met([("lightgbm", "recomm")]) is None  # installed here: a real failure
