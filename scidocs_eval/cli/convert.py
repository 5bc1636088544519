"""convert: embeddings from one kind of file into another (JSON lines, Parquet, Arrow, .npz), a batch at a time."""

from __future__ import annotations

import argparse

from scidocs_eval.cli.options import (
    COMMANDS,
    CommandGroup,
    add_embeddings_read_options,
    add_output,
    embeddings_read_options,
)
from scidocs_eval.formats.embeddings_writers import TABLE_SUFFIXES, convert_embeddings, output_kind
from scidocs_eval.formats.safe_output import claim_inputs_are_not_outputs, claim_output, given_as


def _convert(args: argparse.Namespace) -> int:
    claim_inputs_are_not_outputs([*given_as("IN", [args.input]), *given_as("--ids", [args.ids])], {"OUT": args.out})
    out = claim_output(args.out, "OUT")
    rows = convert_embeddings(args.input, out, embeddings_read_options(args), dtype=args.dtype,
                              progress=not args.quiet)
    print(f"{rows} rows written to {out} ({output_kind(out)})")
    return 0


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "convert", help="convert embeddings between JSON lines, Parquet, Arrow and .npz",
        description="Read embeddings of any kind `run` reads (told by content: JSON lines or .gz, Parquet, Arrow/"
                    "Feather, .npz, .npy with --ids, safetensors, a saved HF dataset folder, - for standard input) "
                    "and write them in the kind OUT's name asks for: "
                    f"{', '.join(sorted(TABLE_SUFFIXES))}, anything else JSON lines. Every line or row is kept in "
                    "order (repeated ids too), checked by the reader's rules; JSON lines and Parquet are read a "
                    "chunk at a time, so memory stays bounded. OUT appears only when complete; a file that "
                    "scidocs-eval did not write is not replaced without --overwrite.")
    parser.add_argument("input", metavar="IN", help="the embeddings to read (- for standard input)")
    add_output(parser, "out", kind="file", metavar="OUT", help="the file to write; its suffix picks the kind")
    add_embeddings_read_options(parser)
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32",
                        help="precision of the values written (float64 only into JSON lines; default: %(default)s)")
    parser.set_defaults(func=_convert)


COMMANDS.register(CommandGroup("convert", add_commands))
