"""Doc2Vec (SPEC §8): gensim PV-DBOW trained on the fit corpus with the paper's parameters.

300-d, min_count 3, alpha 0.025, min_alpha 1e-4, negative 5. Default: window 5, sample 0 (no down-sampling), 10
epochs, pure PV-DBOW (`dbow_words=False`), one worker, so the command finishes in minutes and the same seed gives
the same vectors; on corpora over 12M tokens the default epochs are lowered so that tokens × epochs stays within
`max_trained_tokens` (120M: SciDocs' 26.5M tokens get 4 epochs, about 7 minutes on one core). `--tune` trains the
paper's grid sample {0, 1e-6, 1e-5} × epochs {50, 100, 200}, and window {5, 10, 15} too when `dbow_words=True`
(pure PV-DBOW never reads the window, so searching it would train identical models), keeping the setting with the
best mean val MAP. A paper of the fit corpus gets its trained vector; any other paper gets `infer_vector` (with the
training epochs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from scidocs_eval.extras import require
from scidocs_eval.formats.corpus import paper_text
from scidocs_eval.formats.suite import Paper
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.models.adapter import Adapter, register_adapter
from scidocs_eval.models.gensim_training import EpochSchedule, scheduled_epochs, train_with_progress
from scidocs_eval.models.model_cache import cached_model, corpus_fingerprint
from scidocs_eval.models.text import analyzer, tokenize_papers
from scidocs_eval.models.tuning import parameter_grid
from scidocs_eval.params import AT_LEAST_ONE, FRACTION, SEED, Interval

np = lazy_module("numpy", __name__)

NEEDED_BY = "the doc2vec adapter"

PAPER_GRID: dict[str, tuple] = {"window": (5, 10, 15), "sample": (0, 1e-6, 1e-5), "epochs": (50, 100, 200)}
MAX_TRAINED_TOKENS = 120_000_000
"""Default cap on corpus tokens × epochs for the default setting (PV-DBOW reads ~0.26M tokens/s on one core)."""
SCHEDULE = EpochSchedule(target_passes=8_000_000, min_epochs=10, max_epochs=50)
"""Default epochs: 8M token passes, clamped to 10-50 (docs/baselines.md has the measurements behind it)."""
FIXED = {"min_count": 3, "alpha": 0.025, "min_alpha": 1e-4, "negative": 5, "dm": 0}


@register_adapter
class Doc2VecAdapter(Adapter):
    """PV-DBOW document vectors, (n, dim) float32.

    Args:
        seed: gensim's seed (with `workers=1` training is deterministic).
        dim, window, sample, epochs: the model (window only matters with `dbow_words`).
        dbow_words: also train skip-gram word vectors (much slower; what makes `window` matter).
        workers: gensim threads; more than 1 is faster but not reproducible.
        max_trained_tokens: cap on corpus tokens × epochs (None or 0: no cap); the `--tune` grid sets it to None,
            so each of its settings trains its own epochs.
    """

    name = "doc2vec"
    paper_row = "Doc2vec"
    requires_fit = True
    parameter_constraints = {"seed": [SEED], "dim": [AT_LEAST_ONE], "window": [AT_LEAST_ONE],
                             "sample": [FRACTION], "epochs": [AT_LEAST_ONE, None], "dbow_words": [bool],
                             "workers": [AT_LEAST_ONE], "max_trained_tokens": [Interval(int, 0, None), None]}

    def __init__(self, seed: int = 0, dim: int = 300, window: int = 5, sample: float = 0.0,
                 epochs: int | None = None, dbow_words: bool = False, workers: int = 1,
                 max_trained_tokens: int | None = MAX_TRAINED_TOKENS):
        self.seed, self.dim = seed, dim
        self.window, self.sample, self.epochs = window, sample, epochs
        self.dbow_words, self.workers, self.max_trained_tokens = dbow_words, workers, max_trained_tokens

    def _train(self, papers: Sequence[Paper], setting: dict[str, Any], max_trained_tokens: int | None = None) -> Any:
        """A gensim Doc2Vec for `setting` (window, sample, epochs), from the cache or trained now.

        Epochs None: `SCHEDULE` picks them from the corpus size. They are lowered where corpus tokens × epochs
        exceeds `max_trained_tokens` (`model.epochs` says how many were trained)."""
        params = {**FIXED, **setting, "vector_size": self.dim, "dbow_words": int(self.dbow_words),
                  "seed": self.seed, "workers": self.workers}

        def train() -> Any:
            doc2vec = require("gensim.models.doc2vec", NEEDED_BY)
            Doc2Vec, TaggedDocument = doc2vec.Doc2Vec, doc2vec.TaggedDocument

            tokens = tokenize_papers(papers)
            epochs = scheduled_epochs(params["epochs"], SCHEDULE, sum(map(len, tokens)), max_trained_tokens,
                                      "doc2vec")
            documents = [TaggedDocument(doc, [row]) for row, doc in enumerate(tokens)]
            return train_with_progress(Doc2Vec(**{**params, "epochs": epochs}), f"training doc2vec {setting}",
                                       corpus_iterable=documents)

        key = {**params, "max_trained_tokens": max_trained_tokens} if max_trained_tokens else params
        if params["epochs"] is None:
            key["schedule"] = asdict(SCHEDULE)
        return cached_model("doc2vec", self.fingerprint_, key, train)

    def learn(self, papers: Sequence[Paper]) -> None:
        self.fingerprint_ = corpus_fingerprint(papers)
        self.rows_ = {p.paper_id: row for row, p in enumerate(papers)}
        self.texts_ = [paper_text(p) for p in papers]
        setting = {"window": self.window, "sample": self.sample, "epochs": self.epochs}
        self.model_ = self._train(papers, setting, self.max_trained_tokens)

    def tuning_grid(self, papers: Sequence[Paper]) -> list[dict[str, Any]]:
        """The paper's grid (`PAPER_GRID`; window only with `dbow_words`), each setting trained for its own
        epochs (`max_trained_tokens` None)."""
        axes = dict(PAPER_GRID) if self.dbow_words else {k: v for k, v in PAPER_GRID.items() if k != "window"}
        return [{**setting, "max_trained_tokens": None} for setting in parameter_grid(**axes)]

    def _embed(self, model: Any, papers: Sequence[Paper]) -> np.ndarray:
        """Trained vectors for fit-corpus papers (same id and text), inferred ones for the rest."""
        analyze = analyzer()
        out = np.empty((len(papers), model.vector_size), dtype=np.float32)
        for i, paper in enumerate(papers):
            row = self.rows_.get(paper.paper_id)
            if row is not None and self.texts_[row] == paper_text(paper):
                out[i] = model.dv[row]
            else:
                out[i] = model.infer_vector(analyze(paper_text(paper)), epochs=model.epochs)
        return out

    def transform(self, papers: Sequence[Paper]) -> np.ndarray:
        return self._embed(self.model_, papers)
