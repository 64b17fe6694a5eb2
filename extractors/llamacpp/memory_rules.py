"""llama.cpp's KV-cache and recurrent-state sizing rules, read as data from its C++ source:
the memory each architecture gets (llama_model::create_memory), the llama_hparams sizing methods
(n_embd_k_gqa, n_embd_r, n_embd_s, ...), the SWA cache size and context padding, the context
defaults of common_params, and the bytes per block of ggml's types. One pure function of file
text per fact; arithmetic as expressions (parsing/expressions.py)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from tree_sitter import Node

from apron.extractors.llamacpp.records import (
    CacheSizeRule,
    ContextDefault,
    GgmlTypeSize,
    HparamsFormula,
    MemoryCallback,
    MemoryRule,
    RecurrentLayerRule,
)
from apron.extractors.parsing.cpp_ts import (
    CppSource,
    call_arguments,
    call_name,
    code_children,
    compact,
    function_body,
    function_declarations,
    function_definitions,
    int_value,
    node_text,
    nodes_of_type,
    parse_cpp,
    string_value,
    switch_case_groups,
    walk,
)
from apron.extractors.parsing.expressions import (
    UnreadableExpression,
    conjunction,
    cpp_expression,
    cpp_name,
    names_in,
    negation,
)
from apron.extractors.records import ExtractionWarning, warning

CREATE_MEMORY = "llama_model::create_memory"
HPARAMS_METHODS = (
    "n_head",
    "n_head_kv",
    "n_gqa",
    "n_embd_head_k",
    "n_embd_head_v",
    "n_embd_k_gqa",
    "n_embd_v_gqa",
    "n_embd_r",
    "n_embd_s",
    "is_recurrent",
    "is_swa",
    "is_mla",
    "n_embd_head_k_mla",
    "n_embd_head_v_mla",
    "has_kv",
    "n_layer_kv",
)
ISWA_CONSTRUCTOR = "llama_kv_cache_iswa::llama_kv_cache_iswa"
ISWA_VARIABLES = ("size_base", "size_swa")
CONTEXT_CONSTRUCTOR = "llama_context::llama_context"
CONTEXT_VARIABLES = ("cparams.n_ctx", "cparams.n_ctx_seq", "cparams.n_batch", "cparams.n_ubatch")
COMMON_PARAMS = "common_params"
CONTEXT_FIELDS = (
    "n_ctx",
    "n_batch",
    "n_ubatch",
    "n_parallel",
    "n_sequences",
    "cache_type_k",
    "cache_type_v",
    "flash_attn_type",
    "kv_unified",
    "swa_full",
)
TYPE_TRAITS = "type_traits"
# The cache types llama.cpp's --cache-type-k/-v accept (common/arg.cpp kv_cache_types), plus f32.
CACHE_TYPES = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "IQ4_NL", "Q5_0", "Q5_1")
# C's fixed-width integer types are their width by definition; float/double are IEEE-754 on every
# platform ggml builds for. Any other type's sizeof is read from a typedef or struct, or unknown.
PRIMITIVE_SIZES = {
    "int8_t": 1,
    "uint8_t": 1,
    "int16_t": 2,
    "uint16_t": 2,
    "int32_t": 4,
    "uint32_t": 4,
    "int64_t": 8,
    "uint64_t": 8,
    "float": 4,
    "double": 8,
}


# ---------------------------------------------------------------- statement walker


@dataclass(frozen=True)
class Event:
    """A statement the walker reached: kind "return", "assign", "declare", or "unread" (a
    statement that may change the result and that the walker does not follow: a loop, a
    switch); `conditions` are the conditions (expressions) of the enclosing ifs."""

    kind: str
    conditions: tuple[Any, ...]
    target: str
    node: Node


def _conjunction(conditions: tuple) -> Any:
    return conjunction(conditions)


def _condition_value(if_node: Node) -> Node | None:
    clause = if_node.child_by_field_name("condition")
    if clause is None:
        return None
    value = clause.child_by_field_name("value")
    if value is not None:
        return value
    kids = code_children(clause)
    return kids[-1] if kids else None


def events(body: Node, locals_: dict[str, Any], conditions: tuple = ()) -> Iterator[Event]:
    """The returns, assignments and declarations of a body in source order, with the
    conditions they sit under; `locals_` collects `const T x = expr;` declarations read."""
    for statement in code_children(body) if body.type == "compound_statement" else [body]:
        kind = statement.type
        if kind == "compound_statement":
            yield from events(statement, locals_, conditions)
        elif kind == "return_statement":
            value = code_children(statement)
            if value:
                yield Event("return", conditions, "", value[0])
        elif kind == "if_statement":
            test = _condition_value(statement)
            try:
                tokens = cpp_expression(test, locals_) if test is not None else None
            except UnreadableExpression:
                tokens = None
            if tokens is None:
                yield Event("unread", conditions, "if", statement)
                continue
            for declaration in nodes_of_type(
                statement.child_by_field_name("condition"), "declaration"
            ):
                yield Event("unread", conditions, "if-declaration", declaration)
            consequence = statement.child_by_field_name("consequence")
            if consequence is not None:
                yield from events(consequence, locals_, (*conditions, tokens))
            alternative = statement.child_by_field_name("alternative")
            if alternative is not None:
                inner = code_children(alternative)
                for node in inner:
                    yield from events(node, locals_, (*conditions, negation(tokens)))
        elif kind == "declaration":
            for declarator in statement.children_by_field_name("declarator"):
                if declarator.type != "init_declarator":
                    continue
                name_node = declarator.child_by_field_name("declarator")
                value = declarator.child_by_field_name("value")
                if name_node is None or value is None:
                    continue
                name = node_text(name_node)
                yield Event("declare", conditions, name, value)
                if value.type != "lambda_expression":
                    try:
                        locals_[name] = cpp_expression(value, locals_)
                    except UnreadableExpression:
                        pass
        elif kind == "expression_statement":
            for expr in code_children(statement):
                if expr.type == "assignment_expression":
                    left = expr.child_by_field_name("left")
                    right = expr.child_by_field_name("right")
                    op = expr.child_by_field_name("operator")
                    if left is None or right is None:
                        continue
                    if op is not None and node_text(op) != "=":
                        yield Event("unread", conditions, cpp_name(node_text(left)), expr)
                        continue
                    yield Event("assign", conditions, cpp_name(node_text(left)), right)
        elif kind in ("for_statement", "for_range_loop", "while_statement", "do_statement"):
            yield Event("unread", conditions, kind, statement)
        elif kind == "switch_statement":
            yield Event("unread", conditions, kind, statement)


def _tokens(node: Node, locals_: dict[str, Any]) -> tuple[Any, str]:
    try:
        return cpp_expression(node, locals_), ""
    except UnreadableExpression as err:
        return (), f"{err} in `{compact(node)[:120]}`"


# ---------------------------------------------------------------- llama_hparams methods


def hparams_formulas(text: str, path: str) -> tuple[list[HparamsFormula], list[ExtractionWarning]]:
    """The branches of each llama_hparams sizing method in HPARAMS_METHODS."""
    source = parse_cpp(text, path)
    defined = dict(function_definitions(source.root))
    rows: list[HparamsFormula] = []
    warnings: list[ExtractionWarning] = []
    for method in HPARAMS_METHODS:
        symbol = f"llama_hparams::{method}"
        definition = defined.get(symbol)
        if definition is None:
            warnings.append(
                warning("method-absent", method, f"{symbol} is not defined in {path}", path, symbol)
            )
            continue
        locals_: dict[str, Any] = {}
        branch = 0
        for event in events(function_body(definition), locals_):
            if event.kind not in ("return", "unread"):
                continue
            if event.kind == "return":
                value, unknown = _tokens(event.node, locals_)
            else:
                value, unknown = (), f"a {event.target} this reader does not follow"
            if unknown:
                warnings.append(
                    warning("unread-formula", f"{method}#{branch}", unknown, path, symbol)
                )
            rows.append(
                HparamsFormula(
                    method=method,
                    branch=branch,
                    condition=_conjunction(event.conditions),
                    value=value,
                    unknown=unknown,
                    path=path,
                    symbol=symbol,
                )
            )
            branch += 1
    return rows, warnings


# ---------------------------------------------------------------- create_memory


def constructor_parameters(text: str, path: str, class_name: str) -> tuple[str, ...] | None:
    """The parameter names of `class_name`'s constructor declared in a header, or None."""
    source = parse_cpp(text, path)
    for name, node in function_declarations(source.root):
        if name != class_name:
            continue
        declarator = next((n for n in walk(node) if n.type == "function_declarator"), None)
        params = declarator.child_by_field_name("parameters") if declarator else None
        if params is None:
            continue
        names = []
        for param in code_children(params):
            ident = [n for n in walk(param) if n.type == "identifier"]
            names.append(node_text(ident[-1]) if ident else "")
        return tuple(names)
    return None


