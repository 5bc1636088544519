"""The Spark engine (local mode) writes the same bytes as DuckDB from the same snapshot and seed: the one
definition of the queries, translated by SQLGlot, and the draws made in Python."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

pytest.importorskip("duckdb", reason="the [graph] extra (duckdb, sqlglot) is not installed")
pytest.importorskip("pyspark", reason="the [spark] extra (pyspark) is not installed")

from scidocs_eval.data.graph.recipe import Recipe, build_graph_suite  # noqa: E402
from scidocs_eval.data.graph.synthetic import write_synthetic_snapshot  # noqa: E402
from scidocs_eval.formats.corpus import parse_published  # noqa: E402
from tests.test_graph_build import digests  # noqa: E402

SMALL = Recipe(queries_per_split=20, papers_per_class=20, train_queries=100)


@pytest.mark.slow
@pytest.mark.parametrize(("source", "cutoff"), [("openalex", "2018-06-30"), ("s2", "2018")])
def test_spark_writes_the_same_bytes_as_duckdb(tmp_path: Path, source: str, cutoff: str) -> None:
    snapshot = tmp_path / "snapshot"
    write_synthetic_snapshot(snapshot, 300, source=source, seed=5)
    bad_part = next((snapshot / ("data/works/updated_date=2024-07-15" if source == "openalex" else "papers"))
                    .glob("*.gz")).with_name("part_999.gz")
    bad_part.write_bytes(gzip.compress(b'{"title": "no id"}\n{"broken\n', mtime=0))
    suites = {}
    for engine in ("duckdb", "spark"):
        suites[engine] = tmp_path / engine
        report = build_graph_suite(source, snapshot, suites[engine], engine=engine, seed=7,
                                   test_after=parse_published(cutoff), recipe=SMALL, max_bad_rows=2, progress=False)
        assert report.counts["bad_rows"] == 2 and {"mag", "cite", "cocite"} <= set(report.built_tasks())
    duckdb, spark = digests(suites["duckdb"]), digests(suites["spark"])
    assert len(duckdb) > 20 and spark == duckdb
