"""The output layer, proven by construction: every output option of every command (found by walking the parser,
never listed here) is aimed at a user's file, at a file the tool wrote and the user then edited, through a
symbolic link leading outside, at a full file system and at a read-only one; the user's bytes never change and
the command stops with one line. Two commands writing one output: one stops with the lock message.

`RECIPES` says only how to make a valid invocation of each command (its required inputs); a command with an
output and no recipe fails `test_every_command_that_writes_has_a_recipe`, so a new command cannot slip by.
"""

from __future__ import annotations

import argparse
import hashlib
import http.server
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from scidocs_eval.cli.main import build_parser, leaf_parsers, main
from scidocs_eval.cli.options import output_actions
from scidocs_eval.data.demo import DemoConfig, build_demo_suite
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.formats.safe_output import MANIFEST, is_ours
from scidocs_eval.models.adapter import get_adapter
from scidocs_eval.run.embedding import write_embeddings

REPO = Path(__file__).resolve().parent.parent
TINY = DemoConfig(mag_papers=40, mesh_papers=30, ranking_queries=3, recomm_impressions=(10, 5, 5), recomm_papers=40,
                  topics=5)
OUTPUT_WORDS = ("out", "output", "dest", "json", "save", "write")


@dataclass
class World:
    """The inputs the recipes need, built once."""

    suite: Path
    embeddings: Path
    results: tuple[Path, Path]
    papers: Path
    citations: Path
    specter_data: Path
    bert: Path
    run_dir: Path
    endpoint: str
    mteb_results: Path


class _Bucket(http.server.BaseHTTPRequestHandler):
    """Just enough of S3 (ListObjectsV2, GET) for `data download`: three small files under `p/`."""

    files = {"p/cite/test.qrel": b"q 0 a 1\nq 0 b 0\n", "p/cite/val.qrel": b"q 0 a 1\n",
             "p/paper_metadata_view_cite_read.json": b'{"q": {"paper_id": "q", "title": "t", "abstract": "a"}}'}

    def do_GET(self) -> None:  # noqa: N802 (the http.server interface)
        url = urllib.parse.urlsplit(self.path)
        if url.query:
            contents = "".join(f"<Contents><Key>{key}</Key><Size>{len(data)}</Size><ETag>\""
                               f"{hashlib.md5(data).hexdigest()}\"</ETag></Contents>"
                               for key, data in self.files.items())
            body = (f'<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><IsTruncated>false'
                    f"</IsTruncated>{contents}</ListBucketResult>").encode()
        else:
            body = self.files[urllib.parse.unquote(url.path.lstrip("/"))]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("world")
    suite = build_demo_suite(root / "suite", TINY).root
    embeddings = write_embeddings(get_adapter("random", dim=8), build_demo_suite(root / "s2", TINY).papers(),
                                  root / "emb.jsonl", resume=False, progress=False)
    other = write_embeddings(get_adapter("random", dim=8, seed=1), build_demo_suite(root / "s3", TINY).papers(),
                             root / "other.jsonl", resume=False, progress=False)
    results = (root / "a.results.json", root / "b.results.json")
    for source, result in zip((embeddings, other), results):
        assert main(["run", "--embeddings", str(source), "--data", str(suite), "--tasks", "cite", "-o", str(result),
                     "--quiet"]) == 0
    count = 120  # enough that training triplets remain once the test papers are held out of them
    papers = root / "papers.jsonl"
    papers.write_bytes(b"".join(orjson.dumps({"paper_id": f"p{i}", "title": f"paper {i} topic {i % 3}",
                                              "abstract": f"words about topic {i % 3}", "label": i % 2}) + b"\n"
                                for i in range(count)))
    citations = root / "cites.tsv"
    citations.write_text("".join(f"p{i}\tp{j}\n" for i in range(count) for j in range(i + 1, i + 6) if j < count))
    assert main(["data", "build", "--papers", str(papers), "--citations", str(citations), "--out",
                 str(root / "built")]) == 0
    pytest.importorskip("transformers")
    from builders import build_small_bert

    bert = build_small_bert([f"paper {i} topic words about" for i in range(count)], root / "bert", vocab_size=200,
                            hidden_size=16)
    run_dir = root / "run"
    run_dir.mkdir()
    (run_dir / "training_history.json").write_bytes(orjson.dumps({"val_loss": {"0": 1.0, "1": 0.5},
                                                                  "train_loss": {"1": 0.7}}))
    from builders import build_retrieval_dataset, write_vectors

    built = build_retrieval_dataset(root / "mteb" / "scidocs-rr", documents=60, queries=6, candidates=10)
    mteb_results = root / "mteb.results.json"
    evaluate({"queries": write_vectors(root / "q.jsonl", built["queries"]),
              "corpus": write_vectors(root / "c.jsonl", built["corpus"])},
             RunConfig(data=root / "mteb", tasks=["scidocs-rr"], cache=False, progress=False, output=mteb_results),
             model="org/model")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Bucket)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield World(suite, embeddings, results, papers, citations, root / "built" / "specter", bert, run_dir,
                f"http://127.0.0.1:{server.server_address[1]}", mteb_results)
    server.shutdown()
    server.server_close()