def header_of(class_name: str) -> str:
    """llama.cpp names each memory class's header after it: llama_kv_cache_iswa ->
    src/llama-kv-cache-iswa.h."""
    return "src/" + class_name.replace("_", "-") + ".h"


def memory_classes(text: str, path: str) -> tuple[str, ...]:
    """The classes create_memory constructs with `new`, sorted (their headers are read next)."""
    body = _create_memory_body(parse_cpp(text, path), path)
    found = {
        node_text(n.child_by_field_name("type"))
        for n in walk(body)
        if n.type == "new_expression" and n.child_by_field_name("type") is not None
    }
    return tuple(sorted(found))


def _create_memory_body(source: CppSource, path: str) -> Node:
    defined = dict(function_definitions(source.root))
    definition = defined.get(CREATE_MEMORY)
    if definition is None:
        raise source.missing(f"{CREATE_MEMORY} is not defined in {path}", CREATE_MEMORY)
    return function_body(definition)


def _archs(condition: Any) -> tuple[str, ...]:
    return tuple(sorted({t for t in names_in(condition) if t.startswith("LLM_ARCH_")}))


def create_memory_rules(
    text: str, path: str, parameters: dict[str, tuple[str, ...] | None]
) -> tuple[list[MemoryRule], list[MemoryCallback], list[ExtractionWarning]]:
    """Every memory create_memory builds (by switch case and condition) and every layer
    callback it sets. `parameters`: each constructed class's constructor parameter names."""
    source = parse_cpp(text, path)
    body = _create_memory_body(source, path)
    switches = [n for n in code_children(body) if n.type == "switch_statement"]
    if not switches:
        raise source.missing(f"no switch (arch) in {CREATE_MEMORY}", f"{CREATE_MEMORY} switch")
    rules: list[MemoryRule] = []
    callbacks: list[MemoryCallback] = []
    warnings: list[ExtractionWarning] = []
    for group in switch_case_groups(switches[0]):
        archs = tuple(sorted(node_text(label) for label in group.labels))
        locals_: dict[str, Any] = {}
        for statement in group.statements:
            for event in events(statement, locals_):
                if event.kind == "unread":
                    warnings.append(
                        warning(
                            "unread-statement",
                            event.target,
                            f"create_memory: a {event.target} this reader does not follow: "
                            f"`{compact(event.node)[:100]}`",
                            path,
                            CREATE_MEMORY,
                        )
                    )
                    continue
                condition = _conjunction(event.conditions)
                if event.kind == "assign" and event.target == "res":
                    rules.append(
                        _memory_rule(
                            len(rules), archs, condition, event.node, parameters, path, warnings
                        )
                    )
                elif event.kind in ("assign", "declare") and event.node.type == "lambda_expression":
                    callbacks.extend(
                        _callback_rows(
                            event.target,
                            condition,
                            event.conditions[-1] if event.conditions else (),
                            event.node,
                            dict(locals_),
                            path,
                            warnings,
                        )
                    )
    if not rules:
        raise source.missing(f"{CREATE_MEMORY} assigns no memory to res", f"{CREATE_MEMORY} res")
    return rules, callbacks, warnings


