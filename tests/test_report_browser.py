"""The report page in a real browser: Debian's chromium, headless, driven by Playwright, from file:// with the
network closed. Skips with the reason where chromium or Playwright is missing (`.ci/run` installs both).

A screenshot of the page is left at build/screenshots/report.png (ignored by git) for a person to look at."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from scidocs_eval.cli import main
from scidocs_eval.leaderboard.table1 import paper_rows

REPO = Path(__file__).resolve().parents[1]
SCREENSHOT = REPO / "build" / "screenshots" / "report.png"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]
INJECTED = '<script>window.injected = 1</script><img src=x onerror="window.injected = 2">evil'


def chromium_path() -> str:
    path = os.environ.get("SCIDOCS_EVAL_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.skip("chromium not found (apt-get install chromium, or set SCIDOCS_EVAL_CHROMIUM)")
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = chromium_path()
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright not installed (the test extra)")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def site(baseline_runs: Path, add_intervals: Callable[..., Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`report` over random and sif on the demo suite, a copy of sif with an injected model name and intervals,
    and a Figure 2 image."""
    evil = add_intervals(baseline_runs / "sif.results.json", tmp_path_factory.mktemp("evil") / "evil.json",
                          model=INJECTED)
    chart = tmp_path_factory.mktemp("chart") / "chart.png"
    results = [str(baseline_runs / "random.results.json"), str(baseline_runs / "sif.results.json"), str(evil)]
    assert main(["plot", "results", *results, "--out", str(chart)]) == 0
    out = tmp_path_factory.mktemp("site") / "site"
    assert main(["report", *results, "--out", str(out), "--figures", str(chart)]) == 0
    return out


@pytest.fixture()
def page(browser: Any, site: Path) -> Iterator[Any]:
    """The page loaded from file://; `page.problems` collects console errors, page errors and failed requests."""
    page = browser.new_page()
    page.problems = []
    page.on("console", lambda message: message.type == "error" and page.problems.append(message.text))
    page.on("pageerror", lambda error: page.problems.append(str(error)))
    page.on("requestfailed", lambda request: page.problems.append(f"request failed: {request.url}"))
    page.goto((site / "index.html").as_uri())
    page.wait_for_load_state("load")
    yield page
    page.close()


def our_labels(page: Any) -> list[str]:
    return page.eval_on_selector_all("#leaderboard tbody.entry td.model", "cells => cells.map(c => c.dataset.value)")


def column_values(page: Any, column: str) -> list[float | None]:
    index = page.eval_on_selector_all("#leaderboard thead th", "ths => ths.map(th => th.dataset.column || '')")
    position = index.index(column)
    texts = page.eval_on_selector_all(
        "#leaderboard tbody.entry tr.row", f"rows => rows.map(r => r.cells[{position}].dataset.value)")
    return [float(t) if t else None for t in texts]


def test_page_loads_offline_with_every_row_and_image(page: Any, site: Path) -> None:
    assert page.problems == []
    labels = our_labels(page)
    assert len(labels) == 3 + len(paper_rows())
    assert labels[:2] == ["random", "sif"] and labels[2] == INJECTED
    assert page.locator("tbody.ours").count() == 3 and page.locator("tbody.paper").count() == len(paper_rows())
    for image in page.locator("img").all():
        assert image.evaluate("img => img.complete && img.naturalWidth > 0"), image.get_attribute("src")
    assert page.locator("img").count() == 2
    assert page.locator("#synthetic-banner").is_visible()
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT), full_page=True)
    assert SCREENSHOT.stat().st_size > 10_000


def test_clicking_a_header_sorts_by_that_column(page: Any) -> None:
    header = page.locator('#leaderboard th[data-column="mag_f1"] button')
    header.click()
    values = column_values(page, "mag_f1")
    assert values == sorted(values, reverse=True) and page.locator('th[data-column="mag_f1"]').get_attribute(
        "aria-sort") == "descending"
    header.click()
    assert column_values(page, "mag_f1") == sorted(values)
    page.locator('#leaderboard th[data-type="text"] button').click()
    labels = our_labels(page)
    assert labels == sorted(labels, key=str.lower)
    # a column our rows lack: they go last, whichever the direction
    page.locator('#leaderboard th[data-column="coview_map"] button').click()
    assert column_values(page, "coview_map")[-3:] == [None, None, None]


def test_provenance_of_a_row_opens_and_closes(page: Any, baseline_runs: Path) -> None:
    details = page.locator("#provenance-2")
    assert details.is_hidden()
    page.locator('button[aria-controls="provenance-2"]').click()
    assert details.is_visible()
    text = details.inner_text()
    result = orjson.loads((baseline_runs / "sif.results.json").read_bytes())
    fingerprint = next(iter(result["fingerprints"]["embeddings"].values()))["sha256"][:12]
    for expected in ("sif", "suite fingerprint", "split", "test", "package versions", "numpy=", fingerprint,
                     "SYNTHETIC demo suite", "coverage warnings"):
        assert expected in text
    page.locator('button[aria-controls="provenance-2"]').click()
    assert details.is_hidden()


def test_an_injected_script_in_a_model_name_is_text(page: Any) -> None:
    assert page.evaluate("window.injected") is None
    cell = page.locator("#leaderboard tbody.entry td.model").nth(2)
    assert cell.inner_text().startswith(INJECTED)
    assert page.locator("#leaderboard script, #leaderboard img").count() == 0
    assert page.problems == []


def test_confidence_intervals_show_under_their_values(page: Any, baseline_runs: Path) -> None:
    mag = orjson.loads((baseline_runs / "sif.results.json").read_bytes())["tasks"]["mag"]["metrics"]["f1"]
    cell = page.locator("#leaderboard tbody.entry").nth(2).locator('td.num').first
    assert cell.locator(".ci").inner_text() == f"[{mag - 2.5:.2f}, {min(100.0, mag + 1.5):.2f}]"
