"""The `scidocs-eval` command: `main` builds the parser from the registered command groups, one module per
group, each thin over the Python API.
"""

from scidocs_eval.cli.main import main

__all__ = ["main"]
