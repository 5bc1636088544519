"""Parameters declared once, with their type and range, and checked before any work starts.

One declarative mechanism for every parameter the user can set: task parameters (`--task-param`), adapter
parameters (`-p`), ranker parameters and the CLI's numeric options. A class declares

    parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "folds": [Interval(int, 2, None)],
        "c_grid": [ListOf(Interval(float, 0, None, closed="neither"), min_length=1)],
        "model": [str, None],
    }

(scikit-learn's `_parameter_constraints` style: a value is valid if it satisfies any constraint of its list;
a plain type means "an instance of it"; `None` means the value may be None) and `validate_params` checks a dict
of values against it, with an error that names the parameter, the value and what is allowed. `argument_type`
turns one constraint into an argparse `type=` so a CLI option is checked by the same declaration.
"""

from __future__ import annotations

import math
import numbers
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from scidocs_eval.errors import ScidocsEvalError


class ParameterError(ScidocsEvalError):
    """A parameter's value is of the wrong type or outside its declared range."""


class Constraint(ABC):
    """One rule a parameter's value may satisfy."""

    @abstractmethod
    def is_satisfied_by(self, value: Any) -> bool:
        """True if `value` is allowed by this rule."""

    @abstractmethod
    def __str__(self) -> str:
        """What the rule allows, for messages and the generated docs ("an int >= 1")."""

    def examples_outside(self) -> list[Any]:
        """Values this rule refuses (for contract tests)."""
        return []


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


class Interval(Constraint):
    """A number of `kind` (int or float; an int is also a float) between `low` and `high` (None: unbounded).

    `closed` says which ends belong to it: "both" (default), "left", "right" or "neither". NaN never does.
    """

    def __init__(self, kind: type, low: float | None, high: float | None,
                 closed: Literal["both", "left", "right", "neither"] = "both") -> None:
        if kind not in (int, float):
            raise ValueError(f"Interval kind must be int or float, got {kind!r}")
        self.kind, self.low, self.high, self.closed = kind, low, high, closed

    def is_satisfied_by(self, value: Any) -> bool:
        if not (_is_int(value) if self.kind is int else _is_real(value)):
            return False
        if math.isnan(value):
            return False
        if self.low is not None and (value < self.low or (value == self.low and self.closed in ("right", "neither"))):
            return False
        return not (self.high is not None
                    and (value > self.high or (value == self.high and self.closed in ("left", "neither"))))

    def __str__(self) -> str:
        name = "an int" if self.kind is int else "a number"
        low_in = self.closed in ("both", "left")
        high_in = self.closed in ("both", "right")
        if self.low is not None and self.high is not None:
            return f"{name} in {'[' if low_in else '('}{self.low}, {self.high}{']' if high_in else ')'}"
        if self.low is not None:
            return f"{name} {'>=' if low_in else '>'} {self.low}"
        if self.high is not None:
            return f"{name} {'<=' if high_in else '<'} {self.high}"
        return name

    def examples_outside(self) -> list[Any]:
        outside: list[Any] = ["ten", True]
        if self.low is not None:
            outside.append(self.low - 1 if self.kind is int else self.low - 0.5)
            if self.closed in ("right", "neither"):
                outside.append(self.low)
        if self.high is not None:
            outside.append(self.high + 1 if self.kind is int else self.high + 0.5)
        if self.kind is float:
            outside.append(float("nan"))
        else:
            outside.append(1.5)
        return outside


class Options(Constraint):
    """One of a fixed set of values."""

    def __init__(self, values: Sequence[Any]) -> None:
        self.values = tuple(values)

    def is_satisfied_by(self, value: Any) -> bool:
        return any(value == option and type(value) is type(option) for option in self.values)

    def __str__(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)

    def examples_outside(self) -> list[Any]:
        return ["no-such-option", -1]


class InstanceOf(Constraint):
    """An instance of `kinds` (bool is not an int here)."""

    def __init__(self, *kinds: type) -> None:
        self.kinds = kinds

    def is_satisfied_by(self, value: Any) -> bool:
        if isinstance(value, bool) and bool not in self.kinds:
            return False
        if float in self.kinds and _is_real(value):
            return not (isinstance(value, float) and math.isnan(value))
        return isinstance(value, self.kinds)

    def __str__(self) -> str:
        names = {str: "a string", bool: "true or false", int: "an int", float: "a number", dict: "an object",
                 list: "a list"}
        return " or ".join(names.get(kind, f"a {kind.__name__}") for kind in self.kinds)

    def examples_outside(self) -> list[Any]:
        return [value for value in ([1, 2], {"a": 1}, "text", 3, True) if not self.is_satisfied_by(value)][:2]


