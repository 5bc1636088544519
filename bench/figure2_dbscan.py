"""How Figure 2's DBSCAN numbers move with its settings: homogeneity / completeness over a grid of eps_scale and
min_samples, for several seeded samples of the task's papers, each embeddings file projected once per sample.
(t-SNE starts from PCA, so with a fixed sample the seed hardly moves the projection; the sample is what varies.)

    python bench/figure2_dbscan.py --data SUITE --task mag --embeddings random.jsonl --embeddings sif.jsonl

Prints a markdown table (one row per setting; per file the mean homogeneity / completeness over the seeds and
their range), the table docs/figures.md shows.
"""

from __future__ import annotations

import argparse
import platform
import time
from datetime import date
from pathlib import Path

import numpy as np

from scidocs_eval.formats.embeddings import EmbeddingStore
from scidocs_eval.formats.suite import Suite
from scidocs_eval.leaderboard.figures import ProjectionClusters, sample_papers, usable_rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--task", default="mag")
    parser.add_argument("--split", default="test")
    parser.add_argument("--embeddings", action="append", required=True)
    parser.add_argument("--sample", type=int, default=400, help="papers per sample (default: %(default)s)")
    parser.add_argument("--seeds", default="0,1,2", help="sample seeds")
    parser.add_argument("--eps-scales", default="1,1.5,2,2.5,3")
    parser.add_argument("--min-samples", default="5,10,15,20")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    settings = [(float(e), int(m)) for m in args.min_samples.split(",") for e in args.eps_scales.split(",")]
    suite = Suite(args.data)
    stores = {Path(path).stem: EmbeddingStore.load(path, progress=False) for path in args.embeddings}
    started = time.perf_counter()
    samples = {}
    for seed in seeds:
        drawn = sample_papers(suite, args.task, args.split, args.sample, seed=seed)
        keep = usable_rows(drawn, stores)
        ids = [paper_id for paper_id, kept in zip(drawn.ids, keep) if kept]
        samples[seed] = (drawn.labels[keep], {name: ProjectionClusters(seed=seed).project(store.vectors(ids))
                                              for name, store in stores.items()})
    tsne_seconds = time.perf_counter() - started
    papers = len(next(iter(samples.values()))[0])
    classes = len(set(next(iter(samples.values()))[0].tolist()))
    print(f"{args.task} {args.split}: samples of {papers} papers ({classes} classes), sample seeds {args.seeds}; "
          f"{platform.node()} {date.today()}, {tsne_seconds:.0f} s for {len(seeds) * len(stores)} t-SNE runs "
          "(shared, loaded machine)\n")
    print("| eps_scale | min_samples | " + " | ".join(f"{name} homogeneity | {name} completeness"
                                                     for name in stores) + " |")
    print("|---|---|" + "---|---|" * len(stores))
    for eps_scale, min_samples in settings:
        clusters = ProjectionClusters(eps_scale=eps_scale, min_samples=min_samples)
        cells = []
        for name in stores:
            scores = [clusters.score(samples[seed][1][name], samples[seed][0]) for seed in seeds]
            for metric in ("homogeneity", "completeness"):
                values = np.array([getattr(s, metric) for s in scores])
                cells.append(f"{values.mean():.2f} ({values.min():.2f}–{values.max():.2f})")
        print(f"| {eps_scale:g} | {min_samples} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
