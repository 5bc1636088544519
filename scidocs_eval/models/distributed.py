"""The torchrun process group shared by SPECTER training and sharded embedding.

Under `torchrun` (WORLD_SIZE > 1) each process joins one group: NCCL when it works on a GPU, gloo on CPU. The
helpers import torch inside functions: it is an optional dependency.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.extras import require
from scidocs_eval.models.encoder import choose_device

NEEDED_BY = "running under torchrun"


@dataclass
class Distributed:
    """This process's place among the torchrun processes (rank 0 of 1 outside torchrun)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def is_main_process() -> bool:
    """False in the torchrun processes other than rank 0 (which alone write the model and print)."""
    return int(os.environ.get("RANK", "0")) == 0


def init_distributed(device: str | None) -> tuple[Distributed, str]:
    """Join the torchrun process group when WORLD_SIZE > 1; the device this process trains on."""
    torch = require("torch", NEEDED_BY)

    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size == 1:
        return Distributed(), choose_device(device)
    dist = Distributed(int(os.environ["RANK"]), world_size, int(os.environ.get("LOCAL_RANK", "0")))
    # DDP imports torch._dynamo; imported after init_process_group, it keeps references to the default group,
    # which destroy_process_group then cannot free (see leave_process_group)
    require("torch._dynamo", NEEDED_BY)  # DDP needs it imported now (see below)
    if torch.cuda.is_available() and not (device or "").startswith("cpu"):
        if dist.local_rank >= torch.cuda.device_count():
            raise ScidocsEvalError(
                f"torchrun process {dist.local_rank} of this node has no GPU of its own: torch sees "
                f"{torch.cuda.device_count()} CUDA device(s); start at most that many processes per node "
                "(--nproc-per-node) or pass --device cpu")
        torch.cuda.set_device(dist.local_rank)
        torch.distributed.init_process_group("nccl")
        return dist, f"cuda:{dist.local_rank}"
    torch.distributed.init_process_group("gloo")
    return dist, "cpu"


def leave_process_group() -> None:
    """Destroy the process group together with the other processes, so that its worker threads stop here.

    A gloo worker thread releases the tensors of a finished collective after the caller has moved on, and releasing
    them needs the GIL. If that happens while the interpreter shuts down, the process aborts ("terminate called
    without an active exception"). Freeing the group joins those threads while the interpreter still runs.
    """
    torch = require("torch", NEEDED_BY)

    torch.distributed.barrier()
    torch.distributed.destroy_process_group()
