"""The canonical text of C++ for fields that carry code: a tree-sitter-cpp node rendered token by
token with one spacing rule, so that a reformatting upstream (clang-format settings, a cast
written `(uint32_t)1` or `(uint32_t) 1`, brackets added for a long line) gives the same text.

- no comments and no line breaks;
- brackets only where the grammar needs them: `(x)` is `x`, `(a * b) + c` is `a * b + c`,
  `(a + b) * c` keeps them (C++'s operator precedence decides); a condition's and `sizeof`'s own
  brackets stay;
- one space around binary, assignment and conditional operators; none after a unary operator
  or a cast (`(uint32_t)1`, `!x`, `*this`), none around `::`, `.`, `->`, inside brackets or
  template brackets; a space after `,` and none before `,` or `;`.
"""

from __future__ import annotations

from tree_sitter import Node

ATOM = 15
POSTFIX = 14
PREFIX = 13
BINARY_LEVELS = {
    "*": 12,
    "/": 12,
    "%": 12,
    "+": 11,
    "-": 11,
    "<<": 10,
    ">>": 10,
    "<": 9,
    ">": 9,
    "<=": 9,
    ">=": 9,
    "<=>": 9,
    "==": 8,
    "!=": 8,
    "&": 7,
    "^": 6,
    "|": 5,
    "&&": 4,
    "and": 4,
    "||": 3,
    "or": 3,
}
CONDITIONAL = 2
COMMA = 1
SKIPPED = ("comment",)
LITERALS = ("string_literal", "raw_string_literal", "char_literal", "number_literal")
OPENING = ("(", "[", "{", "<")
TIGHT = ("::", ".", "->")
ATTACHED = ("argument_list", "parameter_list", "template_argument_list", "template_parameter_list")
NO_SPACE_BEFORE = (")", "]", "}", ",", ";", ":", ".", "->")


def canonical_cpp(node: Node) -> str:
    """`node` as one canonical line of C++ (see the module docstring). An expression nested past
    Python's recursion limit (the depth check refuses such files first) is only compacted."""
    try:
        return _render(node, 0)
    except RecursionError:
        return " ".join(_leaf(node).split())


def level(node: Node) -> int:
    kind = node.type
    if kind == "comma_expression":
        return COMMA
    if kind in ("assignment_expression", "conditional_expression"):
        return CONDITIONAL
    if kind == "binary_expression":
        return BINARY_LEVELS.get(_operator(node), 3)
    if kind in ("unary_expression", "pointer_expression", "cast_expression", "sizeof_expression"):
        return PREFIX
    if kind == "update_expression":
        first = _code_children(node)
        return PREFIX if first and not first[0].is_named else POSTFIX
    return ATOM


LESS_OPERATORS = ("<", "<=", "<<", "<=>")
STATEMENT_ENDS = ("expression_statement", "compound_statement", "declaration", "return_statement")
KEEP_PARENT = ("sizeof_expression", "decltype", "alignof_expression", "offsetof_expression")


def context_need(node: Node, judge: BracketJudge | None = None) -> int:
    """The binding level the place of `node` in its parent takes without brackets; never below
    an assignment's (a comma expression keeps its brackets everywhere)."""
    parent = node.parent
    if parent is None:
        return CONDITIONAL
    kind = parent.type
    if kind == "parenthesized_expression":
        judge = judge or BracketJudge()
        return judge.need(parent) if judge.redundant(parent) else CONDITIONAL
    if kind == "binary_expression":
        own = level(parent)
        return own if parent.child_by_field_name("left") == node else own + 1
    if kind in ("unary_expression", "pointer_expression", "cast_expression", "update_expression"):
        return PREFIX
    if kind in ("call_expression", "field_expression", "subscript_expression"):
        first = parent.child_by_field_name("function" if kind == "call_expression" else "argument")
        return POSTFIX if first == node else CONDITIONAL
    if kind == "conditional_expression":
        return 3 if parent.child_by_field_name("condition") == node else CONDITIONAL
    if kind == "assignment_expression":
        return PREFIX if parent.child_by_field_name("left") == node else CONDITIONAL
    return CONDITIONAL


