"""The default each field of SGLang's ServerArgs starts with (`name: A[...] = value` in the
dataclass body of server_args.py), as an expression of the one rule language: what "default
server args" means to the rules apron evaluates for SGLang (the memory fraction, the prefill
cuda-graph backend). `dataclasses.field(default=X)` is X, `default_factory=list` / `dict` an
empty list / dict; a default the builder does not read, or one that reads a name (a module
constant), is ("undef", its code) and a field
without a default (`model_path`) has no row: a rule that reads either is unknown in apron."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tree_sitter import Node

from apron.extractors.engine_api import FactOutput
from apron.extractors.parsing.expressions import names_in, quantity_condition
from apron.extractors.parsing.python_ts import (
    call_name,
    class_fields,
    code_of,
    keywords,
    unparenthesize,
)
from apron.extractors.records import Record
from apron.extractors.sglang.records import SglangServerArgDefault
from apron.extractors.sglang.serving_defaults import (
    SERVER_ARGS_CLASS,
    SERVER_ARGS_PATHS,
    server_args_class,
)
from apron.extractors.snapshot import Snapshot

FACT = "server_arg_defaults"
EMPTY_FACTORIES = {"list": ("list",), "dict": ("dict",)}


def default_expression(value: Node) -> Any:
    """A field's default value as an expression (dataclasses.field read for its default); one
    that reads a name (a module constant: `CHOICES[0]`) is ("undef", its code): a default is
    evaluated with no names, and an upper-case name would read as an enum constant."""
    node = unparenthesize(value)
    if call_name(node) == "field":
        given = keywords(node)
        factory = given.get("default_factory")
        if factory is not None and code_of(factory) in EMPTY_FACTORIES:
            return EMPTY_FACTORIES[code_of(factory)]
        if "default" not in given:
            return ("undef", code_of(node))
        node = given["default"]
    found = quantity_condition(node)
    return ("undef", code_of(node)) if any(True for _ in names_in(found)) else found


def server_arg_defaults(text: str, path: str) -> list[SglangServerArgDefault]:
    """One row per ServerArgs field (or class attribute) that has a value in the class body."""
    fields = class_fields(server_args_class(text, path))
    return [
        SglangServerArgDefault(
            field=name,
            default=default_expression(value),
            path=path,
            symbol=f"{SERVER_ARGS_CLASS}.{name}",
        )
        for name, value in sorted(fields.items())
    ]


def server_arg_defaults_fact(
    snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]
) -> FactOutput:
    path = snapshot.first_existing(SERVER_ARGS_PATHS, anchor=SERVER_ARGS_CLASS)
    return FactOutput(tuple(server_arg_defaults(snapshot.read_text(path), path)))
