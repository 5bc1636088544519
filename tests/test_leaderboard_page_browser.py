"""The leaderboard page (`leaderboard --out-dir`) in a real browser (chromium, headless, from file://, offline):
every ranking is a sortable table, every row's score and interval are drawn with its group letters, published
rows are marked and carry no letter, nothing from a results file runs as code. Skips where chromium or
Playwright is missing, as tests/test_report_browser.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scidocs_eval.cli import main
from scidocs_eval.leaderboard.table1 import paper_rows
from tests.test_ranking_groups import write_three_models
from tests.test_report_browser import INJECTED, REPO, browser, open_page  # noqa: F401 (browser: a fixture)

SCREENSHOT = REPO / "build" / "screenshots" / "leaderboard.png"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("results")
    write_three_models(folder, INJECTED)
    out = tmp_path_factory.mktemp("site") / "site"
    assert main(["leaderboard", str(folder), "--resamples", "300", "--out-dir", str(out), "--quiet"]) == 0
    return out


@pytest.fixture()
def page(browser: Any, site: Path) -> Iterator[Any]:  # noqa: F811
    page = open_page(browser, site)
    yield page
    page.close()


def _column(page: Any, table: int, column: int) -> list[str]:
    return page.eval_on_selector_all(
        "table.ranking", f"tables => Array.from(tables[{table}].tBodies[0].rows).map(r => r.cells[{column}]"
        f".dataset.value ?? r.cells[{column}].textContent.trim())")


def test_page_shows_every_ranking_with_intervals_letters_and_published_rows(page: Any) -> None:
    assert page.problems == []
    assert page.evaluate("window.injected") is None
    names = page.eval_on_selector_all("table.ranking[data-ranking]", "ts => ts.map(t => t.dataset.ranking)")
    assert names == ["cite", "cocite", "mag"]
    labels = _column(page, 2, 1)
    assert labels[0] == "better" and INJECTED in labels
    assert sum("(published)" in label for label in labels) == len(paper_rows())
    groups = dict(zip(labels, _column(page, 2, 4)))
    assert groups["better"] == "a" and groups["same"] == groups[INJECTED] == "b"
    assert all(groups[label] == "" for label in labels if "(published)" in label)
    chart = page.locator("table.ranking").nth(2).locator("tr.ours svg.interval").first
    assert chart.locator("line.ci").count() == 1 and chart.locator("text").text_content() == "a"
    assert page.locator("tr.published svg rect").count() == 3 * len(paper_rows())
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT), full_page=True)


def test_clicking_a_header_sorts_that_ranking(page: Any) -> None:
    table = page.locator("table.ranking").nth(2)
    scores = [float(v) for v in _column(page, 2, 2)]
    assert scores == sorted(scores, reverse=True)
    table.locator("thead th").nth(2).locator("button").click()  # descending first: already so
    table.locator("thead th").nth(2).locator("button").click()
    assert [float(v) for v in _column(page, 2, 2)] == sorted(scores)
    assert table.locator("thead th").nth(2).get_attribute("aria-sort") == "ascending"
    table.locator("thead th").nth(1).locator("button").click()
    labels = _column(page, 2, 1)
    assert labels == sorted(labels, key=str.lower)
    table.locator("thead th").nth(0).locator("button").click()  # by position again: the score order
    assert [float(v) for v in _column(page, 2, 2)] == sorted(scores, reverse=True)
