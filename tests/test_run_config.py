"""RunConfig: every field checked in one place (a one-line error naming it), the CLI and the Python API build the
same configuration, and RunSettings: results files of earlier versions load, a save/load round trip is exact."""

from __future__ import annotations

import dataclasses
import inspect
import logging
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from scidocs_eval import evaluate_model
from scidocs_eval.cli.core import run_config
from scidocs_eval.cli.main import build_parser, main
from scidocs_eval.errors import InputError, ScidocsEvalError
from scidocs_eval.evaluation.config import RunConfig, config_from_keywords
from scidocs_eval.evaluation.results import LeakExclusion, ModelInfo, RunResult, RunSettings
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.evaluation.task import TaskResult
from scidocs_eval.formats.embeddings import format_embedding_line
from scidocs_eval.formats.suite import Suite
from scidocs_eval.params import ParameterError
from scidocs_eval.run.baseline import run_baseline
from scidocs_eval.run.model_object import EncodeConfig

BAD_VALUES: dict[str, Any] = {
    "data": 3, "tasks": [], "benchmarks": [1], "split": "train", "missing": "ignore", "task_params": {"mag": 3},
    "min_coverage": 1.5, "dtype": "float16", "progress": "yes", "cache": 1, "output": 4.0, "exclude": ["a.json"]}


def test_the_bad_values_cover_every_field() -> None:
    assert set(BAD_VALUES) == {field.name for field in dataclasses.fields(RunConfig)} \
        == set(RunConfig.parameter_constraints)


@pytest.mark.parametrize(("name", "value"), BAD_VALUES.items(), ids=list(BAD_VALUES))
def test_each_field_refuses_a_bad_value_in_one_line_naming_it(name: str, value: Any) -> None:
    with pytest.raises(ParameterError) as raised:
        RunConfig(**{name: value})
    message = str(raised.value)
    assert message.startswith(f"RunConfig: {name}={value!r} is not allowed; {name} must be ") and "\n" not in message


@pytest.mark.parametrize(("fields", "message"), [
    ({"tasks": ["cite", "nope"]}, "unknown task 'nope'"),
    ({"benchmarks": ["nope"]}, "unknown benchmark 'nope'"),
    ({"benchmarks": "scidocs", "tasks": ["scidocs-retrieval"]}, "task(s) scidocs-retrieval are not in benchmark"),
    ({"benchmarks": ["scidocs", "mteb-scidocs"], "tasks": ["scirepeval-mesh"]},
     "task(s) scirepeval-mesh are in none of the benchmarks scidocs, mteb-scidocs"),
    ({"task_params": {"nope": {"seeds": 2}}}, "unknown task 'nope'"),
    ({"task_params": {"recomm": {"seeds": 0}}}, "seeds=0 is not allowed"),
    ({"task_params": {"recomm": {"sedes": 2}}}, "did you mean 'seeds'"),
])
def test_task_names_benchmarks_and_task_parameters_are_checked_when_built(fields: dict, message: str) -> None:
    with pytest.raises(ScidocsEvalError) as raised:
        RunConfig(**fields)
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_values_are_normalised_so_equal_inputs_give_equal_configs(tmp_path: Path) -> None:
    given = RunConfig(data=tmp_path, tasks=["cite"], benchmarks="scidocs", dtype=np.float64, output=str(tmp_path / "r"),
                      task_params={"recomm": {"seeds": 2}})
    assert given == RunConfig(data=str(tmp_path), tasks=("cite",), benchmarks=["scidocs"], dtype="float64",
                              output=tmp_path / "r", task_params={"recomm": {"seeds": 2}})
    assert given.tasks == ("cite",) and given.benchmarks == ("scidocs",) and given.dtype == "float64"
    assert RunConfig().task_params == {} and RunConfig().task_names() == RunConfig(benchmarks="scidocs").task_names()


def test_keyword_parameters_override_the_config_and_are_checked_the_same() -> None:
    base = RunConfig(split="val", tasks=["cite"])
    assert RunConfig.build(base, tasks=["mag"], progress=None) == RunConfig(split="val", tasks=["mag"])
    assert RunConfig.build(None, split=None) == RunConfig()
    with pytest.raises(ParameterError, match="RunConfig: split='train' is not allowed"):
        RunConfig.build(base, split="train")
    with pytest.raises(ScidocsEvalError, match="config must be a RunConfig, not dict"):
        RunConfig.build({"split": "val"})  # type: ignore[arg-type]


