"""Train SPECTER (SPEC §7): citation triplets, triplet margin loss on [CLS] vectors, a transformers checkpoint out.

`train_specter(data_dir, out_dir, ...)` is the Python API behind `scidocs-eval train specter`. One process per
GPU under `torchrun` (WORLD_SIZE set) trains with DistributedDataParallel; each optimizer step sees
`effective_batch_size` triplets in total, split over the processes and accumulated over micro-batches of
`batch_size`. Checkpoints (model, optimizer, scheduler, sampler position, every RNG state) go to
`out_dir/checkpoints/step-N` every `checkpoint_every` steps and at the end of each epoch; `resume=True` starts
from the latest and ends with the same weights as an uninterrupted run.
torch and transformers are imported inside functions: they are optional dependencies.
"""

from __future__ import annotations

import logging
import math
import os
import random
import time
from collections.abc import Sequence
from contextlib import ExitStack, nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.extras import require
from scidocs_eval.formats.corpus import paper_text
from scidocs_eval.formats.provenance import check_same_settings
from scidocs_eval.formats.safe_output import OwnedFolder, claim_inputs_are_not_outputs, given_as, open_owned_folder
from scidocs_eval.models.distributed import Distributed, init_distributed, leave_process_group
from scidocs_eval.models.encoder import resolve_model
from scidocs_eval.progress import progress_bar
from scidocs_eval.training.triplets import TrainingData, Triplet, TripletSampler, sample_triplets

NEEDED_BY = "SPECTER training"

log = logging.getLogger("scidocs_eval")

CHECKPOINTS = "checkpoints"
STATE_FILE = "training_state.pt"
HISTORY_FILE = "training_history.json"
SETTINGS_FILE = "training_settings.json"
COMMAND = "scidocs-eval train specter"


@dataclass
class TrainingHistory:
    """What a run did: validation loss before training (epoch 0) and after each epoch, mean train loss per epoch.

    `step_seconds` is the wall time of the optimizer steps alone (forward, backward, clipping, AdamW; no
    validation or checkpoints) and `step_triplets` the triplets they saw, so their ratio is training throughput.
    (On CUDA each step waits for its own loss; its AdamW kernels finish inside the next step's time.)
    """

    steps: int = 0
    total_steps: int = 0
    val_loss: dict[int, float] = field(default_factory=dict)
    train_loss: dict[int, float] = field(default_factory=dict)
    step_triplets: int = 0
    step_seconds: float = field(default=0.0, compare=False)


def _parameter_groups(model: Any, weight_decay: float) -> list[dict[str, Any]]:
    """AdamW groups: weight decay on every weight except biases and LayerNorm parameters."""
    decay, no_decay = [], []
    for name, parameter in model.named_parameters():
        exempt = name.endswith("bias") or "LayerNorm" in name or "layer_norm" in name
        (no_decay if exempt else decay).append(parameter)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def _rng_state() -> dict[str, Any]:
    torch = require("torch", NEEDED_BY)

    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}


def _set_rng_state(state: dict[str, Any]) -> None:
    torch = require("torch", NEEDED_BY)

    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if state["cuda"] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _check_process_count(checkpoint: Path, dist: Distributed) -> None:
    """An error when `checkpoint` was written by another number of training processes than this run has."""
    written = len(list(checkpoint.glob("rng-*.pt")))
    if written != dist.world_size:
        raise ScidocsEvalError(f"{checkpoint} was written by {written} training process(es); resume it with as many "
                               f"(this run has {dist.world_size}) to continue exactly")


def _load_rng_state(checkpoint: Path, dist: Distributed) -> dict[str, Any]:
    """This process's RNG state in `checkpoint` (written by as many processes: `_check_process_count`)."""
    torch = require("torch", NEEDED_BY)

    return torch.load(checkpoint / f"rng-{dist.rank}.pt", weights_only=False)


def latest_checkpoint(out_dir: str | os.PathLike[str]) -> Path | None:
    """The checkpoint folder with the highest step under `out_dir/checkpoints`, if any."""
    folders = [p for p in (Path(out_dir) / CHECKPOINTS).glob("step-*") if (p / STATE_FILE).is_file()]
    return max(folders, key=lambda p: int(p.name.split("-")[1]), default=None)


