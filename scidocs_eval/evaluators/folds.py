"""scikit-learn's cross-validation folds without shuffling (KFold, StratifiedKFold), in their own steps.

Importing scikit-learn costs a run about two seconds (its validation module imports `scipy.stats`), and asking
it for each split of a few-shot task costs 2 ms of input checks; the cases these steps do not cover (a class below
the folds, labels of other kinds, fewer rows than folds) are left to scikit-learn itself, with its warnings and
errors. tests/test_scirepeval_direct.py and tests/test_scirepeval_exact.py check the folds against scikit-learn's.
"""

from __future__ import annotations

import itertools

from scidocs_eval.lazy_modules import lazy_module

np = lazy_module("numpy", __name__)

Splits = list[tuple["np.ndarray", "np.ndarray"]]
"""(train, test) row indices of each fold, in order."""


def kfold_splits(n: int, folds: int) -> Splits:
    """KFold(n_splits=folds) without shuffling: contiguous test folds in order, the first n % folds of them one row
    longer (scikit-learn itself where it raises: fewer rows than folds)."""
    if not 2 <= folds <= n:
        from sklearn.model_selection import KFold

        return list(KFold(n_splits=folds).split(np.zeros((n, 1))))
    sizes = np.full(folds, n // folds, dtype=int)
    sizes[: n % folds] += 1
    indices = np.arange(n)
    stops = np.cumsum(sizes)
    return [(np.concatenate([indices[:stop - size], indices[stop:]]), indices[stop - size:stop])
            for size, stop in zip(sizes, stops)]


def stratified_test_folds(labels: np.ndarray, folds: int) -> np.ndarray | None:
    """The test fold of each row as StratifiedKFold (no shuffle) assigns it, for integer, boolean or string class
    labels with at least `folds` rows of each class: the classes in order of first appearance, the rows sorted by
    class dealt to the folds in turn (that many of each class a fold), each class's rows then filling its folds in
    order. None where scikit-learn must decide (other labels; a class below `folds` rows: its warning or error)."""
    if labels.ndim != 1 or labels.dtype.kind not in "biuU" or not 2 <= folds <= len(labels):
        return None
    _, first_index, inverse = np.unique(labels, return_index=True, return_inverse=True)
    _, class_order = np.unique(first_index, return_inverse=True)
    encoded = class_order[inverse.reshape(-1)]
    counts = np.bincount(encoded)
    if counts.min() < folds:
        return None
    ordered = np.sort(encoded)
    allocation = np.asarray([np.bincount(ordered[fold::folds], minlength=len(counts)) for fold in range(folds)])
    test_folds = np.empty(len(labels), dtype=np.int64)
    for klass in range(len(counts)):
        test_folds[encoded == klass] = np.arange(folds).repeat(allocation[:, klass])
    return test_folds


def stratified_held_out(labels: np.ndarray, folds: int, count: int | None = None) -> list[np.ndarray]:
    """The test rows of the first `count` folds (all by default) of StratifiedKFold(n_splits=folds) without
    shuffling, by `labels` (n,)."""
    labels = np.asarray(labels)
    count = folds if count is None else min(count, folds)
    test_folds = stratified_test_folds(labels, folds)
    if test_folds is not None:
        return [np.flatnonzero(test_folds == fold) for fold in range(count)]
    from sklearn.model_selection import StratifiedKFold

    splits = StratifiedKFold(n_splits=folds).split(np.zeros((len(labels), 1)), labels)
    return [held_out for _, held_out in itertools.islice(splits, count)]


def stratified_splits(labels: np.ndarray, folds: int) -> Splits:
    """StratifiedKFold(n_splits=folds) without shuffling, by `labels` (n,): each fold's train rows are the others,
    in order, as scikit-learn gives them."""
    splits = []
    for held_out in stratified_held_out(labels, folds):
        train = np.ones(len(labels), dtype=bool)
        train[held_out] = False
        splits.append((np.flatnonzero(train), held_out))
    return splits
