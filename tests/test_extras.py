"""Missing extras are named: every optional import goes through `scidocs_eval.extras.require`, and every command
and adapter that needs an optional package, run with that package blocked, ends in one line naming the extra
(no traceback); a run keeps, prints and writes the tasks it scored before the one it could not run."""

from __future__ import annotations

import ast
import configparser
import inspect
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_architecture import package_modules

from scidocs_eval import extras
from scidocs_eval.evaluation.task import TASKS, get_task, task_names
from scidocs_eval.extras import EXTRA_OF, MissingExtraError, install_command, require
from scidocs_eval.formats.suite import Suite
from scidocs_eval.models.adapter import adapter_names

OPTIONAL = sorted(EXTRA_OF)


def _type_checking_lines(tree: ast.Module) -> set[int]:
    """Line numbers inside `if TYPE_CHECKING:` blocks (annotations only, never imported at run time)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def test_no_module_imports_an_optional_package_directly() -> None:
    offenders = []
    for name, path in package_modules().items():
        if name == "scidocs_eval.extras":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        hidden = _type_checking_lines(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                modules = [node.module or ""]
            else:
                continue
            if node.lineno not in hidden and any(m.split(".")[0] in EXTRA_OF for m in modules):
                offenders.append(f"{path.name}:{node.lineno} imports {', '.join(modules)}")
    assert not offenders, "import these through scidocs_eval.extras.require: " + "; ".join(offenders)


def test_require_names_the_extra_and_who_needed_it(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m.split(".")[0] == "gensim"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [Blocker(["gensim"]), *sys.meta_path])
    with pytest.raises(MissingExtraError) as raised:
        require("gensim.models", "the sif adapter")
    root = Path(__file__).resolve().parents[1]
    assert str(raised.value) == ("the sif adapter needs gensim, which is not installed (the [text] extra): pip install "
                                 f"-c {root}/constraints.txt -e '{root}[text]'")
    with pytest.raises(MissingExtraError, match=r"\[recomm\]"):
        require("gensim", "a test", extra="recomm")
    with pytest.raises(ValueError, match="not a declared optional package"):
        require("numpy", "anything")


def test_the_install_command_runs_as_printed_from_a_checkout_or_for_a_wheel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not `pip install 'scidocs-eval[X]'`: the package is not on the public index. In a checkout, the editable
    install of that checkout (absolute paths: it runs from any folder); installed from a wheel, the extra's
    packages as setup.cfg declares them (read from the installed metadata)."""
    root = Path(__file__).resolve().parents[1]
    assert extras.checkout_root() == root
    assert install_command("recomm") == f"pip install -c {root}/constraints.txt -e '{root}[recomm]'"
    declared = configparser.ConfigParser()
    declared.read(root / "setup.cfg", encoding="utf-8")
    for extra in ("recomm", "text", "plot"):
        packages = [line for line in declared["options.extras_require"][extra].splitlines()
                    if line.strip() and not line.startswith("#")]
        assert extras.extra_requirements(extra) == packages
    monkeypatch.setattr(extras, "checkout_root", lambda: None)
    assert install_command("recomm") == \
        f"pip install -c {extras.packaged_constraints()} 'torch>=2.0' 'lightgbm>=4.0'"
    assert install_command("all").count("'torch>=2.0'") == 1  # each package once
    monkeypatch.setattr(extras, "extra_requirements", lambda extra: [])
    assert install_command("text") == "in a checkout of scidocs-eval, pip install -c constraints.txt -e '.[text]'"


def test_every_task_requirement_is_a_declared_optional_package() -> None:
    for name in task_names():
        for requirement in get_task(name).requirements():
            assert requirement.module in EXTRA_OF and requirement.extra, (name, requirement)
    assert [r.module for r in TASKS["recomm"]().requirements()] == ["torch"]
    assert [r.module for r in TASKS["recomm"](ranker="lgbm").requirements()] == ["lightgbm"]


