"""Trained models cached by corpus fingerprint + parameters, so a rerun skips training.

Entries live under `scidocs_eval.paths.cache_dir("models")` as `{kind}-{key}.joblib`, where `key` hashes the
corpus fingerprint and the parameters that change the model; a JSON sidecar records both for humans.
Writes are atomic (temporary file, then rename), so an interrupted run never leaves a torn entry.

Within one `--tune` grid (`shared_fits`), what a fit computes from the corpus alone (its word counts) is also
kept in memory by the same key (`shared_in_fits`): every setting fits the same corpus.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar

import orjson

from scidocs_eval.formats.suite import Paper
from scidocs_eval.paths import cache_dir

log = logging.getLogger("scidocs_eval")
Model = TypeVar("Model")


def corpus_fingerprint(papers: Sequence[Paper]) -> str:
    """sha256 over every paper's id, title and abstract, in order (hex)."""
    digest = hashlib.sha256()
    for paper in papers:
        extra = "".join(f"\0{field}" for field in paper.extra)  # none: the digest of papers before `extra`
        digest.update(f"{paper.paper_id}\0{paper.title}\0{paper.abstract}{extra}\1".encode())
    return digest.hexdigest()


def _key(fingerprint: str, params: Mapping[str, Any]) -> bytes:
    return orjson.dumps({"corpus": fingerprint, "params": dict(params)}, option=orjson.OPT_SORT_KEYS)


_SHARED: ContextVar[dict[tuple[str, bytes], Any] | None] = ContextVar("shared_fits", default=None)


@contextmanager
def shared_fits() -> Iterator[None]:
    """Within the block, `shared_in_fits` computes each (kind, corpus, parameters) once; what it kept is let go at
    the block's end. `TunedAdapter.fit` runs its grid in one (a nested block shares the outer one's)."""
    token = _SHARED.set(_SHARED.get() if _SHARED.get() is not None else {})
    try:
        yield
    finally:
        _SHARED.reset(token)


def shared_in_fits(kind: str, papers: Sequence[Paper], params: Mapping[str, Any], compute: Callable[[], Model]
                   ) -> Model:
    """`compute()`, once per (`kind`, the papers' `corpus_fingerprint`, `params`) within `shared_fits`; outside it,
    at every call, and nothing is hashed.

    `params` must be JSON-serialisable and hold everything, besides the papers, that changes the result."""
    shared = _SHARED.get()
    if shared is None:
        return compute()
    key = kind, _key(corpus_fingerprint(papers), params)
    if key not in shared:
        shared[key] = compute()
    return shared[key]


def cache_path(kind: str, fingerprint: str, params: Mapping[str, Any]) -> Path:
    """Where the model `kind` trained on the corpus `fingerprint` with `params` is (or would be) cached."""
    return cache_dir("models") / f"{kind}-{hashlib.sha256(_key(fingerprint, params)).hexdigest()[:20]}.joblib"


def cached_model(kind: str, fingerprint: str, params: Mapping[str, Any], train: Callable[[], Model]) -> Model:
    """The cached model for (`kind`, corpus, `params`), or `train()`'s result, cached for next time.

    `params` must be JSON-serialisable and hold everything that changes the model.
    """
    import joblib

    path = cache_path(kind, fingerprint, params)
    if path.is_file():
        log.info("loading cached %s model from %s", kind, path)
        return joblib.load(path)
    model = train()
    temporary = path.with_name(f"{path.name}.tmp{os.getpid()}")
    joblib.dump(model, temporary)
    os.replace(temporary, path)
    path.with_suffix(".json").write_bytes(orjson.dumps({"kind": kind, "corpus": fingerprint, "params": dict(params)},
                                                       option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
    log.info("cached %s model at %s", kind, path)
    return model
