"""Instant start: `import scidocs_eval`, every command's `--help`, `tasks`, `benchmarks` and a bad option load no heavy
library (scikit-learn, scipy, torch, ...) and not even numpy, so they answer at once. Checked on the modules loaded
in a fresh interpreter, which a loaded machine does not change; one generous wall-clock bound catches a gross
regression."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

HEAVY = ("sklearn", "scipy", "torch", "transformers", "sentence_transformers", "pyarrow", "faiss", "matplotlib",
         "pandas", "datasets", "gensim", "mteb", "lightgbm", "duckdb", "pyspark", "pytrec_eval", "joblib",
         "huggingface_hub", "safetensors", "polars", "asyncio", "ssl")
"""Libraries loaded only by the code that uses them (asyncio and ssl come with tqdm.auto, filelock, urllib.request)."""

_PROBE = r"""
import contextlib, io, json, sys
calls = json.loads(sys.argv[1])
if calls == "import":
    import scidocs_eval
    names = []
else:
    from scidocs_eval.cli.main import build_parser, leaf_parsers, main
    names = []
    if calls == "every command":
        parser = build_parser()
        calls = [leaf.prog.split()[1:] + ["--help"] for leaf in leaf_parsers(parser)]
        calls += [leaf.prog.split()[1:] + ["--no-such-option"] for leaf in leaf_parsers(parser)]
        calls += [["--help"], ["--no-such-option"], [], ["tasks"], ["benchmarks"]]
    for argv in calls:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                status = main(argv)
            except SystemExit as exit:
                status = exit.code
        names.append([argv, status])
loaded = sorted({m.split(".")[0] for m in sys.modules})
print(json.dumps({"loaded": loaded, "calls": names, "modules": len(sys.modules)}))
"""

MOST_MODULES = 350
"""Modules in `sys.modules` after `--help`, `tasks`, `benchmarks` or a bad option: 438 when every plugin module
imported numpy and the command modules their implementations at the top, 315 since (numpy alone is about 90)."""


def _probe(calls: object) -> dict:
    done = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(calls)], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout)


def _heavy(loaded: list[str]) -> list[str]:
    return sorted(set(loaded) & set(HEAVY))


def test_import_loads_no_heavy_library_and_not_even_numpy() -> None:
    loaded = _probe("import")["loaded"]
    assert _heavy(loaded) == []
    assert "numpy" not in loaded


def test_every_command_help_bad_option_tasks_and_benchmarks_load_no_heavy_library() -> None:
    probe = _probe("every command")
    statuses = {" ".join(argv): status for argv, status in probe["calls"]}
    assert len(statuses) > 40  # every leaf command, twice
    assert statuses["tasks"] == 0 and statuses["benchmarks"] == 0 and statuses["--help"] == 0
    assert {status for argv, status in statuses.items() if argv.endswith("--no-such-option")} == {2}
    assert _heavy(probe["loaded"]) == []
    assert "numpy" not in probe["loaded"]


@pytest.mark.parametrize("argv", [["--help"], ["tasks"], ["benchmarks"], ["run", "--bad-option"]])
def test_the_light_commands_load_neither_numpy_nor_more_than_a_few_hundred_modules(argv: list[str]) -> None:
    """The registries import every plugin module (the parser lists each task's embeddings groups and each
    adapter's name): those and what they import name numpy through `lazy_modules.lazy_module`, and the command
    modules import their implementations in their handlers."""
    probe = _probe([argv])
    assert probe["calls"][0][1] in (0, 2)
    assert "numpy" not in probe["loaded"]
    assert probe["modules"] <= MOST_MODULES


def test_a_lazy_module_is_imported_on_first_use_and_then_is_the_module_itself() -> None:
    done = subprocess.run([sys.executable, "-c", "import sys\nfrom scidocs_eval.lazy_modules import lazy_module\n"
                           "np = lazy_module('numpy', __name__)\nbefore = 'numpy' in sys.modules\n"
                           "zeros = np.zeros(2)\nprint(before, np is sys.modules['numpy'], zeros.tolist())"],
                          capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True", "[0.0,", "0.0]"]


def test_values_written_without_numpy_equal_numpys() -> None:
    """Module constants that were computed with numpy at import time, written so that the import needs none."""
    import numpy as np

    from scidocs_eval.evaluators import exact_svm
    from scidocs_eval.evaluators import scirepeval as models

    assert tuple(float(c) for c in np.logspace(-2, 2, 5)) == models.CLASSIFICATION_GRID
    assert tuple(float(c) for c in np.logspace(-4, 2, 7)) == models.REGRESSION_GRID
    assert 64 * np.finfo(np.float64).eps == exact_svm._ROUNDING


@pytest.mark.parametrize("argv", [["--help"], ["tasks"], ["run", "--no-such-option"]])
def test_the_command_answers_within_a_generous_bound(argv: list[str]) -> None:
    """A wall-clock bound far above the target (0.3 s idle) so that a loaded machine passes; an import of
    scikit-learn or torch on the way (seconds) would still trip it on a quiet one."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "scidocs_eval.cli", *argv], capture_output=True, check=False)
    assert time.perf_counter() - start < 10


def test_every_public_name_still_resolves_from_the_package() -> None:
    """The lazy re-exports (PEP 562): each name of `__all__` is the object of the module that defines it, and
    `dir()` lists them."""
    import importlib

    import scidocs_eval

    for name in scidocs_eval.__all__:
        module = importlib.import_module(scidocs_eval._MODULE_OF[name])
        assert getattr(scidocs_eval, name) is getattr(module, name), name
    assert set(scidocs_eval.__all__) <= set(dir(scidocs_eval))
    with pytest.raises(AttributeError, match="no_such_name"):
        scidocs_eval.no_such_name  # noqa: B018