class _TripletLoss:
    """Triplet margin loss (L2 distance, `margin`) of [CLS] vectors of title [SEP] abstract."""

    def __init__(self, model: Any, tokenizer: Any, papers: dict, max_length: int, margin: float, device: str):
        self.model = model
        self.tokenizer = tokenizer
        self.papers = papers
        self.max_length = max_length
        self.margin = margin
        self.device = device
        self.half = _training_dtype(device)

    def summed(self, triplets: Sequence[Triplet], network: Any = None) -> Any:
        """Sum of the per-triplet losses (a scalar tensor), one forward pass over all 3 × len(triplets) texts.

        `network` replaces the (possibly DDP-wrapped) model, e.g. the bare model for validation.
        """
        torch = require("torch", NEEDED_BY)

        ids = [t.query for t in triplets] + [t.positive for t in triplets] + [t.negative for t in triplets]
        texts = [paper_text(self.papers[i], self.tokenizer.sep_token) for i in ids]
        batch = self.tokenizer(texts, truncation=True, max_length=self.max_length, padding=True,
                               return_tensors="pt").to(self.device)
        autocast = torch.autocast(self.device.split(":")[0], dtype=self.half) if self.half else nullcontext()
        with autocast:
            cls = (network or self.model)(**batch).last_hidden_state[:, 0].float()
        query, positive, negative = cls.chunk(3)
        return torch.nn.functional.triplet_margin_loss(query, positive, negative, margin=self.margin, p=2,
                                                       reduction="sum")

    def mean(self, triplets: Sequence[Triplet], batch_size: int, dist: Distributed) -> float:
        """Mean loss over `triplets` in eval mode (no dropout, no gradients), each process taking every N-th batch."""
        torch = require("torch", NEEDED_BY)

        network = getattr(self.model, "module", self.model)
        was_training = network.training
        network.eval()
        with torch.inference_mode():
            total = sum(float(self.summed(triplets[i:i + batch_size], network))
                        for i in range(dist.rank * batch_size, len(triplets), dist.world_size * batch_size))
        network.train(was_training)
        return _sum_over_processes(total, dist, self.device) / len(triplets)


def _sum_over_processes(value: float, dist: Distributed, device: str) -> float:
    """`value` summed over the torchrun processes (itself in a single process)."""
    torch = require("torch", NEEDED_BY)

    if dist.world_size == 1:
        return value
    total = torch.tensor(value, dtype=torch.float64, device=device)  # on the device: NCCL reduces only CUDA tensors
    torch.distributed.all_reduce(total)
    return float(total)


def _training_dtype(device: str) -> Any:
    """bf16 autocast on GPUs that have it; full float32 elsewhere (fp16 would need loss scaling)."""
    torch = require("torch", NEEDED_BY)

    if device.startswith("cuda") and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return None


