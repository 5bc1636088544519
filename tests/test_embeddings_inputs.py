"""Embeddings files that must not give a silently wrong number: values beyond float32, files of another kind,
gzip, repeated and whitespace-padded ids reported where a user reads them."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import numpy as np
import orjson
import pytest

from scidocs_eval.cli.main import main
from scidocs_eval.errors import InputError
from scidocs_eval.formats.embeddings import EmbeddingStore, format_embedding_line


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture()
def cite_suite(tmp_path: Path) -> Path:
    """A suite with one cite split over papers q, a, b."""
    root = tmp_path / "suite"
    (root / "cite").mkdir(parents=True)
    (root / "cite" / "test.qrel").write_text("q 0 a 1\nq 0 b 0\n", encoding="utf-8")
    return root


@pytest.mark.parametrize("value", ["1e39", "3.5e38", "-1e39", "3.4028236e38"])
@pytest.mark.parametrize("lines_before", [0, 2])
def test_a_value_beyond_float32_is_an_error_naming_file_line_and_paper(tmp_path: Path, value: str,
                                                                       lines_before: int) -> None:
    """It used to become inf in the float32 matrix and change the scores, with only numpy warnings."""
    path = write_lines(tmp_path / "e.jsonl", [f'{{"paper_id": "p{i}", "embedding": [1.0, 2.0]}}'
                                              for i in range(lines_before)]
                       + [f'{{"paper_id": "big", "embedding": [0.5, {value}]}}'])
    with pytest.raises(InputError) as raised:
        EmbeddingStore.load(path, cache=False, progress=False)
    assert str(raised.value) == (f"{path}:{lines_before + 1}: paper 'big': embedding value 1 is {float(value)}, "
                                 "beyond the largest float32 (3.402823e+38); scale the vectors, or read them with "
                                 "--dtype float64")
    wide = EmbeddingStore.load(path, cache=False, progress=False, dtype=np.float64)
    assert wide.matrix[wide.index["big"], 1] == float(value)


def test_the_largest_float32_itself_is_read(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "e.jsonl", ['{"paper_id": "a", "embedding": [3.4028234e38, -3.4028234e38]}'])
    store = EmbeddingStore.load(path, cache=False, progress=False)
    assert np.isfinite(store.matrix).all() and store.matrix[0, 0] == np.finfo(np.float32).max


def test_from_mapping_refuses_a_value_beyond_float32() -> None:
    with pytest.raises(InputError, match=r"<memory>:1: paper 'a': embedding value 0 is 1e\+39, beyond"):
        EmbeddingStore.from_mapping({"a": [1e39]})


def test_run_with_a_float32_overflow_exits_2_and_writes_no_results(cite_suite: Path, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    embeddings = write_lines(tmp_path / "e.jsonl", ['{"paper_id": "q", "embedding": [1, 0]}',
                                                    '{"paper_id": "a", "embedding": [1e39, 0]}',
                                                    '{"paper_id": "b", "embedding": [0, 1]}'])
    out = tmp_path / "out.json"
    assert main(["run", "--embeddings", str(embeddings), "--data", str(cite_suite), "--output", str(out),
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"scidocs-eval: error: {embeddings}:2: paper 'a': embedding value 0 is 1e+39, beyond")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()


def _npy(path: Path) -> None:
    with open(path, "wb") as handle:
        np.save(handle, np.zeros((2, 3), dtype=np.float32))


def _npz(path: Path) -> None:
    with open(path, "wb") as handle:
        np.savez(handle, x=np.zeros(3))


WRONG_KINDS = {
    "npy": (_npy, "appears to be a NumPy .npy array (it has no paper ids)"),
    "npz": (_npz, "appears to be a zip archive (for example a NumPy .npz file)"),
    "json_array": (lambda p: p.write_bytes(orjson.dumps([{"paper_id": "a", "embedding": [1.0]}])),
                   "appears to be one JSON array, not JSON lines"),
    "pretty_json": (lambda p: p.write_text('\n{\n  "a": [1.0, 2.0]\n}\n'),
                    "appears to be a pretty-printed JSON document (this line is only '{')"),
    "directory": (lambda p: p.mkdir(), "is a directory, not a file"),
}
LINE = {"json_array": ":1", "pretty_json": ":2"}


@pytest.mark.parametrize("kind", sorted(WRONG_KINDS))
def test_a_file_of_another_kind_says_what_it_appears_to_be(tmp_path: Path, kind: str) -> None:
    make, message = WRONG_KINDS[kind]
    path = tmp_path / "embeddings"
    make(path)
    with pytest.raises(InputError) as raised:
        EmbeddingStore.load(path)
    assert str(raised.value) == (f"{path}{LINE.get(kind, '')}: {message}; expected JSON lines, one "
                                 '{"paper_id": ..., "embedding": [...]} object per line'
                                 if kind != "directory" else f"{path}: {message} (expected JSON lines, one "
                                 '{"paper_id": ..., "embedding": [...]} object per line)')


def test_a_gzip_file_is_read_directly(tmp_path: Path) -> None:
    lines = b"".join(format_embedding_line(f"p{i}", np.arange(3, dtype=np.float32) + i) for i in range(50))
    plain = tmp_path / "e.jsonl"
    plain.write_bytes(lines)
    packed = tmp_path / "e.jsonl.gz"
    packed.write_bytes(gzip.compress(lines))
    expected = EmbeddingStore.load(plain, cache=False, progress=False)
    for cache in (True, True, False):
        store = EmbeddingStore.load(packed, cache=cache, progress=False)
        assert store.ids == expected.ids
        np.testing.assert_array_equal(store.matrix, expected.matrix)
        assert store.sha256 == hashlib.sha256(packed.read_bytes()).hexdigest()


def test_a_broken_gzip_file_is_an_error(tmp_path: Path) -> None:
    packed = tmp_path / "e.jsonl.gz"
    packed.write_bytes(gzip.compress(b'{"paper_id": "a", "embedding": [1]}\n' * 100)[:-12])
    with pytest.raises(InputError, match=rf"^{packed}: cannot be decompressed"):
        EmbeddingStore.load(packed, cache=False, progress=False)


def test_repeated_and_padded_ids_are_printed(cite_suite: Path, tmp_path: Path,
                                             caplog: pytest.LogCaptureFixture) -> None:
    """They used to appear only in the results JSON (repeated_ids) or nowhere (whitespace). The command prints
    warnings to stderr (logging at WARNING level)."""
    embeddings = write_lines(tmp_path / "e.jsonl", ['{"paper_id": "q", "embedding": [1, 0]}',
                                                    '{"paper_id": "a", "embedding": [1, 0]}',
                                                    '{"paper_id": " b", "embedding": [0, 1]}',
                                                    '{"paper_id": "a", "embedding": [1, 1]}'])
    for _ in range(2):  # parsed, then from the cache
        caplog.clear()
        with caplog.at_level("WARNING", logger="scidocs_eval"):
            assert main(["run", "--embeddings", str(embeddings), "--data", str(cite_suite), "--min-coverage", "0",
                         "--quiet"]) == 0
        warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
        assert (f"{embeddings}: 1 line(s) repeat the id of an earlier line (the later line is used, as in the "
                "official code): 'a'") in warnings
        assert f"{embeddings}: 1 id(s) have leading or trailing whitespace and match no suite id: ' b'" in warnings
