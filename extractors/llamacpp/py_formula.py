"""The converter's Python arithmetic as data: an expression node of tree-sitter-python ->
reverse-Polish tokens of the language cpp_formula.py documents, which apron evaluates
(apron/llamacpp_formula.py), plus what Python adds:

- "hp:KEY" the HF config value `self.hparams["KEY"]` (absent: the converter stops);
  "hpget:KEY/N" `self.hparams.get("KEY"[, default])` (N arguments, the default on the stack);
  "find:K1|K2" `self.find_hparam([...])` (the first present; none: the converter stops),
  "findopt:K1|K2" with optional=True (None when none); "has:KEY" `"KEY" in self.hparams`
- "self:NAME" an attribute the converter class set (its __init__ assignments are read too;
  self.model_arch is the class's MODEL_ARCH member); "sym:NAME" `gguf.MODEL_ARCH.NAME`
- "str:TEXT" a string, "None", "True", "False", "//" floor division, "**" power, "or" / "and" Python's
  value-returning boolean operators, "in" membership in a tuple or list ("tuple/N" builds one)
- "map:$VAR/N": `[BODY for VAR in SEQ]`: SEQ is on the stack, the next N tokens are BODY
- "call:len/1", "call:int/1", "call:min/N", "call:max/N", "call:sum/1", "call:all/1",
  "call:any/1" (a generator expression reads as its list), "call:range/N"; "item" `x[i]`
- "undef:WHY": code this reader does not read, where py_body keeps going (a branch not taken
  never uses it; apron says unknown, naming it, where it is used)

A local read once (`d_conv = self.find_hparam([...], optional=True) or 4`) is replaced by its
tokens. A shape outside these raises UnreadableFormula naming the node type."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tree_sitter import Node

from apron.extractors.llamacpp.cpp_formula import UnreadableFormula
from apron.extractors.parsing.python_ts import code_of, node_text, string_value, unparenthesize

_BINARY = {
    "+": "+",
    "-": "-",
    "*": "*",
    "/": "/f",
    "//": "//",
    "%": "%",
    "**": "**",
}
_COMPARE = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "==", "!=": "!=", "in": "in"}
_CALLS = {"len", "int", "min", "max", "sum", "bool", "all", "any", "range"}
HPARAMS = ("self.hparams", "hparams")


def _chain(node: Node) -> str:
    return "".join(node_text(node).split())


def _keys(node: Node) -> list[str] | None:
    node = unparenthesize(node)
    if node.type not in ("list", "tuple"):
        return None
    keys = [string_value(c) for c in node.named_children]
    return keys if all(k is not None for k in keys) else None  # type: ignore[return-value]


def formula(
    node: Node, locals_: Mapping[str, Node] | None = None, depth: int = 0
) -> tuple[str, ...]:
    """The expression's tokens; `locals_` maps a local read once to its value's node."""
    bound = locals_ or {}
    if depth > 20:
        raise UnreadableFormula("locals nested too deep")
    node = unparenthesize(node)
    kind = node.type

    def inner(n: Node, extra: Mapping[str, Any] | None = None) -> tuple[str, ...]:
        return formula(n, {**bound, **(extra or {})}, depth + 1)

    if kind == "named_expression":  # (x := value): the value
        return inner(node.child_by_field_name("value"))
    if kind == "integer":
        return (str(int(node_text(node).replace("_", ""), 0)),)
    if kind in ("true", "false"):
        return ("True" if kind == "true" else "False",)
    if kind == "none":
        return ("None",)
    if kind in ("string", "concatenated_string"):  # "a" "b" is the one string "ab"
        text = string_value(node)
        if text is None:
            raise UnreadableFormula("an f-string")
        return (f"str:{text}",)
    if kind == "identifier":
        name = node_text(node)
        if name in bound:
            value = bound[name]
            if value is None:
                raise UnreadableFormula(
                    f"the local {name}, assigned in code this reader does not read"
                )
            if isinstance(value, tuple):
                return value  # a local already read as tokens (py_body), a comprehension's variable
            return inner(value)
        raise UnreadableFormula(f"the local {name}")
    if kind == "attribute":
        chain = _chain(node)
        if chain.startswith("self.") and chain.count(".") == 1:
            return (f"self:{chain[5:]}",)
        if chain.startswith("gguf.MODEL_ARCH.") and chain.count(".") == 2:
            return (f"sym:{chain.rsplit('.', 1)[1]}",)
        raise UnreadableFormula(f"the attribute {code_of(node)}")
    if kind == "subscript":
        value = node.child_by_field_name("value")
        key = node.child_by_field_name("subscript")
        if value is not None and _chain(value) in HPARAMS and key is not None:
            text = string_value(key)
            if text is not None:
                return (f"hp:{text}",)
        if value is not None and key is not None and key.type != "slice":
            return (*inner(value), *inner(key), "item")
        raise UnreadableFormula("a subscript")
    if kind == "binary_operator":
        op = node_text(node.child_by_field_name("operator"))
        if op not in _BINARY:
            raise UnreadableFormula(f"the operator {op}")
        return (
            *inner(node.child_by_field_name("left")),
            *inner(node.child_by_field_name("right")),
            _BINARY[op],
        )
    if kind == "unary_operator":
        op = node_text(node.child_by_field_name("operator"))
        argument = inner(node.child_by_field_name("argument"))
        if op == "-":
            return (*argument, "neg")
        if op == "+":
            return argument
        raise UnreadableFormula(f"the unary {op}")
    if kind == "not_operator":
        return (*inner(node.child_by_field_name("argument")), "!")
    if kind == "boolean_operator":
        op = node_text(node.child_by_field_name("operator"))
        return (
            *inner(node.child_by_field_name("left")),
            *inner(node.child_by_field_name("right")),
            op,
        )
    if kind == "comparison_operator":
        parts = node.named_children
        operators = [node_text(c) for c in node.children if not c.is_named]
        if len(parts) != 2 or len(operators) != 1:
            raise UnreadableFormula("a chained comparison")
        op = operators[0]
        left, right = parts
        if op == "in" and _chain(right) in HPARAMS:
            text = string_value(unparenthesize(left))
            if text is not None:
                return (f"has:{text}",)
        if op == "not in" and _chain(right) in HPARAMS:
            text = string_value(unparenthesize(left))
            if text is not None:
                return (f"has:{text}", "!")
        if op in ("is", "is not") and unparenthesize(right).type == "none":
            return (*inner(left), "None", "==" if op == "is" else "!=")
        if op not in _COMPARE:
            raise UnreadableFormula(f"the comparison {op}")
        return (*inner(left), *inner(right), _COMPARE[op])
    if kind == "conditional_expression":
        body, test, other = node.named_children
        return (*inner(test), *inner(body), *inner(other), "?:")
    if kind in ("tuple", "list"):
        items = [t for c in node.named_children for t in inner(c)]
        return (*items, f"tuple/{len(node.named_children)}")
    if kind in ("list_comprehension", "generator_expression"):
        body = node.child_by_field_name("body")
        clauses = [c for c in node.named_children if c != body]
        if len(clauses) != 1 or clauses[0].type != "for_in_clause":
            raise UnreadableFormula("a comprehension with more than one for, or an if")
        variable = clauses[0].child_by_field_name("left")
        sequence = clauses[0].child_by_field_name("right")
        if variable is None or variable.type != "identifier" or sequence is None:
            raise UnreadableFormula("a comprehension over a pattern")
        name = node_text(variable)
        tokens = inner(body, {name: (f"${name}",)})
        return (*inner(sequence), f"map:${name}/{len(tokens)}", *tokens)
    if kind == "call":
        function = node.child_by_field_name("function")
        argument_node = node.child_by_field_name("arguments")
        arguments = (
            [argument_node]  # f(x for x in xs): the generator is the one argument
            if argument_node.type == "generator_expression"
            else list(argument_node.named_children)
        )
        chain = _chain(function) if function is not None else ""
        if chain == "self.find_hparam" and arguments:
            keys = _keys(arguments[0])
            optional = any(
                a.type == "keyword_argument"
                and node_text(a.child_by_field_name("name")) == "optional"
                and node_text(a.child_by_field_name("value")) == "True"
                for a in arguments[1:]
            )
            if keys is not None:
                return (f"{'findopt' if optional else 'find'}:{'|'.join(keys)}",)
        if chain in (f"{h}.get" for h in HPARAMS) and arguments:
            key = string_value(arguments[0])
            if key is not None and len(arguments) <= 2:
                default = inner(arguments[1]) if len(arguments) == 2 else ()
                return (*default, f"hpget:{key}/{len(arguments)}")
        if chain in _CALLS and all(a.type != "keyword_argument" for a in arguments):
            return (*(t for a in arguments for t in inner(a)), f"call:{chain}/{len(arguments)}")
        raise UnreadableFormula(f"a call of {code_of(function) if function is not None else '?'}")
    raise UnreadableFormula(kind)
