"""SGC on suites built by `scidocs-eval data build`: how many evaluation queries keep an edge after the leakage
guard, and cite / co-cite MAP (test split) of SIF and of SGC with each `row_norm`, default word vectors.

    python bench/sgc_leakage.py --work-dir /tmp/rc-work     # the suites bench/real_corpora.py built there

Every model is fitted on the papers of the tasks bench/real_corpora.py runs (mag, cite, cocite), so the "sif" and
"sgc (row_norm=none)" rows equal that table's. Each SGC run gets the leakage-free training graph that
bench/real_corpora.py gives it (the count-5 links of the suite's specter/data.json). "sif, rows L2-normalised" is
SGC with no edges and row_norm=l2: SIF's own vectors at unit length, to separate what propagation adds from what
normalising rows does. Uses the model cache, so run it after bench/real_corpora.py with the same SCIDOCS_EVAL_CACHE
to skip training.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from real_corpora import TASKS, training_citations

from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.task import task_names
from scidocs_eval.formats.corpus import read_citations
from scidocs_eval.formats.suite import Suite
from scidocs_eval.run.baseline import run_baseline
from scidocs_eval.run.fit_inputs import guard_edges, metadata_citations

VARIANTS = (("sif", "sif", {}), ("sif, rows L2-normalised", "sgc", {"row_norm": "l2"}),
            ("sgc (row_norm=none)", "sgc", {"row_norm": "none", "graph": True}),
            ("sgc (row_norm=sif)", "sgc", {"row_norm": "sif", "graph": True}),
            ("sgc (row_norm=l2)", "sgc", {"row_norm": "l2", "graph": True}))


def queries_keeping_an_edge(suite: Suite, edges: list[tuple[str, str]]) -> tuple[int, int]:
    """(evaluation queries of every ranking task's val and test with an edge left after the guard, all of them)."""
    kept = guard_edges(edges + metadata_citations(suite), suite)
    linked = {paper for edge in kept for paper in edge}
    queries = {query for task in task_names("ranking") for split in ("val", "test") if suite.has(f"{task}/{split}.qrel")
               for query in suite.qrels(task, split).candidates}
    return len(queries & linked), len(queries)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work-dir", required=True, help="bench/real_corpora.py's --work-dir")
    parser.add_argument("--corpora", default="cora,citeseer")
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="scidocs-sgc-"))
    print("| corpus | model | cite MAP | co-cite MAP |\n|---|---|---:|---:|")
    notes = []
    for corpus in args.corpora.split(","):
        root = Path(args.work_dir) / corpus / "suite"
        suite, citations = Suite(root), training_citations(root)
        edges = [(citing, cited) for _, citing, cited in read_citations(citations)]
        keeping, queries = queries_keeping_an_edge(suite, edges)
        notes.append(f"{corpus}: {keeping} of {queries} evaluation queries keep an edge after the leakage guard")
        for label, name, params in VARIANTS:
            params = dict(params)
            if params.pop("graph", False):
                params["citations"] = str(citations)
            result = run_baseline(name, RunConfig(data=suite, tasks=TASKS, progress=False), out_dir=out, params=params)
            print(f"| {corpus} | {label} | {result.tasks['cite'].metrics['map']:.2f} | "
                  f"{result.tasks['cocite'].metrics['map']:.2f} |", flush=True)
    print("\n" + "\n".join(f"- {note}" for note in notes))


if __name__ == "__main__":
    main()
