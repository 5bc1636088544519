"""Pictures of results: the SPECTER paper's Figure 2, per-task result charts and training curves (matplotlib).

Figure 2 (Cohan et al., 2020): a t-SNE projection of a classification task's test papers, one panel per
embeddings file, coloured by class; DBSCAN clusters each 2-D projection and homogeneity/completeness of those
clusters against the classes quantify what the eye sees. The paper does not give its DBSCAN settings; ours are
scale-free (see `ProjectionClusters` and docs/figures.md).

Every figure is a `matplotlib.figure.Figure` drawn without pyplot (no global state, no display needed) and saved
by file name: `.png`, `.svg` or `.pdf`.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from scidocs_eval.errors import InputError, ScidocsEvalError
from scidocs_eval.evaluation.task import DEFAULT_BENCHMARK, TASKS, task_names
from scidocs_eval.extras import require
from scidocs_eval.formats.embeddings import EMPTY, MISSING, EmbeddingStore
from scidocs_eval.formats.embeddings_tables import ReadOptions
from scidocs_eval.formats.safe_output import atomic_write
from scidocs_eval.formats.suite import Suite
from scidocs_eval.leaderboard.runs import LoadedRun
from scidocs_eval.leaderboard.table1 import COLUMNS, our_row
from scidocs_eval.progress import progress_bar
from scidocs_eval.training.specter import HISTORY_FILE

NEEDED_BY = "drawing figures"

if TYPE_CHECKING:
    from matplotlib.figure import Figure

log = logging.getLogger("scidocs_eval")

IMAGE_SUFFIXES = (".png", ".svg", ".pdf")


def new_figure(**kwargs: Any) -> Figure:
    """A matplotlib Figure (Agg canvas, no pyplot); a clear error when matplotlib is not installed."""
    return require("matplotlib.figure", NEEDED_BY).Figure(**kwargs)


def save_figure(figure: Figure, out: str | os.PathLike[str], option: str = "--out") -> Path:
    """Save as PNG, SVG or PDF according to the file name, through the output layer; the folder is created."""
    out = Path(out)
    suffix = out.suffix.lower()
    if suffix not in IMAGE_SUFFIXES:
        raise ScidocsEvalError(f"{out}: the image name must end in {', '.join(IMAGE_SUFFIXES)}")
    with atomic_write(out, option, rows=None) as handle:
        figure.savefig(handle, format=suffix[1:], dpi=150, bbox_inches="tight",
                       metadata=_reproducible_metadata(suffix))
    return out


def _reproducible_metadata(suffix: str) -> dict[str, Any]:
    """No creation date in the file, so the same inputs give the same bytes."""
    return {".svg": {"Date": None}, ".pdf": {"CreationDate": None}}.get(suffix, {})


# ----- Figure 2 -----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LabelledSample:
    """The papers every panel shows: `ids[i]` has class `labels[i]` (int64, shape (n,)); `names` maps a class
    label to its display name."""

    ids: list[str]
    labels: np.ndarray
    names: dict[int, str]


def class_names(suite: Suite, task: str) -> dict[int, str]:
    """`{task}/class_names.json` as {label: name}, or {} when the suite has no names file."""
    return suite.class_names(task)


def sample_papers(suite: Suite, task: str, split: str = "test", size: int | None = 3000,
                  seed: int = 0) -> LabelledSample:
    """A seeded random sample (without replacement, in file order) of `size` papers of a classification split;
    all of them when `size` is None or at least the split's size."""
    labelled = suite.labels(task, split)
    rows = np.arange(len(labelled.ids))
    if size is not None and size < len(rows):
        if size < 2:
            raise ScidocsEvalError(f"--sample must be at least 2, got {size}")
        rows = np.sort(np.random.default_rng(seed).choice(rows, size=size, replace=False))
    return LabelledSample([labelled.ids[r] for r in rows], labelled.labels[rows], class_names(suite, task))


def usable_rows(sample: LabelledSample, stores: dict[str, EmbeddingStore]) -> np.ndarray:
    """Rows of `sample` that every store embeds (bool, shape (n,)); each left-out paper is warned about by count
    and file, never dropped silently. No usable paper at all is an error."""
    keep = np.ones(len(sample.ids), dtype=bool)
    for name, store in stores.items():
        status = store.status(sample.ids)
        for code, what in ((MISSING, "are not in"), (EMPTY, "have an empty embedding in")):
            count = int((status == code).sum())
            if count:
                log.warning("figure 2: %d of %d sampled papers %s %s (%s); left out of every panel", count,
                            len(sample.ids), what, store.source or "<memory>", name)
        keep &= status != MISSING
        keep &= status != EMPTY
    if keep.sum() < 2:
        raise ScidocsEvalError("figure 2: fewer than 2 sampled papers have an embedding in every file "
                               f"({', '.join(s.source or n for n, s in stores.items())})")
    return keep


