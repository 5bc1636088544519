"""Fetch an MTEB retrieval dataset from the Hugging Face hub (by id and pinned revision) into the BEIR layout.

`data download --benchmark mteb-scidocs` calls this once per task: the `datasets` library loads the configs
MTEB loads (`corpus`, `queries` or `query`, `default` or `qrels`, and `top_ranked` for reranking), each at the
revision MTEB pins and on the split MTEB reads (the evaluation split, or a config's only split), and the
dataset is written as `corpus.jsonl`, `queries.jsonl`, `qrels/{split}.tsv` (and `top_ranked/{split}.jsonl`), so
every later run is offline and reads exactly those files.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.extras import require
from scidocs_eval.formats.retrieval import Document, write_beir
from scidocs_eval.formats.safe_output import owned_folder

CONFIGS = {"corpus": ("corpus",), "queries": ("queries", "query"), "qrels": ("default", "qrels"),
           "top_ranked": ("top_ranked",)}


def _load_config(hub_id: str, revision: str, configs: list[str], role: str, split: str) -> Any:
    datasets = require("datasets", "downloading MTEB's datasets from the Hugging Face hub")
    get_dataset_split_names, load_dataset = datasets.get_dataset_split_names, datasets.load_dataset

    config = next((name for name in CONFIGS[role] if name in configs), None)
    if config is None:
        raise ScidocsEvalError(f"{hub_id}@{revision}: no {' or '.join(CONFIGS[role])} config (it has "
                               f"{', '.join(configs)})")
    splits = get_dataset_split_names(hub_id, config, revision=revision)
    chosen = split if split in splits else splits[0] if len(splits) == 1 else None
    if chosen is None:
        raise ScidocsEvalError(f"{hub_id}@{revision}: config {config} has no split {split!r} ({', '.join(splits)})")
    return load_dataset(hub_id, config, split=chosen, revision=revision)


def fetch_hub_dataset(hub_id: str, revision: str, split: str, dest: str | os.PathLike[str],
                      reranking: bool = False) -> Path:
    """Download one split of the hub dataset `hub_id` at `revision` into `dest` in the BEIR layout."""
    get_dataset_config_names = require("datasets", "downloading MTEB's datasets from the Hugging Face hub"
                                       ).get_dataset_config_names
    configs = list(get_dataset_config_names(hub_id, revision=revision))
    corpus = _load_config(hub_id, revision, configs, "corpus", split)
    queries = _load_config(hub_id, revision, configs, "queries", split)
    qrels = _load_config(hub_id, revision, configs, "qrels", split)
    id_column = "_id" if "_id" in corpus.column_names else "id"
    documents = [Document(str(row[id_column]), row.get("title") or "", row["text"]) for row in corpus]
    query_id = "_id" if "_id" in queries.column_names else "id"
    query_texts = {str(row[query_id]): row["text"] for row in queries}
    judgements: dict[str, dict[str, int]] = {}
    for row in qrels:
        judgements.setdefault(str(row["query-id"]), {})[str(row["corpus-id"])] = int(row["score"])
    top_ranked = None
    if reranking:
        lists = _load_config(hub_id, revision, configs, "top_ranked", split)
        top_ranked = {split: {str(row["query-id"]): [str(c) for c in row["corpus-ids"]] for row in lists}}
    with owned_folder(dest, "scidocs-eval data download") as staging:
        write_beir(staging, documents, query_texts, {split: judgements}, top_ranked)
    return Path(dest)
