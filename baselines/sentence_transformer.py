"""A sentence-transformers model on whole papers, with its own pooling and normalisation ("sentence-transformer").

Unlike `sent-bert` (each sentence embedded alone and the vectors summed, as the SPECTER paper ran its
Sent-BERT baseline), the model reads title + separator + abstract as one text, as its authors run it for
documents; `--prompt` / `--prompt-name` give instruction-tuned models their prefix.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.extras import require
from scidocs_eval.formats.suite import Paper
from scidocs_eval.models.adapter import Adapter, register_adapter
from scidocs_eval.models.encoder import choose_device, resolve_model
from scidocs_eval.models.model_object import EncoderAdapter
from scidocs_eval.params import AT_LEAST_ONE

NEEDED_BY = "the sentence-transformer adapter"


def load_sentence_transformer(model: str, device: str | None = None, max_length: int | None = None) -> Any:
    """A `SentenceTransformer` from a folder or hub id (all-MiniLM-L6-v2 offline, see `resolve_model`)."""
    SentenceTransformer = require("sentence_transformers", NEEDED_BY).SentenceTransformer

    try:
        loaded = SentenceTransformer(resolve_model(model), device=choose_device(device))
    except (OSError, ValueError) as error:
        raise ScidocsEvalError(f"cannot load sentence-transformers model {model!r}: {error}") from None
    if max_length:
        loaded.max_seq_length = max_length
    return loaded


@register_adapter
class SentenceTransformerAdapter(Adapter):
    """Whole-paper embeddings with a sentence-transformers model.

    Args:
        model: a sentence-transformers folder or hub id.
        prompt: text put before every paper (an instruction prefix).
        prompt_name: one of the prompts the model's configuration defines (e.g. "document").
        normalize: L2-normalise the vectors (a no-op for models whose pipeline already normalises).
        max_length: tokens per paper (None: the model's own limit, 256 for MiniLM).
        batch_size: papers per forward pass.
        device: "cpu", "cuda", ...; None picks a GPU when there is one.
        separator: between title and abstract; None: the tokenizer's [SEP] token (as our other adapters).
    """

    name = "sentence-transformer"
    parameter_constraints = {"model": [str], "prompt": [str, None], "prompt_name": [str, None], "normalize": [bool],
                             "max_length": [AT_LEAST_ONE, None], "batch_size": [AT_LEAST_ONE],
                             "device": [str, None], "separator": [str, None]}

    def __init__(self, model: str = "all-MiniLM-L6-v2", prompt: str | None = None, prompt_name: str | None = None,
                 normalize: bool = False, max_length: int | None = None, batch_size: int = 32,
                 device: str | None = None, separator: str | None = None):
        if prompt is not None and prompt_name is not None:
            raise ScidocsEvalError("give --prompt or --prompt-name, not both")
        self.model = model
        self.prompt = prompt
        self.prompt_name = prompt_name
        self.normalize = normalize
        self.max_length = max_length
        self.batch_size = batch_size
        self.device = device
        self.separator = separator
        self._encoder: EncoderAdapter | None = None

    def row_detail(self) -> str:
        """The model's name: a generic adapter's row means nothing without it."""
        return Path(self.model).name

    @property
    def encoder(self) -> EncoderAdapter:
        """The loaded model, called through `EncoderAdapter` (checked batch by batch)."""
        if self._encoder is None:
            loaded = load_sentence_transformer(self.model, self.device, self.max_length)
            if self.prompt_name is not None and self.prompt_name not in loaded.prompts:
                raise ScidocsEvalError(f"model {self.model!r} has no prompt named {self.prompt_name!r}; its prompts: "
                                       f"{', '.join(loaded.prompts) or 'none'} (or give the text with --prompt)")
            options: dict[str, Any] = {"normalize_embeddings": self.normalize, "show_progress_bar": False}
            if self.prompt is not None:
                options["prompt"] = self.prompt
            if self.prompt_name is not None:
                options["prompt_name"] = self.prompt_name
            self._encoder = EncoderAdapter(loaded, batch_size=self.batch_size, separator=self.separator,
                                           encode_kwargs=options)
        return self._encoder

    def transform_batches(self, papers: Sequence[Paper]) -> Iterator[tuple[Sequence[Paper], np.ndarray]]:
        yield from self.encoder.transform_batches(papers)

    def transform(self, papers: Sequence[Paper]) -> np.ndarray:
        return self.encoder.transform(papers)
