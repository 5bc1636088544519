"""run, table, baseline, demo, tasks: the evaluation commands."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scidocs_eval.cli.hints import hint, print_next, results_hints
from scidocs_eval.cli.options import (
    COMMANDS,
    MODEL_OPTIONS,
    CommandGroup,
    adapter_params,
    add_embeddings_read_options,
    add_hidden_alias,
    add_model_options,
    add_output,
    embeddings_read_options,
    parse_params,
    seed_type,
    task_list,
)
from scidocs_eval.data.demo import DemoConfig, build_demo_suite
from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.task import (
    BENCHMARKS,
    DEFAULT_BENCHMARK,
    DEFAULT_MIN_COVERAGE,
    TASKS,
    benchmarks_of,
    claim_task_inputs,
    embedding_groups,
    get_task,
    task_names,
)
from scidocs_eval.formats.safe_output import (
    Rows,
    claim_inputs_are_not_outputs,
    claim_output,
    given_as,
    write_bytes_atomically,
)
from scidocs_eval.models.adapter import adapter_names
from scidocs_eval.params import FRACTION, argument_type
from scidocs_eval.run.baseline import EMBEDDINGS_FORMATS

if TYPE_CHECKING:
    from scidocs_eval.evaluation.config import RunConfig
    from scidocs_eval.evaluation.results import RunResult

DEFAULT_RESULTS_DIR = "scidocs-results"
DEMO_SCALES = {"small": DemoConfig.small, "scidocs": DemoConfig.scidocs}
"""`demo --scale`: the demo suite's sizes."""


def _add_evaluation_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", help="suite directory in the official layout, or 'demo' for the synthetic "
                        "demo suite (default: $SCIDOCS_EVAL_DATA or the per-user data directory)")
    parser.add_argument("--benchmark", help="score the tasks of this named benchmark, or of several, comma-separated "
                        "(baseline embeds them with one plan; default: scidocs, the 2020 suite's seven; "
                        f"`scidocs-eval benchmarks` lists them: {', '.join(BENCHMARKS.names())})")
    parser.add_argument("--tasks", help="comma-separated tasks, of any benchmark (with --benchmark, of that one): "
                        f"{','.join(task_names())}")
    parser.add_argument("--split", choices=("test", "val"), default="test",
                        help="the split scored: test (what the paper reports, default) or val")
    parser.add_argument("--missing", choices=("official", "error"), default="official",
                        help="papers without an embedding: the official rules (default) or stop with a list")
    parser.add_argument("--task-param", action="append", metavar="TASK.KEY=VALUE", default=[],
                        help="a task constructor parameter, e.g. recomm.seeds=3 (repeatable)")
    parser.add_argument("--min-coverage", type=argument_type([FRACTION], "--min-coverage", float),
                        default=DEFAULT_MIN_COVERAGE, help="the least share (0 to 1) of each task's queries, "
                        "candidates or papers with a usable embedding; below it the run stops (default: %(default)s)")


def run_config(args: argparse.Namespace, **command_fields: Any) -> RunConfig:
    """The `RunConfig` of the evaluation options `run` and `baseline` share, with the fields only one of them has
    (`run`: dtype, output, exclude)."""
    from scidocs_eval.evaluation.config import RunConfig

    benchmarks = [name.strip() for name in args.benchmark.split(",")] if args.benchmark is not None else None
    return RunConfig(data=args.data, tasks=task_list(args.tasks), benchmarks=benchmarks, split=args.split,
                     missing=args.missing, task_params=_task_params(args.task_param), min_coverage=args.min_coverage,
                     progress=not args.quiet, cache=not args.no_cache, **command_fields)


def _task_params(pairs: list[str]) -> dict[str, dict[str, object]]:
    params: dict[str, dict[str, object]] = {}
    for pair in pairs:
        task, dot, rest = pair.partition(".")
        if not dot or task not in task_names():
            raise ScidocsEvalError(f"--task-param wants TASK.KEY=VALUE with a known task, got {pair!r}")
        params.setdefault(task, {}).update(parse_params([rest]))
    return params


VALUES_NOTE = "Values are ×100 (F1, MAP, nDCG and P@1 in percent, 2 decimals), as the paper prints them."


def _describe_file(path: Path) -> str:
    size = path.stat().st_size
    what = "results" if path.suffix == ".json" else "embeddings"  # run and baseline write nothing else
    return f"{path} ({what}, {size / 1e6:.1f} MB)" if size >= 100_000 else f"{path} ({what})"


