"""Fetch an MTEB dataset from the Hugging Face hub (by id and pinned revision): retrieval sets into the BEIR layout,
clustering and classification sets as their rows (`fetch_rows`), LitSearch as MTEB builds it (`fetch_litsearch`);
`fetch_task_dataset` picks by the task's `dataset["loader"]`.

`data download --benchmark mteb-scidocs` calls this once per task: the `datasets` library loads the configs
MTEB loads (`corpus`, `queries` or `query`, `default` or `qrels`, and `top_ranked` for reranking), each at the
revision MTEB pins and on the split MTEB reads (the evaluation split, or a config's only split), and the
dataset is written as `corpus.jsonl`, `queries.jsonl`, `qrels/{split}.tsv` (and `top_ranked/{split}.jsonl`), so
every later run is offline and reads exactly those files.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.extras import require
from scidocs_eval.formats.hf_rows import write_rows
from scidocs_eval.formats.retrieval import Document, write_beir
from scidocs_eval.formats.safe_output import owned_folder

CONFIGS = {"corpus": ("corpus",), "queries": ("queries", "query"), "qrels": ("default", "qrels"),
           "top_ranked": ("top_ranked",)}


def _load_config(hub_id: str, revision: str, configs: list[str], role: str, split: str, subset: str = "") -> Any:
    datasets = require("datasets", "downloading MTEB's datasets from the Hugging Face hub")
    get_dataset_split_names, load_dataset = datasets.get_dataset_split_names, datasets.load_dataset

    names = (f"{subset}-{role}",) if subset else CONFIGS[role]
    config = next((name for name in names if name in configs), None)
    if subset and role == "queries" and "query" in configs:  # MTEB reads "query" first whatever the subset
        config = "query"
    if config is None:
        raise ScidocsEvalError(f"{hub_id}@{revision}: no {' or '.join(names)} config (it has "
                               f"{', '.join(configs)})")
    splits = get_dataset_split_names(hub_id, config, revision=revision)
    chosen = split if split in splits else splits[0] if len(splits) == 1 else None
    if chosen is None:
        raise ScidocsEvalError(f"{hub_id}@{revision}: config {config} has no split {split!r} ({', '.join(splits)})")
    return load_dataset(hub_id, config, split=chosen, revision=revision)


def fetch_hub_dataset(hub_id: str, revision: str, split: str, dest: str | os.PathLike[str],
                      reranking: bool = False, subset: str = "") -> Path:
    """Download one split of the hub dataset `hub_id` at `revision` into `dest` in the BEIR layout (`subset`: the
    prefix of its configs, `{subset}-corpus`, ..., as MTEB reads a task's named subset)."""
    get_dataset_config_names = require("datasets", "downloading MTEB's datasets from the Hugging Face hub"
                                       ).get_dataset_config_names
    configs = list(get_dataset_config_names(hub_id, revision=revision))
    corpus = _load_config(hub_id, revision, configs, "corpus", split, subset)
    queries = _load_config(hub_id, revision, configs, "queries", split, subset)
    qrels = _load_config(hub_id, revision, configs, "qrels", split, subset)
    id_column = "_id" if "_id" in corpus.column_names else "id"
    documents = [Document(str(row[id_column]), row.get("title") or "", row["text"]) for row in corpus]
    query_id = "_id" if "_id" in queries.column_names else "id"
    query_texts = {str(row[query_id]): row["text"] for row in queries}
    judgements: dict[str, dict[str, int]] = {}
    for row in qrels:
        judgements.setdefault(str(row["query-id"]), {})[str(row["corpus-id"])] = int(row["score"])
    top_ranked = None
    if reranking:
        lists = _load_config(hub_id, revision, configs, "top_ranked", split, subset)
        top_ranked = {split: {str(row["query-id"]): [str(c) for c in row["corpus-ids"]] for row in lists}}
    with owned_folder(dest, "scidocs-eval data download") as staging:
        write_beir(staging, documents, query_texts, {split: judgements}, top_ranked)
    return Path(dest)


def fetch_litsearch(hub_id: str, revision: str, dest: str | os.PathLike[str]) -> Path:
    """LitSearch as MTEB's `LitSearchRetrieval.load_data` builds it: queries `q{n}` (config "query", split "full",
    in order), documents `d{corpusid}` (config "corpus_clean": title, abstract), each query's cited ids graded 1, 2,
    ... in their order; into `dest` in the BEIR layout (split "test"). MTEB loads the hub's newest files; this loads
    the revision it names."""
    load_dataset = require("datasets", "downloading MTEB's datasets from the Hugging Face hub").load_dataset
    queries = load_dataset(hub_id, "query", split="full", revision=revision)
    corpus = load_dataset(hub_id, "corpus_clean", split="full", revision=revision)
    documents = [Document(f"d{row['corpusid']}", row["title"] or "", row["abstract"] or "") for row in corpus]
    texts = {f"q{n}": row["query"] for n, row in enumerate(queries, start=1)}
    judgements = {f"q{n}": {f"d{i}": grade for grade, i in enumerate(row["corpusids"], start=1)}
                  for n, row in enumerate(queries, start=1)}
    with owned_folder(dest, "scidocs-eval data download") as staging:
        write_beir(staging, documents, texts, {"test": judgements})
    return Path(dest)


def fetch_rows(hub_id: str, revision: str, splits: tuple[str, ...], dest: str | os.PathLike[str]) -> Path:
    """Each split of the hub dataset `hub_id` at `revision` as its rows, in order (`formats.hf_rows`), into `dest`:
    MTEB's clustering and classification sets."""
    load_dataset = require("datasets", "downloading MTEB's datasets from the Hugging Face hub").load_dataset
    with owned_folder(dest, "scidocs-eval data download") as staging:
        for split in splits:
            write_rows(staging, split, load_dataset(hub_id, split=split, revision=revision))
    return Path(dest)


def fetch_task_dataset(dataset: Mapping[str, str], dest: str | os.PathLike[str], files: Sequence[str] = ()) -> Path:
    """A task's hub dataset (`TaskSpec.dataset`: path, revision, split, and `loader` "beir" (default), "rows" or
    "litsearch", `subset`, `splits`) into `dest`; `files`: the files the task reads (`Task.required_files`), whose
    BEIR layout says whether its candidate lists (top_ranked) are fetched too."""
    hub_id, revision, loader = dataset["path"], dataset["revision"], dataset.get("loader", "beir")
    reranking = any("/top_ranked/" in f for f in files)
    if loader == "rows":
        return fetch_rows(hub_id, revision, tuple(dataset.get("splits", dataset.get("split", "test")).split(",")), dest)
    if loader == "litsearch":
        return fetch_litsearch(hub_id, revision, dest)
    return fetch_hub_dataset(hub_id, revision, dataset.get("split", "test"), dest, reranking, dataset.get("subset", ""))
