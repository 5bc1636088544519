"""Cold `scidocs-eval run` at SciDocs scale from JSON lines, Parquet and .npz; and JSON lines parsers compared.

Builds (once, under bench/out/, with bench_run.py's builder) the SciDocs-scale synthetic suite and 768-d
embeddings of the papers the six non-recommendation tasks score (JSON lines), converts them with
`scidocs-eval convert` into Parquet and .npz, then:

1. parses the JSON lines file with each candidate parser, in this process, and checks that each gives a matrix
   byte-identical to the one `EmbeddingStore.load` gives (float32): today's reader (orjson, in blocks, worker
   processes on large files), polars' NDJSON reader, pyarrow's JSON reader, and the pandas path the reader used
   before (the number lists of every line through pandas' C CSV parser);
2. loads each kind in a fresh process (time and peak resident memory of the reader alone);
3. runs `scidocs-eval run --no-cache` cold, in a fresh process, once per kind, and prints its wall time, the time
   it spent loading the embeddings (the results file's `timings.loading_embeddings`) and the process's peak
   resident memory.

    python bench/bench_embeddings_formats.py [--dim 768] [--seed 0] [--skip-parsers] [--skip-runs]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from scidocs_eval.formats.embeddings import EmbeddingStore
from scidocs_eval.formats.embeddings_writers import convert_embeddings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_run import OUT, TASKS, build  # noqa: E402 (the sibling bench script's suite and embeddings)


def polars_ndjson(path: Path) -> np.ndarray:
    import polars as pl

    frame = pl.read_ndjson(path, schema={"paper_id": pl.String, "embedding": pl.List(pl.Float64)})
    return frame["embedding"].explode().to_numpy().reshape(len(frame), -1).astype(np.float32)


def pyarrow_json(path: Path) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.json as pj

    schema = pa.schema([("paper_id", pa.string()), ("embedding", pa.list_(pa.float64()))])
    table = pj.read_json(path, parse_options=pj.ParseOptions(explicit_schema=schema),
                         read_options=pj.ReadOptions(block_size=1 << 26))
    column = table.column("embedding").combine_chunks()
    return column.flatten().to_numpy().reshape(len(column), -1).astype(np.float32)


def pandas_number_lists(path: Path) -> np.ndarray:
    """The reader's previous bulk path: the text between each line's '"embedding": [' and ']' through read_csv."""
    import pandas as pd

    bodies = re.findall(rb'"embedding":\[([^\]]*)\]', path.read_bytes())
    values = pd.read_csv(io.BytesIO(b"\n".join(bodies)), header=None, dtype=np.float64, engine="c").to_numpy()
    return values.astype(np.float32)


def todays_reader(path: Path) -> np.ndarray:
    return EmbeddingStore.load(path, cache=False, progress=False).matrix


PARSERS: dict[str, Callable[[Path], np.ndarray]] = {
    "scidocs-eval (orjson blocks)": todays_reader,
    "polars read_ndjson": polars_ndjson,
    "pyarrow read_json": pyarrow_json,
    "pandas read_csv of the lists (before)": pandas_number_lists,
}


def compare_parsers(jsonl: Path) -> None:
    reference = todays_reader(jsonl)
    print("\nJSON lines parse, float32 matrix (best of 1 on a loaded machine):")
    print("| parser | seconds | byte-identical to the reader's matrix |\n|---|---|---|")
    for name, parse in PARSERS.items():
        start = time.perf_counter()
        matrix = parse(jsonl)
        seconds = time.perf_counter() - start
        same = matrix.shape == reference.shape and matrix.tobytes() == reference.tobytes()
        print(f"| {name} | {seconds:.1f} | {'yes' if same else 'NO'} |", flush=True)
        del matrix


def load_only(embeddings: Path) -> tuple[float, float]:
    """(seconds, peak resident MiB) of a fresh process that only loads `embeddings` (no parse cache)."""
    code = ("import sys, time; from scidocs_eval.formats.embeddings import EmbeddingStore; t = time.perf_counter(); "
            "EmbeddingStore.load(sys.argv[1], cache=False, progress=False); print(time.perf_counter() - t)")
    with tempfile.TemporaryFile("w+") as output:
        process = subprocess.Popen([sys.executable, "-c", code, str(embeddings)], stdout=output)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = status
        if status:
            raise SystemExit(f"loading {embeddings} failed ({status})")
        output.seek(0)
        return float(output.read()), usage.ru_maxrss / 1024


def cold_run(suite_root: Path, embeddings: Path) -> tuple[float, float, float]:
    """(wall seconds, seconds loading embeddings, peak resident MiB) of one run in a fresh process."""
    with tempfile.TemporaryDirectory() as scratch:
        results = Path(scratch) / "r.json"
        env = {**os.environ, "SCIDOCS_EVAL_CACHE": scratch, "SCIDOCS_EVAL_QUIET": "1"}
        start = time.perf_counter()
        process = subprocess.Popen([sys.executable, "-m", "scidocs_eval.cli", "run", "--embeddings", str(embeddings),
                                    "--data", str(suite_root), "--tasks", TASKS, "--no-cache", "--output",
                                    str(results)], env=env, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        if status:
            raise SystemExit(f"run on {embeddings} failed ({status})")
        loading = json.loads(results.read_text())["timings"]["loading_embeddings"]
    return wall, loading, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-parsers", action="store_true", help="do not compare the JSON lines parsers")
    parser.add_argument("--skip-runs", action="store_true", help="do not time the cold runs")
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    suite, jsonl = build(args.dim, args.seed)
    files = {"JSON lines": jsonl}
    for suffix in (".parquet", ".npz"):
        target = jsonl.with_suffix(suffix)
        if not target.exists():
            convert_embeddings(jsonl, target, progress=False)
        files[suffix[1:]] = target
    load = os.getloadavg()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load average {load[0]:.1f}/{load[1]:.1f}; {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC")
    print(f"suite: {suite.root}")
    for kind, path in files.items():
        print(f"{kind}: {path} ({path.stat().st_size / 1e6:.0f} MB)")
    if not args.skip_parsers:
        compare_parsers(jsonl)
    print("\nloading only (EmbeddingStore.load, no parse cache), fresh process each:")
    print("| embeddings | load s | peak memory MiB |\n|---|---|---|")
    for kind, path in files.items():
        seconds, peak = load_only(path)
        print(f"| {kind} | {seconds:.1f} | {peak:.0f} |", flush=True)
    if args.skip_runs:
        return
    print(f"\ncold `run --no-cache --tasks {TASKS}`, fresh process each:")
    print("| embeddings | file MB | run s | loading embeddings s | peak memory MiB |\n|---|---|---|---|---|")
    for kind, path in files.items():
        wall, loading, peak = cold_run(suite.root, path)
        print(f"| {kind} | {path.stat().st_size / 1e6:.0f} | {wall:.1f} | {loading:.1f} | {peak:.0f} |", flush=True)


if __name__ == "__main__":
    main()