class Blocker:
    """A meta-path finder: importing one of `names` (or a submodule) fails as if it were not installed."""

    def __init__(self, names: list[str]):
        self.names = set(names)

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


DRIVER = """
import json, os, sys, tempfile, traceback
from scidocs_eval.cli.main import main
outcomes = []
for blocked, argv in CASES:
    out, err = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
    child = os.fork()
    if child == 0:  # the light core is imported once; each command runs in a fork with its packages blocked
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        sys.meta_path.insert(0, Blocker(blocked))
        try:
            code = main(argv)
        except BaseException:
            traceback.print_exc()
            code = 99
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    _, status = os.waitpid(child, 0)
    out.seek(0)
    err.seek(0)
    outcomes.append([os.waitstatus_to_exitcode(status), out.read(), err.read()])
print(json.dumps(outcomes))
"""


def run_blocked(cases: list[tuple[list[str], list[str]]], cwd: Path) -> list[subprocess.CompletedProcess[str]]:
    """For each (blocked, argv) of `cases`, `scidocs-eval ARGV` where importing any package of `blocked` fails as
    if it were not installed; an uncaught exception shows as a traceback and status 99."""
    code = ("from __future__ import annotations\n"
            f"{inspect.getsource(Blocker)}\n"
            f"CASES = {cases!r}\n{DRIVER}")
    process = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=1200)
    assert process.returncode == 0, process.stderr
    return [subprocess.CompletedProcess(argv, status, out, err)
            for (_, argv), (status, out, err) in zip(cases, json.loads(process.stdout.splitlines()[-1]))]


def assert_names_extra(process: subprocess.CompletedProcess[str], extra: str) -> None:
    assert process.returncode == 2, process.stderr
    assert "Traceback" not in process.stderr, process.stderr
    errors = [line for line in process.stderr.splitlines() if line.startswith("scidocs-eval: error:")]
    assert len(errors) == 1 and errors[0].endswith(f"(the [{extra}] extra): {install_command(extra)}"), process.stderr


SPECTER_SAMPLE = str(Path(__file__).resolve().parents[2] / "shared" / "data" / "specter-sample")
ADAPTER_ARGUMENTS = {"transformer": ["--model", "all-MiniLM-L6-v2"],
                     "citeomatic": ["-p", f"training_data={SPECTER_SAMPLE}"]}
"""What an adapter cannot run without (beyond the suite)."""

NEEDING = [
    ("torch", ["baseline", "citeomatic", "--tasks", "mesh", "-p", f"training_data={SPECTER_SAMPLE}"], "transformers"),
    ("torch", ["train", "specter", "--base-model", "all-MiniLM-L6-v2", "--data-dir", "{suite}", "--out", "ck"],
     "transformers"),
    ("transformers", ["baseline", "transformer", "--model", "all-MiniLM-L6-v2", "--tasks", "mesh"], "transformers"),
    ("sentence_transformers", ["baseline", "sentence-transformer", "--tasks", "mesh"], "transformers"),
    ("transformers", ["embed", "--adapter", "transformer", "--model", "all-MiniLM-L6-v2", "--metadata",
                      "{suite}/paper_metadata_mag_mesh.json", "--out", "e.jsonl"], "transformers"),
    ("sentence_transformers", ["baseline", "sent-bert", "--tasks", "mesh"], "transformers"),
    ("gensim", ["baseline", "sif", "--tasks", "mesh"], "text"),
    ("gensim", ["baseline", "sgc", "--tasks", "mesh"], "text"),
    ("gensim", ["baseline", "fasttext-sum", "--tasks", "mesh"], "text"),
    ("matplotlib", ["plot", "figure2", "--embeddings", "{embeddings}", "--data", "{suite}", "--task", "mesh",
                    "--out", "figure2.png"], "plot"),
    ("gensim", ["baseline", "doc2vec", "--tasks", "mesh"], "text"),
    ("lightgbm", ["run", "--embeddings", "{embeddings}", "--tasks", "recomm",
                  "--task-param", "recomm.ranker=lgbm"], "recomm"),
    ("torch", ["run", "--embeddings", "{embeddings}", "--tasks", "recomm"], "recomm"),
    ("matplotlib", ["plot", "results", "{results}", "--out", "chart.png"], "plot"),
    ("jinja2", ["report", "{results}", "--out", "site"], "plot"),
]
"""(optional package, a command that needs it, the extra its error must name)."""


