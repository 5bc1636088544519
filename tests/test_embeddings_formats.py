"""Embeddings in the formats people hold them (issue 26): every kind gives the results JSON lines give, every
malformed variant the error its JSON lines counterpart gives; `convert`; writers chosen by suffix; pipes read once
(issue 24: one reader that cannot misread)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest
from safetensors.numpy import save_file

import scidocs_eval.formats.embeddings as embeddings_module
from scidocs_eval.cli.main import main
from scidocs_eval.errors import InputError
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.formats.embeddings import EmbeddingStore, format_embedding_line
from scidocs_eval.formats.embeddings_tables import ReadOptions, start_file_pass
from scidocs_eval.formats.embeddings_writers import convert_embeddings
from scidocs_eval.formats.suite import Suite

TASKS = "cite,cocite,mag"

Vectors = tuple[list[object], list[list[float] | None]]
"""ids (as the file holds them) and one vector per row (None or [] = no embedding)."""


def write_jsonl(path: Path, ids: list[object], vectors: list[list[float] | None]) -> Path:
    path.write_bytes(b"".join(orjson.dumps({"paper_id": i, "embedding": v if v is not None else []}) + b"\n"
                              for i, v in zip(ids, vectors)))
    return path


def _list_table(ids: list[object], vectors: list[list[float] | None]) -> pa.Table:
    id_type = pa.string() if all(isinstance(i, str) for i in ids) else None
    return pa.table({"paper_id": pa.array(ids, id_type), "embedding": pa.array(vectors, pa.list_(pa.float64()))})


def write_parquet(path: Path, ids: list[object], vectors: list[list[float] | None]) -> Path:
    pq.write_table(_list_table(ids, vectors), path)
    return path


def write_feather(path: Path, ids: list[object], vectors: list[list[float] | None]) -> Path:
    feather.write_feather(_list_table(ids, vectors), path)
    return path


def write_arrow_stream(path: Path, ids: list[object], vectors: list[list[float] | None]) -> Path:
    table = _list_table(ids, vectors)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return path


def write_hf_dataset(path: Path, ids: list[object], vectors: list[list[float] | None]) -> Path:
    import datasets

    datasets.Dataset.from_dict({"paper_id": ids, "embedding": vectors}).save_to_disk(str(path))
    return path


def _matrix(vectors: list[list[float] | None]) -> tuple[np.ndarray, np.ndarray]:
    dim = max(len(v or []) for v in vectors)
    empty = np.array([not v for v in vectors])
    return np.array([v if v else [0.0] * dim for v in vectors], dtype=np.float64), empty


def write_npz(path: Path, ids: list[object], vectors: list[list[float] | None]) -> Path:
    matrix, empty = _matrix(vectors)
    with open(path, "wb") as handle:
        np.savez(handle, ids=np.array(ids), embeddings=matrix, empty=empty)
    return path


def write_npy(path: Path, ids: list[object], vectors: list[list[float] | None]) -> Path:
    with open(path, "wb") as handle:
        np.save(handle, _matrix(vectors)[0])
    path.with_name("ids.txt").write_text("".join(f"{i}\n" for i in ids), encoding="utf-8")
    return path


def write_safetensors(path: Path, ids: list[object], vectors: list[list[float] | None]) -> Path:
    save_file({"embeddings": _matrix(vectors)[0]}, str(path), metadata={"ids": json.dumps(ids)})
    return path


WRITERS: dict[str, Callable[[Path, list[object], list[list[float] | None]], Path]] = {
    "parquet": write_parquet, "feather": write_feather, "arrow_stream": write_arrow_stream,
    "hf_dataset": write_hf_dataset, "npz": write_npz, "npy": write_npy, "safetensors": write_safetensors,
}
WITH_EMPTY = {"parquet", "feather", "arrow_stream", "hf_dataset", "npz"}
"""kinds that can say "no embedding" for a row (arrays without an 'empty' mask cannot)."""


def options_for(kind: str, path: Path) -> list[str]:
    return ["--ids", str(path.with_name("ids.txt"))] if kind == "npy" else []


def suite_vectors(suite: Suite, with_empty: bool) -> Vectors:
    rng = np.random.default_rng(5)
    ids: list[object] = [p.paper_id for p in suite.papers()]
    vectors: list[list[float] | None] = [rng.standard_normal(6).tolist() for _ in ids]
    if with_empty:
        vectors[3] = []
    ids.append(ids[0])  # a repeated id: the later row wins
    vectors.append(rng.standard_normal(6).tolist())
    return ids, vectors


def scored(results: Path) -> dict:
    """A results file without what differs by construction: the embeddings file's path and sha256, timings."""
    data = orjson.loads(results.read_bytes())
    for fingerprint in data["fingerprints"]["embeddings"].values():
        del fingerprint["path"], fingerprint["sha256"]
    data.pop("timings")
    for task in data["tasks"].values():
        task.pop("seconds", None)
    return data


