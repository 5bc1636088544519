"""SIF (SPEC §8; Arora et al. 2017): smooth-inverse-frequency weighted average of word vectors, minus the
projection on the first principal component of the corpus matrix (`scidocs_eval.models.sif_weighting`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from scidocs_eval.formats.suite import Paper, Suite
from scidocs_eval.models.adapter import register_adapter
from scidocs_eval.models.sif_weighting import SifWeightedAdapter
from scidocs_eval.models.word_vectors import WordVectors


@register_adapter
class SifAdapter(SifWeightedAdapter):
    """SIF embeddings, (n, dim) float32; with `tune`, `a` is picked on val (see `SifWeightedAdapter`)."""

    name = "sif"
    paper_row = "SIF"

    def fit_vectors(self, papers: Sequence[Paper], suite: Suite | None, word_vectors: WordVectors) -> float | None:
        return self.fit_sif(papers, suite, word_vectors, tune_a=self.tune)

    def transform(self, papers: Sequence[Paper]) -> np.ndarray:
        return self.sif_vectors(papers).astype(np.float32)
