"""Hostile but realistic inputs to every command: one line naming the file, line, id or option at fault, exit
status 2, no traceback, and no empty or partial output file left behind (issue #12)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from scidocs_eval.cli.main import main
from scidocs_eval.data.demo import DemoConfig, build_demo_suite
from scidocs_eval.evaluation.results import RunResult

SCRIPT = Path(sys.executable).parent / "scidocs-eval"


def error_line(capsys: pytest.CaptureFixture[str]) -> str:
    """The one line a failed command printed on stderr (and nothing else)."""
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("scidocs-eval: error: "), err
    return lines[0].removeprefix("scidocs-eval: error: ")


def files_in(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


# -- run --out ---------------------------------------------------------------------------------------------------

def test_run_output_a_folder_or_under_a_file_fails_first_and_writes_nothing(
        cite_suite: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, embeddings = cite_suite
    (tmp_path / "results").mkdir()
    (tmp_path / "afile").write_text("mine")
    before = files_in(tmp_path)
    run = ["run", "--embeddings", str(embeddings), "--data", str(root), "--tasks", "cite", "--quiet", "-o"]
    assert main([*run, str(tmp_path / "results")]) == 2
    assert error_line(capsys) == f"--out {tmp_path / 'results'} is a folder; give a file path"
    assert main([*run, str(tmp_path / "afile" / "x.json")]) == 2
    assert error_line(capsys) == (f"--out {tmp_path / 'afile' / 'x.json'}: {tmp_path / 'afile'} is a file, not a "
                                  "folder")
    assert files_in(tmp_path) == before and (tmp_path / "afile").read_text() == "mine"


NOT_OURS = ("already exists and was not written by scidocs-eval (no record of it in this cache's ledger, {ledger}: "
            "if scidocs-eval wrote it, it was with another $SCIDOCS_EVAL_CACHE or before the cache was cleared); it "
            "is not replaced: pass --overwrite to replace it, or choose another path")


def not_ours() -> str:
    """The refusal's text for a file the ledger of the test's cache has no record of."""
    return NOT_OURS.format(ledger=Path(os.environ["SCIDOCS_EVAL_CACHE"]) / "outputs" / "ledger")


def test_run_output_never_replaces_a_file_that_is_not_a_results_file(
        cite_suite: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, embeddings = cite_suite
    thesis = tmp_path / "thesis.tex"
    thesis.write_text("precious")
    assert main(["run", "--embeddings", str(embeddings), "--data", str(root), "--tasks", "cite", "-o", str(thesis),
                 "--quiet"]) == 2
    assert error_line(capsys) == f"--out {thesis} {not_ours()}"
    assert thesis.read_text() == "precious"
    assert main(["run", "--embeddings", str(embeddings), "--data", str(root), "--tasks", "cite", "-o",
                 str(tmp_path / "r.json"), "--quiet"]) == 0
    assert main(["table", str(tmp_path / "r.json"), "-o", str(thesis)]) == 2
    assert error_line(capsys) == f"--out {thesis} {not_ours()}"
    assert thesis.read_text() == "precious"
    assert main(["table", str(tmp_path / "r.json"), "-o", str(tmp_path / "t.md")]) == 0
    assert main(["table", str(tmp_path / "r.json"), "-o", str(tmp_path / "t.md"), "--no-paper"]) == 0   # its own
    assert (tmp_path / "t.md").read_text().startswith("| Model |")


def test_baseline_out_dir_under_a_file(demo_suite, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "afile").write_text("mine")
    assert main(["baseline", "random", "--data", str(demo_suite.root), "--out-dir", str(tmp_path / "afile"),
                 "--quiet"]) == 2
    assert error_line(capsys) == f"--out-dir {tmp_path / 'afile'} is a file, not a folder"


def test_results_are_written_whole_or_not_at_all(cite_suite: tuple[Path, Path], tmp_path: Path) -> None:
    root, embeddings = cite_suite
    out = tmp_path / "out.json"
    assert main(["run", "--embeddings", str(embeddings), "--data", str(root), "--tasks", "cite", "-o", str(out),
                 "--quiet"]) == 0
    assert RunResult.load(out).tasks["cite"].metrics["map"] == 50.0
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []   # no temporary file left


# -- parameters --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("param", "message"), [
    ("recomm.seeds=abc", "task 'recomm': seeds='abc' is not allowed; seeds must be an int >= 1"),
    ("recomm.sedes=2", "task 'recomm' has no parameter 'sedes' (did you mean 'seeds'?); it takes: seeds=5, "),
    ("recomm.seeds=true", "task 'recomm': seeds=True is not allowed; seeds must be an int >= 1"),
    ("mag.folds=2.5", "task 'mag': folds=2.5 is not allowed; folds must be an int >= 2"),
])
def test_task_params_are_checked_before_any_work(demo_suite, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 param: str, message: str) -> None:
    embeddings = tmp_path / "e.jsonl"
    embeddings.write_text('{"paper_id": "x", "embedding": [1]}\n')
    assert main(["run", "--embeddings", str(embeddings), "--data", str(demo_suite.root), "--tasks", "recomm,mag",
                 "--task-param", param, "--quiet"]) == 2
    assert error_line(capsys).startswith(message)


def test_adapter_params_are_checked_too(demo_suite, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["baseline", "random", "--data", str(demo_suite.root), "--out-dir", str(tmp_path), "-p", "dim=abc",
                 "--quiet"]) == 2
    assert error_line(capsys) == "baseline 'random': dim='abc' is not allowed; dim must be an int >= 1"
    assert files_in(tmp_path) == []


# -- table -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("content", "problem"), [
    (b"[1, 2]", "a JSON list, not an object"),
    (b'{"tasks": []}', "'format' is None, not 1"),
    (b'{"format": 1, "model": "x", "tasks": {"cite": {"metrics": []}}}',
     "malformed results file: task 'cite': field 'metrics' must be an object, got list []"),
    (b'{"format": 1, "model": "x", "tasks": {"cite": {"metrics": {"map": "high"}}}}',
     "malformed results file: task 'cite' has no 'metrics' object of numbers"),
    (b"", "Input is a zero-length, empty document"),
])
def test_table_on_a_file_that_is_not_a_results_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    content: bytes, problem: str) -> None:
    path = tmp_path / "paper_metadata.json"
    path.write_bytes(content)
    assert main(["table", str(path), "-o", str(tmp_path / "table.md")]) == 2
    line = error_line(capsys)
    assert line.startswith(f"{path}: ") and problem in line
    assert not (tmp_path / "table.md").exists()


# -- embed -------------------------------------------------------------------------------------------------------

def _metadata(tmp_path: Path, records: dict) -> Path:
    path = tmp_path / "metadata.json"
    path.write_bytes(orjson.dumps(records))
    return path


@pytest.mark.parametrize(("records", "message"), [
    ({"a": {"title": 5, "abstract": "x"}}, "paper 'a': field 'title' is integer 5, expected a string, or null "
     "(may be absent)"),
    ({"a": {"title": "t", "abstract": ["x"]}}, "paper 'a': field 'abstract' is list ['x'], expected a string, or "
     "null (may be absent)"),
    ({"a": {"title": "t"}, "b": "a string, not a record"},
     "paper 'b': the row is string 'a string, not a record', expected an object {paper_id, title, abstract, "
     "authors, references, cited_by}"),
    ({"a": {"title": "t"}, "c": {"paper_id": "d", "title": "u"}},
     "paper 'c': its 'paper_id' is 'd'; the key and the paper_id must agree"),
])
def test_embed_rejects_bad_metadata_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       records: dict, message: str) -> None:
    metadata = _metadata(tmp_path, records)
    assert main(["embed", "--adapter", "random", "--metadata", str(metadata), "--out", str(tmp_path / "e.jsonl"),
                 "--quiet"]) == 2
    assert error_line(capsys) == f"{metadata}: {message}"
    assert not (tmp_path / "e.jsonl").exists()


def test_embed_jsonl_title_of_the_wrong_type_names_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    papers = tmp_path / "papers.jsonl"
    papers.write_text('{"paper_id": "a", "title": "t"}\n{"paper_id": "b", "title": 1.5}\n')
    assert main(["embed", "--adapter", "random", "--metadata", str(papers), "--out", str(tmp_path / "e.jsonl")]) == 2
    assert error_line(capsys) == f"{papers}:2: field 'title' is number 1.5, expected a string, or null (may be absent)"


def test_embed_out_a_folder_and_a_model_path_that_does_not_exist(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    metadata = _metadata(tmp_path, {"a": {"title": "t", "abstract": "x"}})
    (tmp_path / "folder").mkdir()
    assert main(["embed", "--adapter", "random", "--metadata", str(metadata), "--out", str(tmp_path / "folder")]) == 2
    assert error_line(capsys) == f"--out {tmp_path / 'folder'} is a folder; give a file path"
    for model in (str(tmp_path / "no-such-model"), "./no-such-model", str(metadata)):
        out = tmp_path / "e.jsonl"
        assert main(["embed", "--adapter", "transformer", "--model", model, "--metadata", str(metadata),
                     "--out", str(out), "--quiet"]) == 2
        reason = "is a file" if model == str(metadata) else "no such folder"
        assert error_line(capsys).startswith(f"model {model}: {reason}; give a checkpoint folder")
        assert not out.exists()


def test_embed_never_replaces_an_existing_file_unasked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    metadata = _metadata(tmp_path, {"a": {"title": "t", "abstract": "x"}, "b": {"title": "u"}})
    out = tmp_path / "specter.jsonl"
    out.write_text('{"paper_id": "z", "embedding": [1.0]}\n' * 3)
    command = ["embed", "--adapter", "random", "--metadata", str(metadata), "--out", str(out), "--quiet"]
    assert main(command) == 2
    assert error_line(capsys) == f"--out {out} {not_ours()}"
    assert out.read_text() == '{"paper_id": "z", "embedding": [1.0]}\n' * 3
    assert main([*command, "--overwrite"]) == 0
    assert [orjson.loads(line)["paper_id"] for line in out.read_text().splitlines()] == ["a", "b"]


# -- data build --------------------------------------------------------------------------------------------------

def test_data_build_title_a_list_and_out_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    papers = tmp_path / "papers.jsonl"
    papers.write_text('{"paper_id": "a", "title": "x", "label": 1}\n{"paper_id": "b", "title": ["y"], "label": 2}\n')
    citations = tmp_path / "cites.tsv"
    citations.write_text("a\tb\n")
    build = ["data", "build", "--papers", str(papers), "--citations", str(citations), "--out"]
    assert main([*build, str(tmp_path / "suite")]) == 2
    assert error_line(capsys) == f"{papers}:2: field 'title' is list ['y'], expected a string, or null (may be absent)"
    papers.write_text('{"paper_id": "a", "title": "x", "label": 1}\n')
    assert main([*build, str(citations)]) == 2
    assert error_line(capsys) == f"--out {citations} is a file; give a folder to write into"
    assert files_in(tmp_path) == ["cites.tsv", "papers.jsonl"] and citations.read_text() == "a\tb\n"


# -- train specter -----------------------------------------------------------------------------------------------

def _training_folder(sample_dir: Path, tmp_path: Path, without: str | None = None) -> Path:
    folder = tmp_path / "training"
    shutil.copytree(sample_dir, folder)
    if without:
        (folder / without).unlink()
    return folder


def test_train_specter_numeric_titles_and_missing_train_txt(sample_dir: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    folder = _training_folder(sample_dir, tmp_path, without="train.txt")
    train = ["train", "specter", "--data-dir", str(folder), "--out", str(tmp_path / "model"), "--quiet"]
    assert main(train) == 2
    assert error_line(capsys) == f"{folder / 'train.txt'}: training queries file not found (one query id per line)"
    shutil.copy(sample_dir / "train.txt", folder / "train.txt")
    metadata = orjson.loads((folder / "metadata.json").read_bytes())
    first = next(iter(metadata))
    metadata[first]["title"] = 1234
    (folder / "metadata.json").write_bytes(orjson.dumps(metadata))
    assert main(train) == 2
    assert error_line(capsys) == f"{folder / 'metadata.json'}: paper '{first}': field 'title' is integer 1234, " \
                                 "expected a string, or null (may be absent)"
    assert not (tmp_path / "model").exists()


def test_train_specter_without_val_txt_says_so(sample_dir: Path, tmp_path: Path,
                                               caplog: pytest.LogCaptureFixture) -> None:
    from scidocs_eval.training.triplets import TrainingData

    folder = _training_folder(sample_dir, tmp_path, without="val.txt")
    TrainingData.read(folder)
    assert f"{folder / 'val.txt'} not found: training WITHOUT validation (no validation loss is computed)" in \
        caplog.messages


# -- unreadable files (as a user who may not read them) ----------------------------------------------------------

@pytest.fixture()
def open_folder() -> Iterator[Path]:
    """A folder every user may enter (pytest's tmp_path is private to its owner)."""
    folder = Path(tempfile.mkdtemp(prefix="scidocs-eval-test-"))
    folder.chmod(0o777)
    yield folder
    shutil.rmtree(folder)


def _as_unprivileged_user(command: list[str], home: Path) -> subprocess.CompletedProcess:
    """`command` as user nobody when we are root (root reads every file), as ourselves otherwise."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root and setpriv (to drop to user nobody) is not installed")
        prefix = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    env = {**os.environ, "HOME": str(home), "SCIDOCS_EVAL_CACHE": str(home / "cache")}
    return subprocess.run(prefix + command, capture_output=True, text=True, env=env, cwd=home, timeout=300)


def test_unreadable_embeddings_metadata_and_suite_files(open_folder: Path) -> None:
    suite = build_demo_suite(open_folder / "suite", DemoConfig(mag_papers=60, mesh_papers=40, ranking_queries=4,
                                                               recomm_impressions=(12, 6, 6), recomm_papers=80))
    embeddings = open_folder / "e.jsonl"
    embeddings.write_text("".join(f'{{"paper_id": "{p.paper_id}", "embedding": [1, 2]}}\n'
                                  for p in suite.papers(("view_cite_read",))))
    for path in [open_folder, *open_folder.rglob("*")]:
        path.chmod(0o777 if path.is_dir() else 0o666)
    run = [str(SCRIPT), "run", "--embeddings", str(embeddings), "--data", str(suite.root), "--tasks", "cite",
           "-o", str(open_folder / "out.json"), "--quiet"]
    metadata = suite.root / "paper_metadata_view_cite_read.json"
    embed = [str(SCRIPT), "embed", "--adapter", "random", "--metadata", str(metadata), "--out",
             str(open_folder / "out.jsonl")]
    for unreadable, command in ((embeddings, run), (suite.root / "cite" / "test.qrel", run), (metadata, embed)):
        unreadable.chmod(0)
        done = _as_unprivileged_user(command, open_folder)
        unreadable.chmod(0o666)
        assert done.returncode == 2, done.stderr
        assert done.stderr == f"scidocs-eval: error: {unreadable}: Permission denied\n"
        assert not (open_folder / "out.json").exists() and not (open_folder / "out.jsonl").exists()


# -- Ctrl-C ------------------------------------------------------------------------------------------------------

def _wait_until_loaded(process: subprocess.Popen, library: str, timeout: float = 60) -> bool:
    """Wait until `process` has mapped a shared object of `library` (it is importing it); False if it ended."""
    maps = Path(f"/proc/{process.pid}/maps")
    deadline = time.monotonic() + timeout
    while process.poll() is None and time.monotonic() < deadline:
        if library in maps.read_text(errors="replace"):
            return True
        time.sleep(0.01)
    return False


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc to see how far start-up got")
@pytest.mark.parametrize("after", [0.0, 0.3])
def test_ctrl_c_during_start_up_exits_130_without_a_traceback(tmp_path: Path, after: float) -> None:
    """SIGINT while the command's modules import (once `unicodedata`'s extension is being loaded: the first
    command modules import `data.near_duplicates`; `tasks` loads no numpy, tests/test_startup.py), and a little
    later."""
    process = subprocess.Popen([str(SCRIPT), "tasks"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               cwd=tmp_path)
    assert _wait_until_loaded(process, "unicodedata"), "the command ended before its modules were imported"
    time.sleep(after)
    if process.poll() is not None:
        pytest.skip("the command finished before the interrupt")
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    if process.returncode == 0:  # the command had done its work (it was shutting down): the interrupt is ignored
        assert err == "" and out == subprocess.run([str(SCRIPT), "tasks"], capture_output=True, text=True,
                                                   cwd=tmp_path).stdout
    else:
        assert (process.returncode, err) == (130, "scidocs-eval: interrupted\n")


def test_an_interrupt_after_the_command_returned_leaves_its_exit_status(tmp_path: Path) -> None:
    """The window the test above cannot aim at: the command has returned and the interpreter shuts down (Python
    restores the default handler there, which would kill the finished command by the signal, status -2)."""
    done = subprocess.run(
        [sys.executable, "-c", "import os, signal, sys, scidocs_eval_entry as entry; sys.argv[1:] = ['tasks']; "
                               "status = entry.main(); os.kill(os.getpid(), signal.SIGINT); sys.exit(status)"],
        capture_output=True, text=True, cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    assert "cite" in done.stdout


def test_an_error_raised_under_a_progress_bar_is_a_line_of_its_own(
        cite_suite: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The reading bar of a malformed file is cleared before the error, which starts a line (stderr a file here,
    so `grep '^scidocs-eval: error'` finds it), not left behind the bar's text."""
    monkeypatch.delenv("SCIDOCS_EVAL_QUIET")
    root, _ = cite_suite
    malformed = tmp_path / "emb.jsonl"
    malformed.write_text('{"paper_id": "p1", "embedding": [1.0]}\nnot json\n')
    assert main(["run", "--embeddings", str(malformed), "--data", str(root), "--tasks", "cite"]) == 2
    err = capsys.readouterr().err
    assert "reading emb.jsonl" in err  # the bar was drawn
    assert err.splitlines()[-1] == f"scidocs-eval: error: {malformed}:2: malformed JSON (Expecting value: line 1 " \
                                   "column 1 (char 0))"


def test_a_refusal_names_why_the_file_is_not_the_tools(cite_suite: tuple[Path, Path], tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """The tool's own file, edited since, is refused as changed; the same file seen through another cache (whose
    ledger never recorded it: a changed $SCIDOCS_EVAL_CACHE, a cleared cache) names that likelier cause."""
    root, embeddings = cite_suite
    out = tmp_path / "r.json"
    run = ["run", "--embeddings", str(embeddings), "--data", str(root), "--tasks", "cite", "--quiet", "-o", str(out)]
    assert main(run) == 0
    cache = os.environ["SCIDOCS_EVAL_CACHE"]
    monkeypatch.setenv("SCIDOCS_EVAL_CACHE", str(tmp_path / "another-cache"))
    assert main(run) == 2
    assert error_line(capsys) == f"--out {out} {not_ours()}"
    monkeypatch.setenv("SCIDOCS_EVAL_CACHE", cache)
    out.write_bytes(out.read_bytes() + b" ")
    assert main(run) == 2
    assert error_line(capsys) == (f"--out {out} already exists and was not written by scidocs-eval as it is now (it "
                                  "was changed since); it is not replaced: pass --overwrite to replace it, or choose "
                                  "another path")