def _embeddings(suite: Suite, path: Path) -> Path:
    rng = np.random.default_rng(0)
    path.write_bytes(b"".join(format_embedding_line(paper.paper_id, rng.standard_normal(8))
                              for paper in suite.papers()))
    return path


def _parsed(argv: list[str]) -> Any:
    return build_parser().parse_args(argv)


def test_the_cli_builds_the_config_the_python_api_builds(demo_suite: Suite, tmp_path: Path) -> None:
    data = str(demo_suite.root)
    args = _parsed(["run", "--embeddings", "e.jsonl", "--data", data, "--tasks", "cite,mag", "--split", "val",
                    "--missing", "error", "--task-param", "mag.folds=3", "--min-coverage", "0.5", "--no-cache",
                    "--quiet", "--benchmark", "scidocs", "--dtype", "float64", "-o", str(tmp_path / "r.json")])
    cli = run_config(args, dtype=args.dtype, output=args.output, exclude=args.exclude)
    api = RunConfig.build(data=data, tasks=["cite", "mag"], split="val", missing="error",
                          task_params={"mag": {"folds": 3}}, min_coverage=0.5, cache=False, progress=False,
                          benchmarks="scidocs", dtype=np.float64, output=tmp_path / "r.json")
    assert cli == api
    assert run_config(_parsed(["run", "--embeddings", "e.jsonl"]), dtype="float32") == RunConfig()
    args = _parsed(["baseline", "random", "--data", data, "--benchmark", "scidocs, mteb-scidocs", "--quiet"])
    assert run_config(args) == RunConfig(data=data, benchmarks=["scidocs", "mteb-scidocs"], progress=False)


def test_run_and_evaluate_write_the_same_settings(demo_suite: Suite, tmp_path: Path) -> None:
    embeddings = _embeddings(demo_suite, tmp_path / "e.jsonl")
    assert main(["run", "--embeddings", str(embeddings), "--data", str(demo_suite.root), "--tasks", "cite,cocite",
                 "--split", "val", "--task-param", "recomm.seeds=2", "--min-coverage", "0.5", "--quiet",
                 "-o", str(tmp_path / "cli.json")]) == 0
    config = RunConfig(data=demo_suite.root, tasks=["cite", "cocite"], split="val", min_coverage=0.5,
                       task_params={"recomm": {"seeds": 2}}, progress=False, output=tmp_path / "api.json")
    api = evaluate(embeddings, config=config)
    cli = RunResult.load(tmp_path / "cli.json")
    assert cli.settings == api.settings == RunResult.load(tmp_path / "api.json").settings
    assert cli.settings == RunSettings(data=str(demo_suite.root), tasks=("cite", "cocite"), split="val",
                                       task_params={"recomm": {"seeds": 2}}, dtype="float32", min_coverage=0.5)
    assert {name: r.metrics for name, r in cli.tasks.items()} == {name: r.metrics for name, r in api.tasks.items()}


def test_baseline_and_run_baseline_write_the_same_settings(demo_suite: Suite, tmp_path: Path) -> None:
    assert main(["baseline", "random", "--data", str(demo_suite.root), "--tasks", "cite", "--benchmark", "scidocs",
                 "--missing", "error", "--quiet", "--out-dir", str(tmp_path / "cli")]) == 0
    config = RunConfig(data=demo_suite.root, tasks=["cite"], benchmarks="scidocs", missing="error", progress=False)
    api = run_baseline("random", config=config, out_dir=tmp_path / "api")
    assert api is not None
    cli = RunResult.load(tmp_path / "cli" / "random.results.json")
    assert cli.settings == api.settings and cli.settings.benchmarks == ("scidocs",) and cli.settings.missing == "error"
    assert cli.tasks["cite"].metrics == api.tasks["cite"].metrics


