"""Python read from tree-sitter's tree the way SGLang's libcst readers read it: parentheses are
looked through when a node's kind is tested and kept in its code, True/False/None are names,
a keyword or starred argument is its value, and statements are walked without looking into
expressions (no statement is inside one). For readers ported from libcst that must give the
same records."""

from __future__ import annotations

from tree_sitter import Node

from apron.extractors.errors import ParseError
from apron.extractors.parsing.limits import check_syntax_tree
from apron.extractors.parsing.python_cst import parse_module
from apron.extractors.parsing.python_ts import code_of, node_text, parse_tree
from apron.extractors.parsing.python_ts import string_value as plain_string_value

NAMES = ("identifier", "true", "false", "none")  # libcst reads True/False/None as names
COLLECTIONS = ("list", "tuple", "set", "expression_list")
COMPREHENSIONS = ("generator_expression", "list_comprehension")
# statements that hold other statements (walked for assignments and ifs)
CONTAINERS = frozenset(
    {
        "block",
        "else_clause",
        "for_statement",
        "while_statement",
        "try_statement",
        "except_clause",
        "except_group_clause",
        "finally_clause",
        "with_statement",
        "function_definition",
        "class_definition",
        "decorated_definition",
        "match_statement",
        "case_clause",
    }
)


# -- nodes as libcst shows them


def named(node: Node) -> list[Node]:
    return [c for c in node.named_children if c.type != "comment"]


def bare(node: Node) -> Node:
    """The node inside any parentheses (libcst keeps them on the node itself)."""
    while node.type == "parenthesized_expression":
        inner = named(node)
        if len(inner) != 1:
            break
        node = inner[0]
    return node


def code(node: Node) -> str:
    """A node's code as one canonical line, brackets around it dropped (python_ts.code_of)."""
    return code_of(bare(node))


def name_of(node: Node) -> str | None:
    """`x` -> "x" (True, False and None too), else None."""
    inner = bare(node)
    return node_text(inner) if inner.type in NAMES else None


def string_value(node: Node) -> str | None:
    """The value of a plain string literal (or implicit concatenation), else None."""
    inner = bare(node)
    if inner.type == "concatenated_string":
        parts = [plain_string_value(p) for p in named(inner)]
        return "".join(parts) if all(p is not None for p in parts) else None  # type: ignore[arg-type]
    return plain_string_value(inner) if inner.type == "string" else None


def comparison(node: Node) -> tuple[list[Node], list[str]] | None:
    """(operands, operators) of a comparison: `a not in b` -> ([a, b], ["not in"])."""
    inner = bare(node)
    if inner.type != "comparison_operator":
        return None
    operators = inner.children_by_field_name("operators")
    ids = {o.id for o in operators}
    operands = [c for c in inner.children if c.is_named and c.type != "comment" and c.id not in ids]
    return operands, [o.type for o in operators]


def single_comparison(node: Node) -> tuple[Node, str, Node] | None:
    """(left, operator, right) of a comparison with one operator."""
    found = comparison(node)
    if found is None or len(found[1]) != 1 or len(found[0]) != 2:
        return None
    return found[0][0], found[1][0], found[0][1]


def call_parts(node: Node) -> tuple[Node, list[Node]] | None:
    """(callee, argument values) of a call; a keyword or starred argument gives its value."""
    inner = bare(node)
    if inner.type != "call":
        return None
    arguments = inner.child_by_field_name("arguments")
    if arguments is None:
        return None
    if arguments.type in COMPREHENSIONS:
        return inner.child_by_field_name("function"), [arguments]
    values = []
    for argument in named(arguments):
        if argument.type == "keyword_argument":
            values.append(argument.child_by_field_name("value"))
        elif argument.type in ("list_splat", "dictionary_splat"):
            values.append(named(argument)[0])
        else:
            values.append(argument)
    return inner.child_by_field_name("function"), values


def callee(node: Node) -> str | None:
    parts = call_parts(node)
    return code(parts[0]) if parts is not None else None


