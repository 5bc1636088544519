"""What the command modules share: the command-group registry and the adapter options of `baseline` and `embed`."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import orjson

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.models.encoder import PRECISIONS
from scidocs_eval.registry import Registry


@dataclass(frozen=True)
class CommandGroup:
    """The commands of one module of `scidocs_eval.cli`: `add_commands(subparsers)` adds them, each setting
    `func(args) -> int`."""

    name: str
    add_commands: Callable[[argparse._SubParsersAction], None]


COMMANDS: Registry[CommandGroup] = Registry("command group", CommandGroup, plugins="scidocs_eval.cli")
"""Every command group, registered by its module in `scidocs_eval.cli` (alphabetical: the order of `--help`)."""


def parse_value(text: str) -> object:
    """A --param value: JSON where it parses (numbers, booleans, lists), else the plain string."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def parse_params(pairs: Sequence[str] | None) -> dict[str, object]:
    """`key=value` pairs into a dict (values through `parse_value`)."""
    params = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ScidocsEvalError(f"--param wants key=value, got {pair!r}")
        params[key.replace("-", "_")] = parse_value(value)
    return params


MODEL_OPTIONS = ("model", "pooling", "max_length", "batch_size", "device", "precision")


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """The adapter options shared by `baseline` and `embed` (each becomes a constructor parameter)."""
    parser.add_argument("--model", help="checkpoint (hub id or local folder) for transformer adapters")
    parser.add_argument("--pooling", choices=("cls", "mean"))
    parser.add_argument("--max-length", type=int)
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--device")
    parser.add_argument("--precision", choices=PRECISIONS,
                        help="transformer adapters: auto = bf16 on CUDA, float32 on CPU; bf16 also on CPU")
    parser.add_argument("--param", "-p", action="append", metavar="KEY=VALUE",
                        help="any other adapter parameter (repeatable)")


def adapter_params(args: argparse.Namespace, options: Sequence[str] = MODEL_OPTIONS) -> dict[str, object]:
    """`--param` pairs plus every given option of `options` (unset ones and False flags are left out)."""
    params = parse_params(args.param)
    for option in options:
        value = getattr(args, option)
        if value not in (None, False):
            params[option] = value
    return params