def train_specter(
    data_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    base_model: str = "allenai/scibert_scivocab_uncased",
    epochs: int = 2,
    learning_rate: float = 2e-5,
    weight_decay: float = 0.01,
    warmup_fraction: float = 0.1,
    max_length: int = 256,
    batch_size: int = 4,
    effective_batch_size: int = 32,
    margin: float = 1.0,
    max_grad_norm: float = 1.0,
    checkpoint_every: int = 500,
    keep_checkpoints: int | None = 2,
    seed: int = 0,
    device: str | None = None,
    resume: bool = False,
    progress: bool = True,
) -> TrainingHistory:
    """Fine-tune `base_model` on the SPECTER training files in `data_dir`; write a transformers checkpoint to `out_dir`.

    Args:
        batch_size: triplets per forward pass and process (3 × batch_size texts).
        effective_batch_size: triplets per optimizer step over all processes and accumulated micro-batches.
        checkpoint_every: optimizer steps between checkpoints (also one at the end of every epoch).
        keep_checkpoints: how many checkpoints to keep (None: all).
        resume: continue from the latest checkpoint in `out_dir` (an error if there is none, or if it was
            written with other settings: every argument that changes the weights is recorded with it).
    Returns the history (validation loss before training and after each epoch); also in out_dir/training_history.json.
    """
    torch = require("torch", NEEDED_BY)
    transformers = require("transformers", NEEDED_BY)
    AutoModel, AutoTokenizer = transformers.AutoModel, transformers.AutoTokenizer
    get_linear_schedule_with_warmup = transformers.get_linear_schedule_with_warmup

    if effective_batch_size < 1 or batch_size < 1 or epochs < 1:
        raise ScidocsEvalError("epochs, batch_size and effective_batch_size must be positive")
    out_dir = Path(out_dir)
    # the training folder and a base model given as a folder are read whole: no checkpoint is written in either
    claim_inputs_are_not_outputs([], {"--out-dir": out_dir}, [
        *given_as("--data-dir", [data_dir]), *given_as("--base-model", [base_model] if Path(base_model).is_dir()
                                                         else [])])
    checkpoint = latest_checkpoint(out_dir) if resume else None
    if resume and checkpoint is None:
        raise ScidocsEvalError(f"--resume: no checkpoint under {out_dir / CHECKPOINTS}")
    settings = {"base_model": base_model, "epochs": epochs, "learning_rate": learning_rate,
                "weight_decay": weight_decay, "warmup_fraction": warmup_fraction, "max_length": max_length,
                "batch_size": batch_size, "effective_batch_size": effective_batch_size, "margin": margin,
                "max_grad_norm": max_grad_norm, "seed": seed}
    if checkpoint:
        _check_checkpoint_settings(checkpoint, settings)
    data = TrainingData.read(data_dir)  # bad training data is refused before the output folder is touched
    dist, device = init_distributed(device)
    if checkpoint:  # refused before the output folder is touched
        _check_process_count(checkpoint, dist)
    with ExitStack() as outputs:
        owned = outputs.enter_context(open_owned_folder(out_dir, COMMAND, "--out-dir", replaces=(COMMAND,))) \
            if dist.is_main else None
        if owned is not None and not resume:
            owned.refuse_in_the_way(list(owned.files))
            owned.remove(list(owned.files))  # a fresh run keeps nothing of an earlier one: no mixed checkpoint
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)

        sampler = TripletSampler(data, "train", seed=seed)
        val_triplets = sample_triplets(data, data.queries["val"], seed=seed)
        tokenizer = AutoTokenizer.from_pretrained(resolve_model(base_model))
        model = AutoModel.from_pretrained(str(checkpoint) if checkpoint else resolve_model(base_model)).to(device)
        model.train()
        if getattr(model, "pooler", None) is not None:  # the loss reads [CLS] before the pooler; DDP needs every
            model.pooler.requires_grad_(False)          # trainable parameter to get a gradient
        if dist.world_size > 1:
            model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[dist.local_rank]
                                                              if device.startswith("cuda") else None)
        steps_per_epoch = math.ceil(len(sampler) / effective_batch_size)
        history = TrainingHistory(total_steps=epochs * steps_per_epoch)
        optimizer = torch.optim.AdamW(_parameter_groups(model, weight_decay), lr=learning_rate,
                                      fused=device.startswith("cuda"))
        scheduler = get_linear_schedule_with_warmup(optimizer, int(warmup_fraction * history.total_steps),
                                                    history.total_steps)
        loss = _TripletLoss(model, tokenizer, data.papers, max_length, margin, device)
        epoch_losses: list[float] = []

        if checkpoint:
            state = torch.load(checkpoint / STATE_FILE, weights_only=False, map_location="cpu")
            optimizer.load_state_dict(state["optimizer"])
            scheduler.load_state_dict(state["scheduler"])
            sampler.load_state_dict(state["sampler"])
            history = TrainingHistory(**state["history"])
            epoch_losses = state["epoch_losses"]
            _set_rng_state(_load_rng_state(checkpoint, dist))
            if dist.is_main:
                log.info("resuming from %s (step %d of %d)", checkpoint, history.steps, history.total_steps)
        elif val_triplets:
            history.val_loss[0] = loss.mean(val_triplets, batch_size, dist)
        with progress_bar(total=history.total_steps, initial=history.steps, unit="step", desc="training SPECTER",
                          enabled=progress and dist.is_main) as bar:
            while history.steps < history.total_steps:
                epoch = sampler.epoch
                started = time.perf_counter()
                step_triplets = sampler.next_batch(effective_batch_size)
                step_loss = _accumulate_gradients(model, loss, step_triplets, batch_size, dist)
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                history.step_seconds += time.perf_counter() - started
                history.step_triplets += len(step_triplets)
                history.steps += 1
                epoch_losses.append(step_loss)
                bar.update(1)
                bar.set_postfix(loss=f"{step_loss:.4f}", epoch=epoch + 1)
                epoch_done = sampler.epoch != epoch
                if epoch_done:
                    history.train_loss[epoch + 1] = float(np.mean(epoch_losses))
                    epoch_losses = []
                    if val_triplets:
                        history.val_loss[epoch + 1] = loss.mean(val_triplets, batch_size, dist)
                        if dist.is_main:
                            log.info("epoch %d: validation loss %.4f", epoch + 1, history.val_loss[epoch + 1])
                if epoch_done or history.steps % checkpoint_every == 0:
                    _save_checkpoint(owned, settings, model, optimizer, scheduler, sampler, history, epoch_losses,
                                     dist, keep_checkpoints)

        if owned is not None:
            with owned.staging() as staging:
                getattr(model, "module", model).save_pretrained(staging)
                tokenizer.save_pretrained(staging)
                (staging / HISTORY_FILE).write_bytes(orjson.dumps(asdict(history), option=orjson.OPT_INDENT_2 |
                                                                  orjson.OPT_NON_STR_KEYS))
                owned.install(staging)
        if dist.world_size > 1:
            del model, loss  # the DDP wrapper holds the process group, which leave_process_group must free
            leave_process_group()
        return history