def test_evaluate_and_run_baseline_of_the_keyword_form_warn_and_score_the_same(demo_suite: Suite,
                                                                               tmp_path: Path) -> None:
    """The two other shims (evaluate_model's is above): the keyword form of earlier versions builds the same
    config, with one DeprecationWarning, and gives the same numbers."""
    embeddings = _embeddings(demo_suite, tmp_path / "e.jsonl")
    config = RunConfig(data=demo_suite.root, tasks=["cite"], benchmarks="scidocs", split="val", progress=False)
    by_config = evaluate(embeddings, config)
    with pytest.warns(DeprecationWarning, match=r"evaluate\(\)'s data, tasks, benchmark, split, progress keyword"):
        by_keywords = evaluate(embeddings, demo_suite.root, tasks=["cite"], benchmark="scidocs", split="val",
                               progress=False)
    assert by_config.settings == by_keywords.settings and by_config.tasks["cite"].metrics == \
        by_keywords.tasks["cite"].metrics
    by_config = run_baseline("random", config, out_dir=tmp_path / "config")
    with pytest.warns(DeprecationWarning, match=r"run_baseline\(\)'s data, tasks, benchmark, split, progress"):
        by_keywords = run_baseline("random", demo_suite.root, out_dir=tmp_path / "keywords", tasks=["cite"],
                                   benchmark="scidocs", split="val", progress=False)
    assert by_config is not None and by_keywords is not None
    assert by_config.settings == by_keywords.settings and by_config.tasks["cite"].metrics == \
        by_keywords.tasks["cite"].metrics


def test_run_baseline_refuses_a_config_output_it_would_not_write(tmp_path: Path) -> None:
    with pytest.raises(ScidocsEvalError, match="run_baseline writes its results to --out-dir"):
        run_baseline("random", config=RunConfig(data="demo", output=tmp_path / "r.json"), out_dir=tmp_path)
    assert not (tmp_path / "r.json").exists()


def test_evaluate_model_takes_the_config_and_keywords_override_it(demo_suite: Suite) -> None:
    def encode(texts: list[str]) -> np.ndarray:
        return np.array([[len(text), text.count(" ") + 1.0] for text in texts])

    config = RunConfig(data=demo_suite.root, tasks=["cite"], progress=False, cache=False)
    by_config = evaluate_model(encode, config, encode=EncodeConfig(batch_size=8))
    with pytest.warns(DeprecationWarning, match=r"evaluate_model\(\)'s data, tasks, progress, cache, batch_size "
                      r"keyword form is deprecated .*RunConfig\(data=.*encode=EncodeConfig\(batch_size=\.\.\.\)"):
        by_keywords = evaluate_model(encode, demo_suite.root, tasks=["cite"], progress=False, cache=False,
                                     batch_size=8)
    assert by_config.settings == by_keywords.settings and by_config.tasks["cite"].metrics == \
        by_keywords.tasks["cite"].metrics and by_config.model_info == by_keywords.model_info
    with pytest.warns(DeprecationWarning, match="split keyword form"):
        assert evaluate_model(encode, config, split="val").settings.split == "val"


ENTRY_POINTS = {"evaluate": (evaluate, ["embeddings", "config", "model", "read_options", "keywords"]),
                "evaluate_model": (evaluate_model, ["model", "config", "encode", "name", "save_embeddings",
                                                    "keywords"]),
                "run_baseline": (run_baseline, ["name", "config", "out_dir", "params", "train_corpus", "resume",
                                                "embeddings_format", "keywords"])}
