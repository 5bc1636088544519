"""Score every offline baseline on SciDocs-style suites built from Cora and CiteSeer; write the markdown table.

    python bench/real_corpora.py                       # every registered adapter, both corpora
    python bench/real_corpora.py --models random,sif   # a subset
    python bench/real_corpora.py --keep sent-bert      # every other adapter; sent-bert's rows from the last table

Builds each suite with `scidocs_eval.data.build.build_suite` (seed 0) under --work-dir, runs each adapter
with `run_baseline` on the mag (the corpus labels), cite and cocite tasks (test split), and writes
docs/real_corpora.md. An adapter that cannot run here (a missing package, weights that are not on disk) is
skipped with the reason printed and listed under the table (the Hugging Face hub is set offline, so a model
that is not on disk fails at once). Adapters that take `citations` (graph models) get the leakage-free training
graph (the count-5 links of the built suite's specter/data.json); those that take `training_data` (citation-
trained models) get the built suite's specter/ folder.
"""

from __future__ import annotations

import argparse
import inspect
import os
import platform
import tempfile
import time
from datetime import date
from pathlib import Path

import orjson

from scidocs_eval.data.build import build_suite
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.leaderboard import table1_row
from scidocs_eval.models.adapter import ADAPTERS, adapter_names
from scidocs_eval.run.baseline import run_baseline

REPO = Path(__file__).resolve().parents[1]
TASKS = ["mag", "cite", "cocite"]
COLUMNS = (("mag", "f1", "MAG-style F1"), ("cite", "map", "cite MAP"), ("cite", "ndcg", "cite nDCG"),
           ("cocite", "map", "co-cite MAP"), ("cocite", "ndcg", "co-cite nDCG"))


def training_citations(suite_root: Path) -> Path:
    """The direct citations of the SPECTER training graph (no evaluation query in it) as citing<TAB>cited."""
    data = orjson.loads((suite_root / "specter" / "data.json").read_bytes())
    path = suite_root.parent / "training_citations.tsv"
    path.write_text("".join(f"{q}\t{c}\n" for q, candidates in data.items() for c, v in candidates.items()
                            if v["count"] == 5), encoding="utf-8")
    return path


def run_model(name: str, suite_root: Path, results_dir: Path, seed: int) -> RunResult:
    accepted = inspect.signature(ADAPTERS[name].__init__).parameters
    params: dict[str, object] = {}
    if "citations" in accepted:
        params["citations"] = str(training_citations(suite_root))
    if "training_data" in accepted:
        params["training_data"] = str(suite_root / "specter")
    if "seed" in accepted:
        params["seed"] = seed
    return run_baseline(name, RunConfig(data=suite_root, tasks=TASKS, progress=False), out_dir=results_dir,
                        params=params)


def kept_rows(path: Path, models: list[str]) -> list[str]:
    """The table lines of `models` in a table this script wrote before (`path`), marked as kept."""
    if not models:
        return []
    if not path.is_file():
        raise SystemExit(f"{path}: no earlier table to keep rows of {', '.join(models)} from")
    lines = [line for line in path.read_text(encoding="utf-8").splitlines()
             if line.startswith("| ") and line.split(" | ")[1].split(" ")[0] in models]
    missing = sorted(set(models) - {line.split(" | ")[1].split(" ")[0] for line in lines})
    if missing:
        raise SystemExit(f"{path}: no rows of {', '.join(missing)} to keep")
    return [line.replace(f"| {line.split(' | ')[1]} |", f"| {line.split(' | ')[1]} (kept from the previous run) |", 1)
            if "(kept from" not in line else line for line in lines]


