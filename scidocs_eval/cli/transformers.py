"""embed, train: embed papers outside a suite with a transformer adapter; train SPECTER on citation triplets."""

from __future__ import annotations

import argparse

from scidocs_eval.cli.hints import hint, print_next
from scidocs_eval.cli.options import (
    COMMANDS,
    CommandGroup,
    adapter_params,
    add_hidden_alias,
    add_model_options,
    add_output,
    count_type,
    seed_type,
)
from scidocs_eval.evaluation.task import INPUT_FORMATS
from scidocs_eval.models.adapter import adapter_names
from scidocs_eval.params import FRACTION, POSITIVE, Interval, argument_type


def _embed(args: argparse.Namespace) -> int:
    from scidocs_eval.models.distributed import is_main_process
    from scidocs_eval.run.pipeline import embed_metadata

    path, count = embed_metadata(args.adapter, adapter_params(args), args.metadata, args.out, resume=args.resume,
                                 progress=not args.quiet, option="--out", input_format=args.input_format)
    if is_main_process():
        print(f"{count} papers embedded with {args.adapter} into {path}")
    return 0


def _train_specter(args: argparse.Namespace) -> int:
    from scidocs_eval.models.distributed import is_main_process
    from scidocs_eval.training.specter import train_specter

    history = train_specter(args.data_dir, args.out, base_model=args.base_model, epochs=args.epochs,
                            learning_rate=args.lr, weight_decay=args.weight_decay, warmup_fraction=args.warmup,
                            max_length=args.max_length, batch_size=args.batch_size,
                            effective_batch_size=args.effective_batch_size, checkpoint_every=args.checkpoint_every,
                            seed=args.seed, device=args.device, resume=args.resume, progress=not args.quiet)
    if not is_main_process():
        return 0
    for epoch, loss in sorted(history.val_loss.items()):
        print(f"epoch {epoch}: validation loss {loss:.4f}")
    if history.step_seconds:
        print(f"{history.step_triplets} triplets trained at {history.step_triplets / history.step_seconds:.2f} "
              "triplets/s")
    print(f"model written to {args.out}")
    print_next(hint("baseline", "specter", "--model", args.out, "--data", "demo",
                    gives="score it on the demo suite; --data SUITE for yours"))
    return 0


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    embed = subparsers.add_parser("embed", help="embed papers from a metadata file into JSON lines",
                                  description="Embed papers (official metadata {id: {title, abstract}} or JSON "
                                  "lines {paper_id, title, abstract}) into the official embeddings format. "
                                  "Several processes/GPUs: torchrun --nproc-per-node N -m scidocs_eval.cli embed ...")
    embed.add_argument("--metadata", required=True, help="the papers to embed")
    add_output(embed, "-o", "--out", kind="file", required=True, help="embeddings file to write: JSON lines, or "
               "Parquet, .npz, Arrow when the name ends in .parquet, .npz, .arrow")
    embed.add_argument("--adapter", default="specter", choices=adapter_names(), metavar="NAME",
                       help="model adapter (default: %(default)s; 'transformer' for any checkpoint)")
    add_model_options(embed)
    embed.add_argument("--input-format", choices=INPUT_FORMATS, default="proximity",
                       help="what the papers are embedded for, for a model that embeds by format (SPECTER2's "
                       "adapters, --format-prompt): default %(default)s")
    embed.add_argument("--resume", action="store_true", help="continue an interrupted run from the embedding cache "
                       "(which a long encode fills every few batches; every run reads it)")
    embed.set_defaults(func=_embed)

    train = subparsers.add_parser("train", help="train a model (specter: citation-triplet fine-tuning)",
                                  description="Train a model; `train specter` fine-tunes a transformer on citation "
                                  "triplets.")
    models = train.add_subparsers(dest="model_kind", required=True, metavar="MODEL")
    specter = models.add_parser("specter", help="fine-tune a transformer with SPECTER's triplet objective",
                                description="Train SPECTER from the official training files (data.json, "
                                "metadata.json, train.txt, val.txt). Several GPUs: torchrun --nproc-per-node N "
                                "-m scidocs_eval.cli train specter ...")
    specter.add_argument("--data-dir", required=True, help="folder with data.json, metadata.json, train.txt, val.txt")
    add_hidden_alias(specter, add_output(specter, "--out-dir", dest="out", kind="folder", required=True,
                                         help="output folder (a transformers checkpoint, plus checkpoints/)"),
                     "--out")
    specter.add_argument("--base-model", default="allenai/scibert_scivocab_uncased",
                         help="checkpoint to start from (default: %(default)s)")
    specter.add_argument("--epochs", type=count_type("--epochs"), default=2, help="passes over the triplets")
    specter.add_argument("--lr", type=argument_type([POSITIVE], "--lr", float), default=2e-5,
                         help="peak learning rate")
    specter.add_argument("--weight-decay", type=argument_type([Interval(float, 0, None)], "--weight-decay", float),
                         default=0.01, help="AdamW weight decay")
    specter.add_argument("--warmup", type=argument_type([FRACTION], "--warmup", float), default=0.1,
                         help="fraction of steps of linear warm-up")
    specter.add_argument("--max-length", type=count_type("--max-length"), default=256, help="tokens per paper")
    specter.add_argument("--batch-size", type=count_type("--batch-size"), default=4,
                         help="triplets per forward pass and device")
    specter.add_argument("--effective-batch-size", type=count_type("--effective-batch-size"), default=32,
                         help="triplets per optimizer step")
    specter.add_argument("--checkpoint-every", type=count_type("--checkpoint-every"), default=500,
                         help="optimizer steps between checkpoints")
    specter.add_argument("--seed", type=seed_type(), default=0, help="seeds initialisation and order")
    specter.add_argument("--device", help="cpu, cuda or cuda:N (default: cuda when a GPU is visible)")
    specter.add_argument("--resume", action="store_true", help="continue from the latest checkpoint in --out-dir")
    specter.set_defaults(func=_train_specter)


COMMANDS.register(CommandGroup("transformers", add_commands))
