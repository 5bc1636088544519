"""One typed schema per kind of dataset file, and the one check every reader runs on its rows.

A reader declares the rows of its file kind once, as a `RowSchema` of `Field`s:

    BEIR_CORPUS = file_kind(RowSchema("BEIR corpus", "JSON lines", (
        Field("_id", "id", aliases=("id",)), Field("title", "text", required=False, null=True),
        Field("text", "text")), example=({"_id": "d1", "title": "A title", "text": "An abstract."},)))

and reads each row through `schema.checker(path).row(record, line)` (JSON lines, JSON objects, delimited text) or a
whole table through `check_table(path, table, schema)` (parquet: the column types, nulls and values checked in
bulk by pyarrow). A field has a kind (`KINDS`: its type and value domain), may be absent (`required=False`) or
null (`null=True`: read as absent), or hold a non-empty list of values of its kind (`many=True`), or a nested
object of its own schema (kind "object"). Whatever the kind, a column holds one type: a value of another type than
the column's first (an integer label below a string label) is an error naming both lines, never a mix for a
library to trip on or a score to absorb. Every error is one `InputError` naming the file, the line (or row) and the
field (`labels[3]` for a list's item, `query.title` inside an object).

Every file kind is registered once (`file_kind`), with the reader that reads a file of it (`reads`): the fuzz test
(`tests/test_row_schemas.py`) feeds every registered reader hostile rows, and the table of docs/errors_and_files.md
is generated from the registry (`python -m scidocs_eval.cli.row_schema_docs`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

from scidocs_eval.errors import InputError
from scidocs_eval.extras import require

INT64 = 2**63
"""integers are those numpy and pyarrow hold (int64): a larger one is an error, never an overflow or a float."""
KINDS = {
    "text": "a string",
    "id": "an id (a non-empty string, or an integer)",
    "int": "an integer",
    "number": "a finite number",
    "label": "a label (a string, or an integer)",
    "flag": "0 or 1",
    "grade": "an integer grade",
    "object": "an object",
}
"""the kinds of value a field may hold, as the errors and the docs say them."""


@dataclass(frozen=True)
class Field:
    """One field of a row: `name` (or the first of `aliases` a row has), its kind (a key of KINDS, or a tuple of
    them: any one), whether it may be absent (`required`) or null (`null`, read as absent), whether it holds a
    non-empty list of values of its kind (`many`; `empty`: the list may be empty), and the schema of a nested
    object (`of`, kind "object")."""

    name: str
    kind: str | tuple[str, ...]
    aliases: tuple[str, ...] = ()
    required: bool = True
    null: bool = False
    many: bool = False
    empty: bool = False
    of: RowSchema | None = None

    @cached_property
    def kinds(self) -> tuple[str, ...]:
        return self.kind if isinstance(self.kind, tuple) else (self.kind,)

    @cached_property
    def string_kind(self) -> str | None:
        """The kind that takes a string as it is (a text, an id, a label), if the field has one."""
        return next((kind for kind in self.kinds if kind in ("text", "id", "label")), None)

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    @cached_property
    def plain_text(self) -> bool:
        """A text field: any string is a value, and a column of strings holds one type (the readers' fast path)."""
        return self.kinds == ("text",)

    @cached_property
    def tracked(self) -> bool:
        """Whether values of two types may pass the kind check (an id, a label, a grade: a string or an integer),
        so the column's first type is remembered and held."""
        return len(self.kinds) > 1 or self.kinds[0] in ("id", "label", "grade")

    def describe(self) -> str:
        """What the field must hold, in words ("a non-empty list of strings, or null")."""
        kinds = " or ".join(KINDS[kind] for kind in self.kinds)
        if self.of is not None:
            kinds = kinds.replace("an object", f"an object {{{', '.join(f.name for f in self.of.fields)}}}")
        text = f"a {'' if self.empty else 'non-empty '}list, each {kinds}" if self.many else kinds
        if self.null:
            text += ", or null"
        return text if self.required else f"{text} (may be absent)"


@dataclass(frozen=True)
class RowSchema:
    """The rows of one kind of file: its `fields`, the `container` they are written in, a valid `example` (the docs
    and the fuzz test), `parallel` list fields of equal length (one list item per document), `keep_other`: a row
    read keeps its other fields as given (a paper's further fields), `cells`: values are text cells of a
    delimited file, parsed by kind (an empty cell is null)."""

    name: str
    container: str
    fields: tuple[Field, ...]
    example: tuple[Mapping[str, Any], ...] = ()
    parallel: tuple[str, ...] = ()
    keep_other: bool = False
    cells: bool = False

    def checker(self, path: str | os.PathLike[str], after: RowChecker | None = None) -> RowChecker:
        """The check of the rows of one file at `path` (it remembers each column's type); `after`: the checker of
        another file of the same dataset (a split), whose columns this file's must match."""
        return RowChecker(self, path, after)


FILE_KINDS: dict[str, RowSchema] = {}
"""every kind of dataset file a reader reads, by name."""
READERS: dict[str, Callable[[str], object]] = {}
"""file kind -> a reader of one file of it (path -> what it read)."""


def file_kind(schema: RowSchema) -> RowSchema:
    """Register `schema` as a kind of dataset file (its name once)."""
    if schema.name in FILE_KINDS:
        raise ValueError(f"file kind {schema.name!r} is declared twice")
    FILE_KINDS[schema.name] = schema
    return schema


def reads(schema: RowSchema) -> Callable[[Callable[[str], Any]], Callable[[str], Any]]:
    """Register the decorated function (path -> rows read) as the reader of the file kind `schema`."""
    def register(function: Callable[[str], Any]) -> Callable[[str], Any]:
        READERS[schema.name] = function
        return function
    return register


class RowChecker:
    """The rows of one file, checked against a schema, one at a time (`row`)."""

    def __init__(self, schema: RowSchema, path: str | os.PathLike[str], after: RowChecker | None = None):
        self.schema, self.path = schema, path
        self.column_types: dict[str, tuple[str, str]] = {} if after is None else after.column_types
        """field path -> (the type of its first value, where it was)."""
        self._plain = _plain_fields(schema)

    def row(self, record: object, line: int | None = None, row: int | None = None, where: str = "") -> dict[str, Any]:
        """`record` checked: {field name: value} (ids as strings, a null or absent optional field as None; with
        `keep_other`, the record's other fields too), or an InputError naming the file, the line (or row, or
        `where`: "paper 'p1'") and the field."""
        if self._plain is not None and type(record) is dict:
            checked = self._plain_row(record, self._plain, line, row, where)
            if checked is not None:
                return checked
        return self._object(self.schema, record, "", "", _Where(line, row, where))

    def _plain_row(self, record: dict, fields: tuple[_PlainField, ...], line: int | None, row: int | None,
                   where: str) -> dict[str, Any] | None:
        """The row as `_object` checks it, for a schema of single values (no list, no nested object): a string
        its kind takes as it is, in a column of strings, is taken at once (most rows of most files), any other
        value goes through `_value` (the same check, the same error); None for a row `_object` must check (an
        alias, a missing or null field, which it then names)."""
        checked: dict[str, Any] = dict(record) if self.schema.keep_other else {}
        cells, column_types = self.schema.cells, self.column_types
        for field in fields:
            value = record.get(field.name, _ABSENT)
            if value is _ABSENT:
                if field.required or any(alias in record for alias in field.aliases):
                    return None
                checked[field.name] = None
            elif value is None or (cells and value == ""):
                if field.required and not field.null:
                    return None
                checked[field.name] = None
            elif type(value) is str and field.string and not (field.id and not value.strip()) and \
                    not (field.tracked and column_types.get(field.name, _UNSEEN)[0] != "string"):
                checked[field.name] = value
            else:
                checked[field.name] = self._value(field.spec, value, field.name, field.name, _Where(line, row, where))
        return checked

    def _object(self, schema: RowSchema, record: object, prefix: str, column_prefix: str, at: _Where
                ) -> dict[str, Any]:
        if type(record) is not dict:
            self._fail(at, f"{prefix.rstrip('.') or 'the row'} is {_shown(record)}, expected an object "
                       f"{{{', '.join(f.name for f in schema.fields)}}}")
        checked: dict[str, Any] = dict(record) if schema.keep_other else {}
        for spec in schema.fields:
            name = spec.name if spec.name in record else next((n for n in spec.aliases if n in record), None)
            if name is None:
                if spec.required:
                    have = ", ".join(sorted(map(str, record))) or "none"
                    self._fail(at, f"field {prefix + spec.name!r} is missing (expected {spec.describe()}; the fields "
                               f"are {have})")
                checked[spec.name] = None
                continue
            value = record[name]
            if value is None or (schema.cells and value == ""):
                if not spec.null and spec.required:
                    self._fail(at, f"field {prefix + name!r} is {'empty' if schema.cells else 'null'}, expected "
                               f"{spec.describe()}")
                checked[spec.name] = None
                continue
            column = column_prefix + spec.name if column_prefix else spec.name
            if not spec.many:
                checked[spec.name] = value if spec.plain_text and type(value) is str else \
                    self._value(spec, value, prefix + name, column, at)
                continue
            if type(value) is not list or not (value or spec.empty):
                self._fail(at, f"field {prefix + name!r} is {_shown(value)}, expected {spec.describe()}")
            if spec.plain_text and all(type(item) is str for item in value):
                checked[spec.name] = value
                continue
            checked[spec.name] = [self._value(spec, item, f"{prefix}{name}[{index}]", column, at)
                                  for index, item in enumerate(value)]
        if schema.parallel:
            lengths = {name: len(checked[name]) for name in schema.parallel if checked.get(name) is not None}
            if len(set(lengths.values())) > 1:
                self._fail(at, "fields " + " and ".join(f"{name!r} ({n} items)" for name, n in lengths.items())
                           + " must be lists of the same length (one item per document)")
        return checked

    def _value(self, spec: Field, value: object, label: str, column: str, at: _Where) -> Any:
        kind = spec.string_kind
        if kind is not None and type(value) is str and (kind != "id" or value.strip()):
            converted = value
        else:
            for kind in spec.kinds:
                converted, problem = _KIND_CHECKS[kind](value, self.schema.cells)
                if problem is None:
                    break
            else:
                kind = None
        if kind is None:
            expected = spec.describe() if not spec.many else " or ".join(KINDS[k] for k in spec.kinds)
            self._fail(at, f"field {label!r} is {_shown(value)}{problem if len(spec.kinds) == 1 else ''}, "
                       f"expected {expected}")
        if kind == "object":
            assert spec.of is not None, f"field {spec.name} of kind object declares no schema"
            return self._object(spec.of, value, label + ".", column + ".", at)
        if self.schema.cells or not spec.tracked:
            return converted
        type_name = "number" if kind == "number" else _type_name(value)
        first = self.column_types.get(column)
        if first is None:
            self.column_types[column] = (type_name, f"{os.path.basename(self.path)} {at.text()}")
        elif first[0] != type_name:
            self._fail(at, f"field {label!r} is {_shown(value)}, but {first[1]} has {_ARTICLES[first[0]]} there: a "
                       "column holds one type (write every value of it the same way)")
        return converted

    def _fail(self, at: _Where, message: str) -> None:
        prefix = f"{at.where}: " if at.where else ""
        raise InputError(self.path, prefix + message, at.line, row=at.row)


class _Where(NamedTuple):
    line: int | None
    row: int | None
    where: str = ""

    def text(self) -> str:
        return f"line {self.line}" if self.line is not None else f"row {self.row}" if self.row is not None \
            else self.where or "an earlier row"


_ARTICLES = {"string": "a string", "integer": "an integer", "number": "a number", "object": "an object"}


class _PlainField(NamedTuple):
    name: str
    aliases: tuple[str, ...]
    required: bool
    null: bool
    string: bool
    """a string is a value of its kind as it is (a text, an id, a label)"""
    id: bool
    tracked: bool
    spec: Field


_ABSENT = object()
_UNSEEN = ("", "")


def _plain_fields(schema: RowSchema) -> tuple[_PlainField, ...] | None:
    """The fields of `schema` for `RowChecker._plain_row`, when each holds a single value (no list, no nested
    object) and no two lists must match in length; None otherwise."""
    if schema.parallel or any(spec.many or spec.of is not None or "object" in spec.kinds for spec in schema.fields):
        return None
    return tuple(_PlainField(spec.name, spec.aliases, spec.required, spec.null, spec.string_kind is not None,
                             spec.string_kind == "id", spec.tracked and not schema.cells, spec)
                 for spec in schema.fields)


def _type_name(value: object) -> str:
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "object" if isinstance(value, dict) else type(value).__name__


def _shown(value: object) -> str:
    """A value as an error shows it: its type, and its text cut short."""
    if value is None:
        return "null"
    if isinstance(value, list) and not value:
        return "an empty list"
    text = repr(value)
    return f"{_type_name(value)} {text[:40]}{'...' if len(text) > 40 else ''}"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_text(value: object, cells: bool) -> tuple[Any, str | None]:
    return (value, None) if isinstance(value, str) else (None, "")


def _check_id(value: object, cells: bool) -> tuple[Any, str | None]:
    if isinstance(value, str):
        return (value, None) if value.strip() else (None, " (an empty id)")
    if _is_int(value):
        return (str(value), None) if abs(value) < INT64 else (None, " (beyond a 64-bit integer)")
    return None, ""


def _check_int(value: object, cells: bool) -> tuple[Any, str | None]:
    if cells and isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            return None, " (not an integer)"
    if not _is_int(value):
        return None, ""
    return (value, None) if abs(value) < INT64 else (None, " (beyond a 64-bit integer)")


def _check_number(value: object, cells: bool) -> tuple[Any, str | None]:
    if cells and isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None, " (not a number)"
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None, ""
    try:
        finite = math.isfinite(value)
    except OverflowError:
        finite = False
    return (value, None) if finite else (None, " (not finite)")


def _check_label(value: object, cells: bool) -> tuple[Any, str | None]:
    if isinstance(value, str):
        return value, None
    return _check_int(value, False)


def _check_flag(value: object, cells: bool) -> tuple[Any, str | None]:
    converted, problem = _check_int(value, cells)
    return (converted, None) if problem is None and converted in (0, 1) else (None, "")


def _check_grade(value: object, cells: bool) -> tuple[Any, str | None]:
    from scidocs_eval.formats.judgements import GRADE_LIMIT

    if isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            return None, " (not an integer)"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not _is_int(value):
        return None, ""
    return (value, None) if abs(value) <= GRADE_LIMIT else \
        (None, f" (beyond what pytrec_eval takes: |grade| <= {GRADE_LIMIT}; use small grades 0, 1, 2, ...)")


def _check_object(value: object, cells: bool) -> tuple[Any, str | None]:
    return (value, None) if isinstance(value, dict) else (None, "")


_KIND_CHECKS: dict[str, Callable[[object, bool], tuple[Any, str | None]]] = {
    "text": _check_text, "id": _check_id, "int": _check_int, "number": _check_number, "label": _check_label,
    "flag": _check_flag, "grade": _check_grade, "object": _check_object}


# --- tables (parquet): the same rules, checked in bulk on each column -----------------------------------------

def _arrow() -> tuple[Any, Any]:
    """pyarrow and its compute module (the [formats] extra: a parquet file is read only with it installed)."""
    return require("pyarrow", "checking a parquet file's columns"), require("pyarrow.compute",
                                                                           "checking a parquet file's columns")


def _arrow_accepts(kind: str, arrow_type: Any) -> bool:
    pa, _ = _arrow()

    text = pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)
    integer = pa.types.is_integer(arrow_type)
    return {"text": text, "id": text or integer, "int": integer, "label": text or integer, "flag": integer,
            "grade": integer or pa.types.is_floating(arrow_type), "number": integer or pa.types.is_floating(arrow_type),
            "object": pa.types.is_struct(arrow_type)}[kind]


