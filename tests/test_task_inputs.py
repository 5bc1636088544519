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


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str], reader: str = "") -> str:
    """The one-line refusal; `reader`: who reads the path, as the refusal must name it."""
    assert main(argv) == 2, argv
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "is also an input of this command" in err, (argv, err)
    assert reader in err, (reader, err)
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
            _refused([*run, "-o", target], capsys, _reader(task, param, path, params))
        assert path.read_bytes() == USER_BYTES
    for folder in inputs.folders:
        for target in _forms(folder / "results.json", tmp_path):
            _refused([*run, "-o", target], capsys, _reader(task, param, folder, params))
        assert not (folder / "results.json").exists()


def _reader(task: str, param: str | None, path: Path, params: dict[str, str]) -> str:
    """How the refusal names who reads `path`: the task, and the parameter when the path is (or is in) its value."""
    given = Path(params[param]) if param else None
    if given is not None and (path == given or given in path.parents):
        return f"task {task}: its '{param}' parameter"
    return f"task {task}: its "


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
    reader = f"adapter {adapter}: its '{param}' parameter"
    for target in targets:
        for form in _forms(target, tmp_path):
            _refused([*baseline, "--out-dir", form], capsys, reader)
    metadata = tmp_path / "papers.jsonl"
    metadata.write_text('{"paper_id": "p", "title": "t", "abstract": "a"}\n')
    if not ADAPTERS[adapter].requires_fit:
        target = out_dir / "embedded.jsonl" if folder else value
        for form in _forms(target, tmp_path):
            _refused(["embed", "--adapter", adapter, "-p", f"{param}={value}", "--metadata", str(metadata), "-o", form,
                      "--overwrite", "--quiet"], capsys, reader)
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
              f"{task}.folder={dataset}", "--out-dir", str(dataset), "--overwrite", "--quiet"], capsys,
             f"read whole by task {task}: its 'folder' parameter")
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
        with pytest.raises(ScidocsEvalError, match=f"{option} .*is also an input of this command .*read by task mag: "
                                                   "its 'folder' parameter's data file"):
            config = RunConfig(data=suite, tasks=["mag"], task_params={"mag": {"folder": str(folder)}},
                               output=target if option == "output" else None)
            evaluate_model(lambda texts: [[1.0, 0.0]] * len(texts), config,
                           save_embeddings=target if option == "save_embeddings" else None)
    assert target.read_bytes() == USER_BYTES
    train = tmp_path / "train.jsonl"
    train.write_text('{"paper_id": "t", "title": "a title", "abstract": "an abstract"}\n')
    metadata = next(path for path in inputs.files if path.name.endswith(".json"))
    _refused(["audit", "--train", str(train), "--data", str(suite), "--tasks", "mag", "--out", str(metadata),
              "--overwrite", "--quiet"], capsys, "read by task mag: its metadata file")
    _refused(["audit", "--train", str(train), "--data", str(suite), "--tasks", "mag", "--out", str(train),
              "--overwrite", "--quiet"], capsys, "read by the command as its --train")
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


# -- what a fit reads beyond its tasks: SGC's leakage guard ----------------------------------------------------------

