"""The one writer of finished embeddings files: every command that writes embeddings (`baseline`, `embed`,
`evaluate_model`, one process or several under torchrun) ends here, with every paper's line in input order."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from scidocs_eval.formats.safe_output import atomic_write


def write_embeddings_file(path: str | os.PathLike[str], lines: Iterable[bytes], option: str = "output") -> Path:
    """Write `lines` (official JSON lines, each ending in a newline, in the papers' input order) to `path`,
    atomically: a reader never sees a half-written file."""
    with atomic_write(path, option) as handle:
        for line in lines:
            handle.write(line)
    return Path(path)
