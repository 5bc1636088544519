"""`data download --benchmark mteb-sci` against a Hugging Face hub on 127.0.0.1 (`tests/fake_hub.py`): the real
`datasets` and `huggingface_hub` code paths (HF_ENDPOINT pointed at it), the revision MTEB pins while the hub's
main branch has moved on, the split a task reads among a config's splits, the layout the tasks read, and `run` on
what was written. A hub out of reach, HF_HUB_OFFLINE, a revision the hub lacks and a folder the tool did not write
are each one line, in seconds, with nothing written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from scidocs_eval.cli.main import main
from scidocs_eval.evaluation.task import TASKS
from tests.builders import build_retrieval_dataset, write_classification_copy, write_clustering_copy
from tests.fake_hub import FakeHub, parquet, readme

pytest.importorskip("datasets", reason="the [mteb] extra (datasets) is not installed")

TASKS_SERVED = ("scifact", "peerqa", "litsearch", "biorxiv-clustering-p2p", "medrxiv-clustering-p2p",
                "arxiv-classification")
"""A retrieval set, a reranking set read as a named subset, LitSearch (built as MTEB builds it), a clustering set
with a document per row and one with lists of documents per row, and ArxivClassification.v2."""


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _tsv(path: Path) -> list[dict]:
    lines = path.read_text(encoding="utf-8").splitlines()[1:]
    return [{"query-id": q, "corpus-id": d, "score": int(s)} for q, d, s in (line.split("\t") for line in lines)]


def _newer(rows: list[dict]) -> list[dict]:
    """The same rows as a later commit on main might hold them: every text changed."""
    return [{k: v + " (newer)" if isinstance(v, str) and k in ("text", "title", "sentences", "query", "abstract")
             else v for k, v in row.items()} for row in rows]


def _publish(hub: FakeHub, hub_id: str, revision: str, configs: dict[str, dict[str, list[dict]]],
             newer: bool = True) -> None:
    """Commit `configs` ({config: {split: rows}}) as Parquet files at `revision`, then (`newer`) a newer main
    commit."""
    for sha, change in ((revision, lambda rows: rows), (None, _newer))[:2 if newer else 1]:
        files = {f"{config}/{split}-00000-of-00001.parquet": parquet(change(rows))
                 for config, splits in configs.items() for split, rows in splits.items()}
        files["README.md"] = readme({config: {split: f"{config}/{split}-*.parquet" for split in splits}
                                     for config, splits in configs.items()})
        hub.repo(hub_id).commit(files, sha)


def _publish_beir(hub: FakeHub, folder: Path, dataset: dict, newer: bool = True) -> None:
    """A BEIR-layout folder as MTEB's hub repositories hold it: one config per role (named after the task's subset
    where it has one); the judgements' config also has a train split the task must not read."""
    split, prefix = dataset["split"], f"{dataset['subset']}-" if dataset.get("subset") else ""
    qrels = _tsv(folder / "qrels" / f"{split}.tsv")
    configs = {f"{prefix}corpus": {"corpus": _jsonl(folder / "corpus.jsonl")},
               f"{prefix}queries": {"queries": _jsonl(folder / "queries.jsonl")},
               f"{prefix}qrels" if prefix else "default": {"train": qrels[::2][:3], split: qrels}}
    if (folder / "top_ranked").exists():
        configs[f"{prefix}top_ranked"] = {split: _jsonl(folder / "top_ranked" / f"{split}.jsonl")}
    _publish(hub, dataset["path"], dataset["revision"], configs, newer)


def _litsearch_rows(count: int = 30) -> dict[str, dict[str, list[dict]]]:
    corpus = [{"corpusid": 1000 + i, "title": f"paper {i}" if i % 5 else None,
               "abstract": f"abstract of paper {i}" if i % 7 else None} for i in range(count)]
    queries = [{"query": f"which papers study topic {n}?", "corpusids": [1000 + (3 * n + j) % count for j in range(3)]}
               for n in range(8)]
    return {"query": {"full": queries}, "corpus_clean": {"full": corpus}}


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeHub, Path]]:
    """The hub serving `TASKS_SERVED` and a folder with the same datasets written as the tasks read them."""
    local = tmp_path_factory.mktemp("local")
    with FakeHub() as served:
        for offset, name in enumerate(TASKS_SERVED):
            dataset = TASKS[name].spec.dataset
            if name == "litsearch":
                _publish(served, dataset["path"], dataset["revision"], _litsearch_rows())
                continue
            if TASKS[name].spec.family in ("retrieval", "reranking"):
                build_retrieval_dataset(local / name, documents=60, queries=6, duplicates=5, seed=offset,
                                        candidates=10 if TASKS[name].spec.family == "reranking" else None)
                _publish_beir(served, local / name, dataset)
                continue
            if name == "arxiv-classification":
                write_classification_copy(local, name, train=120, test=40, seed=offset)
            else:
                write_clustering_copy(local, name, 300, seed=offset)
            names = dataset.get("splits", dataset["split"]).split(",")
            splits = {split: _jsonl(local / name / f"{split}.jsonl") for split in names}
            _publish(served, dataset["path"], dataset["revision"], {"data": splits})
        yield served, local


