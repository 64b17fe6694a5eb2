"""SGLang's static memory-fraction heuristic as data: the steps of
`ServerArgs._handle_gpu_memory_settings` that choose the chunked prefill size and the decode
cuda-graph max_bs per GPU-memory band and tp, the prefill cuda-graph sizes, the reserved-memory
terms (with the methods they call inlined: `reserve_for_graph_mb`, `reserve_for_deepep_a2a_mb`)
with their conditions, the floor, the fraction, and the VLM adjustment's constants.

Each assignment becomes one step (`SglangMemoryStep`) with the condition of the branches it
sits in and its value, both expressions of apron/expressions.py over the program's quantities
(names spelled as their code); an `if` whose body assigns what its test reads before running
more of the body is a "test" step, taken once where the `if` is reached, as Python does. A shape
not read is an `unread` step with its code and a warning, never a default. Pure: file text in,
records out."""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from tree_sitter import Node

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.expressions import (
    UnreadableExpression,
    names_in,
    python_all,
    python_not,
    quantity_condition,
    quantity_expression,
)
from apron.extractors.parsing.python_skeleton import method_skeleton, quotes_only_in_docstring
from apron.extractors.parsing.python_ts import (
    call_name,
    class_methods,
    code_of,
    if_clauses,
    node_text,
    parse_python,
    unparenthesize,
)
from apron.extractors.parsing.python_ts import (
    walk as walk_tree,  # `walk` names the step builder here
)
from apron.extractors.records import ExtractionWarning, warning
from apron.extractors.sglang.records import SglangMemoryStep

FACT = "memory_fraction_steps"
SERVER_ARGS = "ServerArgs"
HANDLER = "_handle_gpu_memory_settings"
PREFILL_SIZES = "_generate_prefill_cuda_graph_batch_sizes"
VLM = "adjust_mem_fraction_for_vlm"
# The blocks of the handler read, by the setting their `if ... is None` (or `is not None`) tests.
BLOCKS = (
    ("gpu_mem is not None", "band"),
    ("prefill_cuda_graph_config.max_bs is None", "prefill_max_bs"),
    ("prefill_cuda_graph_config.bs is None", "prefill_max_bs"),
    ("self.mem_fraction_static is None", "reserve"),
)
FLIPPED = {"<": ">=", ">=": "<", ">": "<=", "<=": ">", "==": "!=", "!=": "=="}  # negated
READ_METHODS = (HANDLER, PREFILL_SIZES, VLM, "reserve_for_graph_mb", "reserve_for_deepep_a2a_mb")


def number(node: Node | None) -> Fraction | None:
    """The exact value of a numeric literal or of arithmetic over literals, else None (which
    shapes are read as numbers: a capture range's bounds, a clamp's, a floor's)."""
    if node is None:
        return None
    node = unparenthesize(node)
    if node.type == "integer":
        return Fraction(int(node_text(node).replace("_", ""), 0))
    if node.type == "float":
        return Fraction(node_text(node).replace("_", ""))
    if node.type == "unary_operator" and node_text(node.child_by_field_name("operator")) == "-":
        inner = number(node.child_by_field_name("argument"))
        return -inner if inner is not None else None
    if node.type == "binary_operator":
        left = number(node.child_by_field_name("left"))
        right = number(node.child_by_field_name("right"))
        op = node_text(node.child_by_field_name("operator"))
        if left is None or right is None:
            return None
        if op == "*":
            return left * right
        if op == "/" and right:
            return left / right
        if op == "+":
            return left + right
        if op == "-":
            return left - right
    return None


def expression(node: Node) -> Any:
    """The expression of `node`, or None when the reader does not read its shape."""
    try:
        return quantity_expression(node)
    except UnreadableExpression:
        return None


def _operands(node: Node) -> tuple[Node, str, Node] | None:
    node = unparenthesize(node)
    if node.type != "comparison_operator" or node.named_child_count != 2:
        return None
    left, right = node.named_children
    between = (node.text or b"")[
        left.end_byte - node.start_byte : right.start_byte - node.start_byte
    ]
    return left, " ".join(between.decode().split()), right


def negated(test: Any) -> Any:
    """The condition that holds when `test` does not, in the form Python would write it."""
    if isinstance(test, tuple) and test and test[0] in FLIPPED:
        return (FLIPPED[test[0]], *test[1:])
    return python_not(test)


def _conjunct_nodes(node: Node) -> list[Node]:
    node = unparenthesize(node)
    if node.type == "boolean_operator" and node_text(node.child_by_field_name("operator")) == "and":
        return [
            *_conjunct_nodes(node.child_by_field_name("left")),
            *_conjunct_nodes(node.child_by_field_name("right")),
        ]
    return [node]


