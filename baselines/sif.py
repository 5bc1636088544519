"""SIF (SPEC §8; Arora et al. 2017): smooth-inverse-frequency weighted average of word vectors, minus the
projection on the first principal component of the corpus matrix (`scidocs_eval.models.sif_weighting`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scidocs_eval.formats.suite import Paper
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.models.adapter import register_adapter
from scidocs_eval.models.sif_weighting import A_GRID, SifWeightedAdapter
from scidocs_eval.models.tuning import parameter_grid
from scidocs_eval.models.word_vectors import WordVectors

np = lazy_module("numpy", __name__)


@register_adapter
class SifAdapter(SifWeightedAdapter):
    """SIF embeddings, (n, dim) float32; `--tune` picks `a` on val (`A_GRID`, see `SifWeightedAdapter`)."""

    name = "sif"
    paper_row = "SIF"

    def fit_vectors(self, papers: Sequence[Paper], word_vectors: WordVectors) -> None:
        self.fit_sif(papers, word_vectors)

    def own_grid(self) -> list[dict[str, Any]]:
        return parameter_grid(a=A_GRID)

    def transform(self, papers: Sequence[Paper]) -> np.ndarray:
        return self.sif_vectors(papers).astype(np.float32)
