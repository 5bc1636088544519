"""Score a model held as a Python object: `evaluate_model(model, data)`.

`model` is anything with ``encode(texts, batch_size=..., **kwargs) -> (n, d)`` (a sentence-transformers
model, an MTEB-style encoder, a user's class) or a plain callable ``texts -> (n, d)``. Every paper the chosen
tasks need is embedded batch by batch into the official JSON lines format, then scored by `evaluate`, so the
numbers are the ones `scidocs-eval run` prints for that file. A model that wants structured papers instead of
text declares ``scidocs_inputs = "papers"`` (or the caller passes ``inputs="papers"``) and receives
``[{"paper_id", "title", "abstract"}, ...]``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from scidocs_eval.data.resolve import resolve_suite
from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.evaluation.task import MissingPolicy
from scidocs_eval.extras import require
from scidocs_eval.formats.corpus import paper_text
from scidocs_eval.formats.safe_output import atomic_write, claim_output
from scidocs_eval.formats.suite import Paper, Suite
from scidocs_eval.models.adapter import Adapter
from scidocs_eval.models.baseline import _metadata_files, write_embeddings
from scidocs_eval.models.model_cache import corpus_fingerprint
from scidocs_eval.paths import cache_dir

NEEDED_BY = "reading torch tensors from a model object"

log = logging.getLogger("scidocs_eval")

INPUTS = ("text", "papers")


def _as_numbers(output: Any) -> np.ndarray:
    """A model's output as a numpy array: torch tensors (also bf16, on a GPU, or a list of them) included."""
    if isinstance(output, (list, tuple)) and output and hasattr(output[0], "detach"):
        torch = require("torch", NEEDED_BY)

        output = torch.stack(list(output))
    if hasattr(output, "detach"):
        output = output.detach().float().cpu().numpy()
    try:
        return np.asarray(output)
    except ValueError as error:  # ragged lists
        raise ValueError(f"the output is not a matrix ({error})") from None


class EncoderAdapter(Adapter):
    """An object with `encode` (or a plain callable) as a model adapter; every call's output is checked.

    Args:
        model: an object with ``encode(texts, batch_size=..., **kwargs)``, or a callable ``texts -> (n, d)``.
        batch_size: texts per call; each call is one batch, which error messages name.
        inputs: "text" (title + separator + abstract strings) or "papers" (dicts with paper_id, title,
            abstract); None: the model's ``scidocs_inputs`` attribute, else "text".
        separator: between title and abstract; None: the model tokenizer's ``sep_token`` when it has one
            (sentence-transformers models do), else a space.
        encode_kwargs: keyword arguments added to every call (e.g. ``{"normalize_embeddings": True}``).
    """

    name = "model-object"

    def __init__(self, model: Any, batch_size: int = 32, inputs: str | None = None, separator: str | None = None,
                 encode_kwargs: Mapping[str, Any] | None = None):
        encode = getattr(model, "encode", None)
        if callable(encode):
            self._call: Callable[..., Any] = lambda items: encode(items, batch_size=batch_size,
                                                                  **self.encode_kwargs)
        elif callable(model):
            self._call = lambda items: model(items, **self.encode_kwargs)
        else:
            raise ScidocsEvalError(f"the model ({type(model).__name__}) has no encode() method and is not "
                                   "callable; give an object with encode(texts) or a function texts -> vectors")
        if batch_size < 1:
            raise ScidocsEvalError(f"batch_size must be >= 1, got {batch_size}")
        self.inputs = inputs or getattr(model, "scidocs_inputs", "text")
        if self.inputs not in INPUTS:
            raise ScidocsEvalError(f"inputs must be one of {', '.join(INPUTS)}, got {self.inputs!r}")
        self.model = model
        self.batch_size = batch_size
        self.separator = separator if separator is not None else \
            getattr(getattr(model, "tokenizer", None), "sep_token", None) or " "
        self.encode_kwargs = dict(encode_kwargs or {})
        self.dim: int | None = None

    def describe(self) -> dict[str, Any]:
        """What the results file records about the model and how it was called."""
        return {"class": f"{type(self.model).__module__}.{type(self.model).__qualname__}", "inputs": self.inputs,
                "separator": self.separator, "batch_size": self.batch_size,
                "encode_kwargs": {key: repr(value) for key, value in sorted(self.encode_kwargs.items())}}

    def _items(self, papers: Sequence[Paper]) -> list[Any]:
        if self.inputs == "papers":
            return [{"paper_id": p.paper_id, "title": p.title, "abstract": p.abstract} for p in papers]
        return [paper_text(paper, self.separator) for paper in papers]

    def _checked(self, output: Any, batch: Sequence[Paper], where: str) -> np.ndarray:
        """(len(batch), dim) float matrix from one call's output, or an error naming the batch."""
        try:
            matrix = _as_numbers(output)
        except ValueError as error:
            raise ScidocsEvalError(f"{where}: {error}") from None
        if matrix.dtype.kind not in "fiu":
            raise ScidocsEvalError(f"{where}: the model returned {matrix.dtype} values, not numbers")
        if matrix.ndim != 2 or matrix.shape[1] == 0:
            raise ScidocsEvalError(f"{where}: expected a ({len(batch)}, dim) matrix, the model returned shape "
                                   f"{matrix.shape}")
        if matrix.shape[0] != len(batch):
            raise ScidocsEvalError(f"{where}: {len(batch)} texts given, {matrix.shape[0]} vectors returned")
        if self.dim is not None and matrix.shape[1] != self.dim:
            raise ScidocsEvalError(f"{where}: vectors of dimension {matrix.shape[1]}, earlier batches gave "
                                   f"{self.dim}")
        bad = ~np.isfinite(matrix).all(axis=1)
        if bad.any():
            raise ScidocsEvalError(f"{where}: NaN or infinite values in {int(bad.sum())} vector(s), the first "
                                   f"of paper {batch[int(np.argmax(bad))].paper_id!r}")
        self.dim = matrix.shape[1]
        return matrix if matrix.dtype in (np.float32, np.float64) else matrix.astype(np.float32)

    def transform_batches(self, papers: Sequence[Paper]) -> Iterator[tuple[Sequence[Paper], np.ndarray]]:
        for number, start in enumerate(range(0, len(papers), self.batch_size), start=1):
            batch = papers[start:start + self.batch_size]
            where = (f"model batch {number} (papers {start + 1}-{start + len(batch)} of {len(papers)}, first id "
                     f"{batch[0].paper_id!r})")
            yield batch, self._checked(self._call(self._items(batch)), batch, where)

    def transform(self, papers: Sequence[Paper]) -> np.ndarray:
        return np.concatenate([vectors for _, vectors in self.transform_batches(papers)])