def _accumulate_gradients(model: Any, loss: _TripletLoss, step_triplets: Sequence[Triplet], batch_size: int,
                          dist: Distributed) -> float:
    """Backward passes that leave the gradient of the mean loss over `step_triplets` in `model`; that mean loss.

    Each process takes every world_size-th triplet, in micro-batches of `batch_size`; DDP averages the
    gradients over processes once, at the last micro-batch. A process left without a triplet (a step with
    fewer triplets than processes) still joins that average, with a zero-weighted loss.
    """
    mine = step_triplets[dist.rank::dist.world_size]
    weight = dist.world_size / len(step_triplets)
    if not mine:
        mine, weight = step_triplets[:1], 0.0
    micro_batches = [mine[i:i + batch_size] for i in range(0, len(mine), batch_size)]
    step_loss = 0.0
    for index, micro in enumerate(micro_batches):
        sync = index == len(micro_batches) - 1 or dist.world_size == 1
        with nullcontext() if sync else model.no_sync():
            part = loss.summed(micro) * weight
            part.backward()
        step_loss += part.item() / dist.world_size
    return _sum_over_processes(step_loss, dist, loss.device)


def _check_checkpoint_settings(checkpoint: Path, settings: dict[str, Any]) -> None:
    """An error naming the first training setting that differs from those `checkpoint` was written with."""
    record = checkpoint / SETTINGS_FILE
    if not record.is_file():
        raise ScidocsEvalError(f"--resume: {checkpoint} has no record of its training settings ({SETTINGS_FILE}), "
                               "so a resume could mix two runs; train afresh into a new --out")
    check_same_settings(checkpoint, orjson.loads(record.read_bytes()), settings)


def _save_checkpoint(owned: OwnedFolder | None, settings: dict[str, Any], model: Any, optimizer: Any,
                     scheduler: Any, sampler: TripletSampler, history: TrainingHistory, epoch_losses: list[float],
                     dist: Distributed, keep: int | None) -> None:
    """Write out_dir/checkpoints/step-N (model weights, optimizer, scheduler, sampler, every process's RNG) through
    the output layer (`owned`, held by the main process); prune old ones."""
    torch = require("torch", NEEDED_BY)

    states = [_rng_state()]
    if dist.world_size > 1:
        states = [None] * dist.world_size
        torch.distributed.all_gather_object(states, _rng_state())
    if owned is None:
        return
    name = f"{CHECKPOINTS}/step-{history.steps}"
    with owned.staging() as staging:
        for rank, state in enumerate(states):
            torch.save(state, staging / f"rng-{rank}.pt")
        getattr(model, "module", model).save_pretrained(staging)
        (staging / SETTINGS_FILE).write_bytes(orjson.dumps(settings))
        torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                    "sampler": sampler.state_dict(), "history": asdict(history), "epoch_losses": epoch_losses},
                   staging / STATE_FILE)
        owned.install(staging, under=name)
    folders = sorted((p for p in (owned.folder / CHECKPOINTS).glob("step-*") if (p / STATE_FILE).is_file()),
                     key=lambda p: int(p.name.split("-")[1]))
    for old in folders[:-keep] if keep else []:
        owned.remove_under(f"{CHECKPOINTS}/{old.name}")
