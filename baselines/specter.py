"""SPECTER (SPEC §7): the [CLS] vector of allenai/specter, or of a checkpoint written by `train specter`."""

from __future__ import annotations

from scidocs_eval.models.adapter import register_adapter
from scidocs_eval.models.transformer_adapter import TransformerAdapter


@register_adapter
class SpecterAdapter(TransformerAdapter):
    """SPECTER: the [CLS] vector of allenai/specter (or of a checkpoint written by `train specter`)."""

    name = "specter"
    paper_row = "SPECTER"
    default_model = "allenai/specter"
