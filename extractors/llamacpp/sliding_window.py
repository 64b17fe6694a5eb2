"""llama.cpp sliding-window attention per architecture: what each architecture's hparams loader
assigns to `hparams.swa_type`, the `hparams.set_swa_pattern(period[, dense_first])` it calls,
and where the window (`hparams.n_swa`) and the layer pattern come from.

Two layouts: since 2026-05-04 `llama_model_mapping()` in src/llama-model.cpp maps each
LLM_ARCH_* to a `llama_model_<x>` class whose `load_arch_hparams` lives in src/models/*.cpp
(a class without one inherits its base's, per src/models/models.h); before, one
`switch (arch)` in `llama_model::load_hparams` held every architecture's code."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tree_sitter import Node

from apron.extractors.llamacpp.records import SlidingWindowRule
from apron.extractors.parsing.cpp_ts import (
    CppSource,
    bool_value,
    call_arguments,
    call_name,
    code_children,
    compact,
    enclosing_conditions,
    function_body,
    function_definitions,
    int_value,
    is_conditional,
    node_text,
    nodes_of_type,
    parse_cpp,
    parse_cpp_methods,
    switch_case_groups,
    switch_subject,
    walk,
)
from apron.extractors.records import ExtractionWarning, warning

MAPPING_FUNCTION = "llama_model_mapping"
HPARAMS_METHOD = "load_arch_hparams"
OLD_HPARAMS_FUNCTION = "llama_model::load_hparams"
SWA_TYPE_PREFIX = "LLAMA_SWA_TYPE_"
# The hparams member holding the per-layer SWA flags, by its names across llama.cpp's history
# (`swa_layers`, renamed `is_swa_impl` after the 2026-05-16 pin): both are read.
PER_LAYER_SWA_MEMBERS = ("swa_layers", "is_swa_impl")
SWA_MARKERS = re.compile(
    r"\b(swa_type|set_swa_pattern|" + "|".join(PER_LAYER_SWA_MEMBERS) + r"|n_swa)\b"
)


@dataclass(frozen=True)
class HparamsCode:
    """The statements that load one architecture's hparams, and where they are."""

    arch: str
    model_class: str  # "" in the old single-switch layout
    source: CppSource
    statements: tuple[Node, ...]
    symbol: str


# ---------------------------------------------------------------- locating the code


def mapping_classes(text: str, path: str) -> list[tuple[str, str]] | None:
    """(LLM_ARCH_*, llama_model_<x>) from the switch in `llama_model_mapping`; None when the
    function does not exist (the older layout)."""
    source = parse_cpp(text, path)
    definition = next(
        (n for name, n in function_definitions(source.root) if name == MAPPING_FUNCTION), None
    )
    if definition is None:
        return None
    body = function_body(definition)
    source.require_clean(body, MAPPING_FUNCTION)
    switch = next((n for n in walk(body) if n.type == "switch_statement"), None)
    if switch is None:
        raise source.missing(f"{MAPPING_FUNCTION} in {path} has no switch", MAPPING_FUNCTION)
    pairs: list[tuple[str, str]] = []
    for group in switch_case_groups(switch):
        classes = [
            node_text(n.child_by_field_name("type"))
            for s in group.statements
            for n in walk(s)
            if n.type == "new_expression" and n.child_by_field_name("type") is not None
        ]
        for label in group.labels:
            for model_class in dict.fromkeys(classes):
                pairs.append((node_text(label).split("::")[-1], model_class))
    if not pairs:
        raise source.missing(
            f"{MAPPING_FUNCTION} in {path} maps no architecture to a class", MAPPING_FUNCTION
        )
    return pairs


def struct_bases(text: str, path: str) -> dict[str, str]:
    """`struct llama_model_x : public llama_model_y` -> {x: y} from src/models/models.h."""
    source = parse_cpp(text, path)
    bases: dict[str, str] = {}
    for node in nodes_of_type(source.root, "struct_specifier", "class_specifier"):
        name = node.child_by_field_name("name")
        clause = next((c for c in node.named_children if c.type == "base_class_clause"), None)
        if name is None or clause is None:
            continue
        parents = [node_text(c) for c in clause.named_children if c.type == "type_identifier"]
        if parents:
            bases[node_text(name)] = parents[0]
    return bases


def hparams_methods(files: Sequence[tuple[str, str]]) -> dict[str, tuple[CppSource, Node]]:
    """`llama_model_x::load_arch_hparams` definitions: class -> (file, function node). Only the
    definitions of the method are parsed in a file where they parse cleanly on their own
    (cpp_ts.parse_cpp_methods); the other files are parsed whole."""
    found: dict[str, tuple[CppSource, Node]] = {}
    for path, text in files:
        source = parse_cpp_methods(text, path, HPARAMS_METHOD)
        for name, node in function_definitions(source.root):
            owner, _, method = name.rpartition("::")
            if method == HPARAMS_METHOD and owner and owner not in found:
                found[owner] = (source, node)
    return found


