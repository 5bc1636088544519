"""The embedding store: keys, ids as strings, empty embeddings, repeats, every bad input, the parse cache."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import orjson
import pytest

import scidocs_eval.formats.embeddings as embeddings_module
from scidocs_eval.errors import InputError
from scidocs_eval.formats.embeddings import (
    EMPTY,
    MISSING,
    PRESENT,
    EmbeddingStore,
    format_embedding_line,
    wait_for_cache_writes,
)
from scidocs_eval.formats.embeddings_files import EmbeddingsInput


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_loads_both_key_names_numeric_ids_empty_and_repeats(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "e.jsonl", [
        '{"paper_id": "a", "embedding": [1, 2]}',
        "",
        '{"doc_id": "b", "embedding": [3.5, -4]}',
        '{"paper_id": 123, "embedding": [5, 6]}',
        '{"paper_id": "e", "embedding": []}',
        "   ",
        '{"paper_id": "a", "embedding": [7, 8]}',
    ])
    store = EmbeddingStore.load(path)
    assert store.ids == ["a", "b", "123", "e"]
    assert store.dim == 2 and store.matrix.dtype == np.float32
    np.testing.assert_array_equal(store.matrix, [[7, 8], [3.5, -4], [5, 6], [0, 0]])
    assert store.empty.tolist() == [False, False, False, True]
    assert store.duplicates == 1
    assert "123" in store and 123 not in store
    assert store.status(["a", "e", "zzz", "123"]).tolist() == [PRESENT, EMPTY, MISSING, PRESENT]
    np.testing.assert_array_equal(store.vectors(["zzz", "b"]), [[0, 0], [3.5, -4]])
    assert store.rows(["b", "nope"]).tolist() == [1, -1]


def test_last_line_without_newline_is_read(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_bytes(b'{"paper_id": "a", "embedding": [1]}\n{"paper_id": "b", "embedding": [2]}')
    assert EmbeddingStore.load(path).ids == ["a", "b"]


GOOD = '{"paper_id": "ok", "embedding": [1.0, 2.0]}'


@pytest.mark.parametrize("bad_line, message", [
    ('{"paper_id": "x", "embedding": [1.0, 2.0]', "malformed JSON"),
    ("[1, 2]", "expected a JSON object, got list"),
    ('{"id": "x", "embedding": [1.0, 2.0]}', "missing key 'paper_id' (or 'doc_id')"),
    ('{"paper_id": "x", "vector": [1.0, 2.0]}', "paper 'x': missing key 'embedding'"),
    ('{"paper_id": "x", "embedding": "1.0 2.0"}', "paper 'x': 'embedding' must be a list, got str"),
    ('{"paper_id": "x", "embedding": [1.0, "2.0"]}', "paper 'x': embedding has a non-numeric value '2.0'"),
    ('{"paper_id": "x", "embedding": [1.0, true]}', "paper 'x': embedding has a non-numeric value True"),
    ('{"paper_id": "x", "embedding": [false, 1.0]}', "paper 'x': embedding has a non-numeric value False"),
    ('{"paper_id": "x", "embedding": [1.0, null]}', "paper 'x': embedding has a non-numeric value None"),
    ('{"paper_id": "x", "embedding": [NaN, 2.0]}', "paper 'x': embedding value 0 is nan (NaN and infinity"),
    ('{"paper_id": "x", "embedding": [1.0, -Infinity]}', "paper 'x': embedding value 1 is -inf"),
    ('{"paper_id": "x", "embedding": [[1.0], [2.0]]}', "paper 'x': embedding must be a flat list of numbers"),
    ('{"paper_id": "x", "embedding": [[1.0], 2.0]}', "paper 'x': embedding must be a flat list of numbers"),
    ('{"paper_id": "x", "embedding": [1.0, 2.0, 3.0]}',
     "paper 'x': embedding has 3 values, but line 1 set the dimension to 2"),
    ('{"paper_id": true, "embedding": [1.0, 2.0]}', "paper id must be a string, got True"),
])
def test_bad_line_names_file_and_line(tmp_path: Path, bad_line: str, message: str) -> None:
    path = write_lines(tmp_path / "bad.jsonl", [GOOD, "", bad_line, GOOD])
    with pytest.raises(InputError) as caught:
        EmbeddingStore.load(path, cache=False)
    assert str(caught.value).startswith(f"{path}:3: ")
    assert message in str(caught.value)
    assert caught.value.line == 3 and caught.value.path == str(path)


@pytest.mark.parametrize("text, message", [
    ("", "no embeddings in file (it is empty)"),
    ("\n  \n", "no embeddings in file (it is empty)"),
    ('{"paper_id": "a", "embedding": []}\n{"paper_id": "b", "embedding": []}\n',
     "every embedding in the file is empty, so there is no dimension"),
])
def test_file_without_usable_embeddings(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        EmbeddingStore.load(path)
    assert str(caught.value) == f"{path}: {message}"


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        EmbeddingStore.load(tmp_path / "absent.jsonl")
    assert str(caught.value) == f"{tmp_path / 'absent.jsonl'}: embeddings file not found"


def test_from_mapping_flags_empty_and_checks_dimension() -> None:
    store = EmbeddingStore.from_mapping({"a": [1.0, 2.0], 7: [], "c": np.array([0.5, 0.25])})
    assert store.ids == ["a", "7", "c"] and store.empty.tolist() == [False, True, False]
    assert store.source is None and store.sha256 is None
    with pytest.raises(InputError, match=r"<memory>:2: paper 'b': embedding has 1 values, but line 1"):
        EmbeddingStore.from_mapping({"a": [1.0, 2.0], "b": [1.0]})


def cache_files() -> list[Path]:
    return sorted((Path(os.environ["SCIDOCS_EVAL_CACHE"]) / "embeddings").glob("*.npy"))


def assert_same_store(first: EmbeddingStore, second: EmbeddingStore) -> None:
    assert first.ids == second.ids and first.duplicates == second.duplicates and first.sha256 == second.sha256
    np.testing.assert_array_equal(first.matrix, second.matrix)
    np.testing.assert_array_equal(first.empty, second.empty)
    assert first.matrix.dtype == second.matrix.dtype


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files `EmbeddingStore.load` parsed (not served from the cache), in order."""
    parsed: list[Path] = []
    real_parse = embeddings_module._parse_json_lines

    def counting_parse(source: EmbeddingsInput, *args: object) -> EmbeddingStore:
        parsed.append(source.path)
        return real_parse(source, *args)

    monkeypatch.setattr(embeddings_module, "_parse_json_lines", counting_parse)
    return parsed


