"""A hub id that cannot be reached fails in seconds with one line saying how to get the model here, before any
output is written; a library's warning is printed once."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from scidocs_eval.cli.main import _printed_by_its_library, main
from scidocs_eval.formats.suite import Suite

pytest.importorskip("huggingface_hub", reason="the [transformers] extra (huggingface_hub) is not installed")


@pytest.mark.parametrize("offline", ["HF_HUB_OFFLINE", "unreachable endpoint"])
@pytest.mark.parametrize("command", [["baseline", "transformer", "--model", "nosuch/model", "--tasks", "mesh"],
                                     ["baseline", "sentence-transformer", "--model", "nosuch/model", "--tasks", "mesh"],
                                     ["embed", "--metadata", "papers.jsonl", "-o", "out/s.jsonl"]])
def test_a_hub_id_out_of_reach_fails_fast_in_one_line_writing_nothing(
        command: list[str], offline: str, demo_suite: Suite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import huggingface_hub.constants

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub-cache"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "empty-hub-cache"))
    if offline == "HF_HUB_OFFLINE":
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    else:
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # the discard port: refused at once
        for proxy in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY"):
            monkeypatch.delenv(proxy, raising=False)
    (tmp_path / "papers.jsonl").write_text('{"paper_id": "a", "title": "t", "abstract": "x"}\n', encoding="utf-8")
    started = time.perf_counter()
    status = main([*command, *(["--data", str(demo_suite.root)] if command[0] == "baseline" else []), "--quiet"])
    seconds = time.perf_counter() - started
    captured = capsys.readouterr()
    assert status == 2
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "not in the local Hugging Face cache" in lines[0], captured.err
    assert "pass --model a local checkpoint folder" in lines[0] and "hf download" in lines[0]
    assert not (tmp_path / "scidocs-results").exists() and not (tmp_path / "out").exists()  # no output folder
    assert "embedding" not in captured.out
    assert seconds < 5


def test_a_warning_of_a_library_with_its_own_handler_is_printed_once() -> None:
    library = logging.getLogger("some_library_with_a_handler")
    library.addHandler(logging.NullHandler())
    try:
        record = logging.LogRecord("some_library_with_a_handler.sub", logging.WARNING, __file__, 1, "retrying", None,
                                   None)
        assert not _printed_by_its_library(record)
    finally:
        library.handlers.clear()
    plain = logging.LogRecord("scidocs_eval.models", logging.WARNING, __file__, 1, "ours", None, None)
    assert _printed_by_its_library(plain)
