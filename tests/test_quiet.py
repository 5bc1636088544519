"""`--quiet` means quiet: real commands, run as a user runs them, print no progress bar of ours or of a library
(recomm seeds, tokenising, fastText epochs, transformers' "Loading weights" and "Writing model shards")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from scidocs_eval.cli.main import build_parser, leaf_parsers
from scidocs_eval.data.demo import DemoConfig, build_demo_suite
from scidocs_eval.evaluation.config import RunConfig

SCRIPT = Path(sys.executable).parent / "scidocs-eval"


def run_quietly(*arguments: str, cwd: Path) -> subprocess.CompletedProcess:
    """The command with --quiet, in a fresh process whose environment does not already ask for quiet."""
    env = {k: v for k, v in os.environ.items() if k not in ("SCIDOCS_EVAL_QUIET", "TQDM_DISABLE",
                                                             "HF_HUB_DISABLE_PROGRESS_BARS")}
    done = subprocess.run([str(SCRIPT), *arguments, "--quiet"], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    return done


def assert_no_progress(done: subprocess.CompletedProcess) -> None:
    for stream in (done.stderr, done.stdout):
        assert "\r" not in stream and "it/s]" not in stream and "%|" not in stream, stream
    assert done.stderr == ""


def test_baseline_fasttext_with_recomm_is_quiet(tmp_path: Path) -> None:
    suite = build_demo_suite(tmp_path / "suite", DemoConfig(mag_papers=60, mesh_papers=40, ranking_queries=4,
                                                            recomm_impressions=(40, 10, 10), recomm_papers=80))
    done = run_quietly("baseline", "fasttext-sum", "--data", str(suite.root), "--tasks", "cite,recomm",
                       "--task-param", "recomm.seeds=2", "--out-dir", str(tmp_path / "results"), cwd=tmp_path)
    assert_no_progress(done)
    assert ".results.json (results)" in done.stdout


@pytest.mark.slow
def test_embed_and_train_specter_with_transformers_are_quiet(sample_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from builders import build_small_bert

    metadata = orjson.loads((sample_dir / "metadata.json").read_bytes())
    texts = [f"{p['title']} {p.get('abstract') or ''}" for p in metadata.values()]
    tiny_bert = build_small_bert(texts, tmp_path / "tiny-bert", vocab_size=2000, hidden_size=32)
    trained = run_quietly("train", "specter", "--data-dir", str(sample_dir), "--out", str(tmp_path / "model"),
                          "--base-model", str(tiny_bert), "--epochs", "1", "--batch-size", "8",
                          "--effective-batch-size", "16", "--max-length", "32", cwd=tmp_path)
    assert_no_progress(trained)
    assert (tmp_path / "model" / "config.json").is_file()
    embedded = run_quietly("embed", "--adapter", "transformer", "--model", "all-MiniLM-L6-v2", "--metadata",
                           str(sample_dir / "sample-metadata.json"), "--out", str(tmp_path / "e.jsonl"), cwd=tmp_path)
    assert_no_progress(embedded)
    assert "papers embedded with transformer" in embedded.stdout


def test_every_command_takes_quiet() -> None:
    """`--quiet` is accepted by every command, so a script can pass it everywhere (a no-op where no bar shows)."""
    commands = leaf_parsers(build_parser())
    assert len(commands) >= 15 and {command.prog.split(" ", 1)[1] for command in commands} >= {
        "run", "table", "demo", "tasks", "data build", "data verify", "plot results", "plot training", "report"}
    for command in commands:
        assert "--quiet" in command._option_string_actions, command.prog


def test_progress_false_silences_an_adapters_own_bars(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """`run_baseline(..., progress=False)` from Python: the --tune grid's bar (the adapter's own) stays off too."""
    from scidocs_eval.progress import progress_bar, silenced
    from scidocs_eval.run.baseline import run_baseline

    suite = build_demo_suite(tmp_path / "suite", DemoConfig(mag_papers=60, mesh_papers=40, ranking_queries=4,
                                                            recomm_impressions=(40, 10, 10), recomm_papers=80))
    capfd.readouterr()
    run_baseline("fasttext-sum", RunConfig(data=suite, tasks=["cite"], progress=False), out_dir=tmp_path / "results",
                 params={"tune": True, "min_count": 1, "dim": 8, "epochs": 1})
    err = capfd.readouterr().err
    assert "tuning fasttext-sum" not in err and "%|" not in err, err
    with silenced():
        assert progress_bar(total=1).disable