class BracketJudge:
    """Which pairs of brackets of one tree group nothing, each judged once: judged in document
    order (an outer pair first), every pair finds the answers for the pairs around it made."""

    def __init__(self) -> None:
        self._redundant: dict[int, bool] = {}
        self._need: dict[int, int] = {}

    def need(self, node: Node) -> int:
        if node.id not in self._need:
            self._need[node.id] = context_need(node, self)
        return self._need[node.id]

    def redundant(self, node: Node) -> bool:
        """True when the brackets of a parenthesized expression group nothing: the content
        binds at least as tightly as its place takes (`(x)`, `(a * b) + c`, `f((n))`, `return
        (x);`), and they are not `sizeof`'s or `decltype`'s own, not inside template arguments,
        and no `<` is inside or just before them (which the parser could then take for a
        template bracket)."""
        if node.id not in self._redundant:
            self._redundant[node.id] = self._judge(node)
        return self._redundant[node.id]

    def _judge(self, node: Node) -> bool:
        inner = [c for c in node.named_children if c.type not in SKIPPED]
        if node.type != "parenthesized_expression" or len(inner) != 1:
            return False
        parent = node.parent
        if parent is not None and (
            parent.type in KEEP_PARENT
            or (parent.type == "binary_expression" and _operator(parent) in LESS_OPERATORS)
        ):
            return False
        content = inner[0]
        if b"<" in (content.text or b""):
            return False
        ancestor = parent
        while ancestor is not None and ancestor.type not in STATEMENT_ENDS:
            if ancestor.type in ("template_argument_list", "template_parameter_list"):
                return False
            ancestor = ancestor.parent
        return level(content) >= self.need(node)


def redundant_brackets(node: Node) -> bool:
    """BracketJudge.redundant for one pair (the parse judges a tree's pairs with one judge)."""
    return BracketJudge().redundant(node)


def _leaf(node: Node) -> str:
    return (node.text or b"").decode("utf-8")


def _code_children(node: Node) -> list[Node]:
    return [c for c in node.children if c.type not in SKIPPED]


def _operator(node: Node) -> str:
    found = node.child_by_field_name("operator")
    return _leaf(found) if found is not None else ""


def _render(node: Node, need: int) -> str:
    render = RENDERERS.get(node.type)
    if render is not None:
        return render(node, need)
    if node.child_count == 0 or node.type in LITERALS:
        return _leaf(node)
    return _generic(node)


def _parenthesized(node: Node, need: int) -> str:
    inner = [c for c in node.named_children if c.type not in SKIPPED]
    if len(inner) != 1:
        return _generic(node)
    content = inner[0]
    parent = node.parent
    if parent is not None and parent.type == "sizeof_expression":
        return "(" + _render(content, 0) + ")"
    if level(content) >= max(need, 1):
        return _render(content, need)
    return "(" + _render(content, 0) + ")"


def _binary(node: Node, need: int) -> str:
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if left is None or right is None:
        return _generic(node)
    own = level(node)
    return f"{_render(left, own)} {_operator(node)} {_render(right, own + 1)}"


def _assignment(node: Node, need: int) -> str:
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if left is None or right is None:
        return _generic(node)
    return f"{_render(left, PREFIX)} {_operator(node)} {_render(right, CONDITIONAL)}"


def _conditional(node: Node, need: int) -> str:
    condition = node.child_by_field_name("condition")
    consequence = node.child_by_field_name("consequence")
    alternative = node.child_by_field_name("alternative")
    if condition is None or alternative is None:
        return _generic(node)
    then = _render(consequence, COMMA + 1) if consequence is not None else ""
    test = _render(condition, 3)
    return f"{test} ? {then} : {_render(alternative, CONDITIONAL)}"


