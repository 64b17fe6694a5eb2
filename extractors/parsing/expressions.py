"""The one builder of rule expressions (the language apron/expressions.py defines, evaluates and
renders as infix words for people, never read back): a tree-sitter expression node of C++ or
Python -> a nested-tuple expression, never source text; and the constructors of a serving
engine's conditions on its config (config_has, config_flag, equals, one_of, ...).

C++ (`cpp_expression`): integers, `true`/`false` (1/0), names (`this->`, `hparams.` and
`model.hparams.` dropped: they all name llama_hparams members), binary and unary operators,
`?:`, calls, casts and `a[i]` (an "at" of a per-layer array). Python (`python_expression`,
as llama.cpp's converter writes it, and as a configuration class does: PythonReads says which
names are the config dict and what else the code may read): literals, `self.hparams[...]`,
`.get`, `find_hparam`, `in self.hparams`, `self.NAME`, `gguf.MODEL_ARCH.NAME`, operators,
`x if c else y`, tuples and lists, one-`for` comprehensions and the calls of PY_CALLS. A reader
whose names mean something else (vLLM's paths from `vllm_config`, its calls, its inlined
helpers) passes `resolve`: asked first at every node, it reads the nodes it knows and leaves the
rest (NOT_RESOLVED) to this builder. A shape outside these raises UnreadableExpression naming
the node type: the caller turns it into an explicit unknown (with PythonReads.partial, the
builder puts ("undef", code) in its place)."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from pydantic_core import core_schema
from tree_sitter import Node

from apron.expressions import (  # infix and names_in: the language's own, re-exported here
    CPP_BINARY,
    PY_CALLS,
    expression_problem,
    infix,
    names_in,  # noqa: F401 - the language's own name walker, re-exported for the readers
)
from apron.extractors.parsing import cpp_ts, python_ts

TRUE = 1  # a C++ condition that always holds


class Expression:
    """A record field holding an expression of apron/expressions.py (() is none): validated by
    expression_problem, rendered as `Expression` in generated/schema.py."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        return core_schema.no_info_plain_validator_function(checked)


class UnreadableExpression(ValueError):
    """An expression of a shape this reader does not turn into an expression."""


# ---------------------------------------------------------------- composing


def conjunction(conditions: Iterable[Any]) -> Any:
    """`a && b && ...` of the non-empty conditions, left to right; () when there are none."""
    out: Any = ()
    for condition in conditions:
        if condition == ():
            continue
        out = condition if out == () else ("&&", out, condition)
    return out


def negation(expression: Any) -> Any:
    """C++'s `!e`."""
    return ("!", expression)


def checked(expression: Any) -> Any:
    """The expression (lists read back from JSON as tuples), or ValueError naming why it is not
    one (a record's field validator)."""
    expression = _tupled(expression)
    problem = expression_problem(expression)
    if problem:
        raise ValueError(problem)
    return expression


