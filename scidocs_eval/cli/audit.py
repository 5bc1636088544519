"""audit: did the model see the test? Match a suite's evaluation papers against a model's training data."""

from __future__ import annotations

import argparse

from scidocs_eval.cli.options import COMMANDS, CommandGroup, add_output, count_type, seed_type, task_list
from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.contamination import (
    AUDIT_PARAMETERS,
    DEFAULT_NUM_PERM,
    DEFAULT_SEED,
    DEFAULT_THRESHOLD,
    EXAMPLES,
    STRENGTHS,
    audit_suite,
    clean_scores,
    format_clean_scores,
)
from scidocs_eval.params import argument_type
from scidocs_eval.statistics.significance import RESAMPLES


def _strengths(text: str) -> list[str]:
    values = [part.strip() for part in text.split(",") if part.strip()]
    if not values or any(v not in STRENGTHS for v in values):
        raise ScidocsEvalError(f"--leaked-if: give some of {','.join(STRENGTHS)} (comma-separated), got {text!r}")
    return values


def _audit(args: argparse.Namespace) -> int:
    from scidocs_eval.data.resolve import resolve_suite
    from scidocs_eval.evaluation.results import RunResult
    from scidocs_eval.evaluation.task import build_tasks, claim_task_inputs, selected_tasks
    from scidocs_eval.formats.safe_output import claim_output, given_as
    from scidocs_eval.formats.training_data import read_training_data

    tasks = task_list(args.tasks)  # before any reading
    suite = resolve_suite(args.data)
    if args.out:
        claim_task_inputs(suite, build_tasks(selected_tasks(tasks, args.benchmark)).values(), args.split,
                          {"--out": args.out},
                          [*given_as("--train", args.train), *given_as("--results", [args.results]),
                           *given_as("--data", [args.data])])
        claim_output(args.out, "--out")
    result = RunResult.load(args.results) if args.results else None
    training = read_training_data(args.train)
    report = audit_suite(training, suite, tasks=tasks, benchmark=args.benchmark, split=args.split,
                         strengths=args.leaked_if, threshold=args.threshold, num_perm=args.num_perm, seed=args.seed,
                         examples=args.examples)
    print(report.format())
    if result is not None:
        scores = clean_scores(report, result, resamples=args.resamples)
        report.data["scores"] = {"results": str(args.results), "model": result.model, "resamples": args.resamples,
                                 "tasks": scores}
        print()
        print(f"scores of {result.model} ({args.results}) over all, clean and leaked items (95% bootstrap "
              "intervals; clean-all: paired bootstrap)")
        print(format_clean_scores(scores))
    if args.out:
        print(f"audit written to {report.save(args.out)}")
    return 0


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "audit", help="contamination audit: which test papers and pairs were in a model's training data",
        description="Match every evaluation paper of a suite's split (queries, candidates, classification test "
                    "papers, recommendation impressions) against a model's training data at three strengths: the "
                    "same id, the same normalised title, near-duplicate text (MinHash LSH). Reports per task what "
                    "was seen and in which role, and the direct leaks (a test pair that was a training pair). With "
                    "--results, scores each metric over all, clean and leaked items. See docs/audit.md.")
    parser.add_argument("--train", action="append", required=True, metavar="TRAINING",
                        help="training data (repeatable): a SPECTER folder (data.json + train.txt/val.txt and/or "
                        "metadata.json), data.json, metadata.json, triplets (JSON or JSON lines of query/pos/neg), "
                        "papers JSON lines {paper_id, title, abstract}, or a text file of paper ids")
    parser.add_argument("--data", help="suite directory, or 'demo' (default: $SCIDOCS_EVAL_DATA or the data dir)")
    parser.add_argument("--benchmark", help="audit the tasks of this named benchmark (default: every task whose "
                        "files the suite has)")
    parser.add_argument("--tasks", help="comma-separated tasks to audit (overrides --benchmark)")
    parser.add_argument("--split", choices=("test", "val"), default="test", help="default: %(default)s")
    parser.add_argument("--leaked-if", type=_strengths, default=list(STRENGTHS), metavar="STRENGTHS",
                        help="match strengths that make an item leaked, comma-separated (default: id,title,text; "
                        "all three are reported either way)")
    parser.add_argument("--threshold", type=argument_type(AUDIT_PARAMETERS["threshold"], "--threshold", float),
                        default=DEFAULT_THRESHOLD, help="Jaccard similarity of word 3-gram sets from which two texts "
                        "are near-duplicates (default: %(default)s)")
    parser.add_argument("--num-perm", type=argument_type(AUDIT_PARAMETERS["num_perm"], "--num-perm"),
                        default=DEFAULT_NUM_PERM, help="MinHash permutations (default: %(default)s)")
    parser.add_argument("--seed", type=seed_type(), default=DEFAULT_SEED,
                        help="MinHash seed (default: %(default)s)")
    parser.add_argument("--examples", type=argument_type(AUDIT_PARAMETERS["examples"], "--examples"),
                        default=EXAMPLES, help="examples per task and near-duplicate pairs shown (default: "
                        "%(default)s)")
    parser.add_argument("--results", help="a results file (run -o) to score over all, clean and leaked items")
    parser.add_argument("--resamples", type=count_type("--resamples"),
                        default=RESAMPLES, help="bootstrap resamples for --results (default: %(default)s)")
    add_output(parser, "-o", "--out", kind="file", metavar="AUDIT.json",
               help="write the audit (every leaked item and matched paper, with how it matched) here")
    parser.set_defaults(func=_audit)


COMMANDS.register(CommandGroup("audit", add_commands))
