"""compare: is model B really better than model A? Paired significance tests between results files."""

from __future__ import annotations

import argparse
import sys

from scidocs_eval.cli.options import COMMANDS, CommandGroup, add_hidden_alias, add_output, seed_type
from scidocs_eval.evaluation.comparison import ALPHA, compare, write_json
from scidocs_eval.formats.safe_output import claim_inputs_are_not_outputs, claim_output, given_as
from scidocs_eval.params import Interval, argument_type
from scidocs_eval.statistics.significance import RESAMPLES

MIN_RESAMPLES = 40
"""Fewer resamples leave less than one in each 2.5% tail: no 95% interval at all."""
FEW_RESAMPLES = 1000
"""Below this the interval's ends and the smallest p-value (1 / (resamples + 1)) are coarse: a warning."""


def _compare(args: argparse.Namespace) -> int:
    from scidocs_eval.leaderboard.compare_table import comparison_markdown, format_comparison

    if args.json:
        claim_inputs_are_not_outputs(given_as("RESULTS", args.results), {"--out": args.json})
        claim_output(args.json, "--out")
    if args.resamples < FEW_RESAMPLES:
        print(f"scidocs-eval: warning: --resamples {args.resamples} is below {FEW_RESAMPLES}: the 95% intervals' ends "
              f"and the p-values (none below {1 / (args.resamples + 1):.3f}) are coarse; use the default "
              f"{RESAMPLES} for numbers to report", file=sys.stderr)
    comparison = compare(*args.results, resamples=args.resamples, seed=args.seed, alpha=args.alpha,
                         progress=not args.quiet)
    print(comparison_markdown(comparison) if args.markdown else format_comparison(comparison))
    if args.json:
        print(f"comparison written to {write_json(comparison, args.json)}")
    return 0


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare", help="paired significance tests: is B better than A, per task and metric?",
        description="Compare results files (from `run --out` or `baseline`) scored on the same suite files and "
                    "split: per task and metric, B - A, its 95% paired-bootstrap interval, a paired test's p-value "
                    "(randomization; recomm: bootstrap), Holm-corrected over the metrics, and a verdict. With more "
                    "than two files, each is compared with the first. See docs/significance.md.")
    parser.add_argument("results", nargs="+", metavar="RESULTS.json",
                        help="the baseline A, then B (and C, ...), each compared with A")
    parser.add_argument("--resamples", type=argument_type([Interval(int, MIN_RESAMPLES, None)], "--resamples"),
                        default=RESAMPLES, help="bootstrap resamples and random permutations per metric, at least "
                        f"{MIN_RESAMPLES} (a 95%% interval needs 2.5%% of them in each tail); below "
                        f"{FEW_RESAMPLES} a warning (default: %(default)s)")
    parser.add_argument("--seed", type=seed_type(), default=0, help="seeds the resampling (default: %(default)s)")
    parser.add_argument("--alpha", type=argument_type([Interval(float, 0, 1, closed="neither")], "--alpha", float),
                        default=ALPHA,
                        help="significance level of the verdicts, on Holm-corrected p-values (default: %(default)s)")
    add_hidden_alias(parser, add_output(parser, "-o", "--out", dest="json", kind="file", metavar="OUT",
                                        help="also write the comparison as JSON here"), "--json")
    parser.add_argument("--markdown", action="store_true", help="print markdown tables instead of plain text")
    parser.set_defaults(func=_compare)


COMMANDS.register(CommandGroup("compare", add_commands))
