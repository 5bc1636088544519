"""The one writer of finished embeddings files: every command that writes embeddings (`baseline`, `embed`,
`evaluate_model`, one process or several under torchrun) ends here, with every paper's line in input order."""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable
from pathlib import Path

from scidocs_eval.formats.safe_output import Rows, atomic_write


def write_embeddings_file(path: str | os.PathLike[str], lines: Iterable[bytes], option: str = "output", *,
                          paper_ids: Collection[str]) -> Path:
    """Write `lines` (official JSON lines, each ending in a newline, in the papers' input order; the papers
    `paper_ids`) to `path`, atomically: a reader never sees a half-written file, and replacing a file that held
    other papers says so (`safe_output.Rows`)."""
    with atomic_write(path, option, rows=Rows("papers", set(paper_ids))) as handle:
        for line in lines:
            handle.write(line)
    return Path(path)
