"""Citeomatic (SPEC §8): a 75-d L2-normalised weighted sum of learnt title and abstract word embeddings.

Trained on CPU on citation triplets with SPECTER's sampler (`scidocs_eval.training.triplets`) and loss (triplet margin,
L2, margin 1). Each word has a vector and a learnt scalar weight per field (title, abstract); the document
vector is the L2-normalised sum of the two fields' weighted sums. This is the Citeomatic document encoder
without its later re-ranking stage, which Table 1 does not use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.extras import require
from scidocs_eval.formats.suite import Paper
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.models.adapter import Adapter, register_adapter
from scidocs_eval.params import AT_LEAST_ONE, POSITIVE, SEED, InputPath

np = lazy_module("numpy", __name__)

NEEDED_BY = "the citeomatic adapter"


@register_adapter
class CiteomaticAdapter(Adapter):
    """Args:
        training_data: folder of SPECTER training files (data.json, metadata.json, train.txt, val.txt).
        dim: vector size (75 as in the paper).
        epochs: passes over the training triplets.
        learning_rate: Adam's step size.
        batch_size: triplets per step.
        min_df: words in fewer training papers are ignored.
        seed: fixes the triplets, the initialisation and the order.
    """

    name = "citeomatic"
    paper_row = "Citeomatic"
    requires_fit = True
    parameter_constraints = {"training_data": [InputPath(folder=True), None], "dim": [AT_LEAST_ONE],
                             "epochs": [AT_LEAST_ONE], "learning_rate": [POSITIVE], "batch_size": [AT_LEAST_ONE],
                             "min_df": [AT_LEAST_ONE], "seed": [SEED]}

    def __init__(self, training_data: str | None = None, dim: int = 75, epochs: int = 10,
                 learning_rate: float = 1e-2, batch_size: int = 64, min_df: int = 2, seed: int = 0):
        self.training_data = training_data
        self.dim = dim
        self.epochs = epochs
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.min_df = min_df
        self.seed = seed
        self.loss_history_: list[float] = []
        self._analyzer: Any = None
        self._vocabulary: dict[str, int] = {}
        self._network: Any = None

    def check_params(self) -> None:
        if not self.training_data:
            raise ScidocsEvalError("citeomatic is trained on citation triplets: give the SPECTER training "
                                   "files with -p training_data=DIR (data.json, metadata.json, train.txt)")

    def learn(self, papers: Sequence[Paper]) -> None:
        torch = require("torch", NEEDED_BY)
        from sklearn.feature_extraction.text import CountVectorizer

        from scidocs_eval.training.triplets import TrainingData, TripletSampler

        data = TrainingData.read(self.training_data)
        sampler = TripletSampler(data, "train", seed=self.seed)
        vectorizer = CountVectorizer(min_df=self.min_df, strip_accents="unicode")
        vectorizer.fit(f"{p.title} {p.abstract}" for p in data.papers.values())
        self._analyzer = vectorizer.build_analyzer()
        self._vocabulary = {word: index for index, word in enumerate(vectorizer.get_feature_names_out())}
        torch.manual_seed(self.seed)
        self._network = _CiteomaticNetwork(len(self._vocabulary), self.dim)
        optimizer = torch.optim.Adam(self._network.parameters(), lr=self.learning_rate)
        self.loss_history_ = []
        for _ in range(self.epochs):
            losses = []
            epoch = sampler.epoch
            while sampler.epoch == epoch:
                batch = sampler.next_batch(self.batch_size)
                roles = [[data.papers[getattr(t, role)] for t in batch] for role in ("query", "positive", "negative")]
                query, positive, negative = (self._embed(group) for group in roles)
                loss = torch.nn.functional.triplet_margin_loss(query, positive, negative, margin=1.0, p=2)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
            self.loss_history_.append(float(np.mean(losses)))

    def _word_ids(self, text: str) -> list[int]:
        return [self._vocabulary[w] for w in self._analyzer(text) if w in self._vocabulary]

    def _embed(self, papers: Sequence[Paper]) -> Any:
        """(len(papers), dim) L2-normalised document vectors (a torch tensor)."""
        return self._network([self._word_ids(p.title) for p in papers], [self._word_ids(p.abstract) for p in papers])

    def transform(self, papers: Sequence[Paper]) -> np.ndarray:
        torch = require("torch", NEEDED_BY)

        with torch.inference_mode():
            return np.concatenate([self._embed(papers[i:i + 1024]).numpy() for i in range(0, len(papers), 1024)])


def _CiteomaticNetwork(vocabulary_size: int, dim: int) -> Any:  # noqa: N802 - builds a torch module class lazily
    """The Citeomatic encoder as a torch module (torch is imported here, not at module import)."""
    torch = require("torch", NEEDED_BY)

    class CiteomaticNetwork(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.vectors = torch.nn.ModuleDict({field: torch.nn.EmbeddingBag(vocabulary_size, dim, mode="sum")
                                                for field in ("title", "abstract")})
            self.weights = torch.nn.ParameterDict({field: torch.nn.Parameter(torch.ones(vocabulary_size))
                                                   for field in ("title", "abstract")})

        def field_sum(self, field: str, word_ids: list[list[int]]) -> torch.Tensor:
            flat = torch.tensor([i for ids in word_ids for i in ids], dtype=torch.long)
            offsets = torch.tensor(np.cumsum([0] + [len(ids) for ids in word_ids[:-1]]), dtype=torch.long)
            return self.vectors[field](flat, offsets, per_sample_weights=self.weights[field][flat])

        def forward(self, titles: list[list[int]], abstracts: list[list[int]]) -> torch.Tensor:
            summed = self.field_sum("title", titles) + self.field_sum("abstract", abstracts)
            return torch.nn.functional.normalize(summed, dim=1)

    return CiteomaticNetwork()
