"""The `scidocs-eval` command: a thin layer over the Python API; its commands come from the COMMANDS registry."""

from __future__ import annotations

import argparse
import difflib
import logging
import sys
from collections.abc import Sequence
from importlib import metadata
from typing import NoReturn

from scidocs_eval.cli.hints import hint, print_next
from scidocs_eval.cli.options import COMMANDS, output_actions
from scidocs_eval.cli.quiet import quiet_mode
from scidocs_eval.errors import ScidocsEvalError, describe_error
from scidocs_eval.formats.safe_output import output_session
from scidocs_eval.progress import close_open_bars
from scidocs_eval.warning_groups import each_warning_once


class OneLineParser(argparse.ArgumentParser):
    """argparse's parser, but a usage error is the one line `scidocs-eval: error: ...` of every other error (the
    command named, `--help` for the usage), exit status 2; subcommands' parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix("scidocs-eval").strip()
        where = f"{command}: " if command else ""
        self.exit(2, f"scidocs-eval: error: {where}{one_line(message)} (see `{self.prog} --help`)\n")

    def _check_value(self, action: argparse.Action, value: object) -> None:
        """A value outside an option's choices (an adapter, a command, a split) names the close ones, as an unknown
        task name does."""
        if action.choices is not None and value not in action.choices:
            choices = [str(choice) for choice in action.choices]
            close = difflib.get_close_matches(str(value), choices, n=3)
            guess = f"; did you mean {' or '.join(close)}?" if close else ""
            raise argparse.ArgumentError(action, f"invalid choice: {value!r}{guess} (choose from "
                                         f"{', '.join(choices)})")
        super()._check_value(action, value)


def one_line(message: str) -> str:
    """`message` with its line breaks and runs of spaces made single spaces."""
    return " ".join(message.split())


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="scidocs-eval", description="Evaluate scientific-document embeddings on the SciDocs benchmark.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what is being done")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}",
                        help="print the version and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for _, group in COMMANDS.items():
        group.add_commands(subparsers)

    for command in leaf_parsers(parser):
        command.add_argument("--quiet", action="store_true", help="no progress bars")
        if output_actions(command):
            command.add_argument("--overwrite", action="store_true",
                                 help="replace files of yours that are in the way of this command's output (without "
                                 "it, only files scidocs-eval wrote are replaced; see docs/errors_and_files.md)")
    return parser


def _version() -> str:
    try:
        return metadata.version("scidocs-eval")
    except metadata.PackageNotFoundError:
        return "(not installed)"


def _list_commands(parser: argparse.ArgumentParser) -> int:
    """A bare `scidocs-eval`: every command with its one line, and where to go next."""
    print(f"scidocs-eval {_version()}: {parser.description}\n")
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {action.dest: action.help for action in subparsers._choices_actions}
    width = max(map(len, helps))
    for name, text in helps.items():
        print(f"  {name:<{width}}  {text}")
    print("\nscidocs-eval COMMAND --help says more.")
    print_next(hint("baseline", "random", "--data", "demo", gives="a first run, on the synthetic demo suite"))
    return 0


def leaf_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The parsers of every runnable command (`run`, `data build`, `plot results`, ...), nested groups walked."""
    children = [choice for action in parser._actions if isinstance(action, argparse._SubParsersAction)
                for choice in dict.fromkeys(action.choices.values())]
    if not children:
        return [parser]
    return ([parser] if parser.get_default("func") else []) + [leaf for child in children
                                                               for leaf in leaf_parsers(child)]


def _printed_by_its_library(record: logging.LogRecord) -> bool:
    """False for a record whose library logger has a handler of its own (transformers', huggingface_hub's), which
    prints it already: each warning once, not twice."""
    name = record.name
    while name:
        logger = logging.Logger.manager.loggerDict.get(name)
        if isinstance(logger, logging.Logger) and logger.handlers:
            return False
        name = name.rpartition(".")[0]
    return True


def _innermost(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the (sub)command `args` ran: `data build`'s for `scidocs-eval data build ...`."""
    while True:
        commands = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        chosen = getattr(args, commands.dest, None) if commands is not None else None
        if chosen not in (commands.choices if commands is not None else {}):
            return parser
        parser = commands.choices[chosen]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; every error of the user's input or files is one line on stderr and exit status 2."""
    try:
        parser = build_parser()
        args, unknown = parser.parse_known_args(argv)
        if unknown:  # named by the command's own parser, so the hint is that command's --help
            _innermost(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
        if args.command is None:
            return _list_commands(parser)
        logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                            format="%(levelname)s %(message)s")
        for handler in logging.getLogger().handlers:
            handler.addFilter(_printed_by_its_library)
        with quiet_mode(args.quiet), output_session(overwrite=getattr(args, "overwrite", False)), \
                each_warning_once(logging.getLogger().handlers):
            return int(args.func(args) or 0)
    except (ScidocsEvalError, OSError) as error:
        close_open_bars()
        print(f"scidocs-eval: error: {one_line(describe_error(error))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        close_open_bars()
        print("scidocs-eval: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
