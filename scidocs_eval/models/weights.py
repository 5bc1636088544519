"""Model identity, not model path: a digest of everything a checkpoint or a model object embeds with.

A checkpoint folder is identified by the contents of every file in it (weights, `config.json`, tokenizer files,
sentence-transformers' module configs), a model object by its tensors and every setting that reaches `encode`
(`object_fingerprint`). Embeddings files record the checkpoint's digest next to the adapter's parameters, and the
embedding cache keys vectors by it (`Adapter.cache_fingerprint`), so neither serves vectors of another model.

Hashing a checkpoint reads each file once; its digest is remembered under the cache folder by the file's path,
inode, size, modification time and change time: `cp -p`, `rsync -a` or `tar x` can give other bytes the old size
and modification time, but not the old change time (the system sets it on every write and `utime`), so a
replaced file is always hashed again. A file changed in the last two seconds is hashed but not remembered (a
second write within the clock's granularity could keep every stat field).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.extras import require
from scidocs_eval.formats.embeddings_files import file_identity
from scidocs_eval.models.encoder import resolve_model
from scidocs_eval.paths import cache_dir

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".h5", ".msgpack", ".onnx", ".gguf")
"""Files whose bytes are a checkpoint's weights: a folder without any is not a checkpoint."""
SETTINGS = ("prompts", "default_prompt_name", "truncate_dim", "similarity_fn_name", "max_seq_length",
            "do_lower_case", "processing_kwargs", "query_length", "document_length", "model_forward_params")
"""Attributes of a model object or of one of its modules that change what `encode` returns (sentence-transformers
keeps these outside its modules' `get_config_dict`); read wherever present."""
TOKENIZER_SETTINGS = ("model_max_length", "padding_side", "truncation_side", "init_kwargs")
_CHUNK = 1 << 22
_RACY_SECONDS = 2.0


def weight_files(folder: Path) -> list[Path]:
    """The weight files under `folder` (any depth: sentence-transformers keep modules in subfolders), sorted."""
    return sorted(path for path in folder.rglob("*") if path.is_file() and path.suffix in WEIGHT_SUFFIXES)


def checkpoint_files(folder: Path) -> list[Path]:
    """Every file under `folder` (any depth), sorted: what a checkpoint's digest covers."""
    return sorted(path for path in folder.rglob("*") if path.is_file())


def _file_digest(path: Path) -> str:
    """sha256 of `path`'s bytes, remembered under the cache folder by its resolved path and `file_identity`
    (device, inode, size, mtime, ctime: the identity every cache of a file's contents keys on)."""
    identity = file_identity(path)
    key = hashlib.sha256(f"{path.resolve()}\0{identity}".encode()).hexdigest()[:32]
    memo = cache_dir("weights") / f"{key}.json"
    if memo.is_file():
        try:
            return str(orjson.loads(memo.read_bytes())["sha256"])
        except (orjson.JSONDecodeError, KeyError, TypeError):
            memo.unlink(missing_ok=True)
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    *_, modified_ns, changed_ns = identity
    if time.time() - max(modified_ns, changed_ns) / 1e9 > _RACY_SECONDS:
        temporary = memo.with_name(f"{memo.name}.{os.getpid()}.tmp")
        temporary.write_bytes(orjson.dumps({"path": str(path.resolve()), "sha256": digest.hexdigest()}))
        os.replace(temporary, memo)
    return digest.hexdigest()


def folder_fingerprint(folder: str | os.PathLike[str]) -> str:
    """sha256 over the names and contents of every file of a checkpoint folder (weights, configs, tokenizer)."""
    folder = Path(folder)
    if not weight_files(folder):
        raise ScidocsEvalError(f"model {folder}: no weight files ({', '.join(WEIGHT_SUFFIXES)}) in the folder")
    combined = hashlib.sha256()
    for path in checkpoint_files(folder):
        combined.update(f"{path.relative_to(folder).as_posix()}\0{_file_digest(path)}\1".encode())
    return combined.hexdigest()


def checkpoint_identity(model: str | None) -> dict[str, str] | None:
    """{"model": ..., "sha256": ...} for a checkpoint that is a local folder (the offline MiniLM package
    included); None for a hub id, which transformers pins by its own revision cache."""
    if model is None:
        return None
    try:
        folder = Path(resolve_model(model))
    except ScidocsEvalError:
        return None  # the loader says what is wrong with the name
    if not folder.is_dir():
        return None
    return {"model": model, "sha256": folder_fingerprint(folder)}


def object_fingerprint(model: Any) -> str | None:
    """sha256 over a torch model's parameters and buffers and its `encode_settings` (a sentence-transformers
    model, say); None for an object that has no `state_dict`."""
    state_dict = getattr(model, "state_dict", None)
    if not callable(state_dict):
        return None
    torch = require("torch", "the weights digest of a torch model")

    digest = hashlib.sha256()
    for name, tensor in state_dict().items():
        digest.update(name.encode())
        digest.update(str(tensor.dtype).encode())
        digest.update(tensor.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy())
    digest.update(orjson.dumps(encode_settings(model), default=repr,
                               option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS))
    return digest.hexdigest()


def encode_settings(model: Any) -> dict[str, Any]:
    """Every setting of `model` outside its tensors that reaches `encode`: for the model and each of its torch
    modules, the `SETTINGS` it has, its `get_config_dict()` (sentence-transformers' module configs: pooling,
    normalisation, dense layers), a transformers `config`, and its tokenizer (settings and vocabulary)."""
    modules = getattr(model, "named_modules", None)
    parts = dict(modules()) if callable(modules) else {}
    parts.setdefault("", model)
    return {name: settings for name, module in sorted(parts.items()) if (settings := _module_settings(module))}


def _module_settings(module: Any) -> dict[str, Any]:
    settings: dict[str, Any] = {"class": f"{type(module).__module__}.{type(module).__qualname__}"}
    for name in SETTINGS:
        try:
            value = getattr(module, name)
        except Exception:  # a property that cannot answer for this module (sentence-transformers' without one)
            continue
        if not callable(value):
            settings[name] = value
    config_dict = getattr(module, "get_config_dict", None)
    if callable(config_dict):
        settings["config_dict"] = config_dict()
    config = getattr(module, "config", None)
    if callable(getattr(config, "to_dict", None)):
        settings["config"] = config.to_dict()
    try:
        tokenizer = getattr(module, "tokenizer", None)
    except Exception:  # a property that cannot answer for this module
        tokenizer = None
    if hasattr(tokenizer, "get_vocab"):
        settings["tokenizer"] = tokenizer_settings(tokenizer)
    return settings


def tokenizer_settings(tokenizer: Any) -> dict[str, Any]:
    """A tokenizer's settings and a digest of its vocabulary (a fast tokenizer's whole definition)."""
    settings = {name: getattr(tokenizer, name) for name in TOKENIZER_SETTINGS if hasattr(tokenizer, name)}
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:  # a fast tokenizer's definition, less the padding and truncation each call sets
        definition = {key: value for key, value in orjson.loads(backend.to_str()).items()
                      if key not in ("padding", "truncation")}
    else:
        definition = tokenizer.get_vocab()
    settings["vocabulary"] = hashlib.sha256(orjson.dumps(definition, option=orjson.OPT_SORT_KEYS)).hexdigest()
    if isinstance(settings.get("init_kwargs"), Mapping):
        settings["init_kwargs"] = {key: value for key, value in settings["init_kwargs"].items()
                                   if key not in ("name_or_path", "vocab_file", "tokenizer_file")}
    return settings
