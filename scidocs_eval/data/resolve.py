"""Turn what the user gave as --data (a path, "demo", or nothing) into a Suite."""

from __future__ import annotations

import os
from pathlib import Path

from scidocs_eval.data.demo import default_demo_suite
from scidocs_eval.errors import SuiteNotFoundError
from scidocs_eval.formats.suite import Suite
from scidocs_eval.paths import default_data_dir

DEMO = "demo"
"""The --data value naming the built-in synthetic demo suite."""


def resolve_suite(data: str | os.PathLike[str] | Suite | None = None) -> Suite:
    """A Suite from a path, "demo" (the synthetic demo suite, built on first use), or None (the default dir)."""
    if isinstance(data, Suite):
        return data
    if data is not None and str(data) == DEMO:
        if Path(DEMO).is_dir():
            raise SuiteNotFoundError(f"--data {DEMO} is ambiguous here: it names the built-in synthetic demo suite, "
                                     f"but this folder has a folder named {DEMO}; give --data ./{DEMO} to score "
                                     f"yours, or run from another folder for the built-in one")
        return default_demo_suite()
    root = Path(data) if data is not None else default_data_dir()
    if not root.is_dir() or not any(root.iterdir()):
        looked = "" if root.is_absolute() else f" (looked in {Path.cwd()})"
        raise SuiteNotFoundError(
            f"no SciDocs data at {root}{looked}. Download the official release with "
            f"`scidocs-eval data download --out-dir {root}`, point --data (or $SCIDOCS_EVAL_DATA) at a copy, "
            "or try the synthetic demo suite with `--data demo`."
        )
    return Suite(root)
