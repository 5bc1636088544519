"""`embed` and `baseline` under torchrun on CPU (gloo): two processes write what one writes, byte for byte; each
adds its vectors to the embedding cache, so a killed run resumes from it and a later one-process run reads it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from scidocs_eval.evaluation.papers import papers_to_embed
from scidocs_eval.formats.corpus import read_papers
from scidocs_eval.formats.suite import Suite
from scidocs_eval.run.sharded_embedding import balance

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from builders import build_small_bert  # noqa: E402

# one thread per process in every run (torchrun's default): a different thread count may round differently
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "SCIDOCS_EVAL_QUIET": "1"}
OPTIONS = ["--adapter", "transformer", "--device", "cpu", "--batch-size", "4", "--max-length", "48"]


def test_balance_deals_the_costliest_batches_first_to_the_least_loaded_process() -> None:
    assert balance([5, 9, 1, 8, 2, 2], 2) == [[1, 2, 4, 5], [0, 3]]   # loads 14 and 13
    assert balance([3, 3, 3], 4) == [[0], [1], [2], []]
    assert balance([], 2) == [[], []]


@pytest.fixture(scope="module")
def cora(shared_data: Path) -> Path:
    return shared_data / "cora" / "papers.jsonl"


@pytest.fixture(scope="module")
def tiny_bert(cora: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    texts = [f"{p.title} {p.abstract}" for p in read_papers(cora)]
    return build_small_bert(texts, tmp_path_factory.mktemp("bert"), vocab_size=2000, hidden_size=32)


def _embed(*args: str, cache: Path, processes: int | None = None, wait: bool = True, quiet: bool = True) -> Any:
    """`embed` in one plain process, or under torchrun, with the embedding cache in `cache`; waited for
    (CompletedProcess) or not (Popen)."""
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(processes)] \
        if processes else [sys.executable]
    command = [*launcher, "-m", "scidocs_eval.cli", "embed", *args, *(["--quiet"] if quiet else [])]
    env = {**ENV, "SCIDOCS_EVAL_CACHE": str(cache)}
    if not quiet:
        env.pop("SCIDOCS_EVAL_QUIET")
    if not wait:
        return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)


def _lines(path: Path) -> dict[str, bytes]:
    return {orjson.loads(line)["paper_id"]: line for line in path.read_bytes().splitlines()}


@pytest.fixture(scope="module")
def one_process(cora: Path, tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("one") / "cora.jsonl"
    done = _embed("--metadata", str(cora), "--out", str(out), "--model", str(tiny_bert), *OPTIONS,
                  cache=out.parent / "cache")
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.mark.slow  # two torchrun processes and a one-process reference: 40 to 70 s on 2 cores
def test_two_processes_write_what_one_process_writes_and_a_rerun_reads_the_cache(
        cora: Path, tiny_bert: Path, one_process: Path, tmp_path: Path) -> None:
    out, cache = tmp_path / "cora.jsonl", tmp_path / "cache"
    command = ["--metadata", str(cora), "--out", str(out), "--model", str(tiny_bert), *OPTIONS]
    done = _embed(*command, cache=cache, processes=2)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("papers embedded") == 1  # rank 0 alone reports
    assert list(_lines(out)) == [paper.paper_id for paper in read_papers(cora)]  # input order
    assert out.read_bytes() == one_process.read_bytes()  # byte for byte, line order included
    alone = _embed(*command, "--resume", cache=cache, quiet=False)  # one process, after two: all from the cache
    assert alone.returncode == 0, alone.stderr[-3000:]
    assert "texts with transformer" not in alone.stderr
    assert out.read_bytes() == one_process.read_bytes()


def _worker_of_rank(launcher: subprocess.Popen, rank: int) -> int:
    """The process id of torchrun's worker with RANK=`rank`."""
    for pid in Path(f"/proc/{launcher.pid}/task/{launcher.pid}/children").read_text().split():
        if f"RANK={rank}".encode() in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
            return int(pid)
    raise AssertionError(f"no worker with rank {rank}")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="finds the worker processes in /proc")