"""Each entry point's parameters: what it scores with (the model), the `RunConfig`, how the model is called and
where files go; `**keywords` is the keyword form of earlier versions (16, 20 and 15 parameters then)."""


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_each_entry_point_takes_the_config_and_nothing_that_repeats_its_fields(entry: str) -> None:
    function, expected = ENTRY_POINTS[entry]
    parameters = list(inspect.signature(function).parameters)
    assert parameters == expected
    assert not set(parameters) & {field.name for field in dataclasses.fields(RunConfig)}


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_the_keyword_form_of_every_field_builds_the_same_config_with_one_deprecation_warning(
        entry: str, tmp_path: Path) -> None:
    given = {"tasks": ["cite"], "split": "val", "missing": "error", "task_params": {"cite": {}},
             "min_coverage": 0.5, "dtype": "float64", "progress": False, "cache": False,
             "output": tmp_path / "r.json", "exclude": tmp_path / "a.json"}
    expected = RunConfig(data="demo", benchmarks=["scidocs"], **given)
    assert set(given) | {"data", "benchmarks"} == {field.name for field in dataclasses.fields(RunConfig)}
    with pytest.warns(DeprecationWarning, match=f"{entry}") as caught:
        assert config_from_keywords(entry, "demo", {**given, "benchmark": "scidocs"}) == expected
    assert len(caught) == 1
    with pytest.warns(DeprecationWarning):
        assert config_from_keywords(entry, RunConfig(split="val"), {"benchmarks": ["scidocs"]}) == \
            RunConfig(split="val", benchmarks=["scidocs"])
    with pytest.raises(TypeError, match=f"{entry}\\(\\) got an unexpected keyword argument 'splits'"):
        config_from_keywords(entry, None, {"splits": "val"})
    with pytest.raises(ScidocsEvalError, match="give benchmark or benchmarks, not both"), \
            pytest.warns(DeprecationWarning):
        config_from_keywords(entry, None, {"benchmark": "scidocs", "benchmarks": ["scidocs"]})
    config = RunConfig(split="val")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert config_from_keywords(entry, config, {}) is config and config_from_keywords(entry, None, {}) == \
            RunConfig()


# ----- RunSettings: results files of every version ----------------------------------------------------------

def _results_file(path: Path, settings: Any) -> Path:
    path.write_bytes(orjson.dumps({"format": 1, "model": "m", "settings": settings, "tasks": {
        "cite": {"task": "cite", "metrics": {"map": 50.0}, "coverage": {"queries": 1}}}}))
    return path


FIRST_VERSION = {"data": "/suite", "tasks": ["cite"], "split": "test", "missing": "official", "task_params": {},
                 "dtype": "float32"}


@pytest.mark.parametrize(("settings", "expected"), [
    (FIRST_VERSION, RunSettings(data="/suite", tasks=("cite",), dtype="float32")),
    ({**FIRST_VERSION, "benchmark": None, "min_coverage": 0.8},
     RunSettings(data="/suite", tasks=("cite",), dtype="float32", min_coverage=0.8)),
    ({**FIRST_VERSION, "benchmarks": ["scidocs", "mteb-scidocs"], "split": "val", "task_params": {"mag": {"folds": 3}}},
     RunSettings(data="/suite", tasks=("cite",), dtype="float32", benchmarks=("scidocs", "mteb-scidocs"),
                 split="val", task_params={"mag": {"folds": 3}})),
    ({**FIRST_VERSION, "benchmark": "scirepeval"},
     RunSettings(data="/suite", tasks=("cite",), dtype="float32", benchmarks=("scirepeval",))),
    ({"split": "val"}, RunSettings(split="val")),
    ({}, RunSettings()),
])
def test_results_files_of_earlier_versions_load(tmp_path: Path, settings: dict, expected: RunSettings) -> None:
    loaded = RunResult.load(_results_file(tmp_path / "old.json", settings))
    assert loaded.settings == expected
    assert RunResult.load(loaded.save(tmp_path / "again.json")).settings == expected


