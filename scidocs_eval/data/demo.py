"""A SYNTHETIC SciDocs-style suite in the official layout, deterministic from a seed, at any scale.

Papers are drawn from topics: each topic has its own vocabulary of made-up words (and each topic a few
subtopics with narrower vocabularies), mixed with shared filler words and words of other topics as noise.
- MAG/MeSH labels are topics (19 and 11 classes, as the real tasks).
- Ranking qrels: a query's positives share its subtopic; negatives are random papers, some from its topic.
- Recommendation: impressions of ~10 shown papers whose true click probability depends on topical match;
  one click per impression, drawn with the known position propensities (written to propensity_scores.json),
  so position bias is real and the propensity correction can be checked. Metadata carries authors (drawn
  from topic author pools), references and cited_by (within topic, mostly), and a year.

Nothing here is real data; a SYNTHETIC.md marker makes every result and table say so.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

import orjson

from scidocs_eval.formats.safe_output import owned_folder
from scidocs_eval.formats.suite import SYNTHETIC_MARKER, Suite
from scidocs_eval.formats.writers import write_csv, write_json
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.paths import cache_dir

np = lazy_module("numpy", __name__)

_CONSONANTS = "bcdfghklmnprstvz"
_VOWELS = "aeiou"
_FILLER = ("we", "the", "of", "a", "and", "in", "to", "for", "with", "on", "this", "paper", "method", "results",
           "show", "propose", "approach", "based", "model", "study", "using", "new", "data", "analysis")


@dataclass(frozen=True)
class DemoConfig:
    """Sizes of a demo suite. `small()` is the default (`--data demo`); `scidocs()` matches SciDocs' scale."""

    seed: int = 0
    mag_papers: int = 1500
    mesh_papers: int = 1200
    ranking_queries: int = 60
    """queries per ranking task and per split (val and test)."""
    positives: int = 5
    negatives: int = 25
    recomm_impressions: tuple[int, int, int] = (400, 100, 100)
    """train, val, test impressions."""
    shown: int = 10
    recomm_papers: int = 1500
    topics: int = 30
    subtopics: int = 4
    words_per_topic: int = 60
    words_per_subtopic: int = 25

    @classmethod
    def small(cls, seed: int = 0) -> DemoConfig:
        return cls(seed=seed)

    @classmethod
    def scidocs(cls, seed: int = 0) -> DemoConfig:
        return cls(seed=seed, mag_papers=25_000, mesh_papers=23_000, ranking_queries=1000,
                   recomm_impressions=(4000, 1000, 1000), recomm_papers=20_000)


def propensity_curve(positions: int) -> np.ndarray:
    """The demo's true examination probability of each display position (decreasing; position 1 = 1.0)."""
    return 1.0 / np.arange(1, positions + 1) ** 0.9


