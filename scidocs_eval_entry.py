"""The `scidocs-eval` console script.

It lives outside the `scidocs_eval` package so that Ctrl-C is handled from the first moment: importing the
package takes a second or more (numpy, pandas, ...), and an interrupt during that start-up must end the command
with one line and exit status 130, like an interrupt later on, not with a traceback.
"""

from __future__ import annotations

import sys

INTERRUPTED = 130


def main() -> int:
    try:
        from scidocs_eval.cli import main as run_command

        return run_command()
    except KeyboardInterrupt:
        print("scidocs-eval: interrupted", file=sys.stderr)
        return INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