def _cached_embeddings(adapter: EncoderAdapter, papers: Sequence[Paper], name: str, progress: bool) -> Path:
    """The embeddings of `papers` by the model called `name`, from the cache or written into it.

    The key is the name, the papers and how the model is called, never the weights: a model changed under
    the same name gets the old vectors, so a cache hit is a warning.
    """
    settings = adapter.describe()
    key = hashlib.sha256(repr((name, corpus_fingerprint(papers), sorted(settings.items()))).encode()).hexdigest()
    path = cache_dir("model-embeddings") / f"{re.sub(r'[^A-Za-z0-9._-]+', '_', name)}-{key[:20]}.jsonl"
    if path.is_file():
        log.warning("reusing the embeddings of %r cached at %s; after changing the model, pass cache=False or "
                    "another name", name, path)
        return path
    partial = path.with_name(path.name + ".partial")
    write_embeddings(adapter, papers, partial, resume=True, progress=progress)
    os.replace(partial, path)
    return path


def evaluate_model(
    model: Any,
    data: str | os.PathLike[str] | Suite | None = None,
    tasks: Sequence[str] | None = None,
    split: str = "test",
    batch_size: int = 32,
    *,
    name: str | None = None,
    save_embeddings: str | os.PathLike[str] | None = None,
    cache: bool = True,
    inputs: str | None = None,
    separator: str | None = None,
    encode_kwargs: Mapping[str, Any] | None = None,
    missing: MissingPolicy = "official",
    task_params: Mapping[str, Mapping[str, Any]] | None = None,
    output: str | os.PathLike[str] | None = None,
    progress: bool = True,
) -> RunResult:
    """Embed every paper the tasks need with `model` and score the embeddings, as `evaluate` does for a file.

    Args:
        model: an object with ``encode(texts, batch_size=..., **kwargs) -> (n, d)`` or a callable
            ``texts -> (n, d)`` (numpy arrays, torch tensors or nested lists); see `EncoderAdapter`.
        data: suite directory, "demo", a Suite, or None for the default data directory.
        tasks: task names (default: all registered ones); only their papers are embedded.
        split: "test" or "val".
        batch_size: texts per call of the model.
        name: the model's name in results; with `cache`, the embeddings are cached under this name and a
            second call with the same name, papers and settings reuses them (with a warning).
        save_embeddings: also write the embeddings here (official JSON lines); the file must not exist yet.
        inputs, separator, encode_kwargs: how the model is called (see `EncoderAdapter`).
        missing, task_params, output, progress: as in `evaluate`.

    Returns:
        the RunResult; ``settings["model_object"]`` records how the model was called.
    """
    started = time.perf_counter()
    suite = resolve_suite(data)
    papers = suite.papers(_metadata_files(suite, tasks))
    adapter = EncoderAdapter(model, batch_size=batch_size, inputs=inputs, separator=separator,
                             encode_kwargs=encode_kwargs)
    adapter.name = name or getattr(model, "__name__", None) or type(model).__name__
    save = Path(save_embeddings) if save_embeddings is not None else None
    if save is not None:
        claim_output(save, "save_embeddings")
    with tempfile.TemporaryDirectory(prefix="scidocs-eval-model-") as scratch:
        if name and cache:
            embeddings = _cached_embeddings(adapter, papers, name, progress)
        else:
            embeddings = write_embeddings(adapter, papers, Path(scratch) / "embeddings.jsonl", resume=False,
                                          progress=progress)
        if save is not None:
            with open(embeddings, "rb") as source, atomic_write(save, "save_embeddings") as target:
                shutil.copyfileobj(source, target)
            embeddings = save
        embedded = time.perf_counter()
        result = evaluate(embeddings, suite, tasks=tasks, split=split, missing=missing, task_params=task_params,
                          model=adapter.name, cache=save is not None or bool(name and cache), progress=progress)
    result.settings["model_object"] = adapter.describe()
    result.timings["embed"] = round(embedded - started, 3)
    if output is not None:
        result.save(output)
    return result
