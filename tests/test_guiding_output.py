"""Output that guides: a run says its values are ×100, shows the paper's row of the same name beside ours, says
what it wrote where and what to run next."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from scidocs_eval.cli.main import main
from scidocs_eval.formats.suite import Suite
from scidocs_eval.models.adapter import get_adapter
from scidocs_eval.run.fit_inputs import fit_adapter


def test_baseline_output_guides(demo_suite: Suite, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "res"
    out_dir.mkdir()
    (out_dir / "random-old.jsonl").write_text("a user's file beside the outputs\n")
    assert main(["baseline", "random", "--data", str(demo_suite.root), "--tasks", "mesh", "--out-dir",
                 str(out_dir), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert printed.splitlines()[0].startswith("Values are ×100")
    assert "\n| random (ours, synthetic demo suite) |" in printed
    assert "\n| Random (paper) | 4.80 | 9.40 |" in printed
    assert "| SIF (paper) |" not in printed  # only the row of the same name
    assert f"Wrote {out_dir / 'random.jsonl'} (embeddings" in printed
    assert f"{out_dir / 'random.results.json'} (results)" in printed
    assert "random-old.jsonl" not in printed  # only what this run wrote is named
    assert f"Next: `scidocs-eval table {out_dir}/`" in printed


def test_run_without_output_file_says_how_to_keep_it(demo_suite: Suite, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["baseline", "random", "--data", str(demo_suite.root), "--tasks", "mesh", "--out-dir",
                 str(tmp_path), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["run", "--embeddings", str(tmp_path / "random.jsonl"), "--data", str(demo_suite.root),
                 "--tasks", "mesh", "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "| Random (paper) |" in printed  # the file's stem names the paper's row
    assert "Results not kept: add `-o results.json`" in printed


def test_sgc_says_where_it_equals_sif(demo_suite: Suite, demo_vectors: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The demo's ranking and classification papers have no citations; its recomm papers do."""
    with caplog.at_level(logging.WARNING):
        fit_adapter(get_adapter("sgc", vectors=str(demo_vectors), k=2), demo_suite.papers(), demo_suite)
    warning = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("sgc: no citation edge"))
    assert "mag, mesh, coview, coread, cite, cocite (" in warning and "sgc scores what sif scores" in warning
    assert "recomm" not in warning.split("(")[0]
