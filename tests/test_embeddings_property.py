"""Property-based tests of the embeddings reader (hypothesis), for JSON lines and for tables and arrays.

Random valid files (ids of any text or integers, either key name, repeats, empty embeddings, blank lines, numbers
written in several styles, any chunk size) must parse to exactly what a strict reference reading gives: Python's
json module line by line, each value rounded once to float32, the later of two lines with one id winning. A
random corruption of one line must be an error that names that line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import scidocs_eval.formats.embeddings as embeddings_module
from scidocs_eval.errors import InputError
from scidocs_eval.formats.embeddings import EmbeddingStore

EXAMPLES = int(os.environ.get("SCIDOCS_EVAL_HYPOTHESIS_EXAMPLES", "40"))
"""examples per property (40 keeps the default suite fast; set more for a deeper search)."""
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                          HealthCheck.too_slow])
FLOAT32_MAX = float(np.finfo(np.float32).max)

ids = st.one_of(st.text(min_size=1, max_size=6), st.integers(-10**6, 10**6), st.sampled_from(["a", "b", "c"]))
numbers = st.one_of(st.floats(-FLOAT32_MAX, FLOAT32_MAX, allow_nan=False), st.integers(-10**9, 10**9),
                    st.floats(-1.0, 1.0, allow_nan=False))
styles = st.sampled_from(["repr", "exp", "fixed", "json"])


def written(value: float | int, style: str) -> str:
    if isinstance(value, int) or style == "json":
        return json.dumps(value)
    return {"repr": repr(value), "exp": f"{value:.9e}", "fixed": f"{value:.6f}"}[style]


@st.composite
def embeddings_files(draw: st.DrawFn) -> tuple[bytes, list[int]]:
    """(file bytes, 1-based numbers of the lines that hold a record); at least one non-empty embedding."""
    dim = draw(st.integers(1, 5))
    count = draw(st.integers(1, 25))
    lines, record_lines = [], []
    for index in range(count):
        while draw(st.booleans()) and draw(st.booleans()):
            lines.append(draw(st.sampled_from(["", "  ", "\t"])))
        empty = index > 0 and draw(st.integers(0, 5)) == 0
        values = [] if empty else draw(st.lists(numbers, min_size=dim, max_size=dim))
        style = draw(styles)
        separator = draw(st.sampled_from([",", ", ", " ,  "]))
        key = draw(st.sampled_from(["paper_id", "doc_id"]))
        paper_id = json.dumps(draw(ids), ensure_ascii=draw(st.booleans()))
        body = separator.join(written(v, style) for v in values)
        record = (f'{{"{key}": {paper_id}, "embedding": [{body}]}}' if draw(st.booleans())
                  else f'{{"embedding": [{body}], "{key}": {paper_id}}}')
        lines.append(record)
        record_lines.append(len(lines))
    text = "\n".join(lines) + ("\n" if draw(st.booleans()) else "")
    return text.encode("utf-8"), record_lines


def reference_reading(data: bytes) -> tuple[list[str], np.ndarray, np.ndarray, int]:
    """(ids in order of first appearance, float32 matrix, empty mask, repeats) by the plainest possible reading."""
    last: dict[str, list[float]] = {}
    lines = dim = 0
    for raw in data.decode("utf-8").split("\n"):
        if not raw.strip():
            continue
        record = json.loads(raw)
        paper_id = record.get("paper_id", record.get("doc_id"))
        last[str(paper_id)] = record["embedding"]
        lines += 1
        dim = dim or len(record["embedding"])
    matrix = np.zeros((len(last), dim), dtype=np.float32)
    for row, values in enumerate(last.values()):
        if values:
            matrix[row] = np.array([float(v) for v in values], dtype=np.float64).astype(np.float32)
    empty = np.array([not v for v in last.values()])
    return list(last), matrix, empty, lines - len(last)


def load(tmp_path: Path, data: bytes, chunk_bytes: int, dtype: type = np.float32) -> EmbeddingStore:
    path = tmp_path / "e.jsonl"
    path.write_bytes(data)
    with mock.patch.object(embeddings_module, "_CHUNK_BYTES", chunk_bytes):
        return EmbeddingStore.load(path, cache=False, progress=False, dtype=dtype)


@SETTINGS
@given(file=embeddings_files(), chunk_bytes=st.sampled_from([1, 64, 1024, 1 << 24]))
def test_random_valid_files_parse_to_the_reference_reading(tmp_path: Path, file: tuple[bytes, list[int]],
                                                           chunk_bytes: int) -> None:
    data, _ = file
    ids, matrix, empty, repeats = reference_reading(data)
    store = load(tmp_path, data, chunk_bytes)
    assert store.ids == ids
    assert store.matrix.dtype == np.float32
    np.testing.assert_array_equal(store.matrix, matrix)
    np.testing.assert_array_equal(store.empty, empty)
    assert store.duplicates == repeats


CORRUPTIONS = {
    "cut": lambda line: line[:-1],
    "text_value": lambda line: line.replace('"embedding": [', '"embedding": ["x", '),
    "nan": lambda line: line.replace('"embedding": [', '"embedding": [NaN, '),
    "beyond_float32": lambda line: line.replace('"embedding": [', '"embedding": [1e39, '),
    "nested": lambda line: line.replace('"embedding": [', '"embedding": [[1], '),
    "boolean": lambda line: line.replace('"embedding": [', '"embedding": [true, '),
    "no_embedding_key": lambda line: line.replace('"embedding"', '"embeddings"'),
    "no_id_key": lambda line: line.replace('"paper_id"', '"id"').replace('"doc_id"', '"id"'),
    "not_an_object": lambda line: "[1, 2]",
}


@SETTINGS
@given(file=embeddings_files(), corruption=st.sampled_from(sorted(CORRUPTIONS)), pick=st.integers(0, 10**6),
       chunk_bytes=st.sampled_from([64, 1 << 24]))
@example(file=(b'{"embedding": [0.0], "paper_id": "0"}', [1]), corruption="not_an_object", pick=0, chunk_bytes=64)
def test_a_corrupt_line_is_reported_with_its_number(tmp_path: Path, file: tuple[bytes, list[int]], corruption: str,
                                                    pick: int, chunk_bytes: int) -> None:
    data, record_lines = file
    lines = data.decode("utf-8").split("\n")
    line_number = record_lines[pick % len(record_lines)]
    corrupted = CORRUPTIONS[corruption](lines[line_number - 1])
    lines[line_number - 1] = corrupted
    with pytest.raises(InputError) as raised:
        load(tmp_path, "\n".join(lines).encode("utf-8"), chunk_bytes)
    assert raised.value.line == line_number, str(raised.value)


# --- adversarial structure: only the top-level "embedding" key's value is ever read (issue 24, item 3) ---------

json_leaves = st.one_of(st.integers(-5, 5), st.floats(-2, 2, allow_nan=False), st.booleans(), st.none(),
                        st.sampled_from(["embedding", '"embedding": [1, 2]', "[0.5]", "\\", "embedding\"", "é"]))
json_values = st.recursive(json_leaves, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["embedding", "shape", "x", "paper_id"]), inner,
                                                 max_size=3)), max_leaves=8)
spaces = st.sampled_from(["", " ", "  ", "\t"])


@st.composite
def adversarial_files(draw: st.DrawFn) -> bytes:
    """Lines with other keys before and after (lists, nested objects holding an 'embedding' key, strings with the
    word embedding and escapes), any key order, whitespace between every token, escaped ids."""
    dim = draw(st.integers(1, 4))
    lines = []
    for index in range(draw(st.integers(1, 12))):
        values = [] if index and draw(st.integers(0, 5)) == 0 else draw(st.lists(numbers, min_size=dim, max_size=dim))
        members = {"paper_id": draw(ids), "embedding": values}
        for key in draw(st.lists(st.sampled_from(["kind", "shape", "meta", "note", "embeddings", "doc"]),
                                 unique=True, max_size=4)):
            members[key] = draw(json_values)
        keys = draw(st.permutations(list(members)))
        gap = draw(spaces)
        parts = [f"{json.dumps(key)}{draw(spaces)}:{draw(spaces)}"
                 f"{json.dumps(members[key], ensure_ascii=draw(st.booleans()))}" for key in keys]
        lines.append("{" + gap + f"{draw(spaces)},{draw(spaces)}".join(parts) + draw(spaces) + "}")
    return ("\n".join(lines) + "\n").encode("utf-8")


@SETTINGS
@given(data=adversarial_files(), chunk_bytes=st.sampled_from([64, 1 << 24]))
def test_only_the_top_level_embedding_is_read_whatever_else_a_line_holds(tmp_path: Path, data: bytes,
                                                                        chunk_bytes: int) -> None:
    ids, matrix, empty, repeats = reference_reading(data)
    for dtype in (np.float32, np.float64):
        store = load(tmp_path, data, chunk_bytes, dtype=dtype)
        assert store.ids == ids and store.duplicates == repeats
        np.testing.assert_array_equal(store.empty, empty)
        if dtype == np.float32:
            np.testing.assert_array_equal(store.matrix, matrix)


# --- tables and arrays: random valid ones round-trip exactly, random corruptions name their row --------------

table_kinds = st.sampled_from(["parquet", "feather", "npz"])


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[str], list[list[float]]]:
    dim = draw(st.integers(1, 5))
    count = draw(st.integers(1, 20))
    text_ids = [draw(st.text(min_size=1, max_size=6)) for _ in range(count)]
    vectors = [[] if row and draw(st.integers(0, 5)) == 0 else
               draw(st.lists(st.floats(-FLOAT32_MAX, FLOAT32_MAX, allow_nan=False, width=32), min_size=dim,
                             max_size=dim)) for row in range(count)]
    return text_ids, vectors


def write_table(path: Path, kind: str, paper_ids: list[object], vectors: list[list[float] | None]) -> Path:
    import pyarrow as pa
    import pyarrow.feather as feather
    import pyarrow.parquet as pq

    if kind == "npz":
        dim = max(len(v or []) for v in vectors)
        matrix = np.array([v if v else [0.0] * dim for v in vectors], dtype=np.float64)
        with open(path, "wb") as handle:
            np.savez(handle, ids=np.array(paper_ids, dtype=object if None in paper_ids else None),
                     embeddings=matrix, empty=np.array([not v for v in vectors]))
        return path
    table = pa.table({"paper_id": pa.array(paper_ids), "embedding": pa.array(vectors, pa.list_(pa.float64()))})
    (pq.write_table if kind == "parquet" else feather.write_feather)(table, path)
    return path


@SETTINGS
@given(table=tables(), kind=table_kinds)
def test_random_valid_tables_read_as_their_json_lines_do(tmp_path: Path, table: tuple[list[str], list[list[float]]],
                                                        kind: str) -> None:
    paper_ids, vectors = table
    lines = "".join(json.dumps({"paper_id": i, "embedding": v}) + "\n" for i, v in zip(paper_ids, vectors))
    assume(any(vectors))
    assume(kind != "npz" or not any(str(i).endswith("\x00") for i in paper_ids))  # NumPy strips them; we refuse
    ids_, matrix, empty, repeats = reference_reading(lines.encode("utf-8"))
    store = EmbeddingStore.load(write_table(tmp_path / f"e.{kind}", kind, paper_ids, vectors), cache=False,
                                progress=False)
    assert store.ids == ids_ and store.duplicates == repeats
    np.testing.assert_array_equal(store.matrix, matrix)
    np.testing.assert_array_equal(store.empty, empty)


TABLE_CORRUPTIONS = {
    "nan": lambda ids, vectors, row: (ids, [*vectors[:row], [float("nan")] * len(vectors[0]), *vectors[row + 1:]]),
    "beyond_float32": lambda ids, vectors, row: (ids, [*vectors[:row], [1e39] * len(vectors[0]), *vectors[row + 1:]]),
    "ragged": lambda ids, vectors, row: (ids, [*vectors[:row], vectors[0] + [1.0], *vectors[row + 1:]]),
}


@SETTINGS
@given(table=tables(), kind=st.sampled_from(["parquet", "feather"]),
       corruption=st.sampled_from(sorted(TABLE_CORRUPTIONS)), pick=st.integers(0, 10**6))
def test_a_corrupt_row_is_reported_with_its_number(tmp_path: Path, table: tuple[list[str], list[list[float]]],
                                                   kind: str, corruption: str, pick: int) -> None:
    paper_ids, vectors = table
    assume(vectors[0])
    row = pick % len(vectors)
    assume(corruption != "ragged" or row > 0)
    paper_ids, vectors = TABLE_CORRUPTIONS[corruption](paper_ids, vectors, row)
    with pytest.raises(InputError) as raised:
        EmbeddingStore.load(write_table(tmp_path / f"e.{kind}", kind, paper_ids, vectors), cache=False,
                            progress=False)
    assert raised.value.row == row + 1, str(raised.value)
