"""Output that guides: a run says its values are ×100, shows the paper's row of the same name beside ours, says
what it wrote where and what to run next."""

from __future__ import annotations

from pathlib import Path

import pytest

from scidocs_eval.cli.main import main
from scidocs_eval.formats.suite import Suite


def test_baseline_output_guides(demo_suite: Suite, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "res"
    assert main(["baseline", "random", "--data", str(demo_suite.root), "--tasks", "mesh", "--out-dir",
                 str(out_dir), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert printed.splitlines()[0].startswith("Values are ×100")
    assert "\n| random (ours, synthetic demo suite) |" in printed
    assert "\n| Random (paper) | 4.80 | 9.40 |" in printed
    assert "| SIF (paper) |" not in printed  # only the row of the same name
    assert f"Wrote {out_dir / 'random.jsonl'} (embeddings" in printed
    assert f"{out_dir / 'random.results.json'} (results)" in printed
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
