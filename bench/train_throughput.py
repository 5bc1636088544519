"""Triplets/s of SPECTER training steps at 256 tokens (forward, backward, clipping, AdamW step).

The steps alone are timed (`TrainingHistory.step_seconds`); the whole run's rate is printed beside it.

    python bench/train_throughput.py                       # tiny BERT (2 layers, hidden 64) on CPU
    python bench/train_throughput.py --model-size base     # BERT-base-sized, random weights (for GPUs; bf16 on CUDA)
The model gets a WordPiece vocabulary learnt on the SPECTER sample; triplets come from the sample's train split.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import orjson

from scidocs_eval.training.specter import train_specter
from scidocs_eval.training.triplets import TrainingData, TripletSampler

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from builders import BERT_BASE_SIZE, build_small_bert  # noqa: E402  (test-only model builder)

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "specter-sample"
SIZES = {"tiny": dict(vocab_size=4000, hidden_size=64, layers=2, heads=2), "base": BERT_BASE_SIZE}


def profile_epoch(data_dir: str, out: Path, settings: dict) -> None:
    """One epoch under torch.profiler: the busiest device kernels, and device busy time against wall time."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    started = time.perf_counter()
    with profile(activities=activities) as profiler:
        history = train_specter(data_dir, out, epochs=1, **settings)
    wall = time.perf_counter() - started
    events = profiler.key_averages()
    sort_key = "self_device_time_total" if torch.cuda.is_available() else "self_cpu_time_total"
    print(events.table(sort_by=sort_key, row_limit=25, max_name_column_width=60))
    busy = sum(event.self_device_time_total for event in events) / 1e6
    print(f"profiled epoch: {history.steps} steps, wall {wall:.2f} s (steps alone {history.step_seconds:.2f} s, "
          f"with validation and loading), device kernels busy {busy:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA))
    parser.add_argument("--model-size", choices=sorted(SIZES), default="tiny")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=8, help="triplets per forward pass")
    parser.add_argument("--effective-batch-size", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--device")
    parser.add_argument("--profile", action="store_true",
                        help="after timing, profile one more epoch (torch.profiler) and print where the time goes")
    parser.add_argument("--warmup", action="store_true",
                        help="train one untimed epoch first in the same process (pays CUDA's start-up costs)")
    args = parser.parse_args()

    data = TrainingData.read(args.data_dir)
    triplets = len(TripletSampler(data))
    epochs = max(1, -(-args.steps * args.effective_batch_size // triplets))
    metadata = orjson.loads((Path(args.data_dir) / "metadata.json").read_bytes())
    texts = [f"{p['title']} {p.get('abstract') or ''}" for p in metadata.values()]
    with tempfile.TemporaryDirectory() as scratch:
        model = build_small_bert(texts, Path(scratch) / "model", **SIZES[args.model_size])
        settings = dict(base_model=str(model), batch_size=args.batch_size, max_length=args.max_length,
                        effective_batch_size=args.effective_batch_size, checkpoint_every=10**9, device=args.device,
                        progress=False)
        if args.warmup:
            train_specter(args.data_dir, Path(scratch) / "warm-up", epochs=1, **settings)
        started = time.perf_counter()
        history = train_specter(args.data_dir, Path(scratch) / "out", epochs=epochs, **settings)
        elapsed = time.perf_counter() - started
        if args.profile:
            profile_epoch(args.data_dir, Path(scratch) / "profiled", settings)
    print(f"{args.model_size} BERT, {history.steps} steps, {history.step_triplets} triplets, max_length "
          f"{args.max_length}, {len(os.sched_getaffinity(0))} CPU cores, device {args.device or 'auto'}")
    print(f"{history.step_triplets / history.step_seconds:.3g} triplets/s in the training steps "
          f"({history.step_triplets / elapsed:.3g} over the whole run, with loading, validation and checkpoints)")


if __name__ == "__main__":
    main()
