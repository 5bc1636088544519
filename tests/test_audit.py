"""`scidocs-eval audit`: planted leaks of each kind are found, exactly, and nothing in a clean control; suites
built by `data build` audit clean against their own training files; `--test-after` splits by date; clean-part
scores and `run --exclude` agree exactly; the near-duplicate machinery is datasketch's."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import orjson
import pytest

from scidocs_eval.cli.main import main
from scidocs_eval.data.build import build_suite
from scidocs_eval.data.near_duplicates import (
    LSH_WEIGHTS,
    candidate_pairs,
    lsh_bands,
    normalise_text,
    normalise_title,
    permutations,
    shingle,
    signatures,
)
from scidocs_eval.errors import InputError, ScidocsEvalError
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.contamination import AuditReport, audit_suite, clean_scores
from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.formats.corpus import parse_published
from scidocs_eval.formats.suite import Suite
from scidocs_eval.formats.training_data import read_training_data
from scidocs_eval.leaderboard.run_table import format_run

WORDS = [f"{a}{b}{c}" for a in "bdfgklmnprstvz" for b in "aeiou" for c in ("", "n", "r", "l")]


def _random_text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def _clean_training(folder: Path, rng: random.Random) -> Path:
    """A SPECTER folder of 300 unrelated papers: 30 queries, each with 2 positives and 2 hard negatives."""
    folder.mkdir()
    ids = [f"train-{i}" for i in range(300)]
    metadata = {i: {"paper_id": i, "title": _random_text(rng, 8), "abstract": _random_text(rng, 80)} for i in ids}
    data = {ids[q]: {ids[30 + 4 * q + k]: {"count": 5 if k < 2 else 1} for k in range(4)} for q in range(30)}
    (folder / "metadata.json").write_bytes(orjson.dumps(metadata))
    (folder / "data.json").write_bytes(orjson.dumps(data))
    (folder / "train.txt").write_text("\n".join(ids[:25]) + "\n")
    (folder / "val.txt").write_text("\n".join(ids[25:30]) + "\n")
    return folder


def _edit_words(text: str, rng: random.Random, edits: int) -> str:
    words = text.split()
    for position in rng.sample(range(len(words)), edits):
        words[position] = "zzedit" + str(position)
    return " ".join(words)


@pytest.fixture(scope="module")
def planted(demo_suite: Suite, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Training sources with one planted leak of each kind in the demo suite's test split."""
    rng = random.Random(7)
    root = tmp_path_factory.mktemp("planted")
    clean = _clean_training(root / "specter", rng)
    cite, cocite, coview = (demo_suite.qrels(t, "test") for t in ("cite", "cocite", "coview"))
    same_id = next(iter(cite.candidates))
    edited = next(q for q in coview.candidates if q != same_id)
    pair_query = next(q for q in cocite.candidates if q not in (same_id, edited))
    pair_positive = next(c for c, g in cocite.relevance[pair_query].items() if g > 0)
    retitled = demo_suite.labels("mag", "test").ids[0]
    titled = demo_suite.labels("mesh", "test").ids[0]
    recomm_query = demo_suite.impressions("test")[0].query_id
    cls_meta, ranking_meta = demo_suite.metadata("mag_mesh"), demo_suite.metadata("view_cite_read")

    (root / "ids.txt").write_text(f"{same_id}\n{recomm_query}\n")
    _write_jsonl(root / "triplets.jsonl", [
        {"query": {"sha": "copy-1", "title": "an entirely new title for this copy",
                   "abstract": cls_meta[retitled]["abstract"]}, "pos": "train-1", "neg": "train-2"},
        {"query": pair_query, "pos": pair_positive, "neg": "train-3"}])
    _write_jsonl(root / "papers.jsonl", [
        {"paper_id": "edit-1", "title": ranking_meta[edited]["title"],
         "abstract": _edit_words(ranking_meta[edited]["abstract"], rng, 3)},
        {"paper_id": "title-1", "title": cls_meta[titled]["title"].upper().replace(" ", " , ") + "!",
         "abstract": _random_text(rng, 80)}])
    return {"clean": clean, "sources": [clean, root / "ids.txt", root / "triplets.jsonl", root / "papers.jsonl"],
            "expected": {same_id: {"id"}, recomm_query: {"id"}, retitled: {"text"}, titled: {"title"},
                         edited: {"title", "text"}, pair_query: {"id"}, pair_positive: {"id"}},
            "pair": (pair_query, pair_positive)}


