"""Every fenced code block of README.md and docs/ runs, offline, or says why not (the conventions below).

A page's blocks run in order in one fresh folder (also $HOME, so `~/x` stays inside it): `bash` blocks through
bash, `python` blocks through python, `json` blocks must parse line by line. The HTML comment on the line before
a block changes that:

- `<!-- test: output -->` on a `text` block: it must equal what the previous block printed (a line `...` stands
  for any lines), so printed outputs shown in the docs cannot go stale.
- `<!-- test: slow, 3 min -->`: runs with `-m slow` only; the marker states how long the block takes.
- `<!-- test: long, 7 min -->`: runs with `-m long` only (also slow; CI leaves these out): a documented command at
  the full size of a suite that takes minutes of the CPU's arithmetic, each of whose steps a cheaper test proves
  on a small suite; the marker states how long it takes.
- `<!-- test: online -->`: needs the network, a hub id or a GPU; the next block must be its offline equivalent.
- `<!-- test: ci -->`: install commands, which `.ci/run` runs in fresh environments.
- `<!-- test: synopsis -->`: a usage summary; every `--option` of each `scidocs-eval ...` line must exist, and a
  line that is a whole command (no placeholder such as FILE, `[...]`, `...`) runs in a block of the docs too, or
  its comment says why not: `(network ...)` or `(GPU ...)`, or how long it takes (`(long: 35 min ...)`).
- `<!-- test: diagram -->`: a picture, not code.

A fence may be indented (inside a list item); its block follows the same rules, so no block escapes them.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from scidocs_eval.cli.main import build_parser

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
MARKERS = ("output", "slow", "long", "online", "ci", "synopsis", "diagram")
RUNNABLE = ("bash", "python", "json")
FENCE = re.compile(r"^( *)```(\S*)\s*$")
MARKER = re.compile(r"^ *<!-- test: (\w+)")
DURATION = re.compile(r"\d+(\.\d+)? ?(s|min|minutes|h|hours)\b")
PLACEHOLDER = re.compile(r"\b[A-Z][A-Z0-9_]+\b|\.\.\.|\[|<")
WHY_NOT_RUN = re.compile(r"\((network|GPU|long: [^)]*" + DURATION.pattern + r")")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    language: str
    marker: str | None
    code: str
    marker_line: str = ""

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def blocks_of(page: Path) -> list[Block]:
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks, index = [], 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent = opening.group(1)
        end = next(i for i in range(index + 1, len(lines)) if lines[i].startswith(f"{indent}```"))
        marker = MARKER.match(lines[index - 1]) if index else None
        blocks.append(Block(page, index + 1, opening.group(2), marker and marker.group(1),
                            "\n".join(line.removeprefix(indent) for line in lines[index + 1:end]) + "\n",
                            lines[index - 1] if marker else ""))
        index = end + 1
    return blocks


def test_every_block_is_runnable_or_marked() -> None:
    problems = []
    for page in PAGES:
        blocks = blocks_of(page)
        for position, block in enumerate(blocks):
            if block.marker is not None and block.marker not in MARKERS:
                problems.append(f"{block.where}: unknown marker {block.marker!r} (one of {', '.join(MARKERS)})")
            elif block.marker is None and block.language not in RUNNABLE:
                problems.append(f"{block.where}: ```{block.language} is not runnable: mark it (see this file)")
            elif block.marker == "output" and (position == 0 or blocks[position - 1].language not in RUNNABLE):
                problems.append(f"{block.where}: an output block follows no runnable block")
            elif block.marker in ("slow", "long") and not DURATION.search(block.marker_line):
                problems.append(f"{block.where}: a {block.marker} block states how long it takes "
                                f"(<!-- test: {block.marker}, 3 min -->)")
            elif block.marker == "online" and (position + 1 == len(blocks)
                                               or blocks[position + 1].marker not in (None, "slow", "long")):
                problems.append(f"{block.where}: an online block needs its offline equivalent as the next block")
    assert not problems, "\n".join(problems)


PARSER = build_parser()
"""Built once (each build takes about 17 ms; the checks below look up hundreds of documented commands); read only."""


def _parser_of(words: list[str]) -> argparse.ArgumentParser:
    """The parser of the (sub)command that `words` (after `scidocs-eval`) name."""
    parser = PARSER
    for word in words:
        choices = next((action.choices for action in parser._actions
                        if isinstance(action, argparse._SubParsersAction)), None)
        if not choices or word not in choices:
            break
        parser = choices[word]
    return parser


def test_synopsis_options_exist() -> None:
    problems = []
    for page in PAGES:
        for block in blocks_of(page):
            if block.marker != "synopsis":
                continue
            for command in re.findall(r"scidocs-eval ((?:[^\n]|\\\n)*)", block.code.replace("scidocs_eval.cli", "")):
                words = command.split()
                options = {o for action in _parser_of(words)._actions for o in action.option_strings}
                problems += [f"{block.where}: `scidocs-eval {' '.join(words[:2])}` has no option {flag}"
                             for flag in re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", command) if flag not in options]
    assert not problems, "\n".join(problems)


def _commands(code: str) -> list[tuple[str, str]]:
    """(command, comment) of each `scidocs-eval ...` line of `code`, continuation lines joined."""
    joined = code.replace("\\\n", " ")
    return [(command.strip(), comment) for line in joined.splitlines() if line.lstrip().startswith("scidocs-eval ")
            for command, _, comment in [line.partition(" #")]]


def test_every_documented_command_runs_or_says_why_not() -> None:
    """A synopsis line that is a whole command is run by some block of the docs, or says why it is not here (the
    network, a GPU) or how long it takes."""
    ran = {" ".join(command.split()) for page in PAGES for block in blocks_of(page)
           if block.language == "bash" and block.marker in (None, "slow") for command, _ in _commands(block.code)}
    problems = [f"{block.where}: `{command}` is run by no block of the docs: run it in one, or say why not in its "
                "comment: (network ...), (GPU ...), or (long: N min ...)"
                for page in PAGES for block in blocks_of(page) if block.marker == "synopsis"
                for command, comment in _commands(block.code)
                if not PLACEHOLDER.search(command.removeprefix("scidocs-eval")) and " ".join(command.split()) not in ran
                and not WHY_NOT_RUN.search(comment)]
    assert not problems, "\n".join(problems)


def test_docs_use_no_hidden_spelling() -> None:
    """An old spelling kept for scripts (`compare --json`, `run --output`: hidden from --help) is never what the
    docs teach: every option of every `scidocs-eval ...` line of every block is one --help shows."""
    problems = []
    for page in PAGES:
        for block in blocks_of(page):
            for command in re.findall(r"scidocs-eval ((?:[^\n`|;&>]|\\\n)*)", block.code):
                words = command.split()
                hidden = {o for action in _parser_of(words)._actions if action.help == argparse.SUPPRESS
                          for o in action.option_strings}
                problems += [f"{block.where}: `scidocs-eval {' '.join(words[:2])}` uses the old spelling {flag}"
                             for flag in re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", command) if flag in hidden]
    assert not problems, "\n".join(problems)


def _matches(expected: str, printed: str) -> bool:
    """`printed` line by line against `expected`, where an `...` line stands for any lines (none included)."""
    pattern = "\n".join(".*?" if line.strip() == "..." else re.escape(line.rstrip())
                        for line in expected.strip("\n").splitlines())
    cleaned = "\n".join(line.rstrip() for line in printed.strip("\n").splitlines())
    return re.fullmatch(pattern, cleaned, flags=re.DOTALL) is not None


def _run(block: Block, folder: Path) -> str:
    environment = {**os.environ, "HOME": str(folder), "SCIDOCS_EVAL_CACHE": str(folder / ".cache"),
                   "SCIDOCS_EVAL_QUIET": "1", "COLUMNS": "120"}
    if block.language == "json":
        for line in block.code.splitlines():
            orjson.loads(line)
        return ""
    command = ["bash", "-euo", "pipefail", "-c", block.code] if block.language == "bash" else \
        [sys.executable, "-c", block.code]
    process = subprocess.run(command, cwd=folder, env=environment, capture_output=True, text=True, timeout=1800)
    assert process.returncode == 0, f"{block.where} failed ({process.returncode}):\n{process.stdout}\n{process.stderr}"
    return process.stdout


def run_page(page: Path, folder: Path, slow: bool, long: bool = False) -> None:
    printed: str | None = None  # None: the previous block did not run here, so its output is not checked
    for block in blocks_of(page):
        if block.marker in ("online", "ci", "synopsis", "diagram") or (block.marker == "slow" and not slow) \
                or (block.marker == "long" and not long):
            printed = None
            continue
        if block.marker == "output":
            assert printed is None or _matches(block.code, printed), \
                f"{block.where}: the page shows\n{block.code}\nthe block printed\n{printed}"
            continue
        printed = _run(block, folder)


def _has(page: Path, marker: str | None) -> bool:
    return any(block.marker == marker for block in blocks_of(page))


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_page_examples_run(page: Path, tmp_path: Path) -> None:
    run_page(page, tmp_path, slow=False)


@pytest.mark.slow
@pytest.mark.parametrize("page", [page for page in PAGES if _has(page, "slow")],
                         ids=lambda page: str(page.relative_to(REPO)))
def test_page_examples_run_with_slow_blocks(page: Path, tmp_path: Path) -> None:
    run_page(page, tmp_path, slow=True)


@pytest.mark.slow
@pytest.mark.long
@pytest.mark.parametrize("page", [page for page in PAGES if _has(page, "long")],
                         ids=lambda page: str(page.relative_to(REPO)))
def test_page_examples_run_with_long_blocks(page: Path, tmp_path: Path) -> None:
    run_page(page, tmp_path, slow=True, long=True)