def _prefix(node: Node, need: int) -> str:
    """`!x`, `-x`, `*p`, `&x`, `~x`, `++i`: the operator, then its operand without a space."""
    children = _code_children(node)
    if len(children) != 2:
        return _generic(node)
    operator, operand = children
    if operator.is_named:  # postfix update: `i++`
        return _render(operator, POSTFIX) + _leaf(operand)
    text, rendered = _leaf(operator), _render(operand, PREFIX)
    if rendered.startswith(("-", "+", "&", "*")) and text[-1] == rendered[0]:
        return f"{text} {rendered}"  # `- -x`, not the decrement `--x`
    return text + rendered


def _cast(node: Node, need: int) -> str:
    kind, value = node.child_by_field_name("type"), node.child_by_field_name("value")
    if kind is None or value is None:
        return _generic(node)
    return f"({_render(kind, 0)}){_render(value, PREFIX)}"


def _sizeof(node: Node, need: int) -> str:
    children = _code_children(node)
    rest = [c for c in children if c.type != "sizeof"]
    if len(rest) == 1:
        inner = _render(rest[0], 0)
        return "sizeof" + (inner if inner.startswith("(") else f"({inner})")
    if len(rest) == 3 and rest[0].type == "(" and rest[2].type == ")":  # sizeof(type)
        return f"sizeof({_render(rest[1], 0)})"
    return _generic(node)


def _call(node: Node, need: int) -> str:
    function, arguments = (
        node.child_by_field_name("function"),
        node.child_by_field_name("arguments"),
    )
    if function is None or arguments is None:
        return _generic(node)
    return _render(function, POSTFIX) + _render(arguments, 0)


def _field(node: Node, need: int) -> str:
    children = _code_children(node)
    if len(children) != 3:
        return _generic(node)
    value, operator, name = children
    return _render(value, POSTFIX) + _leaf(operator) + _render(name, ATOM)


def _subscript(node: Node, need: int) -> str:
    argument = node.child_by_field_name("argument")
    indices = node.child_by_field_name("indices")
    if argument is None or indices is None:
        return _generic(node)
    return _render(argument, POSTFIX) + _render(indices, 0)


def _listed(node: Node, need: int) -> str:
    """An argument list, initializer list, subscript or template argument list: items joined
    by ", ", no trailing comma."""
    children = _code_children(node)
    if len(children) < 2 or _leaf(children[0]) not in OPENING:
        return _generic(node)
    items = [c for c in children[1:-1] if c.type != ","]
    return (
        _leaf(children[0]) + ", ".join(_render(i, COMMA + 1) for i in items) + _leaf(children[-1])
    )


def _qualified(node: Node, need: int) -> str:
    return "".join(_render(c, ATOM) for c in _code_children(node))


def _generic(node: Node) -> str:
    """Any other node: its children rendered and joined by the spacing rule."""
    out = ""
    previous: Node | None = None
    for child in _code_children(node):
        text = _render(child, 0)
        if not text:
            continue
        if not out:
            out = text
        elif (
            out.endswith(OPENING[:3])
            or out.endswith(TIGHT)
            or text.startswith(NO_SPACE_BEFORE)
            or (child.type in ATTACHED and previous is not None)
        ):
            out += text
        else:
            out += " " + text
        previous = child
    return out


def _compound(node: Node, need: int) -> str:
    statements = [_render(c, 0) for c in node.named_children if c.type not in SKIPPED]
    return "{ " + " ".join(statements) + " }" if statements else "{}"


RENDERERS = {
    "compound_statement": _compound,
    "parenthesized_expression": _parenthesized,
    "binary_expression": _binary,
    "assignment_expression": _assignment,
    "conditional_expression": _conditional,
    "unary_expression": _prefix,
    "pointer_expression": _prefix,
    "update_expression": _prefix,
    "cast_expression": _cast,
    "sizeof_expression": _sizeof,
    "call_expression": _call,
    "field_expression": _field,
    "subscript_expression": _subscript,
    "argument_list": _listed,
    "initializer_list": _listed,
    "subscript_argument_list": _listed,
    "template_argument_list": _listed,
    "qualified_identifier": _qualified,
}