def _print_result(result: RunResult, written: list[Path], ci: bool = False) -> int:
    """The run's table, the Table 1 row beside the paper's row of the same name, what was written where and the
    next command; exit status 2 when a task could not run (an error line each)."""
    from scidocs_eval.leaderboard import render_table1
    from scidocs_eval.leaderboard.run_table import format_run

    print(VALUES_NOTE)
    print(format_run(result, ci=ci))
    if any(TASKS[name].spec.table1 for name in result.tasks if name in TASKS):
        print()
        print(render_table1([result], include_paper="same-name"))
    for benchmark in benchmarks_of(list(result.tasks), result.settings.benchmarks):
        if (table := benchmark.after_run(result)) is not None:
            print()
            print(table, end="")
    results_file = next((path for path in written if path.name.endswith(".json")), None)
    if written:
        print(f"Wrote {', '.join(_describe_file(path) for path in written if path.exists())}.")
    if results_file is not None:
        print_next(*results_hints(results_file, result))
    else:
        print("Results not kept: add `-o results.json` to write them (then `scidocs-eval table`, `compare`, "
              "`report` read them).")
    for name, why in result.failed.items():
        print(f"scidocs-eval: error: task {name} not scored: {why}", file=sys.stderr)
    return 2 if result.failed else 0


def _embeddings(values: list[str]) -> str | dict[str, str]:
    """One FILE for every task, or {group: FILE} from GROUP=FILE values (a group is a registered task's)."""
    groups = embedding_groups()
    files: dict[str, str] = {}
    single = []
    for value in values:
        group, sep, path = value.partition("=")
        if sep and group in groups:
            if group in files:
                raise ScidocsEvalError(f"embeddings for group {group!r} given twice ({files[group]}, {path})")
            files[group] = path
        else:
            single.append(value)
    if single and (files or len(single) > 1):
        raise ScidocsEvalError(f"give either --embeddings or the three-file form (--cls, --user-citation, --recomm; "
                               f"in general --embeddings GROUP=FILE per group: {', '.join(groups)}), not both; "
                               f"got {', '.join(values)}")
    if not single and not files:
        raise ScidocsEvalError("no embeddings: give --embeddings FILE, or --embeddings GROUP=FILE per group "
                               "(the official three-file form: --cls, --user-citation, --recomm)")
    return single[0] if single else files


def _data_folder(data: str | None) -> str | None:
    """The folder `--data` names, when it is one on disk (not "demo" nor the default download)."""
    return data if data and Path(data).exists() else None


def _run(args: argparse.Namespace) -> int:
    from scidocs_eval.data.resolve import resolve_suite
    from scidocs_eval.evaluation.runner import evaluate

    aliases = [f"{group}={path}" for group, path in (("cls", args.cls), ("user-citation", args.user_citation),
                                                     ("recomm", args.recomm)) if path]
    embeddings = _embeddings(list(args.embeddings or []) + aliases)
    output = Path(args.output) if args.output else None
    config = run_config(args, dtype=args.dtype, output=output, exclude=args.exclude)
    if output is not None:
        inputs = list(embeddings.values()) if isinstance(embeddings, dict) else [embeddings]
        claim_task_inputs(resolve_suite(config.data), config.built_tasks().values(), config.split, {"--out": output},
                          [*given_as("--embeddings", inputs), *given_as("--exclude", [args.exclude]),
                           *given_as("--ids", [args.ids]), *given_as("--data", [_data_folder(args.data)])])
        claim_output(output, "--out")
    result = evaluate(embeddings, config=config, model=args.name, read_options=embeddings_read_options(args))
    return _print_result(result, [output] if output else [], ci=args.ci)


def _table(args: argparse.Namespace) -> int:
    from scidocs_eval.evaluation.results import RunResult
    from scidocs_eval.leaderboard.runs import results_paths

    benchmark = BENCHMARKS[args.benchmark]
    paths = results_paths(args.results or [DEFAULT_RESULTS_DIR])
    if args.output:
        claim_inputs_are_not_outputs(given_as("RESULTS", paths), {"--out": args.output})
        claim_output(args.output, "--out")
    results = [RunResult.load(p) for p in paths]
    markdown = benchmark.table(results, sources=paths, include_paper=not args.no_paper, ci=args.ci)
    if args.output:
        write_bytes_atomically(args.output, markdown.encode("utf-8"), "--out",
                               rows=Rows("results rows", {result.model for result in results}))
        print(f"table written to {args.output}")
    else:
        print(markdown, end="")
    return 0