@dataclass
class PanelScores:
    """DBSCAN on one 2-D projection: homogeneity and completeness (0..1) against the classes, the number of
    clusters found, the share of points DBSCAN calls noise, and the eps it used (projection units)."""

    homogeneity: float
    completeness: float
    clusters: int
    noise_fraction: float
    eps: float


class ProjectionClusters:
    """t-SNE to 2-D, then DBSCAN, scored against the classes: the quantitative half of Figure 2.

    Parameters:
        perplexity: t-SNE perplexity (capped at (n - 1) / 3 for small samples).
        metric: distance between embeddings for t-SNE ("euclidean" as scikit-learn's default, or "cosine").
        eps_scale: DBSCAN's eps as a multiple of the median distance from a projected point to its
            `min_samples`-th nearest neighbour. t-SNE's output scale depends on the sample size and the run, so an
            absolute eps would not carry from one projection to another; this one does (docs/figures.md: on Cora
            the ranking of embeddings holds for eps_scale 0.75..1 and min_samples 5..20; from 1.5 up, t-SNE's
            touching groups merge into one cluster, at 0.5 most points are noise).
        min_samples: DBSCAN's min_samples (a core point has this many neighbours within eps, itself included).
        seed: seeds t-SNE (the same seed gives the same projection and the same scores).

    Noise points (DBSCAN label -1) count as one more cluster, as scikit-learn's scores take the labels as given;
    `PanelScores.noise_fraction` says how many there were.
    """

    def __init__(self, perplexity: float = 30.0, metric: str = "euclidean", eps_scale: float = 1.0,
                 min_samples: int = 10, seed: int = 0):
        self.perplexity = perplexity
        self.metric = metric
        self.eps_scale = eps_scale
        self.min_samples = min_samples
        self.seed = seed

    def project(self, vectors: np.ndarray) -> np.ndarray:
        """(n, dim) embeddings -> (n, 2) float64 t-SNE coordinates."""
        from sklearn.manifold import TSNE
        from threadpoolctl import threadpool_limits

        perplexity = min(self.perplexity, max(1.0, (len(vectors) - 1) / 3))
        tsne = TSNE(n_components=2, perplexity=perplexity, metric=self.metric, init="pca", learning_rate="auto",
                    random_state=self.seed)
        # One OpenMP thread: the same numbers on any machine, and no spin-waiting threads on a loaded one
        # (300 papers took 40 s with the default threads on a busy 2-core machine, 4 s with one).
        with threadpool_limits(1):
            return tsne.fit_transform(np.asarray(vectors, dtype=np.float64)).astype(np.float64)

    def eps(self, coords: np.ndarray) -> float:
        """eps_scale × the median distance to the min_samples-th nearest neighbour (itself counted, as DBSCAN
        does); `coords` is (n, 2)."""
        from sklearn.neighbors import NearestNeighbors

        k = min(self.min_samples, len(coords))
        distances, _ = NearestNeighbors(n_neighbors=k).fit(coords).kneighbors(coords)
        return float(self.eps_scale * np.median(distances[:, -1]))

    def score(self, coords: np.ndarray, labels: np.ndarray) -> PanelScores:
        """DBSCAN on (n, 2) `coords`; homogeneity and completeness of its clusters against `labels` (n,)."""
        from sklearn.cluster import DBSCAN
        from sklearn.metrics import homogeneity_completeness_v_measure

        eps = self.eps(coords)
        clusters = DBSCAN(eps=eps, min_samples=self.min_samples).fit_predict(coords)
        homogeneity, completeness, _ = homogeneity_completeness_v_measure(labels, clusters)
        return PanelScores(round(float(homogeneity), 4), round(float(completeness), 4),
                           int(len(set(clusters.tolist()) - {-1})), round(float((clusters == -1).mean()), 4),
                           round(eps, 4))


def warn_small_classes(labels: np.ndarray, min_samples: int) -> None:
    """Loud warning when DBSCAN's min_samples exceeds the median class size of the sample: most classes then
    cannot form a cluster of their own, and homogeneity falls toward 0 whatever the embeddings."""
    median = float(np.median(np.unique(labels, return_counts=True)[1]))
    if median < min_samples:
        log.warning("figure 2: DBSCAN min_samples=%d is above the median class size of the sample (%g papers): "
                    "classes cannot form clusters of their own and the scores say little; draw more papers "
                    "(--sample) or lower --min-samples", min_samples, median)


@dataclass
class Panel:
    """One embeddings file's projection: `coords` (n, 2) of the sample's usable papers, and its scores."""

    name: str
    source: str | None
    coords: np.ndarray
    scores: PanelScores


