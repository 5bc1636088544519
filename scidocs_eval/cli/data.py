"""data download, data verify, data build: getting SciDocs data, checking it, and making new suites."""

from __future__ import annotations

import argparse
from pathlib import Path

from scidocs_eval.cli.hints import hint, print_next
from scidocs_eval.cli.options import (
    COMMANDS,
    CommandGroup,
    add_hidden_alias,
    add_output,
    count_type,
    seed_type,
    task_list,
)
from scidocs_eval.data.download import DEFAULT_PREFIX, ENDPOINT_ENV
from scidocs_eval.data.graph.engines import ENGINES
from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.formats.corpus import Published, parse_published
from scidocs_eval.formats.safe_output import claim_inputs_are_not_outputs, declare_inputs, given_as
from scidocs_eval.params import POSITIVE, Interval, argument_type
from scidocs_eval.paths import default_data_dir


def _download(args: argparse.Namespace) -> int:
    from scidocs_eval.data.sources import DownloadOptions, TaskDataset
    from scidocs_eval.evaluation.task import BENCHMARKS, DEFAULT_BENCHMARK, TASKS, get_task, selected_tasks

    benchmark = BENCHMARKS[args.benchmark or DEFAULT_BENCHMARK]
    dest = Path(args.dest or default_data_dir())
    tasks = task_list(args.tasks)
    source = benchmark.download
    if source is None:
        raise ScidocsEvalError(f"benchmark {benchmark.name!r} has nothing to download ({benchmark.description})")
    per_task = [name for name in BENCHMARKS.names() if BENCHMARKS[name].download is not None
                and BENCHMARKS[name].download.per_task]
    if tasks is not None and not source.per_task:
        raise ScidocsEvalError(f"--tasks picks among the hub datasets of --benchmark {' or '.join(per_task)}; "
                               f"benchmark {benchmark.name}'s data is downloaded whole")
    names = [name for name in selected_tasks(tasks, benchmark.name) if TASKS[name].spec.dataset] \
        if source.per_task else []
    if source.per_task and not names:
        raise ScidocsEvalError(f"{'--tasks' if tasks else f'benchmark {benchmark.name!r}'} has no task with a hub "
                               "dataset to download")
    datasets = [TaskDataset(name, TASKS[name].spec.dataset, tuple(get_task(name).required_files("test")))
                for name in names]
    options = DownloadOptions(endpoint=args.endpoint, prefix=args.prefix, with_embeddings=args.with_embeddings,
                              retries=args.retries, timeout=args.timeout, progress=not args.quiet)
    for line in source.fetch(dest, datasets, options):
        print(line)
    if source.per_task:
        groups = list(dict.fromkeys(group for name in names for group in reversed(TASKS[name].groups())))
        print(f"its embeddings groups: {', '.join(groups)} (`run --embeddings GROUP=FILE` gives each its file)")
        picked = ("--tasks", ",".join(names)) if tasks else ()
        print_next(hint("baseline", "random", "--data", dest, *benchmark.option(), *picked,
                        gives="a first score of it"))
    return 0


def _verify(args: argparse.Namespace) -> int:
    from scidocs_eval.evaluation.verify import verify_suite

    report = verify_suite(args.dir or default_data_dir())
    print(report.format())
    return 0 if report.usable(strict=args.strict) else 1


def _build(args: argparse.Namespace) -> int:
    from scidocs_eval.data.build import build_suite

    if args.snapshot is not None:
        return _build_from_snapshot(args)
    if args.format == "beir":
        return _build_full_corpus(args)
    if args.data is not None:
        raise ScidocsEvalError("--data is the suite `data build --format beir` reads; the suite format builds "
                               "from --papers and --citations")
    if not (args.papers and args.citations):
        raise ScidocsEvalError("data build needs --papers and --citations (or --format beir --data SUITE)")
    # nothing written into --out may be one of them
    declare_inputs([*given_as("--papers", [args.papers]), *given_as("--citations", [args.citations])])
    report = build_suite(args.papers, args.citations, args.out, seed=args.seed, label_task=args.label_task,
                         queries_per_split=args.queries_per_split, test_after=args.test_after)
    print(report.format())
    print_next(hint("baseline", "random", "--data", args.out, gives="a first score of it"))
    return 0