def per_model_code(
    pairs: Sequence[tuple[str, str]],
    methods: Mapping[str, tuple[CppSource, Node]],
    bases: Mapping[str, str],
    models_h: str,
) -> tuple[list[HparamsCode], list[ExtractionWarning]]:
    """The hparams code of every mapped architecture, following inherited methods."""
    code: list[HparamsCode] = []
    warnings: list[ExtractionWarning] = []
    for arch, model_class in pairs:
        owner = model_class
        seen = set()
        while owner not in methods and owner in bases and owner not in seen:
            seen.add(owner)
            owner = bases[owner]
        if owner not in methods:
            warnings.append(
                warning(
                    "no-hparams-method",
                    arch,
                    f"{arch} maps to {model_class}, but no {model_class}::{HPARAMS_METHOD} (or a base "
                    f"class's, per {models_h}) is defined in the model sources",
                    models_h,
                    model_class,
                )
            )
            continue
        source, definition = methods[owner]
        body = function_body(definition)
        source.require_clean(body, f"{owner}::{HPARAMS_METHOD}")
        statements = list(code_children(body))
        # an explicit call of a base class's loader runs that code too
        for node in list(walk(body)):
            if node.type == "call_expression":
                called_owner, _, method = call_name(node).rpartition("::")
                if method == HPARAMS_METHOD and called_owner in methods and called_owner != owner:
                    base_source, base_definition = methods[called_owner]
                    if base_source is source:
                        statements += code_children(function_body(base_definition))
        code.append(
            HparamsCode(
                arch=arch,
                model_class=model_class,
                source=source,
                statements=tuple(statements),
                symbol=f"{owner}::{HPARAMS_METHOD}",
            )
        )
    return code, warnings


def switch_layout_code(text: str, path: str) -> list[HparamsCode]:
    """The older layout: the case groups of `switch (arch)` in `llama_model::load_hparams`."""
    source = parse_cpp(text, path)
    definition = next(
        (n for name, n in function_definitions(source.root) if name == OLD_HPARAMS_FUNCTION), None
    )
    if definition is None:
        raise source.missing(
            f"neither {MAPPING_FUNCTION} nor {OLD_HPARAMS_FUNCTION} is defined in {path}",
            f"{MAPPING_FUNCTION} or {OLD_HPARAMS_FUNCTION}",
        )
    body = function_body(definition)
    source.require_clean(body, OLD_HPARAMS_FUNCTION)
    switch = next(
        (
            s
            for s in code_children(body)
            if s.type == "switch_statement" and switch_subject(s) == "arch"
        ),
        None,
    )
    if switch is None:
        raise source.missing(
            f"{OLD_HPARAMS_FUNCTION} in {path} has no top-level switch (arch)",
            f"{OLD_HPARAMS_FUNCTION} switch (arch)",
        )
    code = []
    for group in switch_case_groups(switch):
        for label in group.labels:
            code.append(
                HparamsCode(
                    arch=node_text(label).split("::")[-1],
                    model_class="",
                    source=source,
                    statements=group.statements,
                    symbol=f"{OLD_HPARAMS_FUNCTION} case {node_text(label)}",
                )
            )
    return code


# ---------------------------------------------------------------- reading the code


def _is_member(node: Node | None, member: str) -> bool:
    return node is not None and re.sub(r"\s+", "", node_text(node)) == f"hparams.{member}"


def _is_per_layer_member(node: Node | None) -> bool:
    return any(_is_member(node, member) for member in PER_LAYER_SWA_MEMBERS)


def _key_reads(statements: Sequence[Node]) -> list[tuple[Node, list[Node]]]:
    """Every `ml.get_key(...)` / `ml.get_key_or_arr(...)` call with its arguments."""
    reads = []
    for statement in statements:
        for node in walk(statement):
            if node.type == "call_expression" and call_name(node).split(".")[-1] in (
                "get_key",
                "get_key_or_arr",
                "get_arr",
            ):
                reads.append((node, call_arguments(node)))
    return reads


def _local_int(statements: Sequence[Node], name: str) -> int | None:
    """The literal initial value of a local `uint32_t <name> = <int>;`."""
    for statement in statements:
        for node in walk(statement):
            if (
                node.type == "init_declarator"
                and node_text(node.child_by_field_name("declarator")) == name
            ):
                return int_value(node.child_by_field_name("value"))
    return None


def _name_key_flags(condition: str, reads: Sequence[tuple[Node, list[Node]]]) -> str:
    """`found_swa` -> `has(LLM_KV_...)` for a local bool set from `ml.get_key(LLM_KV_..., ...)`."""
    for call, args in reads:
        parent = call.parent
        if parent is None or parent.type != "init_declarator" or not args:
            continue
        local = node_text(parent.child_by_field_name("declarator"))
        if re.fullmatch(r"\w+", local):
            condition = re.sub(rf"\b{local}\b", f"has({node_text(args[0])})", condition)
    return condition


UNKNOWN_PATTERN = "unknown"


