"""Import every module of a plugin package, so that each registers what it defines."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def import_submodules(package: str) -> ModuleType:
    """Import `package` and all its direct submodules (alphabetical order); return the package.

    Plugin modules must import optional heavy dependencies (torch, gensim, ...) inside their methods, so
    that registering them costs nothing and works without those extras installed.
    """
    module = importlib.import_module(package)
    for info in sorted(pkgutil.iter_modules(module.__path__), key=lambda i: i.name):
        importlib.import_module(f"{package}.{info.name}")
    return module
