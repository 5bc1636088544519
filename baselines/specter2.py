"""SPECTER2: allenai/specter2_base with a task adapter, loaded through the `adapters` library, [CLS] pooling.

The SPECTER2 authors train one adapter per kind of task and pick it by task (model card of allenai/specter2):

- proximity (allenai/specter2): papers compared with papers: SciDocs' cite, cocite, coview, coread and recomm
  (the "user-citation" and "recomm" embedding groups). The default.
- classification (allenai/specter2_classification): papers fed to a classifier: SciDocs' mag and mesh (the
  "cls" group).
- regression (allenai/specter2_regression): papers fed to a regressor (no SciDocs task).
- adhoc_query (allenai/specter2_adhoc_query): short search queries (no SciDocs task).

`--task-adapter` takes one of these names (a hub id, downloaded by `adapters`, which needs internet), a local
folder written by `model.save_adapter(...)`, `by-group` (the recipe above: one file per embedding group) or
pairs such as `cls=classification,user-citation=proximity,recomm=DIR`. `adapters` pins its own transformers version (see
docs/transformers.md): install it in an environment of its own with ``pip install "scidocs-eval[specter2]"``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from scidocs_eval.baselines.transformer import TransformerAdapter
from scidocs_eval.data.resolve import resolve_suite
from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.evaluation.runner import evaluate
from scidocs_eval.evaluation.task import TASKS, metadata_file_of_group, task_names
from scidocs_eval.extras import require
from scidocs_eval.models.adapter import register_adapter
from scidocs_eval.models.baseline import write_embeddings
from scidocs_eval.models.encoder import TransformerEncoder

TASK_ADAPTERS = {"proximity": "allenai/specter2", "classification": "allenai/specter2_classification",
                 "regression": "allenai/specter2_regression", "adhoc_query": "allenai/specter2_adhoc_query"}
ADAPTER_OF_GROUP = {"cls": "classification", "user-citation": "proximity", "recomm": "proximity"}
"""The task adapter the SPECTER2 authors' recipe uses for each SciDocs embedding group."""


class Specter2Encoder(TransformerEncoder):
    """A `TransformerEncoder` whose network is an `adapters` model with `task_adapter` active.

    The last layer runs in full: its adapter sits inside it, which the [CLS]-row shortcut does not know.
    """

    cls_shortcut = False

    def __init__(self, model: str, task_adapter: str, **options: Any):
        super().__init__(model, **options)
        self.task_adapter = task_adapter

    def load_network(self, path: str) -> Any:
        AutoAdapterModel = require(
            "adapters", "the specter2 adapter (adapters pins its own transformers: install it in an environment of "
            "its own, see docs/transformers.md)").AutoAdapterModel
        network = AutoAdapterModel.from_pretrained(path)
        source = TASK_ADAPTERS.get(self.task_adapter, self.task_adapter)
        local = Path(source).expanduser().is_dir()
        try:
            network.load_adapter(str(Path(source).expanduser()) if local else source, source=None if local else "hf",
                                 load_as="task", set_active=True)
        except (OSError, ValueError) as error:
            raise ScidocsEvalError(f"cannot load SPECTER2 task adapter {self.task_adapter!r}: {error}") from None
        return network


@register_adapter
class Specter2Adapter(TransformerAdapter):
    """SPECTER2: the [CLS] vector of allenai/specter2_base with a task adapter (see the module docstring).

    Args:
        task_adapter: proximity, classification, regression, adhoc_query, or a local adapter folder.
        model, pooling, max_length, batch_size, device, precision, prompt: as for "transformer".
    """

    name = "specter2"
    parameter_constraints = {**TransformerAdapter.parameter_constraints, "task_adapter": [str]}
    default_model: ClassVar[str | None] = "allenai/specter2_base"

    def __init__(self, model: str | None = None, task_adapter: str = "proximity", pooling: str = "cls",
                 max_length: int = 512, batch_size: int = 32, device: str | None = None, precision: str = "auto",
                 prompt: str = ""):
        super().__init__(model, pooling=pooling, max_length=max_length, batch_size=batch_size, device=device,
                         precision=precision, prompt=prompt)
        if task_adapter not in TASK_ADAPTERS and not Path(task_adapter).expanduser().is_dir():
            raise ScidocsEvalError(f"--task-adapter must be one of {', '.join(TASK_ADAPTERS)} or an adapter folder, "
                                   f"not {task_adapter!r}")
        self.task_adapter = task_adapter

    @property
    def encoder(self) -> TransformerEncoder:
        if self._encoder is None:
            self._encoder = Specter2Encoder(self.model, self.task_adapter, **self.encoder_options())
        return self._encoder


def parse_group_adapters(spec: str) -> dict[str, str] | None:
    """`--task-adapter by-group` (the authors' recipe, `ADAPTER_OF_GROUP`) or "cls=classification,recomm=..."
    as {embedding group: task adapter}; None for a single adapter."""
    if spec == "by-group":
        return dict(ADAPTER_OF_GROUP)
    if "=" not in spec:
        return None
    groups = {}
    for pair in spec.split(","):
        group, _, adapter = (part.strip() for part in pair.partition("="))
        if group not in ADAPTER_OF_GROUP or not adapter:
            raise ScidocsEvalError(f"--task-adapter wants GROUP=ADAPTER pairs with a group of "
                                   f"{', '.join(ADAPTER_OF_GROUP)}, got {pair!r}")
        groups[group] = adapter
    return groups


def run_specter2_by_group(groups: Mapping[str, str], data: str | os.PathLike[str] | None, *,
                          out_dir: str | os.PathLike[str], params: Mapping[str, Any], tasks: Sequence[str] | None,
                          split: str, task_params: Mapping[str, Mapping[str, Any]] | None, resume: bool,
                          progress: bool) -> RunResult:
    """`baseline specter2 --task-adapter by-group`: each embedding group's papers with its own task adapter.

    Writes OUT_DIR/specter2-GROUP.jsonl per group the tasks need and OUT_DIR/specter2.results.json, scored as
    `run --cls ... --user-citation ... --recomm ...` scores three files.
    """
    suite = resolve_suite(data)
    needed = sorted({TASKS[name].spec.embedding_group for name in (TASKS.check(tasks) if tasks else task_names())})
    absent = [group for group in needed if group not in groups]
    if absent:
        raise ScidocsEvalError(f"--task-adapter names no adapter for the {', '.join(absent)} group(s) the tasks need")
    options = {key: value for key, value in params.items() if key != "task_adapter"}
    adapters = {name: Specter2Adapter(task_adapter=name, **options) for name in sorted(set(groups.values()))}
    files = {}
    for group in needed:
        metadata = metadata_file_of_group(group)
        if not suite.has(metadata):
            continue
        files[group] = write_embeddings(adapters[groups[group]], suite.papers((metadata,)),
                                        Path(out_dir) / f"specter2-{group}.jsonl", resume=resume, progress=progress)
    result = evaluate(files, suite, tasks=tasks, split=split, task_params=task_params, model="specter2",
                      progress=progress)
    result.settings["adapter"] = {"name": "specter2", "paper_row": None, "groups": dict(groups),
                                  "params": next(iter(adapters.values())).get_params()}
    result.save(Path(out_dir) / "specter2.results.json")
    return result
