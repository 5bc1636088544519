"""scidocs-eval: evaluate scientific-document embeddings the way SciDocs does."""

from scidocs_eval.adapter import Adapter, get_adapter, register_adapter
from scidocs_eval.baseline import run_baseline, write_embeddings
from scidocs_eval.comparison import Comparison, compare
from scidocs_eval.embeddings import EmbeddingStore
from scidocs_eval.errors import InputError, MissingEmbeddingsError, ScidocsEvalError, SuiteNotFoundError
from scidocs_eval.evaluate import evaluate
from scidocs_eval.model_object import evaluate_model
from scidocs_eval.results import RunResult
from scidocs_eval.suite import Paper, Suite
from scidocs_eval.task import Task, TaskResult, get_task, register_task

__version__ = "0.1.0"

__all__ = [
    "Adapter", "Comparison", "EmbeddingStore", "InputError", "MissingEmbeddingsError", "Paper", "RunResult",
    "ScidocsEvalError", "Suite", "SuiteNotFoundError", "Task", "TaskResult", "compare", "evaluate", "evaluate_model",
    "get_adapter", "get_task", "register_adapter", "register_task", "run_baseline", "write_embeddings",
]
