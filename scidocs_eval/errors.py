"""Exceptions with messages that name the file, line or id at fault."""

from __future__ import annotations

import os
from os import PathLike


class ScidocsEvalError(Exception):
    """Base class: the CLI prints these without a traceback and exits with status 2."""


class InputError(ScidocsEvalError):
    """A file the user gave us is malformed; the message says where."""

    def __init__(self, path: str | PathLike[str], message: str, line: int | None = None, *, row: int | None = None):
        self.path = str(path)
        self.line = line
        self.row = row
        where = f"{self.path}:{line}" if line is not None else f"{self.path}: row {row}" if row is not None \
            else self.path
        if not os.path.isabs(self.path) and not os.path.lexists(self.path):
            message += f" (looked in {os.getcwd()})"  # relative paths are the shell's: say which folder that was
        super().__init__(f"{where}: {message}")


class UndefinedMetricError(ScidocsEvalError):
    """A task's metric has no value on these embeddings (a correlation of constant predictions): the task is
    reported as not scored (`reason`), never as a number."""

    def __init__(self, task: str, reason: str):
        self.task, self.reason = task, reason
        super().__init__(f"task {task}: {reason}")


class SuiteNotFoundError(ScidocsEvalError):
    """No SciDocs data where we looked."""


class MissingEmbeddingsError(ScidocsEvalError):
    """`missing="error"` and some papers a task needs have no embedding."""

    def __init__(self, task: str, role: str, missing_ids: list[str], total: int, shown: int = 10):
        self.task = task
        self.missing_ids = missing_ids
        listed = ", ".join(missing_ids[:shown])
        more = f" (and {total - shown} more)" if total > shown else ""
        super().__init__(f"task {task}: {total} {role} have no embedding: {listed}{more}")



def describe_error(error: Exception) -> str:
    """One line for the user: our own errors as they are; an OSError as "PATH: reason" (e.g. permission denied,
    is a directory), naming the file the system call failed on."""
    if isinstance(error, OSError) and error.filename is not None:
        reason = error.strerror or str(error)
        if isinstance(error, FileNotFoundError) and not os.path.isabs(error.filename):
            reason += f" (looked in {os.getcwd()})"
        if error.filename2 is not None:
            return f"{error.filename} -> {error.filename2}: {reason}"
        return f"{error.filename}: {reason}"
    return str(error)
