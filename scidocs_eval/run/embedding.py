"""Embed papers into the official JSON lines format, on one process or on every torchrun process.

`write_embeddings` is the one way papers become an embeddings file: `baseline`, `embed`, `evaluate_model`
and SPECTER2's per-group adapters all call it. Batches are appended as they are computed, so an interrupted
run can `resume`; the finished file holds every paper's line in input order, whatever the process count
(`scidocs_eval.formats.embeddings_output.write_embeddings_file` writes it).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.formats.embeddings import format_embedding_line
from scidocs_eval.formats.embeddings_output import write_embeddings_file
from scidocs_eval.formats.embeddings_writers import output_kind, write_through_json_lines
from scidocs_eval.formats.provenance import check_dimension, read_settings, settings_file, start_embeddings_output
from scidocs_eval.formats.safe_output import Rows, claim_output, discard, growing_file
from scidocs_eval.formats.suite import Paper
from scidocs_eval.models.adapter import Adapter
from scidocs_eval.progress import announce, progress_bar
from scidocs_eval.run.sharded_embedding import embed_sharded, process_count


def write_embeddings(adapter: Adapter, papers: Sequence[Paper], path: str | os.PathLike[str],
                     resume: bool = True, progress: bool = True, settings: Mapping[str, Any] | None = None,
                     option: str = "output") -> Path:
    """Embed `papers` into `path` (official format, one line per paper in the order of `papers`; Parquet, .npz or
    Arrow when its name ends so, by way of a resumable JSON lines staging file).

    A paper with neither title nor abstract gets ``"embedding": []``, as the reference embedder writes.
    `{path}.settings.json` records the adapter, its parameters, the identity of its weights and `settings`
    (e.g. the corpus it was fitted on). With `resume`, papers already in the file are not embedded again,
    provided the file was written with the same settings and dimension (else an error naming what differs;
    `scidocs_eval.formats.provenance`). Under torchrun every process calls this and embeds a share
    (`scidocs_eval.run.sharded_embedding`); the file is complete when it returns.
    """
    record = output_settings(adapter, settings)
    if output_kind(path) != "jsonl":
        if process_count() > 1:
            raise ScidocsEvalError(f"{option} {path}: under torchrun embeddings are written as JSON lines; give a "
                                   ".jsonl name (or leave out --embeddings-format), then `scidocs-eval convert` it")
        return write_through_json_lines(claim_output(path, option), resume, lambda staging: write_embeddings(
            adapter, papers, staging, resume=resume, progress=progress, settings=settings, option=option))
    if process_count() > 1:
        return embed_sharded(adapter, papers, Path(path), resume, progress, record, option)
    path = claim_output(path, option)
    record_existed = settings_file(path).exists()
    try:
        _append_embeddings(adapter, papers, path, resume, progress, record, option)
    except BaseException:
        if not path.exists() and not record_existed:
            discard(settings_file(path))
        raise
    _put_in_input_order(path, papers, option)
    return path


def output_settings(adapter: Adapter, settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What an embeddings file records of what produced it: the adapter, its parameters, the identity of its
    weights (`Adapter.weights_identity`) and `settings`."""
    identity = adapter.weights_identity()
    return {"adapter": adapter.name, "params": adapter.get_params(), **({"weights": identity} if identity else {}),
            **(settings or {})}


def fitted_settings(corpus: Sequence[Paper], train_corpus: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The `settings` of a baseline's embeddings: the corpus its adapter was fitted on."""
    return {"train_corpus": str(train_corpus) if train_corpus else None, "corpus_sha256": _digest(corpus)}


def check_same_weights(path: Path, recorded: Mapping[str, Any] | None, settings: Mapping[str, Any]) -> None:
    """Refuse to continue `path` when the model's weights changed since it was written (a retrain into the same
    checkpoint folder), naming the model: its vectors and the new ones would not be comparable."""
    if recorded is None or recorded.get("weights") == settings.get("weights"):
        return
    old, new = recorded.get("weights") or {}, settings.get("weights") or {}
    model = new.get("model") or old.get("model") or settings.get("adapter")
    raise ScidocsEvalError(f"--resume: {path} was embedded with other weights of model {model} (sha256 "
                           f"{str(old.get('sha256'))[:12]}, now {str(new.get('sha256'))[:12]}): the checkpoint "
                           "changed since; write a new output without --resume")


def _append_embeddings(adapter: Adapter, papers: Sequence[Paper], path: Path, resume: bool, progress: bool,
                       settings: Mapping[str, Any], option: str) -> None:
    if resume and path.is_file() and path.stat().st_size:
        check_same_weights(path, read_settings(path), settings)
    done, dim, whole = start_embeddings_output(path, settings, resume, option)
    todo = [p for p in papers if p.paper_id not in done]
    if todo:
        announce(f"embedding {len(todo)} papers with {adapter.name} into {path}"
                 + (f" ({len(done)} already there)" if done else ""), enabled=progress)
    rows = Rows("papers", {*done, *(paper.paper_id for paper in todo)})
    with growing_file(path, option, append=resume, keep_bytes=whole, rows=rows) as out, progress_bar(
            total=len(todo), unit="paper", desc=f"embedding with {adapter.name}", enabled=progress) as bar:
        for paper in (p for p in todo if not p.has_text):
            out.write(format_embedding_line(paper.paper_id, None))
        bar.update(sum(1 for p in todo if not p.has_text))
        with_text = [p for p in todo if p.has_text]
        if with_text:
            for batch, vectors in adapter.transform_batches(with_text):
                check_dimension(path, dim, vectors.shape[1])
                out.write(b"".join(format_embedding_line(p.paper_id, v) for p, v in zip(batch, vectors)))
                out.flush()
                bar.update(len(batch))


def _put_in_input_order(path: Path, papers: Sequence[Paper], option: str) -> None:
    """Rewrite `path` with its lines in the order of `papers` (batches come in the adapter's order, e.g. by
    length); lines of other papers, which a resumed file may hold, stay after them in their order."""
    lines = {orjson.loads(line)["paper_id"]: line for line in path.read_bytes().splitlines(keepends=True)}
    wanted = [paper.paper_id for paper in papers]
    if list(lines)[:len(wanted)] == wanted:
        return
    rest = [paper_id for paper_id in lines if paper_id not in set(wanted)] if len(lines) > len(wanted) else []
    write_embeddings_file(path, (lines[paper_id] for paper_id in [*wanted, *rest]), option, paper_ids=lines.keys())


def _digest(papers: Sequence[Paper]) -> str:
    """sha256 of the papers' ids and texts, in order (what a fitted adapter learnt from)."""
    return hashlib.sha256(orjson.dumps([(p.paper_id, p.title, p.abstract, *p.extra) for p in papers])).hexdigest()