def conjuncts(node: Node) -> list[Any]:
    return [quantity_condition(n) for n in _conjunct_nodes(node)]


def _assigned(node: Node) -> set[str]:
    """The code of everything assigned anywhere in `node`."""
    return {
        code_of(n.child_by_field_name("left"))
        for n in walk_tree(node)
        if n.type in ("assignment", "augmented_assignment")
        and n.child_by_field_name("left") is not None
    }


def _retested(test: Node, body: Node | None) -> bool:
    """Whether the body assigns a name the test reads and then runs more of itself: the test is
    then taken once, where the `if` is reached, not again under each later step."""
    statements = body.named_children if body is not None else []
    read = set(names_in(quantity_condition(test)))
    return any(read & _assigned(s) for s in statements[:-1])


def _ends_in_return(block: Node | None) -> bool:
    body = block.named_children if block is not None else []
    return bool(body) and body[-1].type == "return_statement"


class _Walk:
    """Turns the statements of the blocks read into steps, in program order."""

    def __init__(self, methods: dict[str, Node], path: str) -> None:
        self.methods = methods
        self.path = path
        self.steps: list[SglangMemoryStep] = []
        self.warnings: list[ExtractionWarning] = []

    def step(self, part, symbol, target, op, value, when, node):
        self.steps.append(
            SglangMemoryStep(
                part=part,
                order=len(self.steps) + 1,
                target=target,
                op=op,
                value=value if op != "unread" and value is not None else (),
                when=python_all(when),
                code=code_of(node),
                path=self.path,
                symbol=symbol,
            )
        )
        if op == "unread":
            self.warnings.append(
                warning(
                    "unread-memory-step",
                    f"{symbol}: {target}",
                    f"{node.type} `{code_of(node)[:100]}` is not a shape the memory-fraction "
                    "reader knows; apron reports a figure that needs it as unknown",
                    self.path,
                    symbol,
                )
            )

    def absent(self, part: str, symbol: str, condition: str) -> None:
        """An `if <condition>:` block the reader reads is not in this version of the handler (an
        older or newer layout): an unread step, so a figure that needs it is unknown, and a
        warning naming it; never a default, never a failed extraction."""
        self.steps.append(
            SglangMemoryStep(
                part=part,
                order=len(self.steps) + 1,
                target=f"if {condition}",
                op="unread",
                value=(),
                when=(),
                code="",
                path=self.path,
                symbol=symbol,
            )
        )
        self.warnings.append(
            warning(
                "absent-memory-block",
                f"{symbol}: if {condition}",
                f"no `if {condition}:` block in {symbol}; apron reports a figure that needs it "
                "as unknown",
                self.path,
                symbol,
            )
        )

    def block(self, block: Node | None, part: str, symbol: str, when: list[Any], rename) -> None:
        when = list(when)
        for statement in block.named_children if block is not None else []:
            if statement.type == "if_statement":
                clauses, otherwise = if_clauses(statement)
                before: list[Any] = []
                for test, body in clauses:
                    tested = conjuncts(test)
                    if _retested(test, body):
                        taken = code_of(test)
                        self.step(
                            part,
                            symbol,
                            taken,
                            "test",
                            quantity_condition(test),
                            when + before,
                            test,
                        )
                        tested = [taken]
                    self.block(body, part, symbol, when + before + tested, rename)
                    if _ends_in_return(body):
                        when.append(negated(python_all(tested)))
                    before.append(negated(python_all(tested)))
                if otherwise is not None:
                    self.block(otherwise, part, symbol, when + before, rename)
            elif statement.type == "expression_statement" and statement.named_child_count == 1:
                self.expression(statement.named_children[0], part, symbol, when, rename)
            elif statement.type == "return_statement" and rename is not None:
                value = statement.named_children[0] if statement.named_child_count else None
                if value is not None and code_of(value) != rename[0]:
                    self.assign(rename[1], value, part, symbol, when, value)
            elif statement.type not in ("pass_statement", "return_statement"):
                self.step(part, symbol, "", "unread", None, when, statement)

    def expression(self, node: Node, part: str, symbol: str, when: list[Any], rename) -> None:
        if node.type in ("assignment", "augmented_assignment"):
            left = code_of(node.child_by_field_name("left"))
            if rename is not None and left == rename[0]:
                left = rename[1]
            right = node.child_by_field_name("right")
            op = (
                node_text(node.child_by_field_name("operator"))
                if node.type != "assignment"
                else "="
            )
            if op == "+=":
                self.add(left, right, part, symbol, when, node)
            elif op == "*=" and left == "self.mem_fraction_static":
                self.step(part, symbol, left, "unread", None, when, node)
            elif op == "=":
                self.assign(left, right, part, symbol, when, node)
            else:
                self.step(part, symbol, left, "unread", None, when, node)
        elif call_name(node) == VLM and VLM in self.methods:
            self.vlm(self.methods[VLM], when)
        elif node.type == "string":
            return  # a docstring
        else:
            self.step(part, symbol, "", "unread", None, when, node)

    def _inline(self, call: Node, when: list[Any]) -> str | None:
        """A `self.m()` call of a method read: its steps under the call's conditions, the
        method's result named by the call's code."""
        function = unparenthesize(call).child_by_field_name("function")
        name = call_name(call)
        if function is None or code_of(function) != f"self.{name}" or name not in self.methods:
            return None
        method = self.methods[name]
        body = method.child_by_field_name("body")
        statements = body.named_children if body is not None else []
        returned = statements[-1] if statements else None
        local = ""
        if returned is not None and returned.type == "return_statement" and returned.named_children:
            value = unparenthesize(returned.named_children[0])
            local = node_text(value) if value.type == "identifier" else ""
        target = code_of(call)
        self.block(body, "reserve", f"{SERVER_ARGS}.{name}", when, (local, target))
        return target

    def add(self, left, right, part, symbol, when, node) -> None:
        if unparenthesize(right).type == "call":
            inlined = self._inline(right, when)
            if inlined is not None:
                self.step(part, symbol, left, "add", inlined, when, node)
                return
        found = expression(right)
        self.step(part, symbol, left, "add" if found is not None else "unread", found, when, node)

    def assign(self, left, right, part, symbol, when, node) -> None:
        value = unparenthesize(right)
        name = call_name(value)
        arguments = value.child_by_field_name("arguments") if value.type == "call" else None
        args = [a for a in arguments.named_children] if arguments is not None else []
        if name in ("max", "min") and len(args) == 2:
            first, second = args
            bound, other = (first, second) if number(first) is not None else (second, first)
            if number(bound) is not None and code_of(other) == left:
                op = "at_least" if name == "max" else "at_most"
                self.step(part, symbol, left, op, expression(bound), when, node)
                return
            if name == "min" and code_of(first) == left and expression(second) is not None:
                self.step(part, symbol, left, "at_most", expression(second), when, node)
                return
        if name == PREFILL_SIZES and len(args) == 1 and PREFILL_SIZES in self.methods:
            self.step(part, symbol, left, "range", expression(args[0]), when, node)
            return
        if left == "self.mem_fraction_static" and value.type == "conditional_expression":
            self.fraction(left, value, part, symbol, when, node)
            return
        found = expression(value)
        self.step(part, symbol, left, "set" if found is not None else "unread", found, when, node)

    def fraction(self, left, value, part, symbol, when, node) -> None:
        """`round((gpu_mem - reserved_mem) / gpu_mem, N) if gpu_mem is not None else F`."""
        body, test, otherwise = value.named_children[:3]
        args = body.child_by_field_name("arguments") if body.type == "call" else None
        parts = [a for a in args.named_children] if args is not None else []
        shape = (
            call_name(body) == "round"
            and len(parts) == 2
            and code_of(parts[0]) == "(gpu_mem - reserved_mem) / gpu_mem"
            and number(parts[1]) is not None
        )
        if not shape:
            self.step("fraction", symbol, left, "unread", None, when, node)
            return
        tested = conjuncts(test)
        self.step("fraction", symbol, left, "round", expression(body), when + tested, body)
        fallback = expression(otherwise) if number(otherwise) is not None else None
        op = "set" if fallback is not None else "unread"
        otherwise_when = when + [negated(python_all(tested))]
        self.step("fraction", symbol, left, op, fallback, otherwise_when, otherwise)

    def vlm(self, method: Node, when: list[Any]) -> None:
        """The constants of the VLM adjustment: literal assignments, getattr defaults, clamps."""
        symbol = f"{SERVER_ARGS}.{VLM}"
        for node in _assignments_in(method.child_by_field_name("body")):
            left = code_of(node.child_by_field_name("left"))
            value = unparenthesize(node.child_by_field_name("right"))
            if number(value) is not None:
                self.step("vlm", symbol, left, "constant", expression(value), when, node)
            elif call_name(value) == "getattr":
                args = value.child_by_field_name("arguments").named_children
                if len(args) == 3 and number(args[2]) is not None:
                    field = f"{code_of(args[0])}.{code_of(args[1]).strip(chr(34))}"
                    self.step("vlm", symbol, field, "default", expression(args[2]), when, node)
            elif call_name(value) == "max":
                for low, high in _clamp(value):
                    self.step("vlm", symbol, left, "at_least", expression(low), when, node)
                    self.step("vlm", symbol, left, "at_most", expression(high), when, node)


