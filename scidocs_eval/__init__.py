"""scidocs-eval: evaluate scientific-document embeddings the way SciDocs does."""

from importlib import metadata

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

__version__ = metadata.version("scidocs-eval")

__all__ = [
    "Adapter", "BENCHMARKS", "Benchmark", "Comparison", "EmbeddingStore", "EncodeConfig",
    "InputError", "MissingEmbeddingsError", "Paper", "ReadOptions",
    "RunConfig", "RunResult", "RunSettings", "ScidocsEvalError", "Suite", "SuiteNotFoundError", "Task", "TaskResult",
    "compare",
    "convert_embeddings", "evaluate", "evaluate_model",
    "get_adapter", "get_task", "register_adapter", "register_task", "run_baseline", "train_specter",
    "write_embeddings",
]
