"""SPECTER training triplets (SPEC §7) from the official training files, seeded and resumable.

The files: `data.json` {query_id: {candidate_id: {"count": c}}} (c = 5: the query cites the candidate;
c = 1: a paper the query cites cites it), `metadata.json` {paper_id: {title, abstract}}, and
`train.txt` / `val.txt` / `test.txt` (one query id per line).

Per query, at most `hard_negatives + easy_negatives` triplets (2 + 3): each hard negative is a lower-count
candidate paired with a random highest-count candidate as positive; each easy negative is drawn uniformly from
the papers that are neither the query nor one of its candidates, also paired with a random positive. A query
whose candidates all share one count gives none. A triplet with a paper missing from the metadata or without
a title is dropped. As in the official pipeline, triplets are drawn once (from `seed`); each epoch then visits
them in a fresh seeded order. `state_dict()` holds where the sampler is, so a resumed run sees the same triplets.
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from scidocs_eval.errors import InputError, ScidocsEvalError
from scidocs_eval.formats.corpus import metadata_record
from scidocs_eval.formats.suite import METADATA, SPLITS, Paper
from scidocs_eval.formats.training_data import read_id_list, read_json_object, specter_counts

log = logging.getLogger("scidocs_eval")

SPECTER_FOLDER = "a SPECTER training folder has data.json, metadata.json and train.txt/val.txt/test.txt"


@dataclass(frozen=True)
class Triplet:
    query: str
    positive: str
    negative: str


@dataclass
class TrainingData:
    """The official training files, read and checked: counts per query, papers by id, query ids per split."""

    counts: dict[str, dict[str, int]]
    papers: dict[str, Paper]
    queries: dict[str, list[str]]

    @classmethod
    def read(cls, data_dir: str | os.PathLike[str]) -> TrainingData:
        data_dir = Path(data_dir)
        counts = specter_counts(data_dir / "data.json", read_json_object(data_dir / "data.json", SPECTER_FOLDER))
        metadata = read_json_object(data_dir / "metadata.json", SPECTER_FOLDER)
        checker = METADATA.checker(data_dir / "metadata.json")
        records = {pid: metadata_record(data_dir / "metadata.json", pid, meta, checker)
                   for pid, meta in metadata.items()}
        papers = {pid: Paper(pid, record["title"], record["abstract"]) for pid, record in records.items()}
        if not (data_dir / "train.txt").is_file():
            raise InputError(data_dir / "train.txt", "training queries file not found (one query id per line)")
        if not (data_dir / "val.txt").is_file():
            log.warning("%s not found: training WITHOUT validation (no validation loss is computed)",
                        data_dir / "val.txt")
        queries = {}
        for split in SPLITS:
            path = data_dir / f"{split}.txt"
            queries[split] = read_id_list(path) if path.is_file() else []
        return cls(counts, papers, queries)


def sample_triplets(data: TrainingData, queries: Sequence[str], seed: int = 0, hard_negatives: int = 2,
                    easy_negatives: int = 3) -> list[Triplet]:
    """The triplets of `queries` (SPEC §7), the same for the same seed; see the module docstring."""
    rng = random.Random(seed)
    pool = sorted(data.papers)
    usable = {pid for pid, paper in data.papers.items() if paper.title.strip()}
    triplets = []
    left_out: dict[str, list[str]] = {"queries absent from data.json": [],
                                      "queries whose candidates share one count": [],
                                      "triplets with a paper absent from metadata.json": [],
                                      "triplets with an untitled paper": []}
    for query in queries:
        candidates = data.counts.get(query)
        if candidates is None:
            left_out["queries absent from data.json"].append(query)
            continue
        if len(set(candidates.values())) < 2:
            left_out["queries whose candidates share one count"].append(query)
            continue
        top = max(candidates.values())
        positives = sorted(c for c, n in candidates.items() if n == top)
        hard = sorted(c for c, n in candidates.items() if n < top)
        drawn = rng.sample(hard, min(hard_negatives, len(hard)))
        excluded = (set(candidates) | {query}) & data.papers.keys()
        easy: list[str] = []
        while len(easy) < min(easy_negatives, len(pool) - len(excluded)):
            pick = rng.choice(pool)
            if pick not in excluded and pick not in easy:
                easy.append(pick)
        for negative in drawn + easy:
            triplet = Triplet(query, rng.choice(positives), negative)
            ids = (triplet.query, triplet.positive, triplet.negative)
            if set(ids) <= usable:
                triplets.append(triplet)
            elif unknown := [pid for pid in ids if pid not in data.papers]:
                left_out["triplets with a paper absent from metadata.json"].append(unknown[0])
            else:
                left_out["triplets with an untitled paper"].append(next(pid for pid in ids if pid not in usable))
    _log_left_out(len(queries), len(triplets), left_out)
    return triplets


def _log_left_out(queries: int, triplets: int, left_out: Mapping[str, list[str]]) -> None:
    """One line on what SPEC §7's rules left out; a warning when the files disagree about a paper or query."""
    parts = [f"{what}: {len(ids)} (first: {ids[0]})" for what, ids in left_out.items() if ids]
    if not parts:
        return
    files_disagree = left_out["queries absent from data.json"] or left_out[
        "triplets with a paper absent from metadata.json"]
    log.log(logging.WARNING if files_disagree else logging.INFO, "%d triplets from %d queries; left out: %s",
            triplets, queries, "; ".join(parts))


