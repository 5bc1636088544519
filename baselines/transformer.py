""""transformer": any transformers checkpoint on title [SEP] abstract (`--model`: a local folder, e.g. the
output of `scidocs-eval train specter`, or a hub id, downloaded by transformers, which needs internet)."""

from __future__ import annotations

from scidocs_eval.models.adapter import register_adapter
from scidocs_eval.models.transformer_adapter import TransformerAdapter


@register_adapter
class AnyCheckpointAdapter(TransformerAdapter):
    """The checkpoint given with `model` (required); see `TransformerAdapter`."""

    name = "transformer"
