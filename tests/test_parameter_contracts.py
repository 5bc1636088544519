"""Every user-settable parameter is declared once with its range, and every declared range is enforced.

Enumerates every task, adapter and recomm ranker (their `parameter_constraints`) and every numeric option of every
command (their `argument_type`), and feeds each one the values its declaration refuses.
"""

from __future__ import annotations

import argparse
import inspect
import math
import re
from typing import Any

import pytest

from scidocs_eval.cli.main import build_parser, leaf_parsers, main
from scidocs_eval.cli.parameter_docs import DOC, declared_classes, numeric_options, updated_page
from scidocs_eval.evaluation.task import TASKS, get_task
from scidocs_eval.evaluators.recomm_rankers import RANKERS
from scidocs_eval.models.adapter import ADAPTERS, get_adapter
from scidocs_eval.params import ParameterError, make_constraint
from scidocs_eval.registry import check_params, constructor_parameters

CLASSES = declared_classes()


def _refused(rules: list[Any]) -> list[Any]:
    """Values no rule of `rules` allows, from each rule's own examples."""
    candidates = [value for rule in rules for value in make_constraint(rule).examples_outside()]
    return [value for value in candidates if not any(make_constraint(rule).is_satisfied_by(value) for rule in rules)]


@pytest.mark.parametrize(("where", "cls"), CLASSES, ids=[f"{cls.__module__}.{cls.__name__}" for _, cls in CLASSES])
def test_every_constructor_parameter_is_declared_and_its_default_allowed(where: str, cls: type) -> None:
    accepted = constructor_parameters(cls)
    declared = cls.parameter_constraints
    assert sorted(set(accepted) - set(declared)) == [], f"{cls.__name__}: parameters without a declared range"
    assert sorted(set(declared) - set(accepted)) == [], f"{cls.__name__}: declarations of no parameter"
    for name, parameter in accepted.items():
        if parameter.default is not inspect.Parameter.empty:
            check_params(cls, {name: parameter.default}, cls.__name__)


def _cases() -> list[tuple[type, str, Any]]:
    return [(cls, name, value) for _, cls in CLASSES for name, rules in cls.parameter_constraints.items()
            for value in _refused(rules)]


CASES = _cases()


def _stable(value: object) -> str:
    """A test id that is the same in every process (pytest-xdist's workers must collect the same ids): an object
    without a repr of its own is named by its type, not its address."""
    return re.sub(r" at 0x[0-9a-f]+", "", repr(value))


@pytest.mark.parametrize(("cls", "name", "value"), CASES,
                         ids=[f"{cls.__name__}.{name}={_stable(value)}" for cls, name, value in CASES])
def test_every_refused_value_is_a_parameter_error_naming_it(cls: type, name: str, value: Any) -> None:
    with pytest.raises(ParameterError) as raised:
        check_params(cls, {name: value}, cls.__name__)
    message = str(raised.value)
    assert f"{name}=" in message and "must be" in message and "\n" not in message


def test_every_class_has_refusable_values_for_each_numeric_parameter() -> None:
    """A numeric declaration with no examples outside it would make the test above vacuous."""
    for _, cls in CLASSES:
        for name, rules in cls.parameter_constraints.items():
            if any(type(make_constraint(rule)).__name__ in ("Interval", "ListOf", "Options") for rule in rules):
                assert _refused(rules), f"{cls.__name__}.{name}"


@pytest.mark.parametrize("name", list(TASKS.names()))
def test_get_task_enforces_the_declarations(name: str) -> None:
    for parameter, rules in TASKS[name].parameter_constraints.items():
        for value in _refused(rules):
            with pytest.raises(ParameterError, match=parameter):
                get_task(name, **{parameter: value})


@pytest.mark.parametrize("name", list(ADAPTERS.names()))
def test_get_adapter_enforces_the_declarations_before_building(name: str) -> None:
    for parameter, rules in ADAPTERS[name].parameter_constraints.items():
        for value in _refused(rules)[:3]:
            with pytest.raises(ParameterError, match=parameter):
                get_adapter(name, **{parameter: value})


