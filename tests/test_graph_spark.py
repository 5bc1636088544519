"""The Spark engine (local mode) writes the same bytes as DuckDB from the same snapshot and seed: the one
definition of the queries, translated by SQLGlot, the one schema check of every record, and the draws made in
Python. One Spark session serves the module (the engine leaves a session it did not start running)."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("duckdb", reason="the [graph] extra (duckdb, sqlglot) is not installed")
pytest.importorskip("pyspark", reason="the [spark] extra (pyspark) is not installed")

from scidocs_eval.data.graph.recipe import Recipe, build_graph_suite  # noqa: E402
from scidocs_eval.data.graph.synthetic import write_synthetic_snapshot  # noqa: E402
from scidocs_eval.errors import ScidocsEvalError  # noqa: E402
from scidocs_eval.formats.corpus import parse_published  # noqa: E402
from tests.test_graph_build import digests  # noqa: E402

SMALL = Recipe(queries_per_split=10, papers_per_class=10, train_queries=50)
BAD = {  # per source: a part of bad rows (malformed, without the key, fields of a wrong JSON type)
    "openalex": ("data/works/updated_date=2024-07-15/part_999.gz", [
        b'{"title": "no id"}', b'{"broken', b'{"id": "https://openalex.org/W900001", "publication_date": 123}',
        b'{"id": "https://openalex.org/W900002", "referenced_works": "W1"}',
        b'{"id": "https://openalex.org/W900003", "title": ["x"]}',
        b'{"id": "https://openalex.org/W900004", "mesh": [{"descriptor_name": 5, "is_major_topic": true}]}',
        b'{"id": "https://openalex.org/W900005", "publication_year": "2020"}']),
    "s2": ("papers/part_999.gz", [b'{"title": "no id"}', b'{"broken', b'{"corpusid": "abc", "title": "x"}',
                                  b'{"corpusid": 900001, "year": 2020.5}',
                                  b'{"corpusid": 900002, "s2fieldsofstudy": [{"category": ["Biology"]}]}']),
}


@pytest.fixture(scope="module")
def spark() -> Iterator[object]:
    sql = pytest.importorskip("pyspark.sql")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # as the engine does: workers run this Python
    session = (sql.SparkSession.builder.master("local[2]").appName("scidocs-eval tests")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2")
               # a short run on small tables: the JIT's first tier and no generated code (the results are the same)
               .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
               .config("spark.sql.codegen.wholeStage", "false").config("spark.sql.codegen.factoryMode", "NO_CODEGEN")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _snapshot(folder: Path, source: str) -> tuple[Path, int]:
    write_synthetic_snapshot(folder, 200, source=source, seed=5)
    part, lines = BAD[source]
    (folder / part).write_bytes(gzip.compress(b"\n".join(lines) + b"\n", mtime=0))
    return folder / part, len(lines)


@pytest.mark.slow
@pytest.mark.parametrize(("source", "cutoff"), [("openalex", "2018-06-30"), ("s2", "2018")])
def test_spark_writes_the_same_bytes_as_duckdb(spark: object, tmp_path: Path, source: str, cutoff: str) -> None:
    snapshot, bad = _snapshot(tmp_path / "snapshot", source)
    suites = {}
    for engine in ("duckdb", "spark"):
        suites[engine] = tmp_path / engine
        report = build_graph_suite(source, tmp_path / "snapshot", suites[engine], engine=engine, seed=7,
                                   test_after=parse_published(cutoff), recipe=SMALL, max_bad_rows=bad,
                                   progress=False)
        assert report.counts["bad_rows"] == bad and {"mag", "cite", "cocite"} <= set(report.built_tasks())
        assert [row.split(":")[1] for row in report.bad_rows] == [str(n) for n in range(1, bad + 1)]
    duckdb, spark_suite = digests(suites["duckdb"]), digests(suites["spark"])
    assert len(duckdb) > 20 and spark_suite == duckdb  # build.json (with the bad rows named) among them


@pytest.mark.slow
def test_spark_refuses_a_wrong_type_as_duckdb_does(spark: object, tmp_path: Path) -> None:
    snapshot, bad = _snapshot(tmp_path / "snapshot", "openalex")
    errors = []
    for engine in ("duckdb", "spark"):
        with pytest.raises(ScidocsEvalError) as refused:
            build_graph_suite("openalex", tmp_path / "snapshot", tmp_path / engine, engine=engine, recipe=SMALL,
                              max_bad_rows=bad - 1, progress=False)
        errors.append(str(refused.value))
        assert not (tmp_path / engine).exists()
    assert errors[0] == errors[1] and errors[0].startswith(f"{snapshot}:1: no 'id' (and {bad - 1} more bad rows: ")
    assert f"{snapshot}:3: publication_date: wrong type" in errors[0]


@pytest.mark.slow
def test_spark_workers_run_this_python_from_a_virtual_environment_that_is_not_activated(tmp_path: Path) -> None:
    """PySpark starts its local workers with $PYSPARK_PYTHON, else whatever `python3` PATH finds: the engine
    names its own interpreter, so `.venv/bin/scidocs-eval data build --engine spark` works with no `activate`
    (workers without the package failed with a traceback). A task of the engine's own code, in a Python started
    as that command would be: this environment's, with its bin folder off PATH."""
    pytest.importorskip("pyspark.sql")
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV")}
    environment["PATH"] = os.pathsep.join(part for part in environment.get("PATH", "").split(os.pathsep)
                                          if Path(part).resolve() != Path(sys.executable).parent.resolve())
    code = ("from scidocs_eval.data.graph.engines import SparkEngine; "
            "engine = SparkEngine(master='local[1]', progress=False); "
            "print(engine.map_parts(str, [(1,), (2,)])); engine.close()")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment, cwd=tmp_path)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "['1', '2']"