@pytest.fixture(scope="module")
def blocked_runs(tiny_suite: Suite, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every command of this file run once, in one interpreter: the light-core run, every adapter without any
    optional package, and each command of NEEDING with its package blocked. On the tiny suite: what is checked is
    which tasks score and which extra is named, not the scores (CI's light wheel runs the demo suite)."""
    root = tmp_path_factory.mktemp("extras")
    suite = str(tiny_suite.root)
    results = root / "res" / "random.results.json"
    values = {"suite": suite, "embeddings": str(results.with_name("random.jsonl")), "results": str(results)}
    cases: list[tuple[list[str], list[str]]] = [
        # the papers of the six tasks the light core scores (a baseline embeds only its tasks' papers)
        ([], ["baseline", "random", "--data", suite, "--tasks", "mag,mesh,coview,coread,cite,cocite", "--out-dir",
              str(root / "res")]),
        (OPTIONAL, ["run", "--embeddings", values["embeddings"], "--data", suite, "-o", str(root / "light.json")]),
    ]
    names = adapter_names()
    cases += [(OPTIONAL, ["baseline", name, "--data", suite, "--tasks", "mesh", "--out-dir", str(root / name),
                          *ADAPTER_ARGUMENTS.get(name, [])]) for name in names]
    for blocked, argv, _ in NEEDING:
        argv = [part.format(**values) for part in argv]
        cases.append(([blocked], argv + (["--data", suite] if argv[0] in ("baseline", "run") else [])))
    made, light, *rest = run_blocked(cases, root)
    assert made.returncode == 0, made.stderr
    return {"light": light, "light_results": root / "light.json", "adapters": dict(zip(names, rest[:len(names)])),
            "needing": rest[len(names):]}


def test_light_core_scores_six_tasks_and_names_recomm_for_the_seventh(blocked_runs: dict[str, Any]) -> None:
    """The acceptance run of a fresh environment with no extras (every optional package blocked)."""
    process = blocked_runs["light"]
    assert_names_extra(process, "recomm")
    assert "task recomm not scored: recomm's mlp ranker needs torch" in process.stderr
    scored = json.loads(blocked_runs["light_results"].read_text())
    assert sorted(scored["tasks"]) == sorted(set(task_names(benchmark="scidocs")) - {"recomm"})
    assert "recomm" in scored["failed"]
    for name in scored["tasks"]:
        assert f"\n{name:<8} " in process.stdout  # every scored task printed
    assert "recomm   NOT SCORED" in process.stdout


def test_every_adapter_without_extras_runs_or_names_its_extra(blocked_runs: dict[str, Any]) -> None:
    """Each registered adapter in the light core: it scores, or stops with one line naming an extra."""
    for name, process in blocked_runs["adapters"].items():
        assert process.returncode in (0, 2), (name, process.stderr)
        if process.returncode:
            named = re.search(r"\(the \[([\w-]+)\] extra\)", process.stderr)
            assert named, (name, process.stderr)
            assert_names_extra(process, named[1])


@pytest.mark.parametrize("case", range(len(NEEDING)), ids=[f"{b}-{' '.join(a[:2])}" for b, a, _ in NEEDING])
def test_a_command_needing_a_blocked_package_names_its_extra(case: int, blocked_runs: dict[str, Any]) -> None:
    assert_names_extra(blocked_runs["needing"][case], NEEDING[case][2])