@pytest.mark.parametrize("kind", sorted(WRITERS))
def test_every_kind_gives_the_results_json_lines_give(tiny_suite: Suite, tmp_path: Path, kind: str) -> None:
    ids, vectors = suite_vectors(tiny_suite, with_empty=kind in WITH_EMPTY)
    files = {"jsonl": write_jsonl(tmp_path / "e.jsonl", ids, vectors),
             kind: WRITERS[kind](tmp_path / f"e.{kind}", ids, vectors)}
    results = {}
    for name, path in files.items():
        out = tmp_path / f"{name}.results.json"
        assert main(["run", "--embeddings", str(path), "--data", str(tiny_suite.root), "--tasks", TASKS,
                     "--output", str(out), "--name", "m", "--quiet", *options_for(name, path)]) == 0
        results[name] = out
    assert scored(results[kind]) == scored(results["jsonl"])
    recorded = orjson.loads(results[kind].read_bytes())["fingerprints"]["embeddings"]["cls"]
    assert recorded["path"] == str(files[kind]) and len(recorded["sha256"]) == 64
    assert recorded["repeated_ids"] == 1


def test_the_recorded_sha256_is_the_file_s(tmp_path: Path) -> None:
    import hashlib

    path = write_parquet(tmp_path / "e.parquet", ["a", "b"], [[1.0, 2.0], [3.0, 4.0]])
    assert EmbeddingStore.load(path).sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("kind", ["parquet", "feather", "arrow_stream"])
def test_a_table_file_is_hashed_by_the_pass_a_run_starts_and_a_refused_one_stops_it(tmp_path: Path,
                                                                                      kind: str) -> None:
    """Parquet and Arrow files take the road array files take: the pass a run starts before it reads its data
    (`start_file_pass`) hashes the file while pyarrow reads it, and a file the reader refuses (unreadable, or no
    id column) ends that pass's reads."""
    import hashlib

    path = WRITERS[kind](tmp_path / f"e.{kind}", ["a", "b"], [[1.0, 2.0], [3.0, 4.0]])
    file_pass = start_file_pass(path)
    assert file_pass is not None
    assert EmbeddingStore.load(path, file_pass=file_pass).sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert not file_pass._stopped.is_set()
    refused = start_file_pass(path)
    assert refused is not None
    with pytest.raises(InputError, match="missing id column 'nope'"):
        EmbeddingStore.load(path, file_pass=refused, options=ReadOptions(id_column="nope"))
    assert refused._stopped.is_set()
    garbage = tmp_path / f"garbage.{kind}"
    garbage.write_bytes(b"PAR1 not a table" * 64)
    unreadable = start_file_pass(garbage)
    assert unreadable is not None
    with pytest.raises(InputError, match="garbage"):
        EmbeddingStore.load(garbage, file_pass=unreadable)
    assert unreadable._stopped.is_set()


MALFORMED: dict[str, tuple[list[object], list[list[float] | None], str, int]] = {
    # ids, vectors, the message after the location, the 1-based line/row named
    "nan": (["a", "b", "c"], [[1.0, 2.0], [float("nan"), 1.0], [0.0, 1.0]],
            "paper 'b': embedding value 0 is nan (NaN and infinity are not allowed)", 2),
    "infinity": (["a", "b"], [[1.0, 2.0], [1.0, float("-inf")]],
                 "paper 'b': embedding value 1 is -inf (NaN and infinity are not allowed)", 2),
    "beyond_float32": (["a", "b"], [[1.0, 2.0], [1.0, 1e39]],
                       "paper 'b': embedding value 1 is 1e+39, beyond the largest float32 (3.402823e+38); scale the "
                       "vectors, or read them with --dtype float64", 2),
    "ragged": (["a", "b", "c"], [[1.0, 2.0], [1.0, 2.0], [1.0, 2.0, 3.0]],
               "paper 'c': embedding has 3 values, but {unit} 1 set the dimension to 2", 3),
    "bad_id_type": ([0.5, 1.5], [[1.0, 2.0], [0.0, 1.0]], "paper id must be a string, got 0.5", 1),
}
LIST_KINDS = ("parquet", "feather", "arrow_stream", "hf_dataset")


