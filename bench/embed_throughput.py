"""Papers/s of our encoder against a plain reference loop, same model and batch size, and max |difference|.

The reference: papers in file order, each batch padded to its longest text, no inference mode, no autocast.
Both load their model and run a warm-up batch before they are timed; then each side runs `--repeats` times,
alternating, and the medians are reported (a shared machine's slow spells hit both).
    python bench/embed_throughput.py --papers 300 --max-length 256 --batch-size 32 [--precision bf16]
    python bench/embed_throughput.py --corpus scidocs    # the 400 real SciDocs papers of ../shared/data
    python bench/embed_throughput.py --model bert-base-random --device cuda   # BERT-base-sized, random weights

The default corpus is Cora's papers; `--corpus scidocs` reads the two 200-paper samples of the SciDocs
evaluation metadata in ../shared/data/scidocs-metadata-sample (real title/abstract lengths: 15% have no
abstract), in file order.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from scidocs_eval.formats.corpus import paper_text, read_papers
from scidocs_eval.formats.suite import Paper
from scidocs_eval.models.encoder import PRECISIONS, TransformerEncoder, choose_device, pool, resolve_model

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from builders import BERT_BASE_SIZE, build_small_bert  # noqa: E402  (test-only model builder)

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
DEFAULT_CORPUS = SHARED_DATA / "cora" / "papers.jsonl"


def load_papers(corpus: str) -> list[Paper]:
    """Papers of a JSON lines corpus, or of the SciDocs metadata samples for "scidocs"."""
    if corpus != "scidocs":
        return read_papers(corpus)
    import pandas as pd

    samples = sorted((SHARED_DATA / "scidocs-metadata-sample").glob("*.tsv"))
    if not samples:
        raise SystemExit(f"no SciDocs metadata samples under {SHARED_DATA / 'scidocs-metadata-sample'}")
    table = pd.concat([pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False) for path in samples])
    return [Paper(row.doc_id, row.title, row.abstract) for row in table.itertuples()]


def load_reference(model_name: str, device: str) -> tuple:
    """(tokenizer, model in eval mode) for the plain loop, loaded outside its timing as ours is."""
    from transformers import AutoModel, AutoTokenizer

    path = resolve_model(model_name)
    return AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path).to(device).eval()


def reference_embed(texts: list[str], tokenizer: object, model: object, pooling: str, max_length: int,
                    batch_size: int, device: str) -> np.ndarray:
    """The plain loop: file order, each batch padded to its longest text, `no_grad` (not inference mode)."""
    import torch

    parts = []
    for start in range(0, len(texts), batch_size):
        batch = tokenizer(texts[start:start + batch_size], padding=True, truncation=True, max_length=max_length,
                          return_tensors="pt").to(device)
        with torch.no_grad():
            parts.append(pool(model(**batch).last_hidden_state, batch["attention_mask"], pooling).float().cpu())
    return torch.cat(parts).numpy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default=str(DEFAULT_CORPUS),
                        help="JSON lines {paper_id, title, abstract}, or 'scidocs' for the SciDocs metadata samples")
    parser.add_argument("--papers", type=int, default=300)
    parser.add_argument("--model", default="all-MiniLM-L6-v2",
                        help="a checkpoint, or 'bert-base-random' for a BERT-base-sized model with random weights "
                        "(offline; it computes as fast as a trained one)")
    parser.add_argument("--pooling", default="cls", choices=("cls", "mean"))
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--device")
    parser.add_argument("--precision", default="auto", choices=PRECISIONS, help="our encoder's precision")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each side, alternating; medians")
    parser.add_argument("--compare-cpu", action="store_true",
                        help="also embed on the CPU in float32 and print the max difference from ours")
    args = parser.parse_args()

    papers = [p for p in load_papers(args.corpus) if p.has_text][: args.papers]
    checkpoint = args.model
    if args.model == "bert-base-random":
        scratch = tempfile.TemporaryDirectory(prefix="bert-base-random-")  # removed when the process exits
        checkpoint = str(build_small_bert([paper_text(p, " ") for p in papers], scratch.name, **BERT_BASE_SIZE))
    device = choose_device(args.device)
    encoder = TransformerEncoder(checkpoint, pooling=args.pooling, max_length=args.max_length,
                                 batch_size=args.batch_size, device=device, precision=args.precision)
    texts = [paper_text(p, encoder.separator) for p in papers]
    tokenizer, model = load_reference(checkpoint, device)
    warm_up = texts[: args.batch_size]  # the first forward pass of a process pays one-time set-up costs
    encoder.encode(warm_up)
    reference_embed(warm_up, tokenizer, model, args.pooling, args.max_length, args.batch_size, device)
    ours_s, reference_s = [], []
    for _ in range(args.repeats):  # alternate the two, so a slow spell of a shared machine hits both
        started = time.perf_counter()
        ours = encoder.encode(texts)
        ours_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        reference = reference_embed(texts, tokenizer, model, args.pooling, args.max_length, args.batch_size, device)
        reference_s.append(time.perf_counter() - started)
    ratios = np.array(reference_s) / np.array(ours_s)
    cores = len(os.sched_getaffinity(0))
    print(f"device {device} ({cores} CPU cores), model {args.model}, {len(papers)} papers, max_length "
          f"{args.max_length}, batch {args.batch_size}, our precision {args.precision}")
    print(f"ours:      {len(papers) / np.median(ours_s):8.1f} papers/s (median of {args.repeats})")
    print(f"reference: {len(papers) / np.median(reference_s):8.1f} papers/s")
    print(f"speed-up:  {np.median(reference_s) / np.median(ours_s):8.2f}x (per repeat {ratios.min():.2f}-"
          f"{ratios.max():.2f}x)   max |difference| {np.abs(ours - reference).max():.2e}")
    if args.compare_cpu:
        cpu = TransformerEncoder(checkpoint, pooling=args.pooling, max_length=args.max_length,
                                 batch_size=args.batch_size, device="cpu", precision="fp32").encode(texts)
        print(f"ours vs a float32 CPU run of our encoder: max |difference| {np.abs(ours - cpu).max():.2e}")


if __name__ == "__main__":
    main()
