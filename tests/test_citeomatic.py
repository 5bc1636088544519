"""Citeomatic: trained on the real SPECTER sample's triplets, 75-d unit vectors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.formats.corpus import read_papers
from scidocs_eval.models.adapter import get_adapter

pytest.importorskip("torch")


def test_training_lowers_the_loss_and_gives_unit_vectors(shared_data: Path) -> None:
    sample = shared_data / "specter-sample"
    adapter = get_adapter("citeomatic", training_data=str(sample), epochs=4)
    adapter.fit([])
    assert len(adapter.loss_history_) == 4
    assert adapter.loss_history_[-1] < adapter.loss_history_[0] - 0.1
    papers = read_papers(sample / "sample-metadata.json")
    vectors = adapter.transform(papers)
    assert vectors.shape == (55, 75) and vectors.dtype == np.float32
    known = np.linalg.norm(vectors, axis=1) > 0
    assert known.sum() >= 50
    np.testing.assert_allclose(np.linalg.norm(vectors[known], axis=1), 1.0, rtol=1e-5)


def test_citeomatic_needs_training_triplets() -> None:
    with pytest.raises(ScidocsEvalError, match="-p training_data=DIR"):
        get_adapter("citeomatic").fit([])
    with pytest.raises(ScidocsEvalError, match="adapter 'citeomatic' is not fitted"):
        get_adapter("citeomatic").transform([])