def _tupled(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return tuple(_tupled(v) for v in value)
    return value


# ---------------------------------------------------------------- conditions on a config
# A serving engine's tests of its config (vLLM's `hasattr(cfg, "k")`, `getattr(cfg, "k", False)`,
# `cfg.model_type == "x"`, `... in (...)`) as expressions: the config is read through the
# environment's Converter, as llama.cpp's converter reads its hparams ("has", "hpget").


def config_has(key: str) -> Any:
    """`hasattr(config, key)`: the key is in the config."""
    return ("has", key)


def config_flag(key: str) -> Any:
    """`getattr(config, key, False)`: the value, false when the config lacks the key."""
    return ("hpget", key, False)


def config_value(key: str) -> Any:
    """`getattr(config, key, None)`: the value, None when the config lacks the key."""
    return ("hpget", key)


def config_condition(node: Node, readers: tuple[str, ...] = ("getattr",)) -> Any:
    """A condition on named config objects (SGLang's `getattr(self.hf_text_config, "f", D) is
    not None`, `not (hasattr(self.hf_config, "a") and hasattr(self.hf_config, "b"))`) built by
    the one builder: a read of one field of a config root (parsing.config_reads: `getattr`, the
    `readers`, `.f`) is ("hpget", "<config>.<field>"[, D]), or ("hp", ...) when the read has no
    default (it raises); `hasattr(root, "f")` is ("has", "<config>.<field>"); keyed so
    hf_config and hf_text_config stay apart (apron/conditions.py's config objects read each).
    The rest (not, and, or, is None, comparisons, literals) is the builder's; a shape it does
    not read is ("undef", code)."""
    try:
        return python_expression(
            node,
            reads=PythonReads(config=()),
            resolve=lambda n, read: _config_read(n, read, readers),
        )
    except UnreadableExpression:
        return ("undef", python_ts.code_of(node))


def _config_read(node: Node, read: Callable[[Node], Any], readers: tuple[str, ...]) -> Any:
    from apron.extractors.parsing.config_reads import config_read, config_root

    if node.type in ("integer", "float"):
        return _number(node)
    parts = python_ts.call_parts(node)
    if parts is not None and python_ts.code_of(parts[0]) == "hasattr" and len(parts[1]) == 2:
        root, key = config_root(parts[1][0]), python_ts.string_value(parts[1][1])
        if root is None or key is None:
            raise UnreadableExpression(f"hasattr of {python_ts.code_of(parts[1][0])}")
        return ("has", f"{root}.{key}")
    if node.type not in ("attribute", "call", "subscript"):
        return NOT_RESOLVED
    found = config_read(node, readers=readers)
    if found is None or not found.field or "." in found.field:
        return NOT_RESOLVED
    key = f"{found.config}.{found.field}"
    if found.default is None:
        return ("hp", key)
    default = read(found.default_node) if found.default_node is not None else None
    return ("hpget", key) if default is None else ("hpget", key, default)


def equals(value: Any, text: str, equal: bool = True) -> Any:
    """`value == "text"` (`!=` when not `equal`)."""
    return ("==" if equal else "!=", value, ("str", text))


def one_of(value: Any, texts: Sequence[str], inside: bool = True) -> Any:
    """`value in ("a", "b", ...)` (`not in` when not `inside`)."""
    found = ("in", value, ("list", *(("str", t) for t in texts)))
    return found if inside else ("not", found)


def python_not(expression: Any) -> Any:
    """Python's `not e`, in the form a reader writes it: `not not e` is `e`, `not a == b` is
    `a != b` (and the reverse)."""
    if isinstance(expression, tuple) and expression:
        if expression[0] == "not":
            return expression[1]
        if expression[0] in ("==", "!="):
            return ("!=" if expression[0] == "==" else "==", *expression[1:])
    return ("not", expression)


def python_all(conditions: Iterable[Any]) -> Any:
    """Python's `a and b and ...` of the non-empty conditions, left to right; () when none."""
    out: Any = ()
    for condition in conditions:
        if condition == ():
            continue
        out = condition if out == () else ("and", out, condition)
    return out


def has_unread(expression: Any) -> bool:
    """Whether an expression holds code the reader did not read (an "undef" node at any
    depth; a string's text is not looked into)."""
    if isinstance(expression, tuple) and expression:
        if expression[0] == "undef":
            return True
        if expression[0] == "str":
            return False
        return any(has_unread(part) for part in expression[1:])
    return False


def python_conjuncts(expression: Any) -> list[Any]:
    """The parts of `a and b and ...` (python_all's inverse); [] for ()."""
    if expression == ():
        return []
    if isinstance(expression, tuple) and expression and expression[0] == "and":
        return [*python_conjuncts(expression[1]), *python_conjuncts(expression[2])]
    return [expression]


# ---------------------------------------------------------------- C++

_HPARAMS_PREFIX = re.compile(r"^(?:this->|model\.hparams\.|hparams\.)")


def cpp_name(text: str) -> str:
    """A member or variable as the expression names it (`this->n_embd` -> "n_embd")."""
    return _HPARAMS_PREFIX.sub("", re.sub(r"\s+", "", text))


def cpp_expression(node: Node, locals_: Mapping[str, Any] | None = None) -> Any:
    """The expression of a tree-sitter-cpp node; a name bound in `locals_` is replaced by its
    own expression (a `const uint32_t d_inner = ...;` read earlier in the same body)."""
    bound = locals_ or {}
    kind = node.type
    if kind == "parenthesized_expression":
        inner = cpp_ts.code_children(node)
        if len(inner) != 1:
            raise UnreadableExpression(kind)
        return cpp_expression(inner[0], bound)
    if kind == "number_literal":
        value = cpp_ts.int_value(node)
        if value is None:
            raise UnreadableExpression(f"number {cpp_ts.node_text(node)}")
        return value
    if kind in ("true", "false"):
        return 1 if kind == "true" else 0
    if kind in ("identifier", "field_expression", "qualified_identifier"):
        name = cpp_name(cpp_ts.node_text(node))
        return bound.get(name, name)
    if kind == "binary_expression":
        op = node.child_by_field_name("operator")
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        symbol = cpp_ts.node_text(op) if op is not None else ""
        if symbol not in CPP_BINARY or left is None or right is None:
            raise UnreadableExpression(f"binary {symbol}")
        return (symbol, cpp_expression(left, bound), cpp_expression(right, bound))
    if kind == "unary_expression":
        op = node.child_by_field_name("operator")
        arg = node.child_by_field_name("argument")
        symbol = cpp_ts.node_text(op) if op is not None else ""
        if arg is None or symbol not in ("!", "-"):
            raise UnreadableExpression(f"unary {symbol}")
        return ("!" if symbol == "!" else "neg", cpp_expression(arg, bound))
    if kind == "conditional_expression":
        parts = [node.child_by_field_name(f) for f in ("condition", "consequence", "alternative")]
        if any(p is None for p in parts):
            raise UnreadableExpression(kind)
        return ("?:", *(cpp_expression(p, bound) for p in parts))  # type: ignore[arg-type]
    if kind == "call_expression":
        args = cpp_ts.call_arguments(node)
        name = cpp_name(cpp_ts.call_name(node))
        return ("call", name, *(cpp_expression(a, bound) for a in args))
    if kind == "cast_expression":
        type_node = node.child_by_field_name("type")
        value = node.child_by_field_name("value")
        if type_node is None or value is None:
            raise UnreadableExpression(kind)
        cast = re.sub(r"\s+", " ", cpp_ts.node_text(type_node))
        return ("cast", cast, cpp_expression(value, bound))
    if kind == "subscript_expression":
        array = node.child_by_field_name("argument")
        index = node.child_by_field_name("indices") or node.child_by_field_name("index")
        inner = (
            cpp_ts.code_children(index) if index is not None and index.type != "identifier" else []
        )
        target = inner[0] if inner else index
        if array is None or target is None:
            raise UnreadableExpression(kind)
        return ("at", cpp_name(cpp_ts.node_text(array)), cpp_expression(target, bound))
    raise UnreadableExpression(kind)


# ---------------------------------------------------------------- Python

_PY_BINARY = {"+": "+", "-": "-", "*": "*", "/": "/f", "//": "//", "%": "%", "**": "**"}
_PY_COMPARE = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "==", "!=": "!=", "in": "in"}
HPARAMS = ("self.hparams", "hparams")
NOT_RESOLVED = object()  # a resolver's answer for a node it leaves to the builder
# resolve(node, read) -> the node's expression, or NOT_RESOLVED; read(child) builds a child
Resolver = Callable[[Node, Callable[[Node], Any]], Any]


