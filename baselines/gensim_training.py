"""Train a gensim model (Doc2Vec, FastText) with a progress bar over its epochs."""

from __future__ import annotations

from typing import Any

from scidocs_eval.progress import progress_bar


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
