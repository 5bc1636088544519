"""data download, data verify, data build: getting SciDocs data, checking it, and making new suites."""

from __future__ import annotations

import argparse

from scidocs_eval.cli.options import COMMANDS, CommandGroup, add_hidden_alias, add_output, count_type, seed_type
from scidocs_eval.data.download import DEFAULT_PREFIX, ENDPOINT_ENV
from scidocs_eval.params import POSITIVE, Interval, argument_type
from scidocs_eval.paths import default_data_dir


def _download(args: argparse.Namespace) -> int:
    from scidocs_eval.data.download import DownloadError, S3Downloader, download_release

    dest = args.dest or default_data_dir()
    client = S3Downloader(args.endpoint, retries=args.retries, timeout=args.timeout)
    report = download_release(dest, prefix=args.prefix, with_embeddings=args.with_embeddings, downloader=client,
                              progress=not args.quiet)
    print(f"{client.endpoint}/{args.prefix} -> {dest}")
    print(report.summary())
    if report.failed:
        raise DownloadError(f"{len(report.failed)} file(s) not downloaded; run the command again to resume:\n"
                            + "\n".join(f"FAILED {why}" for why in report.failed.values()))
    return 0


def _verify(args: argparse.Namespace) -> int:
    from scidocs_eval.evaluation.verify import verify_suite

    report = verify_suite(args.dir or default_data_dir())
    print(report.format())
    return 0 if report.usable(strict=args.strict) else 1


def _build(args: argparse.Namespace) -> int:
    from scidocs_eval.data.build import build_suite

    report = build_suite(args.papers, args.citations, args.out, seed=args.seed, label_task=args.label_task,
                         queries_per_split=args.queries_per_split)
    print(report.format())
    return 0


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    data = subparsers.add_parser("data", help="download, verify or build SciDocs data")
    commands = data.add_subparsers(dest="data_command", required=True, metavar="SUBCOMMAND")

    download = commands.add_parser(
        "download", help="fetch the official release over HTTPS (anonymous, resumable, checked)",
        description="List the official release's keys (S3 ListObjectsV2) and fetch what the tasks need, resuming "
                    "partial files, retrying failures and checking sizes and MD5s. No AWS CLI or region needed.")
    add_hidden_alias(download, add_output(download, "--out-dir", dest="dest", kind="folder",
                                          help="where to put it (default: $SCIDOCS_EVAL_DATA or the per-user data "
                                          "dir)"), "--dest")
    download.add_argument("--with-embeddings", action="store_true",
                          help="also fetch the reference SPECTER embeddings (several GiB)")
    download.add_argument("--endpoint", help=f"the bucket's URL (default: ${ENDPOINT_ENV} or the public bucket)")
    download.add_argument("--prefix", default=DEFAULT_PREFIX, help="the release's folder (default: %(default)s)")
    download.add_argument("--retries", type=argument_type([Interval(int, 0, None)], "--retries"),
                          default=5, help="retries per request (default: %(default)s)")
    download.add_argument("--timeout", type=argument_type([POSITIVE], "--timeout", float),
                          default=60.0, help="seconds before a stalled request is "
                          "retried (default: %(default)s)")
    download.set_defaults(func=_download)

    verify = commands.add_parser(
        "verify", help="parse every file of a suite and report counts and problems",
        description="Parse every file of a suite; print counts per task and split and every problem found. "
                    "Exit status 0: usable; 1: not usable.")
    verify.add_argument("dir", nargs="?", help="suite directory (default: $SCIDOCS_EVAL_DATA or the data dir)")
    verify.add_argument("--strict", action="store_true",
                        help="warnings (ids without metadata, repeated rows, queries without a positive) count too")
    verify.set_defaults(func=_verify)

    build = commands.add_parser(
        "build", help="build a SciDocs-style suite from papers and citation links",
        description="Build a suite in the official layout (classification, cite, co-cite) and SPECTER training "
                    "files from any corpus: papers as JSON lines {paper_id, title, abstract, label?} and "
                    "citation links as TSV citing<TAB>cited.")
    build.add_argument("--papers", required=True, help="JSON lines {paper_id, title, abstract, label?}")
    build.add_argument("--citations", required=True, help="TSV citing<TAB>cited (a header row is allowed)")
    add_hidden_alias(build, add_output(build, "--out-dir", dest="out", kind="folder", required=True,
                                       help="the suite folder to write (new or empty; a rebuild replaces only files "
                                       "an earlier build wrote)"), "--out")
    build.add_argument("--seed", type=seed_type(), default=0, help="seeds the split (default: %(default)s)")
    build.add_argument("--label-task", default="mag", help="task folder for the labels (default: %(default)s)")
    build.add_argument("--queries-per-split", type=count_type("--queries-per-split"), default=1000,
                       help="most queries per ranking task and split (default: %(default)s, as SciDocs)")
    build.set_defaults(func=_build)


COMMANDS.register(CommandGroup("data", add_commands))
