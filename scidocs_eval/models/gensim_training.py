"""Train a gensim model (Doc2Vec, FastText): the epoch schedule, the token budget, a progress bar, and a check
that trained vectors have not collapsed."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from scidocs_eval.extras import require
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.progress import progress_bar

np = lazy_module("numpy", __name__)

NEEDED_BY = "training word vectors (fastText, Doc2Vec)"

log = logging.getLogger("scidocs_eval")


@dataclass(frozen=True)
class EpochSchedule:
    """Default epochs from the corpus size: `target_passes` / corpus tokens, rounded, clamped to
    [`min_epochs`, `max_epochs`], so that a small corpus gets enough SGD steps and a large one its minimum
    (which `epochs_within_budget` may lower further)."""

    target_passes: int
    min_epochs: int
    max_epochs: int

    def epochs(self, corpus_tokens: int) -> int:
        """The epochs for a corpus of `corpus_tokens` tokens."""
        wanted = round(self.target_passes / max(corpus_tokens, 1))
        return int(min(self.max_epochs, max(self.min_epochs, wanted)))


def scheduled_epochs(epochs: int | None, schedule: EpochSchedule, corpus_tokens: int,
                     max_trained_tokens: int | None, what: str) -> int:
    """The epochs to train: `epochs` if given, else the schedule's for `corpus_tokens`; then within the budget.

    The choice is logged (info) naming `what` is trained, so the epochs of every run are on record."""
    chosen = schedule.epochs(corpus_tokens) if epochs is None else epochs
    trained = epochs_within_budget(chosen, corpus_tokens, max_trained_tokens, what)
    log.info("%s: %d corpus tokens, %d epochs (%s)", what, corpus_tokens, trained,
             f"schedule: {schedule.target_passes:,} token passes, clamped to {schedule.min_epochs}-"
             f"{schedule.max_epochs} epochs" if epochs is None else "epochs given")
    return trained


def epochs_within_budget(epochs: int, corpus_tokens: int, max_trained_tokens: int | None, what: str) -> int:
    """`epochs`, lowered (never below 1) so that `corpus_tokens` × epochs stays within `max_trained_tokens`.

    `max_trained_tokens` None or 0 means no cap. Lowering is logged as a warning naming `what` is trained,
    so a user who wants the full schedule knows which parameter to set.
    """
    if not max_trained_tokens or corpus_tokens * epochs <= max_trained_tokens:
        return epochs
    capped = max(1, min(epochs, max_trained_tokens // max(corpus_tokens, 1)))
    log.warning("%s: %d corpus tokens x %d epochs exceeds max_trained_tokens=%d; training %d epoch%s "
                "(max_trained_tokens=0 trains all %d)", what, corpus_tokens, epochs, max_trained_tokens, capped,
                "" if capped == 1 else "s", epochs)
    return capped


def train_with_progress(model: Any, desc: str, progress: bool = True, **corpus: Any) -> Any:
    """Build `model`'s vocabulary from `corpus` and train it for `model.epochs` epochs; return the model.

    `corpus` is gensim's corpus argument: `corpus_iterable=` (documents) or `corpus_file=` (one document per
    line, tokens separated by spaces). The bar advances once per epoch (stderr; off with `progress=False`).
    """
    CallbackAny2Vec = require("gensim.models.callbacks", NEEDED_BY).CallbackAny2Vec

    class EpochProgress(CallbackAny2Vec):
        def __init__(self, bar: Any):
            self.bar = bar

        def on_epoch_end(self, model: Any) -> None:
            self.bar.update()

    model.build_vocab(**corpus)
    with progress_bar(enabled=progress, total=model.epochs, unit="epoch", desc=desc) as bar:
        model.train(**corpus, total_examples=model.corpus_count, total_words=model.corpus_total_words,
                    epochs=model.epochs, callbacks=[EpochProgress(bar)])
    model.callbacks = ()
    return model


COLLAPSE_PAIRS = 20_000
"""Random word pairs sampled by `mean_pair_cosine`."""


def mean_pair_cosine(matrix: np.ndarray, pairs: int = COLLAPSE_PAIRS, seed: int = 0) -> float:
    """Mean cosine similarity of `pairs` random pairs of distinct rows of `matrix` (n, dim); nan if n < 2.

    Well-trained word vectors spread out (near 0 to 0.3); vectors trained too little all point one way."""
    n = len(matrix)
    if n < 2:
        return float("nan")
    rng = np.random.default_rng(seed)
    first = rng.integers(0, n, pairs)
    second = (first + rng.integers(1, n, pairs)) % n
    norms = np.maximum(np.linalg.norm(matrix, axis=1), 1e-12)
    cosines = np.einsum("ij,ij->i", matrix[first], matrix[second]) / (norms[first] * norms[second])
    return float(cosines.mean())


def warn_if_collapsed(matrix: np.ndarray, threshold: float, what: str, raise_hint: str) -> float:
    """Warn (log) that vectors `matrix` look under-trained when their mean random-pair cosine exceeds
    `threshold`, naming the parameter to raise (`raise_hint`); return that mean cosine."""
    cosine = mean_pair_cosine(matrix)
    if cosine > threshold:
        log.warning("%s vectors look under-trained: two random words have a mean cosine of %.2f (over %.2f); "
                    "train longer (%s)", what, cosine, threshold, raise_hint)
    return cosine


def word_rows(words: Sequence[str], counts: dict[str, int], min_count: int) -> np.ndarray:
    """Indices of the `words` seen at least `min_count` times (the words the model learnt whole)."""
    return np.array([row for row, word in enumerate(words) if counts.get(word, 0) >= min_count], dtype=np.int64)
