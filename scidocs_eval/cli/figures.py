"""plot (figure2, results, training) and report: pictures of results and a static HTML leaderboard.

`plot --embeddings ...` is `plot figure2 --embeddings ...` (the paper's Figure 2), so the short form works too.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import orjson

from scidocs_eval.cli.options import (
    COMMANDS,
    CommandGroup,
    add_embeddings_read_options,
    add_hidden_alias,
    add_output,
    count_type,
    embeddings_read_options,
    seed_type,
)
from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.formats.safe_output import claim_inputs_are_not_outputs, claim_output, write_bytes_atomically
from scidocs_eval.params import POSITIVE, Interval, argument_type

FIGURE2_REQUIRED = ("embeddings", "task", "out")


def _claim(inputs: list[str], outputs: dict[str, str | None]) -> None:
    """Refuse an output that is an input or a file of the user's, before any drawing."""
    claim_inputs_are_not_outputs(inputs, outputs)
    if outputs.get("--out") and outputs.get("--out") == outputs.get("--json"):
        raise ScidocsEvalError(f"--out and --json both name {outputs['--out']}; give two paths")
    for option, path in outputs.items():
        if path:
            claim_output(path, option)


def _figure2(args: argparse.Namespace) -> int:
    from scidocs_eval.data.resolve import resolve_suite
    from scidocs_eval.leaderboard.figures import ProjectionClusters, draw_figure2, figure2, save_figure

    absent = [f"--{name}" for name in FIGURE2_REQUIRED if not getattr(args, name)]
    if absent:
        raise ScidocsEvalError(f"plot figure2 needs {', '.join(absent)} (or use `plot results` / `plot training`)")
    _claim(args.embeddings, {"--out": args.out, "--json": args.json})
    clusters = ProjectionClusters(perplexity=args.perplexity, metric=args.metric, eps_scale=args.eps_scale,
                                  min_samples=args.min_samples, seed=args.seed)
    result = figure2(args.embeddings, resolve_suite(args.data), args.task, names=args.name, split=args.split,
                     sample=args.sample, seed=args.seed, clusters=clusters, progress=not args.quiet,
                     read_options=embeddings_read_options(args))
    out = save_figure(draw_figure2(result), args.out)
    print("\n".join(result.lines()))
    print(f"figure written to {out}")
    if args.json:
        write_bytes_atomically(args.json, orjson.dumps(result.summary(), option=orjson.OPT_INDENT_2), "--json",
                               rows=None)
        print(f"numbers written to {args.json}")
    return 0


def _results_chart(args: argparse.Namespace) -> int:
    from scidocs_eval.leaderboard.figures import draw_results, save_figure
    from scidocs_eval.leaderboard.runs import load_runs, results_paths

    paths = results_paths(args.results)
    _claim([str(path) for path in paths], {"--out": args.out})
    out = save_figure(draw_results(load_runs(paths)), args.out)
    print(f"chart of {len(paths)} results file(s) written to {out}")
    return 0


def _training(args: argparse.Namespace) -> int:
    from scidocs_eval.leaderboard.figures import draw_training, save_figure
    from scidocs_eval.training.specter import HISTORY_FILE

    _claim([str(Path(args.run_dir) / HISTORY_FILE)], {"--out": args.out})
    out = save_figure(draw_training(args.run_dir), args.out)
    print(f"training curves written to {out}")
    return 0


def _report(args: argparse.Namespace) -> int:
    from scidocs_eval.leaderboard.report import write_report
    from scidocs_eval.leaderboard.runs import load_runs, results_paths

    page = write_report(load_runs(results_paths(args.results)), args.out, include_paper=args.paper_rows,
                        figures=args.figures, title=args.title)
    print(f"leaderboard written to {page} (open it in a browser: file://{page.resolve()})")
    return 0


