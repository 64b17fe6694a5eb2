"""The one canonical unparser of Python for fields that carry code: a tree-sitter node rendered
from its syntax tree on one line, so that a reformatting upstream (a new formatter, another line
length, brackets added for a long line, the other quote character, a string split in two) gives
the same text.

The rules, applied to every node below the one rendered:
- no comments, line breaks or runs of blanks (the tree has no comment: see python_ts);
- brackets only where the grammar needs them: `(x)` is `x`, `(a * b) + c` is `a * b + c`,
  `(a + b) * c` keeps them (Python's operator precedence and associativity decide);
- one space around binary, comparison and boolean operators, `=` of an assignment and `->`;
  none around `=` of a keyword argument or an unannotated default, none inside brackets or
  around `.`, a space after `,` and `:` (none around `:` of a slice), none before `,`, `:` `;`;
- no trailing comma before a closing bracket (but the one of a one-element tuple);
- a string literal without interpolation as its value in double quotes (Python's `repr` when
  the value holds a double quote, a backslash or a control character); adjacent literals joined
  into one; f-strings as written;
- the statements of a block joined by "; ".
"""

from __future__ import annotations

import keyword

from tree_sitter import Node

ATOM = 16  # an atom, a call, an attribute, a subscript: never needs brackets
BINARY_LEVELS = {
    "|": 6,
    "^": 7,
    "&": 8,
    "<<": 9,
    ">>": 9,
    "+": 10,
    "-": 10,
    "*": 11,
    "/": 11,
    "//": 11,
    "%": 11,
    "@": 11,
    "**": 13,
}
BOOLEAN_LEVELS = {"or": 2, "and": 3}
NOT_LEVEL = 4
COMPARISON_LEVEL = 5
UNARY_LEVEL = 12
AWAIT_LEVEL = 14
KEEP_BRACKETS = ("named_expression", "yield", "list_splat", "dictionary_splat", "expression_list")
SKIPPED = ("comment", "line_continuation")
OPENING = ("(", "[", "{")
CLOSING = (")", "]", "}")
NO_SPACE_BEFORE = (*CLOSING, ",", ":", ";", ".")
PRIMARY = ("call", "attribute", "subscript")


def canonical_code(node: Node) -> str:
    """`node` as one canonical line of Python (see the module docstring). An expression nested
    past Python's recursion limit (the depth check refuses such files first) is only
    compacted."""
    try:
        return _render(node, 0)
    except RecursionError:
        return " ".join(_leaf(node).split())


def level(node: Node) -> int:
    """How tightly the node binds: 0 lambda, 1 conditional, 2 or, 3 and, 4 not, 5 comparison,
    6-11 and 13 the binary operators, 12 unary, 14 await, 16 an atom."""
    kind = node.type
    if kind == "lambda":
        return 0
    if kind == "conditional_expression":
        return 1
    if kind == "boolean_operator":
        return BOOLEAN_LEVELS.get(_operator(node), 2)
    if kind == "not_operator":
        return NOT_LEVEL
    if kind == "comparison_operator":
        return COMPARISON_LEVEL
    if kind == "binary_operator":
        return BINARY_LEVELS.get(_operator(node), 6)
    if kind == "unary_operator":
        return UNARY_LEVEL
    if kind == "await":
        return AWAIT_LEVEL
    if kind in KEEP_BRACKETS:
        return -1
    return ATOM


def _operator(node: Node) -> str:
    found = node.child_by_field_name("operator")
    return _leaf(found) if found is not None else ""


def _leaf(node: Node) -> str:
    return (node.text or b"").decode("utf-8")


def _code_children(node: Node) -> list[Node]:
    return [c for c in node.children if c.type not in SKIPPED]


# ------------------------------------------------------------------ brackets that group nothing

# nodes whose own brackets hold a line break in place whatever brackets inside them become
ENCLOSING = (
    "argument_list",
    "parameters",
    "lambda_parameters",
    "list",
    "set",
    "tuple",
    "dictionary",
    "subscript",
    "generator_expression",
    "list_comprehension",
    "set_comprehension",
    "dictionary_comprehension",
    "type_parameter",
    "import_from_statement",
)


