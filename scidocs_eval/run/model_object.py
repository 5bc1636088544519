"""Score a model held as a Python object: `evaluate_model(model, config, encode=EncodeConfig(...))`.

`model` is anything with ``encode(texts, batch_size=..., **kwargs) -> (n, d)`` (a sentence-transformers
model, a user's class), an MTEB 2.x encoder (``encode(inputs: DataLoader, *, task_metadata, hf_split, hf_subset,
prompt_type=None, **kwargs)``, told apart by that signature, never by its class), or a plain callable
``texts -> (n, d)``. Queries and documents of retrieval tasks are embedded apart, with MTEB's prompt type
("query" / "document") passed to a model whose encode takes `prompt_type` (MTEB encoders) or that has prompts of
those names (sentence-transformers' `prompt_name`). Every paper the chosen
tasks need is embedded batch by batch into the official JSON lines format, then scored by `evaluate`, so the
numbers are the ones `scidocs-eval run` prints for that file. A model that wants structured papers instead of
text declares ``scidocs_inputs = "papers"`` (or the caller passes ``inputs="papers"``) and receives
``[{"paper_id", "title", "abstract"}, ...]``.
"""

from __future__ import annotations

import hashlib
import inspect
import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from scidocs_eval.data.resolve import resolve_suite
from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.config import RunConfig, config_from_keywords
from scidocs_eval.evaluation.papers import EmbeddingRole
from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.evaluation.task import claim_task_inputs
from scidocs_eval.extras import require
from scidocs_eval.formats.corpus import paper_text
from scidocs_eval.formats.safe_output import Read, claim_output, given_as
from scidocs_eval.formats.suite import Paper
from scidocs_eval.models.adapter import Adapter
from scidocs_eval.models.format_prompts import FORMAT_PROMPTS, FormatPrompts
from scidocs_eval.models.weights import object_fingerprint
from scidocs_eval.params import check_value
from scidocs_eval.run.pipeline import embed_and_score

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


