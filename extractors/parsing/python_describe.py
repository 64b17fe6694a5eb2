"""Small condition and value expressions in words, for the KV-head and MLA rules of a
ModelConfig-shaped class: `self.hf_text_config.attn_config["kv_n_heads"]` ->
`attn_config.kv_n_heads`, `getattr(self.hf_text_config, "multi_query", False)` ->
`multi_query`, `"k" in self.hf_config` -> `has k`; a local name reads as what it was assigned."""

from __future__ import annotations

import ast

from tree_sitter import Node

from apron.extractors.parsing.config_reads import config_read
from apron.extractors.parsing.python_forms import unary
from apron.extractors.parsing.python_ts import (
    arguments,
    attribute,
    boolean,
    call_parts,
    code_of,
    comparison,
    name_of,
    negated,
    node_text,
    returned,
    statements,
    string_value,
    unparenthesize,
)

SEQUENCES = ("list", "tuple", "set", "expression_list")


def int_value(node: Node | None) -> int | None:
    """The value of an int literal, or of `-` before one; else None."""
    if node is None:
        return None
    inner = unparenthesize(node)
    text = node_text(inner)
    if inner.type == "integer" and not text.endswith(("j", "J")):
        return int(ast.literal_eval(text))  # a literal only: never evaluates code
    negative = unary(inner, "-")
    value = int_value(negative) if negative is not None else None
    return -value if value is not None else None


def string_sequence(node: Node | None) -> list[str] | None:
    """The strings of a tuple/list/set literal of string literals, in order; else None."""
    if node is None:
        return None
    inner = unparenthesize(node)
    if inner.type not in SEQUENCES:
        return None
    values = [string_value(e) for e in inner.named_children]
    return values if all(v is not None for v in values) else None  # type: ignore[return-value]


class ExpressionDescriber:
    """Turns small condition/value expressions into short readable text. `env` holds what local
    names were assigned; `methods` the class's methods, by name, for `self.<method>()`."""

    def __init__(
        self, env: dict[str, Node] | None = None, methods: dict[str, Node] | None = None
    ) -> None:
        self.env = dict(env or {})
        self.methods = methods or {}

    def code(self, node: Node) -> str:
        return code_of(node)

    def resolved(self, node: Node) -> Node:
        """`node` with local names replaced by what they were assigned."""
        seen: set[str] = set()
        name = name_of(node)
        while name is not None and name in self.env and name not in seen:
            seen.add(name)
            node = self.env[name]
            name = name_of(node)
        return node

    def config_ref(self, node: Node) -> str | None:
        """The dotted config field a node reads ("" for a config itself), or None when it is
        not a config read; local names read as what they were assigned."""
        read = config_read(node, env=self.env)
        return read.field if read is not None else None

    def callee(self, node: Node) -> str:
        parts = call_parts(node)
        return self.code(parts[0]) if parts is not None else ""

    def getattr_default(self, node: Node) -> Node | None:
        args = arguments(node)
        if self.callee(node) == "getattr" and len(args) == 3:
            return args[2]
        return None

    def describe(self, node: Node) -> str:
        inner = unparenthesize(node)
        if inner.type == "lambda" and inner.child_by_field_name("parameters") is None:
            return self.describe(inner.child_by_field_name("body"))  # a default factory
        ref = self.config_ref(inner)
        if ref:
            return ref
        if inner.type in ("identifier", "true", "false", "none"):
            name = node_text(inner)
            return self._wrap(self.env[name]) if name in self.env else name
        text = string_value(inner)
        if text is not None:
            return text
        number = int_value(inner)
        if number is not None:
            return str(number)
        read = attribute(inner)
        if read is not None and self.code(read[0]) == "self":
            return read[1]
        if inner.type in ("list", "tuple", "set"):
            return "[" + ", ".join(self.describe(e) for e in inner.named_children) + "]"
        if negated(inner) is not None:
            return "not " + self._wrap(negated(inner))  # type: ignore[arg-type]
        for op in ("and", "or"):
            parts = boolean(inner, op)
            if parts is not None:
                return f"{self._wrap(parts[0], op)} {op} {self._wrap(parts[1], op)}"
        if comparison(inner) is not None:
            return self._describe_comparison(inner)
        if inner.type == "call":
            callee, args = self.callee(inner), arguments(inner)
            if callee == "hasattr" and len(args) == 2:
                base = self.config_ref(args[0])
                key = string_value(args[1])
                if base is not None and key is not None:
                    return f"has {base + '.' if base else ''}{key}"
            if callee.startswith("self.") and not args:
                return self.describe_method(callee.removeprefix("self."))
        return self.code(inner)

    def describe_method(self, name: str) -> str:
        """What `self.<name>()` returns, in words, when the method is one return; else `name()`."""
        method = self.methods.get(name)
        if method is not None:
            body = statements(method.child_by_field_name("body"))
            value = returned(body[0]) if len(body) == 1 else None
            if value is not None:
                return ExpressionDescriber(methods=self.methods).describe(value)
        return f"{name}()"

    def _describe_comparison(self, node: Node) -> str:
        operands, operators = comparison(node)  # type: ignore[misc]
        left = operands[0]
        parts = [self._wrap(left)]
        for op, right in zip(operators, operands[1:], strict=True):
            if op in ("in", "not in") and string_value(left) is not None:
                ref = self.config_ref(right)
                if ref is not None and len(operators) == 1:
                    prefix = "" if op == "in" else "not "
                    return f"{prefix}has {ref + '.' if ref else ''}{string_value(left)}"
            parts += [op, self._wrap(right)]
        return " ".join(parts)

    def _wrap(self, node: Node, parent_op: str | None = None) -> str:
        text = self.describe(node)
        inner = unparenthesize(node)
        name = name_of(inner)
        if name is not None and name in self.env:
            inner = unparenthesize(self.env[name])
        if inner.type == "boolean_operator":
            op = node_text(inner.child_by_field_name("operator"))
            if op != parent_op:
                return f"({text})"
        return text
