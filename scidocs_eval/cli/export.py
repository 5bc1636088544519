"""export mteb: results files in MTEB's results layout (for the tasks that reproduce an MTEB task)."""

from __future__ import annotations

import argparse

from scidocs_eval.cli.options import COMMANDS, CommandGroup, add_hidden_alias, add_output
from scidocs_eval.evaluation.mteb_export import NO_REVISION, export_mteb


def _export_mteb(args: argparse.Namespace) -> int:
    report = export_mteb(args.results, args.out, model_name=args.model_name, revision=args.revision)
    print(report.format())
    print(f"MTEB results layout written to {args.out}")
    return 0


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    export = subparsers.add_parser("export", help="write results in another tool's format (mteb)")
    formats = export.add_subparsers(dest="export_format", required=True, metavar="FORMAT")
    mteb = formats.add_parser(
        "mteb", help="MTEB's results layout: {org__model}/{revision}/{Task}.json and model_meta.json",
        description="Write the tasks with an MTEB counterpart (scidocs-retrieval -> SCIDOCS, scidocs-rr -> "
                    "SciDocsRR, nano-scidocs -> NanoSCIDOCSRetrieval) as MTEB TaskResult files, loadable by "
                    "mteb.ResultCache and TaskResult.from_disk; every other task is listed as not exported.")
    mteb.add_argument("results", nargs="+", metavar="RESULTS.json", help="scidocs-eval results files")
    add_hidden_alias(mteb, add_output(mteb, "--out-dir", dest="out", kind="folder", required=True,
                                      help="the results folder to write (new or empty, or one an earlier export "
                                      "wrote)"), "--out")
    mteb.add_argument("--model-name", help="the model's MTEB name, org/name (default: the results' model name)")
    mteb.add_argument("--revision", default=NO_REVISION, help="the model's revision (default: %(default)s)")
    mteb.set_defaults(func=_export_mteb)


COMMANDS.register(CommandGroup("export", add_commands))