def _baseline(args: argparse.Namespace) -> int:
    from scidocs_eval.run.baseline import run_baseline

    params = adapter_params(args, ("seed", "tune", "vectors", "citations", *MODEL_OPTIONS))
    result = run_baseline(args.name, config=run_config(args), out_dir=args.out_dir, params=params,
                          train_corpus=args.train_corpus, resume=args.resume,
                          embeddings_format=args.embeddings_format)
    if result is None:  # the torchrun processes but rank 0
        return 0
    written = dict.fromkeys(Path(source["path"]) for source in result.fingerprints["embeddings"].values())
    return _print_result(result, [*written, Path(args.out_dir) / f"{args.name}.results.json"])


def _demo(args: argparse.Namespace) -> int:
    config = DEMO_SCALES[args.scale](args.seed)
    suite = build_demo_suite(args.dest, config, option="dest")
    print(f"synthetic demo suite ({args.scale}, seed {args.seed}) written to {suite.root}")
    print_next(hint("baseline", "random", "--data", args.dest, gives="a first score of it"))
    return 0


def _list_tasks(args: argparse.Namespace) -> int:
    rows = [("task", "benchmark", "embeddings", "metrics", "needs", "description")]
    for name in task_names(benchmark=BENCHMARKS.check([args.benchmark])[0]):
        task = TASKS[name]
        metrics = ",".join(task.metrics) if len(task.metrics) <= 4 else \
            f"{task.spec.main_score} (+{len(task.metrics) - 1})"
        extras = sorted({f"[{r.extra}] ({r.module})" for r in get_task(name).requirements()})
        rows.append((name, task.spec.benchmark, "+".join(reversed(task.groups())), metrics, " ".join(extras) or "-",
                     task.description))
    widths = [max(len(row[column]) for row in rows) for column in range(5)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[5])
    return 0