FIGURE2 = ["--task", "mag", "--sample", "40", "--perplexity", "5", "--min-samples", "3"]
RECIPES: dict[str, Callable[[World], list[str]]] = {
    "run": lambda w: ["run", "--embeddings", str(w.embeddings), "--data", str(w.suite), "--tasks", "cite"],
    "table": lambda w: ["table", str(w.results[0])],
    "convert": lambda w: ["convert", str(w.embeddings)],
    "export mteb": lambda w: ["export", "mteb", str(w.mteb_results)],
    "audit": lambda w: ["audit", "--train", str(w.specter_data), "--data", str(w.suite),
                        "--tasks", "cite"],
    "compare": lambda w: ["compare", *map(str, w.results), "--resamples", "1000"],
    "leaderboard": lambda w: ["leaderboard", *map(str, w.results), "--resamples", "200"],
    "plot": lambda w: ["plot", "--embeddings", str(w.embeddings), "--data", str(w.suite), *FIGURE2],
    "plot figure2": lambda w: ["plot", "figure2", "--embeddings", str(w.embeddings), "--data", str(w.suite), *FIGURE2],
    "plot results": lambda w: ["plot", "results", *map(str, w.results)],
    "plot training": lambda w: ["plot", "training", str(w.run_dir)],
    "report": lambda w: ["report", *map(str, w.results), "--no-paper-rows"],
    "baseline": lambda w: ["baseline", "random", "--data", str(w.suite), "--tasks", "cite", "-p", "dim=8"],
    "embed": lambda w: ["embed", "--adapter", "random", "--metadata", str(w.papers), "-p", "dim=8"],
    "train specter": lambda w: ["train", "specter", "--data-dir", str(w.specter_data), "--base-model", str(w.bert),
                                "--epochs", "1", "--batch-size", "8", "--effective-batch-size", "16",
                                "--max-length", "16", "--device", "cpu"],
    "data download": lambda w: ["data", "download", "--endpoint", w.endpoint, "--prefix", "p/"],
    "data build": lambda w: ["data", "build", "--papers", str(w.papers), "--citations", str(w.citations)],
    "demo": lambda w: ["demo", "--seed", "1"],
}
"""How to make a valid invocation of each command that writes, its outputs left out (the test adds them)."""


PARSER = build_parser()
"""Built once (about 20 ms a build; this module asks for a command's parser hundreds of times), read only: every
run goes through `main`, which builds its own."""
LEAVES = {leaf.prog.removeprefix(PARSER.prog).strip(): leaf for leaf in leaf_parsers(PARSER)}


def _outputs() -> list[tuple[str, str]]:
    return [(name, _flag(action)) for name, leaf in LEAVES.items() for action in output_actions(leaf)]


def _flag(action: argparse.Action) -> str:
    return action.option_strings[0] if action.option_strings else action.dest


def _leaf(command: str) -> argparse.ArgumentParser:
    return LEAVES[command]


def _kind(command: str, flag: str) -> str:
    return next(a.output_kind for a in output_actions(_leaf(command)) if _flag(a) == flag)  # type: ignore[attr-defined]


def _argv(world: World, command: str, flag: str, target: Path, spare: Path) -> list[str]:
    """The command writing `flag` to `target`, its other outputs to fresh paths under `spare`."""
    argv = [*RECIPES[command](world), "--quiet"]
    given = {a.dest for a in output_actions(_leaf(command)) if _flag(a) == flag}  # one spelling per output
    for action in output_actions(_leaf(command)):
        other = _flag(action)
        if other != flag and action.dest in given:
            continue
        given.add(action.dest)
        path = target if other == flag else spare / f"{other.strip('-')}{_suffix(command, other)}"
        argv += [str(path)] if not action.option_strings else [other, str(path)]
    return argv