def _add_figure2_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--embeddings", action="append", metavar="FILE",
                        help="an embeddings file (any kind `run` reads); repeat for one panel each, side by side")
    add_embeddings_read_options(parser)
    parser.add_argument("--name", action="append", help="panel title per --embeddings (default: the file's stem)")
    parser.add_argument("--data", help="suite directory, or 'demo' (default: $SCIDOCS_EVAL_DATA or the data dir)")
    parser.add_argument("--task", help="classification task whose papers and classes are shown: mag, mesh, ...")
    parser.add_argument("--split", choices=("train", "val", "test"), default="test",
                        help="the split whose papers are shown (default: %(default)s)")
    parser.add_argument("--sample", type=argument_type([Interval(int, 2, None)], "--sample"),
                        default=3000, help="papers drawn at random (default: %(default)s)")
    parser.add_argument("--seed", type=seed_type(), default=0, help="seeds the sample and t-SNE (default: %(default)s)")
    parser.add_argument("--perplexity", type=argument_type([POSITIVE], "--perplexity", float),
                        default=30.0, help="t-SNE perplexity (default: %(default)s)")
    parser.add_argument("--metric", choices=("euclidean", "cosine"), default="euclidean",
                        help="t-SNE's distance between embeddings (default: %(default)s)")
    parser.add_argument("--eps-scale", type=argument_type([POSITIVE], "--eps-scale", float), default=1.0,
                        help="DBSCAN eps as a multiple of the median distance to the MIN_SAMPLES-th nearest "
                             "neighbour in the projection (default: %(default)s; see docs/figures.md)")
    parser.add_argument("--min-samples", type=count_type("--min-samples"),
                        default=10, help="DBSCAN min_samples (default: %(default)s)")
    add_output(parser, "--out", "-o", kind="file", help="image to write: .png, .svg or .pdf")
    add_output(parser, "--json", kind="file", help="also write the numbers (homogeneity, completeness, settings) here")


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    plot = subparsers.add_parser(
        "plot", help="draw Figure 2 of the paper, result charts or training curves",
        description="plot figure2 (also plain `plot --embeddings ...`): t-SNE of a classification task's papers, "
                    "one panel per embeddings file, DBSCAN homogeneity/completeness. plot results: grouped bars "
                    "per task. plot training: loss curves of a `train specter` run.")
    _add_figure2_options(plot)
    plot.set_defaults(func=_figure2)
    kinds = plot.add_subparsers(dest="plot_kind", metavar="{figure2,results,training}")

    figure = kinds.add_parser("figure2", help="the paper's Figure 2 (t-SNE + DBSCAN scores)",
                              description="The paper's Figure 2 for each embeddings file over the same sample.")
    _add_figure2_options(figure)
    figure.set_defaults(func=_figure2)

    results = kinds.add_parser("results", help="grouped bars per task for several results files",
                               description="A bar per results file for each Table 1 column, with 95% intervals "
                               "where the files hold them.")
    results.add_argument("results", nargs="+", help="results files or folders of them (any name: told by content)")
    training = kinds.add_parser("training", help="training and validation loss of a `train specter` run",
                                description="Training and validation loss per epoch of a `train specter` run.")
    training.add_argument("run_dir", help="the --out-dir folder of `scidocs-eval train specter`")
    for parser, func in ((results, _results_chart), (training, _training)):
        add_output(parser, "--out", "-o", kind="file", required=True, help="image to write: .png, .svg or .pdf")
        parser.set_defaults(func=func)

    report = subparsers.add_parser(
        "report", help="write a static HTML leaderboard (SITE/index.html) from results files",
        description="Table 1 with our rows and the paper's (sortable, best marked, provenance per row), the result "
                    "chart and Figure 2 images, in a folder that works offline from file://.")
    report.add_argument("results", nargs="+", help="results files or folders of them (any name: told by content)")
    add_hidden_alias(report, add_output(report, "--out-dir", dest="out", kind="folder", required=True,
                                        help="site folder (new, empty, or a previous report's)"), "--out", "-o")
    report.add_argument("--paper-rows", action=argparse.BooleanOptionalAction, default=True,
                        help="include the paper's published rows (default: yes)")
    report.add_argument("--figures", nargs="+", default=[], metavar="IMAGE", help="images (.png, .svg) to show")
    report.add_argument("--title", default="SciDocs leaderboard", help="the page's title")
    report.set_defaults(func=_report)


COMMANDS.register(CommandGroup("figures", add_commands))