def json_lines_error(tmp_path: Path, ids: list[object], vectors: list[list[float] | None]) -> InputError:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"".join(
        (b'{"paper_id": ' + orjson.dumps(i) + b', "embedding": [' +
         b", ".join(repr(x).encode() if np.isfinite(x) else {"nan": b"NaN", "-inf": b"-Infinity"}[repr(x)]
                    for x in v) + b"]}\n") for i, v in zip(ids, vectors)))
    with pytest.raises(InputError) as raised:
        EmbeddingStore.load(path, cache=False, progress=False)
    return raised.value


@pytest.mark.parametrize("kind", LIST_KINDS + ("npz", "safetensors"))
@pytest.mark.parametrize("variant", sorted(MALFORMED))
def test_a_malformed_variant_gives_the_json_lines_error(tmp_path: Path, kind: str, variant: str) -> None:
    ids, vectors, message, at = MALFORMED[variant]
    if variant == "ragged" and kind not in LIST_KINDS:
        pytest.skip("an array cannot be ragged")
    expected = json_lines_error(tmp_path, ids, vectors)
    assert str(expected) == f"{tmp_path / 'bad.jsonl'}:{at}: {message.format(unit='line')}"
    path = WRITERS[kind](tmp_path / f"bad.{kind}", ids, vectors)
    with pytest.raises(InputError) as raised:
        EmbeddingStore.load(path, cache=False, progress=False)
    assert str(raised.value) == f"{path}: row {at}: {message.format(unit='row')}"


def test_an_integer_id_column_reads_as_json_integer_ids_do(tmp_path: Path) -> None:
    table = pa.table({"paper_id": [7, 8], "embedding": [[1.0, 2.0], [3.0, 4.0]]})
    pq.write_table(table, tmp_path / "e.parquet")
    assert EmbeddingStore.load(tmp_path / "e.parquet").ids == ["7", "8"]


def test_a_null_id_is_an_error_naming_the_row(tmp_path: Path) -> None:
    pq.write_table(pa.table({"paper_id": ["a", None], "embedding": [[1.0], [2.0]]}), tmp_path / "e.parquet")
    with pytest.raises(InputError, match=r"e.parquet: row 2: paper id is missing \(null\)$"):
        EmbeddingStore.load(tmp_path / "e.parquet")


def test_a_null_value_inside_a_vector_is_the_json_lines_error(tmp_path: Path) -> None:
    pq.write_table(pa.table({"paper_id": ["a", "b"], "embedding": [[1.0, 2.0], [1.0, None]]}), tmp_path / "e.parquet")
    with pytest.raises(InputError, match=r"row 2: paper 'b': embedding has a non-numeric value None$"):
        EmbeddingStore.load(tmp_path / "e.parquet")


