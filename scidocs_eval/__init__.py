"""scidocs-eval: evaluate scientific-document embeddings the way SciDocs does.

The public names below are imported on first use (PEP 562), so that `import scidocs_eval` and the command
line's `--help` do not load numpy, scikit-learn or scipy before anything is asked.
"""

from __future__ import annotations

import importlib
from importlib import metadata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scidocs_eval.errors import InputError, MissingEmbeddingsError, ScidocsEvalError, SuiteNotFoundError
    from scidocs_eval.evaluation.comparison import Comparison, compare
    from scidocs_eval.evaluation.config import RunConfig
    from scidocs_eval.evaluation.results import RunResult, RunSettings
    from scidocs_eval.evaluation.runner import evaluate
    from scidocs_eval.evaluation.task import BENCHMARKS, Benchmark, Task, TaskResult, get_task, register_task
    from scidocs_eval.formats.embeddings import EmbeddingStore
    from scidocs_eval.formats.embeddings_tables import ReadOptions
    from scidocs_eval.formats.embeddings_writers import convert_embeddings
    from scidocs_eval.formats.suite import Paper, Suite
    from scidocs_eval.models.adapter import Adapter, get_adapter, register_adapter
    from scidocs_eval.run.baseline import run_baseline
    from scidocs_eval.run.embedding import write_embeddings
    from scidocs_eval.run.model_object import EncodeConfig, evaluate_model
    from scidocs_eval.training.specter import train_specter

_PUBLIC = {
    "scidocs_eval.errors": ("InputError", "MissingEmbeddingsError", "ScidocsEvalError", "SuiteNotFoundError"),
    "scidocs_eval.evaluation.comparison": ("Comparison", "compare"),
    "scidocs_eval.evaluation.config": ("RunConfig",),
    "scidocs_eval.evaluation.results": ("RunResult", "RunSettings"),
    "scidocs_eval.evaluation.runner": ("evaluate",),
    "scidocs_eval.evaluation.task": ("BENCHMARKS", "Benchmark", "Task", "TaskResult", "get_task", "register_task"),
    "scidocs_eval.formats.embeddings": ("EmbeddingStore",),
    "scidocs_eval.formats.embeddings_tables": ("ReadOptions",),
    "scidocs_eval.formats.embeddings_writers": ("convert_embeddings",),
    "scidocs_eval.formats.suite": ("Paper", "Suite"),
    "scidocs_eval.models.adapter": ("Adapter", "get_adapter", "register_adapter"),
    "scidocs_eval.run.baseline": ("run_baseline",),
    "scidocs_eval.run.embedding": ("write_embeddings",),
    "scidocs_eval.run.model_object": ("EncodeConfig", "evaluate_model"),
    "scidocs_eval.training.specter": ("train_specter",),
}
"""module -> the public names it defines, re-exported here."""

_MODULE_OF = {name: module for module, names in _PUBLIC.items() for name in names}

__version__ = metadata.version("scidocs-eval")

__all__ = [
    "Adapter", "BENCHMARKS", "Benchmark", "Comparison", "EmbeddingStore", "EncodeConfig", "InputError",
    "MissingEmbeddingsError", "Paper", "ReadOptions", "RunConfig", "RunResult", "RunSettings", "ScidocsEvalError",
    "Suite", "SuiteNotFoundError", "Task", "TaskResult", "compare", "convert_embeddings", "evaluate", "evaluate_model",
    "get_adapter", "get_task", "register_adapter", "register_task", "run_baseline", "train_specter",
    "write_embeddings",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'scidocs_eval' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