@dataclass
class Figure2:
    """What `figure2` computed: one panel per embeddings file over the same papers (`ids`, `labels`)."""

    task: str
    split: str
    ids: list[str]
    labels: np.ndarray
    names: dict[int, str]
    panels: list[Panel]
    settings: dict[str, Any] = field(default_factory=dict)
    left_out: int = 0

    def summary(self) -> dict[str, Any]:
        """The numbers, for `--json` (no coordinates)."""
        return {"task": self.task, "split": self.split, "papers": len(self.ids), "left_out": self.left_out,
                "classes": len(set(self.labels.tolist())), "settings": self.settings,
                "panels": [{"name": p.name, "embeddings": p.source, **vars(p.scores)} for p in self.panels]}

    def lines(self) -> list[str]:
        """One printable line per panel."""
        return [f"{p.name}: homogeneity {p.scores.homogeneity:.2f}, completeness {p.scores.completeness:.2f} "
                f"({p.scores.clusters} DBSCAN clusters, {p.scores.noise_fraction:.0%} noise; {len(self.ids)} "
                f"{self.task} {self.split} papers)" for p in self.panels]


def figure2(embeddings: Sequence[str | os.PathLike[str]], suite: Suite, task: str = "mag", *,
            names: Sequence[str] | None = None, split: str = "test", sample: int | None = 3000, seed: int = 0,
            clusters: ProjectionClusters | None = None, progress: bool = True,
            read_options: ReadOptions | None = None) -> Figure2:
    """Project the same seeded sample of `task`'s papers with each embeddings file and score each projection.

    Each file is of any kind `EmbeddingStore.load` reads (`read_options`: where a table or array holds its ids).

    `names` label the panels (default: each file's stem). Papers missing from any file are left out of every
    panel with a warning. `clusters` carries the t-SNE/DBSCAN settings; its seed defaults to `seed`.
    """
    require("matplotlib", NEEDED_BY)  # before minutes of t-SNE, not after
    TASKS.check([task])  # an unknown name: the registry's did-you-mean
    # figure 2 reads the suite's label files: a suite task whose papers are embedded for classification (declared)
    labelled = [name for name in task_names(benchmark=DEFAULT_BENCHMARK)
                if TASKS[name].spec.input_format == "classification"]
    if task not in labelled:
        raise ScidocsEvalError(f"--task {task}: {task} is not a classification task; figure 2 shows the papers "
                               f"and classes of one: {', '.join(labelled)}")
    if not embeddings:
        raise ScidocsEvalError("figure 2 needs at least one embeddings file")
    names = list(names) if names else [Path(e).stem for e in embeddings]
    if len(names) != len(embeddings):
        raise ScidocsEvalError(f"{len(names)} names for {len(embeddings)} embeddings files")
    clusters = clusters or ProjectionClusters(seed=seed)
    drawn = sample_papers(suite, task, split, sample, seed)
    stores = {name: EmbeddingStore.load(path, progress=progress, options=read_options)
              for name, path in zip(names, embeddings)}
    keep = usable_rows(drawn, stores)
    ids = [paper_id for paper_id, kept in zip(drawn.ids, keep) if kept]
    labels = drawn.labels[keep]
    warn_small_classes(labels, clusters.min_samples)
    panels = []
    with progress_bar(total=len(stores), unit="panel", desc=f"t-SNE of {len(ids)} papers",
                      enabled=progress) as bar:
        for name, store in stores.items():
            coords = clusters.project(store.vectors(ids))
            panels.append(Panel(name, store.source, coords, clusters.score(coords, labels)))
            bar.update(1)
    for store in stores.values():
        store.check_unchanged()
    settings = {"sample": sample, "seed": seed, "tsne": {"perplexity": clusters.perplexity,
                                                         "metric": clusters.metric, "seed": clusters.seed},
                "dbscan": {"eps_scale": clusters.eps_scale, "min_samples": clusters.min_samples}}
    return Figure2(task, split, ids, labels, drawn.names, panels, settings, int((~keep).sum()))