def attribute(node: Node) -> tuple[Node, str] | None:
    """(object, attribute name) of `obj.attr`."""
    inner = bare(node)
    if inner.type != "attribute":
        return None
    return inner.child_by_field_name("object"), node_text(inner.child_by_field_name("attribute"))


def boolean(node: Node, operator: str) -> tuple[Node, Node] | None:
    """(left, right) of `left <operator> right` (`and` / `or`)."""
    inner = bare(node)
    if inner.type != "boolean_operator":
        return None
    if node_text(inner.child_by_field_name("operator")) != operator:
        return None
    return inner.child_by_field_name("left"), inner.child_by_field_name("right")


def negated(node: Node) -> Node | None:
    """x of `not x`."""
    inner = bare(node)
    return inner.child_by_field_name("argument") if inner.type == "not_operator" else None


def conjuncts(node: Node) -> list[Node]:
    """The operands of a chain of `and`: `a and b and c` -> [a, b, c]."""
    parts = boolean(node, "and")
    if parts is not None:
        return conjuncts(parts[0]) + conjuncts(parts[1])
    return [node]


def single_assignment(statement: Node) -> tuple[Node, Node] | None:
    """(target, value) of a statement `target = value` with one target (not annotated)."""
    if statement.type != "expression_statement":
        return None
    inner = named(statement)
    if len(inner) != 1 or inner[0].type != "assignment":
        return None
    assignment = inner[0]
    value = assignment.child_by_field_name("right")
    if assignment.child_by_field_name("type") is not None or value is None:
        return None
    if value.type == "assignment":
        return None  # `a = b = value`: two targets
    return assignment.child_by_field_name("left"), value


def statements(block: Node | None) -> list[Node]:
    """The statements of a block, docstrings (any string statement) and `pass` dropped."""
    found = []
    for statement in named(block) if block is not None else ():
        if statement.type == "pass_statement":
            continue
        if statement.type == "expression_statement":
            inner = named(statement)
            if len(inner) == 1 and string_value(inner[0]) is not None:
                continue
        found.append(statement)
    return found


def returned(statement: Node) -> Node | None:
    """The value of `return value`, else None."""
    if statement.type != "return_statement":
        return None
    inner = named(statement)
    return inner[0] if inner else None


def assignments_and_ifs(node: Node):
    """("assign", (target, value)) and ("if", the `if` statement or `elif` clause: its condition
    and consequence) in source order under `node`, as libcst's walk meets its Assign and If
    nodes, not looking into expressions (no statement is inside one)."""
    for child in node.children:
        kind = child.type
        if kind == "expression_statement":
            assigned = single_assignment(child)
            if assigned is not None:
                yield "assign", assigned
        elif kind in ("if_statement", "elif_clause"):
            yield "if", child
            yield from assignments_and_ifs(child)
        elif kind in CONTAINERS:
            yield from assignments_and_ifs(child)


def definition(statement: Node) -> Node:
    if statement.type == "decorated_definition":
        return statement.child_by_field_name("definition") or statement
    return statement


def defined_name(node: Node) -> str:
    return node_text(node.child_by_field_name("name"))


def class_methods(cls: Node) -> dict[str, Node]:
    """name -> the last function definition of that name directly in the class body (at the
    place of the first), decorators looked through."""
    found: dict[str, Node] = {}
    for member in named(cls.child_by_field_name("body")):
        method = definition(member)
        if method.type == "function_definition":
            found[defined_name(method)] = method
    return found


def module_tree(text: str, path: str) -> Node:
    """tree-sitter's module of a file the libcst reader parsed whole; a file tree-sitter finds
    errors in raises the error libcst gives (the reader's as it was), or tree-sitter's when libcst
    parses it."""
    root = parse_tree(text)
    if root.has_error:
        parse_module(text, path)
        raise ParseError(f"{path} does not parse as Python", paths=[path])
    check_syntax_tree(root, path, "Python")
    return root
