"""Time the typed row checks on a corpus of SciDocs' size: the readers of a BEIR corpus (JSON lines, row by row)
and of an HF parquet corpus (checked column by column), and the HF clustering row lists.

    python bench/row_schema_speed.py --documents 200000

Run it from a checkout to time that checkout's readers (the same functions exist before and after the row
schemas: `PYTHONPATH=/path/to/other/checkout python bench/row_schema_speed.py` times the other one). Prints the
best of `--repeats` wall times per reader.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def _best(function, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    import orjson
    import pyarrow as pa
    import pyarrow.parquet as pq

    import scidocs_eval
    from scidocs_eval.formats import retrieval

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rows = [{"_id": f"doc{i:07d}", "title": f"A title of paper {i}",
             "text": f"The abstract of paper {i}, a few sentences long. " * 6} for i in range(args.documents)]
    with tempfile.TemporaryDirectory() as folder:
        jsonl = Path(folder, "corpus.jsonl")
        jsonl.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
        Path(folder, "corpus").mkdir()
        pq.write_table(pa.Table.from_pylist(rows), Path(folder, "corpus", "test-00000-of-00001.parquet"))
        print(f"checkout: {Path(scidocs_eval.__file__).parents[1]}; {args.documents} documents, best of "
              f"{args.repeats}")
        beir = _best(lambda: retrieval._read_beir_corpus(jsonl), args.repeats)
        parquet = _best(lambda: retrieval._parquet_corpus(Path(folder, "corpus"), "test"), args.repeats)
        print(f"BEIR corpus (JSON lines): {beir:.2f} s ({args.documents / beir:,.0f} rows/s)")
        print(f"HF parquet corpus:        {parquet:.2f} s ({args.documents / parquet:,.0f} rows/s)")


if __name__ == "__main__":
    main()
