"""tree-sitter nodes read as libcst reads them, for readers ported from libcst that must give the
same records: a libcst node looks through the brackets around it (tree-sitter wraps them
around it), `x = y = v` is one assignment with two targets (tree-sitter nests two), `x: T = v`
is an AnnAssign (an assignment with a type), and a class body on its header's line holds no
indented statements."""

from __future__ import annotations

from tree_sitter import Node

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.python_ts import node_text
from apron.extractors.parsing.python_ts import string_value as ts_string_value


def undecorated(node: Node) -> Node:
    if node.type == "decorated_definition":
        return node.child_by_field_name("definition") or node
    return node


def top_level_classes(root: Node) -> dict[str, Node]:
    """name -> class_definition of the classes defined directly at module level (decorators
    looked through); a later definition of a name wins, as libcst's top_level_classes."""
    found = {}
    for statement in root.named_children:
        definition = undecorated(statement)
        name = definition.child_by_field_name("name")
        if definition.type == "class_definition" and name is not None:
            found[node_text(name)] = definition
    return found


def class_named(root: Node, name: str, path: str) -> Node:
    """The top-level class `name`, or serving_rules.class_named's anchor error."""
    cls = top_level_classes(root).get(name)
    if cls is None:
        raise AnchorError(f"class {name} is not defined in {path}", paths=[path], anchor=name)
    return cls


def class_suite(definition: Node) -> list[Node]:
    """The statements of a class's indented body; none for a body on the header's line."""
    body = definition.child_by_field_name("body")
    if body is None:
        return []
    colon = body.prev_sibling
    if colon is not None and colon.end_point[0] == body.start_point[0]:
        return []
    return body.named_children


def single_assignment(node: Node) -> tuple[str, Node] | None:
    """(name, value) of `name = value` or `name: T = value` (one target), else None: an
    annotated assignment is an assignment."""
    if node.type != "assignment":
        return None
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    parent = node.parent
    if left is None or right is None or right.type == "assignment":
        return None
    if parent is not None and parent.type == "assignment":
        return None  # the inner part of `x = y = v`
    left = unparenthesize(left)
    return (node_text(left), right) if left.type == "identifier" else None


def walk(node: Node):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack += reversed(current.named_children)


def arguments(call: Node) -> list[Node]:
    """What libcst's `Arg.value`s are: each argument's expression (a keyword's value, a
    splat's operand), in order."""
    arguments = call.child_by_field_name("arguments")
    if arguments is None:
        return []
    if arguments.type != "argument_list":
        return [arguments]  # a generator expression, the one argument
    values = []
    for argument in arguments.named_children:
        if argument.type == "comment":
            continue
        if argument.type == "keyword_argument":
            argument = argument.child_by_field_name("value") or argument
        elif argument.type in ("list_splat", "dictionary_splat"):
            argument = argument.named_children[0] if argument.named_children else argument
        values.append(argument)
    return values


def keywords(call: Node) -> dict[str, Node]:
    arguments = call.child_by_field_name("arguments")
    found = {}
    for argument in arguments.named_children if arguments is not None else ():
        if argument.type == "keyword_argument":
            name, value = (
                argument.child_by_field_name("name"),
                argument.child_by_field_name("value"),
            )
            if name is not None and value is not None:
                found[node_text(name)] = value
    return found


def unparenthesize(node: Node) -> Node:
    """The expression (or assignment target) inside any brackets around it, comments in them
    looked through."""
    while node.type in ("parenthesized_expression", "tuple_pattern"):
        inner = [c for c in node.named_children if c.type != "comment"]
        if len(inner) != 1 or any(c.type == "," for c in node.children):
            break  # `(a, b)` or `(a,)`: a tuple
        node = inner[0]  # a target in brackets, `(a) = v`, is a pattern to tree-sitter
    return node


def string(node: Node) -> str | None:
    """string_value (libcst's): a str literal's value, implicit concatenation included."""
    node = unparenthesize(node)
    if node.type == "concatenated_string":
        parts = [ts_string_value(c) for c in node.named_children if c.type != "comment"]
        return "".join(parts) if parts and all(p is not None for p in parts) else None  # type: ignore[arg-type]
    return ts_string_value(node)