def _memory_rule(
    branch: int,
    archs: tuple[str, ...],
    condition: Any,
    value: Node,
    parameters: dict[str, tuple[str, ...] | None],
    path: str,
    warnings: list[ExtractionWarning],
) -> MemoryRule:
    if value.type == "null" or node_text(value) == "nullptr":
        return MemoryRule(
            branch=branch,
            archs=archs,
            condition=condition,
            memory_class="",
            arguments=(),
            path=path,
            symbol=CREATE_MEMORY,
        )
    if value.type != "new_expression":
        warnings.append(
            warning(
                "unread-memory",
                compact(value)[:60],
                f"res is assigned `{compact(value)[:100]}`, not `new <class>(...)` or nullptr",
                path,
                CREATE_MEMORY,
            )
        )
        return MemoryRule(
            branch=branch,
            archs=archs,
            condition=condition,
            memory_class="unknown",
            arguments=(),
            path=path,
            symbol=CREATE_MEMORY,
        )
    class_name = node_text(value.child_by_field_name("type"))
    args_node = value.child_by_field_name("arguments")
    args = code_children(args_node) if args_node is not None else []
    names = parameters.get(class_name)
    if names is None or len(names) != len(args):
        warnings.append(
            warning(
                "unnamed-arguments",
                class_name,
                f"{class_name}'s constructor parameters were not read from "
                f"{header_of(class_name)} (or their count differs): arguments by position",
                path,
                CREATE_MEMORY,
            )
        )
        names = tuple(f"arg{i}" for i in range(len(args)))
    arguments = tuple(f"{n}={compact(a)}" for n, a in zip(names, args, strict=True))
    return MemoryRule(
        branch=branch,
        archs=archs,
        condition=condition,
        memory_class=class_name,
        arguments=arguments,
        path=path,
        symbol=CREATE_MEMORY,
    )


