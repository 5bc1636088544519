"""Third-party plugins: a package installed beside scidocs-eval adds a task, a model adapter and a recomm ranker
through entry points, without forking. The test installs a tiny plugin package into the test environment the way
pip leaves an installed package (the module plus a dist-info folder with entry_points.txt, on sys.path) and runs
the real CLI in a fresh process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from scidocs_eval.formats.suite import Suite

PLUGIN = '''
import numpy as np

from scidocs_eval.evaluation.task import BENCHMARKS, Benchmark, Task, TaskResult, TaskSpec, register_task
from scidocs_eval.evaluators.recomm_rankers import Ranker
from scidocs_eval.models.adapter import Adapter, register_adapter

BENCHMARKS.register(Benchmark("toy", "a plugin's own benchmark"))


@register_task
class QueryCoverage(Task):
    """The share of cite's test queries that have a vector (a toy task of the toy benchmark)."""

    spec = TaskSpec("toy-coverage", "toy: share of cite queries embedded", "ranking", ("share",), "share",
                    "user-citation", "paper_metadata_view_cite_read.json", benchmark="toy")

    def required_files(self, split):
        return [f"cite/{split}.qrel"]

    def evaluate(self, suite, embeddings, split="test", missing="official"):
        queries = list(suite.qrels("cite", split).candidates)
        present = int((embeddings.status(queries) == 0).sum())
        return TaskResult(self.name, {"share": round(100 * present / len(queries), 2)}, {"queries": len(queries)})


@register_adapter
class TitleLength(Adapter):
    """A toy adapter: each paper's title and abstract lengths."""

    name = "toy-lengths"

    def transform(self, papers):
        return np.array([[len(p.title), len(p.abstract)] for p in papers], dtype=np.float32)


class ConstantRanker(Ranker):
    name = "toy-constant"

    def fit(self, train, val):
        return self

    def score(self, shown):
        return np.zeros(len(shown.query_ids))
'''
ENTRY_POINTS = """[scidocs_eval.tasks]
toy = scidocs_toy_plugin

[scidocs_eval.adapters]
toy = scidocs_toy_plugin

[scidocs_eval.rankers]
toy-constant = scidocs_toy_plugin:ConstantRanker
"""


@pytest.fixture()
def plugin_path(tmp_path: Path) -> Path:
    """A folder holding the installed plugin: its package and its dist-info (name, version, entry points)."""
    site = tmp_path / "site"
    (site / "scidocs_toy_plugin").mkdir(parents=True)
    (site / "scidocs_toy_plugin" / "__init__.py").write_text(PLUGIN, encoding="utf-8")
    info = site / "scidocs_toy_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: scidocs-toy-plugin\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(ENTRY_POINTS, encoding="utf-8")
    return site


def run(plugin_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin_path), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, check=False)


def test_an_installed_plugin_adds_a_task_an_adapter_and_a_ranker(plugin_path: Path, demo_suite: Suite,
                                                                 tmp_path: Path) -> None:
    listed = run(plugin_path, "-m", "scidocs_eval.cli", "tasks", "--benchmark", "toy")
    assert listed.returncode == 0, listed.stderr
    assert "toy-coverage" in listed.stdout and "mag" not in listed.stdout
    benchmarks = run(plugin_path, "-m", "scidocs_eval.cli", "benchmarks")
    assert "toy" in benchmarks.stdout and "scidocs" in benchmarks.stdout, benchmarks.stderr
    usage = run(plugin_path, "-m", "scidocs_eval.cli", "baseline", "--help")
    assert "toy-lengths" in usage.stdout
    rankers = run(plugin_path, "-c", "from scidocs_eval.evaluators.recomm_rankers import RANKERS; "
                  "print(RANKERS.names())")
    assert "toy-constant" in rankers.stdout, rankers.stderr
    scored = run(plugin_path, "-W", "default::DeprecationWarning", "-m", "scidocs_eval.cli", "baseline", "toy-lengths",
                 "--data", str(demo_suite.root), "--tasks", "toy-coverage,cite", "--out-dir", str(tmp_path / "runs"),
                 "--quiet")
    assert scored.returncode == 0, scored.stderr
    # its task is of the form before TaskData: scored through the adapter, and told so (python -W shows it)
    assert "task class QueryCoverage defines evaluate(suite, embeddings, split, missing), the form before TaskData" \
        in scored.stderr, scored.stderr
    result = orjson.loads((tmp_path / "runs" / "toy-lengths.results.json").read_bytes())
    assert result["tasks"]["toy-coverage"]["metrics"] == {"share": 100.0}
    assert result["model_info"]["name"] == "toy-lengths"


def test_a_plugin_that_fails_to_load_is_an_error_naming_it(plugin_path: Path) -> None:
    (plugin_path / "scidocs_toy_plugin" / "__init__.py").write_text("import not_installed_anywhere\n",
                                                                     encoding="utf-8")
    listed = run(plugin_path, "-m", "scidocs_eval.cli", "tasks")
    assert listed.returncode == 2
    # whichever registry loads its entry points first names the plugin (the ranker one: tasks read the rankers)
    assert re.match(r"scidocs-eval: error: the (task plugin 'toy'|ranker plugin 'toy-constant') "
                    r"\(scidocs_toy_plugin", listed.stderr), listed.stderr
    assert "ModuleNotFoundError" in listed.stderr and "Traceback" not in listed.stderr