def test_settings_this_version_does_not_know_are_kept_with_a_warning(tmp_path: Path,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    adapter = {"name": "sif", "params": {"a": 0.001}}
    path = _results_file(tmp_path / "old.json", {**FIRST_VERSION, "adapter": adapter, "seed_of_the_future": 7})
    with caplog.at_level(logging.WARNING, logger="scidocs_eval"):
        loaded = RunResult.load(path)
    assert "settings.seed_of_the_future" in caplog.text and "settings.adapter" not in caplog.text
    assert loaded.settings.other == {"adapter": adapter, "seed_of_the_future": 7}
    assert loaded.model_info == ModelInfo("sif", params={"a": 0.001})  # the legacy key still gives the model info
    saved = orjson.loads(loaded.save(tmp_path / "again.json").read_bytes())["settings"]
    assert saved == {**FIRST_VERSION, "adapter": adapter, "seed_of_the_future": 7}


@pytest.mark.parametrize(("settings", "message"), [
    ({"split": 3}, "field 'settings.split' must be a string, got int 3"),
    ({"tasks": "cite"}, "field 'settings.tasks' must be a list of a string, got str 'cite'"),
    ({"min_coverage": True}, "field 'settings.min_coverage' must be a number or null, got bool True"),
    ({"exclude": {"audit": "a.json"}}, "field 'settings.exclude' must be an object {audit, sha256"),
    ({"task_params": {"mag": 3}}, "field 'settings.task_params' must be an object {task: {parameter: value}}"),
])
def test_a_malformed_setting_is_a_one_line_error_naming_it(tmp_path: Path, settings: dict, message: str) -> None:
    with pytest.raises(InputError) as raised:
        RunResult.load(_results_file(tmp_path / "bad.json", settings))
    assert "malformed results file: " + message in str(raised.value) and "\n" not in str(raised.value)


def test_save_load_round_trip_is_exact(tmp_path: Path) -> None:
    settings = RunSettings(data="/suite", tasks=("cite", "mag"), split="val", missing="error",
                           task_params={"mag": {"c_grid": [0.1, 1.0]}}, dtype="float64", min_coverage=0.5,
                           exclude=LeakExclusion("audit.json", "ab" * 32, ("exact", "near"), {"cite": 8, "mag": 0}),
                           benchmarks=("scidocs", "mteb-scidocs"), other={"note": [1, 2]})
    result = RunResult("m", {"cite": TaskResult("cite", {"map": 50.0}, {"queries": 1})}, settings=settings)
    loaded = RunResult.load(result.save(tmp_path / "r.json"))
    assert loaded.settings == settings and loaded.to_dict() == result.to_dict()
    assert list(loaded.to_dict()["settings"]) == ["data", "tasks", "split", "missing", "task_params", "dtype",
                                                  "min_coverage", "exclude", "benchmarks", "note"]


def test_a_mapping_given_as_settings_becomes_run_settings_and_mapping_reads_are_deprecated() -> None:
    result = RunResult("m", {}, settings={"split": "val", "data": "/suite"})
    assert result.settings == RunSettings(split="val", data="/suite")
    with pytest.warns(DeprecationWarning, match="RunResult.settings as a mapping is deprecated"):
        assert result.settings["split"] == "val"
    with pytest.warns(DeprecationWarning):
        assert result.settings.get("exclude") is None
    with pytest.raises(ScidocsEvalError, match="field 'settings.split' must be a string"):
        RunResult("m", {}, settings={"split": 3})


def keyword_form_calls(code: str) -> list[str]:
    """The calls of `evaluate`, `evaluate_model` or `run_baseline` in `code` that use the deprecated keyword form:
    a `RunConfig` field or `benchmark=` as a keyword, an `EncodeConfig` field as a keyword, or a literal second
    argument (the suite) instead of a config."""
    import ast

    deprecated = {f.name for f in dataclasses.fields(RunConfig)} | {f.name for f in dataclasses.fields(EncodeConfig)} \
        | {"benchmark"}
    found = []
    for node in ast.walk(ast.parse(code)):
        name = getattr(node, "func", None) and getattr(node.func, "id", getattr(node.func, "attr", None))
        if not isinstance(node, ast.Call) or name not in ENTRY_POINTS:
            continue
        keywords = [k.arg for k in node.keywords if k.arg in deprecated]
        if keywords or (len(node.args) > 1 and isinstance(node.args[1], (ast.Constant, ast.JoinedStr))):
            found.append(f"line {node.lineno}: {name}({', '.join(keywords) or 'a suite second'})")
    return found


def test_the_keyword_form_check_catches_each_kind() -> None:
    code = 'evaluate("e.jsonl", "demo")\nevaluate_model(m, config, batch_size=8)\nrun_baseline("r", benchmark="x")\n' \
           'evaluate("e.jsonl", config, model="m")\n'
    assert keyword_form_calls(code) == ["line 1: evaluate(a suite second)", "line 2: evaluate_model(batch_size)",
                                        "line 3: run_baseline(benchmark)"]


def test_the_docs_python_examples_use_the_config_form() -> None:
    from tests.test_docs_examples import PAGES, blocks_of

    found = [f"{block.where} {call}" for page in PAGES for block in blocks_of(page) if block.language == "python"
             for call in keyword_form_calls(block.code)]
    assert found == []
