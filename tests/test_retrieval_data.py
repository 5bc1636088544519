"""Retrieval datasets on disk: the BEIR and HF parquet layouts read alike, `data verify` checks both, errors name
file and line, and `data build --format beir` turns a suite's ranking task into a full-corpus retrieval task."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from scidocs_eval.cli import main
from scidocs_eval.errors import InputError
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.evaluation.verify import verify_suite
from scidocs_eval.formats.retrieval import read_qrels_tsv, read_retrieval_data
from tests.builders import build_retrieval_dataset, write_vectors


def to_parquet_layout(beir: Path, out: Path, split: str = "test") -> None:
    """The dataset at `beir` as an MTEB hub repository stores it: one folder of parquet files per config."""
    data = read_retrieval_data(beir, split, reranking=(beir / "top_ranked").is_dir())
    tables = {
        "corpus/corpus-00000-of-00001.parquet": {"_id": list(data.corpus), "title": [d.title for d in
                                                                                     data.corpus.values()],
                                                  "text": [d.text for d in data.corpus.values()]},
        "queries/queries-00000-of-00001.parquet": {"_id": list(data.queries), "text": list(data.queries.values())},
        f"default/{split}-00000-of-00001.parquet": {
            "query-id": [q for q, g in data.qrels.items() for _ in g],
            "corpus-id": [d for g in data.qrels.values() for d in g],
            "score": [s for g in data.qrels.values() for s in g.values()]},
    }
    if data.top_ranked is not None:
        tables[f"top_ranked/{split}-00000-of-00001.parquet"] = {"query-id": list(data.top_ranked),
                                                                "corpus-ids": list(data.top_ranked.values())}
    for relative, columns in tables.items():
        (out / relative).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table(columns), out / relative)


def test_parquet_layout_scores_as_the_beir_layout(tmp_path: Path) -> None:
    built = build_retrieval_dataset(tmp_path / "beir" / "scidocs-rr", documents=200, queries=20, candidates=15)
    to_parquet_layout(tmp_path / "beir" / "scidocs-rr", tmp_path / "hf" / "scidocs-rr")
    embeddings = {"queries": write_vectors(tmp_path / "q.jsonl", built["queries"]),
                  "corpus": write_vectors(tmp_path / "c.jsonl", built["corpus"])}
    beir = evaluate(embeddings, RunConfig(data=tmp_path / "beir", tasks=["scidocs-rr"], cache=False, progress=False))
    hf = evaluate(embeddings, RunConfig(data=tmp_path / "hf", tasks=["scidocs-rr"], cache=False, progress=False))
    assert hf.tasks["scidocs-rr"].details["layout"] == "hf-parquet"
    assert hf.tasks["scidocs-rr"].details["mteb_scores"] == beir.tasks["scidocs-rr"].details["mteb_scores"]
    assert any(name.endswith(".parquet") for name in hf.fingerprints["data"]) or hf.fingerprints["data"]


@pytest.mark.parametrize("layout", ["beir", "hf"])
def test_data_verify_checks_both_layouts(tmp_path: Path, layout: str, capsys: Any) -> None:
    build_retrieval_dataset(tmp_path / "beir" / "scidocs-retrieval", documents=50, queries=5)
    if layout == "hf":
        to_parquet_layout(tmp_path / "beir" / "scidocs-retrieval", tmp_path / "hf" / "scidocs-retrieval")
    suite = tmp_path / layout
    report = verify_suite(suite)
    assert report.complete == ["scidocs-retrieval"] and not report.errors
    assert report.counts["scidocs-retrieval"]["test"]["documents"] == 50
    assert main(["data", "verify", str(suite / "scidocs-retrieval")]) == 0  # one dataset on its own
    assert "usable" in capsys.readouterr().out


def test_a_broken_line_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "scidocs-retrieval"
    build_retrieval_dataset(folder, documents=30, queries=3)
    with open(folder / "corpus.jsonl", "a") as handle:
        handle.write('{"_id": "x", "text": 5}\n')
    with pytest.raises(InputError, match=r"corpus.jsonl:31: field 'text' is integer 5, expected a string"):
        read_retrieval_data(folder)
    report = verify_suite(tmp_path)
    assert [p.where for p in report.errors] == ["scidocs-retrieval/corpus.jsonl:31"]
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nquery0000\tdoc00001\thigh\n")
    with pytest.raises(InputError, match=r"test.tsv:2: field 'score' is string 'high' \(not an integer\)"):
        read_qrels_tsv(folder / "qrels" / "test.tsv")
    (folder / "qrels" / "test.tsv").write_bytes(b"query0000\tdoc00001\t1\nquery0001\tdoc\xff\t1\n")
    with pytest.raises(InputError, match=r"test.tsv:2: byte 0xff at column 14 is not UTF-8"):
        read_qrels_tsv(folder / "qrels" / "test.tsv")


def test_dangling_judgements_are_warnings(tmp_path: Path) -> None:
    folder = tmp_path / "scidocs-retrieval"
    build_retrieval_dataset(folder, documents=30, queries=3)
    with open(folder / "qrels" / "test.tsv", "a") as handle:
        handle.write("query0001\tno-such-doc\t1\nno-such-query\tdoc00001\t1\n")
    report = verify_suite(tmp_path)
    assert not report.errors and report.complete == ["scidocs-retrieval"]
    assert sorted(p.message.split(" ")[1] for p in report.problems) == ["judged", "judged"]


def test_data_build_beir_makes_a_runnable_full_corpus_suite(tiny_suite: Any, tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "full"
    assert main(["data", "build", "--format", "beir", "--data", str(tiny_suite.root), "--out", str(out)]) == 0
    commands = [line for line in capsys.readouterr().out.splitlines() if "scidocs-eval " in line]
    assert len(commands) == 1 and commands[0].startswith("Next: ")  # one hint line, no placeholder command beside
    papers = tiny_suite.papers()
    cite = read_retrieval_data(out / "cite-full", "test")
    assert len(cite.corpus) == sum(p.has_text for p in papers)
    assert set(cite.qrels) == set(tiny_suite.qrels("cite", "test").relevance)
    assert cite.queries == {q: next(p.title for p in papers if p.paper_id == q) for q in cite.queries}
    rng = np.random.default_rng(0)
    by_id = {p.paper_id: rng.normal(size=8) for p in papers}
    for query, grades in cite.qrels.items():  # a positive next to each query: first when the query is left out
        positive = next(d for d, grade in grades.items() if grade > 0)
        by_id[positive] = by_id[query] + rng.normal(scale=1e-4, size=8)
    vectors = write_vectors(tmp_path / "e.jsonl", by_id)
    capsys.readouterr()
    assert main(["run", "--data", str(out), "--benchmark", "full-corpus", "--embeddings", str(vectors), "--quiet",
                 "--no-cache", "-o", str(tmp_path / "r.json")]) == 0
    result = RunResult.load(tmp_path / "r.json")
    assert set(result.tasks) == {"coview-full", "coread-full", "cite-full", "cocite-full"}
    # one file for both roles: the query paper is in the corpus with its own vector, yet never retrieved
    assert result.tasks["cite-full"].metrics["mrr_at_1"] == 100
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    assert main(["data", "build", "--format", "beir", "--data", str(tiny_suite.root), "--out",
                 str(tmp_path / "mine")]) == 2
    assert (tmp_path / "mine" / "notes.txt").read_text() == "mine"