def _environment(endpoint: str, home: Path, **extra: str) -> dict[str, str]:
    environment = {k: v for k, v in os.environ.items() if not k.upper().endswith("_PROXY")
                   and k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_HUB_CACHE", "HF_DATASETS_CACHE")}
    return {**environment, "HF_ENDPOINT": endpoint, "HF_HOME": str(home), **extra}


def _download(environment: dict[str, str], out: Path, tasks: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "scidocs_eval.cli", "data", "download", "--benchmark", "mteb-sci",
                           "--tasks", tasks, "--out-dir", str(out), "--quiet"], capture_output=True, text=True,
                          env=environment, cwd=cwd, timeout=600)


@pytest.fixture(scope="module")
def downloaded(hub: tuple[FakeHub, Path], tmp_path_factory: pytest.TempPathFactory
               ) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """`data download --benchmark mteb-sci --tasks (every task served) --out-dir mteb-data` run in a new folder (the
    one returned) with an empty Hugging Face cache there (`hf-home`)."""
    served, _ = hub
    folder = tmp_path_factory.mktemp("downloaded")
    done = _download(_environment(served.endpoint, folder / "hf-home"), Path("mteb-data"), ",".join(TASKS_SERVED),
                     folder)
    return folder, done


def test_download_writes_the_pinned_revision_in_the_tasks_layout_and_run_scores_it(
        hub: tuple[FakeHub, Path], downloaded: tuple[Path, subprocess.CompletedProcess[str]],
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    served, local = hub
    folder, done = downloaded
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == ""  # --quiet: no library's bars, no warnings
    data = folder / "mteb-data"
    for name in TASKS_SERVED:
        dataset = TASKS[name].spec.dataset
        assert f"{dataset['path']}@{dataset['revision'][:10]} -> {Path('mteb-data', name)}" in done.stdout
        written = sorted(p.relative_to(data / name).as_posix() for p in (data / name).rglob("*") if p.is_file())
        assert ".scidocs-eval-files.json" in written  # the tool's files: a later download may replace them
        if name != "litsearch":  # every file byte for byte as the tasks' synthetic copies: pinned revision, split
            expected = sorted(p.relative_to(local / name).as_posix() for p in (local / name).rglob("*")
                              if p.is_file())
            assert [w for w in written if w != ".scidocs-eval-files.json"] == expected
            for relative in expected:
                assert (data / name / relative).read_bytes() == (local / name / relative).read_bytes(), relative
    served_at = {request.split()[1] for request in served.requests}
    assert not any("/resolve/main/" in path for path in served_at)  # never the newer main branch

    # LitSearch as MTEB's load_data builds it: q1, q2, ... in order, d{corpusid}, cited papers graded 1, 2, 3
    litsearch = data / "litsearch"
    queries = _jsonl(litsearch / "queries.jsonl")
    assert [q["_id"] for q in queries] == [f"q{n}" for n in range(1, 9)]
    assert queries[0]["text"] == "which papers study topic 0?"
    corpus = {d["_id"]: d for d in _jsonl(litsearch / "corpus.jsonl")}
    assert corpus["d1000"] == {"_id": "d1000", "title": "", "text": ""}  # no title, no abstract: empty, not "None"
    assert corpus["d1001"] == {"_id": "d1001", "title": "paper 1", "text": "abstract of paper 1"}
    assert _tsv(litsearch / "qrels" / "test.tsv")[:3] == [
        {"query-id": "q1", "corpus-id": f"d{1000 + j}", "score": j + 1} for j in range(3)]

    # the printed next command runs as printed from the same folder; `run` on what was written gives the numbers
    # the synthetic copies themselves give
    tasks = ",".join(TASKS_SERVED)
    assert "its embeddings groups: " in done.stdout and "score it" not in done.stdout
    hinted = next(line for line in done.stdout.splitlines() if line.startswith("Next:")).split("`")[1].split()[1:]
    assert hinted == ["baseline", "random", "--data", "mteb-data", "--benchmark", "mteb-sci", "--tasks", tasks]
    monkeypatch.chdir(folder)
    assert main([*hinted, "--quiet"]) == 0
    scored = [name for name in TASKS_SERVED if name != "litsearch"]
    assert main(["baseline", "random", "--data", str(local), "--tasks", ",".join(scored), "--out-dir", "copies",
                 "--quiet"]) == 0
    groups = [group for name in scored for group in TASKS[name].groups()]
    assert main(["run", "--data", "mteb-data", "--tasks", ",".join(scored), "-o", "run.json", "--quiet",
                 *[f"--embeddings={group}=scidocs-results/random-{group}.jsonl" for group in groups]]) == 0
    capsys.readouterr()
    results = {out: json.loads((folder / out / "random.results.json").read_text(encoding="utf-8"))
               for out in ("scidocs-results", "copies")}
    run = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    assert "litsearch" in results["scidocs-results"]["tasks"]
    for name in scored:
        main_score = TASKS[name].spec.main_score
        assert results["scidocs-results"]["tasks"][name]["metrics"] == results["copies"]["tasks"][name]["metrics"]
        assert run["tasks"][name]["metrics"][main_score] == results["copies"]["tasks"][name]["metrics"][main_score]


@pytest.mark.parametrize("pinned", [False, True], ids=["revision missing", "split missing"])
def test_a_revision_or_split_the_hub_lacks_is_one_line_and_nothing_is_written(pinned: bool, tmp_path: Path) -> None:
    """ArxivClassification.v2 reads train and test: the hub has only test, at another revision or the pinned one."""
    revision = TASKS["arxiv-classification"].spec.dataset["revision"]
    with FakeHub() as served:
        served.repo("mteb/arxiv").commit({"README.md": readme({"data": {"test": "data/*.parquet"}}),
                                          "data/test-00000-of-00001.parquet": parquet([{"text": "a", "label": 0}])},
                                         revision if pinned else None)
        done = _download(_environment(served.endpoint, tmp_path / "hf-home"), tmp_path / "out",
                         "arxiv-classification", tmp_path)
    assert done.returncode == 2
    why = "no train split (it has test)" if pinned else \
        f"Revision '{revision}' doesn't exist for dataset 'mteb/arxiv' on the Hub"
    assert done.stderr.strip().splitlines() == [
        f"scidocs-eval: error: mteb/arxiv@{revision}: {why}; nothing was written for it"]
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_offline_reads_the_datasets_cache_and_names_what_it_lacks(
        hub: tuple[FakeHub, Path], downloaded: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path) -> None:
    _, local = hub
    folder, _ = downloaded
    offline = _environment("http://127.0.0.1:9", folder / "hf-home", HF_HUB_OFFLINE="1")
    again = _download(offline, tmp_path / "again", "biorxiv-clustering-p2p", tmp_path)
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "again" / "biorxiv-clustering-p2p" / "test.jsonl").read_bytes() == \
        (local / "biorxiv-clustering-p2p" / "test.jsonl").read_bytes()
    started = time.perf_counter()
    missing = _download({**offline, "HF_HOME": str(tmp_path / "empty-home")}, tmp_path / "missing",
                        "arxiv-classification", tmp_path)
    assert time.perf_counter() - started < 30  # a new Python process with datasets imported; no network wait
    lines = missing.stderr.strip().splitlines()
    assert missing.returncode == 2 and len(lines) == 1, missing.stderr
    assert lines[0].startswith("scidocs-eval: error: mteb/arxiv@202e10e9a5d37a5068397b48184d0728346a7b4a: ")
    assert "HF_HUB_OFFLINE is set and the datasets cache" in lines[0]
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("endpoint", ["http://127.0.0.1:9", "https://hub.invalid"])
def test_a_hub_out_of_reach_is_one_line_within_5_seconds(endpoint: str, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Refused at once (the discard port), or a name that does not resolve (no network: no DNS)."""
    import datasets

    monkeypatch.setattr(datasets.config, "HF_ENDPOINT", endpoint)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    for variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HTTPS_PROXY", "https_proxy", "ALL_PROXY"):
        monkeypatch.delenv(variable, raising=False)
    started = time.perf_counter()
    status = main(["data", "download", "--benchmark", "mteb-sci", "--out-dir", str(tmp_path / "out"), "--quiet"])
    assert time.perf_counter() - started < 5
    lines = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(lines) == 1
    assert f"the Hugging Face hub ({endpoint}) cannot be reached" in lines[0] and "HF_HUB_OFFLINE=1" in lines[0]
    assert not (tmp_path / "out").exists()


def test_a_folder_the_tool_did_not_write_is_refused_before_any_download(
        hub: tuple[FakeHub, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import datasets

    served, _ = hub
    monkeypatch.setattr(datasets.config, "HF_ENDPOINT", served.endpoint)  # the probe reaches it; nothing is loaded
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    (tmp_path / "out" / "arxiv-classification").mkdir(parents=True)
    notes = tmp_path / "out" / "arxiv-classification" / "notes.txt"
    notes.write_text("mine", encoding="utf-8")
    before = len(served.requests)
    status = main(["data", "download", "--benchmark", "mteb-sci", "--tasks", "scifact,arxiv-classification",
                   "--out-dir", str(tmp_path / "out"), "--quiet"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(lines) == 1
    assert "arxiv-classification is not empty and was not written by scidocs-eval data download" in lines[0]
    assert "--overwrite" in lines[0]
    assert len(served.requests) == before and not (tmp_path / "out" / "scifact").exists()
    assert notes.read_text(encoding="utf-8") == "mine"


def test_tasks_of_another_benchmark_or_none_with_a_dataset_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "download", "--benchmark", "mteb-sci", "--tasks", "mag"]) == 2
    assert "task(s) mag are not in benchmark 'mteb-sci'" in capsys.readouterr().err
    assert main(["data", "download", "--tasks", "mag"]) == 2
    assert "--tasks picks among the hub datasets" in capsys.readouterr().err


MTEB_DUMP = """
import json, sys
import mteb

dumped = {}
for name in sys.argv[1:]:
    task = mteb.get_task(name)
    task.load_data()
    if task.dataset:
        (subset, splits), = task.dataset.items()
        data = splits["test"]
    else:  # LitSearch's own load_data fills the older attributes
        data = {"corpus": [{"id": i, **d} for i, d in task.corpus["test"].items()],
                "queries": [{"id": i, "text": t} for i, t in task.queries["test"].items()],
                "relevant_docs": task.relevant_docs["test"], "top_ranked": None}
    dumped[name] = {"corpus": {row["id"]: [row.get("title") or "", row["text"] or ""] for row in data["corpus"]},
                    "queries": {row["id"]: row["text"] for row in data["queries"]},
                    "qrels": data["relevant_docs"], "top_ranked": data["top_ranked"]}
print(json.dumps(dumped))
"""


@pytest.mark.slow
def test_each_retrieval_download_holds_what_mtebs_own_loader_reads_from_the_same_hub(tmp_path: Path) -> None:
    """MTEB's task classes load SciFact, PeerQA (its subset, with candidates) and LitSearch (built in its
    `load_data`) from the same hub: the corpus, queries, judgements and candidates are those of our download.
    (MTEB loads LitSearch's newest files, so here the pinned commit is the newest.)"""
    pytest.importorskip("mteb", reason="mteb is not installed (pip install -c constraints.txt -e '.[mteb]')")
    local = tmp_path / "local"
    with FakeHub() as served:
        for offset, name in enumerate(("scifact", "peerqa")):
            build_retrieval_dataset(local / name, documents=60, queries=6, duplicates=5, seed=offset,
                                    candidates=10 if name == "peerqa" else None)
            _publish_beir(served, local / name, TASKS[name].spec.dataset, newer=False)
        litsearch = TASKS["litsearch"].spec.dataset
        _publish(served, litsearch["path"], litsearch["revision"], _litsearch_rows(), newer=False)
        environment = _environment(served.endpoint, tmp_path / "hf-home")
        assert _download(environment, tmp_path / "ours", "scifact,peerqa,litsearch", tmp_path).returncode == 0
        mteb_names = {"scifact": "SciFact", "peerqa": "PeerQA", "litsearch": "LitSearchRetrieval"}
        loaded = subprocess.run([sys.executable, "-c", MTEB_DUMP, *mteb_names.values()], capture_output=True,
                                text=True, env=environment, timeout=600)
    assert loaded.returncode == 0, loaded.stderr
    theirs = json.loads(loaded.stdout.splitlines()[-1])
    for name, mteb_name in mteb_names.items():
        folder = tmp_path / "ours" / name
        qrels: dict[str, dict[str, int]] = {}
        for row in _tsv(folder / "qrels" / "test.tsv"):
            qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = row["score"]
        candidates = folder / "top_ranked" / "test.jsonl"
        ours = {"corpus": {row["_id"]: [row["title"], row["text"]] for row in _jsonl(folder / "corpus.jsonl")},
                "queries": {row["_id"]: row["text"] for row in _jsonl(folder / "queries.jsonl")}, "qrels": qrels,
                "top_ranked": {row["query-id"]: row["corpus-ids"] for row in _jsonl(candidates)}
                if candidates.exists() else None}
        assert ours == theirs[mteb_name], name