def test_cache_is_reused_and_invalidated_by_changes(tmp_path: Path, parses: list[Path]) -> None:
    path = write_lines(tmp_path / "e.jsonl", ['{"paper_id": "a", "embedding": [1, 2]}',
                                              '{"paper_id": "b", "embedding": []}',
                                              '{"paper_id": "a", "embedding": [3, 4]}'])
    assert cache_files() == []
    first = EmbeddingStore.load(path)
    wait_for_cache_writes()
    assert len(cache_files()) == 1 and len(parses) == 1
    second = EmbeddingStore.load(path)
    assert len(parses) == 1 and second.repeated == ["a"]
    assert_same_store(first, second)
    # Rewriting the file (new size and mtime) makes a new entry and the new content is parsed.
    write_lines(path, ['{"paper_id": "a", "embedding": [5, 6]}', '{"paper_id": "c", "embedding": [7, 8]}'])
    third = EmbeddingStore.load(path)
    assert third.ids == ["a", "c"] and third.matrix.tolist() == [[5, 6], [7, 8]] and len(parses) == 2
    wait_for_cache_writes()
    assert len(cache_files()) == 2
    # Touching alone (same bytes, new mtime) also invalidates.
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert_same_store(third, EmbeddingStore.load(path))
    wait_for_cache_writes()
    assert len(cache_files()) == 3 and len(parses) == 3


