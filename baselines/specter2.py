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

from pathlib import Path
from typing import Any, ClassVar

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.task import TASKS
from scidocs_eval.extras import require
from scidocs_eval.models.adapter import Adapter, register_adapter
from scidocs_eval.models.encoder import TransformerEncoder
from scidocs_eval.models.transformer_adapter import TransformerAdapter

TASK_ADAPTERS = {"proximity": "allenai/specter2", "classification": "allenai/specter2_classification",
                 "regression": "allenai/specter2_regression", "adhoc_query": "allenai/specter2_adhoc_query"}
ADAPTER_OF_GROUP = {"cls": "classification", "user-citation": "proximity", "recomm": "proximity"}
"""The task adapter the SPECTER2 authors' recipe uses for each SciDocs embedding group."""
ADAPTER_OF_FORMAT = {"classification": "classification", "regression": "regression", "proximity": "proximity",
                     "adhoc_search": "proximity"}
"""The recipe for a task that declares its input format (`input_format`, SciRepEval's tasks): a search task's
group holds its candidates and its queries, embedded alike (SciRepEval gives queries the adhoc_query adapter)."""


def adapter_recipe() -> dict[str, str]:
    """{embedding group: task adapter} of the authors' recipe for every registered task's group."""
    groups = dict(ADAPTER_OF_GROUP)
    for _, task in TASKS.items():
        input_format = getattr(task, "input_format", None)
        if input_format in ADAPTER_OF_FORMAT:
            groups.setdefault(task.spec.embedding_group, ADAPTER_OF_FORMAT[input_format])
    return groups


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
        task_adapter: proximity, classification, regression, adhoc_query, a local adapter folder, "by-group"
            (the authors' adapter per embeddings group) or GROUP=ADAPTER pairs (`parse_group_adapters`).
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
        self.task_adapter = task_adapter

    def check_params(self) -> None:
        super().check_params()
        for task_adapter in (parse_group_adapters(self.task_adapter) or {"": self.task_adapter}).values():
            if task_adapter not in TASK_ADAPTERS and not Path(task_adapter).expanduser().is_dir():
                raise ScidocsEvalError(f"--task-adapter must be one of {', '.join(TASK_ADAPTERS)}, an adapter "
                                       f"folder, by-group or GROUP=ADAPTER pairs, not {task_adapter!r}")

    def group_adapters(self) -> dict[str, Adapter] | None:
        """With "by-group" or GROUP=ADAPTER pairs: one SPECTER2 adapter per embeddings group (those named
        alike shared), as `run --cls ... --user-citation ... --recomm ...` scores three files."""
        groups = parse_group_adapters(self.task_adapter)
        if groups is None:
            return None
        params = {key: value for key, value in self.get_params().items() if key != "task_adapter"}
        adapters = {name: Specter2Adapter(task_adapter=name, **params) for name in sorted(set(groups.values()))}
        return {group: adapters[name] for group, name in groups.items()}

    @property
    def encoder(self) -> TransformerEncoder:
        if self._encoder is None:
            self._encoder = Specter2Encoder(self.checkpoint, self.task_adapter, **self.encoder_options())
        return self._encoder


def parse_group_adapters(spec: str) -> dict[str, str] | None:
    """`--task-adapter by-group` (the authors' recipe, `ADAPTER_OF_GROUP`) or "cls=classification,recomm=..."
    as {embedding group: task adapter}; None for a single adapter."""
    recipe = adapter_recipe()
    if spec == "by-group":
        return recipe
    if "=" not in spec:
        return None
    groups = {}
    for pair in spec.split(","):
        group, _, adapter = (part.strip() for part in pair.partition("="))
        if group not in recipe or not adapter:
            raise ScidocsEvalError(f"--task-adapter wants GROUP=ADAPTER pairs with a group of "
                                   f"{', '.join(recipe)}, got {pair!r}")
        groups[group] = adapter
    return groups