class ListOf(Constraint):
    """A list (or tuple) of at least `min_length` values, each satisfying `item`."""

    def __init__(self, item: Constraint, min_length: int = 0) -> None:
        self.item, self.min_length = item, min_length

    def is_satisfied_by(self, value: Any) -> bool:
        return isinstance(value, (list, tuple)) and len(value) >= self.min_length \
            and all(self.item.is_satisfied_by(v) for v in value)

    def __str__(self) -> str:
        least = f" (at least {self.min_length})" if self.min_length else ""
        return f"a list{least} of {self.item}"

    def examples_outside(self) -> list[Any]:
        outside: list[Any] = ["a", [object()]]
        if self.min_length:
            outside.append([])
        outside += [[bad] for bad in self.item.examples_outside()[:2]]
        return outside


class Satisfies(Constraint):
    """A value for which `check(value)` is true; `text` says what that means ("a mapping of ranker params")."""

    def __init__(self, check: Callable[[Any], bool], text: str, outside: Sequence[Any] = ()) -> None:
        self.check, self.text, self.outside = check, text, list(outside)

    def is_satisfied_by(self, value: Any) -> bool:
        try:
            return bool(self.check(value))
        except (TypeError, ValueError):
            return False

    def __str__(self) -> str:
        return self.text

    def examples_outside(self) -> list[Any]:
        return self.outside


class InputPath(Constraint):
    """A string naming a file or folder the owner reads (a dataset folder, a checkpoint, a vectors file): what the
    command hands the output layer as an input (`input_paths`), so no output of the command may be written there.
    `folder`: the path is read as a folder, every path below it an input; else a file. A value that names no path
    on disk (a hub model id, "glove") is still declared: an output at that name is refused, nothing else."""

    def __init__(self, folder: bool = False, or_name: str = "") -> None:
        self.folder, self.or_name = folder, or_name

    def is_satisfied_by(self, value: Any) -> bool:
        return isinstance(value, str) and bool(value)

    def __str__(self) -> str:
        return ("a folder path" if self.folder else "a file path") + (f" or {self.or_name}" if self.or_name else "")

    def examples_outside(self) -> list[Any]:
        return ["", 3]


class _NoneConstraint(Constraint):
    def is_satisfied_by(self, value: Any) -> bool:
        return value is None

    def __str__(self) -> str:
        return "null"


Declared = Constraint | type | None
Constraints = Mapping[str, Sequence[Declared]]


def make_constraint(declared: Declared) -> Constraint:
    """A plain type means InstanceOf(type); None means "None is allowed"."""
    if declared is None:
        return _NoneConstraint()
    if isinstance(declared, type):
        return InstanceOf(declared)
    if isinstance(declared, Constraint):
        return declared
    raise TypeError(f"not a parameter constraint: {declared!r}")


def describe(rules: Sequence[Declared]) -> str:
    """What a parameter's rules allow, in words."""
    return " or ".join(str(make_constraint(rule)) for rule in rules)


def check_value(name: str, value: Any, rules: Sequence[Declared], what: str) -> None:
    """A ParameterError naming `what`, the parameter, the value and what is allowed, if no rule allows `value`."""
    if not any(make_constraint(rule).is_satisfied_by(value) for rule in rules):
        raise ParameterError(f"{what}: {name}={value!r} is not allowed; {name} must be {describe(rules)}")


def validate_params(constraints: Constraints, params: Mapping[str, Any], what: str) -> None:
    """Check every value of `params` that `constraints` declares (undeclared names are the caller's business)."""
    for name, value in params.items():
        if name in constraints:
            check_value(name, value, constraints[name], what)


def input_paths(constraints: Constraints, params: Mapping[str, Any]) -> list[tuple[str, str, bool]]:
    """(name, value, read as a folder) of every parameter of `params` that `constraints` declares an
    `InputPath`."""
    found = []
    for name, value in params.items():
        rule = next((rule for rule in constraints.get(name, ()) if isinstance(rule, InputPath)), None)
        if rule is not None and isinstance(value, str) and value:
            found.append((name, value, rule.folder))
    return found


def argument_type(rules: Sequence[Declared], option: str, parse: Callable[[str], Any] = int) -> Callable[[str], Any]:
    """An argparse `type=` for a CLI option: parse the text with `parse`, then check it against `rules`."""

    def convert(text: str) -> Any:
        try:
            value = parse(text)
        except ValueError:
            value = text
        if not any(make_constraint(rule).is_satisfied_by(value) for rule in rules):
            raise ParameterError(f"{option} {text!r} is not allowed; {option} must be {describe(rules)}")
        return value

    convert.__name__ = option
    convert.rules = tuple(rules)  # type: ignore[attr-defined]
    return convert


SEED = Interval(int, 0, 2**32 - 1)
"""A random seed: numpy's generators take 0 .. 2**32 - 1."""
AT_LEAST_ONE = Interval(int, 1, None)
"""A count that must be positive: dimensions, epochs, threads, batch sizes, lengths."""
POSITIVE = Interval(float, 0, None, closed="neither")
"""A strictly positive number: learning rates, C, timeouts."""
FRACTION = Interval(float, 0, 1)
"""A number in [0, 1]."""
MODEL_PATH = InputPath(folder=True, or_name="a hub model id")
"""A model: a local checkpoint folder (an input of the command) or a hub id."""

