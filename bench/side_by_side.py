"""Side by side in one run: each suite's own evaluation and ours on the same data, both times and their ratio.

1. MTEB's retrieval evaluator (mteb 2.x, `AbsTaskRetrieval.evaluate` with an encoder that returns each text's
   vector, so no model runs) against `scidocs-eval`'s `scidocs-retrieval` task (the same vectors read from
   `.npz` files), on one BEIR-layout dataset of random vectors, SCIDOCS size by default (1,000 queries x 25,657
   documents, 768-d, 5 graded judgements a query). Both search the whole corpus for each query's top 1,000 and
   score them with pytrec_eval; the bench checks that the nDCG@10 agree to 1e-6. Times are medians of
   `--repeats` alternating runs, each in this process with `--threads` BLAS/torch threads.
2. The official SciDocs evaluation (allenai/scidocs) against `scidocs-eval run` at full scale
   (`bench/bench_run.py`'s suite: MAG, MeSH and the four ranking tasks, 768-d). The official package is not on
   PyPI and its classifier library (lightning) does not build for this Python, so it cannot run here: its time
   is the recorded one (31 min 46 s on this machine, from JSON lines, issue #37), labelled as such; ours is run
   now, cold, from JSON lines (what the official code reads) and from `.npz`.
3. SciRepEval's own evaluator against `scidocs-eval` on SciRepEval's synthetic copy (bench/scirepeval_agreement.py,
   given `--scirepeval-checkout`): both CPU times, both wall times and their ratios, in the environment SciRepEval
   runs in here (lightning when a build is on PYTHONPATH, else sklearn).

4. SciRepEval's own evaluator against a whole `scidocs-eval run --benchmark scirepeval`, as two child processes one
   after the other, on SciRepEval-shaped synthetic copies at the widths of models (`--scirepeval-dims`, 96-d and
   768-d by default): each one's wall and CPU time (user + sys, imports and reading included) and their ratios;
   with `--ours-before DIR` (an earlier checkout with its own .venv, or a source tree) our command from there too,
   its time and whether every number is the same.

    python bench/side_by_side.py                      # all
    python bench/side_by_side.py --only mteb --documents 5000
    PYTHONPATH=LIGHTNING_BUILD python bench/side_by_side.py --only scirepeval --scirepeval-checkout SCIREPEVAL
    OPENBLAS_NUM_THREADS=1 PYTHONPATH=LIGHTNING_BUILD python bench/side_by_side.py --only scirepeval-run \
        --scirepeval-checkout SCIREPEVAL --ours-before BEFORE_TREE
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from scidocs_eval.evaluation.config import RunConfig

OFFICIAL_SCIDOCS_SECONDS = 31 * 60 + 46
"""the official evaluation at full scale from JSON lines on this machine, as recorded in issue #37 (not rerun)."""


def _dataset(root: Path, queries: int, documents: int, dim: int, seed: int) -> dict[str, Any]:
    from scidocs_eval.formats.embeddings_writers import write_batches
    from scidocs_eval.formats.retrieval import Document, write_beir

    rng = np.random.default_rng(seed)
    corpus = [Document(f"doc{i:06d}", f"title {i}", f"text of document {i}") for i in range(documents)]
    query_texts = {f"query{i:05d}": f"query number {i}" for i in range(queries)}
    qrels = {q: {corpus[d].doc_id: int(rng.integers(1, 3)) for d in rng.choice(documents, 5, replace=False)}
             for q in query_texts}
    folder = root / "scidocs-retrieval"
    write_beir(folder, corpus, query_texts, {"test": qrels})
    query_vectors = rng.standard_normal((queries, dim), dtype=np.float32)
    document_vectors = rng.standard_normal((documents, dim), dtype=np.float32)
    write_batches(root / "queries.npz", [(list(query_texts), query_vectors, np.zeros(queries, bool))])
    write_batches(root / "corpus.npz", [([d.doc_id for d in corpus], document_vectors, np.zeros(documents, bool))])
    texts = {text: vector for text, vector in zip(query_texts.values(), query_vectors)}
    texts.update({d.mteb_text: vector for d, vector in zip(corpus, document_vectors)})
    return {"folder": folder, "corpus": corpus, "queries": query_texts, "qrels": qrels, "texts": texts}


