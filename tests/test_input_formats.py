"""Input formats (`INPUT_FORMATS`): each embeddings group is embedded for its tasks' format, and a model that
embeds by format (per-format prompts, SPECTER2's adapters: tests/test_specter2.py) gets each paper once per
format, a search's queries apart from its candidates, in one run."""

from __future__ import annotations

import importlib
import importlib.util
import os
from pathlib import Path

import numpy as np
import orjson
import pytest

from scidocs_eval.cli.main import main
from scidocs_eval.data.scirepeval import write_embeddings_jsonl
from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.papers import embedding_needs
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.evaluation.task import TASKS, TaskSpec, group_input_formats, register_task
from scidocs_eval.formats.corpus import paper_text
from scidocs_eval.formats.provenance import read_settings
from scidocs_eval.formats.scirepeval import meta_file, read_meta
from scidocs_eval.formats.suite import Paper, Suite, paper_of_record
from scidocs_eval.models.encoder import TransformerEncoder
from scidocs_eval.run.embedding_plan import plan_embedding
from scidocs_eval.run.model_object import EncoderAdapter, evaluate_model
from scidocs_eval.tasks.scirepeval import write_synthetic_scirepeval

pytest.importorskip("transformers")

from builders import build_small_bert  # noqa: E402

from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.run.model_object import EncodeConfig

SEARCH, DRSM = "scirepeval-search", "scirepeval-drsm"
REPO = Path(__file__).resolve().parent.parent


def _embeddings(path: Path) -> dict[str, np.ndarray]:
    rows = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    return {row["paper_id"]: np.array(row["embedding"]) for row in rows}


@pytest.fixture(scope="module")
def tiny_bert(tiny_suite: Suite, tmp_path_factory: pytest.TempPathFactory) -> Path:
    texts = [paper_text(p) for p in tiny_suite.papers()]
    return build_small_bert(texts, tmp_path_factory.mktemp("bert") / "bert", vocab_size=400, hidden_size=32)


@pytest.fixture(scope="module")
def scirepeval_copy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("scirepeval")
    vectors = write_synthetic_scirepeval(folder / "data", seed=3)
    return folder / "data", write_embeddings_jsonl(folder / "embeddings.jsonl", vectors)


def _encode(model: Path, prompt: str, papers: list[Paper]) -> np.ndarray:
    encoder = TransformerEncoder(str(model), max_length=32, device="cpu", prompt=prompt)
    return encoder.encode(encoder.paper_texts(papers))


def test_format_prompts_embed_each_format_with_its_prompt_once(tiny_bert: Path, tiny_suite: Suite,
                                                               tmp_path: Path) -> None:
    assert main(["baseline", "transformer", "--model", str(tiny_bert), "--format-prompt", "classification=Classify: ",
                 "--prompt", "Paper: ", "--data", str(tiny_suite.root), "--tasks", "mesh,cite", "--max-length",
                 "32", "--device", "cpu", "--out-dir", str(tmp_path), "--quiet"]) == 0
    assert not (tmp_path / "transformer.jsonl").exists()
    classification = _embeddings(tmp_path / "transformer-classification.jsonl")
    proximity = _embeddings(tmp_path / "transformer-proximity.jsonl")
    mesh_papers = [p for p in tiny_suite.papers(("mag_mesh",)) if p.paper_id in classification][:5]
    cite_papers = [p for p in tiny_suite.papers(("view_cite_read",)) if p.paper_id in proximity][:5]
    assert len(mesh_papers) == len(cite_papers) == 5
    assert "Classify: " + paper_text(mesh_papers[0], "[SEP]") in \
        TransformerEncoder(str(tiny_bert), prompt="Classify: ").paper_texts(mesh_papers)
    np.testing.assert_allclose(np.array([classification[p.paper_id] for p in mesh_papers]),
                               _encode(tiny_bert, "Classify: ", mesh_papers), atol=1e-5)
    np.testing.assert_allclose(np.array([proximity[p.paper_id] for p in cite_papers]),
                               _encode(tiny_bert, "Paper: ", cite_papers), atol=1e-5)  # no prompt of its own: --prompt
    assert np.abs(np.array([proximity[p.paper_id] for p in cite_papers]) -
                  _encode(tiny_bert, "Classify: ", cite_papers)).max() > 1e-3  # the prompts change the vectors
    assert read_settings(tmp_path / "transformer-classification.jsonl")["role"]["input_format"] == "classification"
    results = orjson.loads((tmp_path / "transformer.results.json").read_bytes())
    assert results["model_info"]["params"]["format_prompts"] == {"classification": "Classify: "}
    assert set(results["tasks"]) == {"mesh", "cite"}
    # a resume continues from the embedding cache, whose key holds the prompts: other prompts mix no old vector
    assert main(["baseline", "transformer", "--model", str(tiny_bert), "--format-prompt", "classification=Other: ",
                 "--prompt", "Paper: ", "--data", str(tiny_suite.root), "--tasks", "mesh", "--max-length", "32",
                 "--device", "cpu", "--out-dir", str(tmp_path), "--quiet", "--resume"]) == 0
    resumed = _embeddings(tmp_path / "transformer-classification.jsonl")
    np.testing.assert_allclose(np.array([resumed[p.paper_id] for p in mesh_papers]),
                               _encode(tiny_bert, "Other: ", mesh_papers), atol=1e-5)


