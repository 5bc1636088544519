"""SPECTER2: allenai/specter2_base with a task adapter, loaded through the `adapters` library, [CLS] pooling.

The SPECTER2 authors train one adapter per input format (`INPUT_FORMATS`) and pick it by task (model card of
allenai/specter2; SciRepEval's evaluation does the same with its task ids):

- proximity (allenai/specter2): papers compared with papers, and a search's candidates: SciDocs' cite, cocite,
  coview, coread and recomm, SciRepEval's proximity and search tasks.
- classification (allenai/specter2_classification): papers fed to a classifier: SciDocs' mag and mesh.
- regression (allenai/specter2_regression): papers fed to a regressor (SciRepEval's regression tasks).
- adhoc_query (allenai/specter2_adhoc_query): short search queries (SciRepEval's and MTEB's search queries).

`--task-adapter by-format` (the default) follows this recipe in one run: each group's papers are embedded with the
adapter of the group's input format, one file per format, a paper two formats need once with each;
FORMAT=ADAPTER pairs (`classification=DIR,adhoc_query=DIR2`) replace the adapters of the formats they name. It
also takes one adapter for everything (a name above, a hub id downloaded by `adapters`, which needs internet, or a
local folder written by `model.save_adapter(...)`) or GROUP=ADAPTER pairs such as
`cls=classification,user-citation=proximity,recomm=DIR`. `adapters` pins its own transformers version (see
docs/transformers.md): install it in an environment of its own, from a checkout with
``pip install -c constraints.txt -e ".[specter2]"``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.papers import EmbeddingRole
from scidocs_eval.evaluation.task import INPUT_FORMATS, group_input_formats
from scidocs_eval.extras import require
from scidocs_eval.models.adapter import Adapter, register_adapter
from scidocs_eval.models.encoder import TransformerEncoder
from scidocs_eval.models.transformer_adapter import TransformerAdapter
from scidocs_eval.params import InputPath

log = logging.getLogger("scidocs_eval")

TASK_ADAPTERS = {"classification": "allenai/specter2_classification", "regression": "allenai/specter2_regression",
                 "proximity": "allenai/specter2", "adhoc_query": "allenai/specter2_adhoc_query"}
"""The authors' adapter of each input format (the keys are `INPUT_FORMATS`)."""
BY_FORMAT = "by-format"
OLD_BY_FORMAT = "by-group"
"""The earlier name of `BY_FORMAT` (each SciDocs group then had one adapter); still accepted."""


class Specter2Encoder(TransformerEncoder):
    """A `TransformerEncoder` whose network is an `adapters` model with `task_adapter` active; set `task_adapter`
    to switch (each adapter is loaded once, on first use).

    The last layer runs in full: its adapter sits inside it, which the [CLS]-row shortcut does not know.
    """

    cls_shortcut = False

    def __init__(self, model: str, task_adapter: str, **options: Any):
        super().__init__(model, **options)
        self.task_adapter = task_adapter
        self._loaded_adapters: dict[str, str] = {}
        self._active: str | None = None

    def load_network(self, path: str) -> Any:
        AutoAdapterModel = require(
            "adapters", "the specter2 adapter (adapters pins its own transformers: install it in an environment of "
            "its own, see docs/transformers.md)").AutoAdapterModel
        return AutoAdapterModel.from_pretrained(path)

    def load(self) -> tuple[Any, Any, str]:
        loaded = super().load()
        if self._active != self.task_adapter:
            self._activate(loaded[1], loaded[2])
        return loaded

    def _activate(self, network: Any, device: str) -> None:
        if self.task_adapter not in self._loaded_adapters:
            source = TASK_ADAPTERS.get(self.task_adapter, self.task_adapter)
            local = Path(source).expanduser().is_dir()
            name = f"task_adapter_{len(self._loaded_adapters)}"
            try:
                network.load_adapter(str(Path(source).expanduser()) if local else source,
                                     source=None if local else "hf", load_as=name)
            except (OSError, ValueError) as error:
                raise ScidocsEvalError(f"cannot load SPECTER2 task adapter {self.task_adapter!r}: {error}") from None
            network.to(device)
            self._loaded_adapters[self.task_adapter] = name
        network.set_active_adapters(self._loaded_adapters[self.task_adapter])
        self._active = self.task_adapter


