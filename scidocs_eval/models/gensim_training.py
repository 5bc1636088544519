"""Train a gensim model (Doc2Vec, FastText) with a progress bar over its epochs, within a token budget."""

from __future__ import annotations

import logging
from typing import Any

from scidocs_eval.progress import progress_bar

log = logging.getLogger("scidocs_eval")


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
    from gensim.models.callbacks import CallbackAny2Vec

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
