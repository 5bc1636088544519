"""cache info | prune --older-than DAYS | clear: the embedding cache across runs (`formats.vector_cache`)."""

from __future__ import annotations

import argparse

from scidocs_eval.cli.options import COMMANDS, CommandGroup
from scidocs_eval.params import Interval, argument_type


def _cache(args: argparse.Namespace) -> int:
    from scidocs_eval.formats.vector_cache import VectorCache

    cache = VectorCache()
    if args.cache_action == "info":
        print(cache.info().format())
        return 0
    removed, freed = cache.prune(args.older_than * 86400) if args.cache_action == "prune" else cache.clear()
    print(f"removed {removed} segment(s), {freed / 2**20:.1f} MiB, from {cache.root}")
    return 0


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    cache = subparsers.add_parser(
        "cache", help="the embedding cache across runs: info, prune, clear",
        description="Vectors a model computed, found again by the model's fingerprint (its weights' hash), the role "
                    "and the exact text, so a second run of the same model embeds nothing. Kept under "
                    "$SCIDOCS_EVAL_CACHE/vectors (default: the per-user cache folder).")
    actions = cache.add_subparsers(dest="cache_action", required=True, metavar="ACTION")
    actions.add_parser("info", help="where the cache is, how many vectors and bytes it holds",
                       description="Print the cache's folder, how many vectors of how many model/role pairs it "
                                   "holds, its size and when a run last used it.")
    prune = actions.add_parser("prune", help="remove what no run has used for a while",
                               description="Remove the segments no run has read or written for --older-than "
                                           "days (a run that reads a segment marks it used).")
    prune.add_argument("--older-than", type=argument_type([Interval(float, 0, None)], "--older-than", float),
                       required=True, metavar="DAYS",
                       help="remove the segments no run has read or written for this many days")
    actions.add_parser("clear", help="remove every cached vector",
                       description="Remove every cached vector; the next run of each model embeds everything again.")
    cache.set_defaults(func=_cache)


COMMANDS.register(CommandGroup("cache", add_commands))