def test_repeated_and_padded_ids_are_reported_as_for_json_lines(tmp_path: Path,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    path = write_parquet(tmp_path / "e.parquet", ["a", " b", "a"], [[1.0], [2.0], [3.0]])
    store = EmbeddingStore.load(path)
    assert store.ids == ["a", " b"] and store.matrix[0, 0] == 3.0 and store.duplicates == 1
    assert "1 row(s) repeat the id of an earlier row (the later row is used" in caplog.text
    assert "leading or trailing whitespace" in caplog.text


@pytest.mark.parametrize("table, message", [
    (pa.table({"id": ["a"], "embedding": [[1.0]]}),
     "missing id column 'paper_id' (or 'doc_id'); its columns are ['id', 'embedding'] (name the id column with "
     "--id-column)"),
    (pa.table({"paper_id": ["a"], "text": ["x"]}),
     "missing embedding column 'embedding'; its columns are ['paper_id', 'text'] (name a list column, or the "
     "numeric columns in order, with --embedding-column)"),
    (pa.table({"paper_id": ["a"], "embedding": ["x"]}), "column 'embedding' holds string, not lists of numbers"),
])
def test_a_table_without_the_columns_says_which_it_has(tmp_path: Path, table: pa.Table, message: str) -> None:
    pq.write_table(table, tmp_path / "e.parquet")
    with pytest.raises(InputError) as raised:
        EmbeddingStore.load(tmp_path / "e.parquet")
    assert str(raised.value) == f"{tmp_path / 'e.parquet'}: {message}"


def test_named_columns_and_numeric_columns(tmp_path: Path) -> None:
    pq.write_table(pa.table({"key": ["a", "b"], "vec": [[1.0, 2.0], [3.0, 4.0]]}), tmp_path / "named.parquet")
    store = EmbeddingStore.load(tmp_path / "named.parquet",
                                options=ReadOptions(id_column="key", embedding_columns=("vec",)))
    assert store.ids == ["a", "b"] and store.matrix.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    pq.write_table(pa.table({"paper_id": ["a", "b"], "d0": [1.0, None], "d1": [2, None]}), tmp_path / "wide.parquet")
    wide = EmbeddingStore.load(tmp_path / "wide.parquet")
    assert wide.matrix.tolist() == [[1.0, 2.0], [0.0, 0.0]] and wide.empty.tolist() == [False, True]


def test_npy_needs_its_ids_and_the_counts_must_agree(tmp_path: Path) -> None:
    path = write_npy(tmp_path / "e.npy", ["a", "b"], [[1.0], [2.0]])
    assert EmbeddingStore.load(path, options=ReadOptions(ids_file=tmp_path / "ids.txt")).ids == ["a", "b"]
    (tmp_path / "ids.txt").write_text("a\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"e.npy: 1 ids for 2 rows of embeddings$"):
        EmbeddingStore.load(path, options=ReadOptions(ids_file=tmp_path / "ids.txt"))


def test_ids_for_a_file_that_holds_its_own_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_jsonl(tmp_path / "e.jsonl", ["a"], [[1.0]])
    (tmp_path / "ids.txt").write_text("a\n", encoding="utf-8")
    assert main(["convert", str(path), str(tmp_path / "o.parquet"), "--ids", str(tmp_path / "ids.txt")]) == 2
    assert capsys.readouterr().err == (f"scidocs-eval: error: {path}: holds JSON lines, with their own ids and "
                                       "vectors; --ids, --id-column and --embedding-column are for a table or array "
                                       "file\n")


# --- convert and the writers ---------------------------------------------------------------------------------

@pytest.mark.parametrize("suffix", [".parquet", ".npz", ".arrow", ".jsonl"])
def test_convert_round_trips_every_line(tmp_path: Path, suffix: str, capsys: pytest.CaptureFixture[str]) -> None:
    ids = ["a", "b", "c", "a"]
    vectors = [[0.1, 0.2], [], [1e-7, -3.0], [5.0, 6.0]]
    source = write_jsonl(tmp_path / "in.jsonl", ids, vectors)
    out = tmp_path / f"out{suffix}"
    assert main(["convert", str(source), str(out), "--quiet"]) == 0
    assert "4 rows written" in capsys.readouterr().out
    back = tmp_path / "back.jsonl"
    assert main(["convert", str(out), str(back), "--quiet"]) == 0
    expected = EmbeddingStore.load(source)
    for path in (out, back):
        store = EmbeddingStore.load(path)
        assert store.ids == expected.ids and store.duplicates == 1
        np.testing.assert_array_equal(store.matrix, expected.matrix)
        np.testing.assert_array_equal(store.empty, expected.empty)
    assert back.read_bytes() == b"".join(format_embedding_line(i, np.array(v, dtype=np.float32) if v else None)
                                         for i, v in zip(ids, vectors))


def test_convert_refuses_an_existing_output_and_writes_nothing_on_a_bad_input(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", ["a", "b"], [[1.0], [2.0]])
    mine = tmp_path / "mine.parquet"
    mine.write_bytes(b"not yours")
    assert main(["convert", str(source), str(mine)]) == 2
    assert mine.read_bytes() == b"not yours" and "already exists" in capsys.readouterr().err
    source.write_bytes(source.read_bytes() + b'{"paper_id": "c", "embedding": [NaN]}\n')
    assert main(["convert", str(source), str(tmp_path / "new.parquet")]) == 2
    err = capsys.readouterr().err
    assert err == f"scidocs-eval: error: {source}:3: paper 'c': embedding value 0 is nan (NaN and infinity are not " \
                  "allowed)\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "mine.parquet"]


def test_convert_streams_json_lines_a_chunk_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embeddings_module, "_CHUNK_BYTES", 256)
    source = write_jsonl(tmp_path / "in.jsonl", [f"p{i}" for i in range(200)], [[float(i), 1.0] for i in range(200)])
    batches = list(embeddings_module.iter_embeddings(source, progress=False))
    assert len(batches) > 10 and sum(len(ids) for ids, _, _ in batches) == 200
    assert convert_embeddings(source, tmp_path / "out.parquet", progress=False) == 200
    assert pq.ParquetFile(tmp_path / "out.parquet").num_row_groups == len(batches)
    monkeypatch.setattr(embeddings_module, "_PARALLEL_BYTES", 0)  # chunks decoded in worker processes
    in_workers = list(embeddings_module.iter_embeddings(source, progress=False))
    assert [ids for ids, _, _ in in_workers] == [ids for ids, _, _ in batches]
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(in_workers, batches))


def test_evaluate_model_saves_parquet_when_asked(tiny_suite: Suite, tmp_path: Path) -> None:
    from scidocs_eval.evaluation.papers import papers_to_embed
    from scidocs_eval.run.model_object import evaluate_model

    def model(texts: list[str]) -> np.ndarray:
        return np.array([[len(t), t.count("a") + 1.0, 1.0] for t in texts], dtype=np.float32)

    saved = tmp_path / "saved.parquet"
    result = evaluate_model(model, RunConfig(data=tiny_suite, tasks=["cite"], cache=False, progress=False),
                            save_embeddings=saved)
    store = EmbeddingStore.load(saved)
    assert store.ids == [p.paper_id for p in papers_to_embed(tiny_suite, ["cite"])] and store.dim == 3
    assert result.fingerprints["embeddings"]["user-citation"]["path"] == str(saved)


def test_baseline_writes_parquet_and_resumes_it(tiny_suite: Suite, tmp_path: Path) -> None:
    args = ["baseline", "random", "--data", str(tiny_suite.root), "--tasks", "cite", "--out-dir", str(tmp_path),
            "--embeddings-format", "parquet", "--quiet"]
    assert main(args) == 0
    parquet = tmp_path / "random.parquet"
    first = EmbeddingStore.load(parquet)
    assert not (tmp_path / "random.parquet.partial.jsonl").exists()
    assert (tmp_path / "random.parquet.settings.json").is_file()
    assert main([*args, "--resume"]) == 0
    again = EmbeddingStore.load(parquet)
    assert again.ids == first.ids and np.array_equal(again.matrix, first.matrix)


# --- one reader that cannot misread (issue 24, item 3) ------------------------------------------------------

def test_only_the_top_level_embedding_key_is_read(tmp_path: Path) -> None:
    """The float32 bulk parser used to take the first list after the word embedding: [25] here, 1-d vectors."""
    vector = [float(i) / 7 for i in range(25)]
    lines = [{"paper_id": f"p{i}", "kind": "embedding", "shape": [25], "meta": {"embedding": [9.0]},
              "embedding": vector} for i in range(3)]
    path = tmp_path / "e.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    for dtype in (np.float32, np.float64):
        store = EmbeddingStore.load(path, cache=False, progress=False, dtype=dtype)
        assert store.dim == 25
        np.testing.assert_array_equal(store.matrix[0], np.array(vector, dtype=dtype))


def test_a_23_digit_integer_id_is_read_as_written(tmp_path: Path) -> None:
    """It used to be 'paper id must be a string, got 1.2345678901234568e+22', a float the file does not hold."""
    path = tmp_path / "e.jsonl"
    path.write_text('{"paper_id": 12345678901234567890123, "embedding": [1.0]}\n'
                    '{"paper_id": "b", "embedding": [2.0]}\n', encoding="utf-8")
    assert EmbeddingStore.load(path, cache=False).ids == ["12345678901234567890123", "b"]
    path.write_text('{"paper_id": 1.50, "embedding": [1.0]}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"e.jsonl:1: paper id must be a string, got 1.50$"):
        EmbeddingStore.load(path, cache=False)


def _many_lines(count: int, dim: int = 8) -> bytes:
    return b"".join(format_embedding_line(f"p{i}", np.arange(dim, dtype=np.float32) + i) for i in range(count))


def test_a_pipe_is_read_exactly_once(tmp_path: Path) -> None:
    """`--embeddings <(cat emb.jsonl)` used to lose the first papers: sniffed, then read again from the pipe."""
    data = _many_lines(500)
    assert len(data) > 4096 * 4
    reading, writing = os.pipe()

    def feed() -> None:
        with os.fdopen(writing, "wb") as handle:
            handle.write(data)

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        store = EmbeddingStore.load(f"/dev/fd/{reading}", progress=False)
    finally:
        feeder.join()
        os.close(reading)
    assert store.ids == [f"p{i}" for i in range(500)] and store.sha256 is not None


def test_a_fifo_and_stdin_are_read_exactly_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _many_lines(500)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    feeder = threading.Thread(target=lambda: fifo.write_bytes(data))
    feeder.start()
    store = EmbeddingStore.load(fifo, progress=False)
    feeder.join()
    assert len(store) == 500
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert len(EmbeddingStore.load("-", progress=False)) == 500
    table = tmp_path / "e.parquet"
    write_parquet(table, ["a", "b"], [[1.0], [2.0]])
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(table.read_bytes())))
    assert EmbeddingStore.load("-").ids == ["a", "b"]


