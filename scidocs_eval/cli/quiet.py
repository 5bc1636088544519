"""`--quiet`: no progress bars from anything a command runs, ours or a library's.

Our bars (`scidocs_eval.progress`) follow SCIDOCS_EVAL_QUIET. transformers ("Loading weights", "Writing model
shards"), huggingface_hub (downloads), datasets ("Generating split") and any other tqdm bar (sentence-transformers'
batches) are switched off through the environment variables those libraries read when they are imported, and
through their functions when they already are (a library imported inside the block keeps its bars off: it reads
the variable once).
Warnings and errors still show: quiet hides progress, never a problem.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from scidocs_eval.extras import require

QUIET_ENVIRONMENT = {
    "SCIDOCS_EVAL_QUIET": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
    "TQDM_DISABLE": "1",
}


def _bars_switches() -> dict[str, tuple[bool, Callable[[], None], Callable[[], None]]]:
    """Library -> (are its bars on, switch them on, switch them off), for huggingface_hub, datasets and
    transformers where they are imported."""
    switches = {}
    if "huggingface_hub" in sys.modules:
        hub = require("huggingface_hub.utils", "--quiet")

        switches["huggingface_hub"] = (not hub.are_progress_bars_disabled(), hub.enable_progress_bars,
                                       hub.disable_progress_bars)
    if "datasets" in sys.modules:
        datasets = require("datasets", "--quiet")

        switches["datasets"] = (datasets.is_progress_bar_enabled(), datasets.enable_progress_bars,
                                datasets.disable_progress_bars)
    if "transformers" in sys.modules:
        transformers_logging = require("transformers.utils.logging", "--quiet")

        switches["transformers"] = (transformers_logging.is_progress_bar_enabled(),
                                    transformers_logging.enable_progress_bar, transformers_logging.disable_progress_bar)
    return switches


@contextmanager
def quiet_mode(enabled: bool = True) -> Iterator[None]:
    """No progress bars inside the block when `enabled`; the environment and the libraries are restored after."""
    if not enabled:
        yield
        return
    saved = {name: os.environ.get(name) for name in QUIET_ENVIRONMENT}
    switches = _bars_switches()
    os.environ.update(QUIET_ENVIRONMENT)
    for _, _, switch_off in switches.values():
        switch_off()
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        for was_on, switch_on, _ in switches.values():
            if was_on:
                switch_on()