def _digests(folder: Path) -> dict[str, str | None]:
    """Every entry under `folder`: a file's sha256, a link's target, None for a folder."""
    found: dict[str, str | None] = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        found[name] = f"-> {os.readlink(path)}" if path.is_symlink() else \
            hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
    return found


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = main(argv)
    return code, capsys.readouterr().err.splitlines()


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str], naming: Path) -> str:
    code, err = _run(argv, capsys)
    assert code == 2 and len(err) == 1 and err[0].startswith("scidocs-eval: error: "), (argv, code, err)
    assert str(naming) in err[0], err[0]
    return err[0]


def _written(target: Path, kind: str) -> list[str]:
    """What a run wrote: the file, or the files of the folder (relative)."""
    if kind == "file":
        return [""]
    return sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file() and p.name != MANIFEST)


def _proven(target: Path, name: str) -> bool:
    """Whether the tool can prove it wrote `name` in `target` (or `target`): the ledger, or a proved manifest."""
    path = target / name if name else target
    manifest = target / MANIFEST
    if name and manifest.is_file():
        return is_ours(manifest) and orjson.loads(manifest.read_bytes())["files"].get(name) == \
            hashlib.sha256(path.read_bytes()).hexdigest()
    return is_ours(path)


def _suffix(command: str, flag: str) -> str:
    return ".png" if command.startswith("plot") and flag == "--out" else ".json"


def test_every_command_that_writes_has_a_recipe() -> None:
    missing = sorted({command for command, _ in _outputs() if command not in RECIPES})
    assert not missing, f"add a recipe (a valid invocation) for: {missing}"
    assert len(_outputs()) >= 16


def test_every_option_naming_an_output_is_declared_with_add_output() -> None:
    """An output option declared with a bare add_argument would escape every test here."""
    for leaf in LEAVES.values():
        declared = set(output_actions(leaf))
        for action in leaf._actions:
            words = set(action.dest.replace("-", "_").split("_"))
            takes_a_path = action.nargs != 0 and action.choices is None and action.type in (None, str, Path)
            if action not in declared and words & set(OUTPUT_WORDS) and takes_a_path:
                pytest.fail(f"{leaf.prog} {action.option_strings or action.dest}: looks like an output; declare it "
                            "with scidocs_eval.cli.options.add_output")


def test_every_command_that_writes_takes_overwrite() -> None:
    for leaf in LEAVES.values():
        overwrite = [a for a in leaf._actions if "--overwrite" in a.option_strings]
        assert bool(overwrite) == bool(output_actions(leaf)), leaf.prog


@pytest.mark.parametrize(("command", "flag"), _outputs())
def test_no_output_option_touches_a_users_file(command: str, flag: str, world: World, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    kind = _kind(command, flag)
    spare, outside = tmp_path / "spare", tmp_path / "outside"
    spare.mkdir()
    outside.mkdir()
    (outside / "victim").write_bytes(b"the user's file outside the destination")
    target = tmp_path / ("out" + (_suffix(command, flag) if kind == "file" else ""))
    # a first run writes its output (and learns what it writes)
    code, err = _run(_argv(world, command, flag, target, spare), capsys)
    assert code == 0, err
    written = _written(target, kind)
    assert written and all(_proven(target, name) for name in written), written
    outside_before = _digests(outside)

    # (a) the tool's file, edited by the user since, is the user's
    edited = target / written[len(written) // 2] if kind == "folder" else target
    original = edited.read_bytes()
    edited.write_bytes(original + b"\nthe user's edit\n")
    before = _digests(tmp_path)
    _refused(_argv(world, command, flag, target, spare), capsys, target)
    assert _digests(tmp_path) == before
    edited.write_bytes(original)   # the bytes the tool wrote: the tool's again

    # (b) a link where the output goes, leading outside: refused, nothing outside written
    linked = target / Path(written[0]).parts[0] if kind == "folder" else target
    moved = outside / "moved"
    shutil.move(linked, moved)
    linked.symlink_to(moved, target_is_directory=moved.is_dir())
    outside_with_moved = _digests(outside)
    _refused(_argv(world, command, flag, target, spare), capsys, target)
    assert _digests(outside) == outside_with_moved
    linked.unlink()
    shutil.move(moved, linked)
    assert _digests(outside) == outside_before

    # (a) a user's own files where the output goes, in a fresh place: refused at once, bytes unchanged
    fresh = tmp_path / ("fresh" + (_suffix(command, flag) if kind == "file" else ""))
    for name in written:
        path = fresh / name if name else fresh
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"the user's own " + name.encode())
    before = _digests(tmp_path)
    _refused(_argv(world, command, flag, fresh, spare), capsys, fresh)
    assert _digests(tmp_path) == before

    # (b) the output itself a link to a file outside
    link = tmp_path / ("link" + (_suffix(command, flag) if kind == "file" else ""))
    link.symlink_to(outside / "victim")
    _refused(_argv(world, command, flag, link, spare), capsys, link)
    assert _digests(outside) == outside_before


@pytest.mark.parametrize(("command", "flag"), [o for o in _outputs() if _kind(*o) == "folder"])
def test_a_non_empty_folder_of_the_users_keeps_every_file(command: str, flag: str, world: World, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_bytes(b"my notes")
    code, err = _run(_argv(world, command, flag, folder, tmp_path), capsys)
    assert code in (0, 2) and len(err) <= 1, err
    assert (folder / "notes.txt").read_bytes() == b"my notes"


# -- full and read-only file systems ------------------------------------------------------------------------------

@pytest.fixture()
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs mounted at tmp_path/fs (root only)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "fs"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(folder: Path) -> None:
    with open(folder / "filler", "wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError:
            pass
    while True:  # the last partial block too
        try:
            with open(folder / "filler", "ab") as handle:
                handle.write(b"\0" * 512)
        except OSError:
            return


@pytest.mark.parametrize(("command", "flag"), _outputs())
def test_full_and_read_only_file_systems_leave_no_partial_file(command: str, flag: str, world: World,
                                                               tmpfs: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    kind = _kind(command, flag)
    target = tmpfs / ("out" + (_suffix(command, flag) if kind == "file" else ""))
    spare = tmp_path / "spare"
    spare.mkdir()
    _fill(tmpfs)
    line = _refused(_argv(world, command, flag, target, spare), capsys, target)
    assert "no space left" in line
    assert [p.name for p in tmpfs.rglob("*") if p.is_file()] == ["filler"]
    for entry in tmpfs.iterdir():
        shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    assert subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)]).returncode == 0
    line = _refused(_argv(world, command, flag, target, spare), capsys, target)
    assert "read-only" in line
    assert list(tmpfs.iterdir()) == []


# -- two commands writing one output ------------------------------------------------------------------------------

def _start(argv: list[str]) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "scidocs_eval.cli", *argv], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