def context_need(node: Node, judge: BracketJudge | None = None) -> int:
    """The binding level the place of `node` in its parent takes without brackets."""
    parent = node.parent
    if parent is None:
        return 0
    kind = parent.type
    if kind == "parenthesized_expression":  # `((a + b)) * c`: the outer pair's place decides
        judge = judge or BracketJudge()
        return judge.need(parent) if judge.redundant(parent) else 0
    if kind in ("binary_operator", "boolean_operator"):
        own = level(parent)
        is_left = parent.child_by_field_name("left") == node
        if _operator(parent) == "**":
            return own + 1 if is_left else UNARY_LEVEL
        return own if is_left else own + 1
    if kind == "comparison_operator":
        return COMPARISON_LEVEL + 1
    if kind == "not_operator":
        return NOT_LEVEL
    if kind == "unary_operator":
        return UNARY_LEVEL
    if kind == "await":
        return AWAIT_LEVEL + 1
    if kind == "conditional_expression":
        return 1 if parent.named_children and parent.named_children[-1] == node else 2
    if kind in PRIMARY:
        first = parent.child_by_field_name("function" if kind == "call" else "object")
        if kind == "subscript":
            first = parent.child_by_field_name("value")
        return ATOM if first == node else 0
    if kind in ("list_splat", "dictionary_splat"):
        return BINARY_LEVELS["|"]
    if kind == "for_in_clause":
        right = parent.child_by_field_name("right")
        return 2 if right == node else 0
    if kind == "if_clause":
        return 2
    return 0


class BracketJudge:
    """Which pairs of brackets of one tree group nothing, each pair judged once: judged in
    document order (an outer pair before the pairs inside it), every pair finds the answers for
    the pairs around it already made, so the work is linear and nothing recurses."""

    def __init__(self) -> None:
        self._redundant: dict[int, bool] = {}
        self._need: dict[int, int] = {}
        self._inside: dict[int, tuple[bool, bool]] = {}  # pair -> (in a string, enclosed)

    def need(self, node: Node) -> int:
        if node.id not in self._need:
            self._need[node.id] = context_need(node, self)
        return self._need[node.id]

    def redundant(self, node: Node) -> bool:
        """True when the brackets of a parenthesized expression group nothing and can be
        dropped without changing the program: the content binds at least as tightly as its
        place takes (`(x)`, `(a * b) + c`, `f((a + b))`), it is not `yield` or `:=`, not a
        number before `.`, not inside an f-string, and a line break inside stays inside other
        brackets."""
        if node.id not in self._redundant:
            self._redundant[node.id] = self._judge(node)
        return self._redundant[node.id]

    def _judge(self, node: Node) -> bool:
        inner = [c for c in node.named_children if c.type not in SKIPPED]
        if node.type != "parenthesized_expression" or len(inner) != 1:
            return False
        content = inner[0]
        if level(content) < max(self.need(node), 0):
            return False
        parent = node.parent
        if (
            content.type in ("integer", "float")
            and parent is not None
            and parent.type == "attribute"
            and parent.child_by_field_name("object") == node
        ):
            return False
        in_string, enclosed = self._surroundings(node)
        if in_string:
            return False
        return enclosed or node.start_point[0] == node.end_point[0]

    def _surroundings(self, node: Node) -> tuple[bool, bool]:
        """(inside an f-string, inside brackets that stay) for a pair, from its ancestors up to
        the nearest pair around it (whose own surroundings are found once)."""
        in_string = enclosed = False
        ancestor = node.parent
        while ancestor is not None:
            if ancestor.type == "parenthesized_expression":  # the nearest pair around decides
                outer = self._inside.get(ancestor.id) or self._surroundings(ancestor)
                in_string = in_string or outer[0]
                enclosed = enclosed or outer[1] or not self.redundant(ancestor)
                break
            if ancestor.type in ("interpolation", "string"):
                in_string = True
            if ancestor.type in ENCLOSING:
                enclosed = True
            ancestor = ancestor.parent
        self._inside[node.id] = (in_string, enclosed)
        return in_string, enclosed


def redundant_brackets(node: Node) -> bool:
    """BracketJudge.redundant for one pair (the parse judges a tree's pairs with one judge)."""
    return BracketJudge().redundant(node)


# ------------------------------------------------------------------ rendering


def _render(node: Node, need: int) -> str:
    """`node` in a place that takes, without brackets, nodes binding at least `need`."""
    render = RENDERERS.get(node.type)
    if render is not None:
        return render(node, need)
    if node.child_count == 0:
        return _leaf(node)
    return _generic(node)


def _parenthesized(node: Node, need: int) -> str:
    inner = [c for c in node.named_children if c.type not in SKIPPED]
    if len(inner) != 1:
        return _generic(node)
    content = inner[0]
    parent = node.parent
    number_attribute = (
        content.type in ("integer", "float")
        and parent is not None
        and parent.type == "attribute"
        and parent.child_by_field_name("object") == node
    )
    if level(content) >= max(need, 0) and not number_attribute:
        return _render(content, need)
    return "(" + _render(content, 0) + ")"


def _binary(node: Node, need: int) -> str:
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    operator = _operator(node)
    own = level(node)
    if left is None or right is None:
        return _generic(node)
    if operator == "**":  # right-associative; a unary operand on the right needs no brackets
        return f"{_render(left, own + 1)} ** {_render(right, UNARY_LEVEL)}"
    return f"{_render(left, own)} {operator} {_render(right, own + 1)}"