def _mteb_run(data: dict[str, Any], dim: int) -> dict[str, Any]:
    """MTEB's own evaluation of SCIDOCS on `data` (as tests/test_mteb_tasks.py drives it)."""
    import datasets
    import mteb
    from mteb.abstasks.retrieval import AbsTaskRetrieval
    from mteb.abstasks.retrieval_dataset_loaders import RetrievalSplitData
    from mteb.models.model_meta import ModelMeta, ScoringFunction
    from mteb.similarity_functions import select_similarity

    texts = data["texts"]

    class Lookup:
        def __init__(self, meta: ModelMeta):
            self.mteb_model_meta = meta

        def encode(self, inputs: Any, **kwargs: Any) -> np.ndarray:
            return np.stack([texts[text] for batch in inputs for text in batch["text"]])

        def similarity(self, a: Any, b: Any) -> Any:
            return select_similarity(a, b, ScoringFunction("cosine"))

        def similarity_pairwise(self, a: Any, b: Any) -> Any:
            raise NotImplementedError

    meta = ModelMeta(loader=None, name="bench/lookup", revision="1", model_type=["dense"], embed_dim=dim,
                     similarity_fn_name="cosine", languages=None, open_weights=True, release_date=None,
                     n_parameters=0, n_embedding_parameters=0, memory_usage_mb=0, license="mit", max_tokens=np.inf,
                     reference=None, framework=[], use_instructions=False, public_training_code=None,
                     public_training_data=None, training_datasets=set(), modalities=["text"])

    class Task(AbsTaskRetrieval):
        metadata = mteb.get_task("SCIDOCS").metadata

    task = Task()
    corpus = datasets.Dataset.from_list([{"id": d.doc_id, "title": d.title, "text": d.text} for d in data["corpus"]])
    queries = datasets.Dataset.from_list([{"id": q, "text": text} for q, text in data["queries"].items()])
    task.dataset = {"default": {"test": RetrievalSplitData(corpus=corpus, queries=queries,
                                                           relevant_docs=data["qrels"], top_ranked=None)}}
    task.data_loaded = True
    return task.evaluate(Lookup(meta), "test", encode_kwargs={"batch_size": 512})["default"]


def _our_run(root: Path) -> dict[str, Any]:
    from scidocs_eval.evaluation.runner import evaluate

    result = evaluate({"queries": root / "queries.npz", "corpus": root / "corpus.npz"}, RunConfig(data=root,
                                                                                                  tasks=["scidocs-retrieval"],
                                                                                                  cache=False,
                                                                                                  progress=False))
    return result.tasks["scidocs-retrieval"].details["mteb_scores"]


def _our_core(root: Path) -> dict[str, Any]:
    """The scoring core alone (`score_tasks`: no bootstrap intervals, which MTEB does not compute)."""
    from scidocs_eval.evaluation.runner import score_tasks
    from scidocs_eval.formats.embeddings import EmbeddingStore
    from scidocs_eval.formats.suite import Suite

    stores = {group: EmbeddingStore.load(root / f"{group}.npz", cache=False) for group in ("queries", "corpus")}
    results, _, _ = score_tasks(stores, Suite(root), ["scidocs-retrieval"], "test")
    return results["scidocs-retrieval"].details["mteb_scores"]


def mteb_side_by_side(args: argparse.Namespace) -> None:
    os.environ.setdefault("TQDM_DISABLE", "1")  # MTEB's and datasets' progress bars
    import torch

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        data = _dataset(root, args.queries, args.documents, args.dim, args.seed)
        runs: dict[str, list[float]] = {"MTEB": [], "scidocs-eval evaluate()": [], "scidocs-eval scoring core": []}
        scores = {}
        for _ in range(args.repeats):
            for (label, seconds), run in zip(runs.items(), (lambda: _mteb_run(data, args.dim),
                                                            lambda: _our_run(root), lambda: _our_core(root))):
                start = time.perf_counter()
                scores[label] = run()["ndcg_at_10"]
                seconds.append(time.perf_counter() - start)
    print(f"MTEB retrieval, {args.queries} queries x {args.documents} documents, {args.dim}-d, top 1000, "
          f"{args.threads} threads, median of {args.repeats} (evaluate() adds bootstrap intervals of every metric, "
          "which MTEB does not compute; the scoring core is the same work as MTEB's):")
    mteb_median = statistics.median(runs["MTEB"])
    for label, seconds in runs.items():
        median = statistics.median(seconds)
        ratio = "" if label == "MTEB" else f": MTEB / ours = {mteb_median / median:.1f}x"
        print(f"  {label}: {median:.2f} s (runs {', '.join(f'{s:.2f}' for s in seconds)}){ratio}, "
              f"nDCG@10 {scores[label]:.6f}")
    if max(scores.values()) - min(scores.values()) > 1e-6:
        print("  nDCG@10 DIFFERENT")
        sys.exit(1)


