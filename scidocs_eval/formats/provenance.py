"""What produced a resumable output, so that `--resume` never mixes two runs' work in one output.

An output that a later run may continue (an embeddings file of `baseline`/`embed`, a checkpoint of
`train specter`) records the settings that determine its content: adapter, its parameters (model, pooling,
dimension, ...), the corpus it was fitted on, training hyperparameters. A resume compares the settings it has
with the recorded ones and refuses, naming the first setting that differs, so that a resumed output is what an
uninterrupted run with those settings would have written.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from scidocs_eval.errors import InputError, ScidocsEvalError
from scidocs_eval.formats.safe_output import write_bytes_atomically

SETTINGS_SUFFIX = ".settings.json"
WRITTEN_FOR = "written_for"
"""The settings record's note of what the file's papers were chosen for: {"tasks": [...], "split": ..., "data": ...}.
It says which papers are in the file, not how they were embedded, so a resume does not compare it."""


def normalised(settings: Mapping[str, Any]) -> dict[str, Any]:
    """`settings` as JSON would give them back (tuples as lists, paths and other objects as strings), flattened
    to dotted keys ("params.pooling") so that a difference names the setting."""
    flat: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, Mapping) and value:
            for key, inner in value.items():
                walk(f"{prefix}.{key}" if prefix else str(key), inner)
        else:
            flat[prefix] = value

    walk("", orjson.loads(orjson.dumps(settings, default=str, option=orjson.OPT_NON_STR_KEYS)))
    return flat


def first_difference(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> str | None:
    """"name: recorded X, now Y" for the first setting (in sorted order) that differs, or None."""
    old, new = normalised(recorded), normalised(current)
    for name in sorted(set(old) | set(new)):
        if name.split(".")[0] == WRITTEN_FOR:
            continue
        if old.get(name, "(not set)") != new.get(name, "(not set)"):
            return f"{name}: written with {old.get(name, '(not set)')!r}, this run has {new.get(name, '(not set)')!r}"
    return None


def check_same_settings(output: Path, recorded: Mapping[str, Any], current: Mapping[str, Any]) -> None:
    """An error naming the first setting that differs between the recorded and the current run."""
    difference = first_difference(recorded, current)
    if difference is not None:
        raise ScidocsEvalError(f"--resume: {output} was produced with other settings ({difference}); resume with "
                               "the same settings, or write a new output without --resume")


def settings_file(output: Path) -> Path:
    """The record kept next to an output file: `{output}.settings.json`."""
    return output.with_name(output.name + SETTINGS_SUFFIX)


def read_settings(output: Path) -> dict[str, Any] | None:
    """The settings recorded for `output`, or None when there is no record."""
    record = settings_file(output)
    if not record.is_file():
        return None
    try:
        settings = orjson.loads(record.read_bytes())
    except orjson.JSONDecodeError as error:
        raise ScidocsEvalError(f"{record}: malformed settings record ({error}); write a new output without "
                               "--resume") from None
    if not isinstance(settings, dict):
        raise ScidocsEvalError(f"{record}: not a settings record; write a new output without --resume")
    return settings


def written_for(output: Path) -> dict[str, Any]:
    """What `output`'s settings record says its papers were chosen for (`WRITTEN_FOR`); {} when it says nothing
    (no record, a malformed one, a file written otherwise)."""
    try:
        settings = read_settings(output)
    except ScidocsEvalError:
        return {}
    chosen = (settings or {}).get(WRITTEN_FOR)
    return chosen if isinstance(chosen, dict) else {}


def other_papers_cause(output: str | Path, task: str, split: str) -> str | None:
    """Why `output` likely lacks `task`'s papers on `split`, from its settings record: written for other tasks or
    another split (and how to get an embeddings file that has them); None when the record does not say."""
    chosen = written_for(Path(output))
    tasks, written_split = chosen.get("tasks"), chosen.get("split")
    record = settings_file(Path(output)).name
    if isinstance(tasks, list) and task not in tasks:
        return (f"{output} was written for task(s) {', '.join(map(str, tasks))} only (its {record} says so), so it "
                f"has not {task}'s papers: write the embeddings again with {task} among the tasks (e.g. `baseline` "
                f"without --tasks), into another --out-dir to keep this file")
    if isinstance(written_split, str) and written_split != split:
        return (f"{output} was written for the {written_split} split (its {record} says so), so it has not the "
                f"{split} split's papers: write the embeddings again with --split {split}, into another --out-dir "
                "to keep this file, or score --split " + written_split)
    return None


def write_settings(output: Path, settings: Mapping[str, Any], option: str = "output") -> None:
    write_bytes_atomically(settings_file(output), orjson.dumps(settings, default=str, option=orjson.OPT_INDENT_2 |
                                                               orjson.OPT_NON_STR_KEYS), option, rows=None)


def start_embeddings_output(path: Path, settings: Mapping[str, Any], resume: bool,
                            option: str = "output") -> tuple[set[str], int | None, int]:
    """Prepare an embeddings file for writing by `settings`; returns (ids already in it, their dimension, the
    length of its whole lines: what to keep of it).

    Without `resume` the file is started afresh. With it, the file's recorded settings must equal `settings`
    (an error names the first that differs; a file without a record is refused), a torn last line left by an
    interrupted run is left out, and the ids and dimension of the lines already written are returned.
    """
    written = path.read_bytes() if resume and path.is_file() else b""
    done: set[str] = set()
    dim = None
    if written.strip():
        recorded = read_settings(path)
        if recorded is None:
            raise ScidocsEvalError(f"--resume: {path} has no record of the settings that produced it "
                                   f"({settings_file(path).name}), so it cannot be continued safely; write a new "
                                   "output without --resume")
        check_same_settings(path, recorded, settings)
    whole = written[: written.rfind(b"\n") + 1]
    for number, line in enumerate(whole.splitlines(), start=1):
        if line.strip():
            paper_id, vector = _written_record(path, line, number)
            done.add(paper_id)
            dim = dim or len(vector) or None
    write_settings(path, settings, option)
    return done, dim, len(whole)


def _written_record(path: Path, line: bytes, number: int) -> tuple[str, list]:
    """(paper_id, embedding) of a whole line of an embeddings file being resumed; anything else is an error
    naming the line (checked before anything is cut or added, so a refusal leaves the file as it was)."""
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError as error:
        record, problem = None, f"not JSON ({error})"
    else:
        problem = "not a record {paper_id, embedding}"
    if isinstance(record, dict) and isinstance(record.get("paper_id"), str) and isinstance(
            record.get("embedding"), list):
        return record["paper_id"], record["embedding"]
    raise InputError(path, f"--resume: this line is {problem}, so the file cannot be continued safely; write a "
                     "new output without --resume", number)


def check_dimension(path: Path, dim: int | None, vectors_dim: int) -> None:
    """An error when new vectors would not have the dimension of those already in `path`."""
    if dim is not None and vectors_dim != dim:
        raise ScidocsEvalError(f"--resume: {path} holds {dim}-d vectors, this run makes {vectors_dim}-d ones; "
                               "write a new output without --resume")