def _expected_leaked(suite: Suite, task: str, own_papers: set[str]) -> set[str]:
    family_items = {"mag": lambda: {i: i for i in suite.labels(task, "test").ids},
                    "mesh": lambda: {i: i for i in suite.labels(task, "test").ids},
                    "recomm": lambda: {i.item_id: i.query_id for i in suite.impressions("test")}}
    items = family_items.get(task, lambda: {q: q for q in suite.qrels(task, "test").candidates})()
    return {item for item, paper in items.items() if paper in own_papers}


def test_planted_leaks_are_found_exactly(planted: dict, demo_suite: Suite) -> None:
    report = audit_suite(read_training_data(planted["sources"]), demo_suite)
    found = {paper: {m["match"] for m in matches} for paper, matches in report.data["matches"].items()}
    assert found == planted["expected"]
    own = set(planted["expected"])
    for task, info in report.tasks.items():
        assert set(info["leaked_items"]) == _expected_leaked(demo_suite, task, own), task
    cocite = report.tasks["cocite"]
    query, positive = planted["pair"]
    assert cocite["direct_leaks"] == 1
    assert {"pair": [query, positive], "as": "direct leak", "training_pair": [query, positive],
            "match": ["id", "id"]} in cocite["leaked_items"][query]
    assert sum(info["direct_leaks"] for info in report.tasks.values()) == 1
    roles = {m["training_id"]: m["roles"] for m in report.data["matches"][query]}
    assert roles == {query: ["query"]}


def test_clean_control_finds_nothing(planted: dict, demo_suite: Suite) -> None:
    report = audit_suite(read_training_data([planted["clean"]]), demo_suite)
    assert report.data["matches"] == {}
    assert all(info["leaked"] == 0 and info["direct_leaks"] == 0 for info in report.tasks.values())


def test_leaked_if_counts_only_the_strengths_asked_for(planted: dict, demo_suite: Suite) -> None:
    report = audit_suite(read_training_data(planted["sources"]), demo_suite, strengths=("text",))
    leaked = {item for info in report.tasks.values() for item in info["leaked_items"]}
    expected = {p for p, strengths in planted["expected"].items() if "text" in strengths}
    assert leaked == expected
    assert report.data["papers_matched"]["id"] == 4   # all three strengths are reported either way


def test_threshold_separates_light_edits_from_heavy_ones() -> None:
    rng = random.Random(3)
    original = _random_text(rng, 100)
    light, heavy = _edit_words(original, rng, 3), _edit_words(original, rng, 60)
    sets = shingle([normalise_text("t", text) for text in (original, light, heavy)])
    from scidocs_eval.data.near_duplicates import jaccard
    assert jaccard(sets.distinct(0), sets.distinct(1)) > 0.8
    assert jaccard(sets.distinct(0), sets.distinct(2)) < 0.1


def test_normalised_title() -> None:
    assert normalise_title("  Deep  LEARNING: a Survey! ") == normalise_title("deep learning a survey")
    assert normalise_title("ﬁne-tuning BERT models") == "fine tuning bert models"   # NFKC ligature
    assert normalise_title("Introduction") == ""   # too short to match by title


def test_signatures_and_bands_are_datasketchs() -> None:
    from datasketch import MinHash, MinHashLSH

    rng = random.Random(0)
    texts = [normalise_text("", _random_text(rng, rng.randint(5, 60))) for _ in range(120)]
    others = [t if i % 2 else " ".join(t.split()[:30]) for i, t in enumerate(texts[:60])] + texts[60:80]
    left, right = shingle(texts), shingle(others)
    left_signatures, right_signatures = signatures(left, 64, 5), signatures(right, 64, 5)
    for i in range(0, 120, 11):
        reference = MinHash(num_perm=64, seed=5, scheme="affine32", hashfunc=int)
        reference.update_batch(left.hashes[left.offsets[i]:left.offsets[i + 1]].tolist())
        assert (reference.hashvalues == left_signatures[i]).all()
    bands, rows = lsh_bands(0.5, 64)
    index = MinHashLSH(threshold=0.5, num_perm=64, weights=LSH_WEIGHTS)
    perms = permutations(64, 5)
    for j, row in enumerate(right_signatures):
        index.insert(j, MinHash(hashvalues=row, permutations=perms, scheme="affine32"))
    theirs = {(i, j) for i, row in enumerate(left_signatures)
              for j in index.query(MinHash(hashvalues=row, permutations=perms, scheme="affine32"))}
    assert candidate_pairs(left_signatures, right_signatures, bands, rows) == theirs and theirs


