"""The tensor shapes each architecture's `load_arch_tensors` expects (src/models/*.cpp): every
`create_tensor(tn(LLM_TENSOR_X, "suffix"[, i]), {ne0, ne1, ...}, flags)` with its GGUF tensor name
(LLM_TENSOR_NAMES), its dimensions as expressions over llama_hparams (the locals of
LLAMA_LOAD_LOCALS, src/llama-model.h, and the function's own `const` locals read through),
whether the file must hold it, and the condition and per-layer loop it sits in. llama.cpp
refuses a file whose tensor has another shape (llama_model_loader::check_tensor_dims): apron
compares these with a GGUF header's tensor infos."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from tree_sitter import Node

from apron.extractors.llamacpp.records import TensorShape
from apron.extractors.parsing.cpp_ts import (
    CppSource,
    call_arguments,
    call_name,
    code_children,
    compact,
    function_body,
    function_definitions,
    node_text,
    nodes_of_type,
    parse_cpp,
    parse_cpp_methods,
    string_value,
)
from apron.extractors.parsing.expressions import (
    UnreadableExpression,
    conjunction,
    cpp_expression,
    names_in,
    negation,
)
from apron.extractors.records import ExtractionWarning, warning

TENSORS_METHOD = "load_arch_tensors"
LOCALS_MACRO = "LLAMA_LOAD_LOCALS"


def tensor_names(text: str, path: str) -> dict[str, str]:
    """LLM_TENSOR_NAMES of src/llama-arch.cpp: LLM_TENSOR_* -> its GGUF name ("blk.%d.x")."""
    source = parse_cpp(text, path)
    out: dict[str, str] = {}
    for node in nodes_of_type(source.root, "init_declarator"):
        declarator = node.child_by_field_name("declarator")
        value = node.child_by_field_name("value")
        if declarator is None or value is None or node_text(declarator) != "LLM_TENSOR_NAMES":
            continue
        for pair in code_children(value):
            items = code_children(pair) if pair.type == "initializer_list" else []
            if len(items) == 2 and string_value(items[1]) is not None:
                out[node_text(items[0])] = string_value(items[1]) or ""
    if not out:
        raise source.missing(f"no LLM_TENSOR_NAMES entries in {path}", "LLM_TENSOR_NAMES")
    return out


def load_locals(text: str, path: str) -> dict[str, Any]:
    """The locals #define LLAMA_LOAD_LOCALS declares (src/llama-model.h), as expressions (one
    not read is the name "unread:NAME", which no environment has)."""
    found = re.search(rf"#define\s+{LOCALS_MACRO}\s*\\\s*\n((?:.*\\\s*\n)*.*)", text)
    if found is None:
        return {}
    body = "void f() {\n" + re.sub(r"\\\s*\n", "\n", found.group(1)) + "\n}\n"
    source = parse_cpp(body, path)
    out: dict[str, Any] = {}
    for declaration in nodes_of_type(source.root, "declaration"):
        for declarator in declaration.children_by_field_name("declarator"):
            if declarator.type != "init_declarator":
                continue
            name = node_text(declarator.child_by_field_name("declarator"))
            try:
                out[name] = cpp_expression(declarator.child_by_field_name("value"), out)
            except UnreadableExpression:
                out[name] = f"unread:{name}"
    return out


def tensor_methods(files: Sequence[tuple[str, str]]) -> dict[str, tuple[CppSource, Node]]:
    found: dict[str, tuple[CppSource, Node]] = {}
    for path, text in files:
        source = parse_cpp_methods(text, path, TENSORS_METHOD)
        for name, node in function_definitions(source.root):
            owner, _, method = name.rpartition("::")
            if method == TENSORS_METHOD and owner and owner not in found:
                found[owner] = (source, node)
    return found


class _Reader:
    def __init__(self, function, archs, path, names, macro_locals) -> None:
        self.function, self.archs, self.path = function, archs, path
        self.names = names
        self.locals: dict[str, Any] = {}
        self.macro_locals = macro_locals
        self.rows: list[TensorShape] = []
        self.warnings: list[ExtractionWarning] = []

    def block(self, node: Node, conditions: tuple, loop: str) -> None:
        for statement in code_children(node) if node.type == "compound_statement" else [node]:
            self.statement(statement, conditions, loop)

    def statement(self, node: Node, conditions: tuple, loop: str) -> None:
        kind = node.type
        if kind == "compound_statement":
            self.block(node, conditions, loop)
        elif kind == "expression_statement":
            text = compact(node).rstrip(";").strip()
            if text == LOCALS_MACRO:
                self.locals.update(self.macro_locals)
            for call in nodes_of_type(node, "call_expression"):
                if call_name(call) == "create_tensor":
                    self.tensor(call, conditions, loop)
        elif kind == "declaration":
            for declarator in node.children_by_field_name("declarator"):
                if declarator.type != "init_declarator":
                    continue
                name = node_text(declarator.child_by_field_name("declarator"))
                value = declarator.child_by_field_name("value")
                try:
                    self.locals[name] = (
                        cpp_expression(value, self.locals)
                        if value is not None
                        else f"unread:{name}"
                    )
                except UnreadableExpression:
                    self.locals[name] = f"unread:{name}"
                for call in nodes_of_type(value, "call_expression") if value is not None else []:
                    if call_name(call) == "create_tensor":
                        self.tensor(call, conditions, loop)
        elif kind == "if_statement":
            clause = node.child_by_field_name("condition")
            value = clause.child_by_field_name("value") if clause is not None else None
            try:
                test = cpp_expression(
                    value, {**self.locals, **({loop: f"${loop}"} if loop else {})}
                )
            except (UnreadableExpression, TypeError):
                test = "unread:condition"
            consequence = node.child_by_field_name("consequence")
            if consequence is not None:
                self.block(consequence, (*conditions, test), loop)
            alternative = node.child_by_field_name("alternative")
            for part in code_children(alternative) if alternative is not None else []:
                self.statement(part, (*conditions, negation(test)), loop)
        elif kind == "for_statement":
            init = node.child_by_field_name("initializer")
            declarators = init.children_by_field_name("declarator") if init is not None else []
            variable = (
                node_text(declarators[0].child_by_field_name("declarator"))
                if len(declarators) == 1 and declarators[0].type == "init_declarator"
                else ""
            )
            test = compact(node.child_by_field_name("condition")) if variable else ""
            body = node.child_by_field_name("body")
            per_layer = bool(re.fullmatch(rf"{variable} < (n_layer|hparams\.n_layer)", test))
            if body is not None:
                self.block(body, conditions, variable if per_layer else f"?{variable}")

    def tensor(self, call: Node, conditions: tuple, loop: str) -> None:
        args = call_arguments(call)
        if len(args) != 3 or args[0].type != "call_expression" or call_name(args[0]) != "tn":
            return  # create_tensor(ml, ...) or a helper's own call: not one this reader reads
        tn_args = call_arguments(args[0])
        tensor = node_text(tn_args[0]) if tn_args else ""
        suffix = string_value(tn_args[1]) if len(tn_args) > 1 else ""
        bid = node_text(tn_args[-1]) if len(tn_args) >= 3 else ""
        unknown = ""
        if tensor not in self.names:
            unknown = f"{tensor} is not in LLM_TENSOR_NAMES"
        block: Any = ()
        if bid and bid == loop:
            block = f"${loop}"
        elif bid.isdigit():
            block = int(bid)
        elif bid:
            unknown = unknown or f"a tensor of block {bid}, outside a loop over n_layer"
        bound = {
            **self.locals,
            **({loop: f"${loop}"} if loop and not loop.startswith("?") else {}),
        }
        dims: list[Any] = []
        shape = args[1]
        for dim in code_children(shape) if shape.type == "initializer_list" else []:
            try:
                tokens = cpp_expression(dim, bound)
            except UnreadableExpression as err:
                unknown = unknown or f"a dimension this reader does not read ({err})"
                tokens = ()
            if any(t.startswith("unread:") for t in names_in(tokens)):
                unknown = (
                    unknown
                    or f"a dimension reads a local this reader does not read ({compact(dim)})"
                )
            dims.append(tokens)
        if shape.type != "initializer_list":
            unknown = unknown or "a shape that is not a braced list"
        flags = compact(args[2])
        condition = conjunction(conditions)
        if any(t.startswith("unread:") for t in names_in(condition)):
            unknown = unknown or "a condition this reader does not read"
        self.rows.append(
            TensorShape(
                function=self.function,
                archs=self.archs,
                order=len(self.rows),
                tensor=tensor,
                name=self.names.get(tensor, ""),
                suffix=suffix or "",
                block=block,
                dims=tuple(dims),
                flags=flags,
                required="TENSOR_NOT_REQUIRED" not in flags and "TENSOR_SKIP" not in flags,
                condition=condition,
                unknown=unknown,
                path=self.path,
                symbol=self.function,
            )
        )


def read_tensors(
    source: CppSource,
    definition: Node,
    function: str,
    archs: tuple[str, ...],
    names: Mapping[str, str],
    macro_locals: Mapping[str, Any],
) -> tuple[list[TensorShape], list[ExtractionWarning]]:
    body = function_body(definition)
    source.require_clean(body, function)
    reader = _Reader(function, archs, source.path, names, macro_locals)
    reader.block(body, (), "")
    for row in reader.rows:
        if row.unknown and row.required and row.condition == ():
            reader.warnings.append(
                warning(
                    "unread-tensor",
                    function,
                    f"{row.tensor}: {row.unknown}",
                    source.path,
                    function,
                )
            )
    return reader.rows, reader.warnings