class _Unread:
    """A value assigned where the reader cannot follow (None is the expression `None`)."""

    def __repr__(self) -> str:
        return "UNREAD"


UNREAD = _Unread()


class PythonReads(NamedTuple):
    """What a Python body reads besides its locals: the names of the config dict (`X[k]`,
    `X.get(k[, d])`, `k in X`) and the methods that read it like `.get`; with `partial`, a
    sub-expression not read is ("undef", its code) in place rather than the whole expression
    unreadable, and a literal display (numbers, strings, lists, tuples, dicts of them) is read
    as its value; `call` reads a call the builder does not know (a class's own method, read
    inline) or returns None."""

    config: tuple[str, ...] = ("self.hparams", "hparams")
    config_reads: tuple[str, ...] = ("get",)
    partial: bool = False
    call: Callable[[str, list[Node], Mapping[str, Any]], Any] | None = None


CONVERTER = PythonReads(config=HPARAMS)  # llama.cpp's converter: self.hparams is the HF config


def _chain(node: Node) -> str:
    return "".join(python_ts.node_text(node).split())


def _keys(node: Node) -> list[str] | None:
    node = python_ts.unparenthesize(node)
    if node.type not in ("list", "tuple"):
        return None
    keys = [python_ts.string_value(c) for c in node.named_children]
    return keys if all(k is not None for k in keys) else None  # type: ignore[return-value]


