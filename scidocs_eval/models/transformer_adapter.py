"""The base of the adapters that embed with a transformers checkpoint: title [SEP] abstract, a pooled layer."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.formats.suite import Paper
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.models.adapter import Adapter
from scidocs_eval.models.encoder import POOLINGS, PRECISIONS, TransformerEncoder, model_source
from scidocs_eval.models.format_prompts import FORMAT_PROMPTS, FormatPrompts
from scidocs_eval.models.weights import checkpoint_identity
from scidocs_eval.params import AT_LEAST_ONE, MODEL_PATH, Options

if TYPE_CHECKING:
    from scidocs_eval.evaluation.papers import EmbeddingRole

np = lazy_module("numpy", __name__)


class TransformerAdapter(FormatPrompts, Adapter):
    """A transformers checkpoint on title [SEP] abstract.

    Args:
        model: checkpoint folder or hub id (required for "transformer"; the named adapters have a default).
        pooling: "cls", "mean" or "last" (last non-padding token, for decoder embedders) over the last layer.
        max_length: tokens per paper (512 as the reference embedder).
        batch_size: papers per forward pass.
        device: "cpu", "cuda", ...; None picks a GPU when there is one.
        precision: "auto" (bf16 autocast on CUDA, float32 elsewhere), "fp32", or "bf16" (also on CPU: much
            faster on CPUs with AMX or AVX512-BF16, embeddings within about 1e-2 relative of float32).
        prompt: text put before every paper (an instruction prefix such as "Represent this paper: ").
        format_prompts: {input format: prompt} used instead of `prompt` for the papers embedded for that format
            (`scidocs_eval.models.format_prompts`); None: `prompt` for every paper.
    """

    name = "transformer"
    parameter_constraints = {"model": [MODEL_PATH, None], "pooling": [Options(POOLINGS)], "max_length": [AT_LEAST_ONE],
                             "batch_size": [AT_LEAST_ONE], "device": [str, None],
                             "precision": [Options(PRECISIONS)], "prompt": [str],
                             "format_prompts": [FORMAT_PROMPTS, None]}
    reads_ids = False
    weights_outside_params = True
    default_model: ClassVar[str | None] = None
    """The checkpoint used when `model` is None (None: `model` is required)."""

    def __init__(self, model: str | None = None, pooling: str = "cls", max_length: int = 512, batch_size: int = 32,
                 device: str | None = None, precision: str = "auto", prompt: str = "",
                 format_prompts: dict[str, str] | None = None):
        self.model = model
        self.pooling = pooling
        self.max_length = max_length
        self.batch_size = batch_size
        self.device = device
        self.precision = precision
        self.prompt = prompt
        self.format_prompts = format_prompts
        self._encoder: TransformerEncoder | None = None

    def check_params(self) -> None:
        if self.checkpoint is None:
            raise ScidocsEvalError(f"baseline {self.name!r} needs --model (a checkpoint folder or hub id)")
        model_source(self.checkpoint)  # a hub id out of reach fails here, before any output is written

    @property
    def checkpoint(self) -> str | None:
        """The checkpoint embedded with: `model`, else the adapter's `default_model`."""
        return self.model or self.default_model

    def weights_identity(self) -> dict[str, str] | None:
        return checkpoint_identity(self.checkpoint)

    @property
    def encoder(self) -> TransformerEncoder:
        if self._encoder is None:
            self._encoder = TransformerEncoder(self.checkpoint, **self.encoder_options())
        return self._encoder

    def encoder_options(self) -> dict[str, Any]:
        """The `TransformerEncoder` parameters this adapter sets."""
        return {"pooling": self.pooling, "max_length": self.max_length, "batch_size": self.batch_size,
                "device": self.device, "precision": self.precision, "prompt": self.prompt}

    @contextmanager
    def embedding_role(self, role: EmbeddingRole) -> Iterator[None]:
        """Papers embedded for `role` get its format's prompt (`format_prompts`)."""
        encoder = self.encoder
        encoder.prompt = self.role_prompt(role) or ""
        try:
            yield
        finally:
            encoder.prompt = self.prompt

    def transform_batches(self, papers: Sequence[Paper]) -> Iterator[tuple[Sequence[Paper], np.ndarray]]:
        yield from self.encoder.encode_papers(papers)

    def transform(self, papers: Sequence[Paper]) -> np.ndarray:
        return self.encoder.encode(self.encoder.paper_texts(papers))
