"""C++ arithmetic as data: an expression node of tree-sitter-cpp -> a tuple of reverse-Polish
tokens that apron evaluates with a stack (apron/llamacpp_formula.py), never source text.

Tokens: a decimal integer ("256"); a name ("n_embd", "cparams.n_ctx": `this->`, `hparams.` and
`model.hparams.` are dropped, they all name llama_hparams members); an operator ("+", "-", "*",
"/", "%", "<", "<=", ">", ">=", "==", "!=", "&&", "||") taking two operands; "!" and "neg"
taking one; "?:" taking three (condition, then, else); "call:NAME/N" taking N (a call of NAME
with N arguments: "call:n_head/0", "call:std::min/2", "call:GGML_PAD/2"); "cast:TYPE" taking
one. A shape outside these is UnreadableFormula naming the node type: the caller turns it into
an explicit unknown with a warning."""

from __future__ import annotations

import re

from tree_sitter import Node

from apron.extractors.parsing.cpp_ts import (
    call_arguments,
    call_name,
    code_children,
    int_value,
    node_text,
)

BINARY = frozenset({"+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "&&", "||"})
_HPARAMS_PREFIX = re.compile(r"^(?:this->|model\.hparams\.|hparams\.)")


class UnreadableFormula(ValueError):
    """An expression of a shape this reader does not turn into tokens."""


def name_token(text: str) -> str:
    return _HPARAMS_PREFIX.sub("", re.sub(r"\s+", "", text))


def formula(node: Node, locals_: dict[str, tuple[str, ...]] | None = None) -> tuple[str, ...]:
    """The expression's reverse-Polish tokens; a name bound in `locals_` is replaced by its
    own tokens (a `const uint32_t d_inner = ...;` read earlier in the same body)."""
    bound = locals_ or {}
    kind = node.type
    if kind == "parenthesized_expression":
        inner = code_children(node)
        if len(inner) != 1:
            raise UnreadableFormula(kind)
        return formula(inner[0], bound)
    if kind == "number_literal":
        value = int_value(node)
        if value is None:
            raise UnreadableFormula(f"number {node_text(node)}")
        return (str(value),)
    if kind in ("true", "false"):
        return ("1" if kind == "true" else "0",)
    if kind in ("identifier", "field_expression", "qualified_identifier"):
        name = name_token(node_text(node))
        return bound.get(name, (name,))
    if kind == "binary_expression":
        op = node.child_by_field_name("operator")
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        symbol = node_text(op) if op is not None else ""
        if symbol not in BINARY or left is None or right is None:
            raise UnreadableFormula(f"binary {symbol}")
        return (*formula(left, bound), *formula(right, bound), symbol)
    if kind == "unary_expression":
        op = node.child_by_field_name("operator")
        arg = node.child_by_field_name("argument")
        symbol = node_text(op) if op is not None else ""
        if arg is None or symbol not in ("!", "-"):
            raise UnreadableFormula(f"unary {symbol}")
        return (*formula(arg, bound), "!" if symbol == "!" else "neg")
    if kind == "conditional_expression":
        parts = [node.child_by_field_name(f) for f in ("condition", "consequence", "alternative")]
        if any(p is None for p in parts):
            raise UnreadableFormula(kind)
        return (*(t for p in parts for t in formula(p, bound)), "?:")  # type: ignore[arg-type]
    if kind == "call_expression":
        args = call_arguments(node)
        name = name_token(call_name(node))
        return (*(t for a in args for t in formula(a, bound)), f"call:{name}/{len(args)}")
    if kind == "cast_expression":
        type_node = node.child_by_field_name("type")
        value = node.child_by_field_name("value")
        if type_node is None or value is None:
            raise UnreadableFormula(kind)
        cast = re.sub(r"\s+", " ", node_text(type_node))
        return (*formula(value, bound), f"cast:{cast}")
    if kind == "subscript_expression":
        array = node.child_by_field_name("argument")
        index = node.child_by_field_name("indices") or node.child_by_field_name("index")
        inner = code_children(index) if index is not None and index.type != "identifier" else []
        target = inner[0] if inner else index
        if array is None or target is None:
            raise UnreadableFormula(kind)
        return (*formula(target, bound), f"at:{name_token(node_text(array))}")
    raise UnreadableFormula(kind)


_PRECEDENCE = {
    "||": 1,
    "&&": 2,
    "==": 3,
    "!=": 3,
    "<": 4,
    "<=": 4,
    ">": 4,
    ">=": 4,
    "+": 5,
    "-": 5,
    "*": 6,
    "/": 6,
    "%": 6,
}


def infix(tokens: tuple[str, ...]) -> str:
    """Reverse-Polish tokens as C++-like words for a reviewer ("n_embd * (l - 1)"); rendered from
    the data, never read back. Tokens that do not make one expression are shown as they are."""
    stack: list[tuple[str, int]] = []  # (text, precedence of its outermost operator)
    try:
        for token in tokens:
            if token in _PRECEDENCE:
                (b, pb), (a, pa) = stack.pop(), stack.pop()
                p = _PRECEDENCE[token]
                left = a if pa >= p else f"({a})"
                right = b if pb > p else f"({b})"
                stack.append((f"{left} {token} {right}", p))
            elif token in ("!", "neg"):
                a, pa = stack.pop()
                sign = "!" if token == "!" else "-"
                stack.append((sign + (a if pa >= 9 else f"({a})"), 8))
            elif token == "?:":
                (c, _), (a, _), (cond, _) = stack.pop(), stack.pop(), stack.pop()
                stack.append((f"({cond} ? {a} : {c})", 9))
            elif token.startswith("cast:"):
                a, pa = stack.pop()
                stack.append((f"({token[5:]}) {a}", 8))
            elif token.startswith("at:"):
                index, _ = stack.pop()
                stack.append((f"{token[3:]}[{index}]", 9))
            elif token.startswith("call:"):
                name, _, arity = token[5:].rpartition("/")
                n = int(arity)
                args = [t for t, _ in stack[len(stack) - n :]] if n else []
                del stack[len(stack) - n :]
                stack.append((f"{name}({', '.join(args)})", 9))
            else:
                stack.append((token, 9))
    except (IndexError, ValueError):
        return " ".join(tokens)
    return stack[0][0] if len(stack) == 1 else " ".join(tokens)