def test_sgc_declares_every_file_its_leakage_guard_reads(demo_suite: Suite, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """The guard reads the val/test files of every registered task the suite holds, whatever --tasks says
    (`run.fit_inputs.guarded_splits`): those are declared (`fit_reads`, from the same resolution), an --out-dir
    among them is refused naming the guard, and every file the guard opens is among them."""
    import shutil

    from scidocs_eval.models.adapter import get_adapter
    from scidocs_eval.run.fit_inputs import fit_reads, guard_edges, metadata_citations

    root = tmp_path / "suite"
    shutil.copytree(demo_suite.root, root)
    suite = Suite(root)
    files, folders = fit_reads(get_adapter("sgc"), suite)
    assert fit_reads(get_adapter("sif"), suite) == ([], [])  # an adapter without citations reads no more
    with _opened() as opened:
        guard_edges([], suite)
        metadata_citations(suite)
    real = Path(os.path.realpath(root))
    declared = {Path(os.path.realpath(file)) for file in files}
    whole = [Path(os.path.realpath(folder)) for folder in folders]
    read = {Path(os.path.realpath(path)) for path in opened}
    undeclared = sorted(str(p) for p in read if real in p.parents and p not in declared
                        and not any(folder in p.parents for folder in whole))
    assert read and not undeclared, undeclared
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    for task in ("cite", "mesh"):  # neither is scored: only the guard reads them
        _refused(["baseline", "sgc", "--data", str(root), "--tasks", "mag", "--out-dir", str(root / task),
                  "--overwrite", "--quiet"], capsys, f"adapter sgc's leakage guard (task {task}: its ")
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before


def test_recomm_reads_each_impressions_file_once(demo_suite: Suite) -> None:
    """The guard loads recomm's val and test splits; each holds train and val: each file is parsed once a run."""
    from scidocs_eval.run.fit_inputs import guard_edges

    suite = Suite(demo_suite.root)
    with _opened() as opened:
        guard_edges([], suite)
        get_task("recomm").load(suite, "test")
    impressions = [Path(path).name for path in opened if Path(path).parent.name == "recomm"
                   and path.endswith(".csv")]
    assert sorted(impressions) == ["test.csv", "train.csv", "val.csv"], impressions


def test_train_specter_writes_no_checkpoint_in_its_training_folder_or_base_model(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`train specter --out-dir` inside `--data-dir` or inside a `--base-model` folder (whose config.json a checkpoint
    would replace): refused before anything is read, `--overwrite` or not, naming the option."""
    pytest.importorskip("transformers")
    monkeypatch.chdir(tmp_path)
    data, base = tmp_path / "data", tmp_path / "base"
    _plant((data / "data.json", data / "metadata.json", data / "train.txt", base / "config.json"), ())
    train = ["train", "specter", "--data-dir", str(data), "--base-model", str(base), "--overwrite", "--quiet"]
    for out, option in ((data, "--data-dir"), (data / "model", "--data-dir"), (base, "--base-model"),
                        (base / "run", "--base-model")):
        for form in _forms(out, tmp_path):
            _refused([*train, "--out-dir", form], capsys, f"read whole by the command as its {option}")
    assert sorted(p.name for p in data.iterdir()) == ["data.json", "metadata.json", "train.txt"]
    assert sorted(p.name for p in base.iterdir()) == ["config.json"]
    assert (base / "config.json").read_bytes() == USER_BYTES


def test_data_build_from_a_snapshot_builds_nothing_inside_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """`data build --from openalex SNAP --out-dir SNAP/suite`: the snapshot is read whole; refused at once."""
    monkeypatch.chdir(tmp_path)
    snapshot = tmp_path / "snapshot"
    _plant((snapshot / "works" / "part_000.gz",), ())
    for out in (snapshot, snapshot / "suite"):
        for form in _forms(out, tmp_path):
            _refused(["data", "build", "--from", "openalex", str(snapshot), "--out-dir", form, "--overwrite",
                      "--quiet"], capsys, "read whole by the command as its --from openalex")
    assert [p.relative_to(snapshot) for p in snapshot.rglob("*")] == [Path("works"), Path("works/part_000.gz")]


def test_evaluate_model_refuses_an_output_in_the_folder_its_model_was_loaded_from(tmp_path: Path) -> None:
    """A model object's checkpoint (the folder transformers recorded it was loaded from) is an input read whole."""
    import shutil

    pytest.importorskip("sentence_transformers")
    from sentence_transformers import SentenceTransformer

    from scidocs_eval import evaluate_model
    from scidocs_eval.models.encoder import resolve_model
    from scidocs_eval.run.model_object import loaded_from

    checkpoint = tmp_path / "minilm"
    shutil.copytree(resolve_model("all-MiniLM-L6-v2"), checkpoint, copy_function=os.link)
    model = SentenceTransformer(str(checkpoint), device="cpu")
    assert [Path(read) for read in loaded_from(model)] == [checkpoint.resolve()]
    before = sorted(path.name for path in checkpoint.iterdir())
    for option in ("output", "save_embeddings"):
        with pytest.raises(ScidocsEvalError,
                           match=f"{option} .*read whole by evaluate_model as the folder its model was loaded from"):
            target = checkpoint / "scores.json"
            evaluate_model(model, RunConfig(data="demo", tasks=["cite"], output=target if option == "output" else None),
                           save_embeddings=target if option == "save_embeddings" else None)
    assert sorted(path.name for path in checkpoint.iterdir()) == before
    assert loaded_from(lambda texts: texts) == []