def scidocs_side_by_side(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_run import OUT, build, timed_run

    OUT.mkdir(exist_ok=True)
    print(f"SciDocs at full scale (bench/bench_run.py's suite, {args.dim}-d), cold:")
    print(f"  official (allenai/scidocs): {OFFICIAL_SCIDOCS_SECONDS} s = 31 min 46 s, RECORDED in issue #37 on "
          "this machine from JSON lines; not rerun (the package and its lightning classifier cannot be "
          "installed here)")
    for kind in args.kinds.split(","):
        suite, embeddings = build(args.dim, args.seed, kind)
        with tempfile.TemporaryDirectory() as cache:
            seconds, result = timed_run(suite, embeddings, cache)
        metrics = ", ".join(f"{t} {r['metrics']}" for t, r in result["tasks"].items())
        print(f"  scidocs-eval from {kind}: {seconds:.1f} s: ratio {OFFICIAL_SCIDOCS_SECONDS / seconds:.0f}x "
              f"({metrics})")


def scirepeval_side_by_side(args: argparse.Namespace) -> None:
    """SciRepEval's own evaluator against ours on its synthetic copy, through bench/scirepeval_agreement.py (in a
    child process, so that its environment, lightning or sklearn, is the one PYTHONPATH gives it)."""
    if args.scirepeval_checkout is None:
        print("SciRepEval: skipped (give --scirepeval-checkout, a checkout of allenai/scirepeval; a lightning build "
              "on PYTHONPATH for its lightning environment)")
        return
    import json
    import subprocess

    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "agreement.json"
        subprocess.run([sys.executable, str(Path(__file__).resolve().parent / "scirepeval_agreement.py"),
                        "--checkout", str(args.scirepeval_checkout), "--json", str(out)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        agreement = json.loads(out.read_text())
    wall, cpu = agreement["seconds"], agreement["cpu_seconds"]
    print(f"SciRepEval, all 28 tasks on its synthetic copy, {agreement['environment']} environment (both sides):")
    print(f"  CPU: SciRepEval's evaluator {cpu['scirepeval']:.1f} s, scidocs-eval {cpu['ours']:.1f} s: ratio "
          f"{cpu['scirepeval'] / cpu['ours']:.1f}x; wall (fit and score): {wall['scirepeval']:.1f} s against "
          f"{wall['ours']:.1f} s: {wall['scirepeval'] / wall['ours']:.1f}x; largest gap in a number "
          f"{agreement['largest_gap']} (SciRepEval's own fits stop short of the optimum where they warn)")


def _child(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall, CPU user + sys) seconds of one child process run to completion."""
    import resource
    import subprocess

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def scirepeval_run_side_by_side(args: argparse.Namespace) -> None:
    """At each width of `--scirepeval-dims`: SciRepEval's own evaluator (every task, in the environment PYTHONPATH
    gives it) and a whole `scidocs-eval run --benchmark scirepeval` (in that environment's problem), one after the
    other as two child processes on the same SciRepEval-shaped synthetic copy; each one's wall and CPU time, the
    ratios, and the largest gap between their numbers."""
    if args.scirepeval_checkout is None:
        print("SciRepEval `run` at model widths: skipped (give --scirepeval-checkout)")
        return
    import json

    from scidocs_eval.data.scirepeval import write_embeddings_jsonl
    from scidocs_eval.tasks.scirepeval import write_synthetic_scirepeval

    bench = Path(__file__).resolve().parent
    for dim in (int(d) for d in args.scirepeval_dims.split(",")):
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch)
            vectors = write_synthetic_scirepeval(root / "data", seed=args.seed, dim=dim, size=args.scirepeval_size)
            embeddings = write_embeddings_jsonl(root / "embeddings.jsonl", vectors)
            theirs_wall, theirs_cpu = _child([sys.executable, str(bench / "scirepeval_agreement.py"), "--checkout",
                                              str(args.scirepeval_checkout), "--data", str(root / "data"),
                                              "--embeddings", str(embeddings), "--scirepeval-only", "--json",
                                              str(root / "theirs.json")])
            theirs = json.loads((root / "theirs.json").read_text())
            environment = theirs["environment"]
            command = [str(Path(sys.executable).parent / "scidocs-eval"), "run", "--benchmark", "scirepeval", "--data",
                       str(root / "data"), "--embeddings", str(embeddings), "--no-cache", "--quiet", "-o", "x"]
            environment_params = [f"--task-param={task}.environment={environment}"
                                  for task in _scirepeval_tasks_with_environment()]
            ours_wall, ours_cpu = _child([*command[:-1], str(root / "ours.json"), *environment_params])
            ours = json.loads((root / "ours.json").read_text())
            before = None
            if args.ours_before is not None:
                before_command, env = _before_command(args.ours_before, command[0])
                before = _child([before_command, *command[1:-len(("-o", "x"))], "-o", str(root / "before.json"),
                                 *environment_params], env)
                changed = [name for name, task in json.loads((root / "before.json").read_text())["tasks"].items()
                           if task["metrics"] != ours["tasks"][name]["metrics"]]
        gap = _largest_gap(theirs["results"], ours)
        print(f"SciRepEval-shaped synthetic copy, {len(vectors)} papers, {dim}-d, {environment} environment "
              f"(both sides), load average {os.getloadavg()[0]:.1f}:")
        print(f"  SciRepEval's evaluator (every task, one process): {theirs_wall:.1f} s wall, {theirs_cpu:.1f} s CPU; "
              f"`scidocs-eval run --benchmark scirepeval`: {ours_wall:.1f} s wall, {ours_cpu:.1f} s CPU; ratio "
              f"{theirs_wall / ours_wall:.1f}x wall, {theirs_cpu / ours_cpu:.1f}x CPU; largest gap in a number "
              f"{gap} (SciRepEval's lightning fits stop short of the optimum)")
        if before is not None:
            print(f"  the same `run` from {args.ours_before}: {before[0]:.1f} s wall, {before[1]:.1f} s CPU "
                  f"(now {before[1] / ours_cpu:.1f}x less CPU); numbers "
                  f"{'equal, every task' if not changed else 'DIFFERENT in ' + ', '.join(changed)}")


def _before_command(before: Path, ours: str) -> tuple[str, dict[str, str] | None]:
    """The `scidocs-eval` of an earlier checkout: its own virtual environment's when it has one (an editable
    install here maps `scidocs_eval` to this checkout whatever PYTHONPATH says, and its plugin packages with it),
    else this one's with the source tree first on PYTHONPATH."""
    own = before / ".venv" / "bin" / "scidocs-eval"
    if own.exists():
        return str(own), None
    path = [str(before), *filter(None, [os.environ.get("PYTHONPATH")])]
    return ours, dict(os.environ, PYTHONPATH=os.pathsep.join(path))


def _scirepeval_tasks_with_environment() -> list[str]:
    from scidocs_eval.evaluation.task import TASKS, task_names

    return [name for name in task_names(benchmark="scirepeval") if "environment" in TASKS[name].parameter_constraints]


def _largest_gap(theirs: dict[str, dict[str, Any]], ours: dict[str, Any]) -> float:
    """The largest |ours − theirs| over the metrics both report (SciRepEval's titles matched to our task names)."""
    from scidocs_eval.tasks.scirepeval import task_name

    worst = 0.0
    for title, values in theirs.items():
        if title.endswith(" shot"):
            head, _, size = title[: -len(" shot")].rpartition(" ")
            name = f"{task_name(head)}-{size}-shot"
        else:
            name = task_name(title)
        metrics = ours["tasks"].get(name, {}).get("metrics", {})
        for metric, value in values.items():
            if metric in metrics and isinstance(value, float):
                worst = max(worst, abs(metrics[metric] - value))
    return round(worst, 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=("mteb", "scidocs", "scirepeval", "scirepeval-run"),
                        help="run one of the comparisons")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--documents", type=int, default=25657)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kinds", default="jsonl,npz",
                        help="embeddings kinds of our SciDocs runs (default: %(default)s)")
    parser.add_argument("--scirepeval-checkout", type=Path, help="allenai/scirepeval checkout (work tree or git dir)")
    parser.add_argument("--scirepeval-dims", default="96,768", help="widths of the SciRepEval-shaped copies of "
                        "`--only scirepeval-run` (default: %(default)s)")
    parser.add_argument("--scirepeval-size", type=int, default=1, help="scale of those copies (1: about 2,000 papers)")
    parser.add_argument("--ours-before", type=Path, help="`--only scirepeval-run`: also run the same command from this "
                        "checkout (with its own .venv, whose scidocs-eval then runs) or "
                        "source tree (an earlier commit's, e.g. `git archive REV | tar -x -C DIR`) and compare numbers")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    if args.only in (None, "mteb"):
        mteb_side_by_side(args)
    if args.only in (None, "scidocs"):
        scidocs_side_by_side(args)
    if args.only in (None, "scirepeval"):
        scirepeval_side_by_side(args)
    if args.only in (None, "scirepeval-run"):
        scirepeval_run_side_by_side(args)


if __name__ == "__main__":
    main()