class TripletSampler:
    """Batches of training triplets, epoch after epoch, from a checkpointable position.

    Args:
        data: the training files (`TrainingData.read(dir)`).
        split: which query list to use ("train", "val" or "test").
        seed: fixes both the triplets and each epoch's order.
        shuffle: visit the triplets in a seeded random order per epoch (False: sampling order, for validation).
    """

    def __init__(self, data: TrainingData, split: str = "train", seed: int = 0, shuffle: bool = True,
                 hard_negatives: int = 2, easy_negatives: int = 3):
        if split not in SPLITS:
            raise ScidocsEvalError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
        self.data = data
        self.split = split
        self.seed = seed
        self.shuffle = shuffle
        self.triplets = sample_triplets(data, data.queries[split], seed, hard_negatives, easy_negatives)
        if not self.triplets:
            raise ScidocsEvalError(f"no {split} triplets: the {split} queries have no candidates with two "
                                   "different counts and titled papers")
        self.epoch = 0
        self.position = 0
        self._order: tuple[int, list[Triplet]] = (-1, [])

    def __len__(self) -> int:
        return len(self.triplets)

    def epoch_order(self, epoch: int) -> list[Triplet]:
        """The triplets in the order epoch `epoch` visits them."""
        if self._order[0] != epoch:
            order = list(self.triplets)
            if self.shuffle:
                random.Random(f"{self.seed}:{epoch}").shuffle(order)
            self._order = (epoch, order)
        return self._order[1]

    def next_batch(self, size: int) -> list[Triplet]:
        """The next `size` triplets of the current epoch (fewer at its end); moves on to the next epoch after."""
        batch = self.epoch_order(self.epoch)[self.position:self.position + size]
        self.position += len(batch)
        if self.position >= len(self.triplets):
            self.epoch, self.position = self.epoch + 1, 0
        return batch

    def state_dict(self) -> dict[str, int]:
        return {"seed": self.seed, "epoch": self.epoch, "position": self.position, "triplets": len(self.triplets)}

    def load_state_dict(self, state: Mapping[str, int]) -> None:
        if state["seed"] != self.seed or state["triplets"] != len(self.triplets):
            raise ScidocsEvalError(f"the checkpoint's sampler (seed {state['seed']}, {state['triplets']} triplets) "
                                   f"does not match this one (seed {self.seed}, {len(self.triplets)} triplets): "
                                   "resume with the same data and seed")
        self.epoch, self.position = int(state["epoch"]), int(state["position"])
