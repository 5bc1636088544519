"""SPECTER training under torchrun on CPU (gloo): two processes train what one does, and resume exactly."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from scidocs_eval.errors import ScidocsEvalError

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from builders import build_small_bert  # noqa: E402

from scidocs_eval.training.specter import train_specter  # noqa: E402

# 59 training triplets in 29-triplet steps: the last step of each epoch has 1, so the second process has none.
SETTINGS = dict(epochs=2, learning_rate=1e-3, batch_size=8, effective_batch_size=29, max_length=48,
                checkpoint_every=2)


def _options(settings: dict) -> list[str]:
    names = {"learning_rate": "--lr"}
    return [part for key, value in settings.items()
            for part in (names.get(key, "--" + key.replace("_", "-")), str(value))]


def _torchrun(sample_dir: Path, base_model: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
               "-m", "scidocs_eval.cli", "train", "specter", "--data-dir", str(sample_dir), "--out", str(out),
               "--base-model", str(base_model), "--device", "cpu", "--quiet", *_options(SETTINGS), *extra]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _weights(folder: Path) -> dict:
    from transformers import AutoModel

    return AutoModel.from_pretrained(folder).state_dict()


@pytest.fixture(scope="module")
def dropout_free_bert(sample_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Without dropout a step's gradient depends only on its triplets, not on how they are split."""
    metadata = orjson.loads((sample_dir / "metadata.json").read_bytes())
    texts = [f"{p['title']} {p.get('abstract') or ''}" for p in metadata.values()]
    return build_small_bert(texts, tmp_path_factory.mktemp("bert"), vocab_size=2000, hidden_size=32, dropout=0.0)


@pytest.fixture(scope="module")
def two_process_run(sample_dir: Path, dropout_free_bert: Path,
                    tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    out = tmp_path_factory.mktemp("ddp-run")
    return out, _torchrun(sample_dir, dropout_free_bert, out)


@pytest.mark.slow  # the module's two-process training run (20 to 45 s on 2 cores)
def test_two_processes_train_what_one_process_trains(two_process_run: tuple[Path, subprocess.CompletedProcess],
                                                     sample_dir: Path, dropout_free_bert: Path,
                                                     tmp_path: Path) -> None:
    out, done = two_process_run
    one = train_specter(sample_dir, tmp_path, base_model=str(dropout_free_bert), device="cpu", progress=False,
                        **SETTINGS)
    two = orjson.loads((out / "training_history.json").read_bytes())
    assert two["steps"] == one.steps == 6
    # Summation order differs between one process and an all-reduce of two; Adam turns that float noise into
    # weight moves of about the learning rate (below), so losses after a few steps agree to ~1e-5, not better
    # (CI once saw a relative difference of 2.3e-5 at epoch 2). A wrong gradient average is off by far more.
    assert [two["train_loss"][str(epoch)] for epoch in (1, 2)] == pytest.approx(
        [one.train_loss[1], one.train_loss[2]], rel=1e-4)
    assert [two["val_loss"][str(epoch)] for epoch in (0, 1, 2)] == pytest.approx(
        [one.val_loss[0], one.val_loss[1], one.val_loss[2]], rel=1e-4)
    # Adam moves a weight by about the learning rate whatever its gradient's size, so the few weights whose
    # gradient is float noise (a key bias has none) may differ; every other one agrees.
    expected, got = _weights(tmp_path), _weights(out)
    differing = sum(int(((expected[name] - got[name]).abs() > 1e-5).sum()) for name in expected)
    assert differing < 1e-3 * sum(weights.numel() for weights in expected.values())
    assert done.stdout.count("model written to") == 1   # only rank 0 prints


@pytest.mark.slow
def test_two_process_resume_gives_the_same_weights(two_process_run: tuple[Path, subprocess.CompletedProcess],
                                                   sample_dir: Path, dropout_free_bert: Path,
                                                   tmp_path: Path) -> None:
    out, _ = two_process_run
    shutil.copytree(out / "checkpoints" / "step-4", tmp_path / "checkpoints" / "step-4")
    _torchrun(sample_dir, dropout_free_bert, tmp_path, "--resume", "--overwrite")  # a copied checkpoint: not ours
    expected, got = _weights(out), _weights(tmp_path)
    assert all(torch.equal(expected[name], got[name]) for name in expected)


@pytest.mark.slow  # the module's two-process training run (20 to 45 s on 2 cores)
def test_resume_with_another_process_count_is_an_error(two_process_run: tuple[Path, subprocess.CompletedProcess],
                                                       sample_dir: Path, dropout_free_bert: Path,
                                                       tmp_path: Path) -> None:
    out, _ = two_process_run
    shutil.copytree(out / "checkpoints" / "step-4", tmp_path / "checkpoints" / "step-4")
    with pytest.raises(ScidocsEvalError, match=r"step-4 was written by 2 training process\(es\); .*\(this run has 1\)"):
        train_specter(sample_dir, tmp_path, base_model=str(dropout_free_bert), device="cpu", resume=True,
                      progress=False, **SETTINGS)


@pytest.mark.slow  # a training run in a gloo process group (15 to 20 s on 2 cores)
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads thread names from /proc")
def test_training_joins_the_gloo_threads_before_it_returns(sample_dir: Path, dropout_free_bert: Path,
                                                           tmp_path: Path) -> None:
    """A gloo worker thread still alive at interpreter shutdown can abort the process after a finished run."""
    script = tmp_path / "train.py"
    script.write_text(
        "import os\n"
        "from scidocs_eval.training.specter import train_specter\n"
        f"train_specter({str(sample_dir)!r}, {str(tmp_path / 'out')!r}, base_model={str(dropout_free_bert)!r},\n"
        f"              device='cpu', progress=False, **{ {**SETTINGS, 'epochs': 1}!r})\n"
        "names = [open(f'/proc/self/task/{task}/comm').read() for task in os.listdir('/proc/self/task')]\n"
        f"with open({str(tmp_path)!r} + f'/rank-{{os.environ[\"RANK\"]}}.txt', 'w') as report:\n"
        "    report.write(str(sum('gloo' in name for name in names)))\n"
    )
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                           str(script)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    # each rank reports in a file of its own: the two processes' printed lines can interleave
    assert [(tmp_path / f"rank-{rank}.txt").read_text() for rank in (0, 1)] == ["0", "0"]
