"""Every path a command reads is an input, from the same resolution its reader uses, and no output lands there.

The rule (docs/errors_and_files.md, "What counts as an input"): a task's `Task.inputs` (its input files, its
metadata file, its dataset folder read whole, every path-valued parameter) and an adapter's path-valued parameters
(`InputPath`: a checkpoint folder, a vectors file) reach the output layer before anything is read or written. The
tests enumerate: every registered task with each of its path-valued parameters (and without), every adapter with
each of its own, each output option of `run`, `baseline`, `embed`, `audit` and `evaluate_model`, aimed at each
path and inside each folder in absolute, relative and `..` forms; and, independently of the declarations, every
file a task's reader opens is among its declared inputs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from builders import build_every_format_suite, build_retrieval_dataset, write_mteb_copies, write_one_vector

from scidocs_eval.cli.main import main
from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.task import TASKS, get_task, run_inputs, task_names
from scidocs_eval.formats.suite import Suite
from scidocs_eval.models.adapter import ADAPTERS
from scidocs_eval.params import InputPath

USER_BYTES = b"the user's own data\n"


def _path_params(constraints: dict) -> list[tuple[str, bool]]:
    """(name, read as a folder) of every parameter declared an `InputPath`."""
    return [(name, rule.folder) for name, rules in constraints.items() for rule in rules if isinstance(rule, InputPath)]


TASK_CASES = [(name, None) for name in task_names()] + \
    [(name, param) for name in task_names() for param, _ in _path_params(TASKS[name].parameter_constraints)]
ADAPTER_CASES = [(name, param, folder) for name, cls in ADAPTERS.items()
                 for param, folder in _path_params(cls.parameter_constraints)]


def _forms(path: Path, cwd: Path) -> list[str]:
    """`path` absolute, relative to `cwd`, and relative through a `..`."""
    relative = os.path.relpath(path, cwd)
    return [str(path), relative, os.path.join(relative.split(os.sep)[0], "..", relative)]


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2, argv
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "is also an input of this command" in err, (argv, err)
    return err


def _plant(files: tuple[Path, ...], folders: tuple[Path, ...]) -> None:
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
    for path in files:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(USER_BYTES)


@pytest.mark.parametrize(("task", "param"), TASK_CASES)
def test_run_refuses_an_output_where_a_task_reads(task: str, param: str | None, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The suite comes from $SCIDOCS_EVAL_DATA (no --data to walk): only the task's declarations protect it."""
    suite_root = tmp_path / "suite"
    suite_root.mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SCIDOCS_EVAL_DATA", str(suite_root))
    params = {param: str(tmp_path / "elsewhere" / param)} if param else {}
    inputs = run_inputs(Suite(suite_root), [get_task(task, **params)], "test")
    assert inputs.files, f"task {task} declares no file it reads"
    _plant(inputs.files, inputs.folders)
    (suite_root / "other.txt").write_bytes(USER_BYTES)  # a suite that is not empty
    embeddings = write_one_vector(tmp_path)
    run = ["run", "--embeddings", str(embeddings), "--tasks", task, "--overwrite", "--quiet",
           *(["--task-param", f"{task}.{param}={params[param]}"] if param else [])]
    for path in inputs.files:
        for target in _forms(path, tmp_path):
            _refused([*run, "-o", target], capsys)
        assert path.read_bytes() == USER_BYTES
    for folder in inputs.folders:
        for target in _forms(folder / "results.json", tmp_path):
            _refused([*run, "-o", target], capsys)
        assert not (folder / "results.json").exists()


@pytest.mark.parametrize(("adapter", "param", "folder"), ADAPTER_CASES)
def test_an_adapters_path_parameters_are_inputs(adapter: str, param: str, folder: bool, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch, demo_suite: Suite,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """`baseline NAME -p PARAM=PATH --out-dir ...` and `embed ... -o ...` aimed at the checkpoint folder (and inside
    it) or at the file a parameter names: refused before the adapter reads anything."""
    monkeypatch.chdir(tmp_path)
    out_dir = tmp_path / "given"
    value = out_dir if folder else out_dir / f"{adapter}.jsonl"  # baseline would write {adapter}.jsonl there
    _plant((out_dir / "weights.bin",) if folder else (value,), ())
    baseline = ["baseline", adapter, "--data", str(demo_suite.root), "--tasks", "cite", "-p", f"{param}={value}",
                "--overwrite", "--quiet"]
    targets = [out_dir, out_dir / "inside"] if folder else [out_dir]
    for target in targets:
        for form in _forms(target, tmp_path):
            _refused([*baseline, "--out-dir", form], capsys)
    metadata = tmp_path / "papers.jsonl"
    metadata.write_text('{"paper_id": "p", "title": "t", "abstract": "a"}\n')
    if not ADAPTERS[adapter].requires_fit:
        target = out_dir / "embedded.jsonl" if folder else value
        for form in _forms(target, tmp_path):
            _refused(["embed", "--adapter", adapter, "-p", f"{param}={value}", "--metadata", str(metadata), "-o", form,
                      "--overwrite", "--quiet"], capsys)
    assert (out_dir / "weights.bin" if folder else value).read_bytes() == USER_BYTES
    assert sorted(p.name for p in out_dir.iterdir()) == ["weights.bin" if folder else value.name]


def test_baseline_refuses_an_out_dir_inside_a_dataset_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                             ) -> None:
    """The issue's case through `baseline`: a clustering set read through `folder`, the outputs aimed inside it."""
    task = "biorxiv-clustering-p2p"
    dataset = tmp_path / "X"
    inputs = run_inputs(Suite(tmp_path / "suite"), [get_task(task, folder=str(dataset))], "test")
    _plant(inputs.files, inputs.folders)
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "other.txt").write_bytes(USER_BYTES)
    _refused(["baseline", "random", "--data", str(tmp_path / "suite"), "--tasks", task, "--task-param",
              f"{task}.folder={dataset}", "--out-dir", str(dataset), "--overwrite", "--quiet"], capsys)
    assert sorted(p.name for p in dataset.iterdir()) == ["test.jsonl"]
    assert (dataset / "test.jsonl").read_bytes() == USER_BYTES