def read_rule(code: HparamsCode, gguf_name: str) -> SlidingWindowRule | None:
    """The sliding-window facts of one architecture's hparams code; None when it has none."""
    statements = code.statements
    if not any(SWA_MARKERS.search(compact(s)) for s in statements):
        return None
    types: list[str] = []
    conditions: list[str] = []
    conditional = False
    pattern = "none"
    period: int | None = None
    dense_first: bool | None = None
    pattern_key = ""
    windows: list[int] = []
    window_key = ""
    window_required = False
    other: list[str] = []
    reads = _key_reads(statements)

    def note_condition(node: Node, what: str, stop: Node | None) -> None:
        nonlocal conditional
        if stop is not None and is_conditional(node, stop):
            conditional = True
            found = enclosing_conditions(node, stop)
            if found:
                conditions.append(f"{what} when {' && '.join(found)}")

    for statement in statements:
        for node in walk(statement):
            if node.type == "assignment_expression":
                left = node.child_by_field_name("left")
                right = node.child_by_field_name("right")
                if _is_member(left, "swa_type"):
                    value = node_text(right) if right is not None else ""
                    if value.startswith(SWA_TYPE_PREFIX):
                        swa_type = value.removeprefix(SWA_TYPE_PREFIX).lower()
                        types.append(swa_type)
                        note_condition(node, swa_type, statement.parent)
                    else:
                        other.append(compact(node))
                elif _is_member(left, "n_swa"):
                    number = int_value(right)
                    if number is not None:
                        windows.append(number)
                    else:
                        other.append(compact(node))
                elif (
                    left is not None
                    and left.type == "subscript_expression"
                    and _is_per_layer_member(left.child_by_field_name("argument"))
                ):
                    pattern = "computed"
                    other.append(compact(node))
                    note_condition(node, "computed pattern", statement.parent)
            elif node.type == "call_expression" and call_name(node).endswith(".set_swa_pattern"):
                arguments = call_arguments(node)
                if pattern == "period" or not arguments:
                    other.append(compact(node))
                    continue
                pattern = "period"
                dense_first = bool_value(arguments[1]) if len(arguments) > 1 else False
                period = int_value(arguments[0])
                if period is None and arguments[0].type == "identifier":
                    variable = node_text(arguments[0])
                    period = _local_int(statements, variable)
                    for _, args in reads:
                        if len(args) >= 2 and node_text(args[1]) == variable:
                            pattern_key = node_text(args[0])
                if period is None:
                    other.append(compact(node))
                note_condition(node, "pattern", statement.parent)
    for _, args in reads:
        if len(args) >= 2 and _is_per_layer_member(args[1]):
            pattern = "per-layer array"
            pattern_key = node_text(args[0])
        elif len(args) >= 2 and _is_member(args[1], "n_swa") and not window_key:
            window_key = node_text(args[0])
            window_required = len(args) < 3 or bool_value(args[2]) is not False
    conditions = [_name_key_flags(c, reads) for c in conditions]
    if pattern == "none" and any(t != "none" for t in types):
        pattern = UNKNOWN_PATTERN  # a SWA type with no pattern this reader knows
    return SlidingWindowRule(
        arch=code.arch,
        gguf_name=gguf_name,
        swa_types=tuple(dict.fromkeys(types)),
        conditional=conditional,
        conditions=tuple(dict.fromkeys(conditions)),
        pattern=pattern,
        period_default=period,
        dense_first=dense_first,
        pattern_gguf_key=pattern_key,
        window_literals=tuple(windows),
        window_gguf_key=window_key,
        window_gguf_required=window_required,
        other=tuple(dict.fromkeys(other)),
        model_class=code.model_class,
        path=code.source.path,
        symbol=code.symbol,
    )


def sliding_window_rules(
    code: Sequence[HparamsCode], gguf_names: Mapping[str, str]
) -> tuple[list[SlidingWindowRule], list[ExtractionWarning]]:
    rules: dict[str, SlidingWindowRule] = {}
    warnings: list[ExtractionWarning] = []
    for item in code:
        rule = read_rule(item, gguf_names.get(item.arch, ""))
        if rule is None:
            continue
        if item.arch in rules:
            warnings.append(
                warning(
                    "duplicate-arch",
                    item.arch,
                    f"{item.arch} has hparams code twice; the first is kept",
                    item.source.path,
                    item.symbol,
                )
            )
            continue
        if rule.pattern == UNKNOWN_PATTERN:
            warnings.append(
                warning(
                    "unknown-pattern",
                    item.arch,
                    f"{item.arch} sets SWA type {', '.join(rule.swa_types)} but no pattern this "
                    "reader knows (set_swa_pattern, or the per-layer member "
                    f"{' / '.join(PER_LAYER_SWA_MEMBERS)}); its pattern is {UNKNOWN_PATTERN}",
                    item.source.path,
                    item.symbol,
                )
            )
        if item.arch not in gguf_names:
            warnings.append(
                warning(
                    "arch-without-name",
                    item.arch,
                    f"{item.arch} sets sliding-window hparams but has no LLM_ARCH_NAMES entry",
                    item.source.path,
                    item.symbol,
                )
            )
        rules[item.arch] = rule
    return list(rules.values()), warnings