def _build_from_snapshot(args: argparse.Namespace) -> int:
    from scidocs_eval.data.graph.recipe import Filters, Recipe, build_graph_suite
    from scidocs_eval.data.graph.snapshot import SOURCES

    source, folder = args.snapshot
    if source not in SOURCES:
        raise ScidocsEvalError(f"--from: the source must be one of {', '.join(SOURCES)}, got {source!r}")
    given = [option for option, value in (("--papers", args.papers), ("--citations", args.citations),
                                          ("--data", args.data)) if value]
    if given or args.format != "suite":
        raise ScidocsEvalError(f"--from {source} builds the suite (and its BEIR layout) from the snapshot; "
                               f"{', '.join(given) or '--format beir'} is for the other ways of `data build`")
    # the snapshot is read whole: no suite is built inside it, refused before the engine starts
    claim_inputs_are_not_outputs([], {"--out-dir": args.out}, given_as(f"--from {source}", [folder]))
    first, last = args.years or (None, None)
    filters = Filters(first, last, _names(args.languages), _names(args.types), _names(args.fields),
                      args.require_abstract)
    recipe = Recipe(queries_per_split=args.queries_per_split, papers_per_class=args.papers_per_class,
                    train_queries=args.train_queries, labels=args.labels)
    report = build_graph_suite(source, folder, args.out, engine=args.engine, seed=args.seed,
                               test_after=args.test_after, filters=filters, recipe=recipe,
                               max_bad_rows=args.max_bad_rows, master=args.master, memory_limit=args.memory_limit,
                               temp_directory=args.temp_dir, threads=args.threads)
    print(report.format())
    print_next(hint("baseline", "random", "--data", args.out, gives="a first score of it"))
    return 0


def _names(text: str | None) -> tuple[str, ...]:
    return tuple(name.strip() for name in text.split(",") if name.strip()) if text else ()


def _years(text: str) -> tuple[int | None, int | None]:
    first, _, last = text.partition("-") if "-" in text else (text, "", text)
    try:
        bounds = (int(first) if first else None, int(last) if last else None)
    except ValueError:
        raise ScidocsEvalError(f"--years: expected FIRST-LAST (2015-2020, 2015-, -2020) or one year, got {text!r}") \
            from None
    if None not in bounds and bounds[0] > bounds[1]:
        raise ScidocsEvalError(f"--years: {text!r} ends before it starts")
    return bounds


def _cutoff(text: str) -> Published:
    try:
        return parse_published(text)
    except ValueError as error:
        raise ScidocsEvalError(f"--test-after: {error}") from None


