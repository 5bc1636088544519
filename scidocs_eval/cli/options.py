"""What the command modules share: the command-group registry and the adapter options of `baseline` and `embed`."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from scidocs_eval.errors import ScidocsEvalError
from scidocs_eval.evaluation.task import INPUT_FORMATS
from scidocs_eval.formats.embeddings_tables import ReadOptions
from scidocs_eval.models.encoder import POOLINGS, PRECISIONS
from scidocs_eval.params import AT_LEAST_ONE, SEED, argument_type
from scidocs_eval.registry import Registry


@dataclass(frozen=True)
class CommandGroup:
    """The commands of one module of `scidocs_eval.cli`: `add_commands(subparsers)` adds them, each setting
    `func(args) -> int`."""

    name: str
    add_commands: Callable[[argparse._SubParsersAction], None]


COMMANDS: Registry[CommandGroup] = Registry("command group", CommandGroup, plugins="scidocs_eval.cli")
"""Every command group, registered by its module in `scidocs_eval.cli` (alphabetical: the order of `--help`)."""


OutputKind = Literal["file", "folder"]


def seed_type() -> Any:
    """The argparse `type=` of every `--seed` option (an int in 0 .. 2**32 - 1)."""
    return argument_type([SEED], "--seed")


def count_type(option: str) -> Any:
    """The argparse `type=` of an option that counts something and must be at least 1."""
    return argument_type([AT_LEAST_ONE], option)


def add_output(parser: argparse.ArgumentParser, *flags: str, kind: OutputKind, **kwargs: Any) -> argparse.Action:
    """Add an option (or positional) naming something the command writes: a file or a folder.

    Every output of every command is declared through this helper, never with a bare `add_argument`: the action
    carries `output_kind`, which the output layer's tests read to find every output of every command (a test
    walks the parser), so a new output option is checked without anyone listing it.
    """
    if kind not in ("file", "folder"):
        raise ValueError(f"output kind must be 'file' or 'folder', got {kind!r}")
    action = parser.add_argument(*flags, **kwargs)
    action.output_kind = kind  # type: ignore[attr-defined]
    return action


def output_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The actions of `parser` declared with `add_output`."""
    return [action for action in parser._actions if getattr(action, "output_kind", None)]


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


MODEL_OPTIONS = ("model", "pooling", "max_length", "batch_size", "device", "precision", "prompt", "prompt_name",
                 "format_prompts", "normalize", "task_adapter")


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """The adapter options shared by `baseline` and `embed` (each becomes a constructor parameter)."""
    parser.add_argument("--model", help="checkpoint (hub id or local folder) for transformer adapters")
    parser.add_argument("--pooling", choices=POOLINGS,
                        help="transformer adapters: [CLS] vector, mean over tokens, or last non-padding token")
    parser.add_argument("--max-length", type=count_type("--max-length"), help="tokens per paper at most")
    parser.add_argument("--batch-size", type=count_type("--batch-size"), help="papers per forward pass")
    parser.add_argument("--device", help="cpu, cuda or cuda:N (default: cuda when a GPU is visible)")
    parser.add_argument("--precision", choices=PRECISIONS,
                        help="transformer adapters: auto = bf16 on CUDA, float32 on CPU; bf16 also on CPU")
    parser.add_argument("--prompt", help="text put before every paper (transformer, sentence-transformer)")
    parser.add_argument("--prompt-name", help="sentence-transformer: a prompt defined by the model's configuration")
    parser.add_argument("--format-prompt", action="append", dest="format_prompts", metavar="FORMAT=TEXT",
                        type=_format_prompt, help="transformer adapters, sentence-transformer: the prompt of papers "
                        f"embedded for FORMAT ({', '.join(INPUT_FORMATS)}) instead of --prompt (repeatable); the "
                        "papers of each format are then embedded apart")
    parser.add_argument("--normalize", action="store_true", help="sentence-transformer: L2-normalise the vectors")
    parser.add_argument("--task-adapter", help="specter2: by-format (default: the authors' adapter for each "
                        "input format), FORMAT=ADAPTER pairs such as classification=DIR,adhoc_query=DIR2 (the other "
                        "formats keep the authors'), one of proximity, classification, regression, adhoc_query, an "
                        "adapter folder, or GROUP=ADAPTER pairs such as cls=classification,user-citation=proximity")
    parser.add_argument("--param", "-p", action="append", metavar="KEY=VALUE",
                        help="any other adapter parameter (repeatable)")