class _Generator:
    def __init__(self, config: DemoConfig):
        self.config = config
        self.rng = np.random.default_rng(config.seed)
        n_words = config.topics * (config.words_per_topic + config.subtopics * config.words_per_subtopic)
        words = self._words(n_words)
        self.topic_words, self.subtopic_words = [], []
        self._topic_start: list[int] = []
        self._subtopic_start: list[list[int]] = []
        cursor = 0
        for _ in range(config.topics):
            self.topic_words.append(words[cursor:cursor + config.words_per_topic])
            self._topic_start.append(cursor)
            cursor += config.words_per_topic
            subs, starts = [], []
            for _ in range(config.subtopics):
                subs.append(words[cursor:cursor + config.words_per_subtopic])
                starts.append(cursor)
                cursor += config.words_per_subtopic
            self.subtopic_words.append(subs)
            self._subtopic_start.append(starts)
        self.all_words = words
        # every pool is a slice of this array: the topic words, then the filler words
        self._pool_words = np.array([*words, *_FILLER], dtype=object)
        self._pool_sizes = np.array([config.words_per_subtopic, config.words_per_topic, len(words), len(_FILLER)])
        self.counter = 0

    def _words(self, count: int) -> list[str]:
        seen: set[str] = set()
        out = []
        while len(out) < count:
            syllables = self.rng.integers(2, 4)
            word = "".join(self.rng.choice(list(_CONSONANTS)) + self.rng.choice(list(_VOWELS))
                           for _ in range(syllables))
            if word not in seen and word not in _FILLER:
                seen.add(word)
                out.append(word)
        return out

    def _text(self, topic: int, subtopic: int, length: int, mix: tuple[float, float, float]) -> str:
        """`length` words: shares `mix` (subtopic, topic, noise) of topical words, the rest filler."""
        draws = self.rng.random(length)
        sub = mix[0]
        top = sub + mix[1]
        noise = top + mix[2]  # np.cumsum(mix)'s sums, in its order
        which = np.searchsorted(np.array([sub, top, noise]), draws, side="right")  # how many of them each draw passes
        # one call for the words' draws: numpy's bounded integers draw the same numbers, in the same order, as one
        # call per word with its pool's size (tests/test_demo.py holds the texts to that reference)
        picks = self.rng.integers(0, self._pool_sizes[which])
        starts = np.array([self._subtopic_start[topic][subtopic], self._topic_start[topic], 0, len(self.all_words)])
        return " ".join(self._pool_words[starts[which] + picks].tolist())

    def paper(self, topic: int, subtopic: int | None = None) -> dict:
        subtopic = int(self.rng.integers(self.config.subtopics)) if subtopic is None else subtopic
        self.counter += 1
        paper_id = f"demo{self.config.seed}-{self.counter:07d}"
        title = self._text(topic, subtopic, int(self.rng.integers(5, 11)), (0.35, 0.3, 0.1)).capitalize()
        abstract = self._text(topic, subtopic, int(self.rng.integers(40, 90)), (0.2, 0.25, 0.15)).capitalize()
        return {"paper_id": paper_id, "title": title, "abstract": abstract,
                "_topic": topic, "_subtopic": subtopic}


def _public(record: dict) -> dict:
    return {k: v for k, v in record.items() if not k.startswith("_")}


def _classification(gen: _Generator, dest: Path, task: str, n_papers: int, classes: int, topic_offset: int,
                    metadata: dict) -> None:
    rows = []
    for _ in range(n_papers):
        label = int(gen.rng.integers(classes))
        record = gen.paper((topic_offset + label) % gen.config.topics)
        metadata[record["paper_id"]] = _public(record)
        rows.append([record["paper_id"], label])
    cut_train, cut_val = int(0.6 * n_papers), int(0.8 * n_papers)
    for split, part in (("train", rows[:cut_train]), ("val", rows[cut_train:cut_val]), ("test", rows[cut_val:])):
        write_csv(dest / task / f"{split}.csv", ["pid", "class_label"], part)


