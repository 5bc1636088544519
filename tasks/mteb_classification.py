"""MTEB 2.x's ArxivClassification.v2: arXiv papers' full texts classified into 11 subject areas, as MTEB does.

The data is the hub dataset's `train` and `test` splits as rows (`{split}.jsonl` with `text` and `label`, in the
suite folder named after the task or the task parameter `folder`; `data download` writes them at MTEB's revision).
Scored as `AbsTaskClassification` scores (`scidocs_eval.evaluators.mteb_classification`): 10 experiments, each a
logistic regression on 8 training papers per label; a model embeds only the training papers some experiment uses
and every test paper, each distinct text once. The printed metrics are ×100 (2 decimals); `details["mteb_scores"]`
holds MTEB's dict with every experiment's scores; `items` each experiment's values (unit "iteration").
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, ClassVar

from scidocs_eval.evaluation.integrity import DataShape, LabelledSplit
from scidocs_eval.evaluation.metrics import percent
from scidocs_eval.evaluation.task import (
    CoverageError,
    FolderTask,
    MissingPolicy,
    TaskData,
    TaskResult,
    TaskSpec,
    check_missing,
    register_task,
)
from scidocs_eval.evaluators.mteb_classification import (
    CLASSIFICATION_METRICS,
    mteb_scores,
    run_experiments,
    undersampled_experiments,
)
from scidocs_eval.formats.embeddings import EMPTY, MISSING, PRESENT, EmbeddingStore
from scidocs_eval.formats.hf_rows import CLASSIFICATION_ROWS, read_rows, text_id
from scidocs_eval.formats.suite import Paper, Suite
from scidocs_eval.lazy_modules import lazy_module

np = lazy_module("numpy", __name__)

log = logging.getLogger("scidocs_eval")


@dataclass(frozen=True)
class LabelledTexts(TaskData):
    """Texts and labels of the train split and of the scored split, in the hub's order."""

    train_texts: list[str]
    train_labels: list[Any]
    test_texts: list[str]
    test_labels: list[Any]


class MtebClassificationTask(FolderTask[LabelledTexts]):
    """Texts with labels, a train and a test split, scored as MTEB scores classification (module docstring).

    Args:
        folder: the dataset folder (default: the suite's folder named after the task).
    """

    train_split: ClassVar[str] = "train"

    def required_files(self, split: str) -> list[str]:
        return [f"{self.folder or self.name}/{name}.jsonl" for name in (self.train_split, split)]

    def read(self, suite: Suite, split: str, texts: bool = True) -> LabelledTexts:
        """Both splits, each in the hub's order (a paper's id is its text's digest: the texts are always read); the
        label column holds one type in both (`CLASSIFICATION_ROWS`)."""
        train_file, scored_file = (suite.path(name) for name in self.input_files(suite, split))
        train, checker = read_rows(train_file, CLASSIFICATION_ROWS)
        scored, _ = read_rows(scored_file, CLASSIFICATION_ROWS, after=checker)
        return LabelledTexts(split, True, [row["text"] for row in train], [row["label"] for row in train],
                             [row["text"] for row in scored], [row["label"] for row in scored])

    def data_shapes(self, data: LabelledTexts) -> list[DataShape]:
        """Both splits as a `LabelledSplit` by text digest (a text in both is a test paper trained on); labels as
        classes numbered over both splits (they may be strings); nothing is cross-validated."""
        train_file, scored_file = self.required_files(data.split)
        shaped = [([text_id(text) for text in texts], labels) for texts, labels in
                  ((data.train_texts, data.train_labels), (data.test_texts, data.test_labels))]
        classes = {label: n for n, label in enumerate(sorted({str(x) for _, labels in shaped for x in labels}))}
        (train_ids, train_labels), (scored_ids, scored_labels) = (
            (ids, np.array([classes[str(x)] for x in labels], dtype=np.int64)) for ids, labels in shaped)
        return [LabelledSplit(self.name, train_file, scored_file, train_ids, train_labels, scored_ids, scored_labels,
                              "classes", None)]

    @staticmethod
    def needed(data: LabelledTexts) -> tuple[list[str], list[Any], list[list[int]], list[str], list[Any]]:
        return (data.train_texts, data.train_labels, undersampled_experiments(data.train_labels), data.test_texts,
                data.test_labels)

    def role_papers(self, data: LabelledTexts) -> dict[str, tuple[list[Paper], str]]:
        train_texts, _, experiments, test_texts, _ = self.needed(data)
        used = sorted({i for chosen in experiments for i in chosen})
        texts = dict.fromkeys([train_texts[i] for i in used] + test_texts)
        return {self.embedding_group: ([Paper(text_id(text), text, "") for text in texts], "document")}

    def evaluate(self, data: LabelledTexts, embeddings: EmbeddingStore,
                 missing: MissingPolicy = "official") -> TaskResult:
        train_texts, train_labels, experiments, test_texts, test_labels = self.needed(data)
        used = sorted({i for chosen in experiments for i in chosen})
        train_ids, test_ids = [text_id(train_texts[i]) for i in used], [text_id(text) for text in test_texts]
        train_status, test_status = embeddings.status(train_ids), embeddings.status(test_ids)
        check_missing(self.name, "train papers", train_ids, train_status, missing)
        check_missing(self.name, "test papers", test_ids, test_status, missing)
        if not (train_status == PRESENT).all() or not (test_status == PRESENT).all():
            raise CoverageError(f"{self.name}: {int((train_status != PRESENT).sum())} training and "
                                   f"{int((test_status != PRESENT).sum())} test papers have no usable embedding; "
                                   "MTEB's protocol needs every one (embed them all)")
        train_vectors = np.zeros((len(train_texts), embeddings.dim), dtype=np.float32)
        train_vectors[used] = embeddings.vectors(train_ids)
        per_experiment = run_experiments(train_vectors, train_labels, embeddings.vectors(test_ids), test_labels,
                                         experiments)
        scores = {**mteb_scores(per_experiment)}
        scores["main_score"] = scores[self.spec.main_score]
        items = {"unit": "iteration", "ids": [str(n) for n in range(len(per_experiment))],
                 **{m: [s[m] for s in per_experiment] for m in CLASSIFICATION_METRICS}}
        coverage = {"train_papers": len(train_ids), "train_missing": int(np.sum(train_status == MISSING)),
                    "train_empty": int(np.sum(train_status == EMPTY)), "test_papers": len(test_ids),
                    "test_missing": int(np.sum(test_status == MISSING)),
                    "test_empty": int(np.sum(test_status == EMPTY))}
        return TaskResult(self.name, {m: percent(scores[m]) for m in CLASSIFICATION_METRICS}, coverage,
                          {"mteb_scores": scores, "dataset": dict(self.spec.dataset),
                           "experiments": len(per_experiment)}, items=items)


@register_task
class ArxivClassificationTask(MtebClassificationTask):
    spec = TaskSpec("arxiv-classification", "MTEB ArxivClassification.v2: arXiv papers into 11 subject areas, "
                    "logistic regression on 8 papers per label, 10 experiments", "mteb-classification",
                    CLASSIFICATION_METRICS, "accuracy", "arxiv-classification", "", benchmark="mteb-sci",
                    mteb_task="ArxivClassification.v2", input_format="classification",
                    dataset={"path": "mteb/arxiv", "revision": "202e10e9a5d37a5068397b48184d0728346a7b4a",
                             "split": "test", "splits": "train,test", "loader": "rows",
                             "type": "Classification"})
