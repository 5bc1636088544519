"""One registry type for everything found by name: tasks, model adapters, recomm rankers, CLI command groups.

A `Registry[T]` refuses a second entry under a name already taken, checks each entry against its base class,
and answers an unknown name with the close matches (difflib). Built-in entries live in plugin packages
(`scidocs_eval.tasks`, `scidocs_eval.baselines`); a registry imports its package on first lookup, so that
every module there has registered what it defines.

Other installed packages add entries through entry points (as pytest and lm-evaluation-harness plugins do):
in the plugin's pyproject.toml, ``[project.entry-points."scidocs_eval.adapters"] mine = "my_pkg.adapters"``
(groups `ENTRY_POINT_GROUPS`: scidocs_eval.tasks, scidocs_eval.adapters, scidocs_eval.rankers). Each entry
point names a module whose import registers its classes (`@register_adapter`, ...) or a class, registered as it
is loaded. A plugin that fails to load is an error naming it, never a silently missing entry.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import importlib.metadata
import inspect
import pkgutil
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import ModuleType
from typing import Any, Generic, TypeVar

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.params import check_value

T = TypeVar("T")


def import_submodules(package: str) -> ModuleType:
    """Import `package` and all its direct submodules (alphabetical order); return the package (a plain module is
    imported alone).

    Plugin modules must import optional heavy dependencies (torch, gensim, ...) inside their methods, so
    that registering them costs nothing and works without those extras installed.
    """
    module = importlib.import_module(package)
    for info in sorted(pkgutil.iter_modules(getattr(module, "__path__", [])), key=lambda i: i.name):
        importlib.import_module(f"{package}.{info.name}")
    return module


ENTRY_POINT_GROUPS = {"task": "scidocs_eval.tasks", "baseline": "scidocs_eval.adapters",
                      "ranker": "scidocs_eval.rankers"}
"""Registry kind -> the entry-point group through which installed packages add entries of that kind."""


@functools.cache
def _installed_entry_points() -> importlib.metadata.EntryPoints:
    """Every installed package's entry points, read once per process: each read goes through every installed
    distribution's metadata (about 5 ms here), and the task, benchmark, adapter and ranker registries each ask."""
    return importlib.metadata.entry_points()


class UnknownNameError(ScidocsEvalError):
    """A name no entry of a registry has."""


