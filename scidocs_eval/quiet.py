"""`--quiet`: no progress bars from anything a command runs, ours or a library's.

Our bars (`scidocs_eval.progress`) follow SCIDOCS_EVAL_QUIET. transformers ("Loading weights", "Writing model
shards"), huggingface_hub (downloads) and any other tqdm bar (sentence-transformers' batches) are switched off
through the environment variables those libraries read when they are imported, and through their functions
when they already are. Warnings and errors still show: quiet hides progress, never a problem.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

QUIET_ENVIRONMENT = {
    "SCIDOCS_EVAL_QUIET": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TQDM_DISABLE": "1",
}


def _library_bars(libraries: list[str], enabled: bool) -> None:
    """Switch the progress bars of `libraries` (of huggingface_hub, transformers) on or off. (One imported under
    the quiet environment keeps its bars off: it reads the variable once, and it is quiet already.)"""
    if "huggingface_hub" in libraries:
        from huggingface_hub.utils import disable_progress_bars, enable_progress_bars

        (enable_progress_bars if enabled else disable_progress_bars)()
    if "transformers" in libraries:
        from transformers.utils import logging as transformers_logging

        (transformers_logging.enable_progress_bar if enabled else transformers_logging.disable_progress_bar)()


@contextmanager
def quiet_mode(enabled: bool = True) -> Iterator[None]:
    """No progress bars inside the block when `enabled`; the environment and the libraries are restored after."""
    if not enabled:
        yield
        return
    saved = {name: os.environ.get(name) for name in QUIET_ENVIRONMENT}
    loaded = [name for name in ("huggingface_hub", "transformers") if name in sys.modules]
    os.environ.update(QUIET_ENVIRONMENT)
    _library_bars(loaded, enabled=False)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        _library_bars(loaded, enabled=True)