def _build_full_corpus(args: argparse.Namespace) -> int:
    from scidocs_eval.data.full_corpus import build_full_corpus
    from scidocs_eval.data.resolve import resolve_suite
    from scidocs_eval.evaluation.task import task_names

    if args.papers or args.citations:
        raise ScidocsEvalError("--format beir reads a suite (--data SUITE), not --papers/--citations: build the "
                               "suite first with `data build --papers ... --citations ... --out-dir SUITE`")
    suite = resolve_suite(args.data)
    declare_inputs(given_as("--data", [suite.root]))  # nothing written into --out may be a file of the suite it reads
    report = build_full_corpus(suite, args.out, task_names(paper_pairs=True))
    print(report.format())
    print_next(hint("baseline", "random", "--data", args.out, "--benchmark", "full-corpus",
                    gives="a first score of it"))
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
    download.add_argument("--benchmark", help="the benchmark whose data to fetch, from where it says "
                          "(`Benchmark.download`; default: scidocs, the official release from S3); mteb-scidocs, "
                          "mteb-sci or sci: their datasets from the Hugging Face hub at the revisions MTEB pins, one "
                          "folder per task (retrieval sets in the BEIR layout, clustering and classification sets as "
                          "their rows); scirepeval: SciRepEval's two hub datasets")
    download.add_argument("--tasks", help="comma-separated tasks of --benchmark to download (default: every task "
                          "of it with a hub dataset)")
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
    build.add_argument("--format", choices=("suite", "beir"), default="suite",
                       help="suite: a suite in the official layout from --papers and --citations (default); beir: "
                       "the full-corpus retrieval version of the ranking tasks of the suite --data, in the BEIR "
                       "layout (run it with --benchmark full-corpus)")
    build.add_argument("--papers", help="JSON lines {paper_id, title, abstract, label?} (suite format)")
    build.add_argument("--citations", help="TSV citing<TAB>cited, a header row allowed (suite format)")
    build.add_argument("--data", help="the suite to read (beir format): a folder, or 'demo'")
    add_hidden_alias(build, add_output(build, "--out-dir", dest="out", kind="folder", required=True,
                                       help="the suite folder to write (new or empty; a rebuild replaces only files "
                                       "an earlier build wrote)"), "--out")
    build.add_argument("--seed", type=seed_type(), default=0, help="seeds the split (default: %(default)s)")
    build.add_argument("--label-task", default="mag", help="task folder for the labels (default: %(default)s)")
    build.add_argument("--queries-per-split", type=count_type("--queries-per-split"), default=1000,
                       help="most queries per ranking task and split (default: %(default)s, as SciDocs)")
    build.add_argument("--test-after", type=_cutoff, metavar="YEAR|DATE",
                       help="evaluation queries and classification test papers only from papers published after "
                       "this year (2019) or date (2019-06-30), training files only from papers at or before it "
                       "(the papers need a year or date field)")
    snapshot = build.add_argument_group("from a snapshot of the scholarly graph (docs/data.md)")
    snapshot.add_argument("--from", nargs=2, dest="snapshot", metavar=("SOURCE", "DIR"),
                          help="build from a snapshot: openalex DIR (the works snapshot, data/works/updated_date=*/"
                          "part_*.gz) or s2 DIR (Semantic Scholar's papers/, abstracts/, citations/ datasets)")
    snapshot.add_argument("--engine", choices=ENGINES, default="duckdb",
                          help="duckdb: embedded, out of core (default); spark: a Spark session (--master)")
    snapshot.add_argument("--master", default="local[*]", help="the Spark master (default: %(default)s)")
    snapshot.add_argument("--memory-limit", help="the engine's memory cap, e.g. 4GB (DuckDB's memory_limit; Spark's "
                          "driver memory); beyond it DuckDB spills to --temp-dir")
    snapshot.add_argument("--temp-dir", help="where the engine's spill folder is made (and removed after); default: "
                          "beside --out-dir")
    snapshot.add_argument("--threads", type=count_type("--threads"), help="DuckDB's threads (default: every core)")
    snapshot.add_argument("--years", type=_years, metavar="FIRST-LAST",
                          help="keep works published in these years (2015-2024, 2015-, -2024)")
    snapshot.add_argument("--languages", help="keep works in these languages (comma-separated, OpenAlex: en,de)")
    snapshot.add_argument("--types", help="keep works of these types (comma-separated: article,preprint; "
                          "Semantic Scholar: the first publication type)")
    snapshot.add_argument("--fields", help="keep works of these top-level fields (comma-separated names)")
    snapshot.add_argument("--require-abstract", action="store_true", help="keep only works with an abstract")
    snapshot.add_argument("--labels", choices=("topics", "concepts"), default="topics",
                          help="OpenAlex's top-level field for mag: primary_topic's field (default) or the first "
                          "level-0 concept (MAG's 19 fields, as SciDocs)")
    snapshot.add_argument("--papers-per-class", type=argument_type([Interval(int, 5, None)], "--papers-per-class"),
                          default=1300, help="most papers of each class drawn for mag and mesh (default: "
                          "%(default)s; SciDocs: about 25K papers in 19 classes)")
    snapshot.add_argument("--train-queries", type=count_type("--train-queries"), default=150000,
                          help="most SPECTER training queries drawn (default: %(default)s)")
    snapshot.add_argument("--max-bad-rows", type=argument_type([Interval(int, 0, None)], "--max-bad-rows"),
                          default=0, help="bad rows (malformed lines, records without an id, fields of another "
                          "JSON type than the schema's) tolerated, left out and each named in build.json; more stop "
                          "the build (default: %(default)s)")
    build.set_defaults(func=_build)


COMMANDS.register(CommandGroup("data", add_commands))