def test_a_killed_rank_fails_the_run_and_resume_finishes_it_from_the_cache_byte_for_byte(
        cora: Path, tiny_bert: Path, one_process: Path, tmp_path: Path) -> None:
    out, cache = tmp_path / "cora.jsonl", tmp_path / "cache"
    command = ["--metadata", str(cora), "--out", str(out), "--model", str(tiny_bert), *OPTIONS]
    launcher = _embed(*command, cache=cache, processes=2, wait=False)
    deadline = time.monotonic() + 300
    while len(list((cache / "vectors").glob("*/*.vec"))) < 3 and time.monotonic() < deadline:
        time.sleep(0.005)
    os.kill(_worker_of_rank(launcher, 1), signal.SIGKILL)
    launcher.communicate(timeout=300)
    assert launcher.returncode != 0
    assert not out.exists()
    done = _embed(*command, "--resume", cache=cache, processes=2, quiet=False)
    assert done.returncode == 0, done.stderr[-3000:]
    [line] = [line for line in done.stderr.splitlines() if "texts with transformer" in line]
    embedded, cached = [int(word.strip("(")) for word in line.split() if word.strip("(").isdigit()][:2]
    texts = {(paper.title, paper.abstract, paper.extra) for paper in read_papers(cora) if paper.has_text}
    assert cached > 0 and embedded + cached == len(texts)  # each distinct text once, from the cache or embedded
    assert out.read_bytes() == one_process.read_bytes()


@pytest.mark.slow
def test_baseline_under_torchrun_scores_in_rank_0(tiny_suite: Suite, tiny_bert: Path, tmp_path: Path) -> None:
    """Two gloo processes write the one-process file byte for byte (line order included) and score the same; the
    same command without torchrun afterwards embeds nothing (every vector from the cache)."""
    baseline = ["-m", "scidocs_eval.cli", "baseline", "transformer", "--model", str(tiny_bert), "--device", "cpu",
                "--pooling", "mean", "--max-length", "32", "--data", str(tiny_suite.root), "--tasks", "mesh,cite"]
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", *baseline,
               "--out-dir", str(tmp_path / "two"), "--quiet"]
    env = {**ENV, "SCIDOCS_EVAL_CACHE": str(tmp_path / "cache")}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count(".results.json (results)") == 1  # rank 0 alone reports
    results = orjson.loads((tmp_path / "two" / "transformer.results.json").read_bytes())
    assert set(results["tasks"]) == {"mesh", "cite"}
    assert list(_lines(tmp_path / "two" / "transformer.jsonl")) == \
        [p.paper_id for p in papers_to_embed(tiny_suite, ["mesh", "cite"])]  # the papers the tasks read, in order
    fresh = subprocess.run([sys.executable, *baseline, "--out-dir", str(tmp_path / "one"), "--quiet"],
                           env={**env, "SCIDOCS_EVAL_CACHE": str(tmp_path / "other-cache")}, capture_output=True,
                           text=True, timeout=600)
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    one_file, two_files = (tmp_path / run / "transformer.jsonl" for run in ("one", "two"))
    assert one_file.read_bytes() == two_files.read_bytes()
    one = orjson.loads((tmp_path / "one" / "transformer.results.json").read_bytes())
    assert {t: r["metrics"] for t, r in one["tasks"].items()} == {t: r["metrics"] for t, r in results["tasks"].items()}
    loud = {key: value for key, value in env.items() if key != "SCIDOCS_EVAL_QUIET"}
    alone = subprocess.run([sys.executable, *baseline, "--out-dir", str(tmp_path / "alone")], env=loud,
                           capture_output=True, text=True, timeout=600)
    assert alone.returncode == 0, alone.stderr[-3000:]
    assert "texts with transformer" not in alone.stderr  # the torchrun run's vectors, from the cache
    assert (tmp_path / "alone" / "transformer.jsonl").read_bytes() == two_files.read_bytes()
