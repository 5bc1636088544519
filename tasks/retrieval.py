"""The SciDocs tasks MTEB reports: SCIDOCS retrieval, SciDocsRR reranking and NanoSCIDOCS, scored as MTEB does.

A task's data is a retrieval dataset (BEIR or HF parquet layout, `scidocs_eval.formats.retrieval`) in the suite
folder named after the task (`--data DIR` holding `scidocs-retrieval/`, ...), or the folder of the task parameter
`folder`. Queries and documents have embeddings groups of their own ("queries", "corpus"), so a model can embed
them differently; one file for both works when their ids do not collide.

Scoring is MTEB 2.x's (`AbsTaskRetrieval`, `SearchEncoderWrapper`, `calculate_retrieval_scores`): queries
without judgements are left out; similarity in float32 (cosine by default); full-corpus retrieval keeps each
query's top 1000 by (score, document id); reranking scores each query's own candidates; nDCG, MAP, recall,
precision, hit rate and MRR at MTEB's k values by pytrec_eval (MRR as MTEB computes it). The printed metrics are
×100 (2 decimals, as every task here); `details["mteb_scores"]` holds MTEB's own dict, digit for digit.

A query without an embedding scores 0 on every metric and a document without one cannot be retrieved (both
counted in the coverage, with a warning), under the default policy; `missing="error"` stops instead.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from scidocs_eval.data.hf_datasets import HubDatasets
from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.integrity import DataShape, JudgedSplit
from scidocs_eval.evaluation.metrics import (
    MTEB_K_VALUES,
    capped_recall,
    mean_measures,
    mteb_metric_names,
    mteb_retrieval_measures,
    mteb_scores,
    mteb_top_k_measures,
)
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
    suite_relative,
)
from scidocs_eval.evaluators.retrieval_search import ENGINES, SIMILARITIES, prepare, search
from scidocs_eval.formats.embeddings import EMPTY, MISSING, PRESENT, EmbeddingStore
from scidocs_eval.formats.retrieval import (
    RetrievalData,
    detect_layout,
    layout_files,
    read_retrieval_data,
)
from scidocs_eval.formats.suite import Paper, Suite
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.params import InputPath, Options, validate_params

np = lazy_module("numpy", __name__)

log = logging.getLogger("scidocs_eval")

BENCHMARKS.register(Benchmark("mteb-scidocs", "SciDocs as MTEB reports it: SCIDOCS retrieval (BEIR), SciDocsRR "
                                              "reranking, NanoSCIDOCS (NanoBEIR)", download=HubDatasets()))
BENCHMARKS.register(Benchmark("full-corpus", "a suite's cite, co-cite, co-view and co-read queries against every "
                                             "paper of the suite (written by `data build --format beir`)"))
QUERY_GROUP, DOCUMENT_GROUP = "queries", "corpus"


MTEB_TYPE = {"retrieval": "Retrieval", "reranking": "Reranking"}
"""MTEB's task type of a retrieval task by its family, unless its spec says ("type": PeerQA and QASPER rerank their
candidates but are Retrieval tasks in MTEB); the `sci` table averages by it."""


@dataclass(frozen=True)
class RetrievalSplit(TaskData):
    """One split of a retrieval dataset (`RetrievalData`; without the corpus' texts when read with `texts=False`)
    and the judgements of the queries MTEB evaluates (`judged`)."""

    data: RetrievalData
    relevance: dict[str, dict[str, int]]


def mteb_spec(name: str, description: str, family: str, main_score: str, mteb_task: str, hf_id: str,
              revision: str, split: str) -> TaskSpec:
    return TaskSpec(name, description, family, mteb_metric_names(), main_score, DOCUMENT_GROUP, "",
                    benchmark="mteb-scidocs", query_group=QUERY_GROUP, mteb_task=mteb_task,
                    dataset={"path": hf_id, "revision": revision, "split": split, "type": MTEB_TYPE[family]})


class RetrievalTask(Task[RetrievalSplit]):
    """Queries against a corpus, scored as MTEB scores its retrieval tasks (see the module docstring).

    Args:
        similarity: "cosine" (MTEB's default), "dot" or "neg-l2" (negative Euclidean distance): use the one
            the model was trained for (MTEB reads it from the model's metadata).
        engine: "numpy" (exact, blocked), "faiss" (exact flat index) or "faiss-hnsw" / "faiss-ivf"
            (approximate: their measured recall is reported in the details); reranking always scores every
            candidate.
        folder: the dataset folder (default: the suite's folder named after the task).
    """

    reranking: ClassVar[bool] = False
    splits: ClassVar[tuple[str, ...]] = ("test",)
    k_values: ClassVar[tuple[int, ...]] = MTEB_K_VALUES
    """MTEB's cut-offs for the task (its `k_values`); a query keeps its top max(k_values) documents."""
    ignore_identical_ids: ClassVar[bool] = False
    """drop a document whose id is the query's (MTEB's `ignore_identical_ids`): a query paper in its own corpus."""
    parameter_constraints: ClassVar[dict[str, list]] = {
        "similarity": [Options(SIMILARITIES)],
        "engine": [Options(ENGINES)],
        "folder": [InputPath(folder=True), None],
    }

    def __init__(self, similarity: str = "cosine", engine: str = "numpy", folder: str | None = None):
        validate_params(self.parameter_constraints, {"similarity": similarity, "engine": engine, "folder": folder},
                        f"task {self.name!r}")
        self.similarity, self.engine, self.folder = similarity, engine, folder

    @property
    def query_group(self) -> str:
        assert self.spec.query_group is not None, "a retrieval task's spec names its query group"
        return self.spec.query_group

    def split_name(self, split: str) -> str:
        """The dataset's split for the run's `split`: MTEB evaluates NanoSCIDOCS on its only split, "train"."""
        return self.spec.dataset.get("split", split) if split == "test" else split

    def dataset_folder(self, suite: Suite) -> Path:
        return suite.path(self.folder) if self.folder else suite.path(self.name)

    def required_files(self, split: str) -> list[str]:
        base, name = self.folder or self.name, self.split_name(split)
        files = [f"{base}/corpus.jsonl", f"{base}/queries.jsonl", f"{base}/qrels/{name}.tsv"]
        return files + ([f"{base}/top_ranked/{name}.jsonl"] if self.reranking else [])

    def input_files(self, suite: Suite, split: str) -> list[str]:
        folder = self.dataset_folder(suite)
        if detect_layout(folder) != "hf-parquet":
            return self.required_files(split)
        return [str(path) for directory in layout_files(folder, self.split_name(split), self.reranking)
                for path in (sorted(directory.glob("*.parquet")) if directory.is_dir() else [directory])]

    def input_folders(self, suite: Suite, split: str) -> list[Path]:
        return [self.dataset_folder(suite)]

    def read(self, suite: Suite, split: str, texts: bool = True) -> RetrievalSplit:
        data = read_retrieval_data(self.dataset_folder(suite), self.split_name(split), self.reranking, texts)
        return RetrievalSplit(split, texts, data, judged(data))

    def data_shapes(self, loaded: RetrievalSplit) -> list[DataShape]:
        data = loaded.data
        return [JudgedSplit(self.name, suite_relative(loaded.suite, data.files[2]), data.qrels, data.queries,
                            data.document_ids, data.top_ranked)]

    def role_papers(self, loaded: RetrievalSplit) -> dict[str, tuple[list[Paper], str]]:
        """group -> (papers, MTEB prompt type) of what a model embeds: the judged queries' texts, and each document
        as MTEB joins it (title, a space, text), each text as a title (`Task.role_papers`); data loaded without
        texts (scoring given vectors) is loaded again with them."""
        if not loaded.with_texts:
            loaded = self.load(loaded.suite, loaded.split, texts=True)
        data = loaded.data
        assert data.corpus is not None
        return {self.query_group: ([Paper(q, data.queries[q], "") for q in loaded.relevance], "query"),
                self.embedding_group: ([Paper(d.doc_id, d.mteb_text, "") for d in data.corpus.values()], "document")}

    def evaluate(self, loaded: RetrievalSplit, embeddings: EmbeddingStore,
                 missing: MissingPolicy = "official") -> TaskResult:
        return self.evaluate_groups(loaded, {self.query_group: embeddings, self.embedding_group: embeddings}, missing)

    def evaluate_groups(self, loaded: RetrievalSplit, stores: Mapping[str, EmbeddingStore],
                        missing: MissingPolicy = "official") -> TaskResult:
        data, relevance = loaded.data, loaded.relevance
        query_store, document_store = stores[self.query_group], stores[self.embedding_group]
        query_ids = list(relevance)
        candidates = candidate_ids(data, relevance)
        query_status, document_status = query_store.status(query_ids), document_store.status(candidates)
        check_missing(self.name, "queries", query_ids, query_status, missing)
        check_missing(self.name, "documents", candidates, document_status, missing)
        searched = [q for q, status in zip(query_ids, query_status) if status == PRESENT]
        usable = [d for d, status in zip(candidates, document_status) if status == PRESENT]
        if searched and usable and query_store.dim != document_store.dim:
            raise ScidocsEvalError(f"{self.name}: query vectors ({query_store.source}) have {query_store.dim} "
                                   f"dimensions, document vectors ({document_store.source}) {document_store.dim}")
        run: dict[str, dict[str, float]] = {}
        top: tuple[list[str], list[str], np.ndarray, np.ndarray] | None = None
        search_details: dict[str, Any] = {}
        query_vectors = prepare(query_store.vectors(searched), self.similarity)
        if not (searched and usable):
            log.warning("%s: no query or no document has an embedding; every query scores 0", self.name)
        elif self.reranking:
            run = self.rerank(data, searched, query_vectors, usable, document_store)
        else:
            top_k = max(self.k_values)
            depth = top_k + self.ignore_identical_ids
            found = search(query_vectors, document_store.vectors(usable), usable, depth, self.similarity,
                           self.engine)
            top_indices = self.kept_top_k(searched, usable, found.indices, top_k)
            top = (searched, usable, top_indices, found.scores)
            if type(self).task_scores is not RetrievalTask.task_scores:  # only a task score reads a run of dicts
                run = {q: {usable[i]: float(s) for i, s in zip(row_i, row_s) if i >= 0}
                       for q, row_i, row_s in zip(searched, top_indices, found.scores)}
            search_details = found.details
        coverage = {"queries": len(query_ids), "queries_missing": int(np.sum(query_status == MISSING)),
                    "queries_empty": int(np.sum(query_status == EMPTY)), "documents": len(candidates),
                    "documents_missing": int(np.sum(document_status == MISSING)),
                    "documents_empty": int(np.sum(document_status == EMPTY)),
                    "unjudged_queries": len(data.queries) - len(query_ids)}
        unscored = len(query_ids) - len(searched)
        if unscored or len(usable) < len(candidates):
            log.warning("%s: %d of %d queries have no embedding (they score 0) and %d of %d documents have none "
                        "(they cannot be retrieved); MTEB embeds every one, so these numbers are not MTEB's",
                        self.name, unscored, len(query_ids), len(candidates) - len(usable), len(candidates))
        per_query = (mteb_top_k_measures(relevance, *top, self.k_values) if top is not None
                     else mteb_retrieval_measures(relevance, run, self.k_values))
        items = {"unit": "query", "ids": list(per_query),
                 **{m: [values[m] for values in per_query.values()] for m in self.metrics}}
        details: dict[str, Any] = {
            "mteb_scores": {**mteb_scores(per_query, self.k_values, self.spec.main_score),
                            **self.task_scores(relevance, run)},
            "similarity": self.similarity, "layout": data.layout, "dataset": dict(self.spec.dataset),
            "k_values": list(self.k_values), **({"search": search_details} if search_details else {})}
        if search_details and not search_details.get("exact", True):
            log.warning("%s: approximate search (%s), recall@%d against exact search %.4f on %d queries",
                        self.name, self.engine, search_details["k"], search_details["recall_at_k"],
                        search_details["recall_sample"])
        return TaskResult(self.name, mean_measures(per_query, self.metrics), coverage, details, items=items)

    def kept_top_k(self, searched: list[str], usable: list[str], indices: np.ndarray, top_k: int) -> np.ndarray:
        """The search's `indices` with -1 for a document dropped: past each query's first `top_k` kept, and the
        query's own paper when the task ignores identical ids."""
        kept = indices >= 0
        if self.ignore_identical_ids:
            row_of = {doc_id: row for row, doc_id in enumerate(usable)}
            kept &= indices != np.array([row_of.get(q, -1) for q in searched], dtype=np.int64)[:, None]
        kept &= np.cumsum(kept, axis=1) <= top_k
        return np.where(kept, indices, -1)

    def task_scores(self, relevance: Mapping[str, Mapping[str, int]],
                    run: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
        """MTEB's scores of this task beyond the standard ones (its `task_specific_scores`); none by default."""
        return {}

    def rerank(self, data: RetrievalData, searched: list[str], query_vectors: np.ndarray, usable: list[str],
               store: EmbeddingStore) -> dict[str, dict[str, float]]:
        """Each query's own candidates (those with an embedding) scored by the similarity, in float32."""
        assert data.top_ranked is not None
        row_of = {doc_id: row for row, doc_id in enumerate(usable)}
        documents = prepare(store.vectors(usable), self.similarity)
        run: dict[str, dict[str, float]] = {}
        for query_id, query in zip(searched, query_vectors):
            kept = [d for d in data.top_ranked[query_id] if d in row_of]
            vectors = documents[[row_of[d] for d in kept]]
            if self.similarity == "neg-l2":
                scores = -np.sqrt(np.maximum(np.einsum("ij,ij->i", vectors, vectors) + query @ query
                                             - 2 * (vectors @ query), 0, dtype=np.float32))
            else:
                scores = vectors @ query
            top = sorted(zip(scores.tolist(), kept), reverse=True)[:max(self.k_values)]
            run[query_id] = {doc_id: score for score, doc_id in top}
        return run


def judged(data: RetrievalData) -> dict[str, dict[str, int]]:
    """The judgements of the queries MTEB evaluates: those with at least one judgement, a query text and (reranking)
    a candidate list; the others are left out, as MTEB leaves them out (`JudgedSplit`'s findings name them)."""
    kept = {q: grades for q, grades in data.qrels.items() if grades and q in data.queries}
    if data.top_ranked is not None:
        kept = {q: grades for q, grades in kept.items() if q in data.top_ranked}
    return kept


def candidate_ids(data: RetrievalData, relevance: Mapping[str, Mapping[str, int]]) -> list[str]:
    """The documents a run may rank: the whole corpus, or (reranking) the judged queries' candidates."""
    if data.top_ranked is None:
        return list(data.document_ids)
    return list(dict.fromkeys(d for q in relevance for d in data.top_ranked[q]))


class RerankingTask(RetrievalTask):
    """Each query's own candidate list (the dataset's `top_ranked`), scored as MTEB 2.x scores reranking."""

    reranking = True


@register_task
class SciDocsRetrievalTask(RetrievalTask):
    spec = mteb_spec("scidocs-retrieval", "MTEB SCIDOCS (BEIR): 1,000 paper titles against 25,657 papers",
                     "retrieval", "ndcg_at_10", "SCIDOCS", "mteb/scidocs",
                     "f8c2fcf00f625baaa80f62ec5bd9e1fff3b8ae88", "test")


@register_task
class SciDocsRerankingTask(RerankingTask):
    spec = mteb_spec("scidocs-rr", "MTEB SciDocsRR: rerank about 30 candidate titles per query title",
                     "reranking", "map_at_1000", "SciDocsRR", "mteb/SciDocsRR",
                     "39b8377811871075eed9de3b8a7e21aaa6acb3d8", "test")


@register_task
class NanoSciDocsTask(RetrievalTask):
    spec = mteb_spec("nano-scidocs", "MTEB NanoSCIDOCSRetrieval (NanoBEIR): 50 queries, about 2,200 papers",
                     "retrieval", "ndcg_at_10", "NanoSCIDOCSRetrieval", "zeta-alpha-ai/NanoSCIDOCS",
                     "484eb90549fc3f0b9c42b3551e80ceb999515537", "train")


def full_corpus_spec(task: str, description: str) -> TaskSpec:
    return TaskSpec(f"{task}-full", description, "retrieval", mteb_metric_names(), "ndcg_at_10", DOCUMENT_GROUP, "",
                    benchmark="full-corpus", query_group=QUERY_GROUP)


class FullCorpusTask(RetrievalTask):
    """A suite ranking task's queries (titles) against every paper of the suite (`data build --format beir`);
    the query paper itself is never retrieved."""

    ignore_identical_ids = True
    splits = ("val", "test")


@register_task
class CiteFullTask(FullCorpusTask):
    spec = full_corpus_spec("cite", "cite, full corpus: the papers a query cites, among every paper of the suite")


@register_task
class CociteFullTask(FullCorpusTask):
    spec = full_corpus_spec("cocite", "co-cite, full corpus: papers cited with the query, among every paper")


@register_task
class CoviewFullTask(FullCorpusTask):
    spec = full_corpus_spec("coview", "co-view, full corpus: papers viewed with the query, among every paper")


@register_task
class CoreadFullTask(FullCorpusTask):
    spec = full_corpus_spec("coread", "co-read, full corpus: papers read with the query, among every paper")


# MTEB 2.x's scientific retrieval sets beside SCIDOCS (benchmark "mteb-sci"; issue 38).
# MTEB 2.x's scientific retrieval sets (Academic domain, English) beside SCIDOCS: SciFact, NFCorpus, TRECCOVID,
# LitSearchRetrieval, BIRCO-DorisMae, PeerQA, QASPER, NanoBEIR's SciFact and NFCorpus, and the decontaminated SCIDOCS,
# SciFact, NFCorpus and TREC-COVID. Each is a task of the retrieval family (`tasks/retrieval.py`, scored as
# `AbsTaskRetrieval` scores) with MTEB's dataset id, pinned revision, split and main score, and the rules its MTEB
# class adds:
#
# - PeerQA and QASPER (LMEB) rerank each query's own candidates (their `top_ranked`), report at k = 1, 3, 5, 10, 20,
#   25, 50, 100, 1000, add capped recall (`R_cap_at_k`), and are MTEB's subset named after the task.
# - LitSearchRetrieval is built as MTEB's `load_data` builds it (ids `q{n}` and `d{corpusid}`, cited ids graded
#   1, 2, ... in order; `data download` does it: `data.hf_datasets.fetch_litsearch`).
# - No set here drops a document whose id is the query's (`ignore_identical_ids` is False in each MTEB class).

LMEB_K_VALUES = (1, 3, 5, 10, 20, 25, 50, 100, 1000)
"""The cut-offs of MTEB's LMEB tasks (PeerQA, QASPER)."""


def sci_spec(name: str, description: str, mteb_task: str, hub_id: str, revision: str, split: str = "test",
             family: str = "retrieval", k_values: tuple[int, ...] | None = None, **dataset: str) -> TaskSpec:
    metrics = mteb_metric_names(k_values) if k_values else mteb_metric_names()
    # groups of its own: ids of two sets collide, and a model with MTEB's prompts embeds each set's queries with its
    # task's prompt (`EmbeddingRole.mteb_task`)
    return TaskSpec(name, description, family, metrics, "ndcg_at_10", f"{name}-corpus", "", benchmark="mteb-sci",
                    query_group=f"{name}-queries", mteb_task=mteb_task,
                    dataset={"path": hub_id, "revision": revision, "split": split, "type": MTEB_TYPE[family],
                             **dataset})


class LmebRerankingTask(RerankingTask):
    """An LMEB task: its own candidates per query, LMEB's k values, capped recall (MTEB's `recall_cap`)."""

    k_values = LMEB_K_VALUES

    def task_scores(self, relevance: Mapping[str, Mapping[str, int]],
                    run: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
        return capped_recall(relevance, run, self.k_values)


_SETS = [
    ("scifact", "MTEB SciFact (BEIR): scientific claims against abstracts", "SciFact", "mteb/scifact",
     "d56462d0e63a25450459c4f213e49ffdb866f7f9"),
    ("nfcorpus", "MTEB NFCorpus (BEIR): nutrition questions against medical articles", "NFCorpus", "mteb/nfcorpus",
     "ec0fa4fe99da2ff19ca1214b7966684033a58814"),
    ("trec-covid", "MTEB TRECCOVID (BEIR): COVID-19 questions against CORD-19 papers", "TRECCOVID",
     "mteb/trec-covid", "bb9466bac8153a0349341eb1b22e06409e78ef4e"),
    ("birco-dorismae", "MTEB BIRCO-DorisMae: complex research needs against abstracts", "BIRCO-DorisMae",
     "mteb/BIRCO-DorisMae-Test", "010fedd0de72e8b77388ea5b1d563d638d5900e5a"),
    ("scidocs-decontaminated", "MTEB SciDocsDecontaminated: SCIDOCS without train-test contamination",
     "SciDocsDecontaminated", "iamfortytwo/scidocs-decontaminated", "5b7a380cb7c8608e8c9bf6097acbc0eccf935de3"),
    ("scifact-decontaminated", "MTEB SciFactDecontaminated: SciFact without train-test contamination",
     "SciFactDecontaminated", "iamfortytwo/scifact-decontaminated", "ad05bded28ca603a0ed5e27231899dd72c1edb8e"),
    ("nfcorpus-decontaminated", "MTEB NFCorpusDecontaminated: NFCorpus without train-test contamination",
     "NFCorpusDecontaminated", "iamfortytwo/nfcorpus-decontaminated", "e6f37a2687336d5b7b83d9aede6e114e9d46dad9"),
    ("trec-covid-decontaminated", "MTEB TrecCOVIDDecontaminated: TREC-COVID without train-test contamination",
     "TrecCOVIDDecontaminated", "iamfortytwo/trec-covid-decontaminated", "0b99aeb603c9ad909564db1a80e380a2a78bc026"),
]
_NANO = [
    ("nano-scifact", "MTEB NanoSciFactRetrieval (NanoBEIR): 50 claims", "NanoSciFactRetrieval",
     "mteb/NanoSciFactRetrieval", "8c5f7bbe90bb865f46c67710221afa7d9096251b"),
    ("nano-nfcorpus", "MTEB NanoNFCorpusRetrieval (NanoBEIR): 50 questions", "NanoNFCorpusRetrieval",
     "mteb/NanoNFCorpusRetrieval", "2eec9d63140fb9af7c75ad0fdbf6350aaf20e94e"),
]


def _class_name(name: str) -> str:
    return "".join(part.title() for part in name.split("-")) + "Task"


for _name, _description, _mteb, _hub, _revision in _SETS:
    register_task(type(_class_name(_name), (RetrievalTask,), {"__module__": __name__, "spec": sci_spec(
        _name, _description, _mteb, _hub, _revision)}))
for _name, _description, _mteb, _hub, _revision in _NANO:  # NanoBEIR's sets: MTEB evaluates their only split
    register_task(type(_class_name(_name), (RetrievalTask,), {"__module__": __name__, "spec": sci_spec(
        _name, _description, _mteb, _hub, _revision, "train")}))


@register_task
class LitSearchTask(RetrievalTask):
    spec = sci_spec("litsearch", "MTEB LitSearchRetrieval: literature-search questions against ACL and ICLR papers",
                    "LitSearchRetrieval", "princeton-nlp/LitSearch", "9573fb284a1026c998df47024b888a163f0f0e25",
                    loader="litsearch")


@register_task
class PeerQATask(LmebRerankingTask):
    spec = sci_spec("peerqa", "MTEB PeerQA (LMEB): questions on papers against their passages, reranked",
                    "PeerQA", "mteb/PeerQA", "6b2010c691a435a7a920088d32e55c898afa97f5", family="reranking",
                    k_values=LMEB_K_VALUES, subset="PeerQA", type="Retrieval")


@register_task
class QasperTask(LmebRerankingTask):
    spec = sci_spec("qasper", "MTEB QASPER (LMEB): questions on papers against their passages, reranked", "QASPER",
                    "mteb/QASPER", "898f2eced48890f19b6a88f1b616e9ca6c5dda1c", family="reranking",
                    k_values=LMEB_K_VALUES, subset="QASPER", type="Retrieval")