def _boolean(node: Node, need: int) -> str:
    return _binary(node, need)


def _comparison(node: Node, need: int) -> str:
    parts = []
    for child in _code_children(node):
        if child.is_named:
            parts.append(_render(child, COMPARISON_LEVEL + 1))
        else:  # `<`, `in`, and the compound `not in` / `is not`
            parts.append(" ".join(_leaf(c) for c in child.children) or _leaf(child))
    return " ".join(parts)


def _not(node: Node, need: int) -> str:
    argument = node.child_by_field_name("argument")
    if argument is None:
        return _generic(node)
    return "not " + _render(argument, NOT_LEVEL)


def _unary(node: Node, need: int) -> str:
    argument = node.child_by_field_name("argument")
    if argument is None:
        return _generic(node)
    return _operator(node) + _render(argument, UNARY_LEVEL)


def _conditional(node: Node, need: int) -> str:
    parts = [c for c in node.named_children if c.type not in SKIPPED]
    if len(parts) != 3:
        return _generic(node)
    body, test, otherwise = parts
    return f"{_render(body, 2)} if {_render(test, 2)} else {_render(otherwise, 1)}"


def _await(node: Node, need: int) -> str:
    inner = [c for c in node.named_children if c.type not in SKIPPED]
    return "await " + _render(inner[0], AWAIT_LEVEL + 1) if len(inner) == 1 else _generic(node)


def _splat(node: Node, need: int) -> str:
    inner = [c for c in node.named_children if c.type not in SKIPPED]
    star = "**" if node.type in ("dictionary_splat", "dictionary_splat_pattern") else "*"
    if len(inner) != 1:
        return star
    return star + _render(inner[0], BINARY_LEVELS["|"])


def _call(node: Node, need: int) -> str:
    function, arguments = (
        node.child_by_field_name("function"),
        node.child_by_field_name("arguments"),
    )
    if function is None or arguments is None:
        return _generic(node)
    return _render(function, ATOM) + _render(arguments, 0)


def _attribute(node: Node, need: int) -> str:
    value, name = node.child_by_field_name("object"), node.child_by_field_name("attribute")
    if value is None or name is None:
        return _generic(node)
    return f"{_render(value, ATOM)}.{_leaf(name)}"


def _subscript(node: Node, need: int) -> str:
    value = node.child_by_field_name("value")
    if value is None:
        return _generic(node)
    items = [
        c
        for c in node.children
        if c.is_named and c.type not in SKIPPED and c.start_byte >= value.end_byte
    ]
    return _render(value, ATOM) + "[" + ", ".join(_render(i, 0) for i in items) + "]"


def _slice(node: Node, need: int) -> str:
    return "".join(":" if c.type == ":" else _render(c, 0) for c in _code_children(node))


def _bracketed(node: Node, need: int) -> str:
    """A list, set, dict, tuple, argument or parameter list: items joined by ", ", no trailing
    comma (but a one-element tuple's)."""
    children = _code_children(node)
    if not children or children[0].type not in OPENING:
        return _generic(node)
    items = [c for c in children[1:-1] if c.type != ","]
    inner = ", ".join(_render(item, 0) for item in items)
    if node.type == "tuple" and len(items) == 1 and items[0].type not in ("list_splat",):
        inner += ","
    return _leaf(children[0]) + inner + _leaf(children[-1])


def _comprehension(node: Node, need: int) -> str:
    children = _code_children(node)
    if not children or children[0].type not in OPENING:
        return _generic(node)
    pieces = [_render(c, 0) for c in children[1:-1] if c.type != ","]
    return _leaf(children[0]) + " ".join(pieces) + _leaf(children[-1])


def _for_in_clause(node: Node, need: int) -> str:
    pieces = []
    after_in = False
    for child in _code_children(node):
        if child.type == "in":
            after_in = True
            pieces.append("in")
        elif child.type == ",":
            pieces[-1] += ","
        elif child.is_named:
            pieces.append(_render(child, 2 if after_in else 0))
        else:
            pieces.append(_leaf(child))
    return " ".join(pieces)


def _if_clause(node: Node, need: int) -> str:
    inner = [c for c in node.named_children if c.type not in SKIPPED]
    return "if " + _render(inner[0], 2) if len(inner) == 1 else _generic(node)


def _pair(node: Node, need: int) -> str:
    key, value = node.child_by_field_name("key"), node.child_by_field_name("value")
    if key is None or value is None:
        return _generic(node)
    return f"{_render(key, 0)}: {_render(value, 0)}"


def _keyword_argument(node: Node, need: int) -> str:
    name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
    if name is None or value is None:
        return _generic(node)
    return f"{_render(name, 0)}={_render(value, 0)}"


