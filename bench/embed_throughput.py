"""Papers/s of our encoder against a plain reference loop, same model and batch size, and max |difference|.

The reference: papers in file order, each batch padded to its longest text, no inference mode, no autocast.
    python bench/embed_throughput.py --papers 300 --max-length 256 --batch-size 32 [--precision bf16]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from scidocs_eval.baseline import read_corpus
from scidocs_eval.encoder import PRECISIONS, TransformerEncoder, choose_device, paper_text, pool, resolve_model

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "data" / "cora" / "papers.jsonl"


def reference_embed(texts: list[str], model_name: str, pooling: str, max_length: int, batch_size: int,
                    device: str) -> np.ndarray:
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(resolve_model(model_name))
    model = AutoModel.from_pretrained(resolve_model(model_name)).to(device).eval()
    parts = []
    for start in range(0, len(texts), batch_size):
        batch = tokenizer(texts[start:start + batch_size], padding=True, truncation=True, max_length=max_length,
                          return_tensors="pt").to(device)
        with torch.no_grad():
            parts.append(pool(model(**batch).last_hidden_state, batch["attention_mask"], pooling).float().cpu())
    return torch.cat(parts).numpy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default=str(DEFAULT_CORPUS), help="JSON lines {paper_id, title, abstract}")
    parser.add_argument("--papers", type=int, default=300)
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--pooling", default="cls", choices=("cls", "mean"))
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--device")
    parser.add_argument("--precision", default="auto", choices=PRECISIONS, help="our encoder's precision")
    args = parser.parse_args()

    papers = [p for p in read_corpus(args.corpus) if p.has_text][: args.papers]
    device = choose_device(args.device)
    encoder = TransformerEncoder(args.model, pooling=args.pooling, max_length=args.max_length,
                                 batch_size=args.batch_size, device=device, precision=args.precision)
    texts = [paper_text(p, encoder.separator) for p in papers]
    started = time.perf_counter()
    ours = encoder.encode(texts)
    ours_s = time.perf_counter() - started
    started = time.perf_counter()
    reference = reference_embed(texts, args.model, args.pooling, args.max_length, args.batch_size, device)
    reference_s = time.perf_counter() - started
    cores = len(os.sched_getaffinity(0))
    print(f"device {device} ({cores} CPU cores), model {args.model}, {len(papers)} papers, max_length "
          f"{args.max_length}, batch {args.batch_size}, our precision {args.precision}")
    print(f"ours:      {len(papers) / ours_s:8.1f} papers/s")
    print(f"reference: {len(papers) / reference_s:8.1f} papers/s")
    print(f"speed-up:  {reference_s / ours_s:8.2f}x   max |difference| {np.abs(ours - reference).max():.2e}")


if __name__ == "__main__":
    main()
