"""Every format reader at its boundaries: the standard hostile inputs (a missing column or field, a value of the
wrong type, NaN, 1e20, a duplicated id or pair, an empty file, a truncated file, bytes that are not UTF-8) fed to
each reader through the command that reads it (`run` for a task's data, `convert` for embeddings) end as one line
naming the file, the line or row and the field, or, where the format allows the input, as a named warning or an
exact read; never a traceback. And every reader closes the files it opened, on its error paths too."""

from __future__ import annotations

import gc
import json
import logging
import math
import shutil
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from builders import build_every_format_suite, write_one_vector

from scidocs_eval.cli.main import main
from scidocs_eval.evaluation.task import get_task
from scidocs_eval.formats.suite import Suite

HOSTILE = ("missing", "wrong-type", "nan", "1e20", "duplicate", "empty", "truncated", "non-utf8")
LINE_LEVEL = {"missing", "wrong-type", "nan", "1e20", "truncated", "non-utf8"}
"""hostile inputs whose error names the line (text formats) or row (tables) at fault."""


@dataclass(frozen=True)
class TextFormat:
    """A line-based format of a task's data: `file` (suite-relative), read by `task`; `field` (a JSON key, or a
    column index of a delimited row) is the one the hostile values go into; `accepts` maps the hostile inputs the
    format allows to the warning's rule."""

    name: str
    task: str
    file: str
    field: str | int
    separator: str | None = None
    header: bool = False
    accepts: tuple[tuple[str, str], ...] = ()
    by_a_model: bool = False
    """read through a model's run (`baseline random`): with the vectors given, `run` reads only the ids of the file
    (a retrieval corpus), so its texts are checked where they are embedded"""


TEXT_FORMATS = [
    TextFormat("suite label CSV", "mag", "mag/train.csv", 1, ",", True, (("duplicate", "repeated-paper"),)),
    TextFormat("suite qrel", "cite", "cite/test.qrel", 3, " ", False, (("duplicate", "pair-judged-twice"),)),
    TextFormat("recomm CSV", "recomm", "recomm/test.csv", 1, ",", True, (("duplicate", "repeated-impression"),)),
    TextFormat("BEIR qrels TSV", "scifact", "scifact/qrels/test.tsv", 2, "\t", True),
    TextFormat("BEIR corpus JSON lines", "scifact", "scifact/corpus.jsonl", "text", by_a_model=True),
    TextFormat("BEIR queries JSON lines", "scifact", "scifact/queries.jsonl", "text"),
    TextFormat("BEIR candidate lists JSON lines", "peerqa", "peerqa/top_ranked/test.jsonl", "corpus-ids"),
    TextFormat("SciRepEval labels JSON lines", "scirepeval-biomimicry", "scirepeval_test/biomimicry/train.jsonl",
               "label", accepts=(("duplicate", "repeated-paper"),)),
    TextFormat("SciRepEval qrels JSON lines", "scirepeval-relish", "scirepeval_test/relish/test.jsonl", "score"),
    TextFormat("HF rows JSON lines", "arxiv-classification", "arxiv-classification/test.jsonl", "label",
               accepts=(("duplicate", "repeated-paper"),)),
]


@pytest.fixture(autouse=True)
def no_file_left_open() -> Iterator[None]:
    """Each case fails on a file or socket its command left open (a ResourceWarning when it is collected)."""
    # What exists before the case (earlier tests' garbage included) is frozen: no collection during the case reads
    # it, so its warnings are not this case's, and the collection below reads only the case's own objects (a full
    # collection of a worker's heap, torch and all, took 0.3 s; twice per case, a third of a second each, it was
    # most of this module's time).
    gc.freeze()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)
            yield
            gc.collect()
    finally:
        gc.unfreeze()
    leaks = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert not leaks, leaks


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_every_format_suite(tmp_path_factory.mktemp("boundaries"), scirepeval_folders=("scirepeval_test",))


@pytest.fixture(scope="module")
def embeddings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_one_vector(tmp_path_factory.mktemp("vectors"))


