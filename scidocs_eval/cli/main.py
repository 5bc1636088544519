"""The `scidocs-eval` command: a thin layer over the Python API; its commands come from the COMMANDS registry."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from scidocs_eval.cli.options import COMMANDS
from scidocs_eval.errors import ScidocsEvalError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scidocs-eval", description="Evaluate scientific-document embeddings on the SciDocs benchmark.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what is being done")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for _, group in COMMANDS.items():
        group.add_commands(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(message)s")
    try:
        return int(args.func(args) or 0)
    except ScidocsEvalError as error:
        print(f"scidocs-eval: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
