"""The engines that run the recipe's queries: DuckDB (embedded, out of core with a memory limit and a spill
folder) and Spark (`local[*]` or a cluster). The recipe's SQL is written once, in DuckDB's dialect; the Spark
engine runs SQLGlot's translation of it. Each engine reads a dataset's gzip JSON lines parts with the dataset's
one schema (`scidocs_eval.data.graph.snapshot`), in strict mode: the parts were checked against that schema first
(`scidocs_eval.data.graph.badrows`, run on the engine's workers by `map_parts`), so a record an engine cannot read
is an error, never a null."""

from __future__ import annotations

import itertools
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from scidocs_eval.data.graph.snapshot import Dataset
from scidocs_eval.extras import require
from scidocs_eval.progress import announce

ENGINES = ("duckdb", "spark")
FILE_COLUMN = "_file"
"""The column every dataset table adds: the part a row was read from."""


class Engine(Protocol):
    """What the recipe needs of an engine: tables from datasets, from queries and from Python rows; query rows."""

    name: str

    def map_parts(self, function: Callable[..., Any], arguments: Sequence[tuple]) -> list[Any]: ...

    def read(self, dataset: Dataset, table: str, substitutes: Mapping[Path, Path]) -> None: ...

    def create(self, table: str, sql: str) -> None: ...

    def put(self, table: str, columns: Sequence[tuple[str, str]], rows: Sequence[tuple]) -> None: ...

    def rows(self, sql: str) -> list[tuple]: ...

    def batches(self, sql: str, size: int = 100_000) -> Iterator[list[tuple]]: ...

    def close(self) -> None: ...


class _Timed:
    """One progress line per stage (a table created), with its time."""

    def __init__(self, progress: bool):
        self.progress = progress

    def _stage(self, table: str, started: float) -> None:
        announce(f"  {self.name}: {table} ({time.perf_counter() - started:.1f} s)", enabled=self.progress)


class DuckDBEngine(_Timed):
    """DuckDB in this process. `memory_limit` ("4GB") caps its memory; beyond it, work spills to
    `temp_directory`; `threads` (default: every core)."""

    name = "duckdb"

    def __init__(self, *, memory_limit: str | None = None, temp_directory: str | os.PathLike[str] | None = None,
                 threads: int | None = None, progress: bool = True):
        super().__init__(progress)
        duckdb = require("duckdb", "data build --engine duckdb", extra="graph")
        config: dict[str, Any] = {"preserve_insertion_order": False}
        if memory_limit:
            config["memory_limit"] = memory_limit
        if temp_directory:
            config["temp_directory"] = str(temp_directory)
        if threads:
            config["threads"] = threads
        self.threads = threads or os.cpu_count() or 1
        self.connection = duckdb.connect(config=config)
        self.connection.execute("SET enable_progress_bar = false")  # one line per stage instead, --quiet hides it

    def map_parts(self, function: Callable[..., Any], arguments: Sequence[tuple]) -> list[Any]:
        """`function(*a)` for each of `arguments`, in as many processes as the engine has threads."""
        started = time.perf_counter()
        with ProcessPoolExecutor(max_workers=min(self.threads, max(1, len(arguments)))) as pool:
            results = list(pool.map(_call, [(function, a) for a in arguments]))
        self._stage(f"{len(arguments)} parts checked", started)
        return results

    def read(self, dataset: Dataset, table: str, substitutes: Mapping[Path, Path]) -> None:
        """A view of the dataset's parts (a substitute read in place of its part, named as the part)."""
        columns = "{" + ", ".join(f"{_quote(k)}: {_quote(v)}" for k, v in dataset.duckdb_columns().items()) + "}"

        def scan(files: Sequence[Path], name: str) -> str:
            listed = "[" + ", ".join(_quote(str(p)) for p in files) + "]"
            return (f"SELECT * EXCLUDE (filename), {name} AS {FILE_COLUMN} FROM read_json({listed}, "
                    f"format='newline_delimited', compression='gzip', columns={columns}, filename=true, "
                    "maximum_object_size=268435456)")
        kept = [p for p in dataset.parts if p not in substitutes]
        scans = ([scan(kept, "filename")] if kept else []) + [
            scan([copy], _quote(str(part))) for part, copy in sorted(substitutes.items())]
        self.connection.execute(f"CREATE OR REPLACE VIEW {table} AS " + " UNION ALL ".join(scans))

    def create(self, table: str, sql: str) -> None:
        started = time.perf_counter()
        self.connection.execute(f"CREATE OR REPLACE TABLE {table} AS {sql}")
        self._stage(table, started)

    def put(self, table: str, columns: Sequence[tuple[str, str]], rows: Sequence[tuple]) -> None:
        import pandas as pd

        frame = pd.DataFrame(list(rows), columns=[name for name, _ in columns])
        self.connection.register("_put", frame)
        casts = ", ".join(f"CAST({name} AS {kind}) AS {name}" for name, kind in columns)
        self.connection.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT {casts} FROM _put")
        self.connection.unregister("_put")

    def rows(self, sql: str) -> list[tuple]:
        return self.connection.execute(sql).fetchall()

    def batches(self, sql: str, size: int = 100_000) -> Iterator[list[tuple]]:
        cursor = self.connection.execute(sql)
        while rows := cursor.fetchmany(size):
            yield rows

    def close(self) -> None:
        self.connection.close()


