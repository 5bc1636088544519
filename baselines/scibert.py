"""SciBERT (SPEC §8): the [CLS] vector of SciBERT (scivocab, uncased), no fine-tuning."""

from __future__ import annotations

from scidocs_eval.models.adapter import register_adapter
from scidocs_eval.models.transformer_adapter import TransformerAdapter


@register_adapter
class SciBertAdapter(TransformerAdapter):
    """SciBERT: the [CLS] vector of SciBERT (scivocab, uncased), no fine-tuning."""

    name = "scibert"
    paper_row = "SciBERT"
    default_model = "allenai/scibert_scivocab_uncased"
