"""Figure 2 (t-SNE + DBSCAN scores), result charts with confidence-interval whiskers, training curves, and the
static report page's HTML (escaping, columns of non-SciDocs suites, the never-overwrite rule). The page in a real
browser: tests/test_report_browser.py."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np
import orjson
import pytest

from scidocs_eval.cli import main
from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.formats.safe_output import MANIFEST
from scidocs_eval.formats.suite import CLASS_NAMES_FILE, Suite
from scidocs_eval.leaderboard.figures import (
    ProjectionClusters,
    draw_results,
    draw_training,
    figure2,
    read_history,
    sample_papers,
)
from scidocs_eval.leaderboard.report import build_rows, render_page, write_report
from scidocs_eval.leaderboard.runs import load_run, load_runs
from scidocs_eval.leaderboard.table1 import table1_row
from scidocs_eval.training.specter import HISTORY_FILE

pytest.importorskip("matplotlib")
pytest.importorskip("jinja2")

FIGURE_SPLIT = "test"


def test_figure2_sif_is_clearly_more_homogeneous_than_random_and_repeats_with_its_seed(
        figure_suite: Suite, baseline_runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["plot", "--embeddings", str(baseline_runs / "random.jsonl"), "--embeddings",
            str(baseline_runs / "sif.jsonl"), "--data", str(figure_suite.root), "--task", "mag", "--split",
            FIGURE_SPLIT, "--seed", "3", "--quiet"]
    assert main([*args, "--out", str(tmp_path / "fig.png"), "--json", str(tmp_path / "a.json")]) == 0
    printed = capsys.readouterr().out
    numbers = orjson.loads((tmp_path / "a.json").read_bytes())
    random_panel, sif_panel = numbers["panels"]
    assert (random_panel["name"], sif_panel["name"]) == ("random", "sif")
    assert numbers["papers"] == 300 and numbers["classes"] == 19 and numbers["left_out"] == 0
    assert sif_panel["homogeneity"] > random_panel["homogeneity"] + 0.3
    assert random_panel["homogeneity"] < 0.2
    assert f"sif: homogeneity {sif_panel['homogeneity']:.2f}, completeness {sif_panel['completeness']:.2f}" in printed
    assert numbers["settings"]["dbscan"] == {"eps_scale": 1.0, "min_samples": 10}
    assert (tmp_path / "fig.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the same seed gives the same numbers; SVG by the file name
    assert main([*args, "--out", str(tmp_path / "fig.svg"), "--json", str(tmp_path / "b.json")]) == 0
    assert orjson.loads((tmp_path / "b.json").read_bytes())["panels"] == numbers["panels"]
    svg = (tmp_path / "fig.svg").read_text(encoding="utf-8")
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg and "homogeneity" in svg


def test_figure2_sample_is_seeded_and_uses_class_names(figure_suite: Suite, tmp_path: Path) -> None:
    first = sample_papers(figure_suite, "mag", FIGURE_SPLIT, 50, seed=1)
    assert first.ids == sample_papers(figure_suite, "mag", FIGURE_SPLIT, 50, seed=1).ids
    assert first.ids != sample_papers(figure_suite, "mag", FIGURE_SPLIT, 50, seed=2).ids
    assert len(set(first.ids)) == 50 and first.names == {}
    everything = sample_papers(figure_suite, "mag", FIGURE_SPLIT, None)
    assert len(everything.ids) == len(figure_suite.labels("mag", FIGURE_SPLIT).ids)


def test_dbscan_scores_are_exact_on_separated_blobs_and_zero_on_one_blob() -> None:
    rng = np.random.default_rng(0)
    centres = np.array([[0, 0], [50, 0], [0, 50]], dtype=float)
    coords = np.concatenate([c + rng.standard_normal((40, 2)) for c in centres])
    labels = np.repeat([0, 1, 2], 40)
    wide = ProjectionClusters(eps_scale=2.0, min_samples=5)
    scores = wide.score(coords, labels)
    assert (scores.homogeneity, scores.completeness, scores.clusters, scores.noise_fraction) == (1.0, 1.0, 3, 0.0)
    mixed = wide.score(rng.standard_normal((120, 2)), labels)
    assert mixed.homogeneity < 0.1 and mixed.clusters == 1
    # the default eps (the median neighbour distance) leaves the sparse rim of each blob as noise, which
    # counts as one more (mixed) cluster; the real clusters stay pure, so homogeneity stays high
    default = ProjectionClusters(min_samples=5).score(coords, labels)
    assert default.noise_fraction > 0.1 and default.homogeneity > 0.7


def test_figure2_leaves_out_papers_missing_from_a_file_with_a_warning(
        figure_suite: Suite, baseline_runs: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    lines = (baseline_runs / "random.jsonl").read_bytes().splitlines()
    wanted = set(figure_suite.labels("mag", FIGURE_SPLIT).ids)
    dropped = [line for line in lines if orjson.loads(line)["paper_id"] in wanted][:7]
    partial = tmp_path / "partial.jsonl"
    partial.write_bytes(b"\n".join(line for line in lines if line not in dropped) + b"\n")
    with caplog.at_level(logging.WARNING, logger="scidocs_eval"):
        result = figure2([partial, baseline_runs / "sif.jsonl"], figure_suite, "mag", split=FIGURE_SPLIT,
                         sample=None, progress=False)
    assert result.left_out == 7 and len(result.ids) == len(wanted) - 7
    assert "7 of" in caplog.text and "are not in" in caplog.text and "partial.jsonl" in caplog.text


def test_class_names_file_gives_legend_names(figure_suite: Suite, baseline_runs: Path, tmp_path: Path) -> None:
    suite_copy = tmp_path / "suite"
    suite_copy.mkdir()
    for item in figure_suite.root.iterdir():
        (suite_copy / item.name).symlink_to(item)
    (suite_copy / "mag").unlink()
    (suite_copy / "mag").mkdir()
    for item in (figure_suite.root / "mag").iterdir():
        (suite_copy / "mag" / item.name).symlink_to(item)
    (suite_copy / "mag" / CLASS_NAMES_FILE).write_text(orjson.dumps({str(i): f"field {i}" for i in range(19)})
                                                       .decode(), encoding="utf-8")
    assert sample_papers(Suite(suite_copy), "mag", FIGURE_SPLIT, 10).names[3] == "field 3"
    (suite_copy / "mag" / CLASS_NAMES_FILE).write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ScidocsEvalError, match=CLASS_NAMES_FILE):
        sample_papers(Suite(suite_copy), "mag", FIGURE_SPLIT, 10)


def test_bad_image_name_and_missing_figure2_options_are_one_line_errors(
        figure_suite: Suite, baseline_runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plot", "--embeddings", str(baseline_runs / "random.jsonl"), "--task", "mag"]) == 2
    assert "--out" in capsys.readouterr().err
    assert main(["plot", "results", str(baseline_runs / "random.results.json"), "--out",
                 str(tmp_path / "chart.jpg")]) == 2
    assert "must end in .png, .svg, .pdf" in capsys.readouterr().err


def test_results_chart_draws_whiskers_only_when_results_carry_intervals(
        baseline_runs: Path, tmp_path: Path, add_intervals: Callable[..., Path]) -> None:
    plain = load_runs([baseline_runs / "random.results.json", baseline_runs / "sif.results.json"])
    for run in plain:
        for task_result in run.result.tasks.values():
            task_result.ci = {}
    ax = draw_results(plain).axes[0]
    assert [c.get_label() for c in ax.containers] == ["random", "sif"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["MAG F1", "MeSH F1", "Cite MAP", "Cite nDCG"]
    heights = [bar.get_height() for bar in ax.containers[1]]
    sif_row = table1_row(plain[1].result)
    assert heights == [sif_row[c] for c in ("mag_f1", "mesh_f1", "cite_map", "cite_ndcg")]
    assert not ax.lines and "whiskers" not in ax.get_title()

    runs = [plain[0], load_run(add_intervals(baseline_runs / "sif.results.json", tmp_path / "ci.json"))]
    assert runs[1].column_ci()["mag_f1"] == (sif_row["mag_f1"] - 2.5, min(100.0, sif_row["mag_f1"] + 1.5))
    ax = draw_results(runs).axes[0]
    whiskers = [line for line in ax.collections if line.get_segments()]
    assert len(whiskers) == 1 and len(whiskers[0].get_segments()) == 4
    low, high = whiskers[0].get_segments()[0][:, 1]
    assert (low, high) == pytest.approx(runs[1].column_ci()["mag_f1"])
    assert "whiskers: confidence intervals" in ax.get_title()
    assert main(["plot", "results", str(baseline_runs / "random.results.json"), str(tmp_path / "ci.json"),
                 "--out", str(tmp_path / "chart.svg")]) == 0


def test_training_curves_from_a_history_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / HISTORY_FILE).write_bytes(orjson.dumps({"val_loss": {"0": 0.9, "1": 0.6, "2": 0.5},
                                                   "train_loss": {"1": 0.8, "2": 0.55}}))
    assert read_history(run) == {"val_loss": {0: 0.9, 1: 0.6, 2: 0.5}, "train_loss": {1: 0.8, 2: 0.55}}
    ax = draw_training(run).axes[0]
    curves = {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in ax.lines}
    assert curves == {"training loss (epoch mean)": ([1, 2], [0.8, 0.55]),
                      "validation loss": ([0, 1, 2], [0.9, 0.6, 0.5])}
    assert main(["plot", "training", str(run), "--out", str(tmp_path / "curve.png")]) == 0
    assert (tmp_path / "curve.png").stat().st_size > 1000
    assert main(["plot", "training", str(tmp_path), "--out", str(tmp_path / "c.png")]) == 2
    assert f"{tmp_path / HISTORY_FILE}: not found" in capsys.readouterr().err


def renamed(source: Path, dest: Path, model: str) -> Path:
    data = orjson.loads(source.read_bytes())
    data["model"] = model
    dest.write_bytes(orjson.dumps(data))
    return dest


def test_report_page_escapes_results_strings_and_says_which_columns_are_missing(
        baseline_runs: Path, tmp_path: Path) -> None:
    evil = renamed(baseline_runs / "sif.results.json", tmp_path / "evil.json", '<script>alert("x")</script>sif')
    runs = load_runs([baseline_runs / "random.results.json", evil])
    page = render_page(build_rows(runs, include_paper=False), "results.png", [], "t")
    assert '<script>alert("x")' not in page and "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;sif" in page
    assert page.count("<script>") == 1  # the page's own script only
    assert "Not in any of our results files, so left out: Co-View MAP" in page
    assert 'data-column="mag_f1"' in page and 'data-column="coview_map"' not in page
    assert "no Co-View MAP" in page and "so no Avg" in page
    rows = build_rows(runs, include_paper=True)
    assert len(rows) == 2 + 12 and [r.ours for r in rows[:3]] == [True, True, False]
    assert rows[1].cells["mag_f1"].best and not rows[0].cells["mag_f1"].best


def test_report_refuses_a_folder_it_did_not_write_and_replaces_only_its_own_files(
        baseline_runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = [str(baseline_runs / "random.results.json")]
    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "mine.txt").write_text("keep me", encoding="utf-8")
    assert main(["report", *results, "--out", str(foreign)]) == 2
    assert capsys.readouterr().err == (f"scidocs-eval: error: --out {foreign} is not empty and was not written by "
                                       f"scidocs-eval report (no {MANIFEST} in it); nothing was changed: give a new "
                                       "or empty folder, or pass --overwrite to write into it (files of yours that "
                                       "are in the way are replaced, the others kept)\n")
    assert [p.name for p in foreign.iterdir()] == ["mine.txt"] and sorted(tmp_path.iterdir()) == [foreign]

    site = tmp_path / "site"
    assert main(["report", *results, "--out", str(site)]) == 0
    image = tmp_path / "fig.png"
    image.write_bytes((site / "results.png").read_bytes())
    assert write_report(load_runs(results), site, figures=[image]).name == "index.html"
    assert 'src="figures/01-fig.png"' in (site / "index.html").read_text(encoding="utf-8")
    manifest = orjson.loads((site / MANIFEST).read_bytes())
    assert manifest["written_by"] == "scidocs-eval report"
    assert sorted(manifest["files"]) == ["figures/01-fig.png", "index.html", "results.png"]
    # a person's file in the site survives the next report, which removes only the files an earlier one wrote
    (site / "extra.txt").write_text("a person's file", encoding="utf-8")
    assert main(["report", *results, "--out", str(site)]) == 0
    assert (site / "extra.txt").read_text(encoding="utf-8") == "a person's file"
    assert not (site / "figures").exists()
    assert sorted(orjson.loads((site / MANIFEST).read_bytes())["files"]) == ["index.html", "results.png"]
    # ... and a file of theirs where report writes one is never replaced
    (site / "index.html").write_text("my own page", encoding="utf-8")
    assert main(["report", *results, "--out", str(site)]) == 2
    assert f"{site / 'index.html'} is in the way and was not written by scidocs-eval report" in capsys.readouterr().err
    assert (site / "index.html").read_text(encoding="utf-8") == "my own page"


@pytest.mark.parametrize("manifest", [
    b"{not json", b'{"files": 3}', b'{"written_by": "scidocs-eval report", "files": {"../../elsewhere.txt": "0"}}',
])
def test_report_on_a_manifest_it_did_not_write_is_a_clear_error_and_changes_nothing(
        baseline_runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], manifest: bytes) -> None:
    site = tmp_path / "site"
    assert main(["report", str(baseline_runs / "random.results.json"), "--out", str(site)]) == 0
    (site / MANIFEST).write_bytes(manifest)
    before = {p.name: p.read_bytes() for p in site.iterdir()}
    assert main(["report", str(baseline_runs / "sif.results.json"), "--out", str(site)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"scidocs-eval: error: --out {site / MANIFEST} was not written by scidocs-eval (or was "
                          "changed since); nothing was changed") and err.count("\n") == 1
    assert {p.name: p.read_bytes() for p in site.iterdir()} == before


def test_report_never_replaces_a_folder_another_command_wrote(
        baseline_runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = tmp_path / "suite"
    assert main(["demo", str(suite)]) == 0
    before = sorted(suite.rglob("*"))
    assert main(["report", str(baseline_runs / "random.results.json"), "--out", str(suite)]) == 2
    assert capsys.readouterr().err == (f"scidocs-eval: error: --out {suite} was written by scidocs-eval demo, not "
                                       f"scidocs-eval report (its {MANIFEST} says so); nothing was changed: give a "
                                       "new or empty folder, or pass --overwrite to write into it\n")
    assert sorted(suite.rglob("*")) == before


def test_min_samples_above_the_class_sizes_is_a_loud_warning(
        figure_suite: Suite, baseline_runs: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="scidocs_eval"):
        figure2([baseline_runs / "sif.jsonl"], figure_suite, "mag", sample=60, progress=False)
    assert "min_samples=10 is above the median class size" in caplog.text


def test_figure2_refuses_a_file_rewritten_while_it_projects(figure_suite: Suite, baseline_runs: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The panels' scores are numbers too: an array file written while figure 2 used it is refused, as in `run`."""
    import sys

    from scidocs_eval.errors import InputError
    from scidocs_eval.formats.embeddings import EmbeddingStore

    store = EmbeddingStore.load(baseline_runs / "random.jsonl", progress=False)
    path = tmp_path / "random.npz"
    np.savez(path, ids=np.array(store.ids), embeddings=store.matrix)
    figures = sys.modules[figure2.__module__]
    usable_rows = figures.usable_rows

    def rewritten(*args: object) -> np.ndarray:  # one more paper: a size of its own, whatever the clock's tick
        np.savez(path, ids=np.array([*store.ids, "extra"]), embeddings=np.vstack([store.matrix, store.matrix[:1]]))
        return usable_rows(*args)

    monkeypatch.setattr(figures, "usable_rows", rewritten)
    with pytest.raises(InputError, match=r"random\.npz: was changed, replaced or removed while this run used it"):
        figure2([path], figure_suite, "mag", split=FIGURE_SPLIT, sample=60, progress=False)
