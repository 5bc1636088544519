"""Loading sentence-transformers models (the `sentence-transformer` and `sent-bert` adapters)."""

from __future__ import annotations

from typing import Any

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.extras import require
from scidocs_eval.models.encoder import choose_device, model_source

WHAT = "sentence-transformers model"


def load_sentence_transformer(model: str, device: str | None = None, max_length: int | None = None) -> Any:
    """A `SentenceTransformer` from a folder or hub id (all-MiniLM-L6-v2 offline, see `resolve_model`)."""
    SentenceTransformer = require("sentence_transformers", "the sentence-transformer adapter").SentenceTransformer

    try:
        loaded = SentenceTransformer(model_source(model, WHAT), device=choose_device(device))
    except (OSError, ValueError) as error:
        raise ScidocsEvalError(f"cannot load {WHAT} {model!r}: {' '.join(str(error).split())}") from None
    if max_length:
        loaded.max_seq_length = max_length
    return loaded