def python_expression(
    node: Node,
    locals_: Mapping[str, Any] | None = None,
    depth: int = 0,
    reads: PythonReads = CONVERTER,
    resolve: Resolver | None = None,
) -> Any:
    """The expression of a tree-sitter-python node; `locals_` maps a local to its value: an
    expression already read, a node to read, or UNREAD (assigned where this reader cannot see);
    `resolve` reads the nodes whose names mean something to its reader."""
    if not reads.partial:
        return _python_expression(node, locals_ or {}, depth, reads, resolve)
    node = python_ts.unparenthesize(node)
    literal = _literal(node)
    if literal is not _NOT_LITERAL:
        return literal
    try:
        return _python_expression(node, locals_ or {}, depth, reads, resolve)
    except UnreadableExpression:
        return ("undef", python_ts.code_of(node))


_NOT_LITERAL = object()
_LITERAL_NODES = ("integer", "float", "string", "concatenated_string", "true", "false", "none")
_DISPLAYS = ("list", "tuple", "dictionary", "unary_operator")


def _literal(node: Node) -> Any:
    """A literal display (numbers, strings, None, True/False, lists, tuples, dicts of literals)
    as its expression, read with ast.literal_eval (never evaluating code); _NOT_LITERAL else."""
    if node.type not in _LITERAL_NODES and node.type not in _DISPLAYS:
        return _NOT_LITERAL
    try:
        value = ast.literal_eval(python_ts.code_of(node))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _NOT_LITERAL
    return constant(value)


def constant(value: Any) -> Any:
    """A literal value as an expression: a number, bool or None is itself, a string ("str", s),
    a list or tuple ("list", ...), a dict ("dict", k, v, ...) with its keys in a stable order."""
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, list | tuple):
        return ("list", *(constant(v) for v in value))
    if isinstance(value, dict):
        pairs = sorted(value.items(), key=lambda kv: str(kv[0]))
        return ("dict", *(constant(x) for pair in pairs for x in pair))
    if value is None or isinstance(value, bool | int | float):
        return value
    return ("undef", repr(value))


