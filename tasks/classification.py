"""MAG and MeSH: linear SVM on the raw embeddings, C picked by 3-fold CV on train, macro F1 (official semantics).

A paper with no embedding (absent or empty) becomes a zero vector; its row and label are kept. The model is
one-vs-rest squared-hinge L2 SVM with no intercept; C is chosen from 1e-4..1e2 by 3-fold stratified CV (no
shuffle) on the train split, scored by accuracy, ties to the smallest C; then refit on all of train.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scidocs_eval.data.download import S3Release
from scidocs_eval.evaluation.integrity import DataShape, LabelledSplit
from scidocs_eval.evaluation.metrics import macro_f1
from scidocs_eval.evaluation.task import (
    BENCHMARKS,
    Benchmark,
    MissingPolicy,
    Task,
    TaskData,
    TaskResult,
    TaskSpec,
    check_missing,
    register_task,
)
from scidocs_eval.evaluators.linear_svm import LinearSVMGrid
from scidocs_eval.formats.embeddings import EMPTY, MISSING, EmbeddingStore
from scidocs_eval.formats.suite import METADATA_FILES, LabelledPapers, Suite
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.params import POSITIVE, InputPath, Interval, ListOf

np = lazy_module("numpy", __name__)

BENCHMARKS.register(Benchmark("scidocs", "the SciDocs suite of SPECTER (ACL 2020): MAG, MeSH, co-view, co-read, "
                               "cite, co-cite, recommendation", table_kind="table1", download=S3Release()))

OFFICIAL_C_GRID = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)


@dataclass(frozen=True)
class LabelledSplits(TaskData):
    """The train split's labelled papers and the scored split's."""

    train: LabelledPapers
    scored: LabelledPapers


class ClassificationTask(Task[LabelledSplits]):
    """A labelled-papers task; subclasses name the folder.

    Args:
        c_grid: candidate values of C (the official grid by default).
        folds: number of stratified CV folds on train (at most the size of the smallest class in train: the
            suite's integrity check refuses a train split too small for them).
        folder: the suite folder of its label files (default: the one named after the task; a label task of
            `data build --label-task NAME` is scored with `--task-param mag.folder=NAME`).
    """

    parameter_constraints = {"c_grid": [ListOf(POSITIVE, min_length=1)], "folds": [Interval(int, 2, None)],
                             "folder": [InputPath(folder=True), None]}

    def __init__(self, c_grid: tuple[float, ...] = OFFICIAL_C_GRID, folds: int = 3, folder: str | None = None):
        self.c_grid = tuple(c_grid)
        self.folds = folds
        self.folder = folder

    @property
    def labels_folder(self) -> str:
        return self.folder or self.name

    def required_files(self, split: str) -> list[str]:
        return [f"{self.labels_folder}/train.csv", f"{self.labels_folder}/{split}.csv"]

    def input_folders(self, suite: Suite, split: str) -> list[Path]:
        return [suite.path(self.labels_folder)]

    def read(self, suite: Suite, split: str, texts: bool = True) -> LabelledSplits:
        return LabelledSplits(split, texts, suite.labels(self.labels_folder, "train"),
                              suite.labels(self.labels_folder, split))

    def paper_ids(self, data: LabelledSplits) -> list[str]:
        return data.train.ids + data.scored.ids

    def data_shapes(self, data: LabelledSplits) -> list[DataShape]:
        train, scored = data.train, data.scored
        return [LabelledSplit(self.name, f"{self.labels_folder}/train.csv", f"{self.labels_folder}/{data.split}.csv",
                              train.ids, train.labels, scored.ids, scored.labels, "classes", self.folds)]

    def _features(self, papers: LabelledPapers, embeddings: EmbeddingStore, split: str,
                  coverage: dict[str, int], missing: MissingPolicy) -> np.ndarray:
        codes = embeddings.status(papers.ids)
        check_missing(self.name, f"{split} papers", papers.ids, codes, missing)
        coverage[f"{split}_papers"] = len(papers.ids)
        coverage[f"{split}_missing"] = int(np.sum(codes == MISSING))
        coverage[f"{split}_empty"] = int(np.sum(codes == EMPTY))
        return embeddings.vectors(papers.ids)

    def evaluate(self, data: LabelledSplits, embeddings: EmbeddingStore,
                 missing: MissingPolicy = "official") -> TaskResult:
        split, train, scored = data.split, data.train, data.scored
        coverage: dict[str, int] = {}
        x_train = self._features(train, embeddings, "train", coverage, missing)
        x_scored = self._features(scored, embeddings, split, coverage, missing)
        grid = LinearSVMGrid(c_grid=self.c_grid, folds=self.folds).fit(x_train, train.labels)
        predicted = grid.predict(x_scored)
        details = {"C": grid.best_c_, "cv_accuracy": dict(zip(map(str, self.c_grid), grid.cv_accuracy_))}
        items = {"unit": "paper", "ids": scored.ids, "gold": scored.labels.tolist(),
                 "predicted": np.asarray(predicted).tolist()}
        return TaskResult(self.name, {"f1": macro_f1(scored.labels, predicted)}, coverage, details, items=items)


@register_task
class MagTask(ClassificationTask):
    spec = TaskSpec("mag", "MAG: 19 fields of study", "classification", ("f1",), "f1", "cls",
                    METADATA_FILES["mag_mesh"], {"f1": "mag_f1"})


@register_task
class MeshTask(ClassificationTask):
    spec = TaskSpec("mesh", "MeSH: 11 disease classes", "classification", ("f1",), "f1", "cls",
                    METADATA_FILES["mag_mesh"], {"f1": "mesh_f1"})