def test_run_reads_a_process_substitution(cite_suite: tuple[Path, Path], tmp_path: Path) -> None:
    suite, embeddings = cite_suite
    padded = tmp_path / "padded.jsonl"
    padded.write_bytes(_many_lines(600, dim=2) + embeddings.read_bytes())  # the suite's papers come after 4 KiB
    command = (f"{sys.executable} -m scidocs_eval.cli run --data {suite} --embeddings <(cat {padded}) --quiet "
               f"--output {tmp_path / 'r.json'}")
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    fingerprint = orjson.loads((tmp_path / "r.json").read_bytes())["fingerprints"]["embeddings"]["user-citation"]
    assert fingerprint["papers"] == 603


def test_the_parse_cache_key_holds_the_parser_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "e.jsonl"
    path.write_bytes(_many_lines(3))
    parsed: list[object] = []
    real_parse = embeddings_module._parse_json_lines

    def counting_parse(*args: object) -> EmbeddingStore:
        parsed.append(args)
        return real_parse(*args)

    monkeypatch.setattr(embeddings_module, "_parse_json_lines", counting_parse)
    for _ in range(2):
        EmbeddingStore.load(path, progress=False)
        embeddings_module.wait_for_cache_writes()
    assert len(parsed) == 1
    monkeypatch.setattr(embeddings_module, "PARSER_VERSION", embeddings_module.PARSER_VERSION + 1)
    EmbeddingStore.load(path, progress=False)
    assert len(parsed) == 2