def test_evaluate_model_and_audit_refuse_an_output_where_a_task_reads(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from scidocs_eval import evaluate_model

    suite = tmp_path / "suite"
    folder = tmp_path / "labels"
    inputs = run_inputs(Suite(suite), [get_task("mag", folder=str(folder))], "test")
    _plant(inputs.files, inputs.folders)
    target = folder / "test.csv"
    for option in ("output", "save_embeddings"):
        with pytest.raises(ScidocsEvalError, match=f"{option} .*is also an input of this command"):
            config = RunConfig(data=suite, tasks=["mag"], task_params={"mag": {"folder": str(folder)}},
                               output=target if option == "output" else None)
            evaluate_model(lambda texts: [[1.0, 0.0]] * len(texts), config,
                           save_embeddings=target if option == "save_embeddings" else None)
    assert target.read_bytes() == USER_BYTES
    train = tmp_path / "train.jsonl"
    train.write_text('{"paper_id": "t", "title": "a title", "abstract": "an abstract"}\n')
    metadata = next(path for path in inputs.files if path.name.endswith(".json"))
    _refused(["audit", "--train", str(train), "--data", str(suite), "--tasks", "mag", "--out", str(metadata),
              "--overwrite", "--quiet"], capsys)
    assert metadata.read_bytes() == USER_BYTES


# -- the declarations cover what the readers open ------------------------------------------------------------------

_OPENED: list[str] | None = None


def _audit(event: str, args: tuple) -> None:
    if _OPENED is not None and event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        _OPENED.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)


@contextmanager
def _opened() -> Iterator[list[str]]:
    """The paths opened by Python code while the block runs."""
    global _OPENED
    _OPENED = []
    try:
        yield _OPENED
    finally:
        _OPENED = None


@pytest.fixture(scope="module")
def every_task_suite(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    """A suite with data for every registered task (the every-format suite, MTEB's SciDocs sets, and a BEIR set
    for each full-corpus task)."""
    root = build_every_format_suite(tmp_path_factory.mktemp("inputs"))
    write_mteb_copies(root, ("mteb-scidocs",))
    suite = Suite(root)
    for name in task_names():
        task = get_task(name)
        if not all(suite.has(f) for f in task.input_files(suite, "test")) and hasattr(task, "dataset_folder"):
            build_retrieval_dataset(task.dataset_folder(suite), documents=60, queries=6,
                                    split=task.split_name("test"))
    return suite


@pytest.mark.parametrize("task", task_names())
def test_every_file_a_task_opens_is_a_declared_input(task: str, every_task_suite: Suite) -> None:
    suite = Suite(every_task_suite.root)  # a fresh one: nothing read yet
    instance = get_task(task)
    assert all(suite.has(f) for f in instance.input_files(suite, "test")), f"no data for {task}"
    declared = instance.inputs(suite, "test")
    with _opened() as files:
        instance.data_shapes(instance.load(suite, "test"))
        instance.role_papers(instance.load(suite, "test"))
        instance.paper_ids(instance.load(suite, "test"))
    read = {Path(os.path.realpath(path)) for path in files}
    root = Path(os.path.realpath(suite.root))
    allowed = {Path(os.path.realpath(path)) for path in declared.files}
    folders = [Path(os.path.realpath(folder)) for folder in declared.folders]
    undeclared = sorted(str(path) for path in read if root in path.parents and path not in allowed
                        and not any(folder in path.parents for folder in folders))
    assert not undeclared, f"{task} opened files it does not declare: {undeclared}"
    assert read, f"{task} read nothing"


def test_data_build_writes_over_none_of_its_inputs(shared_data: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """`data build --out DIR` where DIR holds the corpus it reads, under the name of a file it writes."""
    (tmp_path / "edges.tsv").write_bytes((shared_data / "cora" / "edges.tsv").read_bytes())
    papers = tmp_path / "paper_metadata_mag_mesh.json"
    papers.write_bytes((shared_data / "cora" / "papers.jsonl").read_bytes())
    before = papers.read_bytes()
    _refused(["data", "build", "--papers", str(papers), "--citations", str(tmp_path / "edges.tsv"), "--out",
              str(tmp_path), "--overwrite", "--quiet"], capsys)
    assert papers.read_bytes() == before