@register_adapter
class Specter2Adapter(TransformerAdapter):
    """SPECTER2: the [CLS] vector of allenai/specter2_base with a task adapter (see the module docstring).

    Args:
        task_adapter: "by-format" (the authors' adapter for each input format), FORMAT=ADAPTER pairs
            (`format_adapters`), proximity, classification, regression, adhoc_query, a local adapter folder, or
            GROUP=ADAPTER pairs (`parse_group_adapters`).
        model, pooling, max_length, batch_size, device, precision, prompt, format_prompts: as for "transformer".
    """

    name = "specter2"
    parameter_constraints = {**TransformerAdapter.parameter_constraints,
                             "task_adapter": [InputPath(folder=True, or_name="a task adapter's name or hub id")]}
    default_model: ClassVar[str | None] = "allenai/specter2_base"

    def __init__(self, model: str | None = None, task_adapter: str = BY_FORMAT, pooling: str = "cls",
                 max_length: int = 512, batch_size: int = 32, device: str | None = None, precision: str = "auto",
                 prompt: str = "", format_prompts: dict[str, str] | None = None):
        super().__init__(model, pooling=pooling, max_length=max_length, batch_size=batch_size, device=device,
                         precision=precision, prompt=prompt, format_prompts=format_prompts)
        self.task_adapter = task_adapter

    def check_params(self) -> None:
        if self.task_adapter == OLD_BY_FORMAT:
            log.warning("--task-adapter by-group is now called by-format (each input format's adapter)")
        chosen = format_adapters(self.task_adapter) or parse_group_adapters(self.task_adapter) or \
            {"": self.task_adapter}
        for task_adapter in chosen.values():
            if task_adapter not in TASK_ADAPTERS and not Path(task_adapter).expanduser().is_dir():
                raise ScidocsEvalError(f"--task-adapter must be by-format, one of {', '.join(TASK_ADAPTERS)}, an "
                                       f"adapter folder, or GROUP=ADAPTER or FORMAT=ADAPTER pairs, not "
                                       f"{task_adapter!r}")
        super().check_params()  # after the parameters: it looks for the model, which a bad --task-adapter never needs

    @property
    def by_recipe(self) -> bool:
        """Whether each input format gets its own adapter (`task_adapter` "by-format" or FORMAT=ADAPTER pairs)."""
        return format_adapters(self.task_adapter) is not None

    @property
    def by_format(self) -> bool:
        return self.by_recipe or super().by_format

    @contextmanager
    def embedding_role(self, role: EmbeddingRole) -> Iterator[None]:
        """By format: papers embedded for `role` go through its input format's adapter (and prompt)."""
        with super().embedding_role(role):
            encoder = self.encoder
            recipe = format_adapters(self.task_adapter)
            if recipe is not None:
                encoder.task_adapter = recipe[role.input_format]
            try:
                yield
            finally:
                encoder.task_adapter = self.outside_roles

    @property
    def outside_roles(self) -> str:
        """The adapter of papers embedded in no role (`embed`): by format, proximity's (comparing papers)."""
        recipe = format_adapters(self.task_adapter)
        return recipe["proximity"] if recipe is not None else self.task_adapter

    def group_adapters(self) -> dict[str, Adapter] | None:
        """With GROUP=ADAPTER pairs: one SPECTER2 adapter per embeddings group (those named alike shared), as
        `run --cls ... --user-citation ... --recomm ...` scores three files."""
        groups = parse_group_adapters(self.task_adapter)
        if groups is None:
            return None
        params = {key: value for key, value in self.get_params().items() if key != "task_adapter"}
        adapters = {name: Specter2Adapter(task_adapter=name, **params) for name in sorted(set(groups.values()))}
        return {group: adapters[name] for group, name in groups.items()}

    @property
    def encoder(self) -> TransformerEncoder:
        if self._encoder is None:
            self._encoder = Specter2Encoder(self.checkpoint, self.outside_roles, **self.encoder_options())
        return self._encoder


def _pairs(spec: str) -> dict[str, str] | None:
    """"a=b,c=d" as {a: b, c: d}; None for a spec without '='."""
    if "=" not in spec:
        return None
    pairs = {}
    for pair in spec.split(","):
        key, _, adapter = (part.strip() for part in pair.partition("="))
        if not key or not adapter:
            raise ScidocsEvalError(f"--task-adapter wants GROUP=ADAPTER or FORMAT=ADAPTER pairs, got {pair!r}")
        pairs[key] = adapter
    return pairs


def format_adapters(spec: str) -> dict[str, str] | None:
    """{input format: task adapter} for "by-format" (the authors' adapters) or FORMAT=ADAPTER pairs (the formats
    not named keep the authors'); None for one adapter or GROUP=ADAPTER pairs."""
    pairs = {} if spec in (BY_FORMAT, OLD_BY_FORMAT) else _pairs(spec)
    if pairs is None or not set(pairs) <= set(TASK_ADAPTERS):
        return None
    return {**{input_format: input_format for input_format in INPUT_FORMATS}, **pairs}


def parse_group_adapters(spec: str) -> dict[str, str] | None:
    """"cls=classification,recomm=..." as {embedding group: task adapter}; None for one adapter, by-format or
    FORMAT=ADAPTER pairs."""
    pairs = _pairs(spec)
    if pairs is None or set(pairs) <= set(TASK_ADAPTERS):
        return None
    groups = group_input_formats()
    unknown = [f"{key}={adapter}" for key, adapter in pairs.items() if key not in groups]
    if unknown:
        raise ScidocsEvalError(f"--task-adapter wants GROUP=ADAPTER pairs with a group of {', '.join(groups)}, or "
                               f"FORMAT=ADAPTER pairs with a format of {', '.join(INPUT_FORMATS)}; got "
                               f"{', '.join(map(repr, unknown))}")
    return pairs
