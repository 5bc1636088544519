"""`data build`: SciDocs-style suites from Cora and CiteSeer (../shared/data), the leakage rule, determinism,
the errors, and the acceptance check that scores behave (random near chance, TF-IDF far above it)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import orjson
import pytest

from scidocs_eval.cli.main import main
from scidocs_eval.data.build import REPORT_FILE, build_suite, read_citation_corpus
from scidocs_eval.errors import InputError, ScidocsEvalError
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.evaluation.verify import verify_suite
from scidocs_eval.formats.embeddings import EmbeddingStore
from scidocs_eval.formats.safe_output import MANIFEST, output_session
from scidocs_eval.formats.suite import Suite
from scidocs_eval.run.baseline import run_baseline

CORA_LABELS = ["Case_Based", "Genetic_Algorithms", "Neural_Networks", "Probabilistic_Methods",
               "Reinforcement_Learning", "Rule_Learning", "Theory"]


def _corpus_files(shared_data: Path, name: str) -> tuple[Path, Path]:
    return shared_data / name / "papers.jsonl", shared_data / name / "edges.tsv"


@pytest.fixture(scope="module")
def cora(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Suite:
    out = tmp_path_factory.mktemp("cora") / "suite"
    build_suite(*_corpus_files(shared_data, "cora"), out, seed=0)
    return Suite(out)


@pytest.fixture(scope="module")
def citeseer(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Suite:
    out = tmp_path_factory.mktemp("citeseer") / "suite"
    build_suite(*_corpus_files(shared_data, "citeseer"), out, seed=0)
    return Suite(out)


def _evaluation_queries(suite: Suite) -> dict[str, dict[str, int]]:
    """query -> {candidate: grade} over cite and co-cite, val and test."""
    queries: dict[str, dict[str, int]] = {}
    for task in ("cite", "cocite"):
        for split in ("val", "test"):
            for query, grades in suite.qrels(task, split).relevance.items():
                queries.setdefault(query, {}).update(grades)
    return queries


def _report(suite: Suite) -> dict:
    return orjson.loads(suite.path(REPORT_FILE).read_bytes())


@pytest.mark.parametrize("name", ["cora", "citeseer"])
def test_built_suite_is_clean_and_complete(name: str, request: pytest.FixtureRequest) -> None:
    suite: Suite = request.getfixturevalue(name)
    report = verify_suite(suite.root)
    assert report.problems == []
    assert report.complete == ["mag", "cite", "cocite"]
    assert report.usable(strict=True)
    built = _report(suite)
    assert set(built["not_supported"]) == {"coview", "coread", "recomm"}
    assert sum(c["papers"] for c in built["classification"].values()) == built["corpus"]["papers"]
    for task in ("cite", "cocite"):
        for split in ("val", "test"):
            assert built["ranking"][task][split]["queries"] == report.counts[task][split]["queries"] > 100


def test_labels_are_mapped_and_split_stratified(cora: Suite, shared_data: Path) -> None:
    assert _report(cora)["label_mapping"] == {label: i for i, label in enumerate(CORA_LABELS)}
    truth = {}
    with open(shared_data / "cora" / "papers.jsonl", "rb") as handle:
        for line in handle:
            record = orjson.loads(line)
            truth[record["paper_id"]] = CORA_LABELS.index(record["label"])
    overall = np.bincount(list(truth.values())) / len(truth)
    seen: set[str] = set()
    for split, share in (("train", 0.6), ("val", 0.2), ("test", 0.2)):
        labelled = cora.labels("mag", split)
        assert abs(len(labelled.ids) / len(truth) - share) < 0.01
        assert [truth[i] for i in labelled.ids] == labelled.labels.tolist()
        assert np.abs(np.bincount(labelled.labels, minlength=7) / len(labelled.ids) - overall).max() < 0.01
        assert not seen & set(labelled.ids)
        seen |= set(labelled.ids)
    assert seen == set(cora.metadata("mag_mesh")) == set(truth)


def test_qrels_follow_the_citation_graph(cora: Suite, shared_data: Path) -> None:
    corpus = read_citation_corpus(*_corpus_files(shared_data, "cora"))
    cocited: dict[str, Counter] = {}
    for cited in corpus.cites.values():
        for a in cited:
            cocited.setdefault(a, Counter()).update(b for b in cited if b != a)
    for split in ("val", "test"):
        for query, grades in cora.qrels("cite", split).relevance.items():
            positives = {c for c, g in grades.items() if g == 1}
            assert len(corpus.cites[query]) >= 2
            assert positives <= corpus.cites[query] and len(positives) == min(5, len(corpus.cites[query]))
            assert len(grades) - len(positives) == 25
            assert not (set(grades) - positives) & (corpus.cites[query] | {query})
        for query, grades in cora.qrels("cocite", split).relevance.items():
            counts = cocited[query]
            positives = {c for c, g in grades.items() if g == 1}
            strong = sorted(n for n in counts.values() if n >= 2)
            assert 1 <= len(positives) == min(5, len(strong))
            assert sorted(counts[c] for c in positives) == strong[len(strong) - len(positives):]
            assert len(grades) - len(positives) == 25
            assert not any(counts[c] for c in grades if c not in positives)
    assert set(cora.metadata("view_cite_read")) >= {c for q in _evaluation_queries(cora).values() for c in q}


@pytest.mark.parametrize("name", ["cora", "citeseer"])
def test_no_evaluation_query_or_pair_in_the_training_data(name: str, request: pytest.FixtureRequest) -> None:
    suite: Suite = request.getfixturevalue(name)
    data = orjson.loads(suite.path("specter/data.json").read_bytes())
    pairs = {(q, c) for q, candidates in data.items() for c in candidates}
    in_training = set(data) | {c for candidates in data.values() for c in candidates}
    training_queries = {line for split in ("train", "val", "test")
                        for line in suite.path(f"specter/{split}.txt").read_text().split()}
    training_papers = set(orjson.loads(suite.path("specter/metadata.json").read_bytes()))
    evaluation = _evaluation_queries(suite)
    assert len(evaluation) > 200 and len(data) > 300
    for query, grades in evaluation.items():
        assert not any((query, c) in pairs or (c, query) in pairs for c in grades)
        assert query not in in_training and query not in training_queries and query not in training_papers
    assert training_queries == set(data)
    assert in_training <= training_papers


def test_training_counts_are_citations_and_citations_of_citations(citeseer: Suite, shared_data: Path) -> None:
    corpus = read_citation_corpus(*_corpus_files(shared_data, "citeseer"))
    held_out = set(corpus.papers) - set(orjson.loads(citeseer.path("specter/metadata.json").read_bytes()))
    assert held_out >= set(_evaluation_queries(citeseer)) | {i for split in ("val", "test")
                                                             for i in citeseer.labels("mag", split).ids}
    graph = corpus.without(held_out)
    data = orjson.loads(citeseer.path("specter/data.json").read_bytes())
    assert set(data) == {q for q, cited in graph.items() if cited}
    for query, candidates in data.items():
        direct = {c for c, v in candidates.items() if v == {"count": 5}}
        assert direct == graph[query]
        second = {c2 for c in direct for c2 in graph.get(c, ())} - direct - {query}
        assert {c for c, v in candidates.items() if v == {"count": 1}} == second


def test_same_seed_same_bytes_other_seed_other_suite(shared_data: Path, tmp_path: Path) -> None:
    papers, edges = _corpus_files(shared_data, "citeseer")
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        build_suite(papers, edges, tmp_path / name, seed=seed, queries_per_split=50)
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert len(files) == 17 and Path("mag/class_names.json") in files   # 16 suite files and the manifest
    for relative in files:
        if relative.name not in (REPORT_FILE, MANIFEST):  # the manifest lists the report's sha256 (timings differ)
            assert (tmp_path / "a" / relative).read_bytes() == (tmp_path / "b" / relative).read_bytes(), relative
    assert (tmp_path / "a/cite/test.qrel").read_bytes() != (tmp_path / "c/cite/test.qrel").read_bytes()
    assert (tmp_path / "a/mag/test.csv").read_bytes() != (tmp_path / "c/mag/test.csv").read_bytes()


@pytest.mark.slow
def test_acceptance_random_near_chance_and_tfidf_far_above(cora: Suite, tmp_path: Path) -> None:
    """Random cite MAP sits at the expected AP of a random ranking (near the share of positives); TF-IDF is
    far above it on cite, co-cite and the classification task."""
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    tasks = ["mag", "cite", "cocite"]
    random_result = run_baseline("random", RunConfig(data=cora, tasks=tasks, progress=False), out_dir=tmp_path)
    qrels = cora.qrels("cite", "test")
    expected_ap, share = [], []
    for grades in qrels.relevance.values():
        n, r = len(grades), sum(grades.values())
        harmonic = np.sum(1 / np.arange(1, n + 1))
        expected_ap.append((harmonic + (r - 1) / (n - 1) * (n - harmonic)) / n)
        share.append(r / n)
    random_map = random_result.tasks["cite"].metrics["map"] / 100
    assert abs(random_map - np.mean(expected_ap)) < 0.03
    assert abs(random_map - np.mean(share)) < 0.1

    papers = cora.papers()
    tfidf = TfidfVectorizer(sublinear_tf=True, min_df=2, stop_words="english").fit_transform(
        f"{p.title} {p.abstract}" for p in papers)
    vectors = TruncatedSVD(100, random_state=0).fit_transform(tfidf)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store = EmbeddingStore.from_mapping({p.paper_id: v for p, v in zip(papers, vectors)})
    tfidf_result = evaluate(store, RunConfig(data=cora, tasks=tasks, progress=False))
    for task, metric, margin in (("cite", "map", 30), ("cocite", "map", 30), ("mag", "f1", 30)):
        assert tfidf_result.tasks[task].metrics[metric] > random_result.tasks[task].metrics[metric] + margin, task


def _write_corpus(folder: Path, records: list[dict], edges: str) -> tuple[Path, Path]:
    papers, links = folder / "papers.jsonl", folder / "edges.tsv"
    papers.write_text("".join(json.dumps(r) + "\n" for r in records))
    links.write_text(edges)
    return papers, links


def _tiny(folder: Path, labels: list[object]) -> tuple[Path, Path]:
    records = [{"paper_id": f"p{i}", "title": f"paper {i}", "abstract": "", "label": label}
               for i, label in enumerate(labels)]
    edges = "".join(f"p{i}\tp{j}\n" for i in range(len(labels)) for j in (i + 1, i + 2) if j < len(labels))
    return _write_corpus(folder, records, "citing\tcited\n" + edges + "p0\tp0\np0\tp1\np0\tghost\n")


def test_small_corpus_report_says_what_was_dropped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    papers, edges = _tiny(tmp_path, [10, 2, 10, 2, 10, 2, 10, 2, 10, 2, 7, None])
    assert main(["data", "build", "--papers", str(papers), "--citations", str(edges), "--out",
                 str(tmp_path / "out"), "--label-task", "venue", "--queries-per-split", "5"]) == 0
    out = capsys.readouterr().out
    report = _report(Suite(tmp_path / "out"))
    assert report["corpus"] == {"papers": 12, "papers_without_text": 0, "links_read": 24,
                                "links_to_unknown_or_textless_papers": 1, "self_citations": 1, "repeated_links": 1,
                                "links_kept": 21}
    assert report["label_task"] == "venue" and report["label_mapping"] == {"2": 0, "10": 1}
    assert "venue: classes with fewer than 3 papers left out: 7" in report["notes"]
    assert "note: cite: 10 eligible queries, 5 used for evaluation (max share 0.5)" in out
    assert "not built: cocite (no paper in the corpus qualifies as a query)" in out
    assert Suite(tmp_path / "out").labels("venue", "test").labels.tolist() in ([0, 1], [1, 0])
    assert verify_suite(tmp_path / "out").complete == ["cite", "venue"]  # venue: as mag reads it (mag.folder=venue)


def test_unlabelled_corpus_without_cocitations(tmp_path: Path) -> None:
    records = [{"paper_id": str(i), "title": "", "abstract": f"text {i}"} for i in range(40)]
    records.append({"paper_id": "empty", "title": " ", "abstract": ""})
    papers, edges = _write_corpus(tmp_path, records, "".join(f"{i}\t{i + 1}\n{i}\t{i + 2}\n" for i in range(0, 38, 3)))
    report = build_suite(papers, edges, tmp_path / "out", seed=1)
    assert report.corpus["papers"] == 40 and report.corpus["papers_without_text"] == 1
    assert report.label_task is None
    assert report.not_supported["mag"] == "fewer than 2 classes with at least 3 labelled papers"
    assert not (tmp_path / "out" / "paper_metadata_mag_mesh.json").exists()
    assert report.not_supported["cocite"] == "no paper in the corpus qualifies as a query"
    assert report.ranking["cite"]["test"]["queries"] == 3
    assert verify_suite(tmp_path / "out").complete == ["cite"]


def test_rebuilding_replaces_only_the_builds_own_files(tmp_path: Path) -> None:
    papers, edges = _tiny(tmp_path, ["a", "b"] * 6)
    build_suite(papers, edges, tmp_path / "out")
    (tmp_path / "out" / "my_results.json").write_text("{}")
    (tmp_path / "out" / "scidocs-results").mkdir()
    (tmp_path / "out" / "scidocs-results" / "random.jsonl").write_text("mine")
    (tmp_path / "out" / "cite" / "test.qrel").write_text("edited")   # the build's file, edited: now the user's
    with pytest.raises(ScidocsEvalError, match=r"cite/test.qrel is in the way and was not written by scidocs-eval "
                       r"data build \(or was changed since\); pass --overwrite to replace it"):
        build_suite(papers, edges, tmp_path / "out", seed=1)
    assert (tmp_path / "out" / "cite" / "test.qrel").read_text() == "edited"
    with output_session(overwrite=True):
        build_suite(papers, edges, tmp_path / "out", seed=1)
    assert (tmp_path / "out" / "my_results.json").read_text() == "{}"
    assert (tmp_path / "out" / "scidocs-results" / "random.jsonl").read_text() == "mine"
    assert (tmp_path / "out" / "cite" / "test.qrel").read_text() != "edited"
    assert verify_suite(tmp_path / "out").complete == ["mag", "cite"]


def test_build_refuses_a_folder_it_did_not_write_and_a_file(tmp_path: Path) -> None:
    papers, edges = _tiny(tmp_path, ["a", "b"] * 6)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("precious")
    with pytest.raises(ScidocsEvalError, match=r"mine is not empty and was not written by scidocs-eval data build"):
        build_suite(papers, edges, tmp_path / "mine")
    assert [p.name for p in (tmp_path / "mine").iterdir()] == ["thesis.tex"]
    with pytest.raises(ScidocsEvalError, match=r"papers.jsonl is a file; give a folder"):
        build_suite(papers, edges, papers)


def test_a_users_file_where_the_build_writes_one_is_never_replaced(tmp_path: Path) -> None:
    papers, edges = _tiny(tmp_path, ["a", "b"] * 6)
    build_suite(papers, edges, tmp_path / "out")
    (tmp_path / "out" / "cocite").mkdir()
    (tmp_path / "out" / "cocite" / "test.qrel").write_text("my own qrels")
    (tmp_path / "out" / "cite" / "val.qrel").unlink()
    (tmp_path / "out" / "cite" / "val.qrel").write_text("mine too")
    with pytest.raises(ScidocsEvalError, match=r"cite/val.qrel is in the way and was not written by"):
        build_suite(papers, edges, tmp_path / "out")
    assert (tmp_path / "out" / "cite" / "val.qrel").read_text() == "mine too"


def test_a_task_too_small_to_build_is_left_out_and_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    papers, edges = _tiny(tmp_path, [1, 2] * 6)
    edges.write_text("p0\tp1\np0\tp2\np3\tp4\n")   # one paper citing two: one eligible cite query
    assert main(["data", "build", "--papers", str(papers), "--citations", str(edges), "--out",
                 str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "tasks built: mag\n" in out
    assert "not built: cite (1 paper(s) qualify as a query, too few for one query per split" in out
    assert not (tmp_path / "out" / "cite").exists()
    assert not (tmp_path / "out" / "paper_metadata_view_cite_read.json").exists()
    assert verify_suite(tmp_path / "out").complete == ["mag"]


def test_a_corpus_too_small_for_any_task_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    papers, edges = _tiny(tmp_path, [1, 1, 1, 1])
    edges.write_text("p0\tp1\np0\tp2\n")
    assert main(["data", "build", "--papers", str(papers), "--citations", str(edges), "--out",
                 str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "papers.jsonl: the corpus is too small for any task, nothing written: mag: fewer than 2 classes" in err
    assert "suite written" not in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("papers_text", "edges_text", "message"), [
    ('{"paper_id": "a", "title": "x"}\n{"paper_id": "b", "title"\n', "", r"papers.jsonl:2: malformed JSON"),
    ('{"paper_id": "a", "title": "x"}\n{"title": "y"}\n', "", r"papers.jsonl:2: field 'paper_id' is missing"),
    ('{"paper_id": "a", "title": "x"}\n{"paper_id": "a", "title": "y"}\n', "",
     r"papers.jsonl:2: paper 'a' repeats line 1"),
    ('{"paper_id": "a", "title": ""}\n', "", r"papers.jsonl: no papers with a title or an abstract"),
    ('{"paper_id": "a", "title": ["x"]}\n', "", r"papers.jsonl:1: field 'title' is list"),
    ('{"paper_id": "a", "title": "x", "abstract": 3}\n', "",
     r"papers.jsonl:1: field 'abstract' is integer"),
    ('{"paper_id": "a", "title": "x"}\n', "a\tb\nb\ta\tc\n", r"edges.tsv:2: expected 2 tab-separated fields"),
])
def test_bad_inputs_name_file_and_line(tmp_path: Path, papers_text: str, edges_text: str, message: str) -> None:
    (tmp_path / "papers.jsonl").write_text(papers_text)
    (tmp_path / "edges.tsv").write_text(edges_text)
    with pytest.raises(InputError, match=message):
        build_suite(tmp_path / "papers.jsonl", tmp_path / "edges.tsv", tmp_path / "out")


def test_bad_settings_and_missing_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    papers, edges = _tiny(tmp_path, ["a", "b"] * 6)
    with pytest.raises(ScidocsEvalError, match=r"--label-task must be a plain folder name .* got '../mag'"):
        build_suite(papers, edges, tmp_path / "out", label_task="../mag")
    with pytest.raises(ScidocsEvalError, match=r"split_fractions must be three positive shares summing to 1"):
        build_suite(papers, edges, tmp_path / "out", split_fractions=(0.5, 0.5, 0.5))
    with pytest.raises(InputError, match=r"nope.tsv: citations file not found"):
        build_suite(papers, tmp_path / "nope.tsv", tmp_path / "out")
    assert main(["data", "build", "--papers", str(tmp_path / "nope.jsonl"), "--citations", str(edges),
                 "--out", str(tmp_path / "out")]) == 2
    assert "nope.jsonl: papers file not found" in capsys.readouterr().err
