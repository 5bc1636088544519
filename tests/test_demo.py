"""The synthetic demo suite: deterministic from its seed, labelled synthetic, shaped like the official layout."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from scidocs_eval.data.demo import _FILLER, DemoConfig, _Generator, build_demo_suite, propensity_curve
from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.task import task_names
from scidocs_eval.formats.suite import SPLITS, Suite

RANKING_TASKS = task_names("ranking")


def tiny(seed: int) -> DemoConfig:
    return DemoConfig(seed=seed, mag_papers=60, mesh_papers=40, ranking_queries=4, recomm_impressions=(12, 6, 6),
                      recomm_papers=80)


def file_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_seed_same_bytes_other_seed_differs(tmp_path: Path) -> None:
    first = file_bytes(build_demo_suite(tmp_path / "a", tiny(5)).root)
    again = file_bytes(build_demo_suite(tmp_path / "b", tiny(5)).root)
    other = file_bytes(build_demo_suite(tmp_path / "c", tiny(6)).root)
    assert first == again
    assert set(other) == set(first)
    differing = {name for name in first if first[name] != other[name]}
    assert differing >= {"paper_metadata_mag_mesh.json", "cite/test.qrel", "recomm/train.csv"}


def test_demo_never_deletes_a_users_folder(tmp_path: Path) -> None:
    thesis = tmp_path / "s" / "thesis.tex"
    thesis.parent.mkdir()
    thesis.write_text("precious", encoding="utf-8")
    with pytest.raises(ScidocsEvalError, match=r"s is not empty and was not written by scidocs-eval demo"):
        build_demo_suite(tmp_path / "s", tiny(1))
    assert thesis.read_text(encoding="utf-8") == "precious"
    assert sorted(p.name for p in thesis.parent.iterdir()) == ["thesis.tex"]


def test_rebuilding_replaces_only_the_demos_own_files(tmp_path: Path) -> None:
    build_demo_suite(tmp_path / "s", tiny(1))
    (tmp_path / "s" / "my_results.json").write_text("{}", encoding="utf-8")
    (tmp_path / "s" / "cite" / "notes.txt").write_text("mine", encoding="utf-8")
    rebuilt = file_bytes(build_demo_suite(tmp_path / "s", tiny(2)).root)
    assert rebuilt["my_results.json"] == b"{}" and rebuilt["cite/notes.txt"] == b"mine"
    fresh = file_bytes(build_demo_suite(tmp_path / "fresh", tiny(2)).root)
    assert {k: v for k, v in rebuilt.items() if k not in ("my_results.json", "cite/notes.txt")} == fresh
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []   # no staging folder left


def test_marked_synthetic(demo_suite: Suite) -> None:
    assert demo_suite.is_synthetic
    assert "NOT the SciDocs data" in (demo_suite.root / "SYNTHETIC.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("task", RANKING_TASKS)
def test_qrels_shape(demo_suite: Suite, task: str) -> None:
    for split in ("val", "test"):
        qrels = demo_suite.qrels(task, split)
        assert len(qrels.candidates) == 25 and qrels.repeated == 0
        for grades in qrels.relevance.values():
            counts = Counter(grades.values())
            assert 1 <= counts[1] <= 5 and counts[0] == 25 and set(counts) == {0, 1}
        known = demo_suite.metadata("view_cite_read")
        assert all(q in known and all(c in known for c in cs) for q, cs in qrels.candidates.items())


def test_labels_shape(demo_suite: Suite) -> None:
    for task, classes, total in (("mag", 19, 400), ("mesh", 11, 300)):
        splits = [demo_suite.labels(task, split) for split in SPLITS]
        assert [len(s.ids) for s in splits] == [int(0.6 * total), int(0.8 * total) - int(0.6 * total),
                                                total - int(0.8 * total)]
        labels = np.concatenate([s.labels for s in splits])
        assert labels.min() >= 0 and labels.max() < classes
        assert all(i in demo_suite.metadata("mag_mesh") for s in splits for i in s.ids)


def test_recomm_shape(demo_suite: Suite) -> None:
    metadata = demo_suite.metadata("recomm")
    for split, count in zip(SPLITS, (300, 80, 80)):
        impressions = demo_suite.impressions(split)
        assert len(impressions) == count
        for impression in impressions:
            assert impression.clicked_id in impression.shown and len(set(impression.shown)) == 10
            assert impression.query_id not in impression.shown
            assert all(paper_id in metadata for paper_id in impression.shown)
    np.testing.assert_allclose(demo_suite.propensities, propensity_curve(10))
    record = next(iter(metadata.values()))
    assert {"paper_id", "title", "abstract", "authors", "references", "cited_by", "year"} <= set(record)
    cited = {(citing, cited) for citing, r in metadata.items() for cited in r["references"]}
    cited_by = {(citing, cited) for cited, r in metadata.items() for citing in r["cited_by"]}
    assert cited == cited_by and cited


def _text_word_by_word(gen: _Generator, topic: int, subtopic: int, length: int, mix: tuple[float, float, float]
                       ) -> str:
    """The demo's texts as first written (every demo suite so far): one bounded draw per word, from its pool."""
    draws = gen.rng.random(length)
    sub, top, noise = np.cumsum(mix)
    words = []
    for u in draws:
        pool = gen.subtopic_words[topic][subtopic] if u < sub else gen.topic_words[topic] if u < top else \
            gen.all_words if u < noise else _FILLER
        words.append(pool[gen.rng.integers(len(pool))])
    return " ".join(words)


@pytest.mark.parametrize("seed", [0, 3])
def test_texts_drawn_in_one_call_are_the_texts_drawn_word_by_word(seed: int) -> None:
    """The generator draws a text's words in one call; the words, and every draw after them, are those of a
    draw per word, so a seed's suite keeps its bytes (and its published demo numbers)."""
    fast, reference = _Generator(DemoConfig(seed=seed)), _Generator(DemoConfig(seed=seed))
    rng = np.random.default_rng(seed)
    for _ in range(300):
        topic, subtopic, length = int(rng.integers(30)), int(rng.integers(4)), int(rng.integers(0, 120))
        mix = tuple(rng.dirichlet(np.ones(4))[:3])
        assert fast._text(topic, subtopic, length, mix) == _text_word_by_word(reference, topic, subtopic, length, mix)
    assert fast.rng.random() == reference.rng.random()