@pytest.mark.parametrize("replace", ["in_place", "rename"])
def test_same_size_and_mtime_rewrite_is_parsed_again(tmp_path: Path, replace: str) -> None:
    """`cp -p`, `rsync -a`, `touch -d`: new bytes, same size and mtime. The old matrix and sha256 must not come
    back (the old key was path + size + mtime)."""
    path = write_lines(tmp_path / "e.jsonl", ['{"paper_id": "a", "embedding": [1, 2]}'])
    old = EmbeddingStore.load(path)
    wait_for_cache_writes()
    stat = path.stat()
    new_bytes = b'{"paper_id": "a", "embedding": [7, 2]}\n'
    if replace == "in_place":
        path.write_bytes(new_bytes)
    else:
        (tmp_path / "tmp").write_bytes(new_bytes)
        os.replace(tmp_path / "tmp", path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns
    new = EmbeddingStore.load(path)
    assert new.matrix.tolist() == [[7, 2]]
    assert new.sha256 == hashlib.sha256(new_bytes).hexdigest() != old.sha256


def only_entry() -> tuple[Path, Path]:
    wait_for_cache_writes()
    (matrix_file,) = cache_files()
    return matrix_file, matrix_file.with_suffix(".json")


def edit_meta(meta_file: Path, **changes: object) -> None:
    meta_file.write_bytes(orjson.dumps({**orjson.loads(meta_file.read_bytes()), **changes}))


CORRUPTIONS = {
    "empty_npy": lambda matrix_file, meta_file: matrix_file.write_bytes(b""),
    "meta_object_empty": lambda matrix_file, meta_file: meta_file.write_bytes(b"{}"),
    "meta_list": lambda matrix_file, meta_file: meta_file.write_bytes(b"[]"),
    "meta_not_json": lambda matrix_file, meta_file: meta_file.write_bytes(b"{not json"),
    "wrong_shape_npy": lambda matrix_file, meta_file: np.save(matrix_file, np.zeros((2, 5), dtype=np.float32)),
    "wrong_dtype_npy": lambda matrix_file, meta_file: np.save(matrix_file, np.zeros((3, 2), dtype=np.float64)),
    "matrix_values": lambda matrix_file, meta_file: np.save(matrix_file, np.load(matrix_file) + 1),
    "empty_rows_string": lambda matrix_file, meta_file: edit_meta(meta_file, empty_rows="x"),
    "empty_rows_out_of_range": lambda matrix_file, meta_file: edit_meta(meta_file, empty_rows=[99]),
    "empty_rows_not_zero": lambda matrix_file, meta_file: edit_meta(meta_file, empty_rows=[0]),
    "ids_rotated": lambda matrix_file, meta_file: edit_meta(
        meta_file, ids=(lambda ids: ids[1:] + ids[:1])(orjson.loads(meta_file.read_bytes())["ids"])),
    "ids_missing": lambda matrix_file, meta_file: edit_meta(meta_file, ids=None),
    "sha256_missing": lambda matrix_file, meta_file: edit_meta(meta_file, sha256=None),
    "matrix_gone": lambda matrix_file, meta_file: matrix_file.unlink(),
}


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_a_corrupt_cache_entry_is_a_warning_then_reparsed_and_replaced(
        tmp_path: Path, corruption: str, parses: list[Path], caplog: pytest.LogCaptureFixture) -> None:
    path = write_lines(tmp_path / "e.jsonl", ['{"paper_id": "a", "embedding": [1, 2]}',
                                              '{"paper_id": "b", "embedding": []}',
                                              '{"paper_id": "c", "embedding": [3, 4]}'])
    first = EmbeddingStore.load(path)
    matrix_file, meta_file = only_entry()
    CORRUPTIONS[corruption](matrix_file, meta_file)
    with caplog.at_level("WARNING"):
        second = EmbeddingStore.load(path)
    assert_same_store(first, second)
    assert len(parses) == 2
    assert f"embeddings parse cache entry {meta_file} is unusable" in caplog.text
    assert "parsing" in caplog.text and "again and replacing it" in caplog.text
    # the entry was replaced: the next load uses it, without a warning
    only_entry()
    caplog.clear()
    assert_same_store(first, EmbeddingStore.load(path))
    assert len(parses) == 2 and "unusable" not in caplog.text


def test_a_cache_entry_for_other_bytes_is_rejected(tmp_path: Path, parses: list[Path]) -> None:
    """An entry whose key matches but whose recorded file edges do not (the file changed under a stale key)."""
    path = write_lines(tmp_path / "e.jsonl", ['{"paper_id": "a", "embedding": [1, 2]}'])
    EmbeddingStore.load(path)
    _, meta_file = only_entry()
    edit_meta(meta_file, edges_sha256="0" * 64)
    assert EmbeddingStore.load(path).matrix.tolist() == [[1, 2]]
    assert len(parses) == 2


def test_a_cache_variable_naming_a_file_is_one_error_naming_the_variable(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A misplaced cache is the user's setting to fix, not a cache to skip quietly (docs/errors_and_files.md)."""
    from scidocs_eval.errors import ScidocsEvalError

    path = write_lines(tmp_path / "e.jsonl", [GOOD])
    not_a_folder = tmp_path / "cache-is-a-file"
    not_a_folder.write_text("")
    monkeypatch.setenv("SCIDOCS_EVAL_CACHE", str(not_a_folder))
    assert list(EmbeddingStore.load(path, cache=False).ids) == ["ok"]  # without the cache, nothing to refuse
    with pytest.raises(ScidocsEvalError, match=r"\$SCIDOCS_EVAL_CACHE=.*is a file, not a folder"):
        EmbeddingStore.load(path)


def test_no_cache_writes_nothing(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "e.jsonl", [GOOD])
    EmbeddingStore.load(path, cache=False)
    assert cache_files() == []


def test_sha256_and_float64(tmp_path: Path) -> None:
    import hashlib

    path = write_lines(tmp_path / "e.jsonl", ['{"paper_id": "a", "embedding": [0.1234567890123]}'])
    store = EmbeddingStore.load(path, dtype=np.float64)
    assert store.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert store.matrix.dtype == np.float64 and store.matrix[0, 0] == 0.1234567890123


def test_format_embedding_line_round_trips(tmp_path: Path) -> None:
    vectors = {"p1": np.array([0.5, -1.25, 3.0], dtype=np.float32), "123": [1.0, 2.0, 3.0], "none": None,
               "empty": np.zeros(0)}
    path = tmp_path / "e.jsonl"
    path.write_bytes(b"".join(format_embedding_line(pid, vec) for pid, vec in vectors.items()))
    assert orjson.loads(path.read_bytes().splitlines()[2]) == {"paper_id": "none", "embedding": []}
    store = EmbeddingStore.load(path)
    assert store.ids == ["p1", "123", "none", "empty"]
    np.testing.assert_array_equal(store.matrix, [[0.5, -1.25, 3.0], [1, 2, 3], [0, 0, 0], [0, 0, 0]])
    assert store.empty.tolist() == [False, False, True, True]


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_format_embedding_line_refuses_non_finite(value: float) -> None:
    with pytest.raises(ValueError, match="paper 'x': refusing to write a non-finite embedding"):
        format_embedding_line("x", np.array([1.0, value]))


def test_fast_float32_parse_equals_exact_float64_parse(tmp_path):
    """The batched float32 path gives the float32 of the float64 reading of the same file."""
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((300, 17)) * 10.0 ** rng.integers(-6, 6, size=(300, 1))
    path = tmp_path / "many.jsonl"
    with open(path, "wb") as out:
        for i, vector in enumerate(vectors):
            out.write(format_embedding_line(f"p{i}", vector if i % 50 else None))
    fast = EmbeddingStore.load(path, cache=False, progress=False)
    exact = EmbeddingStore.load(path, cache=False, progress=False, dtype=np.float64)
    assert fast.ids == exact.ids
    assert np.array_equal(fast.empty, exact.empty) and fast.empty.sum() == 6
    assert np.array_equal(fast.matrix, exact.matrix.astype(np.float32))


def test_chunked_parallel_parse_keeps_order_line_numbers_and_repeats(tmp_path, monkeypatch):
    """Many small chunks decoded in worker processes give the same store, and errors keep true line numbers."""
    import scidocs_eval.formats.embeddings as embeddings_module

    monkeypatch.setattr(embeddings_module, "_CHUNK_BYTES", 2048)
    monkeypatch.setattr(embeddings_module, "_PARALLEL_BYTES", 0)
    rng = np.random.default_rng(3)
    path = tmp_path / "chunked.jsonl"
    with open(path, "wb") as out:
        for i in range(400):
            out.write(format_embedding_line(f"p{i % 350}", rng.standard_normal(8)))
    chunked = EmbeddingStore.load(path, cache=False, progress=False)
    exact = EmbeddingStore.load(path, cache=False, progress=False, dtype=np.float64)
    assert chunked.ids == exact.ids and len(chunked) == 350 and chunked.duplicates == 50
    assert np.array_equal(chunked.matrix, exact.matrix.astype(np.float32))
    with open(path, "ab") as out:
        out.write(b'{"paper_id": "bad", "embedding": [1.0, "x", 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]}\n')
    with pytest.raises(InputError, match=r"chunked.jsonl:401: paper 'bad': embedding has a non-numeric value 'x'"):
        EmbeddingStore.load(path, cache=False, progress=False)
    lines = path.read_bytes().split(b"\n")[:300]
    path.write_bytes(b"\n".join(lines[:150] + [b""] + lines[150:]) + b"\n" + format_embedding_line("wide", np.ones(9)))
    with pytest.raises(InputError, match=r"chunked.jsonl:302: paper 'wide': embedding has 9 values, but line 1 set "
                       r"the dimension to 8"):
        EmbeddingStore.load(path, cache=False, progress=False)
