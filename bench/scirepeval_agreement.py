"""Run SciRepEval's own evaluator classes beside our SciRepEval tasks on the same data and vectors.

Takes a checkout of allenai/scirepeval (a work tree, or a bare git directory such as the one `fetch` makes: its
HEAD is exported to a temporary folder at run time; none of its code is kept), a local copy of SciRepEval's data
(default: a synthetic copy generated with `--seed`) and an embeddings file (default: the synthetic copy's vectors).
SciRepEval's classes run offline with `model=None`: their `datasets.load_dataset` calls are answered from the
local copy, and GridSearchCV runs in one process (joblib's sequential backend).

Which environment SciRepEval runs in is decided by its import of sklearn-contrib-lightning (and, with it, by the
scikit-learn version: `scirepeval_environment`): put a lightning build on PYTHONPATH for the README's environment,
leave it out for the sklearn one. Our tasks solve the same environment's problem (`environment` task parameter)
exactly; the table shows both numbers, their gap, how many of SciRepEval's fits stopped before convergence (its
ConvergenceWarnings; lightning prints none), and the time each side took, with their ratio.

    python bench/scirepeval_agreement.py --checkout /work/.mirror/allenai+scirepeval/repo
    PYTHONPATH=/tmp/lightning-target python bench/scirepeval_agreement.py --checkout ... --json out.json
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from scidocs_eval.data.scirepeval import write_embeddings_jsonl
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.formats.scirepeval import META_DATASET, TEST_DATASET, meta_file, test_file
from scidocs_eval.tasks.scirepeval import TASK_TABLE, write_synthetic_scirepeval


@contextlib.contextmanager
def checkout_tree(checkout: Path) -> Iterator[Path]:
    """A folder with SciRepEval's files: `checkout` itself when it is a work tree, else its HEAD exported."""
    if (checkout / "evaluation" / "evaluator.py").is_file():
        yield checkout
        return
    with tempfile.TemporaryDirectory(prefix="scirepeval-checkout-") as folder:
        archive = subprocess.run(["git", f"--git-dir={checkout}", "archive", "HEAD"], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
        yield Path(folder)


def local_loader(data: Path, original: Any) -> Any:
    """`datasets.load_dataset` answering SciRepEval's hub ids from the local copy (JSON lines a split)."""
    import datasets

    def load(path: str, name: str | None = None, split: str | None = None, **kwargs: Any) -> Any:
        if path == META_DATASET:
            files = {"evaluation": str(data / meta_file(name))}
        elif path == TEST_DATASET:
            folder = (data / test_file(name, "x")).parent
            files = {p.stem: str(p) for p in sorted(folder.glob("*.jsonl"))}
        else:
            return original(path, name, split=split, **kwargs)
        loaded = datasets.load_dataset("json", data_files=files)
        return loaded[split] if split else loaded

    return load


def scirepeval_results(tree: Path, data: Path, embeddings: Path, iterations: int | None,
                       titles: list[str]) -> dict[str, dict[str, Any]]:
    """SciRepEval's numbers: {task title (few-shot: "TITLE k shot"): {metric: value, "stalled": n}}."""
    sys.path.insert(0, str(tree))
    import datasets
    import evaluation.evaluator as evaluator
    import reviewer_matching
    from evaluation.few_shot_evaluator import FewShotEvaluator
    from joblib import parallel_config
    from sklearn.exceptions import ConvergenceWarning

    datasets.load_dataset = local_loader(data, datasets.load_dataset)
    results: dict[str, dict[str, Any]] = {"_environment": {"environment": scirepeval_environment(
        evaluator.LIGHTNING_AVAILABLE)}}
    for title, kind, meta_config, test_config, metrics, few_shot in TASK_TABLE:
        if title not in titles:
            continue
        common = {"meta_dataset": (META_DATASET, meta_config), "test_dataset": (TEST_DATASET, test_config),
                  "model": None}
        runs: list[tuple[str, Any]] = []
        if kind in ("classification", "multi_label", "regression"):
            subtype = {"classification": evaluator.SupervisedTask.CLASSIFICATION,
                       "multi_label": evaluator.SupervisedTask.MULTILABEL_CLASSIFICATION,
                       "regression": evaluator.SupervisedTask.REGRESSION}[kind]
            runs.append((title, evaluator.SupervisedEvaluator(title, subtype, metrics=metrics, **common)))
            for sample_size, default_iterations in few_shot:
                runs.append((f"{title} {sample_size} shot", FewShotEvaluator(
                    title, subtype, sample_size=sample_size, num_iterations=iterations or default_iterations,
                    metrics=metrics, **common)))
        elif kind == "reviewer_matching":
            runs.append((title, reviewer_matching.ReviewerMatchingEvaluator(
                title, reviewer_metadata=(TEST_DATASET, "reviewers"), **common)))
        else:
            runs.append((title, evaluator.IREvaluator(title, metrics=metrics, **common)))
        for name, task in runs:
            with warnings.catch_warnings(record=True) as caught, parallel_config(backend="sequential"):
                warnings.simplefilter("always", ConvergenceWarning)
                started, cpu = time.perf_counter(), time.process_time()
                try:
                    values = task.evaluate(str(embeddings))
                except Exception as error:  # noqa: BLE001  (SciRepEval's own driver reports and goes on too)
                    values = {"error": f"{type(error).__name__}: {str(error).strip().splitlines()[-1]}"}
            results[name] = {k: v if k == "error" else float(v) for k, v in values.items()}
            results[name]["stalled"] = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
            results[name]["seconds"] = round(time.perf_counter() - started, 2)
            results[name]["cpu_seconds"] = round(time.process_time() - cpu, 2)
    return results


def scirepeval_environment(lightning: bool) -> str:
    """Our name of the environment SciRepEval's evaluator runs in here (scidocs_eval.evaluators.scirepeval)."""
    import sklearn

    if not lightning:
        return "sklearn"
    major, minor = (int(part) for part in sklearn.__version__.split(".")[:2])
    return "lightning" if (major, minor) >= (1, 6) else "lightning-pinned"


def our_results(data: Path, embeddings: Path, environment: str, iterations: int | None,
                titles: list[str]) -> dict[str, dict[str, Any]]:
    """Our numbers, keyed like `scirepeval_results`."""
    from scidocs_eval.tasks.scirepeval import task_name

    names: dict[str, str] = {}
    params: dict[str, dict[str, Any]] = {}
    for title, kind, _, _, _, few_shot in TASK_TABLE:
        if title not in titles:
            continue
        names[task_name(title)] = title
        if kind in ("classification", "multi_label", "regression"):
            params[task_name(title)] = {"environment": environment}
        for sample_size, _ in few_shot:
            shot = f"{task_name(title)}-{sample_size}-shot"
            names[shot] = f"{title} {sample_size} shot"
            params[shot] = {"environment": environment, **({"iterations": iterations} if iterations else {})}
    cpu = time.process_time()
    run = evaluate(embeddings, RunConfig(data=data, tasks=list(names), task_params=params, cache=False, progress=False))
    cpu = time.process_time() - cpu
    return {"_cpu": {"cpu_seconds": cpu}} | {names[name]: {**result.metrics, "seconds": round(result.seconds, 2),
                          "not_converged": result.details.get("fits_not_converged", 0)}
            for name, result in run.tasks.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, required=True, help="allenai/scirepeval: work tree or git dir")
    parser.add_argument("--data", type=Path, help="local SciRepEval copy (default: a synthetic one)")
    parser.add_argument("--embeddings", type=Path, help="embeddings JSON lines (default: the synthetic vectors)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic copy")
    parser.add_argument("--iterations", type=int, help="few-shot iterations on both sides (default: SciRepEval's)")
    parser.add_argument("--tasks", nargs="+", default=[row[0] for row in TASK_TABLE], help="SciRepEval task names")
    parser.add_argument("--json", type=Path, help="also write the comparison here")
    parser.add_argument("--scirepeval-only", action="store_true", help="run SciRepEval's evaluator alone and write "
                        "its numbers and times to --json (bench/side_by_side.py times our side as a whole `run`)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="scirepeval-agreement-") as scratch, checkout_tree(args.checkout) as tree:
        data, embeddings = args.data, args.embeddings
        if data is None:
            data = Path(scratch) / "data"
            vectors = write_synthetic_scirepeval(data, seed=args.seed)
            embeddings = embeddings or write_embeddings_jsonl(Path(scratch) / "embeddings.jsonl", vectors)
        cpu = time.process_time()
        theirs = scirepeval_results(tree, data, embeddings, args.iterations, args.tasks)
        environment = theirs.pop("_environment")["environment"]
        if args.scirepeval_only:
            if args.json:
                args.json.write_text(json.dumps({"environment": environment, "results": theirs,
                                                 "cpu_seconds": time.process_time() - cpu}, indent=1))
            return
        ours = our_results(data, embeddings, environment, args.iterations, args.tasks)
    our_cpu = ours.pop("_cpu")["cpu_seconds"]
    rows, worst = [], 0.0
    print(f"SciRepEval's evaluator in its {environment} environment beside scidocs-eval (environment={environment}, "
          f"solved to convergence); {platform.node()}, {datetime.date.today()}")
    print("| task | metric | SciRepEval | scidocs-eval | gap | SciRepEval fits stopped early |")
    print("|---|---|---|---|---|---|")
    for name, values in theirs.items():
        for metric, value in values.items():
            if metric in ("stalled", "seconds", "cpu_seconds"):
                continue
            if metric == "error":
                rows.append({"task": name, "metric": metric, "scirepeval": value, "ours": ours.get(name)})
                print(f"| {name} | SciRepEval failed: {value} | | {ours.get(name)} | | |")
                continue
            mine = ours.get(name, {}).get(metric)
            gap = None if mine is None else round(mine - value, 4)
            if gap is not None:
                worst = max(worst, abs(gap))
            rows.append({"task": name, "metric": metric, "scirepeval": value, "ours": mine, "gap": gap,
                         "scirepeval_stalled": values["stalled"], "ours_not_converged": ours.get(name, {}).get(
                             "not_converged"), "seconds": [values["seconds"], ours.get(name, {}).get("seconds")]})
            print(f"| {name} | {metric} | {value:.4g} | {mine} | {gap} | {values['stalled']} |")
    print(f"largest gap: {worst:.4f}")
    their_seconds = sum(values["seconds"] for values in theirs.values())
    our_seconds = sum(values["seconds"] for values in ours.values())
    their_cpu = sum(values["cpu_seconds"] for values in theirs.values())
    print(f"time, every task run ({len(theirs)}): SciRepEval's evaluator {their_seconds:.1f} s, scidocs-eval "
          f"{our_seconds:.1f} s (fit and score; reading the embeddings apart); ratio {their_seconds / our_seconds:.1f}")
    print(f"CPU time (user + sys of this process): SciRepEval's evaluator {their_cpu:.1f} s (each task reading its "
          f"data and embeddings, as it does), scidocs-eval {our_cpu:.1f} s (the whole `evaluate` call: embeddings "
          f"read once, bootstrap intervals included); ratio {their_cpu / our_cpu:.1f}; load average "
          f"{' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    if args.json:
        args.json.write_text(json.dumps({"environment": environment, "rows": rows, "largest_gap": worst,
                                         "seconds": {"scirepeval": their_seconds, "ours": our_seconds},
                                         "cpu_seconds": {"scirepeval": their_cpu, "ours": our_cpu}}, indent=1))


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    np.seterr(all="ignore")
    main()