class SparkEngine(_Timed):
    """A Spark session (`master`: "local[*]", "spark://host:7077", ...) running SQLGlot's Spark translation of
    the recipe's queries; `temp_directory` is its spark.local.dir (shuffle spill)."""

    name = "spark"

    def __init__(self, *, master: str = "local[*]", memory: str | None = None,
                 temp_directory: str | os.PathLike[str] | None = None, progress: bool = True):
        super().__init__(progress)
        with _pandas_version_warning_ignored():
            sql = require("pyspark.sql", "data build --engine spark", extra="spark")
        builder = (sql.SparkSession.builder.master(master).appName("scidocs-eval data build")
                   .config("spark.ui.enabled", "false").config("spark.sql.ansi.enabled", "false")
                   .config("spark.sql.session.timeZone", "UTC").config("spark.sql.caseSensitive", "true")
                   .config("spark.ui.showConsoleProgress", "false"))
        if master.startswith("local"):  # Spark's 200 shuffle partitions are for clusters: one per core here
            builder = builder.config("spark.sql.shuffle.partitions", str(os.cpu_count() or 1))
            # PySpark starts its local workers with $PYSPARK_PYTHON, else `python3` from PATH (it does not read
            # spark.pyspark.python): from a virtual environment that is not activated, a Python without this
            # package, whose workers failed with a traceback
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        if memory:
            builder = builder.config("spark.driver.memory", memory)
        if temp_directory:
            builder = builder.config("spark.local.dir", str(temp_directory))
        with _pandas_version_warning_ignored():
            self.owned = sql.SparkSession.getActiveSession() is None
            """False: the session was started by the caller (a test's), who stops it."""
            self.session = builder.getOrCreate()
        self.session.sparkContext.setLogLevel("ERROR")
        self.functions = require("pyspark.sql.functions", "data build --engine spark", extra="spark")
        self._cached: dict[str, Any] = {}

    @staticmethod
    def translate(sql: str) -> str:
        """The recipe's query (DuckDB's dialect) in Spark's."""
        sqlglot = require("sqlglot", "data build --engine spark", extra="spark")
        return sqlglot.transpile(sql, read="duckdb", write="spark")[0]

    def map_parts(self, function: Callable[..., Any], arguments: Sequence[tuple]) -> list[Any]:
        """`function(*a)` for each of `arguments`, one Spark task each (the parts must be where the workers read)."""
        started = time.perf_counter()
        results = (self.session.sparkContext.parallelize([(function, a) for a in arguments], max(1, len(arguments)))
                   .map(_call).collect())
        self._stage(f"{len(arguments)} parts checked", started)
        return results

    def read(self, dataset: Dataset, table: str, substitutes: Mapping[Path, Path]) -> None:
        """A view of the dataset's parts (a substitute read in place of its part, named as the part)."""
        def scan(files: Sequence[Path]) -> Any:
            return (self.session.read.schema(dataset.spark_schema()).option("mode", "FAILFAST")
                    .json([str(p) for p in files]))
        functions = self.functions
        kept = [p for p in dataset.parts if p not in substitutes]
        frames = [scan(kept).withColumn(FILE_COLUMN, functions.input_file_name())] if kept else []
        frames += [scan([copy]).withColumn(FILE_COLUMN, functions.lit(part.absolute().as_uri()))
                   for part, copy in sorted(substitutes.items())]
        frame = frames[0]
        for other in frames[1:]:
            frame = frame.unionByName(other)
        frame.createOrReplaceTempView(table)

    def create(self, table: str, sql: str) -> None:
        started = time.perf_counter()
        frame = self.session.sql(self.translate(sql)).persist()
        if self.progress:  # computed now to time the stage; else by its first reader (one Spark job fewer)
            frame.count()
        if table in self._cached:
            self._cached[table].unpersist()
        self._cached[table] = frame
        frame.createOrReplaceTempView(table)
        self._stage(table, started)

    def put(self, table: str, columns: Sequence[tuple[str, str]], rows: Sequence[tuple]) -> None:
        schema = ", ".join(f"{name} {'STRING' if kind == 'VARCHAR' else kind}" for name, kind in columns)
        with _pandas_version_warning_ignored():
            self.session.createDataFrame(list(rows), schema=schema).createOrReplaceTempView(table)

    def rows(self, sql: str) -> list[tuple]:
        return [tuple(row) for row in self.session.sql(self.translate(sql)).collect()]

    def batches(self, sql: str, size: int = 100_000) -> Iterator[list[tuple]]:
        rows = (tuple(row) for row in self.session.sql(self.translate(sql)).toLocalIterator())
        while batch := list(itertools.islice(rows, size)):
            yield batch

    def close(self) -> None:
        for frame in self._cached.values():
            frame.unpersist()
        if self.owned:
            self.session.stop()


def _call(function_and_arguments: tuple[Callable[..., Any], tuple]) -> Any:
    function, arguments = function_and_arguments
    return function(*arguments)


@contextmanager
def _pandas_version_warning_ignored() -> Iterator[None]:
    """PySpark warns that it does not support pandas 3 yet: the engine passes it plain rows, never a frame."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
        yield


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def open_engine(name: str, *, master: str = "local[*]", memory_limit: str | None = None,
                temp_directory: str | os.PathLike[str] | None = None, threads: int | None = None,
                progress: bool = True) -> Engine:
    """The engine `name` ("duckdb" or "spark"), configured."""
    if name == "duckdb":
        return DuckDBEngine(memory_limit=memory_limit, temp_directory=temp_directory, threads=threads,
                            progress=progress)
    if name == "spark":
        return SparkEngine(master=master, memory=memory_limit, temp_directory=temp_directory, progress=progress)
    raise ValueError(f"unknown engine {name!r}; choose one of {', '.join(ENGINES)}")