def _callback_rows(
    variable: str,
    condition: Any,
    innermost: Any,
    lam: Node,
    locals_: dict[str, Any],
    path: str,
    warnings: list[ExtractionWarning],
) -> list[MemoryCallback]:
    """The lambda's branches; `innermost` (the closest if) names its architectures, and the
    outer locals it captures (`n_main`) are replaced by their formulas."""
    body = lam.child_by_field_name("body")
    rows: list[MemoryCallback] = []
    if body is None:
        return rows
    for event in events(body, locals_):
        if event.kind not in ("return", "unread"):
            continue
        value, unknown = (
            _tokens(event.node, locals_)
            if event.kind == "return"
            else ((), f"a {event.target} this reader does not follow")
        )
        if unknown:
            warnings.append(warning("unread-callback", variable, unknown, path, CREATE_MEMORY))
        rows.append(
            MemoryCallback(
                variable=variable,
                archs=_archs(innermost),
                condition=condition,
                branch=len(rows),
                when=_conjunction(event.conditions),
                value=value,
                unknown=unknown,
                path=path,
                symbol=CREATE_MEMORY,
            )
        )
    return rows


# ---------------------------------------------------------------- cache size, context padding


def assignments_in(
    text: str, path: str, function: str, variables: tuple[str, ...]
) -> tuple[list[CacheSizeRule], list[ExtractionWarning]]:
    """Every assignment (or initialised declaration) of `variables` in `function`, in order."""
    source = parse_cpp(text, path)
    defined = dict(function_definitions(source.root))
    definition = defined.get(function)
    if definition is None:
        raise source.missing(f"{function} is not defined in {path}", function)
    rows: list[CacheSizeRule] = []
    warnings: list[ExtractionWarning] = []
    locals_: dict[str, Any] = {}
    order: dict[str, int] = {}
    for event in events(function_body(definition), locals_):
        if event.kind not in ("assign", "declare") or event.target not in variables:
            continue
        value, unknown = _tokens(event.node, {})
        if unknown:
            warnings.append(warning("unread-formula", event.target, unknown, path, function))
        index = len(rows)  # source order across the variables: each reads the ones before
        order[event.target] = order.get(event.target, 0) + 1
        rows.append(
            CacheSizeRule(
                function=function,
                variable=event.target,
                order=index,
                condition=_conjunction(event.conditions),
                value=value,
                unknown=unknown,
                path=path,
                symbol=function,
            )
        )
    missing = [v for v in variables if v not in order]
    if missing:
        raise source.missing(
            f"{function} assigns none of {', '.join(missing)}", f"{function}: {missing[0]}"
        )
    return rows, warnings


