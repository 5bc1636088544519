"""Extras that add up: the table in README.md and docs/index.md is the one .ci/extras_table.py generates from
setup.cfg, every extra says what it enables, and every extra an error message names exists."""

from __future__ import annotations

import runpy
from pathlib import Path

from scidocs_eval.extras import EXTRA_OF

REPO = Path(__file__).resolve().parents[1]
SCRIPT = runpy.run_path(str(REPO / ".ci" / "extras_table.py"))


def test_the_extras_tables_are_generated_from_setup_cfg() -> None:
    assert SCRIPT["main"](["--check"]) == 0, "run python .ci/extras_table.py"


def test_every_extra_says_what_it_enables_and_every_named_extra_exists() -> None:
    extras = SCRIPT["read_extras"]()
    assert [name for name, (what, _, _) in extras.items() if not what] == []
    assert set(EXTRA_OF.values()) <= set(extras)
    included = extras["all"][2]
    assert set(included) <= set(extras)
    table = SCRIPT["render"](extras)
    assert "| `all` | every extra a user needs, in one environment | " + ", ".join(f"`[{e}]`" for e in included) \
        in table


def test_a_stale_table_is_found(tmp_path: Path) -> None:
    text = f"before\n{SCRIPT['START']}\n| old |\n{SCRIPT['END']}\nafter\n"
    rendered = SCRIPT["with_table"](text, "| new |", tmp_path)
    assert rendered == f"before\n{SCRIPT['START']}\n| new |\n{SCRIPT['END']}\nafter\n"