class EncoderAdapter(FormatPrompts, Adapter):
    """An object with `encode` (or a plain callable) as a model adapter; every call's output is checked.

    Args:
        model: an object with ``encode(texts, batch_size=..., **kwargs)``, or a callable ``texts -> (n, d)``.
        batch_size: texts per call; each call is one batch, which error messages name.
        inputs: "text" (title + separator + abstract strings) or "papers" (dicts with paper_id, title,
            abstract); None: the model's ``scidocs_inputs`` attribute, else "text".
        separator: between title and abstract; None: the model tokenizer's ``sep_token`` when it has one
            (sentence-transformers models do), else a space.
        encode_kwargs: keyword arguments added to every call (e.g. ``{"normalize_embeddings": True}``).
        format_prompts: {input format: prompt} put before the texts of papers embedded for that format
            (`scidocs_eval.models.format_prompts`); the model then embeds by format, each paper once per format.
            With "papers" inputs, every paper dict also says its `input_format`.
        fingerprint: what identifies the model for the embedding cache when its weights cannot be hashed.
    """

    name = "model-object"

    def __init__(self, model: Any, batch_size: int = 32, inputs: str | None = None, separator: str | None = None,
                 encode_kwargs: Mapping[str, Any] | None = None, format_prompts: Mapping[str, str] | None = None,
                 fingerprint: str | None = None):
        encode = getattr(model, "encode", None)
        self.fingerprint = fingerprint
        if format_prompts is not None:
            check_value("format_prompts", dict(format_prompts), [FORMAT_PROMPTS], "evaluate_model")
        self.format_prompts = dict(format_prompts) if format_prompts else None
        self.prompt = None
        """no prompt outside `format_prompts` (`FormatPrompts.role_prompt`)."""
        self.role: EmbeddingRole | None = None
        """the role of the papers being embedded, while `by_format`; None otherwise."""
        self.prompt_type: str | None = None
        """"query" or "document" while embedding one side of a retrieval task; None for a suite's papers."""
        self.mteb_task = "SCIDOCS"
        """the MTEB task whose metadata an MTEB encoder is given (its prompts are chosen by it)."""
        self.protocol = "mteb" if callable(encode) and speaks_mteb_protocol(encode) else "texts"
        if self.protocol == "mteb":
            self._call: Callable[..., Any] = lambda items: self._mteb_encode(encode, items)
        elif callable(encode):
            self._call = lambda items: encode(items, batch_size=batch_size, **self._prompt_kwargs(encode),
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

    def _prompt_kwargs(self, encode: Callable[..., Any]) -> dict[str, Any]:
        """`prompt_name` for a sentence-transformers model with a prompt named after the side being embedded."""
        prompts = getattr(self.model, "prompts", None)
        if self.prompt_type and isinstance(prompts, Mapping) and self.prompt_type in prompts \
                and "prompt_name" in inspect.signature(encode).parameters:
            return {"prompt_name": self.prompt_type}
        return {}

    def _mteb_encode(self, encode: Callable[..., Any], texts: list[str]) -> Any:
        """One batch through MTEB 2.x's EncoderProtocol: a DataLoader of {"text": ...} and the task's metadata."""
        needed_by = "a model with MTEB's encode() protocol"
        mteb = require("mteb", needed_by)
        Dataset = require("datasets", needed_by).Dataset  # noqa: N806 (a class)
        PromptType = require("mteb.types", needed_by).PromptType  # noqa: N806 (a class)
        DataLoader = require("torch.utils.data", needed_by).DataLoader  # noqa: N806 (a class)

        loader = DataLoader(Dataset.from_dict({"text": list(texts)}), batch_size=self.batch_size)
        prompt_type = PromptType(self.prompt_type) if self.prompt_type else None
        return encode(loader, task_metadata=mteb.get_task(self.mteb_task).metadata, hf_split="test",
                      hf_subset="default", prompt_type=prompt_type, batch_size=self.batch_size,
                      **self.encode_kwargs)

    @contextmanager
    def embedding_role(self, role: EmbeddingRole) -> Iterator[None]:
        """Queries or documents of a retrieval task: the prompt type and MTEB task go to the model's calls; by
        format, the format's prompt goes before each text."""
        self.prompt_type, self.mteb_task = role.prompt_type, role.mteb_task or "SCIDOCS"
        self.role = role if self.by_format else None
        try:
            yield
        finally:
            self.prompt_type, self.mteb_task, self.role = None, "SCIDOCS", None

    @property
    def reads_ids(self) -> bool:  # type: ignore[override]
        """A model given paper dicts sees their ids."""
        return self.inputs == "papers"

    def role_view(self, role: EmbeddingRole) -> str:
        """What of `role` reaches the model: the format's prompt (by format), the prompt type (an MTEB encoder, or
        a sentence-transformers model with a prompt of that name) and the MTEB task (an MTEB encoder)."""
        prompts = getattr(self.model, "prompts", None)
        takes_type = self.protocol == "mteb" or (isinstance(prompts, Mapping) and role.prompt_type in prompts)
        parts = [role.input_format if self.by_format else "", role.prompt_type if takes_type else "",
                 (role.mteb_task or "SCIDOCS") if self.protocol == "mteb" else ""]
        return "/".join(parts) if any(parts) else ""

    def input_key(self, paper: Paper) -> bytes:
        """The model's input for `paper` (its text with this separator; with "papers" inputs, id and fields)."""
        if self.inputs == "papers":
            return super().input_key(paper)
        return paper_text(paper, self.separator).encode()

    def cache_fingerprint(self) -> str | None:
        """The weights' hash (or the named `fingerprint`) and how the model is called; None for a model whose
        weights cannot be hashed and that was given no fingerprint."""
        identity = self.fingerprint or (self.weights_identity() or {}).get("sha256")
        if identity is None:
            return None
        called = {key: value for key, value in self.describe().items() if key != "prompt_type"}
        return hashlib.sha256(orjson.dumps([identity, called], option=orjson.OPT_SORT_KEYS)).hexdigest()

    def get_params(self) -> dict[str, Any]:
        """How the model is called (its class, not the object): what an embeddings file records."""
        return self.describe()

    def weights_identity(self) -> dict[str, str] | None:
        """A digest of the model's weights when it is a torch module (computed once per adapter)."""
        if not hasattr(self, "_weights"):
            digest = object_fingerprint(self.model)
            self._weights = {"sha256": digest} if digest else None
        return self._weights

    def describe(self) -> dict[str, Any]:
        """What the results file records about the model and how it was called."""
        return {"class": f"{type(self.model).__module__}.{type(self.model).__qualname__}", "inputs": self.inputs,
                "protocol": self.protocol, "prompt_type": self.prompt_type,
                "separator": self.separator, "batch_size": self.batch_size,
                "encode_kwargs": {key: repr(value) for key, value in sorted(self.encode_kwargs.items())},
                **({"format_prompts": self.format_prompts} if self.format_prompts else {})}

    def _items(self, papers: Sequence[Paper]) -> list[Any]:
        if self.inputs == "papers":
            said = {"input_format": self.role.input_format} if self.role else {}
            return [{"paper_id": p.paper_id, "title": p.title, "abstract": p.abstract,
                     **({"extra": list(p.extra)} if p.extra else {}), **said} for p in papers]
        prompt = self.role_prompt(self.role) or ""
        return [prompt + paper_text(paper, self.separator) for paper in papers]

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
        """Batches of `batch_size` papers, longest texts first (less padding); each batch names its papers."""
        papers = sorted(papers, key=lambda paper: -len(paper.title) - len(paper.abstract))
        for number, start in enumerate(range(0, len(papers), self.batch_size), start=1):
            batch = papers[start:start + self.batch_size]
            where = (f"model batch {number} (papers {start + 1}-{start + len(batch)} of {len(papers)}, first id "
                     f"{batch[0].paper_id!r})")
            yield batch, self._checked(self._call(self._items(batch)), batch, where)

    def transform(self, papers: Sequence[Paper]) -> np.ndarray:
        return np.concatenate([vectors for _, vectors in self.transform_batches(papers)])


MTEB_ENCODE_PARAMETERS = ("task_metadata", "hf_split", "hf_subset")


def loaded_from(model: Any) -> list[Read]:
    """The local folders a model object was loaded from, read whole (its checkpoint): the `name_or_path` that
    transformers records on a model's config and on a tokenizer, on the object and on its submodules (a
    sentence-transformers model holds its transformer as one); a hub name that is no folder here is none."""
    parts = [model, *(model.modules() if callable(getattr(model, "modules", None)) else ())]
    found = [source for part in parts for source in (getattr(getattr(part, "config", None), "_name_or_path", None),
                                                      getattr(getattr(part, "tokenizer", None), "name_or_path", None))]
    folders = dict.fromkeys(Path(source).resolve() for source in found if isinstance(source, str) and source
                            and Path(source).is_dir())
    return [Read(folder, "evaluate_model as the folder its model was loaded from")
            for folder in folders]


def speaks_mteb_protocol(encode: Callable[..., Any]) -> bool:
    """True when `encode` has MTEB 2.x's EncoderProtocol signature (keyword parameters task_metadata, hf_split,
    hf_subset): it is given a DataLoader of batches, not a list of texts."""
    try:
        parameters = inspect.signature(encode).parameters
    except (TypeError, ValueError):
        return False
    return all(name in parameters and parameters[name].kind in (inspect.Parameter.KEYWORD_ONLY,
                                                               inspect.Parameter.POSITIONAL_OR_KEYWORD)
               for name in MTEB_ENCODE_PARAMETERS)


@dataclass(frozen=True)
class EncodeConfig:
    """How `evaluate_model` calls a model object (see `EncoderAdapter`).

    Args:
        batch_size: texts per call of the model.
        inputs: "text" (title [SEP] abstract strings) or "papers" ({"paper_id", "title", "abstract"} records);
            default: the model's `scidocs_inputs`, else "text".
        separator: what joins title and abstract (default: the model's tokenizer's sep token, else " ").
        encode_kwargs: extra keyword arguments of each `encode` call.
        format_prompts: a prompt per input format (`FORMAT_PROMPTS`), for a model that embeds papers by format.
        fingerprint: what identifies the model's vectors in the embedding cache when its weights cannot be hashed
            (change it whenever the model changes).
    """

    batch_size: int = 32
    inputs: str | None = None
    separator: str | None = None
    encode_kwargs: Mapping[str, Any] | None = None
    format_prompts: Mapping[str, str] | None = None
    fingerprint: str | None = None


ENCODE_KEYWORDS = tuple(item.name for item in fields(EncodeConfig))


def evaluate_model(
    model: Any,
    config: RunConfig | None = None,
    *,
    encode: EncodeConfig | None = None,
    name: str | None = None,
    save_embeddings: str | os.PathLike[str] | None = None,
    **keywords: Any,
) -> RunResult:
    """Embed every text the tasks need with `model` (each distinct text once per role) and score the vectors in
    memory, as `evaluate` scores a file.

    The keyword form of earlier versions (`evaluate_model(model, "demo", tasks=[...], batch_size=8)`: the suite
    second, `RunConfig`'s and `EncodeConfig`'s fields as keywords) still works for a release, with a
    DeprecationWarning.

    Args:
        model: an object with ``encode(texts, batch_size=..., **kwargs) -> (n, d)`` or a callable
            ``texts -> (n, d)`` (numpy arrays, torch tensors or nested lists); see `EncoderAdapter`.
        config: what is scored and how (`RunConfig`; default: `RunConfig()`); only the papers of its tasks are
            embedded. `config.cache`: read and add to the embedding cache across runs
            (`scidocs_eval.formats.vector_cache`): a model whose torch weights can be hashed (a
            sentence-transformers model) is found by that hash and how it is called; any other (a plain function)
            only when `encode.fingerprint` names it.
        encode: how the model is called (`EncodeConfig`: batch size, inputs, separator, encode kwargs, format
            prompts, fingerprint; default: `EncodeConfig()`).
        name: the model's name in results.
        save_embeddings: also write the embeddings here (official JSON lines; Parquet, .npz or Arrow when the
            name ends in .parquet, .npz, .arrow); the file must not exist yet. Texts embedded apart (a retrieval
            task's, a search's queries) go beside it, one file a group: `{stem}-{group}{suffix}`.

    Returns:
        the RunResult; ``model_info.call`` records how the model was called.
    """
    calling = {key: keywords.pop(key) for key in ENCODE_KEYWORDS if key in keywords}
    config = config_from_keywords("evaluate_model", config, keywords,
                                  dict.fromkeys(calling, f"encode=EncodeConfig({'=..., '.join(calling)}=...)"))
    if calling:
        encode = replace(encode or EncodeConfig(), **{k: v for k, v in calling.items() if v is not None})
    encode = encode or EncodeConfig()
    adapter = EncoderAdapter(model, **{item.name: getattr(encode, item.name) for item in fields(EncodeConfig)})
    adapter.name = name or getattr(model, "__name__", None) or type(model).__name__
    if save_embeddings is not None and adapter.by_format:
        raise ScidocsEvalError("save_embeddings keeps one vector a paper, but with format_prompts a paper has one "
                               "per input format; leave save_embeddings out, or embed with `scidocs-eval baseline "
                               "transformer --format-prompt ...`, which writes a file per format")
    if config.cache and adapter.cache_fingerprint() is None:
        log.info("%s: not cached (its weights cannot be hashed); pass fingerprint=... to cache it", adapter.name)
    outputs = {"output": config.output, "save_embeddings": save_embeddings}
    if any(outputs.values()):  # no output where the tasks read, before anything is read or written
        claim_task_inputs(resolve_suite(config.data), config.built_tasks().values(), config.split, outputs,
                          given_as("data", [config.data] if isinstance(config.data, (str, os.PathLike)) else [],
                                   "evaluate_model"), loaded_from(model))
    if config.output is not None:
        claim_output(config.output, "output")
    save = claim_output(save_embeddings, "save_embeddings") if save_embeddings is not None else None

    def embeddings_path(key: str | None) -> Path:
        assert save is not None
        return save if key is None else save.with_name(f"{save.stem}-{key}{save.suffix}")

    result = embed_and_score(adapter, config, embeddings_path if save is not None else None, name=adapter.name,
                             call=adapter.describe(), option="save_embeddings")
    assert result is not None  # a model object is embedded on one process
    return result