# ---------------------------------------------------------------- common_params defaults


def context_defaults(text: str, path: str) -> tuple[list[ContextDefault], list[ExtractionWarning]]:
    source = parse_cpp(text, path)
    struct = next(
        (
            n
            for n in nodes_of_type(source.root, "struct_specifier")
            if (name := n.child_by_field_name("name")) is not None
            and node_text(name) == COMMON_PARAMS
            and n.child_by_field_name("body") is not None
        ),
        None,
    )
    if struct is None:
        raise source.missing(f"struct {COMMON_PARAMS} is not defined in {path}", COMMON_PARAMS)
    found: dict[str, Node] = {}
    for field in code_children(struct.child_by_field_name("body")):
        if field.type != "field_declaration":
            continue
        declarator = field.child_by_field_name("declarator")
        default = field.child_by_field_name("default_value")
        if declarator is not None and default is not None:
            found.setdefault(node_text(declarator), default)
    rows, warnings = [], []
    for name in CONTEXT_FIELDS:
        node = found.get(name)
        if node is None:
            warnings.append(
                warning(
                    "default-absent",
                    name,
                    f"struct {COMMON_PARAMS} has no default for {name}",
                    path,
                    COMMON_PARAMS,
                )
            )
            continue
        literal = int_value(node)
        if literal is None and node.type in ("true", "false"):
            literal = int(node.type == "true")
        rows.append(
            ContextDefault(
                field=name,
                value=compact(node),
                int_value=literal,
                path=path,
                symbol=f"{COMMON_PARAMS}::{name}",
            )
        )
    return rows, warnings


# ---------------------------------------------------------------- ggml type sizes


def _defines(source: CppSource) -> dict[str, int]:
    out: dict[str, int] = {}
    for node in nodes_of_type(source.root, "preproc_def"):
        name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        if name is None or value is None:
            continue
        text = re.sub(r"//.*|/\*.*?\*/", "", node_text(value)).strip()
        if re.fullmatch(r"\d+", text):
            out.setdefault(node_text(name), int(text))
    return out


def _typedef_sizes(sources: list[CppSource]) -> dict[str, int | None]:
    """sizeof of each typedef of a primitive type, or of a struct of one primitive member;
    typedefs to other types (device branches: `half`, `sycl::half`) are left out, and a name
    typedef'd to different primitive sizes in two branches is None."""
    sizes: dict[str, set] = {}
    for source in sources:
        for node in nodes_of_type(source.root, "type_definition"):
            declarator = node.child_by_field_name("declarator")
            type_node = node.child_by_field_name("type")
            if declarator is None or type_node is None:
                continue
            size: int | None = None
            if type_node.type in ("primitive_type", "sized_type_specifier", "type_identifier"):
                size = PRIMITIVE_SIZES.get(node_text(type_node))
            elif type_node.type == "struct_specifier" and type_node.child_by_field_name("body"):
                fields = [
                    f
                    for f in code_children(type_node.child_by_field_name("body"))
                    if f.type == "field_declaration"
                ]
                if len(fields) == 1 and fields[0].child_by_field_name("declarator") is not None:
                    if fields[0].child_by_field_name("declarator").type == "field_identifier":
                        size = PRIMITIVE_SIZES.get(node_text(fields[0].child_by_field_name("type")))
            if size is None:  # `typedef half ggml_half;`: a device branch (CUDA, SYCL, ...)
                continue
            sizes.setdefault(node_text(declarator), set()).add(size)
    return {k: (next(iter(v)) if len(v) == 1 else None) for k, v in sizes.items()}
    # (a host typedef that differs between #if branches is None: the size is not one number)