def _assignments_in(block: Node | None) -> Iterator[Node]:
    for statement in block.named_children if block is not None else []:
        if statement.type == "expression_statement" and statement.named_child_count == 1:
            inner = statement.named_children[0]
            if inner.type == "assignment":
                yield inner


def _clamp(value: Node) -> list[tuple[Node, Node]]:
    """`max(low, min(high, x))` -> [(low, high)] for literal bounds."""
    args = value.child_by_field_name("arguments").named_children
    if len(args) != 2 or call_name(args[1]) != "min":
        return []
    inner = args[1].child_by_field_name("arguments").named_children
    if number(args[0]) is None or len(inner) != 2 or number(inner[0]) is None:
        return []
    return [(args[0], inner[0])]


def _capture_ranges(walk: _Walk, method: Node) -> None:
    """The `range(start, stop, step)` terms of the prefill capture sizes, each as the first and
    the last size it gives (`max_bs` where the stop is `max_bs + 1`) and its step."""
    symbol = f"{SERVER_ARGS}.{PREFILL_SIZES}"
    parameters = method.child_by_field_name("parameters").named_children
    last = parameters[-1] if parameters else None
    if last is not None and last.type in ("typed_parameter", "default_parameter"):
        last = last.named_children[0]
    bound = node_text(last) if last is not None and last.type == "identifier" else ""
    ranges = [
        n
        for n in _calls(method.child_by_field_name("body"))
        if call_name(n) == "range" and code_of(n.child_by_field_name("function")) == "range"
    ]
    if not ranges:
        raise AnchorError(
            f"{symbol} builds no range(...) of capture sizes", paths=[walk.path], anchor=symbol
        )
    for node in ranges:
        args = node.child_by_field_name("arguments").named_children
        values = [number(a) for a in args]
        stop_code = code_of(args[1]) if len(args) > 1 else ""
        read = len(args) == 3 and values[0] is not None and values[2] is not None
        if read and (values[1] is not None or stop_code == f"{bound} + 1"):
            walk.step(
                "prefill_capture", symbol, "capture_sizes", "range", expression(node), [], node
            )
        else:
            walk.step("prefill_capture", symbol, "capture_sizes", "unread", None, [], node)
    for node in _descendants(method, "list_comprehension"):
        for clause in node.named_children:
            found = _operands(clause.named_children[0]) if clause.type == "if_clause" else None
            if found is not None and found[1] == "<=" and code_of(found[2]) == bound:
                walk.step("prefill_capture", symbol, "capture_sizes", "at_most", bound, [], node)


