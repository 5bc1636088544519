"""A library imported on first use, for the modules that the command line's `--help`, `tasks`, `benchmarks` and a
bad option import without calling them (every plugin module, and what they build their classes from):

    np = lazy_module("numpy", __name__)

stands where `import numpy as np` stood. Nothing is imported until an attribute is read (`np.zeros`); that first
read imports the library and puts it in the owner module's globals in place of the stand-in, so every later `np.`
is the module itself, with no indirection on a hot path. A use at import time (a default argument `np.float32`, a
module constant) would import it at once: `tests/test_startup.py` checks that no such command loads numpy.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import Any


class LazyModule(ModuleType):
    """Stands for the module `name` in the globals of the module `owner` until an attribute of it is read."""

    def __init__(self, name: str, owner: str):
        super().__init__(name)
        self.__dict__["_lazy_owner"] = owner

    def __getattr__(self, attribute: str) -> Any:
        module = importlib.import_module(self.__name__)
        owner = sys.modules.get(self.__dict__["_lazy_owner"])
        if owner is not None:
            for key, value in list(vars(owner).items()):
                if value is self:
                    setattr(owner, key, module)
        return getattr(module, attribute)

    def __repr__(self) -> str:
        return f"<module {self.__name__!r}, imported on first use by {self.__dict__['_lazy_owner']}>"


def lazy_module(name: str, owner: str) -> Any:
    """The module `name`, imported when an attribute of it is first read; `owner` is the calling module's
    `__name__` (whose global then becomes the module itself). Typed `Any`, as the module it stands for."""
    return LazyModule(name, owner)