_NAME_TYPES = (
    "identifier",
    "type_identifier",
    "primitive_type",
    "field_identifier",
    "number_literal",
)


def _first_name(node: Node) -> str:
    """The first name (or number) inside a node, comments skipped: `sizeof( block_x )` ->
    block_x, `[GGML_TYPE_F16]` -> GGML_TYPE_F16."""
    found = next((n for n in walk(node) if n.type in _NAME_TYPES), None)
    return node_text(found) if found is not None else ""


def _evaluate(node: Node, defines: dict[str, int], sizes: dict[str, int | None]) -> int | None:
    kind = node.type
    if kind == "number_literal":
        return int_value(node)
    if kind == "parenthesized_expression" and len(code_children(node)) == 1:
        return _evaluate(code_children(node)[0], defines, sizes)
    if kind == "identifier":
        return defines.get(node_text(node))
    if kind == "sizeof_expression":
        inner = node.child_by_field_name("value") or node.child_by_field_name("type")
        if inner is None:
            return None
        name = _first_name(inner)
        return PRIMITIVE_SIZES.get(name, sizes.get(name))
    if kind == "binary_expression":
        op = node_text(node.child_by_field_name("operator"))
        a = _evaluate(node.child_by_field_name("left"), defines, sizes)
        b = _evaluate(node.child_by_field_name("right"), defines, sizes)
        if a is None or b is None:
            return None
        ops: dict[str, Callable[[int, int], int]] = {
            "+": lambda x, y: x + y,
            "-": lambda x, y: x - y,
            "*": lambda x, y: x * y,
            "/": lambda x, y: x // y if y else 0,
        }
        return ops[op](a, b) if op in ops and (op != "/" or b) else None
    return None


def constant_expression(code: str) -> int | None:
    """The value of an integer constant expression written as C (a `#define`'s value such as
    `(1024*1024*1024)`): literals, parentheses and + - * /; None for anything else."""
    source = parse_cpp(f"static const long long value = {code};\n", "<constant>")
    declarator = next(iter(nodes_of_type(source.root, "init_declarator")), None)
    node = declarator.child_by_field_name("value") if declarator is not None else None
    return _evaluate(node, {}, {}) if node is not None and not source.first_error_line() else None


def _block_sizes(
    common: CppSource, defines: dict[str, int], sizes: dict[str, int | None]
) -> dict[str, int | None]:
    """sizeof(block_x) from `static_assert(sizeof(block_x) == <expr>, ...)`."""
    out: dict[str, int | None] = {}
    for node in nodes_of_type(common.root, "static_assert_declaration"):
        cond = node.child_by_field_name("condition")
        if cond is None or cond.type != "binary_expression":
            continue
        if node_text(cond.child_by_field_name("operator")) != "==":
            continue
        left = cond.child_by_field_name("left")
        if left is None or left.type != "sizeof_expression":
            continue
        inner = left.child_by_field_name("value") or left.child_by_field_name("type")
        name = _first_name(inner) if inner is not None else ""
        out.setdefault(name, _evaluate(cond.child_by_field_name("right"), defines, sizes))
    return out


# `... type_traits[...] = {` at a line's start, and the `};` line that closes it
_TRAITS_START = re.compile(rf"^[^\n;{{}}]*\b{TYPE_TRAITS}\s*\[[^\n]*=\s*\{{[ \t]*$", re.MULTILINE)
_TRAITS_END = re.compile(r"^\};[ \t]*$", re.MULTILINE)