def test_search_queries_are_embedded_apart_with_their_formats_prompt(tiny_bert: Path,
                                                                     scirepeval_copy: tuple[Path, Path],
                                                                     tmp_path: Path) -> None:
    data, _ = scirepeval_copy
    assert main(["baseline", "transformer", "--model", str(tiny_bert), "--format-prompt", "adhoc_query=Query: ",
                 "--data", str(data), "--tasks", f"{SEARCH},{DRSM}", "--max-length", "32", "--device", "cpu",
                 "--batch-size", "64", "--out-dir", str(tmp_path), "--quiet"]) == 0
    meta = read_meta(data / meta_file("search"))
    queries = _embeddings(tmp_path / "transformer-scirepeval-search-queries.jsonl")
    candidates = _embeddings(tmp_path / "transformer-proximity.jsonl")
    assert set(queries) == set(meta.queries)
    assert not set(meta.queries) & set(candidates)
    assert set(candidates) == set(meta.records) - set(meta.queries)
    # Search's candidates are read with their venue and year (its "fields" in scirepeval_tasks.jsonl)
    shown = [paper_of_record(i, meta.records[i], ("venue", "year")) for i in list(candidates)[:3]]
    assert paper_text(shown[0], "[SEP]").endswith("[SEP]Synthetic Venue[SEP]2020")
    np.testing.assert_allclose(np.array([candidates[p.paper_id] for p in shown]), _encode(tiny_bert, "", shown),
                               atol=1e-5)
    first = meta.queries[:3]
    papers = [Paper(q, meta.records[q]["title"], "") for q in first]
    np.testing.assert_allclose(np.array([queries[q] for q in first]), _encode(tiny_bert, "Query: ", papers),
                               atol=1e-5)
    assert np.abs(np.array([queries[q] for q in first]) - _encode(tiny_bert, "", papers)).max() > 1e-3
    assert read_settings(tmp_path / "transformer-scirepeval-search-queries.jsonl")["role"] == {
        "input_format": "adhoc_query", "prompt_type": "query", "mteb_task": None}
    assert (tmp_path / "transformer-classification.jsonl").is_file()
    results = orjson.loads((tmp_path / "transformer.results.json").read_bytes())
    assert set(results["tasks"]) == {SEARCH, DRSM}


