"""What produced a resumable output, so that `--resume` never mixes two runs' work in one output.

An embeddings file of `baseline`/`embed` records what produced it (adapter, its parameters, the weights' identity,
the corpus it was fitted on) and what its papers were chosen for; a checkpoint of `train specter`, which a later
run may continue, records its training settings, and a resume compares them with its own and refuses, naming the
first setting that differs. (An embeddings run resumes from the embedding cache, whose key holds what produced
the vectors: `formats/vector_cache.py`.)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from scidocs_eval.errors import ScidocsEvalError
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