def _ranking(gen: _Generator, dest: Path, metadata: dict) -> None:
    config = gen.config
    for task in ("coview", "coread", "cite", "cocite"):
        for split in ("val", "test"):
            lines = []
            for _ in range(config.ranking_queries):
                topic = int(gen.rng.integers(config.topics))
                query = gen.paper(topic)
                metadata[query["paper_id"]] = _public(query)
                n_pos = int(gen.rng.integers(1, config.positives + 1)) if gen.rng.random() < 0.2 \
                    else config.positives
                candidates = [(gen.paper(topic, query["_subtopic"]), 1) for _ in range(n_pos)]
                for _ in range(config.negatives):
                    same_topic = gen.rng.random() < 0.2
                    candidates.append((gen.paper(topic if same_topic else int(gen.rng.integers(config.topics))),
                                       0))
                order = gen.rng.permutation(len(candidates))
                for i in order:
                    record, grade = candidates[i]
                    metadata[record["paper_id"]] = _public(record)
                    lines.append(f"{query['paper_id']} 0 {record['paper_id']} {grade}")
            path = dest / task / f"{split}.qrel"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _recomm(gen: _Generator, dest: Path) -> None:
    config = gen.config
    rng = gen.rng
    papers = [gen.paper(int(rng.integers(config.topics))) for _ in range(config.recomm_papers)]
    by_topic: dict[int, list[int]] = {}
    for i, record in enumerate(papers):
        by_topic.setdefault(record["_topic"], []).append(i)
    authors_per_topic = [[f"author-{t}-{a}" for a in range(12)] for t in range(config.topics)]
    for record in papers:
        pool = authors_per_topic[record["_topic"]]
        record["authors"] = sorted({pool[j] for j in rng.integers(len(pool), size=rng.integers(1, 5))})
        record["year"] = int(rng.integers(1995, 2020))
        record["references"], record["cited_by"] = [], []
    for i, record in enumerate(papers):
        same = by_topic[record["_topic"]]
        for j in rng.choice(same, size=min(len(same), int(rng.integers(0, 6))), replace=False):
            if j != i and papers[j]["year"] <= record["year"]:
                record["references"].append(papers[j]["paper_id"])
                papers[j]["cited_by"].append(record["paper_id"])
    propensity = propensity_curve(config.shown)
    splits, true_relevance = {}, {}
    for split, count in zip(("train", "val", "test"), config.recomm_impressions):
        rows, relevances = [], []
        for _ in range(count):
            q = int(rng.integers(len(papers)))
            query = papers[q]
            same = [j for j in by_topic[query["_topic"]] if j != q]
            n_related = min(len(same), int(rng.integers(1, 4)))
            shown = list(rng.choice(same, size=n_related, replace=False)) if n_related else []
            while len(shown) < config.shown:
                j = int(rng.integers(len(papers)))
                if j != q and j not in shown:
                    shown.append(j)
            shown = [shown[k] for k in rng.permutation(len(shown))]
            relevance = np.array([
                0.9 if papers[j]["_topic"] == query["_topic"] and papers[j]["_subtopic"] == query["_subtopic"]
                else 0.5 if papers[j]["_topic"] == query["_topic"] else 0.03 for j in shown])
            click = propensity * relevance
            clicked = int(rng.choice(len(shown), p=click / click.sum()))
            rows.append([query["paper_id"], papers[shown[clicked]]["paper_id"],
                         ",".join(papers[j]["paper_id"] for j in shown)])
            relevances.append(relevance.tolist())
        splits[split], true_relevance[split] = rows, relevances
    for split, rows in splits.items():
        write_csv(dest / "recomm" / f"{split}.csv", ["query_id", "clicked_id", "shown"], rows)
    write_json(dest / "recomm" / "propensity_scores.json", {"scores": propensity.tolist()})
    # A side file outside the official layout, for tests of the propensity correction: {split: [[probability
    # of a click on each shown paper once examined, in display order] per impression]}.
    write_json(dest / "recomm" / "SYNTHETIC_true_relevance.json", true_relevance)
    write_json(dest / "paper_metadata_recomm.json", {p["paper_id"]: _public(p) for p in papers})


def build_demo_suite(dest: str | os.PathLike[str], config: DemoConfig | None = None, option: str = "output") -> Suite:
    """Write a synthetic suite in the official layout to `dest` and return it.

    A rebuild replaces only the files an earlier build wrote (`scidocs_eval.formats.safe_output.owned_folder`); a
    non-empty folder the tool did not write is refused.
    """
    config = config or DemoConfig.small()
    with owned_folder(dest, "scidocs-eval demo", option=option) as staging:
        gen = _Generator(config)
        mag_mesh: dict[str, dict] = {}
        _classification(gen, staging, "mag", config.mag_papers, 19, 0, mag_mesh)
        _classification(gen, staging, "mesh", config.mesh_papers, 11, 19, mag_mesh)
        write_json(staging / "paper_metadata_mag_mesh.json", mag_mesh)
        view_cite_read: dict[str, dict] = {}
        _ranking(gen, staging, view_cite_read)
        write_json(staging / "paper_metadata_view_cite_read.json", view_cite_read)
        _recomm(gen, staging)
        (staging / SYNTHETIC_MARKER).write_text(
            "# Synthetic demo suite\n\nGenerated by scidocs-eval's demo generator; NOT the SciDocs data. Its numbers "
            "say nothing about real papers.\n\nConfig: " + orjson.dumps(asdict(config)).decode() + "\n",
            encoding="utf-8")
    return Suite(dest)


def default_demo_suite(config: DemoConfig | None = None) -> Suite:
    """The demo suite in the user cache dir (built on first use, reused after)."""
    config = config or DemoConfig.small()
    key = orjson.dumps(asdict(config), option=orjson.OPT_SORT_KEYS)
    dest = cache_dir("demo") / hashlib.sha1(key).hexdigest()[:16]
    if not (dest / SYNTHETIC_MARKER).exists():
        tmp = dest.with_name(dest.name + f".tmp{os.getpid()}")
        build_demo_suite(tmp, config)
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(tmp, dest)
    return Suite(dest)