def test_one_file_of_queries_and_candidates_scores_as_the_files_apart(scirepeval_copy: tuple[Path, Path],
                                                                      tmp_path: Path) -> None:
    """SciRepEval keeps queries and candidates in one dict: one file for both groups gives the same numbers as a
    file per group, and a baseline that embeds alike writes the queries apart with the same vectors."""
    data, embeddings = scirepeval_copy
    together = evaluate(embeddings, RunConfig(data=data, tasks=[SEARCH, "scirepeval-trec-covid"], cache=False,
                                              progress=False))
    apart = evaluate({"scirepeval-search": embeddings, "scirepeval-search-queries": embeddings,
                      "scirepeval-trec-covid": embeddings, "scirepeval-trec-covid-queries": embeddings},
                     RunConfig(data=data, tasks=[SEARCH, "scirepeval-trec-covid"], cache=False, progress=False))
    for name in (SEARCH, "scirepeval-trec-covid"):
        assert together.tasks[name].metrics == apart.tasks[name].metrics
        assert together.tasks[name].coverage["queries_without_vector"] == 0
    assert main(["baseline", "tfidf", "--data", str(data), "--tasks", SEARCH, "--out-dir", str(tmp_path),
                 "--quiet"]) == 0
    queries = _embeddings(tmp_path / "tfidf-scirepeval-search-queries.jsonl")
    merged = tmp_path / "merged.jsonl"
    merged.write_bytes((tmp_path / "tfidf.jsonl").read_bytes() +
                       (tmp_path / "tfidf-scirepeval-search-queries.jsonl").read_bytes())
    rescored = evaluate(merged, RunConfig(data=data, tasks=[SEARCH], cache=False, progress=False))
    baseline = orjson.loads((tmp_path / "tfidf.results.json").read_bytes())
    assert rescored.tasks[SEARCH].metrics == baseline["tasks"][SEARCH]["metrics"]
    assert len(queries) == len(read_meta(data / meta_file("search")).queries)


def test_a_query_group_given_no_file_skips_the_search_with_its_name(scirepeval_copy: tuple[Path, Path]) -> None:
    data, embeddings = scirepeval_copy
    result = evaluate({"scirepeval-search": embeddings, "scirepeval-drsm": embeddings}, RunConfig(data=data,
                                                                                                  tasks=[SEARCH, DRSM],
                                                                                                  cache=False,
                                                                                                  progress=False))
    assert SEARCH not in result.tasks and DRSM in result.tasks
    assert result.skipped[SEARCH] == "no 'scirepeval-search-queries' embeddings given"