class _FinishedTooSoon(Exception):
    """The first command ended before it could be stopped mid-write (a fast run on a busy machine)."""


def _concurrent(first: list[str], second: list[str], started: Callable[[], bool], output: Path) -> str:
    """Start `first`, stop it once `started()`, run `second` to its end (it must stop at once with the lock message
    naming `output`), then let `first` finish (it must succeed). `_FinishedTooSoon` when `first` had already
    ended when it was stopped."""
    process = _start(first)
    try:
        deadline = time.monotonic() + 300
        while not started():
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.005)
        process.send_signal(signal.SIGSTOP)
        if process.poll() is not None:
            raise _FinishedTooSoon
        other = _start(second)
        out, err = other.communicate(timeout=300)
        assert other.returncode == 2, (out, err)
        assert len(err.splitlines()) == 1 and err.endswith(
            f" {output} is being written by another scidocs-eval command right now; wait for it to finish, or choose "
            "another path\n"), err
    finally:
        process.send_signal(signal.SIGCONT)
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err
    return out


def test_two_baselines_into_one_folder(world: World, tmp_path: Path) -> None:
    """One stops with the lock message; the other's embeddings are whole, with the sha256 its results record."""
    for attempt in range(5):  # the first run is fast: it may end before it is caught mid-write
        out_dir = tmp_path / f"results-{attempt}"
        argv = ["baseline", "random", "--data", str(world.suite), "--tasks", "cite", "--out-dir", str(out_dir), "-p",
                "dim=8", "--quiet"]
        embeddings = out_dir / "random.jsonl"
        try:
            _concurrent(argv, [*argv, "-p", "seed=1"],
                        lambda path=embeddings: path.is_file() and path.stat().st_size > 0, embeddings)
            break
        except _FinishedTooSoon:
            continue
    else:
        pytest.skip("the first baseline always ended before it could be stopped mid-write")
    result = RunResult.load(out_dir / "random.results.json")
    recorded = {source["sha256"] for source in result.fingerprints["embeddings"].values()}
    assert recorded == {hashlib.sha256(embeddings.read_bytes()).hexdigest()}
    assert all(orjson.loads(line)["paper_id"] for line in embeddings.read_bytes().splitlines())


# -- the examples -----------------------------------------------------------------------------------------

