"""A converter method's body read in order, as the converter runs it: each local's value as an
expression (parsing/expressions.py), an if/elif/else folded into `?:` where the branches assign
it, a list built by one `for v in SEQ: x.append(E)` loop as its comprehension; and, with the
condition each runs under, the GGUFWriter calls, the `self.hparams["KEY"] = ...` and the
`self.NAME = ...` / `+=` assignments. A value of another shape is UNREAD, a condition None."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from tree_sitter import Node

from apron.extractors.parsing.expressions import (
    HPARAMS,
    UNREAD,
    UnreadableExpression,
    python_expression,
)
from apron.extractors.parsing.python_ts import (
    code_of,
    node_text,
    string_value,
    unparenthesize,
    walk,
)

Expression = Any  # an expression of apron/expressions.py; () for no condition
SUPER_CALL = "super().set_gguf_parameters"
WRITER = "self.gguf_writer.add_"


def _chain(node: Node | None) -> str:
    return "".join(node_text(node).split()) if node is not None else ""


def _and(a: Expression | None, b: Expression | None) -> Expression | None:
    if a is None or b is None:
        return None
    if a == ():
        return b
    return ("&&", a, b) if b != () else a


@dataclass
class Write:
    call: Node
    condition: Expression | None  # () unconditional, None unread
    values: dict[str, Expression]  # the locals when it runs (UNREAD: not followed)


@dataclass
class Assignment:
    name: str  # a self.hparams key, or a self attribute
    op: str  # "=" or "+="
    condition: Expression | None
    value: Expression  # UNREAD when not read
    code: str


@dataclass
class BodyReading:
    writes: list[Write] = field(default_factory=list)
    hparams_sets: list[Assignment] = field(default_factory=list)
    attributes: list[Assignment] = field(default_factory=list)
    calls_super: bool = False
    calls_base: str = ""  # `Base.set_gguf_parameters(self)`: the base class called by name


class _Body:
    def __init__(self) -> None:
        self.values: dict[str, Expression] = {}
        self.out = BodyReading()

    def tokens(self, node: Node) -> Expression:
        """The expression; what the reader does not read is an "undef" node, so a branch that
        never uses it still reads."""
        try:
            return python_expression(node, self.values)
        except UnreadableExpression as err:
            return ("undef", str(err)[:60])

    def block(self, node: Node | None, condition: Expression | None) -> None:
        if node is None:
            return
        for statement in node.named_children if node.type == "block" else [node]:
            if statement.type == "comment":
                continue
            rest = self.statement(statement, condition)
            if rest is not False:  # a branch returned: the rest runs where it did not
                condition = _and(condition, rest) if rest is not None else None

    def statement(self, node: Node, condition: Expression | None) -> Expression | None | bool:
        """False, or (after a branch that returns) the condition the rest runs under."""
        kind = node.type
        if kind == "expression_statement":
            for expr in node.named_children:
                self.expression(expr, condition)
        elif kind == "if_statement":
            return self.if_statement(node, condition)
        elif kind == "for_statement":
            self.for_statement(node, condition)
        elif kind == "return_statement":
            return None
        elif kind in ("pass_statement", "comment", "assert_statement"):
            pass
        else:  # with, try, while, nested definitions: what they assign is unread
            self.unread_inside(node)
        return False

    def unread_inside(self, node: Node) -> None:
        for inner in walk(node):
            if inner.type in ("assignment", "augmented_assignment"):
                left = inner.child_by_field_name("left")
                if left is not None and left.type == "identifier":
                    self.values[node_text(left)] = UNREAD
                elif left is not None:
                    self.target(left, "=", None, UNREAD, inner)
            elif inner.type == "call" and _chain(inner.child_by_field_name("function")).startswith(
                WRITER
            ):
                self.out.writes.append(Write(inner, None, dict(self.values)))

    def walrus(self, node: Node) -> None:
        for inner in walk(node):
            if inner.type == "named_expression":
                name = node_text(inner.child_by_field_name("name"))
                self.values[name] = self.tokens(inner.child_by_field_name("value"))

    def expression(self, expr: Node, condition: Expression | None) -> None:
        self.walrus(expr)
        if expr.type in ("assignment", "augmented_assignment"):
            left, right = expr.child_by_field_name("left"), expr.child_by_field_name("right")
            if left is None or right is None:
                return
            op = (
                "="
                if expr.type == "assignment"
                else node_text(expr.child_by_field_name("operator"))
            )
            value = self.tokens(right)
            if left.type == "identifier" and node_text(left) != "hparams":
                name = node_text(left)
                if op != "=":
                    previous = self.values.get(name, UNREAD)
                    binary = {"+=": "+", "-=": "-", "*=": "*", "//=": "//"}.get(op)
                    readable = previous not in (UNREAD, ()) and value != () and binary
                    value = (binary, previous, value) if readable else UNREAD
                # a branch's own copy of the locals: if_statement folds the branches
                self.values[name] = value if condition is not None else UNREAD
            else:
                self.target(left, op, condition, value, expr)
        elif expr.type == "call":
            function = _chain(expr.child_by_field_name("function"))
            if function == SUPER_CALL:
                self.out.calls_super = True
            elif function.endswith(".set_gguf_parameters") and not function.startswith("self."):
                arguments = expr.child_by_field_name("arguments").named_children
                if arguments and node_text(arguments[0]) == "self":
                    self.out.calls_base = function.rpartition(".")[0]
            elif function.startswith(WRITER):
                self.out.writes.append(Write(expr, condition, dict(self.values)))
            elif function.endswith((".append", ".extend", ".insert", ".pop", ".update", ".clear")):
                owner = function.rpartition(".")[0]
                if owner in self.values:
                    self.values[owner] = UNREAD

    def target(
        self,
        left: Node,
        op: str,
        condition: Expression | None,
        value: Expression,
        node: Node,
    ) -> None:
        code = re.sub(r",(?=\S)", ", ", code_of(node))  # canonical: layout and quotes aside
        if left.type == "subscript" and _chain(left.child_by_field_name("value")) in HPARAMS:
            key = string_value(left.child_by_field_name("subscript"))
            if key is not None:
                self.out.hparams_sets.append(Assignment(key, op, condition, value, code))
        elif (
            left.type == "attribute"
            and _chain(left).startswith("self.")
            and _chain(left).count(".") == 1
        ):
            self.out.attributes.append(Assignment(_chain(left)[5:], op, condition, value, code))
        else:
            for name in (node_text(n) for n in walk(left) if n.type == "identifier"):
                if name in self.values:
                    self.values[name] = UNREAD

    def if_statement(self, node: Node, condition: Expression | None) -> Expression | None | bool:
        """Runs each branch on its own copy of the locals, then folds what they assign into
        `test ? then : else` expressions. Returns False, or when a branch returns, the condition
        under which the rest runs (None: unread)."""
        clauses: list[tuple[Node | None, Node | None]] = [
            (node.child_by_field_name("condition"), node.child_by_field_name("consequence"))
        ]
        for alternative in node.children_by_field_name("alternative"):
            if alternative.type == "elif_clause":
                test = alternative.child_by_field_name("condition")
                clauses.append((test, alternative.child_by_field_name("consequence")))
            else:
                clauses.append((None, alternative.child_by_field_name("body")))
        before = dict(self.values)
        tests: list[Expression | None] = []
        branches: list[dict[str, Expression]] = []
        earlier_false: Expression | None = ()
        returned = False
        for test, body in clauses:
            self.values = dict(before)
            if test is not None:
                self.walrus(test)  # `(x := ...)` in a test binds x whichever branch runs
                before.update({k: v for k, v in self.values.items() if k not in before})
                tested = self.tokens(test)
                here = _and(earlier_false, tested)
            else:
                here = earlier_false
            self.block(body, _and(condition, here))
            returned = returned or _returns(body)
            if test is not None:
                tests.append(tested)
                earlier_false = _and(earlier_false, ("not", tested) if tested is not None else None)
            branches.append(dict(self.values))
        if clauses[-1][0] is not None:  # no else: the locals as they were
            branches.append(dict(before))
        merged = dict(before)
        for name in {n for values in branches for n in values}:
            values = [b.get(name, before.get(name, UNREAD)) for b in branches]
            if name in before and all(_same(v, before[name]) for v in values):
                continue
            value = values[-1]
            for tested, branch in zip(reversed(tests), reversed(values[:-1]), strict=True):
                if tested is None or branch is UNREAD or value is UNREAD:
                    value = UNREAD
                    break
                value = ("?:", tested, branch, value)
            merged[name] = value
        self.values = merged
        if not returned:
            return False
        if len(clauses) == 1 and tests[0] is not None and _returns(clauses[0][1]):
            return ("not", tests[0])
        return None

    def for_statement(self, node: Node, condition: Expression | None) -> None:
        target = node.child_by_field_name("left")
        sequence = node.child_by_field_name("right")
        body = node.child_by_field_name("body")
        statements = (
            [s for s in body.named_children if s.type != "comment"] if body is not None else []
        )
        if (
            target is not None
            and target.type == "identifier"
            and len(statements) == 1
            and statements[0].type == "expression_statement"
        ):
            call = unparenthesize(statements[0].named_children[0])
            function = _chain(call.child_by_field_name("function")) if call.type == "call" else ""
            owner = function.removesuffix(".append")
            arguments = (
                call.child_by_field_name("arguments").named_children if call.type == "call" else []
            )
            if (
                function.endswith(".append")
                and _same(self.values.get(owner, UNREAD), ("list",))
                and len(arguments) == 1
            ):
                name = node_text(target)
                seq = self.tokens(sequence) if sequence is not None else None
                saved = self.values.get(name, UNREAD)
                self.values[name] = f"${name}"
                body_tokens = self.tokens(arguments[0])
                self.values[name] = saved
                self.values[owner] = (
                    ("map", f"${name}", seq, body_tokens)
                    if seq is not None and condition is not None
                    else UNREAD
                )
                return
        self.unread_inside(node)


def _same(a: Any, b: Any) -> bool:
    """The same value read (True == 1 in Python, not here: `x = True` is not `x = 1`)."""
    return repr(a) == repr(b)


def _returns(body: Node | None) -> bool:
    return body is not None and any(s.type == "return_statement" for s in body.named_children)


def read_body(method: Node | None) -> BodyReading:
    if method is None:
        return BodyReading()
    body = _Body()
    body.block(method.child_by_field_name("body"), ())
    return body.out
