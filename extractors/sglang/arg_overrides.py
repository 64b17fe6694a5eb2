"""SGLang's per-architecture server-arg overrides that size the KV pools: the values the override
registry (python/sglang/srt/arg_groups/overrides.py) declares for the SWA and Mamba pool ratios,
the page size and the hybrid-SWA switch, per architecture.

Read: `MODEL_OVERRIDES` (arch -> {field: value}) and every function registered with
`@_register_for(...)`, `@register_model_override(arch)` or
`@register_model_override_predicate(...)`: each `overrides["field"] = literal` and each returned
dict literal's entry for one of SETTINGS, with the `if` tests that lead to it (as code). A test
that only asks whether the field was left at its ServerArgs default (`server_args.f ==
ServerArgs.f`), or no test, marks the row `applies_by_default`. Pure: file text in, records out."""

from __future__ import annotations

from tree_sitter import Node

from apron.extractors.parsing.python_ts import (
    call_name,
    code_of,
    defined_name,
    if_clauses,
    node_text,
    parse_python,
    single_assignment,
    single_comparison,
    statements,
    string_value,
    undecorated,
    unparenthesize,
)
from apron.extractors.records import ExtractionWarning, warning
from apron.extractors.sglang.records import SglangArgOverride

OVERRIDES_PATHS = ("python/sglang/srt/arg_groups/overrides.py",)
SETTINGS = (
    "swa_full_tokens_ratio",
    "mamba_full_memory_ratio",
    "disable_hybrid_swa_memory",
    "page_size",
)
CONSTANTS = "MODEL_OVERRIDES"
BY_NAME = ("_register_for", "register_model_override")
BY_PREDICATE = "register_model_override_predicate"


def _literal(node: Node) -> str | None:
    """A number or bool literal's code; None for anything else."""
    node = unparenthesize(node)
    if node.type in ("integer", "float", "true", "false"):
        return code_of(node)
    if node.type == "unary_operator" and node.named_child_count == 1:
        inner = _literal(node.named_children[0])
        return None if inner is None else code_of(node)
    return None


def _unset_test(code_node: Node, setting: str) -> bool:
    """`server_args.<setting> == ServerArgs.<setting>`: the user left the field at its default."""
    compared = single_comparison(code_node)
    if compared is None or compared[1] != "==":
        return False
    left, right = (code_of(side) for side in (compared[0], compared[2]))
    return left.endswith(f".{setting}") and right == f"ServerArgs.{setting}"


def _keys(decorator: Node) -> tuple[tuple[str, ...], str] | None:
    """(architectures, predicate code) a registering decorator names; None for another one."""
    call = decorator.named_children[0] if decorator.named_child_count else None
    if call is None or call.type != "call":
        return None
    name = call_name(call)
    args = [a for a in call.child_by_field_name("arguments").named_children if a.type != "comment"]
    if name in BY_NAME:
        names = tuple(string_value(a) for a in args)
        if all(names):
            return names, ""  # type: ignore[return-value]
        return (), "(architectures not literal) " + code_of(call)
    if name == BY_PREDICATE and len(args) == 1:
        return (), code_of(args[0])
    return None


class _Found:
    def __init__(self) -> None:
        self.rows: list[tuple[str, str, tuple[Node, ...]]] = []  # setting, value, tests

    def entries(self, node: Node, tests: tuple[Node, ...]) -> None:
        node = unparenthesize(node)
        if node.type != "dictionary":
            return
        for pair in node.named_children:
            if pair.type != "pair":
                continue
            key = string_value(pair.child_by_field_name("key"))
            if key in SETTINGS:
                value = _literal(pair.child_by_field_name("value"))
                self.rows.append((key, value or "", tests))


def _walk(block: list[Node], tests: tuple[Node, ...], found: _Found) -> None:
    for statement in block:
        if statement.type == "if_statement":
            clauses, otherwise = if_clauses(statement)
            for test, body in clauses:
                _walk(statements(body), (*tests, test), found)
            if otherwise is not None:
                _walk(statements(otherwise), tests, found)
        elif statement.type == "return_statement" and statement.named_child_count == 1:
            found.entries(statement.named_children[0], tests)
        elif statement.type == "expression_statement":
            assigned = single_assignment(statement)
            if assigned is None:
                continue
            target = unparenthesize(assigned[0])
            if target.type != "subscript":
                continue
            key = string_value(target.child_by_field_name("subscript"))
            if key in SETTINGS:
                found.rows.append((key, _literal(assigned[1]) or "", tests))
        elif statement.type in ("for_statement", "while_statement", "with_statement"):
            body = statement.child_by_field_name("body")
            _walk(statements(body), tests, found)


def arg_overrides(text: str, path: str) -> tuple[list[SglangArgOverride], list[ExtractionWarning]]:
    """Every override of SETTINGS the registry declares, per architecture (or predicate)."""
    root = parse_python(text, path)
    rows: list[SglangArgOverride] = []
    warnings: list[ExtractionWarning] = []
    for statement in root.named_children:
        assigned = (
            single_assignment(statement) if statement.type == "expression_statement" else None
        )
        if assigned is not None and node_text(assigned[0]) == CONSTANTS:
            table = unparenthesize(assigned[1])
            for pair in table.named_children if table.type == "dictionary" else ():
                arch = string_value(pair.child_by_field_name("key"))
                found = _Found()
                found.entries(pair.child_by_field_name("value"), ())
                for order, (setting, value, _tests) in enumerate(found.rows):
                    rows.append(_row(setting, value, (arch or "",), "", (), CONSTANTS, order, path))
            continue
        if statement.type != "decorated_definition":
            continue
        definition = undecorated(statement)
        function = defined_name(definition)
        keys = [
            k
            for k in (_keys(d) for d in statement.named_children if d.type == "decorator")
            if k is not None
        ]
        if not keys:
            continue
        found = _Found()
        _walk(statements(definition.child_by_field_name("body")), (), found)
        architectures = tuple(a for archs, _ in keys for a in archs)
        predicate = " or ".join(p for _, p in keys if p)
        for order, (setting, value, tests) in enumerate(found.rows):
            if not value:
                warnings.append(
                    warning(
                        "override_not_literal",
                        f"{function}.{setting}",
                        f"{function} sets {setting} to a value that is not a literal",
                        path,
                        function,
                    )
                )
            rows.append(
                _row(setting, value, architectures, predicate, tests, function, order, path)
            )
    return rows, warnings


def _row(
    setting, value, architectures, predicate, tests, function, order, path
) -> SglangArgOverride:
    guards = tuple(code_of(t) for t in tests)
    # no test, or only "the user left it at its default": what a server with default args gets
    by_default = all(_unset_test(t, setting) for t in tests)
    return SglangArgOverride(
        setting=setting,
        value=value,
        architectures=tuple(architectures),
        predicate=predicate,
        guards=guards,
        applies_by_default=by_default,
        function=function,
        order=order,
        path=path,
        symbol=function,
    )
