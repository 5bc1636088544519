"""Checking user-given constructor parameters (`--task-param`, `-p`) against the class that takes them, so a typo
or a wrong type is one line naming the parameter, not a traceback from deep inside a task or model."""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Mapping
from typing import Any

from scidocs_eval.errors import ScidocsEvalError

_NUMBER_TYPES = {int: (int,), float: (int, float), bool: (bool,), str: (str,), tuple: (list, tuple),
                 list: (list, tuple)}
"""the default's type -> the value types that may replace it."""


def constructor_parameters(cls: type) -> dict[str, inspect.Parameter]:
    """The keyword parameters of `cls.__init__`, in order."""
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {name: p for name, p in inspect.signature(cls.__init__).parameters.items()
            if name != "self" and p.kind in kinds}


def _accepts(default: Any, value: Any) -> bool:
    allowed = _NUMBER_TYPES.get(type(default))
    if allowed is None:
        return True
    if isinstance(value, bool) and type(default) is not bool:
        return False
    return isinstance(value, allowed)


def check_params(cls: type, params: Mapping[str, Any], what: str) -> dict[str, Any]:
    """`params` as a dict if `cls` takes each of them with a value of its default's type; else an error naming
    the parameter, the close match if there is one, and what `cls` takes. `what` names the class for the user
    (e.g. "task 'recomm'")."""
    accepted = constructor_parameters(cls)
    takes = ", ".join(f"{name}={p.default!r}" if p.default is not inspect.Parameter.empty else name
                      for name, p in accepted.items()) or "no parameters"
    for key, value in params.items():
        if key not in accepted:
            close = difflib.get_close_matches(key, accepted, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ScidocsEvalError(f"{what} has no parameter {key!r}{hint}; it takes: {takes}")
        default = accepted[key].default
        if default is not inspect.Parameter.empty and default is not None and not _accepts(default, value):
            raise ScidocsEvalError(f"{what}: {key}={value!r} is not a valid {type(default).__name__} "
                                   f"(default {key}={default!r}); it takes: {takes}")
    return dict(params)
