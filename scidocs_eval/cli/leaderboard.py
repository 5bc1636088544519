"""leaderboard: many results files ranked per task and benchmark average, with significance groups."""

from __future__ import annotations

import argparse
import logging

import orjson

from scidocs_eval.cli.options import COMMANDS, CommandGroup, add_hidden_alias, add_output, seed_type
from scidocs_eval.evaluation.comparison import ALPHA
from scidocs_eval.formats.safe_output import (
    Rows,
    claim_inputs_are_not_outputs,
    claim_output,
    claim_output_folder,
    given_as,
    write_bytes_atomically,
)
from scidocs_eval.params import Interval, argument_type

MIN_RESAMPLES = 100

log = logging.getLogger("scidocs_eval")


def _leaderboard(args: argparse.Namespace) -> int:
    from scidocs_eval.leaderboard.ranking import leaderboard_dict, rank_files, render_markdown
    from scidocs_eval.leaderboard.report import LEADERBOARD_COMMAND, write_leaderboard_page
    from scidocs_eval.leaderboard.runs import collect_results

    files, warnings = collect_results(args.results)
    outputs = {"--out": args.json, "--out-dir": args.html}
    claim_inputs_are_not_outputs(given_as("RESULTS", [str(f) for f in files]), outputs)
    if args.json:  # every output is claimed before the board is computed: a refusal comes at once
        claim_output(args.json, "--out")
    if args.html:
        claim_output_folder(args.html, LEADERBOARD_COMMAND, "--out-dir", replaces=(LEADERBOARD_COMMAND,))
    for warning in warnings:
        log.warning(warning)
    board, runs = rank_files(files, args.resamples, args.seed, args.alpha, progress=not args.quiet)
    print(render_markdown(board), end="")
    if args.json:
        path = write_bytes_atomically(args.json, orjson.dumps(leaderboard_dict(board), option=orjson.OPT_INDENT_2),
                                      "--out", rows=Rows("results", {run.label for run in runs}))
        print(f"leaderboard written to {path}")
    if args.html:
        page = write_leaderboard_page(board, runs, args.html, title=args.title)
        print(f"leaderboard page written to {page} (open it in a browser: file://{page.resolve()})")
    return 0


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "leaderboard", help="rank many results files per task and average, with significance groups",
        description="Rank results files (from `run --out` or `baseline`; files, folders of them, or globs) per task "
                    "(main score) and per benchmark average (Table 1's Avg, SciRepEval's columns), each model with "
                    "its 95%% interval and its significance group: models that share a letter are not significantly "
                    "different (paired tests on the items both scored, Holm over the pairs). Then the mean rank "
                    "over the tasks with Friedman's and Nemenyi's tests. Only results of the same split, suite "
                    "files and task settings are ranked together; published rows are placed by score, without a "
                    "letter. See docs/leaderboard.md.")
    parser.add_argument("results", nargs="+", metavar="RESULTS",
                        help="results files, folders holding them (every *.json results file inside), or globs")
    parser.add_argument("--resamples", type=argument_type([Interval(int, MIN_RESAMPLES, None)], "--resamples"),
                        default=None, help="random permutations / bootstrap resamples per test (default: enough for "
                        "Holm over the pairs: max(10000, 5 x pairs / alpha))")
    parser.add_argument("--seed", type=seed_type(), default=0, help="seeds the resampling (default: %(default)s)")
    parser.add_argument("--alpha", type=argument_type([Interval(float, 0, 1, closed="neither")], "--alpha", float),
                        default=ALPHA, help="significance level, on Holm-corrected p-values (default: %(default)s)")
    add_hidden_alias(parser, add_output(parser, "-o", "--out", dest="json", kind="file", metavar="OUT",
                                        help="also write the leaderboard as JSON here"), "--json")
    add_hidden_alias(parser, add_output(parser, "--out-dir", dest="html", kind="folder", metavar="SITE",
                                        help="also write an HTML page (SITE/index.html: sortable rankings, intervals "
                                             "and groups as a chart)"), "--html")
    parser.add_argument("--title", default="SciDocs leaderboard with significance groups",
                        help="the HTML page's title")
    parser.set_defaults(func=_leaderboard)


COMMANDS.register(CommandGroup("leaderboard", add_commands))