def draw_figure2(result: Figure2) -> Figure:
    """Panels side by side, points coloured by class, one shared legend (class names where the suite has them)."""
    colormaps = require("matplotlib", NEEDED_BY).colormaps

    classes = sorted(set(result.labels.tolist()))
    palette = colormaps["tab20" if len(classes) > 10 else "tab10"]
    figure = new_figure(figsize=(5.2 * len(result.panels), 5.6), layout="constrained")
    axes = figure.subplots(1, len(result.panels), squeeze=False)[0]
    for ax, panel in zip(axes, result.panels):
        for position, label in enumerate(classes):
            chosen = result.labels == label
            ax.scatter(panel.coords[chosen, 0], panel.coords[chosen, 1], s=6, alpha=0.75, linewidths=0,
                       color=palette(position % palette.N), label=result.names.get(label, str(label)))
        ax.set_title(f"{panel.name}\nhomogeneity {panel.scores.homogeneity:.2f} · "
                     f"completeness {panel.scores.completeness:.2f}", fontsize=11)
        ax.set_xticks([])
        ax.set_yticks([])
    handles, legend_labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, legend_labels, loc="outside lower center", ncols=min(len(classes), 7),
                  markerscale=2.5, fontsize=8, frameon=False,
                  title=f"{result.task} class ({len(result.ids)} {result.split} papers, t-SNE seed "
                        f"{result.settings['tsne']['seed']})")
    return figure


# ----- result charts ------------------------------------------------------------------------------------------

def draw_results(runs: Sequence[LoadedRun]) -> Figure:
    """Grouped bars: one group per Table 1 column any run filled, one bar per run; confidence intervals as
    whiskers where a run carries them. A run without a column gets no bar there (and "n/a" at the axis)."""
    if not runs:
        raise ScidocsEvalError("no results to chart")
    table = [our_row(run.result, run.label) for run in runs]
    rows = [row.values for row in table]
    columns = [c for c in COLUMNS if any(c in row for row in rows)]
    if not columns:
        raise ScidocsEvalError("none of the results files has a Table 1 column to chart")
    colormaps = require("matplotlib", NEEDED_BY).colormaps

    palette = colormaps["tab10"]
    width = 0.8 / len(runs)
    figure = new_figure(figsize=(max(6.0, 1.0 + len(columns) * (0.35 + 0.22 * len(runs))), 4.6),
                        layout="constrained")
    ax = figure.subplots()
    for index, (run, row) in enumerate(zip(runs, rows)):
        ci = table[index].ci
        offsets = np.arange(len(columns)) - 0.4 + width * (index + 0.5)
        values = [row.get(c, math.nan) for c in columns]
        errors = np.array([[v - ci[c][0], ci[c][1] - v] if c in ci and c in row else [math.nan, math.nan]
                           for c, v in zip(columns, values)]).T
        ax.bar(offsets, values, width, color=palette(index % palette.N), label=run.label,
               yerr=errors if np.isfinite(errors).any() else None, capsize=2, error_kw={"elinewidth": 0.8})
        for offset, value in zip(offsets, values):
            if math.isnan(value):
                ax.text(offset, 1, "n/a", rotation=90, ha="center", va="bottom", fontsize=7, color="0.4")
    ax.set_xticks(np.arange(len(columns)), [COLUMNS[c] for c in columns], rotation=30, ha="right")
    ax.set_ylabel("score (×100)")
    ax.set_ylim(0, 100)
    ax.grid(axis="y", alpha=0.3)
    whiskers = " (whiskers: confidence intervals)" if any(row.ci for row in table) else ""
    ax.set_title("Results per task" + whiskers, fontsize=11)
    ax.legend(fontsize=8, ncols=min(len(runs), 4), loc="upper left", bbox_to_anchor=(0, -0.25), frameon=False)
    return figure


# ----- training curves ----------------------------------------------------------------------------------------

def read_history(run_dir: str | os.PathLike[str]) -> dict[str, dict[int, float]]:
    """{"val_loss": {epoch: loss}, "train_loss": {epoch: loss}} from a `train specter` output folder."""
    path = Path(run_dir) / HISTORY_FILE
    if not path.is_file():
        raise InputError(path, "not found; give the --out folder of `scidocs-eval train specter`")
    try:
        data = orjson.loads(path.read_bytes())
        history = {key: {int(epoch): float(loss) for epoch, loss in data[key].items()}
                   for key in ("val_loss", "train_loss")}
    except (orjson.JSONDecodeError, KeyError, AttributeError, TypeError, ValueError) as error:
        raise InputError(path, f"not a training history ({error})") from None
    if not history["val_loss"] and not history["train_loss"]:
        raise InputError(path, "no losses recorded yet")
    return history


def draw_training(run_dir: str | os.PathLike[str]) -> Figure:
    """Validation loss (before training and after each epoch) and mean training loss per epoch."""
    history = read_history(run_dir)
    figure = new_figure(figsize=(6, 4), layout="constrained")
    ax = figure.subplots()
    for key, label, style in (("train_loss", "training loss (epoch mean)", "o-"),
                              ("val_loss", "validation loss", "s--")):
        epochs = sorted(history[key])
        ax.plot(epochs, [history[key][e] for e in epochs], style, label=label)
    ax.set_xlabel("epoch")
    ax.set_ylabel("triplet loss")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title(f"SPECTER training: {Path(run_dir).name}", fontsize=11)
    return figure
