"""`export mteb`: results files as MTEB's results layout, for the tasks that reproduce an MTEB task.

MTEB's results repository (and `mteb.ResultCache`) holds `{org}__{model}/{revision}/{TaskName}.json`, each a
`TaskResult` (dataset_revision, task_name, mteb_version, scores {split: [{...metrics, main_score, hf_subset,
languages}]}, evaluation_time, kg_co2_emissions), beside a `model_meta.json`. A task is exported only when its
numbers are MTEB's: it has an MTEB counterpart (`TaskSpec.mteb_task`), ran on the split MTEB evaluates, and every
query and document had an embedding; every other task is listed as not exported, with the reason.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.task import TASKS
from scidocs_eval.formats.safe_output import declare_inputs, given_as, owned_folder, write_bytes_atomically

NO_REVISION = "no_revision_available"
"""MTEB's revision folder for a model without a known revision."""
MTEB_SIMILARITY = {"cosine": "cosine", "dot": "dot", "neg-l2": "euclidean"}
LANGUAGES = ["eng-Latn"]
_MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?")


@dataclass
class ExportReport:
    """What was written (model folder -> task files) and what was not exported (source: task -> why)."""

    out_dir: str
    written: dict[str, list[str]] = field(default_factory=dict)
    not_exported: dict[str, dict[str, str]] = field(default_factory=dict)

    def format(self) -> str:
        lines = [f"{folder}: {', '.join(files)}" for folder, files in self.written.items()]
        lines += [f"not exported from {source}: {task} ({why})" for source, tasks in self.not_exported.items()
                  for task, why in tasks.items()]
        return "\n".join(lines or ["nothing exported"])


def _why_not(name: str, result: Any, split: str) -> str | None:
    spec = TASKS[name].spec if name in TASKS else None
    if spec is None or spec.mteb_task is None:
        return "no MTEB counterpart"
    if split != "test":
        return f"run on the {split} split; MTEB reports the test split"
    if "mteb_scores" not in result.details:
        return "the results file has no MTEB scores (written by an older version)"
    gaps = {k: v for k, v in result.coverage.items() if k.endswith(("_missing", "_empty")) and v}
    if gaps:
        return "some queries or documents had no embedding (" + ", ".join(f"{k}={v}" for k, v in gaps.items()) + \
            "), so the numbers are not MTEB's"
    return None


def task_result_json(name: str, result: Any) -> dict[str, Any]:
    """MTEB's TaskResult fields for one of our task results (its `details["mteb_scores"]`)."""
    spec = TASKS[name].spec
    scores = {**result.details["mteb_scores"], "hf_subset": spec.dataset.get("subset", "default"),
              "languages": LANGUAGES}
    return {"dataset_revision": spec.dataset["revision"], "task_name": spec.mteb_task, "mteb_version": None,
            "scores": {spec.dataset.get("split", "test"): [scores]}, "evaluation_time": result.seconds,
            "kg_co2_emissions": None}


def model_meta_json(name: str, revision: str, similarity: str | None) -> dict[str, Any]:
    """A model_meta.json MTEB's loader accepts: the name, revision and similarity; the rest unknown (null)."""
    return {"name": name, "revision": revision, "release_date": None, "languages": None, "n_parameters": None,
            "memory_usage_mb": None, "max_tokens": None, "embed_dim": None, "license": None,
            "open_weights": None, "public_training_code": None, "public_training_data": None, "framework": [],
            "reference": None, "similarity_fn_name": MTEB_SIMILARITY.get(similarity or ""),
            "use_instructions": None, "training_datasets": None, "adapted_from": None, "superseded_by": None,
            "modalities": ["text"], "loader": None}


def export_mteb(results: Sequence[str | os.PathLike[str]], out_dir: str | os.PathLike[str],
                model_name: str | None = None, revision: str = NO_REVISION) -> ExportReport:
    """Write the MTEB results layout of `results` into `out_dir` (a folder the tool owns; see `owned_folder`).

    Args:
        results: scidocs-eval results files; each one's model becomes a model folder.
        model_name: the model's MTEB name ("org/name"); default: each results file's model name.
        revision: the model's revision folder (default MTEB's "no_revision_available").
    """
    from scidocs_eval.evaluation.results import RunResult

    # no file written into `out_dir` may be one of them, --overwrite or not
    declare_inputs(given_as("RESULTS.json", results, "export"))
    loaded = [(str(path), RunResult.load(path)) for path in results]
    if model_name is not None and len({run.model for _, run in loaded}) > 1:
        raise ScidocsEvalError("--model-name names one model, but the results files are of several models: "
                               + ", ".join(sorted({run.model for _, run in loaded})))
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", revision):
        raise ScidocsEvalError(f"--revision {revision!r}: letters, digits, '.', '_' or '-' only")
    report = ExportReport(str(out_dir))
    files: dict[Path, bytes] = {}
    for source, run in loaded:
        name = model_name or run.model
        if not _MODEL_NAME.fullmatch(name):
            raise ScidocsEvalError(f"{source}: model name {name!r} is not an MTEB model name (org/name); give "
                                   "--model-name")
        folder = Path(name.replace("/", "__")) / revision
        split = run.settings.split
        similarity = None
        for task, result in run.tasks.items():
            why = _why_not(task, result, split)
            if why is not None:
                report.not_exported.setdefault(source, {})[task] = why
                continue
            target = folder / f"{TASKS[task].spec.mteb_task}.json"
            if target in files:
                raise ScidocsEvalError(f"{source}: {TASKS[task].spec.mteb_task} of {name} is in two results files; "
                                       "export them apart (another --out, or --revision)")
            files[target] = orjson.dumps(task_result_json(task, result), option=orjson.OPT_INDENT_2)
            similarity = result.details.get("similarity", similarity)
            report.written.setdefault(str(folder), []).append(target.name)
        if str(folder) in report.written:
            files[folder / "model_meta.json"] = orjson.dumps(model_meta_json(name, revision, similarity),
                                                             option=orjson.OPT_INDENT_2)
    if not files:
        raise ScidocsEvalError("no task of these results has an MTEB counterpart scored as MTEB scores it: "
                               + report.format().replace("\n", "; "))
    with owned_folder(out_dir, "scidocs-eval export mteb") as staging:
        for relative, data in files.items():
            write_bytes_atomically(Path(staging) / relative, data, rows=None)
    return report