def _hostile_lines(fmt: TextFormat, lines: list[str], hostile: str) -> bytes:
    """The file's lines with `hostile` put into its last row (or the file emptied, cut, ...)."""
    head, rows = (lines[:1], lines[1:]) if fmt.header else ([], lines)
    last = rows[-1]
    if isinstance(fmt.field, str):
        record = json.loads(last)
        value = {"wrong-type": {"not": "this"}, "nan": math.nan, "1e20": 1e20}.get(hostile)
        if hostile == "missing":
            del record[fmt.field]
        elif hostile == "duplicate" and "duplicate" in dict(fmt.accepts):  # a plain repeat of the first row
            record = json.loads(rows[0])
        elif hostile == "duplicate":  # the first row's pair again, with another value
            record = json.loads(rows[0])
            other = record[fmt.field]
            record[fmt.field] = other + 1 if isinstance(other, int) else [] if isinstance(other, list) else f"{other}!"
        elif value is not None:
            record[fmt.field] = value
        changed = json.dumps(record, allow_nan=True)
    else:
        cells = _split(fmt, last)
        if hostile == "missing":
            cells = cells[:fmt.field] + cells[fmt.field + 1:]
        elif hostile in ("wrong-type", "nan", "1e20"):
            cells[fmt.field] = {"wrong-type": "high", "nan": "nan", "1e20": "1e20"}[hostile]
        elif hostile == "duplicate":
            cells = _split(fmt, rows[0])
            if fmt.name != "recomm CSV" and cells[fmt.field].lstrip("-").isdigit():
                cells[fmt.field] = str(int(cells[fmt.field]) + 1)
        changed = _join(fmt, cells)
    if hostile == "duplicate":
        rows = [*rows, changed]
    elif hostile == "truncated":
        rows = [*rows[:-1], last[: len(last) // 2]]
    elif hostile != "non-utf8":
        rows = [*rows[:-1], changed]
    data = "\n".join([*head, *rows]).encode("utf-8") + (b"" if hostile == "truncated" else b"\n")
    if hostile == "non-utf8":
        data = data[: -len(last.encode("utf-8")) - 1] + b"\xff" + last.encode("utf-8")[1:] + b"\n"
    return b"" if hostile == "empty" else data


def _split(fmt: TextFormat, line: str) -> list[str]:
    if fmt.separator == ",":
        import csv

        return next(csv.reader([line]))
    return line.split(fmt.separator)


def _join(fmt: TextFormat, cells: list[str]) -> str:
    if fmt.separator == ",":
        return ",".join(f'"{c}"' if "," in c else c for c in cells)
    return str(fmt.separator).join(cells)


def _outcome(capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> tuple[list[str], str]:
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return [line for line in err.splitlines() if line.startswith("scidocs-eval: error")], caplog.text


@pytest.mark.parametrize("hostile", HOSTILE)
@pytest.mark.parametrize("fmt", TEXT_FORMATS, ids=[f.name for f in TEXT_FORMATS])
def test_a_text_reader_at_its_boundaries(fmt: TextFormat, hostile: str, world: Path, embeddings: Path,
                                         tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "scidocs_eval")
    data = tmp_path / "data"
    for relative in get_task(fmt.task).input_files(Suite(world), "test"):
        (data / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(world / relative, data / relative)
    lines = (world / fmt.file).read_text(encoding="utf-8").splitlines()
    (data / fmt.file).write_bytes(_hostile_lines(fmt, lines, hostile))
    out = tmp_path / "results.json"
    seeds = ["--task-param", "recomm.seeds=1"] if fmt.task == "recomm" else []
    if fmt.by_a_model:
        out = tmp_path / "model" / "random.results.json"
        code = main(["baseline", "random", "--data", str(data), "--tasks", fmt.task, "--out-dir", str(out.parent),
                     "--quiet"])
    else:
        code = main(["run", "--embeddings", str(embeddings), "--data", str(data), "--tasks", fmt.task, "-o",
                     str(out), "--quiet", *seeds])
    errors, warnings = _outcome(capsys, caplog)
    accepted = dict(fmt.accepts)
    if hostile in accepted:
        assert f"[{accepted[hostile]}]" in warnings, (fmt.name, hostile, errors, warnings)
        return
    assert code == 2 and len(errors) == 1 and not out.exists(), (fmt.name, hostile, errors)
    line = errors[0]
    assert Path(fmt.file).name in line, (fmt.name, hostile, line)
    if hostile in LINE_LEVEL:
        number = len(lines) if hostile != "duplicate" else len(lines) + 1
        assert f"{Path(fmt.file).name}:{number}:" in line, (fmt.name, hostile, line)
    if hostile in ("missing", "wrong-type") and isinstance(fmt.field, str):
        assert repr(fmt.field) in line or fmt.field in line, (fmt.name, hostile, line)


# --- tables: HF parquet (a retrieval dataset), and embeddings in every kind `convert` reads ---------------------

def _parquet(folder: Path, config: str, rows: list[dict], schema: object = None) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    (folder / config).mkdir(parents=True, exist_ok=True)
    path = folder / config / "test-00000-of-00001.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return path


def _hf_dataset(folder: Path) -> dict[str, list[dict]]:
    rows = {"corpus": [{"_id": f"d{i}", "title": "", "text": f"paper {i}"} for i in range(4)],
            "queries": [{"_id": "q1", "text": "a query"}, {"_id": "q2", "text": "another"}],
            "default": [{"query-id": "q1", "corpus-id": "d1", "score": 1}, {"query-id": "q2", "corpus-id": "d2",
                                                                            "score": 1}]}
    for config, config_rows in rows.items():
        _parquet(folder, config, config_rows)
    return rows


PARQUET_FIELDS = {"corpus": "text", "queries": "text", "default": "score"}


@pytest.mark.parametrize("hostile", [h for h in HOSTILE if h != "non-utf8"])
@pytest.mark.parametrize("config", list(PARQUET_FIELDS))
def test_an_hf_parquet_reader_at_its_boundaries(config: str, hostile: str, tmp_path: Path, embeddings: Path,
                                                capsys: pytest.CaptureFixture[str],
                                                caplog: pytest.LogCaptureFixture) -> None:
    import pyarrow.parquet as pq

    folder = tmp_path / "data" / "scidocs-retrieval"
    rows = _hf_dataset(folder)[config]
    field = PARQUET_FIELDS[config]
    path = folder / config / "test-00000-of-00001.parquet"
    changed = [dict(row) for row in rows]
    if hostile == "missing":
        changed = [{k: v for k, v in row.items() if k != field} for row in changed]
    elif hostile in ("wrong-type", "nan", "1e20"):  # a parquet column has one type: every row's value
        changed = [{**row, field: {"wrong-type": [1, 2], "nan": math.nan, "1e20": 1e20}[hostile]} for row in changed]
    elif hostile == "duplicate":
        changed.append({**changed[0], **({"score": 2} if config == "default" else {"text": "other"})})
    if hostile == "empty":
        _parquet(folder, config, [], pq.read_schema(path))
    elif hostile == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    else:
        _parquet(folder, config, changed)
    if config == "corpus":  # with the vectors given, `run` reads the corpus' ids only: its texts are read to embed
        code = main(["baseline", "random", "--data", str(tmp_path / "data"), "--tasks", "scidocs-retrieval",
                     "--out-dir", str(tmp_path / "model"), "--quiet"])
    else:
        code = main(["run", "--embeddings", str(embeddings), "--data", str(tmp_path / "data"), "--tasks",
                     "scidocs-retrieval", "--quiet"])
    errors, _ = _outcome(capsys, caplog)
    assert code == 2 and len(errors) == 1, (config, hostile, errors)
    line = errors[0]
    assert path.name in line and f"{config}/" in line, (config, hostile, line)
    if hostile in LINE_LEVEL - {"truncated"}:
        assert ": row " in line and field in line, (config, hostile, line)


def _write_embeddings(path: Path, ids: list[object], matrix: np.ndarray, kind: str, drop: str = "") -> None:
    import pyarrow as pa

    if kind == "jsonl":
        records = [{"paper_id": i, "embedding": row.tolist()} for i, row in zip(ids, matrix)]
        path.write_text("".join(json.dumps({k: v for k, v in record.items() if k != drop}, allow_nan=True) + "\n"
                                for record in records))
    elif kind in ("parquet", "arrow"):
        columns = {"paper_id": pa.array(ids), "embedding": pa.array(list(matrix.tolist()))}
        table = pa.table({k: v for k, v in columns.items() if k != drop})
        if kind == "parquet":
            import pyarrow.parquet as pq

            pq.write_table(table, path)
        else:
            import pyarrow.feather as feather

            feather.write_feather(table, path)
    elif kind == "npz":
        arrays = {"ids": np.asarray(ids), "embeddings": matrix}
        with open(path, "wb") as handle:
            np.savez(handle, **{k: v for k, v in arrays.items() if k.removesuffix("s") != drop})
    else:
        from safetensors.numpy import save_file

        save_file({} if drop == "embedding" else {"embeddings": matrix}, str(path),
                  metadata=None if drop == "paper_id" else {"ids": json.dumps(ids)})


EMBEDDING_KINDS = ("jsonl", "parquet", "arrow", "npz", "safetensors")


@pytest.mark.parametrize("hostile", HOSTILE)
@pytest.mark.parametrize("kind", EMBEDDING_KINDS)
def test_an_embeddings_reader_at_its_boundaries(kind: str, hostile: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str],
                                                caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "scidocs_eval")
    if hostile == "non-utf8" and kind != "jsonl":
        pytest.skip("a binary format's ids are typed, not bytes to decode")
    path = tmp_path / f"e.{kind}"
    ids: list[object] = ["a", "b", "c"]
    matrix = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=np.float32)
    writes: dict[str, Callable[[], None]] = {
        "missing": lambda: _write_embeddings(path, ids, matrix, kind, drop="embedding"),
        "wrong-type": lambda: _write_embeddings(path, [0.5, 1.5, 2.5], matrix, kind),  # float ids
        "nan": lambda: _write_embeddings(path, ids, np.where(matrix == 6.0, np.nan, matrix), kind),
        "1e20": lambda: _write_embeddings(path, ids, np.where(matrix == 6.0, 1e20, matrix), kind),
        "duplicate": lambda: _write_embeddings(path, [*ids, "a"], np.vstack([matrix, matrix[:1] + 1]), kind),
        "empty": lambda: path.write_bytes(b""),
        "truncated": lambda: (_write_embeddings(path, ids, matrix, kind),
                              path.write_bytes(path.read_bytes()[: path.stat().st_size - 12])),
        "non-utf8": lambda: (_write_embeddings(path, ids, matrix, kind),
                             path.write_bytes(path.read_bytes().replace(b'"c"', b'"\xff"'))),
    }
    writes[hostile]()
    out = tmp_path / "out.jsonl"
    code = main(["convert", str(path), str(out)])
    errors, warnings = _outcome(capsys, caplog)
    if hostile == "duplicate":  # convert keeps every row, repeats too (`run` warns and the later row wins)
        assert code == 0 and len(out.read_text().splitlines()) == 4, (kind, errors)
        return
    if hostile == "1e20":  # a float32 value: read exactly
        assert code == 0 and json.loads(out.read_text().splitlines()[2])["embedding"][1] == np.float32(1e20)
        return
    assert code == 2 and len(errors) == 1 and not out.exists(), (kind, hostile, errors)
    assert path.name in errors[0], (kind, hostile, errors[0])
    if hostile in ("nan", "wrong-type") and kind != "safetensors":
        assert ("e.jsonl:" if kind == "jsonl" else ": row ") in errors[0], (kind, hostile, errors[0])


NOT_EMBEDDINGS = {
    "pretty-printed JSON": b'{\n  "paper_id": "a",\n  "embedding": [1.0, 2.0]\n}\n',
    "JSON array": b'[{"paper_id": "a", "embedding": [1.0, 2.0]}]\n',
    "pickle": b"\x80\x04\x95\x00",
    "HDF5": b"\x89HDF\r\n\x1a\n",
    "damaged npz": b"PK\x03\x04" + b"\x00" * 40,
    "damaged Parquet": b"PAR1" + b"\x00" * 40,
    "damaged Arrow file": b"ARROW1" + b"\x00" * 40,
    "damaged npy": b"\x93NUMPY" + b"\x00" * 40,
}


@pytest.mark.parametrize("command", ["convert", "run"])
@pytest.mark.parametrize("what", list(NOT_EMBEDDINGS))
def test_a_file_that_is_not_embeddings_is_one_line(what: str, command: str, world: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str],
                                                   caplog: pytest.LogCaptureFixture) -> None:
    """What the reader sniffs and refuses (another format, or a damaged file of one it reads), under each command
    that reads embeddings: one line naming the file, and the file closed."""
    path = tmp_path / "vectors.jsonl"
    path.write_bytes(NOT_EMBEDDINGS[what])
    argv = {"convert": ["convert", str(path), str(tmp_path / "out.jsonl")],
            "run": ["run", "--embeddings", str(path), "--data", str(world), "--tasks", "cite", "--quiet"]}[command]
    code = main(argv)
    errors, _ = _outcome(capsys, caplog)
    assert code == 2 and len(errors) == 1 and path.name in errors[0], (what, command, errors)


@pytest.mark.parametrize(("hostile", "content"), [
    ("missing", b'{"weights": [1.0, 0.5]}'), ("wrong-type", b'{"scores": "high"}'), ("nan", b'{"scores": [NaN, 0.5]}'),
    ("negative", b'{"scores": [1.0, -0.5]}'), ("empty", b""), ("truncated", b'{"scores": [1.0, 0.'),
    ("non-utf8", b'{"scores": [1.0, 0.5], "\xff": 1}')])
def test_the_propensity_reader_at_its_boundaries(hostile: str, content: bytes, world: Path, embeddings: Path,
                                                 tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 caplog: pytest.LogCaptureFixture) -> None:
    data = tmp_path / "data"
    for relative in get_task("recomm").input_files(Suite(world), "test"):
        (data / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(world / relative, data / relative)
    (data / "recomm/propensity_scores.json").write_bytes(content)
    assert main(["run", "--embeddings", str(embeddings), "--data", str(data), "--tasks", "recomm", "--quiet"]) == 2
    errors, _ = _outcome(capsys, caplog)
    assert len(errors) == 1 and "propensity_scores.json" in errors[0], (hostile, errors)


# --- HF rows of MTEB's clustering and classification sets: a value inside a row's list, a column of two types ----

def _row_list_null_label(rows: list[dict]) -> None:
    rows[0]["labels"][3] = None


def _null_sentence(rows: list[dict]) -> None:
    rows[1]["sentences"] = None


def _labels_of_two_types(rows: list[dict]) -> None:
    rows[1]["label"] = str(rows[1]["label"])


HF_ROWS_CASES = [  # (task, file, change, the line and field named)
    ("medrxiv-clustering-s2s", "medrxiv-clustering-s2s/test.jsonl", _row_list_null_label,
     "test.jsonl:1: field 'labels[3]' is null"),
    ("arxiv-hierarchical-s2s", "arxiv-hierarchical-s2s/test.jsonl", _row_list_null_label,
     "test.jsonl:1: field 'labels[3]' is null"),
    ("biorxiv-clustering-p2p", "biorxiv-clustering-p2p/test.jsonl", _null_sentence,
     "test.jsonl:2: field 'sentences' is null"),
    ("arxiv-classification", "arxiv-classification/train.jsonl", _labels_of_two_types,
     "train.jsonl:2: field 'label' is string"),
]


@pytest.mark.parametrize(("task", "file", "change", "named"), HF_ROWS_CASES, ids=[c[0] for c in HF_ROWS_CASES])
def test_a_hostile_hf_row_is_one_line_under_run(task: str, file: str, change: Callable[[list[dict]], None],
                                                named: str, world: Path, embeddings: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str],
                                                caplog: pytest.LogCaptureFixture) -> None:
    """The issue's examples: a null label inside a row's list (a TypeError in one task, a label of its own in
    another), a null sentence (embedded as the text "None"), integer and string labels (scikit-learn's "Mix of
    label input types"): one line naming the file, the line and the field, exit 2."""
    data = tmp_path / "data"
    shutil.copytree(world / task, data / task)
    rows = [json.loads(line) for line in (world / file).read_text().splitlines()]
    change(rows)
    (data / file).write_text("".join(json.dumps(row) + "\n" for row in rows))
    code = main(["run", "--embeddings", str(embeddings), "--data", str(data), "--tasks", task, "--quiet",
                 "-o", str(tmp_path / "out.json")])
    errors, _ = _outcome(capsys, caplog)
    assert code == 2 and len(errors) == 1 and named in errors[0], errors
