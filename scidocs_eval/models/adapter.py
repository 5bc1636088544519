"""The model-adapter interface: turn papers (id, title, abstract) into vectors, scikit-learn style.

An adapter is one small class with its parameters in `__init__`, registered by name with
`@register_adapter`. The estimator contract (checked for every registered adapter by tests/test_contracts.py):

- `__init__` stores each parameter as given and does nothing else; `fit` validates them (`parameter_constraints`,
  `scidocs_eval.params`, plus `check_params` for rules between parameters) before any work.
- `fit(papers)` learns from a corpus and nothing else (never the suite: its test judgements stay out of reach);
  an adapter that learns nothing says so with `requires_fit = False` (its `fit` only validates). An adapter
  that propagates over citations (SGC) says so with `citation_files`, and `fit` is given the edges it may use
  (`scidocs_eval.run.fit_inputs`). `--tune` wraps an adapter that declares a `tuning_grid` in
  `scidocs_eval.models.tuning.TunedAdapter`; the values it picks go to the wrapper's `best_params_`, never into
  the constructor's parameters, so a second `fit` searches the same grid again.
- `transform` returns a (n_papers, dim) float32 matrix; adapters that stream (transformers) override
  `transform_batches` so each batch is written as it is produced. Either, called on an adapter that
  `requires_fit` before `fit`, raises `NotFittedError` naming the adapter and the command that fits it.

`scidocs_eval.baselines` holds the built-in adapters; other packages add theirs through the
`scidocs_eval.adapters` entry point (`scidocs_eval.registry`).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import orjson

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.formats.safe_output import Read
from scidocs_eval.formats.suite import Paper
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.params import Constraints, input_paths, validate_params
from scidocs_eval.registry import ENTRY_POINT_GROUPS, Registry, check_params

if TYPE_CHECKING:
    from scidocs_eval.evaluation.papers import EmbeddingRole

np = lazy_module("numpy", __name__)

log = logging.getLogger("scidocs_eval")

Edge = tuple[str, str]
"""A citation: (citing paper id, cited paper id)."""


class NotFittedError(ScidocsEvalError):
    """`transform` called on an adapter that must be fitted first."""


def _fitted_only(method: Callable[..., Any]) -> Callable[..., Any]:
    """`method` of an adapter, refused with `NotFittedError` until the adapter is fitted (if it must be)."""

    @functools.wraps(method)
    def checked(self: Adapter, *args: Any, **kwargs: Any) -> Any:
        self.check_fitted()
        return method(self, *args, **kwargs)

    checked.fitted_only = True  # type: ignore[attr-defined]
    return checked


class Adapter(ABC):
    """Base class of every model adapter.

    Class attributes:
        name: the registry name (`scidocs-eval baseline NAME`).
        paper_row: the Table 1 row this adapter reproduces, if any (recorded in the results file).
    """

    name: ClassVar[str]
    paper_row: ClassVar[str | None] = None
    parameter_constraints: ClassVar[Constraints] = {}
    """every constructor parameter's type and range (`scidocs_eval.params`), checked by `fit`."""
    renamed_params: ClassVar[dict[str, str]] = {}
    """{old spelling: parameter}: deprecated parameter names `get_adapter` still takes, with a warning."""
    requires_fit: ClassVar[bool] = False
    """True for an adapter that learns from a corpus: `transform` before `fit` is then an error."""
    transductive: ClassVar[bool] = False
    """True for an adapter whose vector of a paper depends on the other papers embedded with it (SGC propagates
    over the citation graph among them): it is given every paper of the metadata files, not only those scored."""

    reads_ids: ClassVar[bool] = True
    """True for an adapter whose vector of a paper may depend on its id, not only on its text (random vectors per
    id, doc2vec's trained paper vectors): a run then embeds each (id, text) once; False lets papers of equal text
    share one vector, across groups and benchmarks (`input_key`)."""
    transform_params: ClassVar[frozenset[str]] = frozenset()
    """Parameters that only `transform` reads (SGC's propagation steps `k`): `--tune` fits once for settings
    that differ only in them (`TunedAdapter`)."""
    weights_outside_params: ClassVar[bool] = False
    """True for an adapter that embeds with weights its parameters only name (a checkpoint): its vectors are
    cached only when `weights_identity` can tell those weights apart."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for method in ("transform", "transform_batches"):
            own = cls.__dict__.get(method)
            if own is not None and not getattr(own, "fitted_only", False):
                setattr(cls, method, _fitted_only(own))

    def fit(self, papers: Sequence[Paper]) -> Adapter:
        """Validate the parameters, then learn from `papers` (the suite's metadata or a separate corpus)."""
        self.validate()
        self.learn(papers)
        self.fitted_ = True
        return self

    def validate(self) -> None:
        """Check every parameter against `parameter_constraints` and `check_params`; an error names it."""
        validate_params(type(self).parameter_constraints, self.get_params(), f"baseline {self.name!r}")
        self.check_params()

    def check_params(self) -> None:
        """Rules between parameters, or checks a constraint cannot declare (a folder that must exist)."""
        return None

    def learn(self, papers: Sequence[Paper]) -> None:
        """What `fit` does after validating: an adapter with `requires_fit` learns here."""
        return None

    def tuning_grid(self, papers: Sequence[Paper]) -> list[dict[str, Any]] | None:
        """The settings `--tune` tries for a fit on `papers`, each {constructor parameter: value}, in the order
        that breaks ties (`scidocs_eval.models.tuning.TunedAdapter`); None (the default): nothing to tune."""
        return None

    def citation_files(self) -> list[str] | None:
        """For an adapter whose `fit` takes `citations` (the edges it may propagate over): the files of edges its
        parameters name, which the pipeline reads and guards with the suite's own (`run.fit_inputs`); None
        (the default): its `fit` takes no citations."""
        return None

    def check_fitted(self) -> None:
        """`NotFittedError` if this adapter must be fitted and was not."""
        if self.requires_fit and not getattr(self, "fitted_", False):
            raise NotFittedError(f"adapter {self.name!r} is not fitted: it learns from a corpus first; run "
                                 f"`scidocs-eval baseline {self.name}` (which fits it on the suite's papers, or on "
                                 f"--train-corpus), or call .fit(papers) before embedding")

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

    def group_adapters(self) -> dict[str, Adapter] | None:
        """{embeddings group: adapter} for an adapter that embeds each group with an adapter of its own (SPECTER2's
        task adapters); None (the default): this adapter embeds every group."""
        return None

    @property
    def by_format(self) -> bool:
        """Whether this adapter embeds a paper differently for each input format (`INPUT_FORMATS`: SPECTER2's
        task adapters, per-format prompts): a run then embeds the papers of each format apart, each once, inside
        `embedding_role`. False by default: every group's papers are embedded alike, once."""
        return False

    @contextmanager
    def embedding_role(self, role: EmbeddingRole) -> Iterator[None]:
        """While embedding papers in `role`: what for (its input format) and, for a side of a retrieval task,
        MTEB's prompt type and task. An adapter that embeds by format (`by_format`) or by side (model objects: MTEB
        encoders, sentence-transformers prompts) overrides this; the default embeds every role alike."""
        yield

    def weights_identity(self) -> dict[str, str] | None:
        """What identifies the weights this adapter embeds with (a checkpoint's sha256), recorded next to its
        embeddings so that a resume or cache never mixes vectors of other weights; None when its parameters
        say it all (a fitted adapter's corpus is recorded separately)."""
        return None

    def role_view(self, role: EmbeddingRole) -> str:
        """What of `role` changes this adapter's vectors, as a string (papers of two roles with the same view share
        their vectors): the input format for an adapter that embeds `by_format`, else nothing ("")."""
        return role.input_format if self.by_format else ""

    def input_key(self, paper: Paper) -> bytes:
        """The exact input this adapter embeds for `paper`: its text (title, abstract, extra fields) and, when it
        `reads_ids` or is `transductive`, its id. Papers with equal keys get one vector."""
        paper_id = paper.paper_id if self.reads_ids or self.transductive else None
        return orjson.dumps([paper_id, paper.title, paper.abstract, list(paper.extra)])

    def cache_fingerprint(self) -> str | None:
        """What identifies this adapter's vectors across runs (`scidocs_eval.formats.vector_cache`): its class,
        name, parameters and weights' identity; None (not cached) for an adapter that learns from a corpus or is
        transductive (its vectors depend on what it was fitted on or embedded with) and for one whose weights
        cannot be identified (`weights_outside_params`)."""
        if self.requires_fit or self.transductive:
            return None
        identity = self.weights_identity()
        if self.weights_outside_params and identity is None:
            return None
        return hashlib.sha256(orjson.dumps(
            [f"{type(self).__module__}.{type(self).__qualname__}", self.name, self.get_params(), identity],
            default=repr, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)).hexdigest()

    def get_params(self) -> dict[str, Any]:
        """Constructor parameters and their current values (recorded in the results file)."""
        names = [p for p in inspect.signature(type(self).__init__).parameters if p != "self"]
        return {name: getattr(self, name) for name in names if hasattr(self, name)}


ADAPTERS: Registry[type[Adapter]] = Registry("baseline", Adapter, plugins="scidocs_eval.baselines",
                                             entry_points=ENTRY_POINT_GROUPS["baseline"])


def register_adapter(cls: type[Adapter]) -> type[Adapter]:
    """Class decorator: make an adapter available by its `name` (a taken name is an error)."""
    return ADAPTERS.register(cls)


def adapter_names() -> list[str]:
    return sorted(ADAPTERS.names())


def adapter_inputs(name: str, params: Mapping[str, Any]) -> tuple[list[Read], list[Read]]:
    """(files, folders) the adapter `name` reads by the path-valued parameters (`InputPath`) of `params`: a path
    declared a folder, or one on disk, is read whole (a checkpoint folder); the command hands them to the output
    layer as inputs, each with who reads it ("adapter specter: its 'model' parameter")."""
    cls = ADAPTERS[name]
    given = {cls.renamed_params.get(key, key): value for key, value in params.items()}
    files: list[Read] = []
    folders: list[Read] = []
    for param, value, folder in input_paths(cls.parameter_constraints, given):
        (folders if folder or Path(value).is_dir() else files).append(Read(value, f"adapter {name}: its '{param}' "
                                                                                 "parameter"))
    return files, folders


def get_adapter(name: str, **params: Any) -> Adapter:
    """An adapter by name; a parameter it does not take is an error that lists the ones it does."""
    cls = ADAPTERS[name]
    params = dict(params)
    for old, new in cls.renamed_params.items():
        if old in params and new not in params:
            log.warning("baseline %s: parameter %r is deprecated, it is now %r (-p %s=...)", name, old, new, new)
            params[new] = params.pop(old)
    return cls(**check_params(cls, params, f"baseline {name!r}"))