def check_table(path: str | os.PathLike[str], table: Any, schema: RowSchema) -> list[dict[str, Any]]:
    """The rows of a pyarrow `table` read from `path`, each {field name: value} as `RowChecker.row` gives them,
    after checking each column at once: its type (one for the column, by construction), nulls, empty lists and
    values (finite numbers, non-empty ids, 0/1 flags, grades pytrec_eval takes); an error names the file, the
    first row at fault (from 1) and the column."""
    pa, pc = _arrow()

    columns: dict[str, Any] = {}
    first = 1 if table.num_rows else None
    """a column's type is every row's: an error about it names the first row."""
    for spec in schema.fields:
        name = next((n for n in spec.names if n in table.column_names), None)
        if name is None:
            if spec.required:
                raise InputError(path, f"field {spec.name!r} is missing: no such column (expected {spec.describe()}; "
                                 f"the columns are {', '.join(table.column_names) or 'none'})", row=first)
            columns[spec.name] = pa.nulls(table.num_rows)
            continue
        column = table.column(name).combine_chunks() if table.num_rows else table.column(name)
        values, value_type = column, column.type
        if spec.many:
            if not (pa.types.is_list(value_type) or pa.types.is_large_list(value_type)):
                raise InputError(path, f"field {name!r} is {value_type} (the column's type), expected "
                                 f"{spec.describe()}", row=first)
            if not spec.empty:
                _first_row(path, name, pc.and_(pc.is_valid(column), pc.equal(pc.list_value_length(column), 0)),
                           "an empty list", spec)
            values, value_type = pc.list_flatten(column), value_type.value_type
        if not any(_arrow_accepts(kind, value_type) for kind in spec.kinds) and not pa.types.is_null(value_type):
            raise InputError(path, f"field {name!r} is {value_type} (the column's type), expected {spec.describe()}",
                             row=first)
        if not spec.null:
            _first_row(path, name, pc.is_null(column), "null", spec)
        parents = pc.list_parent_indices(column) if spec.many else None
        if spec.many:
            _first_row(path, name, pc.is_null(values), "a list holding a null item", spec, parents)
        _check_column_values(path, name, spec, values, parents)
        columns[spec.name] = column.cast(pa.list_(pa.string()) if spec.many else pa.string()) \
            if "id" in spec.kinds and pa.types.is_integer(value_type) else column
    names = list(columns)
    return [dict(zip(names, values)) for values in zip(*(columns[n].to_pylist() for n in names))] \
        if names else [{} for _ in range(table.num_rows)]


