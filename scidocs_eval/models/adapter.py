"""The model-adapter interface: turn papers (id, title, abstract) into vectors, scikit-learn style.

An adapter is one small class with its parameters in `__init__`, registered by name with
`@register_adapter`. `fit(papers, suite)` trains on a corpus (a no-op for pretrained models); `transform`
returns a (n_papers, dim) float32 matrix. Adapters that stream (transformers) override `transform_batches`
so the runner can write each batch as it is produced. `scidocs_eval.baselines` holds the built-in ones.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import numpy as np

from scidocs_eval.formats.suite import Paper, Suite
from scidocs_eval.params import Constraints
from scidocs_eval.registry import Registry, check_params


class Adapter(ABC):
    """Base class of every model adapter.

    Class attributes:
        name: the registry name (`scidocs-eval baseline NAME`).
        paper_row: the Table 1 row this adapter reproduces, if any (recorded in the results file).
    """

    name: ClassVar[str]
    paper_row: ClassVar[str | None] = None
    parameter_constraints: ClassVar[Constraints] = {}
    """every constructor parameter's type and range (`scidocs_eval.params`), checked before the adapter is built."""

    def fit(self, papers: Sequence[Paper], suite: Suite | None = None) -> Adapter:
        """Train on `papers` (the suite's metadata or a separate corpus); `suite` is there for tuning on val."""
        return self

    @classmethod
    def needs_fitting(cls) -> bool:
        """True for an adapter trained on a corpus before it can embed (it overrides `fit`)."""
        return cls.fit is not Adapter.fit

    @abstractmethod
    def transform(self, papers: Sequence[Paper]) -> np.ndarray:
        """(len(papers), dim) float32 embeddings of papers that have a title or an abstract."""

    def transform_batches(self, papers: Sequence[Paper]) -> Iterator[tuple[Sequence[Paper], np.ndarray]]:
        """Yield (papers, embeddings) batches; the default embeds everything at once."""
        yield papers, self.transform(papers)

    def row_detail(self) -> str | None:
        """What Table 1 should add to this run's label (e.g. a checkpoint that is not the paper's), if anything."""
        return None

    def row_note(self) -> str | None:
        """A footnote Table 1 prints under this run's row (why it is not comparable to the paper's), if any."""
        return None

    def get_params(self) -> dict[str, Any]:
        """Constructor parameters and their current values (recorded in the results file)."""
        names = [p for p in inspect.signature(type(self).__init__).parameters if p != "self"]
        return {name: getattr(self, name) for name in names if hasattr(self, name)}


ADAPTERS: Registry[type[Adapter]] = Registry("baseline", Adapter, plugins="scidocs_eval.baselines")


def register_adapter(cls: type[Adapter]) -> type[Adapter]:
    """Class decorator: make an adapter available by its `name` (a taken name is an error)."""
    return ADAPTERS.register(cls)


def adapter_names() -> list[str]:
    return sorted(ADAPTERS.names())


def get_adapter(name: str, **params: Any) -> Adapter:
    """An adapter by name; a parameter it does not take is an error that lists the ones it does."""
    cls = ADAPTERS[name]
    return cls(**check_params(cls, params, f"baseline {name!r}"))