@pytest.mark.parametrize("kind", sorted(set(WRITERS) - {"hf_dataset"}))
def test_a_truncated_file_of_every_kind_is_one_error_naming_it(tmp_path: Path, kind: str) -> None:
    ids = [f"p{i}" for i in range(40)]
    path = WRITERS[kind](tmp_path / f"e.{kind}", ids, [[float(i), 0.5, -1.0] for i in range(40)])
    data = path.read_bytes()
    options = ReadOptions(ids_file=tmp_path / "ids.txt") if kind == "npy" else None
    for cut in (10, 24, 100, len(data) // 2, len(data) - 1):
        short = tmp_path / f"short.{kind}"
        short.write_bytes(data[:cut])
        with pytest.raises(InputError) as raised:
            EmbeddingStore.load(short, options=options, progress=False)
        assert str(raised.value).startswith(f"{short}: ")


def test_run_on_a_malformed_table_is_one_line_and_no_results(cite_suite: tuple[Path, Path], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    suite, _ = cite_suite
    path = write_parquet(tmp_path / "e.parquet", ["q", "a", "b"], [[0.0, 1.0], [1.0, float("nan")], [0.0, 1.0]])
    out = tmp_path / "r.json"
    assert main(["run", "--embeddings", str(path), "--data", str(suite), "--output", str(out), "--quiet"]) == 2
    assert capsys.readouterr().err == (f"scidocs-eval: error: {path}: row 2: paper 'a': embedding value 1 is nan "
                                       "(NaN and infinity are not allowed)\n")
    assert not out.exists()


def test_safetensors_ids_from_a_sidecar_and_a_dataset_dict_refused(tmp_path: Path) -> None:
    save_file({"embeddings": np.eye(2, dtype=np.float32)}, str(tmp_path / "e.safetensors"))
    with pytest.raises(InputError, match="needs its ids in its metadata"):
        EmbeddingStore.load(tmp_path / "e.safetensors")
    (tmp_path / "ids.txt").write_text("a\nb\n", encoding="utf-8")
    store = EmbeddingStore.load(tmp_path / "e.safetensors", options=ReadOptions(ids_file=tmp_path / "ids.txt"))
    assert store.ids == ["a", "b"] and store.matrix.tolist() == [[1.0, 0.0], [0.0, 1.0]]
    import datasets

    datasets.DatasetDict({"train": datasets.Dataset.from_dict({"paper_id": ["a"], "embedding": [[1.0]]})}
                         ).save_to_disk(str(tmp_path / "dd"))
    with pytest.raises(InputError, match=r"dd: is a saved HF DatasetDict; give the folder of one split"):
        EmbeddingStore.load(tmp_path / "dd")
    assert EmbeddingStore.load(tmp_path / "dd" / "train").ids == ["a"]


@pytest.mark.parametrize("number", ["+1", ".5", "01", "1.", "1e", "-"])
def test_a_number_json_does_not_allow_is_malformed_in_every_path(tmp_path: Path, number: str) -> None:
    """The bulk path (pandas' CSV parser) used to read +1, .5, 01 and 1. as numbers; the strict path refused them."""
    path = tmp_path / "e.jsonl"
    path.write_text(f'{{"paper_id": "a", "embedding": [{number}, 2]}}\n{{"paper_id": "b", "embedding": [1, 2]}}\n',
                    encoding="utf-8")
    for dtype in (np.float32, np.float64):
        with pytest.raises(InputError, match=r"e.jsonl:1: malformed JSON"):
            EmbeddingStore.load(path, cache=False, progress=False, dtype=dtype)


@pytest.mark.parametrize("kind", sorted(set(WRITERS) - {"hf_dataset"}))
def test_a_file_rewritten_while_the_run_scores_it_is_refused_and_no_result_is_kept(
        cite_suite: tuple[Path, Path], tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A matrix may map the file and its digest is a read of its own: a file written during the run (here the
    same vectors and one more paper, as a script that rewrites it would; a size of its own, so the test does not
    hang on the file system's clock ticking between the two writes) could give scores of other vectors than
    the digest names, so the run refuses at its end."""
    from scidocs_eval.evaluation import runner

    suite, _ = cite_suite
    path = WRITERS[kind](tmp_path / f"e.{kind}", ["q", "a", "b"], [[0.0, 0.0], [2.0, 0.0], [0.0, 1.0]])
    out = tmp_path / "r.json"
    args = ["run", "--embeddings", str(path), "--data", str(suite), "--output", str(out), "--quiet",
            *options_for(kind, path)]
    assert main(args) == 0 and json.loads(out.read_text())["tasks"]["cite"]["metrics"]["map"] == 50.0
    out.unlink()
    score_tasks = runner.score_tasks

    def scored_while_rewritten(*pargs: object, **kwargs: object) -> object:
        scored = score_tasks(*pargs, **kwargs)
        WRITERS[kind](tmp_path / f"e.{kind}", ["q", "a", "b", "c"], [[0.0, 0.0], [2.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        return scored

    monkeypatch.setattr(runner, "score_tasks", scored_while_rewritten)
    assert main(args) == 2
    assert capsys.readouterr().err.startswith(f"scidocs-eval: error: {path}: was changed, replaced or removed "
                                              "while this run used it")
    assert not out.exists()