def _lambda(node: Node, need: int) -> str:
    parameters, body = node.child_by_field_name("parameters"), node.child_by_field_name("body")
    if body is None:
        return _generic(node)
    if parameters is None:
        return "lambda: " + _render(body, 0)
    listed = ", ".join(_render(p, 0) for p in parameters.named_children if p.type not in SKIPPED)
    return f"lambda {listed}: {_render(body, 0)}"


def _string(node: Node, need: int) -> str:
    from apron.extractors.parsing.python_ts import string_value

    if any(c.type == "interpolation" for c in node.named_children):
        return _leaf(node)
    value = string_value(node)
    if value is None:
        return _leaf(node)  # bytes, or a literal tree-sitter and Python read differently
    return string_literal(value)


def _concatenated(node: Node, need: int) -> str:
    from apron.extractors.parsing.python_ts import string_value

    value = string_value(node)
    if value is not None:
        return string_literal(value)
    return " ".join(_render(c, 0) for c in node.named_children if c.type not in SKIPPED)


def string_literal(value: str) -> str:
    """The canonical literal of a string value: in double quotes, escaped as Python's repr
    escapes (a double quote inside as `\\"`)."""
    if '"' not in value and "\\" not in value and value.isprintable():
        return f'"{value}"'
    text = repr(value)
    if text[0] == '"':
        return text
    return '"' + text[1:-1].replace("\\'", "'").replace('"', '\\"') + '"'


def _generic_type(node: Node, need: int) -> str:
    return "".join(_render(c, 0) for c in _code_children(node))


def _named_expression(node: Node, need: int) -> str:
    name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
    if name is None or value is None:
        return _generic(node)
    return f"{_render(name, 0)} := {_render(value, 0)}"


def _block(node: Node, need: int) -> str:
    return "; ".join(_render(c, 0) for c in node.named_children if c.type not in SKIPPED)


def _expression_statement(node: Node, need: int) -> str:
    inner = [c for c in node.named_children if c.type not in SKIPPED]
    if len(inner) == 1:
        return _render(inner[0], 0)
    return ", ".join(_render(c, 0) for c in inner)


def _assignment(node: Node, need: int) -> str:
    pieces = []
    for child in _code_children(node):
        if child.type == ":":
            pieces[-1] += ":"
        else:
            pieces.append(_render(child, 0) if child.is_named else _leaf(child))
    return " ".join(pieces)


def _default_parameter(node: Node, need: int) -> str:
    name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
    if name is None or value is None:
        return _generic(node)
    return f"{_render(name, 0)}={_render(value, 0)}"


def _generic(node: Node) -> str:
    """Any other node: its children rendered and joined by the spacing rule."""
    pieces: list[str] = []
    for child in _code_children(node):
        text = _render(child, 0)
        if not text:
            continue
        if pieces and child.type in ("parameters", "argument_list") and _is_name(pieces[-1]):
            pieces[-1] += text  # `def f(x)`, `class A(B)`
            continue
        pieces.append(text)
    out = ""
    for piece in pieces:
        if not out:
            out = piece
        elif out.endswith(OPENING) or out.endswith(".") or piece.startswith(NO_SPACE_BEFORE):
            out += piece
        else:
            out += " " + piece
    return out


def _is_name(text: str) -> bool:
    return text.isidentifier() and not keyword.iskeyword(text)


RENDERERS = {
    "parenthesized_expression": _parenthesized,
    "binary_operator": _binary,
    "boolean_operator": _boolean,
    "comparison_operator": _comparison,
    "not_operator": _not,
    "unary_operator": _unary,
    "conditional_expression": _conditional,
    "await": _await,
    "list_splat": _splat,
    "dictionary_splat": _splat,
    "list_splat_pattern": _splat,
    "dictionary_splat_pattern": _splat,
    "call": _call,
    "attribute": _attribute,
    "subscript": _subscript,
    "slice": _slice,
    "list": _bracketed,
    "set": _bracketed,
    "tuple": _bracketed,
    "dictionary": _bracketed,
    "argument_list": _bracketed,
    "parameters": _bracketed,
    "list_comprehension": _comprehension,
    "set_comprehension": _comprehension,
    "dictionary_comprehension": _comprehension,
    "generator_expression": _comprehension,
    "for_in_clause": _for_in_clause,
    "if_clause": _if_clause,
    "pair": _pair,
    "keyword_argument": _keyword_argument,
    "default_parameter": _default_parameter,
    "lambda": _lambda,
    "string": _string,
    "concatenated_string": _concatenated,
    "block": _block,
    "generic_type": _generic_type,
    "type_parameter": _bracketed,
    "named_expression": _named_expression,
    "module": _block,
    "expression_statement": _expression_statement,
    "assignment": _assignment,
    "augmented_assignment": _assignment,
}
