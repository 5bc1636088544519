"""MTEB 2.x's scientific clustering tasks: ArXiv hierarchical (P2P, S2S), bioRxiv and medRxiv (P2P, S2S, v2).

A task's data is one split of its hub dataset as rows (`scidocs_eval.formats.hf_rows`: `{split}.jsonl` in the suite
folder named after the task, or the folder of the task parameter `folder`), as MTEB loads it at the revision it
pins. Each task turns the rows into documents as its MTEB class does (`dataset_transform`: one row per document, or
rows of document lists flattened; ArXiv's labels split on "." into two levels and 2,048 documents drawn as
`datasets`' `train_test_split(test_size=2048, seed=42)`), then scores as `AbsTaskClustering` does
(`scidocs_eval.evaluators.clustering`). A model embeds only the documents MTEB embeds (its 4% sample); each
document's id is a digest of its text, so a text is embedded once however often it occurs.

The printed metrics are ×100 (2 decimals); `details["mteb_scores"]` holds MTEB's own dict, per-experiment values
included; `items` holds every experiment's value (unit "iteration") for intervals and `compare`.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from typing import Any, ClassVar

from scidocs_eval.data.hf_datasets import HubDatasets
from scidocs_eval.errors import InputError
from scidocs_eval.evaluation.integrity import ClusteredSplit, DataShape
from scidocs_eval.evaluation.metrics import percent
from scidocs_eval.evaluation.task import (
    BENCHMARKS,
    Benchmark,
    CoverageError,
    FolderTask,
    MissingPolicy,
    TaskData,
    TaskResult,
    TaskSpec,
    check_missing,
    register_task,
)
from scidocs_eval.evaluators.clustering import (
    CLUSTER_SIZE,
    CLUSTERING_METRICS,
    SEED,
    cluster_experiments,
    embedded_sample,
    hf_test_split,
    sample_stage,
)
from scidocs_eval.formats.embeddings import EMPTY, MISSING, PRESENT, EmbeddingStore
from scidocs_eval.formats.hf_rows import CLUSTERING_ROW_LISTS, CLUSTERING_ROWS, flatten_lists, read_rows, text_id
from scidocs_eval.formats.suite import Paper, Suite
from scidocs_eval.lazy_modules import lazy_module

np = lazy_module("numpy", __name__)

log = logging.getLogger("scidocs_eval")

BENCHMARKS.register(Benchmark("mteb-sci", "MTEB 2.x's other scientific (Academic, English) tasks: retrieval sets, "
                                          "their Nano and decontaminated versions, paper clustering and "
                                          "ArxivClassification.v2", download=HubDatasets()))


def clustering_spec(name: str, description: str, mteb_task: str, hub_id: str, revision: str) -> TaskSpec:
    return TaskSpec(name, description, "clustering", CLUSTERING_METRICS, "v_measure", name, "", benchmark="mteb-sci",
                    mteb_task=mteb_task,
                    dataset={"path": hub_id, "revision": revision, "split": "test", "loader": "rows",
                             "type": "Clustering"})


@dataclass(frozen=True)
class ClusteredDocuments(TaskData):
    """Every document MTEB clusters, in its order: texts and labels (outermost level first)."""

    texts: list[str]
    labels: list[list[str]]


class ClusteringTask(FolderTask[ClusteredDocuments]):
    """Documents clustered as MTEB clusters them (see the module docstring).

    Args:
        folder: the dataset folder (default: the suite's folder named after the task).
    """

    row_lists: ClassVar[bool] = False
    """the hub rows hold lists of documents (one row per set), flattened in order (MTEB's `dataset_transform`)."""
    check_label_sets: ClassVar[bool] = False
    """MTEB checks that every row's labels are among all rows' labels (`_check_label_distribution`)."""
    hierarchical_sample: ClassVar[int | None] = None
    """documents drawn by `train_test_split(test_size=N, seed)` after splitting labels on "." (ArXiv's tasks)."""
    cluster_size: ClassVar[int] = CLUSTER_SIZE
    """documents drawn per experiment (MTEB's `max_documents_per_cluster`)."""

    def required_files(self, split: str) -> list[str]:
        return [f"{self.folder or self.name}/{self.spec.dataset['split'] if split == 'test' else split}.jsonl"]

    def read(self, suite: Suite, split: str, texts: bool = True) -> ClusteredDocuments:
        """Every document MTEB clusters, in its order, labels outermost level first (a document's id is its text's
        digest: its text is always read)."""
        path = suite.path(self.input_files(suite, split)[0])
        rows, _ = read_rows(path, CLUSTERING_ROW_LISTS if self.row_lists else CLUSTERING_ROWS)
        if self.check_label_sets and len(rows) <= 50:
            every = {label for row in rows for label in row["labels"]}
            for number, row in enumerate(rows, start=1):
                if not set(row["labels"]) <= every:
                    raise InputError(path, f"row {number}: labels outside the other rows' labels")
        pairs = flatten_lists(rows, "sentences", "labels") if self.row_lists else \
            [(row["sentences"], row["labels"]) for row in rows]
        documents = [text for text, _ in pairs]
        if self.hierarchical_sample is None:
            return ClusteredDocuments(split, True, documents, [[label] for _, label in pairs])
        labels = [str(label).split(".") for _, label in pairs]
        if len(pairs) <= self.hierarchical_sample:
            raise InputError(path, f"{len(pairs)} documents: MTEB's train_test_split(test_size="
                             f"{self.hierarchical_sample}) draws its {self.hierarchical_sample} documents from more")
        chosen = hf_test_split(len(pairs), self.hierarchical_sample, SEED)
        return ClusteredDocuments(split, True, [documents[i] for i in chosen], [labels[i] for i in chosen])

    @staticmethod
    def embedded(documents: ClusteredDocuments) -> tuple[list[str], list[list[str]], random.Random]:
        """The documents MTEB embeds (its sample) and the generator to continue drawing with."""
        return _sampled(documents.texts, documents.labels)

    def data_shapes(self, documents: ClusteredDocuments) -> list[DataShape]:
        """The documents MTEB clusters (its sample) by text digest, with their labels."""
        texts, labels, _ = _sampled(documents.texts, documents.labels)
        return [ClusteredSplit(self.name, self.required_files(documents.split)[0], [text_id(text) for text in texts],
                               labels, sample_stage(len(documents.texts)))]

    def role_papers(self, documents: ClusteredDocuments) -> dict[str, tuple[list[Paper], str]]:
        texts, _, _ = self.embedded(documents)
        unique = dict.fromkeys(texts)
        return {self.embedding_group: ([Paper(text_id(text), text, "") for text in unique], "document")}

    def evaluate(self, documents: ClusteredDocuments, embeddings: EmbeddingStore,
                 missing: MissingPolicy = "official") -> TaskResult:
        texts, labels, rng = self.embedded(documents)
        ids = [text_id(text) for text in texts]
        status = embeddings.status(ids)
        check_missing(self.name, "documents", ids, status, missing)
        usable = status == PRESENT
        if not usable.all():
            log.warning("%s: %d of %d documents have no embedding and are left out of the clustering; MTEB embeds "
                        "every one, so these numbers are not MTEB's", self.name, int((~usable).sum()), len(ids))
        kept = [i for i in range(len(ids)) if usable[i]]
        if not kept:
            raise CoverageError(f"{self.name}: none of its {len(ids)} documents has a usable embedding")
        scores = cluster_experiments(embeddings.vectors([ids[i] for i in kept]), [labels[i] for i in kept], rng,
                                     cluster_size=self.cluster_size)
        mteb_scores: dict[str, Any] = {**scores.mteb_scores()}
        mteb_scores["main_score"] = mteb_scores[self.spec.main_score]
        levels = scores.by_level["v_measure"]
        items = {"unit": "iteration",
                 "ids": [f"{level}/{n}" for level, values in levels.items() for n in range(len(values))],
                 **{metric: scores.flat(metric) for metric in CLUSTERING_METRICS}}
        coverage = {"documents": len(ids), "documents_missing": int(np.sum(status == MISSING)),
                    "documents_empty": int(np.sum(status == EMPTY))}
        details = {"mteb_scores": mteb_scores, "dataset": dict(self.spec.dataset), "levels": len(levels),
                   "experiments": len(items["ids"])}
        return TaskResult(self.name, {m: percent(mteb_scores[m]) for m in CLUSTERING_METRICS}, coverage, details,
                          items=items)


def _sampled(texts: list[str], labels: list[list[str]]) -> tuple[list[str], list[list[str]], random.Random]:
    """The documents MTEB embeds of `texts` (its sample), their labels, and the generator to continue drawing with."""
    rng = random.Random(SEED)
    sample = embedded_sample(len(texts), rng)
    return [texts[i] for i in sample], [labels[i] for i in sample], rng


class RowListClusteringTask(ClusteringTask):
    row_lists = True
    check_label_sets = True


class ArxivHierarchicalTask(ClusteringTask):
    row_lists = True
    hierarchical_sample = 2048


@register_task
class ArxivHierarchicalP2PTask(ArxivHierarchicalTask):
    spec = clustering_spec("arxiv-hierarchical-p2p", "MTEB ArXivHierarchicalClusteringP2P: titles and abstracts, "
                           "main and secondary arXiv category", "ArXivHierarchicalClusteringP2P",
                           "mteb/arxiv-clustering-p2p", "0bbdb47bcbe3a90093699aefeed338a0f28a7ee8")


@register_task
class ArxivHierarchicalS2STask(ArxivHierarchicalTask):
    spec = clustering_spec("arxiv-hierarchical-s2s", "MTEB ArXivHierarchicalClusteringS2S: titles, main and "
                           "secondary arXiv category", "ArXivHierarchicalClusteringS2S",
                           "mteb/arxiv-clustering-s2s", "b73bd54100e5abfa6e3a23dcafb46fe4d2438dc3")


@register_task
class BiorxivP2PTask(ClusteringTask):
    spec = clustering_spec("biorxiv-clustering-p2p", "MTEB BiorxivClusteringP2P.v2: titles and abstracts, 26 "
                           "bioRxiv categories", "BiorxivClusteringP2P.v2", "mteb/biorxiv-clustering-p2p",
                           "f5dbc242e11dd8e24def4c4268607a49e02946dc")


@register_task
class BiorxivS2STask(ClusteringTask):
    spec = clustering_spec("biorxiv-clustering-s2s", "MTEB BiorxivClusteringS2S.v2: titles, bioRxiv categories",
                           "BiorxivClusteringS2S.v2", "mteb/biorxiv-clustering-s2s",
                           "eb4edb10386758d274cd161093eb351381a16dbf")


@register_task
class MedrxivP2PTask(RowListClusteringTask):
    spec = clustering_spec("medrxiv-clustering-p2p", "MTEB MedrxivClusteringP2P.v2: titles and abstracts, medRxiv "
                           "categories", "MedrxivClusteringP2P.v2", "mteb/medrxiv-clustering-p2p",
                           "e7a26af6f3ae46b30dde8737f02c07b1505bcc73")


@register_task
class MedrxivS2STask(RowListClusteringTask):
    spec = clustering_spec("medrxiv-clustering-s2s", "MTEB MedrxivClusteringS2S.v2: titles, medRxiv categories",
                           "MedrxivClusteringS2S.v2", "mteb/medrxiv-clustering-s2s",
                           "35191c8c0dca72d8ff3efcd72aa802307d469663")