def _format_prompt(text: str) -> tuple[str, str]:
    """One `--format-prompt FORMAT=TEXT` (the text may hold '='; the format is checked by the adapter)."""
    input_format, sep, prompt = text.partition("=")
    if not sep or input_format.strip() not in INPUT_FORMATS:
        raise argparse.ArgumentTypeError(f"wants FORMAT=TEXT with a format of {', '.join(INPUT_FORMATS)}, got "
                                         f"{text!r}")
    return input_format.strip(), prompt


def adapter_params(args: argparse.Namespace, options: Sequence[str] = MODEL_OPTIONS) -> dict[str, object]:
    """`--param` pairs plus every given option of `options` (unset ones and False flags are left out)."""
    params = parse_params(args.param)
    for option in options:
        value = getattr(args, option)
        if option == "format_prompts" and value:
            formats = [input_format for input_format, _ in value]
            if repeated := sorted({f for f in formats if formats.count(f) > 1}):
                raise ScidocsEvalError(f"--format-prompt gives {', '.join(repeated)} twice; give each format once")
            value = dict(value)
        if value not in (None, False):
            params[option] = value
    return params


def add_embeddings_read_options(parser: argparse.ArgumentParser) -> None:
    """Where a command reading embeddings finds the ids and vectors of a table or array file."""
    parser.add_argument("--ids", metavar="FILE", help="ids of a .npy matrix or of a safetensors file without ids "
                        "in its metadata: one per line, in row order")
    parser.add_argument("--id-column", metavar="NAME", help="the id column of a Parquet/Arrow table or HF dataset "
                        "(default: paper_id, else doc_id)")
    parser.add_argument("--embedding-column", action="append", metavar="NAME",
                        help="the embedding column of a table (a list column), or, repeated, its numeric columns in "
                        "order (default: embedding, else every numeric column but the id)")


def embeddings_read_options(args: argparse.Namespace) -> ReadOptions | None:
    """The `ReadOptions` of `add_embeddings_read_options`' options (None when none was given)."""
    if args.ids is None and args.id_column is None and not args.embedding_column:
        return None
    return ReadOptions(ids_file=args.ids, id_column=args.id_column,
                       embedding_columns=tuple(args.embedding_column or ()))


def add_hidden_alias(parser: argparse.ArgumentParser, action: argparse.Action, *flags: str) -> argparse.Action:
    """An old spelling of `action`'s option (`--output` for `--out`): it still works, sets the same value, and
    `--help` does not show it, so each idea has one spelling in the help and scripts keep working."""
    kwargs: dict[str, Any] = {"dest": action.dest, "help": argparse.SUPPRESS, "default": argparse.SUPPRESS}
    if isinstance(action, argparse._StoreConstAction):
        kwargs.update(action="store_const", const=action.const)
    else:
        kwargs.update(type=action.type, choices=action.choices, metavar=action.metavar, nargs=action.nargs)
    container: Any = parser
    if action.required:  # either spelling satisfies it: one required group of the two
        action.required = False
        container = parser.add_mutually_exclusive_group(required=True)
        container._group_actions.append(action)
    alias = container.add_argument(*flags, **kwargs)
    if kind := getattr(action, "output_kind", None):
        alias.output_kind = kind  # type: ignore[attr-defined]
    return alias


def task_list(text: str | None, option: str = "--tasks") -> list[str] | None:
    """The task names of a comma-separated option; None when the option was not given (every task). A given
    option naming no task (`--tasks ""`, `--tasks ,`) is an error, never "every task"."""
    if text is None:
        return None
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise ScidocsEvalError(f"{option} {text!r} names no task; give task names separated by commas, or leave "
                               f"{option} out for every task of the benchmark")
    return names
