"""evaluate(): one file vs the official three files, the results file round trip, fingerprints, bad arguments."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from scidocs_eval import evaluate as package_evaluate
from scidocs_eval.errors import InputError, ScidocsEvalError
from scidocs_eval.evaluation.config import RunConfig
from scidocs_eval.evaluation.results import RunResult, RunSettings
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.formats.embeddings import format_embedding_line
from scidocs_eval.formats.suite import Suite
from scidocs_eval.leaderboard import table1_row
from scidocs_eval.leaderboard.run_table import format_run

TASKS = ["mag", "cite"]


def write_random_embeddings(path: Path, paper_ids: list[str], dim: int = 8, seed: int = 0) -> Path:
    """Deterministic per-id vectors, so the same paper gets the same vector in every file."""
    lines = []
    for paper_id in paper_ids:
        rng = np.random.default_rng(int(hashlib.sha1(f"{seed}{paper_id}".encode()).hexdigest()[:8], 16))
        lines.append(format_embedding_line(paper_id, rng.standard_normal(dim)))
    path.write_bytes(b"".join(lines))
    return path


@pytest.fixture(scope="module")
def embedding_files(demo_suite: Suite, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("embeddings")
    return {
        "all": write_random_embeddings(folder / "model.jsonl", [p.paper_id for p in demo_suite.papers()]),
        "cls": write_random_embeddings(folder / "cls.jsonl", list(demo_suite.metadata("mag_mesh"))),
        "user-citation": write_random_embeddings(folder / "user-citation.jsonl",
                                                 list(demo_suite.metadata("view_cite_read"))),
    }


@pytest.fixture(scope="module")
def one_file_result(demo_suite: Suite, embedding_files: dict[str, Path]) -> RunResult:
    return evaluate(embedding_files["all"], RunConfig(data=demo_suite, tasks=TASKS, progress=False))


def test_one_file_and_three_file_forms_agree(demo_suite: Suite, embedding_files: dict[str, Path],
                                            one_file_result: RunResult) -> None:
    three = evaluate({"cls": embedding_files["cls"], "user-citation": embedding_files["user-citation"]},
                     RunConfig(data=demo_suite, tasks=TASKS, progress=False))
    assert {n: r.metrics for n, r in three.tasks.items()} == {n: r.metrics for n, r in one_file_result.tasks.items()}
    assert three.tasks["cite"].coverage == one_file_result.tasks["cite"].coverage
    assert set(three.fingerprints["embeddings"]) == {"cls", "user-citation"}
    assert three.model == "cls"


def test_result_contents(demo_suite: Suite, embedding_files: dict[str, Path], one_file_result: RunResult) -> None:
    result = one_file_result
    assert result.model == "model" and result.synthetic is True and result.skipped == {}
    assert set(result.tasks) == set(TASKS)
    assert set(result.tasks["mag"].metrics) == {"f1"} and set(result.tasks["cite"].metrics) == {"map", "ndcg"}
    assert result.settings == RunSettings(data=str(demo_suite.root), tasks=tuple(TASKS), dtype="float32",
                                          min_coverage=0.8)
    assert result.settings.to_dict() == {"data": str(demo_suite.root), "tasks": TASKS, "split": "test",
                                         "missing": "official", "task_params": {}, "dtype": "float32",
                                         "min_coverage": 0.8}
    fingerprint = result.fingerprints["embeddings"]["cls"]
    assert fingerprint["sha256"] == hashlib.sha256(embedding_files["all"].read_bytes()).hexdigest()
    assert fingerprint["path"] == str(embedding_files["all"]) and fingerprint["dim"] == 8
    assert fingerprint["papers"] == len(demo_suite.papers()) and fingerprint["repeated_ids"] == 0
    assert set(result.fingerprints["embeddings"]) == {"cls", "user-citation", "recomm"}
    data = result.fingerprints["data"]
    assert sorted(data) == ["cite/test.qrel", "mag/test.csv", "mag/train.csv"]
    assert data["cite/test.qrel"] == hashlib.sha256((demo_suite.root / "cite/test.qrel").read_bytes()).hexdigest()
    assert set(result.timings) == {"loading_embeddings", "total"}  # phases; each task's seconds are its own
    assert result.timings["total"] >= result.tasks["mag"].seconds > 0
    assert {"numpy", "scikit-learn", "pytrec-eval-terrier", "scidocs-eval"} <= set(result.versions)
    assert table1_row(result) == {"mag_f1": result.tasks["mag"].metrics["f1"],
                                   "cite_map": result.tasks["cite"].metrics["map"],
                                   "cite_ndcg": result.tasks["cite"].metrics["ndcg"]}
    assert format_run(result).splitlines()[0] == "model (synthetic demo suite)"


def test_save_load_round_trip(one_file_result: RunResult, tmp_path: Path) -> None:
    path = one_file_result.save(tmp_path / "deep" / "r.json")
    loaded = RunResult.load(path)
    assert loaded.to_dict() == one_file_result.to_dict()
    assert loaded.tasks["cite"].coverage == one_file_result.tasks["cite"].coverage
    assert loaded.tasks["mag"].details["C"] == one_file_result.tasks["mag"].details["C"]


def test_output_argument_writes_the_file(demo_suite: Suite, embedding_files: dict[str, Path], tmp_path: Path) -> None:
    config = RunConfig(data=demo_suite, tasks=["cocite"], split="val", output=tmp_path / "out.json", progress=False)
    result = package_evaluate(embedding_files["user-citation"], config, model="mine")
    loaded = RunResult.load(tmp_path / "out.json")
    assert loaded.model == "mine" and loaded.settings.split == "val"
    assert loaded.tasks["cocite"].metrics == result.tasks["cocite"].metrics


@pytest.mark.parametrize("text, message", [("", "not a scidocs-eval results file"),
                                           ('{"model": "m"}', "not a scidocs-eval results file")])
def test_load_bad_results_file(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "r.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        RunResult.load(path)
    with pytest.raises(InputError, match="results file not found"):
        RunResult.load(tmp_path / "absent.json")


@pytest.mark.parametrize("kwargs, message", [
    ({"split": "train"}, "RunConfig: split='train' is not allowed; split must be one of 'test', 'val'"),
    ({"missing": "ignore"}, "RunConfig: missing='ignore' is not allowed; missing must be one of 'official', 'error'"),
    ({"tasks": ["cite", "nope"]}, "unknown task 'nope'; known tasks: mag, mesh"),
])
def test_bad_arguments(demo_suite: Suite, embedding_files: dict[str, Path], kwargs: dict, message: str) -> None:
    with pytest.raises(ScidocsEvalError, match=message):
        evaluate(embedding_files["all"], RunConfig(data=demo_suite, **kwargs))


def test_unknown_or_absent_group(demo_suite: Suite, embedding_files: dict[str, Path]) -> None:
    with pytest.raises(ScidocsEvalError, match=r"unknown embeddings group\(s\) \['citation'\]"):
        evaluate({"citation": embedding_files["all"]}, RunConfig(data=demo_suite))
    with pytest.raises(ScidocsEvalError, match="no task could run on .*mag: no 'cls' embeddings given"):
        evaluate({"user-citation": embedding_files["all"]}, RunConfig(data=demo_suite, tasks=["mag"]))


def test_results_file_records_path_parameters_as_text(tmp_path):
    """Adapter parameters given as paths (Python API users) are saved as strings, not a crash."""
    from scidocs_eval.evaluation.results import ModelInfo, RunResult

    result = RunResult(model="m", tasks={}, model_info=ModelInfo("sif", params={"vectors": tmp_path / "v.vec"}))
    saved = RunResult.load(result.save(tmp_path / "r.json"))
    assert saved.model_info == ModelInfo("sif", params={"vectors": str(tmp_path / "v.vec")})


def test_results_files_of_earlier_versions_load_their_model_info(tmp_path):
    """Before `model_info`, `baseline` kept it in settings["adapter"] and `evaluate_model` in
    settings["model_object"]: both still load, as the typed `ModelInfo`."""
    from scidocs_eval.evaluation.results import ModelInfo, RunResult

    adapter = {"name": "sif", "paper_row": "SIF", "params": {"a": 0.001}, "train_corpus": None,
               "row_detail": None, "row_note": None}
    old = RunResult(model="m", tasks={}, settings={"adapter": adapter}).save(tmp_path / "baseline.json")
    assert RunResult.load(old).model_info == ModelInfo("sif", paper_row="SIF", params={"a": 0.001})
    call = {"class": "my.Encoder", "inputs": "text", "separator": " ", "batch_size": 32, "encode_kwargs": {}}
    old = RunResult(model="m", tasks={}, settings={"model_object": call}).save(tmp_path / "object.json")
    assert RunResult.load(old).model_info == ModelInfo("my.Encoder", call=call)
    assert RunResult.load(RunResult(model="m", tasks={}).save(tmp_path / "run.json")).model_info is None