def _list_benchmarks(args: argparse.Namespace) -> int:
    for name, benchmark in BENCHMARKS.items():
        print(f"{name:<13} {benchmark.description}")
        print(f"{'':<13} tasks: {', '.join(task_names(benchmark=name)) or '(none registered)'}")
    return 0


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    run = subparsers.add_parser("run", help="score an embeddings file on the SciDocs tasks",
                                description="Score embeddings (JSON lines {paper_id, embedding}, or Parquet, Arrow, "
                                ".npz, .npy, safetensors, a saved HF dataset: docs/embeddings_formats.md) on SciDocs.")
    run.add_argument("--embeddings", action="append", metavar="[GROUP=]FILE",
                     help="one embeddings file for every task, or GROUP=FILE (repeatable) for the tasks reading "
                     f"that group ({', '.join(embedding_groups())}; `scidocs-eval tasks` lists each task's); JSON "
                     "lines (or .gz), Parquet, Arrow/Feather, .npz, .npy with --ids, safetensors, a saved HF "
                     "dataset folder, or - for standard input (docs/embeddings_formats.md)")
    run.add_argument("--cls", help="same as --embeddings cls=FILE: embeddings of paper_metadata_mag_mesh.json")
    run.add_argument("--user-citation", help="same as --embeddings user-citation=FILE (view_cite_read metadata)")
    run.add_argument("--recomm", help="same as --embeddings recomm=FILE (paper_metadata_recomm.json)")
    _add_evaluation_options(run)
    add_hidden_alias(run, add_output(run, "-o", "--out", dest="output", kind="file",
                                     help="write the results JSON here"), "--output")
    run.add_argument("--name", help="model name shown in results and tables (default: the file's stem)")
    add_embeddings_read_options(run)
    run.add_argument("--dtype", choices=("float32", "float64"), default="float32",
                     help="matrix precision (float64 keeps every digit of the file)")
    run.add_argument("--no-cache", action="store_true", help="do not read or write the parsed-embeddings cache")
    run.add_argument("--ci", action="store_true", help="print each metric's 95%% bootstrap interval (the results "
                     "file always holds them)")
    run.add_argument("--exclude", metavar="AUDIT.json", help="score without the items this audit (scidocs-eval "
                     "audit --out) found leaked; the results and Table 1's row say so")
    run.set_defaults(func=_run)

    table = subparsers.add_parser("table", help="render Table 1 as markdown from results files",
                                  description="Table 1 of the paper as markdown: a row per results file, then the "
                                  "paper's published rows; Avg only for rows with all 12 columns. With --benchmark "
                                  "NAME: that benchmark's table (SciRepEval's columns, the sci averages, ...) instead.")
    table.add_argument("results", nargs="*", help="results files, globs or folders (a folder's results files are "
                       f"told by content, whatever their names; default: {DEFAULT_RESULTS_DIR}/)")
    add_hidden_alias(table, table.add_argument("--no-paper-rows", dest="no_paper", action="store_true",
                                               help="leave out the paper's published rows"), "--no-paper")
    table.add_argument("--ci", action="store_true", help="show each value's 95%% bootstrap interval")
    table.add_argument("--benchmark", default=DEFAULT_BENCHMARK, help="whose table (each benchmark has its own): "
                       "scidocs (Table 1 of the SPECTER paper, default), scirepeval (SciRepEval's In-Train, "
                       "Out-of-Train, SciDocs and Average columns beside the rows its BENCHMARKING.md publishes; "
                       "docs/scirepeval.md), sci (each owner's averages side by side), any other: a column per "
                       f"task's main score ({', '.join(BENCHMARKS.names())})")
    add_hidden_alias(table, add_output(table, "-o", "--out", dest="output", kind="file",
                                       help="write the markdown here instead of printing it"), "--output")
    table.set_defaults(func=_table)

    baseline = subparsers.add_parser("baseline", help="embed a suite with a model adapter and score it",
                                     description="Fit a model adapter (where it learns), embed the papers the tasks "
                                     "read, write OUT_DIR/NAME.jsonl and OUT_DIR/NAME.results.json, print the scores.")
    baseline.add_argument("name", choices=adapter_names(), metavar="NAME",
                          help=f"one of: {', '.join(adapter_names())}")
    _add_evaluation_options(baseline)
    add_output(baseline, "--out-dir", kind="folder", default=DEFAULT_RESULTS_DIR,
                          help="where NAME.jsonl and NAME.results.json go (default: %(default)s)")
    baseline.add_argument("--train-corpus", help="fit on this corpus (JSON lines {paper_id,title,abstract}) "
                          "instead of the suite's papers")
    baseline.add_argument("--seed", type=seed_type(), help="the adapter's seed (default: the adapter's own)")
    baseline.add_argument("--tune", action="store_true", help="tune the adapter's settings on the val split")
    baseline.add_argument("--vectors", help="word vectors for fasttext-sum/sif (.vec/.bin file, or 'glove')")
    baseline.add_argument("--citations", help="citation edges (TSV citing<TAB>cited) for sgc")
    add_model_options(baseline)
    baseline.add_argument("--resume", action="store_true", help="continue an interrupted run from the "
                          "embedding cache (which a long encode fills every few batches; every run reads it)")
    baseline.add_argument("--no-cache", action="store_true", help="do not read or add to the embedding cache "
                          "across runs (`scidocs-eval cache info`)")
    baseline.add_argument("--embeddings-format", choices=EMBEDDINGS_FORMATS, default="jsonl",
                          help="write the embeddings as NAME.jsonl (the official format) or NAME.parquet "
                          "(default: %(default)s)")
    baseline.set_defaults(func=_baseline)

    demo = subparsers.add_parser("demo", help="write a SYNTHETIC demo suite in the official layout",
                                 description="A synthetic suite with every file of the official layout (topic-"
                                 "structured text, qrels, clicks with known propensities); results on it are "
                                 "labelled synthetic.")
    add_output(demo, "dest", kind="folder", help="the folder to write (new, empty, or an earlier demo suite)")
    demo.add_argument("--scale", choices=tuple(DEMO_SCALES), default="small",
                      help="small (seconds, the default) or scidocs (the official suite's sizes)")
    demo.add_argument("--seed", type=seed_type(), default=0, help="seeds the synthetic suite (default: %(default)s)")
    demo.set_defaults(func=_demo)

    tasks = subparsers.add_parser("tasks", help="list the registered tasks",
                                  description="The tasks of a benchmark: its embeddings groups, metrics, the extra it "
                                  "needs beyond the light core, and what it scores.")
    tasks.add_argument("--benchmark", default=DEFAULT_BENCHMARK, help="list this benchmark's tasks (default: "
                       "%(default)s; `scidocs-eval benchmarks` lists every benchmark)")
    tasks.set_defaults(func=_list_tasks)

    benchmarks = subparsers.add_parser("benchmarks", help="list the named benchmarks and their tasks "
                                       "(run/baseline --benchmark NAME)",
                                       description="Every registered benchmark (a named set of tasks: the 2020 "
                                       "suite, MTEB's SciDocs tasks, SciRepEval, ...) with its tasks; `run`, "
                                       "`baseline` and `audit` take one with --benchmark.")
    benchmarks.set_defaults(func=_list_benchmarks)


COMMANDS.register(CommandGroup("core", add_commands))
