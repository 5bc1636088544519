"""A sentence-transformers model on whole papers, with its own pooling and normalisation ("sentence-transformer").

Unlike `sent-bert` (each sentence embedded alone and the vectors summed, as the SPECTER paper ran its
Sent-BERT baseline), the model reads title + separator + abstract as one text, as its authors run it for
documents; `--prompt` / `--prompt-name` give instruction-tuned models their prefix, `--format-prompt` one per input
format.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.formats.suite import Paper
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.models.adapter import Adapter, register_adapter
from scidocs_eval.models.encoder import model_source
from scidocs_eval.models.format_prompts import FORMAT_PROMPTS, FormatPrompts
from scidocs_eval.models.sentence_models import WHAT, load_sentence_transformer
from scidocs_eval.models.weights import checkpoint_identity
from scidocs_eval.params import AT_LEAST_ONE, MODEL_PATH

if TYPE_CHECKING:
    from scidocs_eval.evaluation.papers import EmbeddingRole
    from scidocs_eval.run.model_object import EncoderAdapter

np = lazy_module("numpy", __name__)


@register_adapter
class SentenceTransformerAdapter(FormatPrompts, Adapter):
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
        format_prompts: {input format: prompt} used instead of `prompt` / `prompt_name` for the papers embedded for
            that format (`scidocs_eval.models.format_prompts`).
    """

    name = "sentence-transformer"
    reads_ids = False
    weights_outside_params = True
    parameter_constraints = {"model": [MODEL_PATH], "prompt": [str, None], "prompt_name": [str, None],
                             "format_prompts": [FORMAT_PROMPTS, None], "normalize": [bool],
                             "max_length": [AT_LEAST_ONE, None], "batch_size": [AT_LEAST_ONE],
                             "device": [str, None], "separator": [str, None]}

    def __init__(self, model: str = "all-MiniLM-L6-v2", prompt: str | None = None, prompt_name: str | None = None,
                 normalize: bool = False, max_length: int | None = None, batch_size: int = 32,
                 device: str | None = None, separator: str | None = None,
                 format_prompts: dict[str, str] | None = None):
        self.model = model
        self.prompt = prompt
        self.prompt_name = prompt_name
        self.format_prompts = format_prompts
        self.normalize = normalize
        self.max_length = max_length
        self.batch_size = batch_size
        self.device = device
        self.separator = separator
        self._encoder: EncoderAdapter | None = None

    def check_params(self) -> None:
        if self.prompt is not None and self.prompt_name is not None:
            raise ScidocsEvalError("give --prompt or --prompt-name, not both")
        model_source(self.model, WHAT)  # a hub id out of reach fails here, before any output is written

    def weights_identity(self) -> dict[str, str] | None:
        return checkpoint_identity(self.model)

    def row_detail(self) -> str:
        """The model's name: a generic adapter's row means nothing without it."""
        return Path(self.model).name

    @property
    def encoder(self) -> EncoderAdapter:
        """The loaded model, called through `EncoderAdapter` (checked batch by batch)."""
        if self._encoder is None:
            from scidocs_eval.run.model_object import EncoderAdapter

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

    @contextmanager
    def embedding_role(self, role: EmbeddingRole) -> Iterator[None]:
        """Papers embedded for a format `format_prompts` names get its prompt (instead of the others)."""
        options = self.encoder.encode_kwargs
        saved = dict(options)
        if self.format_prompts and role.input_format in self.format_prompts:
            options.pop("prompt_name", None)
            options["prompt"] = self.format_prompts[role.input_format]
        try:
            yield
        finally:
            options.clear()
            options.update(saved)

    def transform_batches(self, papers: Sequence[Paper]) -> Iterator[tuple[Sequence[Paper], np.ndarray]]:
        yield from self.encoder.transform_batches(papers)

    def transform(self, papers: Sequence[Paper]) -> np.ndarray:
        return self.encoder.transform(papers)
