"""The literal values vLLM's command line accepts where apron takes the same flags: the members of
`CacheDType` (--kv-cache-dtype, vllm/config/cache.py) and the suffixes and auto spellings of
`human_readable_int_or_auto` (--max-model-len, vllm/utils/argparse_utils.py: `k`/`m`/`g`/`t`
decimal, `K`/`M`/`G`/`T` binary, `-1` or `auto`). Pure: file text in, records out."""

from __future__ import annotations

from tree_sitter import Node

from apron.extractors.parsing.python_ts import (
    PYTHON,
    code_of,
    defined_name,
    node_text,
    parse_python,
    single_assignment,
    statements,
    string_value,
    undecorated,
    unparenthesize,
)
from apron.extractors.parsing.ts_query import typed_descendants
from apron.extractors.records import ExtractionWarning, warning
from apron.extractors.vllm.records import OptionLiteral

CACHE_PATH = "vllm/config/cache.py"
ARGPARSE_PATH = "vllm/utils/argparse_utils.py"
READS = (CACHE_PATH, ARGPARSE_PATH)
LITERAL_TYPES = ("CacheDType",)
PARSER, AUTO_PARSER = "human_readable_int", "human_readable_int_or_auto"
MULTIPLIERS = {"decimal_multiplier": "decimal", "binary_multiplier": "binary"}


def _integer(node: Node) -> int | None:
    """An integer literal or a power of integer literals (`10**3`, `2**10`)."""
    node = unparenthesize(node)
    if node.type == "integer":
        return int(node_text(node), 0)
    if node.type == "binary_operator" and node_text(node.child_by_field_name("operator")) == "**":
        base = _integer(node.child_by_field_name("left"))
        power = _integer(node.child_by_field_name("right"))
        return None if base is None or power is None or power > 64 else base**power
    return None


def literal_members(text: str, path: str) -> tuple[list[OptionLiteral], list[ExtractionWarning]]:
    """The string members of each `Name = Literal[...]` of LITERAL_TYPES at module level."""
    root = parse_python(text, path)
    rows: list[OptionLiteral] = []
    warnings: list[ExtractionWarning] = []
    found: set[str] = set()
    for statement in root.named_children:
        assigned = (
            single_assignment(statement) if statement.type == "expression_statement" else None
        )
        if assigned is None or node_text(assigned[0]) not in LITERAL_TYPES:
            continue
        name = node_text(assigned[0])
        value = unparenthesize(assigned[1])
        if value.type != "subscript" or code_of(value.child_by_field_name("value")) != "Literal":
            warnings.append(
                warning("unreadable_literal", name, f"{name} = {code_of(value)}", path, name)
            )
            continue
        found.add(name)
        members = [c for c in value.children_by_field_name("subscript")]
        for order, member in enumerate(members):
            text_value = string_value(member)
            if text_value is None:
                warnings.append(
                    warning("unreadable_literal", name, f"member {code_of(member)}", path, name)
                )
                continue
            rows.append(
                OptionLiteral(symbol=name, key=text_value, value="", order=order, path=path)
            )
    for name in LITERAL_TYPES:
        if name not in found:
            warnings.append(warning("absent", name, f"no {name} Literal in {path}", path, name))
    return rows, warnings


def _function(root: Node, name: str) -> Node | None:
    for statement in root.named_children:
        definition = undecorated(statement)
        if definition.type == "function_definition" and defined_name(definition) == name:
            return definition
    return None


def length_parser(text: str, path: str) -> tuple[list[OptionLiteral], list[ExtractionWarning]]:
    """The suffix multipliers of human_readable_int and the auto spellings of
    human_readable_int_or_auto (the strings its first test compares the value with)."""
    root = parse_python(text, path)
    rows: list[OptionLiteral] = []
    warnings: list[ExtractionWarning] = []
    parser = _function(root, PARSER)
    if parser is None:
        return rows, [warning("absent", PARSER, f"no {PARSER} in {path}", path, PARSER)]
    for node in typed_descendants(PYTHON, parser, ("assignment",)):
        assigned = single_assignment(node)
        if assigned is None or node_text(assigned[0]) not in MULTIPLIERS:
            continue
        kind = MULTIPLIERS[node_text(assigned[0])]
        table = unparenthesize(assigned[1])
        for order, pair in enumerate(p for p in table.named_children if p.type == "pair"):
            suffix = string_value(pair.child_by_field_name("key"))
            factor = _integer(pair.child_by_field_name("value"))
            if suffix is None or factor is None:
                warnings.append(
                    warning("unreadable_literal", PARSER, f"{code_of(pair)}", path, PARSER)
                )
                continue
            rows.append(
                OptionLiteral(
                    symbol=f"{PARSER}.{kind}", key=suffix, value=str(factor), order=order, path=path
                )
            )
    auto = _function(root, AUTO_PARSER)
    if auto is None:
        warnings.append(
            warning("absent", AUTO_PARSER, f"no {AUTO_PARSER} in {path}", path, AUTO_PARSER)
        )
        return rows, warnings
    first_if = next(
        (s for s in statements(auto.child_by_field_name("body")) if s.type == "if_statement"), None
    )
    spellings = (
        [
            string_value(n)
            for n in typed_descendants(
                PYTHON, first_if.child_by_field_name("condition"), ("string",)
            )
        ]
        if first_if is not None
        else []
    )
    for order, spelling in enumerate(s for s in spellings if s is not None):
        rows.append(
            OptionLiteral(
                symbol=f"{AUTO_PARSER}.auto", key=spelling, value="-1", order=order, path=path
            )
        )
    if not spellings:
        warnings.append(
            warning(
                "unreadable_literal",
                AUTO_PARSER,
                "no auto spelling in its first test",
                path,
                AUTO_PARSER,
            )
        )
    return rows, warnings