def _type_traits_region(text: str) -> str:
    """ggml.c cut to the type_traits initializer, blank lines in place of the rest above it (so
    lines keep their numbers): the table is 300 of its 7,000 lines. The whole text when the
    table's first or last line is not where this looks."""
    start = _TRAITS_START.search(text)
    end = _TRAITS_END.search(text, start.end()) if start is not None else None
    if start is None or end is None:
        return text
    return "\n" * text.count("\n", 0, start.start()) + text[start.start() : end.end()] + "\n"


def ggml_type_sizes(
    ggml_c: str,
    ggml_c_path: str,
    common_h: str,
    common_path: str,
    ggml_h: str,
    ggml_h_path: str,
) -> tuple[list[GgmlTypeSize], list[ExtractionWarning]]:
    """blck_size and type_size of each CACHE_TYPES entry of ggml.c's type_traits."""
    source = parse_cpp(_type_traits_region(ggml_c), ggml_c_path)
    common = parse_cpp(common_h, common_path)
    header = parse_cpp(ggml_h, ggml_h_path)
    table = None
    for node in nodes_of_type(source.root, "init_declarator"):
        declarator = node.child_by_field_name("declarator")
        value = node.child_by_field_name("value")
        if declarator is None or value is None or value.type != "initializer_list":
            continue
        names = [n for n in walk(declarator) if n.type == "identifier"]
        if names and node_text(names[0]) == TYPE_TRAITS:
            table = value
            break
    if table is None:
        raise source.missing(f"no {TYPE_TRAITS}[] initializer in {ggml_c_path}", TYPE_TRAITS)
    defines = {**_defines(header), **_defines(common)}
    sizes = _typedef_sizes([header, common])
    blocks = _block_sizes(common, defines, sizes)
    entries: dict[str, dict[str, Node]] = {}
    for pair in code_children(table):
        if pair.type != "initializer_pair":
            continue
        designator = pair.child_by_field_name("designator")
        value = pair.child_by_field_name("value")
        if designator is None or value is None or value.type != "initializer_list":
            continue
        key = _first_name(designator)
        fields = {}
        for item in code_children(value):
            if item.type == "initializer_pair":
                d = item.child_by_field_name("designator")
                v = item.child_by_field_name("value")
                if d is not None and v is not None:
                    fields[_first_name(d)] = v
        entries[key] = fields
    rows, warnings = [], []
    for short in CACHE_TYPES:
        ggml_type = f"GGML_TYPE_{short}"
        fields = entries.get(ggml_type)
        if fields is None:
            warnings.append(
                warning(
                    "type-absent",
                    ggml_type,
                    f"{TYPE_TRAITS} has no [{ggml_type}] entry",
                    ggml_c_path,
                    TYPE_TRAITS,
                )
            )
            continue
        name_node = fields.get("type_name")
        blck_node, size_node = fields.get("blck_size"), fields.get("type_size")
        blck = _evaluate(blck_node, defines, sizes) if blck_node is not None else None
        size = None
        if size_node is not None:
            size = _evaluate(size_node, defines, {**sizes, **blocks})
        unknown = ""
        if blck is None or size is None:
            unknown = (
                f"blck_size `{compact(blck_node) if blck_node else '?'}` / type_size "
                f"`{compact(size_node) if size_node else '?'}` not read statically "
                f"(no #define, typedef or static_assert gives it)"
            )
            warnings.append(warning("size-unknown", ggml_type, unknown, ggml_c_path, TYPE_TRAITS))
        rows.append(
            GgmlTypeSize(
                ggml_type=ggml_type,
                type_name=(string_value(name_node) or "") if name_node is not None else "",
                blck_size=blck,
                type_size=size,
                blck_size_code=compact(blck_node) if blck_node is not None else "",
                type_size_code=compact(size_node) if size_node is not None else "",
                unknown=unknown,
                path=ggml_c_path,
                symbol=f"{TYPE_TRAITS}[{ggml_type}]",
            )
        )
    return rows, warnings


