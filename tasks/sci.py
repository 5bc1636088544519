"""The `sci` benchmark: every scientific task here in one run (SciDocs' seven, MTEB's SciDocs tasks and its other
scientific sets, SciRepEval's), so each paper a model embeds is embedded through one plan; `run --benchmark sci`
prints each owner's own averages side by side (`scidocs_eval.leaderboard.sci_table`)."""

from __future__ import annotations

from scidocs_eval.data.hf_datasets import HubDatasets
from scidocs_eval.evaluation.task import BENCHMARKS, Benchmark

BENCHMARKS.register(Benchmark("sci", "every scientific task in one run: SciDocs (2020), MTEB's SciDocs tasks and its "
                                     "other scientific sets, SciRepEval; each owner's averages side by side",
                              members=("scidocs", "mteb-scidocs", "mteb-sci", "scirepeval"), table_kind="sci",
                              download=HubDatasets()))