def test_training_readers(tmp_path: Path, shared_data: Path) -> None:
    specter = read_training_data([shared_data / "specter-sample"])
    train = set((shared_data / "specter-sample/train.txt").read_text().split())
    queries = {i for i, flags in specter.roles.items() if flags & 1}
    assert train <= queries and specter.positives
    triplets = read_training_data([shared_data / "scirepeval-sample/specter_small.json"])
    first = orjson.loads((shared_data / "scirepeval-sample/specter_small.json").read_bytes())[0]
    assert first["query"]["sha"] in triplets.roles and str(first["query"]["corpus_id"]) in triplets.roles
    assert first["pos"]["sha"] in triplets.positives[first["query"]["sha"]]
    one = tmp_path / "one-triplet.jsonl"  # one line is one JSON object: still a triplet, not a metadata file
    one.write_text('{"query": "q1", "pos": "p1", "neg": "n1"}\n')
    assert read_training_data([one]).positives == {"q1": {"p1"}}
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "a", "pos": "b"}\n{"query": "a", "pos": [1]}\n')
    with pytest.raises(InputError, match=r"bad.jsonl:2: field 'pos'"):
        read_training_data([bad])
    spaced = tmp_path / "ids.txt"
    spaced.write_text("a\nb c\n")
    with pytest.raises(InputError, match=r"ids.txt:2"):
        read_training_data([spaced])