def _python_expression(
    node: Node,
    bound: Mapping[str, Any],
    depth: int,
    reads: PythonReads,
    resolve: Resolver | None = None,
) -> Any:
    if depth > 20:
        raise UnreadableExpression("locals nested too deep")
    node = python_ts.unparenthesize(node)
    kind = node.type
    text = python_ts.node_text

    def inner(n: Node, extra: Mapping[str, Any] | None = None) -> Any:
        return python_expression(n, {**bound, **(extra or {})}, depth + 1, reads, resolve)

    if resolve is not None:
        resolved = resolve(node, inner)
        if resolved is not NOT_RESOLVED:
            return resolved

    if kind == "named_expression":  # (x := value): the value
        return inner(node.child_by_field_name("value"))
    if kind == "integer":
        digits = text(node).replace("_", "")
        if digits.endswith(("j", "J")):
            raise UnreadableExpression("an imaginary number")
        return int(digits, 0)
    if kind in ("true", "false"):
        return kind == "true"
    if kind == "none":
        return None
    if kind in ("string", "concatenated_string"):  # "a" "b" is the one string "ab"
        value = python_ts.string_value(node)
        if value is None:
            raise UnreadableExpression("an f-string")
        return ("str", value)
    if kind == "identifier":
        name = text(node)
        if name in bound:
            value = bound[name]
            if value is UNREAD:
                raise UnreadableExpression(
                    f"the local {name}, assigned in code this reader does not read"
                )
            return inner(value) if isinstance(value, Node) else value
        raise UnreadableExpression(f"the local {name}")
    if kind == "attribute":
        chain = _chain(node)
        if chain.startswith("self.") and chain.count(".") == 1:
            return ("self", chain[5:])
        if chain.startswith("gguf.MODEL_ARCH.") and chain.count(".") == 2:
            return ("sym", chain.rsplit(".", 1)[1])
        raise UnreadableExpression(f"the attribute {python_ts.code_of(node)}")
    if kind == "subscript":
        value = node.child_by_field_name("value")
        key = node.child_by_field_name("subscript")
        if value is not None and _chain(value) in reads.config and key is not None:
            name = python_ts.string_value(key)
            if name is not None:
                return ("hp", name)
        if value is not None and key is not None and key.type != "slice":
            return ("item", inner(value), inner(key))
        raise UnreadableExpression("a subscript")
    if kind == "binary_operator":
        op = text(node.child_by_field_name("operator"))
        if op not in _PY_BINARY:
            raise UnreadableExpression(f"the operator {op}")
        left = inner(node.child_by_field_name("left"))
        return (_PY_BINARY[op], left, inner(node.child_by_field_name("right")))
    if kind == "unary_operator":
        op = text(node.child_by_field_name("operator"))
        argument = inner(node.child_by_field_name("argument"))
        if op == "-":
            return ("neg", argument)
        if op == "+":
            return argument
        raise UnreadableExpression(f"the unary {op}")
    if kind == "not_operator":
        return ("not", inner(node.child_by_field_name("argument")))
    if kind == "boolean_operator":
        op = text(node.child_by_field_name("operator"))
        left = inner(node.child_by_field_name("left"))
        return (op, left, inner(node.child_by_field_name("right")))
    if kind == "comparison_operator":
        return _comparison(node, inner, reads)
    if kind == "conditional_expression":
        body, test, other = node.named_children
        condition = inner(test)
        then = inner(body)
        return ("?:", condition, then, inner(other))
    if kind in ("tuple", "list"):
        return ("list", *(inner(c) for c in node.named_children))
    if kind in ("list_comprehension", "generator_expression"):
        body = node.child_by_field_name("body")
        clauses = [c for c in node.named_children if c != body]
        if len(clauses) != 1 or clauses[0].type != "for_in_clause":
            raise UnreadableExpression("a comprehension with more than one for, or an if")
        variable = clauses[0].child_by_field_name("left")
        sequence = clauses[0].child_by_field_name("right")
        if variable is None or variable.type != "identifier" or sequence is None:
            raise UnreadableExpression("a comprehension over a pattern")
        name = text(variable)
        over = inner(sequence)
        return ("map", f"${name}", over, inner(body, {name: f"${name}"}))
    if kind == "call":
        return _call(node, inner, reads, bound)
    raise UnreadableExpression(kind)


PROGRAM = PythonReads(config=())  # a program's quantities: no HF config dict is read


def quantity_expression(node: Node) -> Any:
    """The expression of a tree-sitter-python node whose operands are program quantities (SGLang's
    ServerArgs code), built by the one builder with `_program_quantity` as its resolver: an
    attribute chain, a method's result or a name is a *name* spelled as its canonical code
    (`self.tp_size`, `self.use_mla_backend()`, `gpu_mem`), which the caller's environment gives;
    a plain function's call (`max`, `len`, `round`, `is_hip`) is ("call", name, *args), which
    the caller's call table says; `not e` is written as a reader would (python_not). Any shape
    the builder does not read raises UnreadableExpression."""
    return python_expression(node, reads=PROGRAM, resolve=_program_quantity)


def quantity_condition(node: Node) -> Any:
    """quantity_expression of a condition, with ("undef", its code) in place of a shape the
    builder does not read: the evaluator says it is unknown where it is used."""
    try:
        return quantity_expression(node)
    except UnreadableExpression:
        return ("undef", python_ts.code_of(node))