def _first_row(path: str | os.PathLike[str], name: str, mask: Any, what: str, spec: Field,
               parents: Any = None, values: Any = None) -> None:
    """An error naming the first row where `mask` is true (`parents`: the row of each item of a list column;
    `values`: the values the mask is of, the one at fault shown)."""
    _, pc = _arrow()

    if len(mask) and pc.any(mask).as_py():
        index = pc.index(mask, True).as_py()
        shown = "" if values is None else f"{values[index].as_py()!r}: "
        index = index if parents is None else parents[index].as_py()
        raise InputError(path, f"field {name!r} is {shown}{what}, expected {spec.describe()}", row=index + 1)


def _check_column_values(path: str | os.PathLike[str], name: str, spec: Field, values: Any, parents: Any) -> None:
    """The value domain of a column's values (a list column's items, flattened), by kind: finite numbers,
    non-empty ids, flags, grades."""
    pa, pc = _arrow()

    kinds, value_type = spec.kinds, values.type
    if "number" in kinds and pa.types.is_floating(value_type):
        _first_row(path, name, pc.invert(pc.is_finite(values)), "not finite", spec, parents, values)
    if "id" in kinds and (pa.types.is_string(value_type) or pa.types.is_large_string(value_type)):
        _first_row(path, name, pc.equal(pc.utf8_trim_whitespace(values), ""), "an empty id", spec, parents, values)
    if "flag" in kinds and pa.types.is_integer(value_type):
        _first_row(path, name, pc.invert(pc.is_in(values, pa.array([0, 1], value_type))), "not 0 or 1", spec,
                   parents, values)
    if "grade" in kinds:
        from scidocs_eval.formats.judgements import GRADE_LIMIT

        as_float = pc.cast(values, pa.float64())
        _first_row(path, name, pc.not_equal(as_float, pc.floor(as_float)), "not an integer", spec, parents, values)
        _first_row(path, name, pc.greater(pc.abs(as_float), GRADE_LIMIT),
                   f"beyond what pytrec_eval takes (|grade| <= {GRADE_LIMIT})", spec, parents, values)


# --- the docs' table --------------------------------------------------------------------------------------------

def schema_table() -> str:
    """The Markdown table of every registered file kind, its fields and what each must hold."""
    rows = ["| file kind | written as | field | must be |", "|---|---|---|---|"]
    for schema in sorted(FILE_KINDS.values(), key=lambda schema: schema.name.lower()):
        for number, spec in enumerate(schema.fields):
            names = " / ".join(f"`{n}`" for n in spec.names)
            head = (f"{schema.name}", schema.container) if number == 0 else ("", "")
            rows.append(f"| {head[0]} | {head[1]} | {names} | {spec.describe()} |")
    return "\n".join(rows) + "\n"


def import_readers() -> None:
    """Import every reader module, so that FILE_KINDS and READERS hold every file kind."""
    import importlib
    import pkgutil

    import scidocs_eval.formats as formats

    for module in pkgutil.iter_modules(formats.__path__):
        importlib.import_module(f"scidocs_eval.formats.{module.name}")