def test_cli_writes_json_and_refuses_foreign_out(planted: dict, demo_suite: Suite, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "audit.json"
    argv = ["audit", "--data", str(demo_suite.root)]
    for source in planted["sources"]:
        argv += ["--train", str(source)]
    argv += ["--out", str(out)]
    assert main(argv) == 0
    assert "direct" in capsys.readouterr().out
    report = AuditReport.load(out)
    assert report.tasks["cocite"]["direct_leaks"] == 1
    assert main(argv) == 0   # its own file is replaced
    foreign = tmp_path / "notes.json"
    foreign.write_text('{"mine": 1}')
    assert main(argv[:-1] + [str(foreign)]) == 2
    assert "not replaced" in capsys.readouterr().err and foreign.read_text() == '{"mine": 1}'
    for bad in (["--threshold", "1.5"], ["--threshold", "0"], ["--num-perm", "0"], ["--leaked-if", "ids"],
                ["--benchmark", "scidoc"]):
        assert main(argv + bad) == 2
    assert "did you mean 'scidocs'" in capsys.readouterr().err


# -- results: clean part and run --exclude -------------------------------------------------------------------

def _memorising_embeddings(suite: Suite, leaked_queries: set[str], path: Path) -> Path:
    """Random vectors, except that each leaked query sits on its first relevant candidate (a memorised pair)."""
    rng = np.random.default_rng(0)
    vectors = {p.paper_id: rng.standard_normal(16) for p in suite.papers()}
    for task in ("cite", "cocite", "coview", "coread"):
        for query, grades in suite.qrels(task, "test").relevance.items():
            if query in leaked_queries:
                vectors[query] = vectors[next(c for c, g in grades.items() if g > 0)] + 1e-3
    return _write_jsonl(path, [{"paper_id": i, "embedding": v.tolist()} for i, v in vectors.items()])


def test_clean_part_scores_and_run_exclude_agree(demo_suite: Suite, tmp_path: Path) -> None:
    queries = list(demo_suite.qrels("cite", "test").candidates)
    leaked = set(queries[:8])
    ids = tmp_path / "ids.txt"
    ids.write_text("\n".join(sorted(leaked)) + "\n")
    audit_path = tmp_path / "audit.json"
    report = audit_suite(read_training_data([ids]), demo_suite, tasks=["cite", "mag"])
    report.save(audit_path)
    embeddings = _memorising_embeddings(demo_suite, leaked, tmp_path / "model.jsonl")
    result = evaluate(embeddings, RunConfig(data=demo_suite, tasks=["cite", "mag"], progress=False))
    scores = clean_scores(report, result)
    cite = scores["cite"]["metrics"]["map"]
    assert cite["leaked"]["n"] == 8 and cite["clean"]["n"] == len(queries) - 8
    assert cite["leaked"]["value"] > cite["all"]["value"] > cite["clean"]["value"]
    assert cite["clean"]["ci"][1] < cite["all"]["ci"][1]
    low, high = cite["clean_minus_all"]["ci"]
    assert high < 0 and cite["clean_minus_all"]["p_value"] < 0.05
    assert scores["mag"]["metrics"]["f1"]["clean_minus_all"]["delta"] == 0.0   # no mag paper leaked

    excluded = evaluate(embeddings, RunConfig(data=demo_suite, tasks=["cite", "mag"], progress=False,
                                              exclude=audit_path))
    assert excluded.tasks["cite"].metrics["map"] == cite["clean"]["value"]
    assert excluded.tasks["cite"].metrics["ndcg"] == scores["cite"]["metrics"]["ndcg"]["clean"]["value"]
    assert excluded.tasks["cite"].ci["map"] == cite["clean"]["ci"]
    assert excluded.tasks["mag"].metrics == result.tasks["mag"].metrics
    assert excluded.settings.exclude.items_excluded == {"cite": 8, "mag": 0}
    assert "leaked items excluded" in format_run(excluded)
    from scidocs_eval.leaderboard import render_table1
    assert "leaked items excluded" in render_table1([excluded], include_paper=False)
    with pytest.raises(ScidocsEvalError, match="did not audit task"):
        evaluate(embeddings, RunConfig(data=demo_suite, tasks=["cocite"], progress=False, exclude=audit_path))
    with pytest.raises(ScidocsEvalError, match="audits the test split, not val"):
        evaluate(embeddings,
                 RunConfig(data=demo_suite, tasks=["cite"], split="val", progress=False, exclude=audit_path))


def test_run_exclude_cli(demo_suite: Suite, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    ids = tmp_path / "ids.txt"
    ids.write_text(next(iter(demo_suite.qrels("cite", "test").candidates)) + "\n")
    audit_path, results = tmp_path / "audit.json", tmp_path / "r.json"
    embeddings = _memorising_embeddings(demo_suite, set(), tmp_path / "model.jsonl")
    assert main(["audit", "--data", str(demo_suite.root), "--train", str(ids), "--tasks", "cite",
                 "--out", str(audit_path)]) == 0
    assert main(["run", "--embeddings", str(embeddings), "--data", str(demo_suite.root), "--tasks", "cite",
                 "--exclude", str(audit_path), "--output", str(results)]) == 0
    assert "leaked items excluded)" in capsys.readouterr().out
    assert RunResult.load(results).tasks["cite"].coverage["items_excluded_as_leaked"] == 1
    assert main(["run", "--embeddings", str(embeddings), "--data", str(demo_suite.root), "--tasks", "cite",
                 "--exclude", str(ids)]) == 2
    assert "not an audit file" in capsys.readouterr().err
    refused = tmp_path / "refused.json"
    for extra, message in ((["--tasks", "cite,cocite"], "did not audit task(s) cocite"),
                           (["--tasks", "cite", "--split", "val"], "audits the test split, not val")):
        assert main(["run", "--embeddings", str(embeddings), "--data", str(demo_suite.root), *extra,
                     "--exclude", str(audit_path), "-o", str(refused)]) == 2
        assert message in capsys.readouterr().err
        assert not refused.exists()


# -- data build: audits clean, and --test-after ----------------------------------------------------------------

def _dated_corpus(folder: Path, papers: int = 600) -> tuple[Path, Path]:
    """Papers with random text, a label and a year (2000-2019); each cites 3-8 earlier papers."""
    rng = random.Random(11)
    folder.mkdir()
    records = [{"paper_id": f"p{i}", "title": _random_text(rng, 8), "abstract": _random_text(rng, 70),
                "label": f"L{i % 4}", "year": 2000 + i * 20 // papers} for i in range(papers)]
    edges = ["citing\tcited"]
    for i in range(30, papers):
        edges += [f"p{i}\tp{j}" for j in rng.sample(range(i), rng.randint(3, 8))]
    return _write_jsonl(folder / "papers.jsonl", records), _write_text(folder / "edges.tsv", "\n".join(edges))


def _write_text(path: Path, text: str) -> Path:
    path.write_text(text + "\n")
    return path


@pytest.fixture(scope="module")
def dated_corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return _dated_corpus(tmp_path_factory.mktemp("dated") / "corpus")


@pytest.mark.parametrize("cutoff", [None, "2014", "2014-06-30"])
def test_built_suite_audits_clean_against_its_own_training_files(dated_corpus: tuple[Path, Path], tmp_path: Path,
                                                                  cutoff: str | None) -> None:
    published = parse_published(cutoff) if cutoff else None
    build_suite(*dated_corpus, tmp_path / "suite", queries_per_split=60, test_after=published)
    suite = Suite(tmp_path / "suite")
    report = audit_suite(read_training_data([tmp_path / "suite/specter"]), suite, split="test")
    assert {"mag", "cite"} <= set(report.tasks)   # few papers after a cutoff are co-cited yet
    assert all(info["leaked"] == 0 and info["direct_leaks"] == 0 for info in report.tasks.values()), report.format()


def test_cora_suite_audits_clean_and_the_specter_sample_overlaps_it(shared_data: Path, tmp_path: Path) -> None:
    """Cora holds duplicate records of some papers: `data build` keeps the copies of evaluation papers out of its
    training files, so its suite audits clean; SPECTER's training sample holds one Cora test query's text."""
    build_suite(shared_data / "cora/papers.jsonl", shared_data / "cora/edges.tsv", tmp_path / "cora")
    suite = Suite(tmp_path / "cora")
    own = audit_suite(read_training_data([tmp_path / "cora/specter"]), suite)
    assert all(info["leaked"] == 0 and info["direct_leaks"] == 0 for info in own.tasks.values()), own.format()
    specter = audit_suite(read_training_data([shared_data / "specter-sample"]), suite)
    text_matches = {paper: m for paper, matches in specter.data["matches"].items() for m in matches}
    assert "1929" in text_matches and text_matches["1929"]["match"] == "text"
    assert text_matches["1929"]["training_id"] == "04a20cd0199d0a24fea8e6bf0e0cc61b26c1f3ac"


def test_test_after_splits_by_year(dated_corpus: tuple[Path, Path], tmp_path: Path) -> None:
    papers, edges = dated_corpus
    assert main(["data", "build", "--papers", str(papers), "--citations", str(edges), "--out",
                 str(tmp_path / "suite"), "--queries-per-split", "60", "--test-after", "2014"]) == 0
    suite = Suite(tmp_path / "suite")
    years = {r["paper_id"]: r["year"] for r in map(orjson.loads, papers.read_bytes().splitlines())}
    test_papers = set(suite.labels("mag", "test").ids) | {q for t in ("cite", "cocite") for s in ("val", "test")
                                                          if suite.has(f"{t}/{s}.qrel")
                                                          for q in suite.qrels(t, s).candidates}
    assert test_papers and all(years[p] > 2014 for p in test_papers)
    training = read_training_data([tmp_path / "suite/specter"])
    assert training.roles and all(years[p] <= 2014 for p in training.roles)
    assert all(years[p] <= 2014 for s in ("train", "val") for p in suite.labels("mag", s).ids)
    report = orjson.loads(suite.path("build_report.json").read_bytes())
    assert report["cutoff"]["test_after"] == "2014"


def test_test_after_refuses_a_corpus_without_dates(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    papers, edges = _dated_corpus(tmp_path / "corpus", papers=100)
    undated = _write_jsonl(tmp_path / "undated.jsonl", [{k: v for k, v in r.items() if k != "year"} for r in
                                                        map(orjson.loads, papers.read_bytes().splitlines())])
    assert main(["data", "build", "--papers", str(undated), "--citations", str(edges), "--out",
                 str(tmp_path / "suite"), "--test-after", "2014"]) == 2
    assert "no paper has a year or date" in capsys.readouterr().err
    assert not (tmp_path / "suite").exists()
    assert main(["data", "build", "--papers", str(papers), "--citations", str(edges), "--out",
                 str(tmp_path / "suite"), "--test-after", "June 2014"]) == 2
