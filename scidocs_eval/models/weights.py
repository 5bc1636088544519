"""Model identity, not model path: a fingerprint of a checkpoint's weights.

Embeddings files record it next to the adapter's parameters (`write_embeddings`), so `--resume` after the weights
changed in place (a retrain into the same folder) is refused naming the model, and the model-object cache never
serves vectors of other weights. Hashing a checkpoint reads every weight file once; the digest is remembered
under the cache folder by path, size and modification time, so later runs pay nothing until a file changes.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import orjson

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.extras import require
from scidocs_eval.models.encoder import resolve_model
from scidocs_eval.paths import cache_dir

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".h5", ".msgpack", ".onnx", ".gguf")
"""Files whose bytes are a checkpoint's weights (configs and tokenizers are named by the adapter's parameters)."""
_CHUNK = 1 << 22


def weight_files(folder: Path) -> list[Path]:
    """The weight files under `folder` (any depth: sentence-transformers keep modules in subfolders), sorted."""
    return sorted(path for path in folder.rglob("*") if path.is_file() and path.suffix in WEIGHT_SUFFIXES)


def _file_digest(path: Path) -> str:
    """sha256 of `path`, remembered by (resolved path, size, mtime) under the cache folder."""
    stat = path.stat()
    key = hashlib.sha256(f"{path.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}".encode()).hexdigest()[:32]
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
    temporary = memo.with_name(f"{memo.name}.{os.getpid()}.tmp")
    temporary.write_bytes(orjson.dumps({"path": str(path.resolve()), "sha256": digest.hexdigest()}))
    os.replace(temporary, memo)
    return digest.hexdigest()


def folder_fingerprint(folder: str | os.PathLike[str]) -> str:
    """sha256 over the names and digests of the weight files of a checkpoint folder."""
    folder = Path(folder)
    files = weight_files(folder)
    if not files:
        raise ScidocsEvalError(f"model {folder}: no weight files ({', '.join(WEIGHT_SUFFIXES)}) in the folder")
    combined = hashlib.sha256()
    for path in files:
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
    """sha256 over a torch module's parameters and buffers (a sentence-transformers model, say), None for an
    object that has no `state_dict`."""
    state_dict = getattr(model, "state_dict", None)
    if not callable(state_dict):
        return None
    torch = require("torch", "the weights digest of a torch model")

    digest = hashlib.sha256()
    for name, tensor in state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy())
    return digest.hexdigest()