class Registry(Generic[T]):
    """Entries of one kind by name, in a fixed order (see `names`).

    Args:
        kind: what the entries are, for messages ("task", "baseline", ...).
        base: the class every entry must be (a subclass of, for class entries; an instance of, otherwise).
        plugins: a package whose modules register the built-in entries; imported on first lookup.
        key: how to read an entry's name when `register` is given none (default: its `name` attribute).
        entry_points: the entry-point group through which other installed packages add entries.
    """

    def __init__(self, kind: str, base: type, plugins: str | None = None,
                 key: Callable[[T], str] = lambda entry: entry.name,  # type: ignore[attr-defined]
                 entry_points: str | None = None):
        self.kind, self.base, self.plugins, self.key, self.entry_points = kind, base, plugins, key, entry_points
        self._entries: dict[str, T] = {}
        self._loaded = plugins is None and entry_points is None

    def register(self, entry: T) -> T:
        """Add `entry` under its name; usable as a class decorator. A taken name or a wrong type is an error."""
        is_class = isinstance(entry, type)
        if not (issubclass(entry, self.base) if is_class else isinstance(entry, self.base)):
            raise TypeError(f"a {self.kind} must be a {self.base.__name__}{' subclass' if is_class else ''}, "
                            f"got {entry!r}")
        name = self.key(entry)
        if not isinstance(name, str) or not name:
            raise TypeError(f"{entry!r} has no {self.kind} name")
        if name in self._entries and self._entries[name] is not entry:
            raise ValueError(f"{self.kind} {name!r} is already registered ({self._entries[name]!r}); "
                             f"pick another name for {entry!r}")
        self._entries[name] = entry
        return entry

    def unregister(self, name: str) -> T:
        """Remove and return the entry `name` (for tests and plugins that replace their own entry)."""
        self._load()
        return self._entries.pop(name)

    def registered(self) -> list[T]:
        """The entries registered so far, without importing the plugin package (for checks while registering)."""
        return list(self._entries.values())

    def _load(self) -> None:
        if not self._loaded:
            self._loaded = True
            if self.plugins:
                import_submodules(self.plugins)
            if self.entry_points:
                self._load_entry_points(self.entry_points)

    def _load_entry_points(self, group: str) -> None:
        """Import every installed package's entry point of `group`; a class it names is registered."""
        for entry_point in sorted(_installed_entry_points().select(group=group), key=lambda e: e.name):
            try:
                loaded = entry_point.load()
            except Exception as error:  # a third party's import error, whatever its type, named with its plugin
                raise ScidocsEvalError(f"the {self.kind} plugin {entry_point.name!r} ({entry_point.value}, entry "
                                       f"point group {group}) failed to load: {type(error).__name__}: {error}") \
                    from None
            if isinstance(loaded, type) and issubclass(loaded, self.base):
                self.register(loaded)  # type: ignore[arg-type]

    def _ordered(self) -> list[tuple[str, T]]:
        """Entries of the plugin package first, by module name then registration order (so the order does not
        depend on which plugin module was imported first), then the others in registration order."""
        self._load()
        prefix = f"{self.plugins}."

        def key(position: int, entry: T) -> tuple[int, str, int]:
            module = entry.__module__ if isinstance(entry, type) else ""
            inside = self.plugins and (module == self.plugins or module.startswith(prefix))
            return (0, module, position) if inside else (1, "", position)

        ordered = sorted(enumerate(self._entries.items()), key=lambda item: key(item[0], item[1][1]))
        return [pair for _, pair in ordered]

    def names(self) -> list[str]:
        """Every registered name: the plugin package's in module order, then the others as registered."""
        return [name for name, _ in self._ordered()]

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __getitem__(self, name: str) -> T:
        self._load()
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownNameError(self.unknown(name)) from None

    def unknown(self, name: str) -> str:
        """The message for an unknown `name`: close matches first, then every known name."""
        close = difflib.get_close_matches(name, self.names(), n=3)
        hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
        return f"unknown {self.kind} {name!r}{hint}; known {self.kind}s: {', '.join(self.names())}"

    def items(self) -> list[tuple[str, T]]:
        """(name, entry) pairs, in the order of `names`."""
        return self._ordered()

    def check(self, names: Iterable[str]) -> list[str]:
        """`names` as a list, every one of them registered (else the first unknown one's error)."""
        names = list(names)
        for name in names:
            if name not in self:
                raise UnknownNameError(self.unknown(name))
        return names


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
    """`params` as a dict if `cls` takes each of them with a value its `parameter_constraints` allow (see
    `scidocs_eval.params`; a parameter a plugin left undeclared must have its default's type); else an error
    naming the parameter, the value, what is allowed (or the close match, and what `cls` takes). `what` names
    the class for the user (e.g. "task 'recomm'")."""
    if not isinstance(params, Mapping):
        raise ScidocsEvalError(f"{what}: parameters must be an object {{name: value}}, got {params!r}")
    declared = getattr(cls, "parameter_constraints", {})
    accepted = constructor_parameters(cls)
    takes = ", ".join(f"{name}={p.default!r}" if p.default is not inspect.Parameter.empty else name
                      for name, p in accepted.items()) or "no parameters"
    for key, value in params.items():
        if key not in accepted:
            close = difflib.get_close_matches(key, accepted, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ScidocsEvalError(f"{what} has no parameter {key!r}{hint}; it takes: {takes}")
        if key in declared:
            check_value(key, value, declared[key], what)
            continue
        default = accepted[key].default
        if default is not inspect.Parameter.empty and default is not None and not _accepts(default, value):
            raise ScidocsEvalError(f"{what}: {key}={value!r} is not a valid {type(default).__name__} "
                                   f"(default {key}={default!r}); it takes: {takes}")
    return dict(params)
