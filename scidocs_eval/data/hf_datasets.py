"""Fetch an MTEB dataset from the Hugging Face hub (by id and pinned revision): retrieval sets into the BEIR layout,
clustering and classification sets as their rows (`fetch_rows`), LitSearch as MTEB builds it (`fetch_litsearch`);
`fetch_task_dataset` picks by the task's `dataset["loader"]`.

`data download --benchmark mteb-sci` (or `mteb-scidocs`) calls this once per task: the `datasets` library loads the
configs MTEB loads (`corpus`, `queries` or `query`, `default` or `qrels`, and `top_ranked` for reranking), each at
the revision MTEB pins and on the split MTEB reads (the evaluation split, or a config's only split), and the
dataset is written as `corpus.jsonl`, `queries.jsonl`, `qrels/{split}.tsv` (and `top_ranked/{split}.jsonl`), so
every later run is offline and reads exactly those files. A hub out of reach is one line within seconds
(`check_hub`); a missing repository, revision, config, split or column is one line naming the dataset and
revision; a task folder the tool did not write is refused before anything is downloaded (`check_destination`).
`tests/test_hub_download.py` runs all of it against a hub served on 127.0.0.1 (`tests/fake_hub.py`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from scidocs_eval.data.hub import HUB_PROBE_SECONDS, env_flag, hub_reachable
from scidocs_eval.data.sources import DownloadOptions, DownloadSource, TaskDataset
from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.extras import require
from scidocs_eval.formats.hf_rows import write_rows
from scidocs_eval.formats.retrieval import Document, write_beir
from scidocs_eval.formats.safe_output import open_owned_folder, owned_folder

COMMAND = "scidocs-eval data download"
OPTION = "--out-dir"
NEEDED_BY = "downloading MTEB's datasets from the Hugging Face hub"
CONFIGS = {"corpus": ("corpus",), "queries": ("queries", "query"), "qrels": ("default", "qrels"),
           "top_ranked": ("top_ranked",)}


def _datasets() -> Any:
    return require("datasets", NEEDED_BY)


def _offline() -> bool:
    return bool(_datasets().config.HF_HUB_OFFLINE) or env_flag("HF_HUB_OFFLINE") or env_flag("HF_DATASETS_OFFLINE")


def check_hub() -> None:
    """One line, in seconds, when the hub cannot be reached (the libraries would retry for about a minute). With
    HF_HUB_OFFLINE set nothing is tried: `datasets` reads what it downloaded before from its cache."""
    endpoint = _datasets().config.HF_ENDPOINT
    if not _offline() and not hub_reachable(endpoint):
        raise ScidocsEvalError(
            f"the Hugging Face hub ({endpoint}) cannot be reached (no connection within {HUB_PROBE_SECONDS:g} s): "
            "`data download` needs it once; run it where there is network (or set HF_ENDPOINT to a mirror) and "
            f"copy the {OPTION} folder here, or set HF_HUB_OFFLINE=1 to read datasets downloaded before from the "
            "datasets cache")


def check_destination(dest: str | os.PathLike[str]) -> None:
    """Refuse now, before anything is downloaded, a folder that a fetch into `dest` would refuse to write (a
    folder of yours, a file of the tool's that you changed)."""
    with open_owned_folder(dest, COMMAND, OPTION) as owned:
        owned.refuse_in_the_way(list(owned.files))


@contextmanager
def _hub_errors(hub_id: str, revision: str) -> Iterator[None]:
    """The libraries' errors for a missing repository, revision or file, a hub out of reach (OSError: their
    connection, timeout and not-found errors) or a full disk under their cache, as one line."""
    datasets, hub_errors = _datasets(), require("huggingface_hub.errors", NEEDED_BY)
    try:
        yield
    except (datasets.exceptions.DatasetsError, hub_errors.HfHubHTTPError, OSError) as error:
        why = str(error).strip().splitlines()[0].rstrip(".") if str(error).strip() else type(error).__name__
        if _offline():
            why += (f" (HF_HUB_OFFLINE is set and the datasets cache, {datasets.config.HF_DATASETS_CACHE}, does not "
                    "hold it: unset HF_HUB_OFFLINE where the hub can be reached)")
        raise ScidocsEvalError(f"{hub_id}@{revision}: {why}; nothing was written for it") from None


def _split_names(hub_id: str, revision: str, config: str | None) -> list[str]:
    """The splits `config` declares, read from the repository's card and file list (no data is downloaded)."""
    builder = _datasets().load_dataset_builder(hub_id, config, revision=revision)
    if builder.config.data_files:
        return list(builder.config.data_files)
    return list(_datasets().get_dataset_split_names(hub_id, config, revision=revision))


def _load_config(hub_id: str, revision: str, configs: list[str], role: str, split: str, subset: str = "") -> Any:
    names = (f"{subset}-{role}",) if subset else CONFIGS[role]
    config = next((name for name in names if name in configs), None)
    if subset and role == "queries" and "query" in configs:  # MTEB reads "query" first whatever the subset
        config = "query"
    if config is None:
        raise ScidocsEvalError(f"{hub_id}@{revision}: no {' or '.join(names)} config (it has "
                               f"{', '.join(configs)})")
    with _hub_errors(hub_id, revision):
        splits = _split_names(hub_id, revision, config)
    chosen = split if split in splits else splits[0] if len(splits) == 1 else None
    if chosen is None:
        raise ScidocsEvalError(f"{hub_id}@{revision}: config {config} has no {split} split (it has "
                               f"{', '.join(splits)}); nothing was written for it")
    return _load(hub_id, revision, config, chosen)


def _load(hub_id: str, revision: str, config: str | None, split: str) -> Any:
    with _hub_errors(hub_id, revision):
        return _datasets().load_dataset(hub_id, config, split=split, revision=revision)


def _check_columns(hub_id: str, revision: str, rows: Any, what: str, *needed: str | tuple[str, ...]) -> list[str]:
    """The column of `rows` chosen for each of `needed` (a tuple: the first of its names present); a missing one is
    an error naming the dataset, revision and config."""
    chosen = []
    for names in needed:
        options = (names,) if isinstance(names, str) else names
        found = next((name for name in options if name in rows.column_names), None)
        if found is None:
            raise ScidocsEvalError(f"{hub_id}@{revision}: the {what} rows have no {' or '.join(options)} column "
                                   f"(they have {', '.join(rows.column_names)})")
        chosen.append(found)
    return chosen


def fetch_hub_dataset(hub_id: str, revision: str, split: str, dest: str | os.PathLike[str],
                      reranking: bool = False, subset: str = "") -> Path:
    """Download one split of the hub dataset `hub_id` at `revision` into `dest` in the BEIR layout (`subset`: the
    prefix of its configs, `{subset}-corpus`, ..., as MTEB reads a task's named subset)."""
    with _hub_errors(hub_id, revision):
        configs = list(_datasets().get_dataset_config_names(hub_id, revision=revision))
    corpus = _load_config(hub_id, revision, configs, "corpus", split, subset)
    queries = _load_config(hub_id, revision, configs, "queries", split, subset)
    qrels = _load_config(hub_id, revision, configs, "qrels", split, subset)
    id_column, _ = _check_columns(hub_id, revision, corpus, "corpus", ("_id", "id"), "text")
    documents = [Document(str(row[id_column]), row.get("title") or "", row["text"]) for row in corpus]
    query_id, _ = _check_columns(hub_id, revision, queries, "queries", ("_id", "id"), "text")
    query_texts = {str(row[query_id]): row["text"] for row in queries}
    _check_columns(hub_id, revision, qrels, "qrels", "query-id", "corpus-id", "score")
    judgements: dict[str, dict[str, int]] = {}
    for row in qrels:
        judgements.setdefault(str(row["query-id"]), {})[str(row["corpus-id"])] = int(row["score"])
    top_ranked = None
    if reranking:
        lists = _load_config(hub_id, revision, configs, "top_ranked", split, subset)
        _check_columns(hub_id, revision, lists, "top_ranked", "query-id", "corpus-ids")
        top_ranked = {split: {str(row["query-id"]): [str(c) for c in row["corpus-ids"]] for row in lists}}
    with owned_folder(dest, COMMAND, option=OPTION) as staging:
        write_beir(staging, documents, query_texts, {split: judgements}, top_ranked)
    return Path(dest)


def fetch_litsearch(hub_id: str, revision: str, dest: str | os.PathLike[str]) -> Path:
    """LitSearch as MTEB's `LitSearchRetrieval.load_data` builds it: queries `q{n}` (config "query", split "full",
    in order), documents `d{corpusid}` (config "corpus_clean": title, abstract), each query's cited ids graded 1, 2,
    ... in their order; into `dest` in the BEIR layout (split "test"). MTEB loads the hub's newest files; this loads
    the revision it names."""
    queries = _load(hub_id, revision, "query", "full")
    corpus = _load(hub_id, revision, "corpus_clean", "full")
    _check_columns(hub_id, revision, queries, "query", "query", "corpusids")
    _check_columns(hub_id, revision, corpus, "corpus_clean", "corpusid", "title", "abstract")
    documents = [Document(f"d{row['corpusid']}", row["title"] or "", row["abstract"] or "") for row in corpus]
    texts = {f"q{n}": row["query"] for n, row in enumerate(queries, start=1)}
    judgements = {f"q{n}": {f"d{i}": grade for grade, i in enumerate(row["corpusids"], start=1)}
                  for n, row in enumerate(queries, start=1)}
    with owned_folder(dest, COMMAND, option=OPTION) as staging:
        write_beir(staging, documents, texts, {"test": judgements})
    return Path(dest)


def fetch_rows(hub_id: str, revision: str, splits: tuple[str, ...], dest: str | os.PathLike[str]) -> Path:
    """Each split of the hub dataset `hub_id` at `revision` as its rows, in order (`formats.hf_rows`), into `dest`:
    MTEB's clustering and classification sets."""
    with _hub_errors(hub_id, revision):
        declared = _split_names(hub_id, revision, None)
    missing = [split for split in splits if split not in declared]
    if missing:
        raise ScidocsEvalError(f"{hub_id}@{revision}: no {' or '.join(missing)} split (it has {', '.join(declared)}); "
                               "nothing was written for it")
    loaded = {split: _load(hub_id, revision, None, split) for split in splits}
    with owned_folder(dest, COMMAND, option=OPTION) as staging:
        for split, rows in loaded.items():
            write_rows(staging, split, rows)
    return Path(dest)


def _beir_loader(dataset: Mapping[str, str], dest: str | os.PathLike[str], reranking: bool) -> Path:
    return fetch_hub_dataset(dataset["path"], dataset["revision"], dataset.get("split", "test"), dest, reranking,
                             dataset.get("subset", ""))


def _rows_loader(dataset: Mapping[str, str], dest: str | os.PathLike[str], reranking: bool) -> Path:
    splits = tuple(dataset.get("splits", dataset.get("split", "test")).split(","))
    return fetch_rows(dataset["path"], dataset["revision"], splits, dest)


def _litsearch_loader(dataset: Mapping[str, str], dest: str | os.PathLike[str], reranking: bool) -> Path:
    return fetch_litsearch(dataset["path"], dataset["revision"], dest)


Loader = Callable[[Mapping[str, str], "str | os.PathLike[str]", bool], Path]
LOADERS: dict[str, Loader] = {"beir": _beir_loader, "rows": _rows_loader, "litsearch": _litsearch_loader}
"""`TaskSpec.dataset["loader"]` -> what writes that hub dataset into a task's folder (dataset, folder, whether its
candidate lists are fetched too); a plugin whose dataset needs its own reading adds one (`register_loader`)."""


def register_loader(name: str, loader: Loader) -> Loader:
    """Add a hub-dataset loader under `name` (a taken name is an error)."""
    if name in LOADERS and LOADERS[name] is not loader:
        raise ValueError(f"hub-dataset loader {name!r} is already registered")
    LOADERS[name] = loader
    return loader


def fetch_task_dataset(dataset: Mapping[str, str], dest: str | os.PathLike[str], files: Sequence[str] = ()) -> Path:
    """A task's hub dataset (`TaskSpec.dataset`: path, revision, split, and `loader`: a key of `LOADERS`, "beir" by
    default, `subset`, `splits`) into `dest`; `files`: the files the task reads (`Task.required_files`), whose
    BEIR layout says whether its candidate lists (top_ranked) are fetched too."""
    name = dataset.get("loader", "beir")
    if name not in LOADERS:
        raise ScidocsEvalError(f"{dataset['path']}: no hub-dataset loader {name!r} (loaders: {', '.join(LOADERS)})")
    check_hub()
    return LOADERS[name](dataset, dest, any("/top_ranked/" in f for f in files))


class HubDatasets(DownloadSource):
    """Each chosen task's own hub dataset (`TaskSpec.dataset`) at its pinned revision, into DEST/TASK."""

    per_task = True

    def fetch(self, dest: Path, datasets: Sequence[TaskDataset], options: DownloadOptions) -> list[str]:
        check_hub()
        for chosen in datasets:  # every folder checked before the first download
            check_destination(dest / chosen.task)
        lines = []
        for chosen in datasets:
            folder = fetch_task_dataset(chosen.dataset, dest / chosen.task, chosen.files)
            lines.append(f"{chosen.dataset['path']}@{chosen.dataset['revision'][:10]} -> {folder}")
        return lines
