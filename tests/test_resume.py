"""`--resume` never mixes two runs: `baseline NAME --resume` and `embed --resume` refuse an output written with
other settings (naming the setting) and continue one written with the same settings into exactly what an
uninterrupted run writes. (`train specter --resume`: tests/test_specter_training.py.)"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from scidocs_eval.cli.main import main
from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.formats.safe_output import growing_file, output_session
from scidocs_eval.formats.suite import Paper, Suite
from scidocs_eval.models.adapter import get_adapter
from scidocs_eval.run.embedding import write_embeddings


def papers(count: int = 40) -> list[Paper]:
    return [Paper(f"p{i}", f"title {i}" if i % 9 else "", f"abstract {i}" if i % 9 else "") for i in range(count)]


def interrupt(path: Path, keep_lines: int) -> None:
    """What a crash of the writing command leaves: the first lines, then half of the next one."""
    lines = path.read_bytes().splitlines(keepends=True)
    with pytest.raises(KeyboardInterrupt), growing_file(path, rows=None) as handle:
        handle.write(b"".join(lines[:keep_lines]) + lines[keep_lines][: len(lines[keep_lines]) // 2])
        raise KeyboardInterrupt


@pytest.mark.parametrize("keep_lines", [0, 1, 7, 39])
def test_a_resumed_file_is_identical_to_an_uninterrupted_one(tmp_path: Path, keep_lines: int) -> None:
    whole, resumed = tmp_path / "whole.jsonl", tmp_path / "resumed.jsonl"
    write_embeddings(get_adapter("random", dim=8), papers(), whole, resume=False, progress=False)
    write_embeddings(get_adapter("random", dim=8), papers(), resumed, resume=False, progress=False)
    interrupt(resumed, keep_lines)
    write_embeddings(get_adapter("random", dim=8), papers(), resumed, resume=True, progress=False)
    assert resumed.read_bytes() == whole.read_bytes()
    settings = orjson.loads((tmp_path / "resumed.jsonl.settings.json").read_bytes())
    assert settings == {"adapter": "random", "params": {"dim": 8, "seed": 0}}


def test_resume_with_other_adapter_parameters_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "e.jsonl"
    write_embeddings(get_adapter("random", dim=25), papers(), out, resume=False, progress=False)
    interrupt(out, 5)
    before = out.read_bytes()
    with pytest.raises(ScidocsEvalError) as raised:
        write_embeddings(get_adapter("random", dim=384), papers(), out, resume=True, progress=False)
    assert str(raised.value) == (f"--resume: {out} was produced with other settings (params.dim: written with 25, "
                                 "this run has 384); resume with the same settings, or write a new output without "
                                 "--resume")
    assert out.read_bytes() == before
    with pytest.raises(ScidocsEvalError, match=r"\(adapter: written with 'random', this run has 'sif'\)"):
        write_embeddings(get_adapter("sif"), papers(), out, resume=True, progress=False)


def test_resume_of_a_file_without_a_settings_record_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "e.jsonl"
    out.write_bytes(b'{"paper_id": "p1", "embedding": [1.0]}\n')
    with pytest.raises(ScidocsEvalError, match="already exists and was not written by scidocs-eval"):
        write_embeddings(get_adapter("random", dim=1), papers(), out, resume=True, progress=False)
    with output_session(overwrite=True), pytest.raises(
            ScidocsEvalError, match=r"has no record of the settings that produced it \(e.jsonl.settings.json\)"):
        write_embeddings(get_adapter("random", dim=1), papers(), out, resume=True, progress=False)
    assert out.read_bytes() == b'{"paper_id": "p1", "embedding": [1.0]}\n'


def test_resume_onto_vectors_of_another_dimension_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "e.jsonl"
    write_embeddings(get_adapter("random", dim=4), papers(3), out, resume=False, progress=False)
    out.write_bytes(b'{"paper_id": "p1", "embedding": [1.0, 2.0]}\n')  # same settings record, other vectors
    with output_session(overwrite=True), pytest.raises(ScidocsEvalError,
                                                       match=r"holds 2-d vectors, this run makes 4-d ones"):
        write_embeddings(get_adapter("random", dim=4), papers(3), out, resume=True, progress=False)


def test_baseline_resume_with_another_parameter_exits_2(demo_suite: Suite, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    common = ["baseline", "random", "--data", str(demo_suite.root), "--tasks", "cite", "--out-dir", str(tmp_path),
              "--quiet"]
    assert main(common) == 0
    interrupt(tmp_path / "random.jsonl", 100)
    assert main([*common, "-p", "seed=1", "--resume"]) == 2
    err = capsys.readouterr().err
    assert err == (f"scidocs-eval: error: --resume: {tmp_path / 'random.jsonl'} was produced with other settings "
                   "(params.seed: written with 0, this run has 1); resume with the same settings, or write a new "
                   "output without --resume\n")
    assert main([*common, "--resume"]) == 0
    resumed = (tmp_path / "random.jsonl").read_bytes()
    assert main(common) == 0
    assert (tmp_path / "random.jsonl").read_bytes() == resumed


def test_baseline_resume_after_fitting_on_another_corpus_is_refused(demo_suite: Suite, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(b'{"paper_id": "x", "title": "a title", "abstract": "an abstract"}\n'
                       b'{"paper_id": "y", "title": "another title", "abstract": "another abstract"}\n')
    common = ["baseline", "random", "--data", str(demo_suite.root), "--tasks", "cite", "--out-dir",
              str(tmp_path / "out"), "--quiet"]
    assert main(common) == 0
    assert main([*common, "--train-corpus", str(corpus), "--resume"]) == 2
    assert "(corpus_sha256: written with '" in capsys.readouterr().err


@pytest.mark.slow
def test_embed_resume_with_another_pooling_is_refused_before_loading_the_model(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    metadata = tmp_path / "papers.jsonl"
    metadata.write_bytes(b"".join(orjson.dumps({"paper_id": p.paper_id, "title": p.title, "abstract": p.abstract})
                                  + b"\n" for p in papers(6)))
    out = tmp_path / "e.jsonl"
    common = ["embed", "--adapter", "transformer", "--model", "all-MiniLM-L6-v2", "--metadata", str(metadata),
              "--out", str(out), "--max-length", "32", "--quiet"]
    assert main([*common, "--pooling", "cls"]) == 0
    written = out.read_bytes()
    assert main([*common, "--pooling", "mean", "--resume"]) == 2
    assert "(params.pooling: written with 'cls', this run has 'mean')" in capsys.readouterr().err
    assert main([*common, "--pooling", "cls", "--resume"]) == 0
    assert out.read_bytes() == written


def test_one_line_says_how_many_papers_before_embedding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("SCIDOCS_EVAL_QUIET")
    out = tmp_path / "e.jsonl"
    write_embeddings(get_adapter("random", dim=4), papers(3), out, resume=False, progress=True)
    assert f"embedding 3 papers with random into {out}\n" in capsys.readouterr().err
    write_embeddings(get_adapter("random", dim=4), papers(3), out, resume=False, progress=False)
    assert "embedding" not in capsys.readouterr().err
