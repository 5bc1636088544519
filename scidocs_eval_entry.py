"""The `scidocs-eval` console script.

It lives outside the `scidocs_eval` package so that Ctrl-C is handled from the first moment: importing the
command's modules takes a moment (every plugin module; numpy and the heavy libraries load later, where they are
used), and an interrupt during that start-up must end the command with one line and exit status 130, like an
interrupt later on, not with a traceback. An interrupt that
lands inside a C extension's initialisation comes out as some other exception (numpy: an ImportError), so the
signal itself is noted and decides. Once the command has returned, an interrupt changes nothing: it is
ignored, so that one landing while the interpreter shuts down (where Python restores the default handler)
does not kill a finished command by signal.
"""

from __future__ import annotations

import signal
import sys
from types import FrameType

INTERRUPTED = 130
_interrupts: list[int] = []


def _on_interrupt(signum: int, frame: FrameType | None) -> None:
    _interrupts.append(signum)
    raise KeyboardInterrupt


def main() -> int:
    signal.signal(signal.SIGINT, _on_interrupt)
    try:
        from scidocs_eval.cli.main import main as run_command

        status = run_command()
    except BaseException:
        if not _interrupts:
            raise
        print("scidocs-eval: interrupted", file=sys.stderr)
        status = INTERRUPTED
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return status


if __name__ == "__main__":
    sys.exit(main())