def test_baseline_never_replaces_a_users_embeddings_or_notes(world: World, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("random.jsonl", "random.results.json"):
        out_dir = tmp_path / name
        out_dir.mkdir()
        (out_dir / name).write_text("my notes, not a results file")
        argv = ["baseline", "random", "--data", str(world.suite), "--tasks", "cite", "--out-dir", str(out_dir)]
        line = _refused(argv, capsys, out_dir / name)
        assert line.endswith("pass --overwrite to replace it, or choose another path")
        assert (out_dir / name).read_text() == "my notes, not a results file"
        assert main([*argv, "--overwrite", "--quiet"]) == 0
        assert is_ours(out_dir / name)


def test_plot_json_at_the_embeddings_it_reads_and_results_over_a_users_image(
        world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "emb.jsonl"
    copy.write_bytes(world.embeddings.read_bytes())
    argv = ["plot", "--embeddings", str(copy), "--data", str(world.suite), *FIGURE2, "--out", str(tmp_path / "f.png")]
    assert "is also an input of this command" in _refused([*argv, "--json", str(copy)], capsys, copy)
    assert "is also an input" in _refused([*argv, "--json", str(copy), "--overwrite"], capsys, copy)
    assert copy.read_bytes() == world.embeddings.read_bytes()
    image = tmp_path / "my_figure.png"
    image.write_bytes(b"\x89PNG my drawing")
    _refused(["plot", "results", *map(str, world.results), "--out", str(image)], capsys, image)
    assert image.read_bytes() == b"\x89PNG my drawing"


def test_train_specter_over_a_users_checkpoint(world: World, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    checkpoint = tmp_path / "my-model"
    shutil.copytree(world.bert, checkpoint)
    (checkpoint / "notes.md").write_text("my model")
    before = _digests(checkpoint)
    argv = [*RECIPES["train specter"](world), "--out", str(checkpoint), "--quiet"]
    line = _refused(argv, capsys, checkpoint)
    assert "is not empty and was not written by scidocs-eval train specter" in line
    assert _digests(checkpoint) == before


def test_train_specter_rerun_keeps_nothing_of_the_earlier_run(world: World, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "model"
    argv = [*RECIPES["train specter"](world), "--out", str(out), "--quiet"]
    assert main([*argv, "--checkpoint-every", "1", "--epochs", "2"]) == 0
    first = {name for name, digest in _digests(out).items() if digest}
    assert main(argv) == 0     # other checkpoints: the earlier run's are gone, not mixed in
    second = {name for name, digest in _digests(out).items() if digest}
    assert second != first and second - {MANIFEST} == set(orjson.loads((out / MANIFEST).read_bytes())["files"])
    assert all(_proven(out, name) for name in second - {MANIFEST})


def test_data_download_keeps_a_hand_edited_qrel(world: World, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    dest = tmp_path / "scidocs"
    argv = ["data", "download", "--endpoint", world.endpoint, "--prefix", "p/", "--dest", str(dest), "--quiet"]
    assert main(argv) == 0
    (dest / "cite" / "test.qrel").write_bytes(b"q 0 a 1\nq 0 b 1\n")   # fixed by hand
    line = _refused(argv, capsys, dest / "cite" / "test.qrel")
    assert "is in the way and was not written by scidocs-eval data download (or was changed since)" in line
    assert (dest / "cite" / "test.qrel").read_bytes() == b"q 0 a 1\nq 0 b 1\n"


def test_a_rebuild_never_follows_a_link_out_of_the_suite(world: World, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    suite, outside = tmp_path / "suite", tmp_path / "outside"
    build = ["data", "build", "--papers", str(world.papers), "--citations", str(world.citations), "--out", str(suite)]
    assert main(build) == 0
    shutil.move(suite / "cite", outside)
    (suite / "cite").symlink_to(outside, target_is_directory=True)
    before = _digests(outside)
    assert "is a symbolic link; nothing is written through it" in _refused(build, capsys, suite)
    assert _digests(outside) == before


def test_new_files_get_the_umask_mode_and_replaced_files_keep_theirs(
        world: World, tmp_path: Path) -> None:
    old = os.umask(0o002)
    try:
        result = tmp_path / "r.json"
        argv = ["run", "--embeddings", str(world.embeddings), "--data", str(world.suite), "--tasks", "cite", "-o",
                str(result), "--quiet"]
        assert main(argv) == 0
        assert stat.S_IMODE(result.stat().st_mode) == 0o664
        assert main(["data", "build", "--papers", str(world.papers), "--citations", str(world.citations), "--out",
                     str(tmp_path / "suite")]) == 0
        assert {stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "suite").rglob("*") if p.is_file()} == {0o664}
        result.chmod(0o640)
        assert main(argv) == 0
        assert stat.S_IMODE(result.stat().st_mode) == 0o640
    finally:
        os.umask(old)