@pytest.mark.parametrize("ranker", list(RANKERS.names()))
def test_nested_ranker_params_are_checked_by_the_ranker_declarations(ranker: str) -> None:
    for parameter, rules in RANKERS[ranker].parameter_constraints.items():
        for value in _refused(rules)[:3]:
            with pytest.raises(ParameterError, match=parameter):
                get_task("recomm", ranker=ranker, ranker_params={parameter: value})


def test_every_numeric_option_of_every_command_declares_its_range() -> None:
    untyped = []
    for leaf in leaf_parsers(build_parser()):
        for action in leaf._actions:
            numeric = action.type in (int, float) or (isinstance(action.default, (int, float))
                                                       and not isinstance(action.default, bool)
                                                       and action.nargs != 0)
            if numeric and not hasattr(action.type, "rules"):
                untyped.append(f"{leaf.prog} {'/'.join(action.option_strings) or action.dest}")
    assert untyped == []


NUMERIC = numeric_options(build_parser())


@pytest.mark.parametrize(("command", "action"), NUMERIC,
                         ids=[f"{c}:{a.option_strings[0]}" for c, a in NUMERIC])
def test_every_numeric_option_refuses_values_outside_its_range(command: str, action: argparse.Action) -> None:
    for value in _refused(list(action.type.rules)):
        text = "nan" if isinstance(value, float) and math.isnan(value) else str(value)
        with pytest.raises(ParameterError, match=action.option_strings[0]):
            action.type(text)
    if action.default is not None:
        assert any(make_constraint(rule).is_satisfied_by(action.default) for rule in action.type.rules)


@pytest.mark.parametrize("argv", [
    ["demo", "out", "--seed", "-1"],
    ["compare", "a.json", "b.json", "--alpha", "5"],
    ["compare", "a.json", "b.json", "--alpha", "nan"],
    ["compare", "a.json", "b.json", "--resamples", "1"],
    ["compare", "a.json", "b.json", "--seed", "-1"],
    ["data", "download", "--retries", "-1"],
    ["data", "build", "--papers", "p", "--citations", "c", "--out", "o", "--seed", "-1"],
    ["plot", "clusters", "--embeddings", "e", "--out", "o.png", "--seed", "-1"],
    ["run", "--embeddings", "e.jsonl", "--data", "demo", "--task-param", "mag.c_grid=[0]"],
    ["run", "--embeddings", "e.jsonl", "--data", "demo", "--task-param", "mag.c_grid=[-1]"],
    ["run", "--embeddings", "e.jsonl", "--data", "demo", "--task-param", "mag.c_grid=[]"],
    ["run", "--embeddings", "e.jsonl", "--data", "demo", "--task-param", 'mag.c_grid=["a"]'],
    ["run", "--embeddings", "e.jsonl", "--data", "demo", "--task-param", "mag.folds=1"],
    ["run", "--embeddings", "e.jsonl", "--data", "demo", "--task-param", "mag.folds=-2"],
    ["run", "--embeddings", "e.jsonl", "--data", "demo", "--task-param", "recomm.threads=0"],
    ["run", "--embeddings", "e.jsonl", "--data", "demo", "--task-param", 'recomm.ranker_params={"max_epochs": 0}'],
    ["run", "--embeddings", "e.jsonl", "--data", "demo", "--task-param", 'recomm.ranker_params={"max_epochs": "ten"}'],
    ["baseline", "random", "--data", "demo", "-p", "dim=-1"],
    ["embed", "--metadata", "m.json", "--out", "o.jsonl", "--adapter", "random", "-p", "dim=0"],
    ["run", "--split", "nope"],
    ["run", "--no-such-option"],
])
def test_bad_values_are_one_line_before_any_work(argv: list[str], tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("scidocs-eval: error: "), err
    assert list(tmp_path.iterdir()) == []


def test_help_still_works(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--help"])
    assert exit_.value.code == 0 and "--task-param" in capsys.readouterr().out


def test_the_generated_parameter_table_matches_the_declarations() -> None:
    page = DOC.read_text(encoding="utf-8")
    assert updated_page(page) == page, "docs/errors_and_files.md is stale: python -m scidocs_eval.cli.parameter_docs"
