"""SPECTER training on the real sample with a tiny BERT: loss goes down, resume is exact, the output embeds."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import orjson
import pytest

from scidocs_eval.cli.main import main
from scidocs_eval.data.demo import DemoConfig, build_demo_suite
from scidocs_eval.errors import ScidocsEvalError

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from builders import build_small_bert, model_weights  # noqa: E402

from scidocs_eval.training.specter import latest_checkpoint, train_specter  # noqa: E402

SETTINGS = dict(epochs=3, learning_rate=2e-2, batch_size=8, effective_batch_size=16, max_length=48,
                checkpoint_every=3, keep_checkpoints=None, progress=False)


@pytest.fixture(scope="module")
def tiny_bert(sample_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    metadata = orjson.loads((sample_dir / "metadata.json").read_bytes())
    texts = [f"{p['title']} {p.get('abstract') or ''}" for p in metadata.values()]
    return build_small_bert(texts, tmp_path_factory.mktemp("tiny-bert"), vocab_size=2000, hidden_size=32)


@pytest.fixture(scope="module")
def trained(sample_dir: Path, tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    out = tmp_path_factory.mktemp("specter-run")
    return out, train_specter(sample_dir, out, base_model=str(tiny_bert), **SETTINGS)


def test_training_lowers_the_validation_loss(trained: tuple[Path, object]) -> None:
    out, history = trained
    assert history.total_steps == history.steps == 12           # 59 triplets / 16 per step = 4 steps, 3 epochs
    assert sorted(history.val_loss) == [0, 1, 2, 3]
    assert history.val_loss[3] < history.val_loss[0] - 0.02
    saved = orjson.loads((out / "training_history.json").read_bytes())
    assert saved["val_loss"]["3"] == pytest.approx(history.val_loss[3])
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == sorted(
        ["step-3", "step-4", "step-6", "step-8", "step-9", "step-12"])


@pytest.mark.slow
def test_resume_gives_the_same_weights_as_an_uninterrupted_run(trained: tuple[Path, object], sample_dir: Path,
                                                               tiny_bert: Path, tmp_path: Path) -> None:
    out, history = trained
    interrupted = tmp_path / "run"
    shutil.copytree(out / "checkpoints" / "step-3", interrupted / "checkpoints" / "step-3")
    assert latest_checkpoint(interrupted).name == "step-3"
    resumed = train_specter(sample_dir, interrupted, base_model=str(tiny_bert), resume=True, **SETTINGS)
    assert resumed == history
    expected, got = model_weights(out), model_weights(interrupted)
    assert expected.keys() == got.keys()
    assert all(torch.equal(expected[name], got[name]) for name in expected)


def test_resume_without_a_checkpoint_is_an_error(sample_dir: Path, tiny_bert: Path, tmp_path: Path) -> None:
    with pytest.raises(ScidocsEvalError, match="--resume: no checkpoint under .*checkpoints"):
        train_specter(sample_dir, tmp_path, base_model=str(tiny_bert), resume=True)


def test_embed_command_loads_the_trained_checkpoint(trained: tuple[Path, object], sample_dir: Path,
                                                    tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out, _ = trained
    target = tmp_path / "emb.jsonl"
    assert main(["embed", "--model", str(out), "--metadata", str(sample_dir / "sample-metadata.json"),
                 "--out", str(target), "--max-length", "64", "--quiet"]) == 0
    rows = [orjson.loads(line) for line in target.read_bytes().splitlines()]
    assert len(rows) == 55 and {len(r["embedding"]) for r in rows} == {32}
    assert "55 papers embedded with specter" in capsys.readouterr().out


@pytest.mark.slow
def test_baseline_specter_runs_on_a_trained_checkpoint(trained: tuple[Path, object], tmp_path: Path) -> None:
    out, _ = trained
    suite = build_demo_suite(tmp_path / "suite", DemoConfig(mag_papers=40, mesh_papers=30, ranking_queries=4,
                                                            recomm_impressions=(20, 5, 5), recomm_papers=60))
    results = tmp_path / "results"
    assert main(["baseline", "specter", "--model", str(out), "--data", str(suite.root), "--tasks",
                 "cite,cocite,coview,coread", "--max-length", "64", "--out-dir", str(results), "--quiet"]) == 0
    run = orjson.loads((results / "specter.results.json").read_bytes())
    assert run["settings"]["adapter"]["params"]["model"] == str(out)
    text = (results / "specter.results.json").read_text()
    assert '"cite"' in text and '"cocite"' in text


SAME_AS_TRAINED = ["--epochs", "3", "--lr", "2e-2", "--effective-batch-size", "16", "--batch-size", "8",
                   "--max-length", "48"]
"""`SETTINGS` as options of the command."""


def test_resume_with_other_training_settings_is_refused(trained: tuple[Path, object], sample_dir: Path,
                                                        tiny_bert: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture) -> None:
    """It used to continue a finished run, ignoring the new --epochs and --lr."""
    out, _ = trained
    shutil.copytree(out / "checkpoints" / "step-12", tmp_path / "checkpoints" / "step-12")
    command = ["train", "specter", "--data-dir", str(sample_dir), "--out", str(tmp_path), "--base-model",
               str(tiny_bert), *SAME_AS_TRAINED, "--resume", "--quiet", "--overwrite"]  # a copied checkpoint
    assert main([*command, "--epochs", "2", "--lr", "1e-3"]) == 2
    assert capsys.readouterr().err == (
        f"scidocs-eval: error: --resume: {tmp_path / 'checkpoints' / 'step-12'} was produced with other settings "
        "(epochs: written with 3, this run has 2); resume with the same settings, or write a new output without "
        "--resume\n")
    assert main([*command, "--lr", "1e-3"]) == 2
    assert "(learning_rate: written with 0.02, this run has 0.001)" in capsys.readouterr().err
    assert not (tmp_path / "model.safetensors").exists()
    (tmp_path / "checkpoints" / "step-12" / "training_settings.json").unlink()
    assert main(command) == 2
    assert "has no record of its training settings (training_settings.json)" in capsys.readouterr().err


def test_train_command_prints_the_validation_losses(trained: tuple[Path, object], sample_dir: Path,
                                                    tiny_bert: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture) -> None:
    out, history = trained
    shutil.copytree(out / "checkpoints" / "step-8", tmp_path / "checkpoints" / "step-8")
    command = ["train", "specter", "--data-dir", str(sample_dir), "--out", str(tmp_path), "--base-model",
               str(tiny_bert), *SAME_AS_TRAINED, "--resume", "--quiet"]
    assert main(command) == 2   # a copied checkpoint folder: not one the tool can prove it wrote
    assert "is not empty and was not written by scidocs-eval train specter" in capsys.readouterr().err
    assert main([*command, "--overwrite"]) == 0
    printed = capsys.readouterr().out
    assert f"epoch 2: validation loss {history.val_loss[2]:.4f}" in printed
    # 3 epochs of 59 triplets: the resumed run counts the steps before its checkpoint too
    assert re.search(r"^177 triplets trained at \d+\.\d\d triplets/s$", printed, re.MULTILINE)
    assert (tmp_path / "model.safetensors").is_file()