def _descendants(node: Node, kind: str) -> list[Node]:
    return [n for n in walk_tree(node) if n.type == kind]


def _calls(node: Node) -> list[Node]:
    return _descendants(node, "call")


def _keep(method: str) -> bool:
    header = method.lstrip().split("(", 1)[0]
    return any(header.endswith(f"def {name}") for name in READ_METHODS) or not (
        quotes_only_in_docstring(method)
    )


def memory_fraction_steps(
    text: str, path: str
) -> tuple[list[SglangMemoryStep], list[ExtractionWarning]]:
    """The heuristic's steps in program order, and the warnings for shapes not read."""
    skeleton = method_skeleton(text, keep=_keep)
    root = parse_python(skeleton, path)
    if root.has_error:
        root = parse_python(text, path)
    methods: dict[str, Node] = {}
    for name, method in class_methods(root, SERVER_ARGS):
        methods[name] = method
    if HANDLER not in methods:
        raise AnchorError(
            f"{SERVER_ARGS}.{HANDLER} is not defined in {path}",
            paths=[path],
            anchor=f"{SERVER_ARGS}.{HANDLER}",
        )
    walk = _Walk(methods, path)
    symbol = f"{SERVER_ARGS}.{HANDLER}"
    body = methods[HANDLER].child_by_field_name("body").named_children
    for wanted, part in BLOCKS:
        found = [
            s
            for s in body
            if s.type == "if_statement" and code_of(s.child_by_field_name("condition")) == wanted
        ]
        if not found:
            walk.absent(part, symbol, wanted)
            continue
        walk.block(_wrapped(found[0]), part, symbol, [], None)
    if PREFILL_SIZES in methods:
        _capture_ranges(walk, methods[PREFILL_SIZES])
    return walk.steps, walk.warnings


class _OneStatement:
    """A block of one statement (the `if` read, with its condition)."""

    def __init__(self, statement: Node) -> None:
        self.named_children = [statement]


def _wrapped(statement: Node):
    return _OneStatement(statement)
