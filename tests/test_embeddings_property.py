"""Property-based tests of the embeddings reader (hypothesis).

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
from hypothesis import HealthCheck, example, given, settings
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