# ---------------------------------------------------------------- recurrent layers per arch


def kv_names(text: str, path: str) -> dict[str, str]:
    """LLM_KV_NAMES of src/llama-arch.cpp: LLM_KV_* -> its GGUF key pattern ("%s.x")."""
    source = parse_cpp(text, path)
    out: dict[str, str] = {}
    for node in nodes_of_type(source.root, "init_declarator"):
        declarator = node.child_by_field_name("declarator")
        value = node.child_by_field_name("value")
        if declarator is None or value is None or node_text(declarator) != "LLM_KV_NAMES":
            continue
        for pair in code_children(value):
            items = code_children(pair) if pair.type == "initializer_list" else []
            if len(items) == 2 and string_value(items[1]) is not None:
                out[node_text(items[0])] = string_value(items[1]) or ""
    if not out:
        raise source.missing(f"no LLM_KV_NAMES entries in {path}", "LLM_KV_NAMES")
    return out


def recurrent_layer_rule(
    arch: str,
    gguf_name: str,
    model_class: str,
    statements: tuple[Node, ...],
    path: str,
    symbol: str,
    keys: dict[str, str],
) -> tuple[RecurrentLayerRule | None, list[ExtractionWarning]]:
    """The loader's recurrent_layer_arr assignment, or None when it makes none."""
    warnings: list[ExtractionWarning] = []
    assignment = None
    fill = ""
    conditional = False
    for statement in statements:
        for node in walk(statement):
            if node.type == "assignment_expression":
                left = node.child_by_field_name("left")
                if left is not None and left.type == "subscript_expression":
                    array = left.child_by_field_name("argument")
                    if array is not None and cpp_name(node_text(array)) == "recurrent_layer_arr":
                        assignment = assignment or (left, node.child_by_field_name("right"))
                        conditional = conditional or any(
                            a.type == "if_statement" for a in _ancestors(node, statement)
                        )
            elif node.type == "call_expression" and call_name(node) == "std::fill":
                args = call_arguments(node)
                if len(args) == 3 and "recurrent_layer_arr" in node_text(args[0]):
                    fill = node_text(args[2])
    if assignment is None and not fill:
        return None, warnings
    locals_: list[str] = []
    local_keys: list[str] = []
    for statement in statements:
        for node in walk(statement):
            if node.type == "init_declarator":
                value = int_value(node.child_by_field_name("value"))
                name = node.child_by_field_name("declarator")
                if value is not None and name is not None:
                    locals_.append(f"{node_text(name)}={value}")
            elif node.type == "call_expression" and call_name(node).endswith(".get_key"):
                args = call_arguments(node)
                if len(args) >= 2 and args[1].type == "identifier":
                    key = keys.get(node_text(args[0]))
                    if key:
                        local_keys.append(f"{node_text(args[1])}={key}")
    index, value, unknown = "", (), ""
    if assignment is not None:
        left, right = assignment
        indices = left.child_by_field_name("indices") or left.child_by_field_name("index")
        inner = code_children(indices) if indices is not None else []
        index = node_text(inner[0]) if inner else ""
        value, unknown = _tokens(right, {})
    if unknown:
        warnings.append(warning("unread-formula", arch, unknown, path, symbol))
    return (
        RecurrentLayerRule(
            arch=arch,
            gguf_name=gguf_name,
            index=index,
            value=value,
            fill=fill,
            locals_=tuple(sorted(set(locals_))),
            local_keys=tuple(sorted(set(local_keys))),
            conditional=conditional,
            unknown=unknown,
            model_class=model_class,
            path=path,
            symbol=symbol,
        ),
        warnings,
    )


def _ancestors(node: Node, stop: Node) -> Iterator[Node]:
    current = node.parent
    while current is not None and current != stop.parent:
        yield current
        current = current.parent