def render(rows: list[tuple[str, str, RunResult, float]], skipped: dict[str, dict[str, list[str]]],
           builds: dict[str, dict], kept: list[str]) -> str:
    lines = ["# Results on real corpora", "",
             f"SciDocs-style suites built with `scidocs-eval data build` (seed 0) from the corpora in "
             f"`../shared/data`; test split; measured {date.today().isoformat()} on {platform.machine()} "
             f"with {os.cpu_count()} CPU cores (shared), Python {platform.python_version()}. "
             "Co-view, co-read and recomm need user logs and are not part of these suites.", ""]
    for corpus, report in builds.items():
        ranking = report["ranking"]
        labelled = sum(c["papers"] for c in report["classification"].values())
        lines.append(f"- {corpus}: {report['corpus']['papers']} papers, {report['corpus']['links_kept']} links; "
                     f"{len(report['label_mapping'])} classes ({labelled} papers); "
                     f"cite {ranking['cite']['test']['queries']} test queries, co-cite "
                     f"{ranking['cocite']['test']['queries']} test queries.")
    lines += ["", "| corpus | model | " + " | ".join(title for _, _, title in COLUMNS) + " | seconds |",
              "|---|---|" + "---:|" * (len(COLUMNS) + 1)]
    for corpus in builds:
        for _, model, result, seconds in (row for row in rows if row[0] == corpus):
            values = [result.tasks[task].metrics.get(metric) if task in result.tasks else None
                      for task, metric, _ in COLUMNS]
            cells = " | ".join("–" if v is None else f"{v:.2f}" for v in values)
            detail = result.model_info.row_detail if result.model_info else None
            label = f"{model} [{detail}]" if detail else model
            lines.append(f"| {corpus} | {label} | {cells} | {seconds:.0f} |")
        lines += [line for line in kept if line.startswith(f"| {corpus} |")]
    lines += ["", "Seconds: fit, embed and score in this process, on a shared machine (load average "
              f"{os.getloadavg()[1]:.1f} over the last 5 minutes of the run). A model found in the model cache "
              "is not retrained: fasttext-sum, sif and sgc share one fastText model, trained by whichever of "
              "them runs first."]
    if skipped:
        lines += ["", "Not run here:", ""] + [f"- {model} ({', '.join(corpora)}): {why}"
                                              for model, reasons in sorted(skipped.items())
                                              for why, corpora in reasons.items()]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", help=f"comma-separated adapters (default: all of {','.join(adapter_names())})")
    parser.add_argument("--corpora", default="cora,citeseer")
    parser.add_argument("--shared-data", default=str(REPO.parent / "shared" / "data"))
    parser.add_argument("--work-dir", help="where suites and embeddings go (default: a temporary directory)")
    parser.add_argument("--output", default=str(REPO / "docs" / "real_corpora.md"))
    parser.add_argument("--seed", type=int, default=0, help="the adapters' seed (the suites always use 0)")
    parser.add_argument("--keep", default="", help="comma-separated adapters not rerun: their rows are copied from "
                        "the existing --output table (only sound when their code has not changed)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    keep = [name for name in args.keep.split(",") if name]
    kept = kept_rows(Path(args.output), keep)
    models = [name for name in (args.models.split(",") if args.models else adapter_names()) if name not in keep]
    unknown = sorted(set(models) - set(adapter_names()))
    if unknown:
        parser.error(f"unknown models {unknown}; known: {', '.join(adapter_names())}")
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="scidocs-real-corpora-"))
    rows, skipped, builds = [], {}, {}
    for corpus in args.corpora.split(","):
        source = Path(args.shared_data) / corpus
        suite_root = work / corpus / "suite"
        report = build_suite(source / "papers.jsonl", source / "edges.tsv", suite_root, seed=0)
        builds[corpus] = orjson.loads((suite_root / "build_report.json").read_bytes())
        print(report.format(), flush=True)
        for model in models:
            started = time.perf_counter()
            try:
                result = run_model(model, suite_root, work / corpus / "results", args.seed)
            except Exception as error:  # noqa: BLE001 - any adapter failure (missing package/weights) skips it
                why = f"{type(error).__name__}: {error}".splitlines()[0][:300]
                skipped.setdefault(model, {}).setdefault(why, []).append(corpus)
                print(f"{corpus} {model}: skipped ({why})", flush=True)
                continue
            seconds = time.perf_counter() - started
            rows.append((corpus, model, result, seconds))
            print(f"{corpus} {model}: {table1_row(result)} ({seconds:.0f} s)", flush=True)
    Path(args.output).write_text(render(rows, skipped, builds, kept), encoding="utf-8")
    print(f"table written to {args.output} (suites and embeddings in {work})")


if __name__ == "__main__":
    main()