def _number(node: Node) -> Any:
    """A float literal's value (these readers read floats; an imaginary literal is unread);
    NOT_RESOLVED for any other node."""
    text = python_ts.node_text(node).replace("_", "")
    if node.type not in ("integer", "float"):
        return NOT_RESOLVED
    if text.endswith(("j", "J")):
        raise UnreadableExpression("an imaginary number")
    return float(text) if node.type == "float" else NOT_RESOLVED


def _program_quantity(node: Node, read: Callable[[Node], Any]) -> Any:
    """The nodes whose meaning differs for program quantities (quantity_expression)."""
    kind = node.type
    if kind in ("integer", "float"):
        return _number(node)
    if kind in ("identifier", "attribute"):
        return python_ts.code_of(node)
    if kind == "not_operator":
        return python_not(read(node.child_by_field_name("argument")))
    if kind != "call":
        return NOT_RESOLVED
    function = node.child_by_field_name("function")
    arguments = node.child_by_field_name("arguments")
    if function is None or arguments is None or arguments.type != "argument_list":
        raise UnreadableExpression("a call")
    if function.type != "identifier":
        return python_ts.code_of(node)  # a method's result: a quantity of the program
    if any(
        a.type in ("keyword_argument", "list_splat", "dictionary_splat")
        for a in arguments.named_children
    ):
        raise UnreadableExpression(f"a call of {python_ts.node_text(function)} with keywords")
    return ("call", python_ts.node_text(function), *(read(a) for a in arguments.named_children))


def _comparison(node: Node, inner, reads: PythonReads) -> Any:
    text = python_ts.node_text
    parts = node.named_children
    operators = [text(c) for c in node.children if not c.is_named]
    if len(parts) != len(operators) + 1 or not operators:
        raise UnreadableExpression("a comparison of this shape")
    if len(operators) > 1:  # a < b < c: a < b and b < c (b read once in Python, twice here)
        pairs = [
            _compare(operators[i], parts[i], parts[i + 1], inner, reads)
            for i in range(len(operators))
        ]
        chained = pairs[0]
        for pair in pairs[1:]:
            chained = ("and", chained, pair)
        return chained
    return _compare(operators[0], parts[0], parts[1], inner, reads)


def _compare(op: str, left: Node, right: Node, inner, reads: PythonReads) -> Any:
    """One comparison `left op right`."""
    if op in ("in", "not in") and _chain(right) in reads.config:
        key = python_ts.string_value(python_ts.unparenthesize(left))
        if key is not None:
            return ("has", key) if op == "in" else ("not", ("has", key))
    if op in ("is", "is not") and python_ts.unparenthesize(right).type == "none":
        return ("==" if op == "is" else "!=", inner(left), None)
    if op == "not in":
        first = inner(left)
        return ("not", ("in", first, inner(right)))
    if op not in _PY_COMPARE:
        raise UnreadableExpression(f"the comparison {op}")
    first = inner(left)
    return (_PY_COMPARE[op], first, inner(right))


def _call(node: Node, inner, reads: PythonReads, bound: Mapping[str, Any]) -> Any:
    text = python_ts.node_text
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
            and text(a.child_by_field_name("name")) == "optional"
            and text(a.child_by_field_name("value")) == "True"
            for a in arguments[1:]
        )
        if keys is not None:
            return ("findopt" if optional else "find", *keys)
    owner, _, method = chain.rpartition(".")
    if owner in reads.config and method in reads.config_reads and arguments:
        key = python_ts.string_value(arguments[0])
        if key is not None and len(arguments) <= 2:
            default = inner(arguments[1]) if len(arguments) == 2 else None
            return ("hpget", key) if default is None else ("hpget", key, default)  # .get(k, None)
    if chain in PY_CALLS and all(a.type != "keyword_argument" for a in arguments):
        return ("call", chain, *(inner(a) for a in arguments))
    found = reads.call(chain, arguments, bound) if reads.call is not None else None
    if found is not None:
        return found
    where = python_ts.code_of(function) if function is not None else "?"
    raise UnreadableExpression(f"a call of {where}")


def sorted_expressions(expressions: Sequence[Any]) -> list[Any]:
    """Expressions in a stable order (by their words): the order of `case` labels means
    nothing, and ints and names do not compare with each other."""
    return sorted(expressions, key=lambda e: (infix(e), repr(e)))
