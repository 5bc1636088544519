"""Whether the Hugging Face hub can be used here, told in seconds: the libraries would retry for about a minute
before failing. Models (`models.encoder.model_source`) and datasets (`data.hf_datasets`) ask before they load."""

from __future__ import annotations

import functools
import os
import socket
import threading
from urllib.parse import urlsplit

HUB_PROBE_SECONDS = 3.0
"""How long the one connection attempt to the hub may take before it counts as unreachable."""


def env_flag(name: str) -> bool:
    """Whether the environment variable `name` is set to a true value (1, true, yes, on)."""
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


@functools.cache
def hub_reachable(endpoint: str) -> bool:
    """Whether a TCP connection to the hub (or to the HTTPS proxy, when one is set) opens within
    `HUB_PROBE_SECONDS`, name lookup included; tried once per process and endpoint."""
    proxy = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy") or os.environ.get("ALL_PROXY")
    target = urlsplit(proxy if proxy else endpoint)
    host, port = target.hostname, target.port or (443 if target.scheme == "https" else 80)
    if not host:
        return False
    outcome: list[bool] = []

    def connect() -> None:
        try:
            socket.create_connection((host, port), timeout=HUB_PROBE_SECONDS).close()
            outcome.append(True)
        except OSError:
            outcome.append(False)

    probe = threading.Thread(target=connect, daemon=True)
    probe.start()
    probe.join(HUB_PROBE_SECONDS)
    return bool(outcome and outcome[0])
