"""SciDocs-style suites from the open scholarly graph (an OpenAlex works snapshot or Semantic Scholar's bulk
datasets), built out of core by one definition of the queries run on DuckDB or Spark (docs/data.md)."""