@pytest.mark.parametrize("option, message", [
    (["--format-prompt", "search=Query: "], "--format-prompt: wants FORMAT=TEXT with a format of classification, "
                                            "regression, proximity, adhoc_query, got 'search=Query: '"),
    (["--format-prompt", "Query: "], "--format-prompt: wants FORMAT=TEXT"),
    (["--format-prompt", "proximity=A", "--format-prompt", "proximity=B"],
     "--format-prompt gives proximity twice; give each format once"),
    (["-p", 'format_prompts={"proximity": 3}'], "format_prompts"),
])
def test_a_bad_format_prompt_is_one_line_naming_it(option: list[str], message: str, tiny_suite: Suite,
                                                   tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    try:
        status = main(["baseline", "transformer", "--model", "x", *option, "--data", str(tiny_suite.root),
                       "--out-dir", str(tmp_path), "--quiet"])
    except SystemExit as stop:  # argparse's own errors
        status = stop.code
    assert status == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not list(tmp_path.iterdir())


def test_a_group_is_embedded_for_one_format() -> None:
    cls_group = TASKS["mesh"].spec
    assert group_input_formats()["cls"] == cls_group.input_format == "classification"
    with pytest.raises(ValueError, match="embeds group 'cls' for regression, but registered tasks embed it for "
                                         "classification"):
        register_task(type("CitationCountOfMeshPapers", (TASKS["mesh"],), {"spec": TaskSpec(
            "mesh-regression", "x", "classification", ("f1",), "f1", "cls", cls_group.metadata_file,
            input_format="regression")}))
    with pytest.raises(ValueError, match="input_format 'search' must be one of classification, regression, "
                                         "proximity, adhoc_query"):
        TaskSpec("x", "x", "ranking", ("map",), "map", "x", "", input_format="search")


CHECKOUT = Path(os.environ.get("SCIREPEVAL_CHECKOUT", "/work/.mirror/allenai+scirepeval/repo"))


@pytest.mark.skipif(not CHECKOUT.exists(), reason="no allenai/scirepeval checkout (set SCIREPEVAL_CHECKOUT)")
def test_a_model_reads_the_texts_scirepeval_gives_it(scirepeval_copy: tuple[Path, Path], tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """SciRepEval's own datasets (`evaluation/eval_datasets.py`) build each paper's text from the task's fields
    joined by " [SEP] ": ours, for the candidates and queries of Search (title, abstract, venue, year) and the
    papers of a flat config, are the same texts."""
    pytest.importorskip("datasets")
    spec = importlib.util.spec_from_file_location("scirepeval_agreement", REPO / "bench" / "scirepeval_agreement.py")
    assert spec is not None and spec.loader is not None
    agreement = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(agreement)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    data, _ = scirepeval_copy
    suite = Suite(data)
    with agreement.checkout_tree(CHECKOUT) as tree:
        monkeypatch.syspath_prepend(str(tree))
        eval_datasets = importlib.import_module("evaluation.eval_datasets")
        search = eval_datasets.IRDataset(str(data / meta_file("search")), "[SEP]",
                                         fields=["title", "abstract", "venue", "year"])
        theirs = {bid: text for texts, ids in search.batches() for text, bid in zip(texts, ids)}
        flat = eval_datasets.SimpleDataset(str(data / meta_file("drsm")), "[SEP]")
        theirs_flat = {bid: text for texts, ids in flat.batches() for text, bid in zip(texts, ids)}
    candidates = _group_papers(suite, [SEARCH], "scirepeval-search")
    queries = _group_papers(suite, [SEARCH], "scirepeval-search-queries")
    ours = {**{(p.paper_id, "c"): paper_text(p, " [SEP] ") for p in candidates},
            **{(p.paper_id, "q"): paper_text(p, " [SEP] ") for p in queries}}
    assert ours == theirs
    assert {p.paper_id: paper_text(p, " [SEP] ") for p in _group_papers(suite, [DRSM], "scirepeval-drsm")} == \
        theirs_flat


def _group_papers(suite: Suite, tasks: list[str], group: str) -> list[Paper]:
    """The papers the plan embeds for `group` (`embedding_needs`: its own texts, or its metadata file's)."""
    need = embedding_needs(suite, tasks)[group]
    return list(need.papers) or [p for p in suite.papers((need.metadata_file,), {need.metadata_file: TASKS[
        tasks[0]].spec.text_fields}) if need.ids is None or p.paper_id in need.ids]


class LengthModel:
    """A model object whose vector of a text is what the test needs to see: its length and its prompt."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        self.texts += texts
        return np.array([[len(t), float(t.startswith("Q: ")), float(t.startswith("C: ")), 1.0] for t in texts])


def test_a_model_object_gets_its_format_prompts_and_saves_every_vector(scirepeval_copy: tuple[Path, Path],
                                                                      tmp_path: Path) -> None:
    data, _ = scirepeval_copy
    model = LengthModel()
    result = evaluate_model(model, RunConfig(data=data, tasks=[SEARCH, DRSM], cache=False, progress=False),
                            encode=EncodeConfig(format_prompts={"adhoc_query": "Q: ", "classification": "C: "}))
    assert set(result.tasks) == {SEARCH, DRSM}
    meta = read_meta(data / meta_file("search"))
    assert sorted(t for t in model.texts if t.startswith("Q: ")) == sorted(f"Q: {meta.records[q]['title']}"
                                                                           for q in meta.queries)
    assert sum(t.startswith("C: ") for t in model.texts) == len(read_meta(data / meta_file("drsm")).records)
    assert sum(t.endswith(" Synthetic Venue 2020") for t in model.texts) == len(meta.records) - len(meta.queries)
    assert result.model_info.call["format_prompts"] == {"adhoc_query": "Q: ", "classification": "C: "}
    with pytest.raises(ScidocsEvalError, match="save_embeddings keeps one vector a paper, but with format_prompts"):
        evaluate_model(LengthModel(), RunConfig(data=data, tasks=[SEARCH], progress=False),
                       encode=EncodeConfig(format_prompts={"adhoc_query": "Q: "}), save_embeddings=tmp_path / "x.jsonl")
    assert not list(tmp_path.iterdir())
    with pytest.raises(ScidocsEvalError, match="format_prompts"):
        evaluate_model(LengthModel(), RunConfig(data=data, tasks=[SEARCH], progress=False),
                       encode=EncodeConfig(format_prompts={"search": "Q: "}))
    # without format prompts, the papers and the queries (embedded apart) are both saved, and rescore the same
    saved = tmp_path / "saved.jsonl"
    plain = evaluate_model(LengthModel(), RunConfig(data=data, tasks=[SEARCH], cache=False, progress=False),
                           save_embeddings=saved)
    queries = tmp_path / "saved-scirepeval-search-queries.jsonl"
    assert set(_embeddings(queries)) == set(read_meta(data / meta_file("search")).queries)
    rescored = evaluate({"scirepeval-search": saved, "scirepeval-search-queries": queries}, RunConfig(data=data,
                                                                                                      tasks=[SEARCH],
                                                                                                      cache=False,
                                                                                                      progress=False))
    assert rescored.tasks[SEARCH].metrics == plain.tasks[SEARCH].metrics
    assert {Path(s["path"]).name for s in plain.fingerprints["embeddings"].values()} == {saved.name, queries.name}


def test_a_papers_model_is_told_each_papers_input_format(scirepeval_copy: tuple[Path, Path]) -> None:
    data, _ = scirepeval_copy
    seen: dict[str, set[str]] = {}

    def model(papers: list[dict]) -> np.ndarray:
        for paper in papers:
            seen.setdefault(paper["input_format"], set()).add(paper["paper_id"])
        return np.ones((len(papers), 3)) + np.arange(len(papers))[:, None]

    evaluate_model(model,
                   RunConfig(data=data, tasks=[SEARCH, "scirepeval-tweet-mentions"], cache=False, progress=False),
                   encode=EncodeConfig(inputs="papers", format_prompts={"regression": ""}))
    meta = read_meta(data / meta_file("search"))
    assert seen["adhoc_query"] == set(meta.queries)
    assert seen["proximity"] == set(meta.records) - set(meta.queries)
    assert seen["regression"] == set(read_meta(data / meta_file("tweet_mentions")).records)


def test_embed_embeds_for_the_input_format_it_is_given(tiny_bert: Path, tiny_suite: Suite, tmp_path: Path) -> None:
    metadata = tiny_suite.path("paper_metadata_mag_mesh.json")
    common = ["embed", "--adapter", "transformer", "--model", str(tiny_bert), "--metadata", str(metadata),
              "--format-prompt", "classification=Classify: ", "--max-length", "32", "--device", "cpu", "--quiet"]
    assert main([*common, "--input-format", "classification", "-o", str(tmp_path / "c.jsonl")]) == 0
    assert main([*common, "-o", str(tmp_path / "p.jsonl")]) == 0  # proximity: no prompt of its own
    papers = tiny_suite.papers(("mag_mesh",))[:4]
    for name, prompt in (("c", "Classify: "), ("p", "")):
        vectors = _embeddings(tmp_path / f"{name}.jsonl")
        np.testing.assert_allclose(np.array([vectors[p.paper_id] for p in papers]), _encode(tiny_bert, prompt, papers),
                                   atol=1e-5)
    assert read_settings(tmp_path / "c.jsonl")["role"]["input_format"] == "classification"


def test_an_id_two_files_of_one_format_give_different_texts_is_embedded_once_from_the_first_with_a_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    data = tmp_path / "data"
    write_synthetic_scirepeval(data, seed=4)
    shared = next(iter(read_meta(data / meta_file("scidocs_view_cite_read")).records))
    with (data / meta_file("relish")).open("ab") as handle:
        handle.write(orjson.dumps({"doc_id": shared, "title": "another text", "abstract": ""}) + b"\n")
    tasks = ["scirepeval-relish", "scirepeval-scidocs-cite"]
    with caplog.at_level("WARNING", logger="scidocs_eval"):
        suite = Suite(data)
        adapter = EncoderAdapter(lambda texts: None, format_prompts={"proximity": "P: "})
        plan = plan_embedding(suite, tasks, embedding_needs(suite, tasks), lambda group: adapter)
    (proximity,) = [job.papers for job in plan.jobs if job.role.input_format == "proximity"]
    chosen = [p for p in proximity if p.paper_id == shared]
    assert len(chosen) == 1 and chosen[0].title == "another text"  # relish's file comes first
    assert "1 paper id(s) have a different text in two metadata files" in caplog.text and shared in caplog.text
