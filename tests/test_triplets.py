"""The SPECTER triplet sampler (SPEC §7): composition, drop rules, determinism, resumable state."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scidocs_eval.errors import InputError, ScidocsEvalError
from scidocs_eval.training.triplets import TrainingData, TripletSampler, sample_triplets


def _write(folder: Path, counts: dict, papers: dict, train: list[str], val: list[str] = ()) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "data.json").write_text(json.dumps({q: {c: {"count": n} for c, n in cands.items()}
                                                  for q, cands in counts.items()}))
    (folder / "metadata.json").write_text(json.dumps({pid: {"paper_id": pid, "title": title, "abstract": "text"}
                                                      for pid, title in papers.items()}))
    (folder / "train.txt").write_text("\n".join(train))
    (folder / "val.txt").write_text("\n".join(val))
    return folder


@pytest.fixture(scope="module")
def sample(shared_data: Path) -> TrainingData:
    return TrainingData.read(shared_data / "specter-sample")


def test_sample_triplets_follow_the_recipe(sample: TrainingData) -> None:
    triplets = sample_triplets(sample, sample.queries["train"], seed=0)
    by_query: dict[str, list] = {}
    for t in triplets:
        by_query.setdefault(t.query, []).append(t)
    assert len(triplets) == 59
    for query, group in by_query.items():
        counts = sample.counts[query]
        top = max(counts.values())
        hard = [t for t in group if t.negative in counts]
        easy = [t for t in group if t.negative not in counts]
        assert all(counts[t.positive] == top == 5 for t in group)
        assert all(counts[t.negative] == 1 for t in hard)
        assert len(hard) == min(2, sum(1 for n in counts.values() if n < top))
        assert len(easy) == 3 and all(t.negative != query for t in easy)
    # the query 000a7757... has one count-5 and one count-1 candidate: one hard negative, three easy ones
    assert len(next(g for q, g in by_query.items() if q.startswith("000a7757"))) == 4


def test_same_seed_same_triplets_other_seed_other_triplets(sample: TrainingData) -> None:
    queries = sample.queries["train"]
    assert sample_triplets(sample, queries, seed=3) == sample_triplets(sample, queries, seed=3)
    assert sample_triplets(sample, queries, seed=3) != sample_triplets(sample, queries, seed=4)


def test_single_count_queries_and_untitled_or_unknown_papers_give_no_triplets(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    papers = {f"p{i}": f"title {i}" for i in range(30)} | {"untitled": ""}
    counts = {"p0": {"p1": 5, "p2": 5},                      # one count only: no triplets
              "p3": {"p4": 5, "untitled": 1, "p5": 1},       # the untitled hard negative is dropped
              "p6": {"p7": 5, "ghost": 1}}                   # 'ghost' is not in the metadata: dropped
    data = TrainingData.read(_write(tmp_path, counts, papers, ["p0", "p3", "p6", "p8"]))   # p8: no counts
    with caplog.at_level("WARNING", logger="scidocs_eval"):
        triplets = sample_triplets(data, data.queries["train"], seed=1)
    assert caplog.messages == [
        "7 triplets from 4 queries; left out: queries absent from data.json: 1 (first: p8); queries whose "
        "candidates share one count: 1 (first: p0); triplets with a paper absent from metadata.json: 1 (first: "
        "ghost); triplets with an untitled paper: 1 (first: untitled)"]
    caplog.clear()
    with caplog.at_level("INFO", logger="scidocs_eval"):    # the recipe's own rules alone: information
        sample_triplets(data, ["p0", "p3"], seed=1)
    assert [record.levelname for record in caplog.records] == ["INFO"]
    assert not [t for t in triplets if t.query == "p0"]
    assert len([t for t in triplets if t.query == "p3"]) == 4
    assert len([t for t in triplets if t.query == "p6"]) == 3
    assert all("untitled" not in (t.positive, t.negative) and t.negative != "ghost" for t in triplets)


def test_sampler_state_resumes_the_same_batches(sample: TrainingData) -> None:
    uninterrupted = TripletSampler(sample, seed=7)
    expected = [uninterrupted.next_batch(16) for _ in range(9)]      # 59 triplets: crosses two epochs
    first = TripletSampler(sample, seed=7)
    head = [first.next_batch(16) for _ in range(5)]
    resumed = TripletSampler(sample, seed=7)
    resumed.load_state_dict(first.state_dict())
    assert head + [resumed.next_batch(16) for _ in range(4)] == expected
    assert [len(b) for b in expected[:4]] == [16, 16, 16, 11] and resumed.epoch == 2
    assert expected[0] != expected[4]                                  # a new order in the second epoch


def test_sampler_state_from_another_seed_is_refused(sample: TrainingData) -> None:
    with pytest.raises(ScidocsEvalError, match="does not match this one .seed 1"):
        TripletSampler(sample, seed=1).load_state_dict(TripletSampler(sample, seed=2).state_dict())


def test_missing_or_malformed_training_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"data\.json: training file not found"):
        TrainingData.read(tmp_path)
    folder = _write(tmp_path / "bad", {"q": {"c": 5}}, {"q": "t"}, ["q"])
    (folder / "data.json").write_text('{"q": {"c": {"n": 5}}}')
    with pytest.raises(InputError, match="query 'q', candidate 'c': field 'count' is missing"):
        TrainingData.read(folder)
    folder = _write(tmp_path / "binary", {"q": {"c": 5}}, {"q": "t"}, ["q"])
    (folder / "train.txt").write_bytes(b"q\n\x80\xff\n")  # not UTF-8: one line naming the file and line
    with pytest.raises(InputError, match=r"train\.txt:2: byte 0x80 at column 1 is not UTF-8"):
        TrainingData.read(folder)


@pytest.mark.parametrize(("count", "message"), [
    (1.5, r"field 'count' is number 1\.5, expected an integer"),  # once truncated to 1 without a word
    ("5", r"field 'count' is string '5', expected an integer"),
    (None, r"field 'count' is null, expected an integer"),
    (True, r"field 'count' is boolean True, expected an integer")])
def test_training_reads_data_json_through_its_file_kind(count: object, message: str, tmp_path: Path) -> None:
    """SPECTER training and the audit read data.json through one reader (`formats.training_data.specter_counts`,
    the kind "SPECTER data.json" the row-schema fuzz test covers): a count that is not an integer is one line."""
    folder = _write(tmp_path, {"q": {"c": 5, "d": 1}}, {"q": "t", "c": "t", "d": "t"}, ["q"])
    (folder / "data.json").write_text(json.dumps({"q": {"c": {"count": 5}, "d": {"count": count}}}))
    with pytest.raises(InputError, match=r"data\.json: query 'q', candidate 'd': " + message):
        TrainingData.read(folder)


def test_training_reads_query_lists_through_their_file_kind(tmp_path: Path) -> None:
    """train.txt is an id list (the kind "id list"): two ids on a line are one line naming it, not two queries."""
    folder = _write(tmp_path, {"q": {"c": 5, "d": 1}}, {"q": "t", "c": "t", "d": "t"}, ["q"])
    (folder / "train.txt").write_text("q\n\nq c\n")
    with pytest.raises(InputError, match=r"train\.txt:3: expected one paper id a line \(field 'id'\), got 'q c'"):
        TrainingData.read(folder)


def test_a_split_without_triplets_is_an_error(tmp_path: Path) -> None:
    data = TrainingData.read(_write(tmp_path, {"a": {"b": 5}}, {"a": "t", "b": "t"}, ["a"]))
    with pytest.raises(ScidocsEvalError, match="no train triplets"):
        TripletSampler(data)
    with pytest.raises(ScidocsEvalError, match="split must be one of train, val, test"):
        TripletSampler(data, split="dev")
