"""Random: zero-mean Gaussian vectors (SPEC §8), the same vector for the same paper id and seed."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from scidocs_eval.formats.suite import Paper
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.models.adapter import Adapter, register_adapter
from scidocs_eval.params import AT_LEAST_ONE, SEED

np = lazy_module("numpy", __name__)


@register_adapter
class RandomAdapter(Adapter):
    """Args: dim: vector size (25 as in the paper); seed: changes every vector."""

    name = "random"
    paper_row = "Random"
    parameter_constraints = {"dim": [AT_LEAST_ONE], "seed": [SEED]}

    def __init__(self, dim: int = 25, seed: int = 0):
        self.dim = dim
        self.seed = seed

    def _vector(self, paper_id: str) -> np.ndarray:
        key = hashlib.blake2b(f"{self.seed}\0{paper_id}".encode(), digest_size=8).digest()
        return np.random.default_rng(int.from_bytes(key, "little")).standard_normal(self.dim)

    def transform(self, papers: Sequence[Paper]) -> np.ndarray:
        matrix = np.empty((len(papers), self.dim), dtype=np.float32)
        for row, paper in enumerate(papers):
            matrix[row] = self._vector(paper.paper_id)
        return matrix
