"""The tree-sitter view of Python that every reader reads: parse entry points and primitives.

Blind to comments and to brackets that group nothing by construction: each entry point parses
the text with every comment, and both characters of every redundant pair of brackets (`(x)`,
`(a * b) + c`; python_canonical.redundant_brackets), replaced by spaces of the same byte
length, so no comment node and no such parenthesized expression reaches a reader while byte
offsets and line numbers stay those of the file. A comment that is data (vLLM's
`# [Encoder-decoder]` registry section labels) is read on purpose, with `comments`."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import lru_cache

import tree_sitter_python
from tree_sitter import Language, Node, Parser, Query, QueryCursor

from apron.extractors.errors import AnchorError, ParseError
from apron.extractors.parsing.limits import check_syntax_tree, too_deep
from apron.extractors.parsing.python_canonical import BracketJudge, canonical_code

PYTHON = Language(tree_sitter_python.language())


@lru_cache(maxsize=1)
def _parser() -> Parser:
    return Parser(PYTHON)


def parse_tree(text: str) -> Node:
    """The module node as tree-sitter parses it, syntax errors and all. The same text is parsed
    once per process while it is among the last few parsed: several facts of one engine read
    the same file (trees are immutable, so they can share one)."""
    return _parsed(text)


@lru_cache(maxsize=16)
def _parsed(text: str) -> Node:
    return _code_tree(text.encode("utf-8"))


def parse_once(text: str) -> Node:
    """tree-sitter's module node for a text read once (an outline, a skeleton, a config module):
    parsed outside parse_tree's memo, so a batch of them does not push out the files that
    several facts read."""
    return _code_tree(text.encode("utf-8"))


@lru_cache(maxsize=1)
def _comment_query() -> Query:
    return Query(PYTHON, "(comment) @comment")


@lru_cache(maxsize=1)
def _form_query() -> Query:
    return Query(PYTHON, "(comment) @comment (parenthesized_expression) @brackets")


def _comment_spans(root: Node) -> list[tuple[int, int]]:
    found = QueryCursor(_comment_query()).captures(root).get("comment", [])
    return sorted((n.start_byte, n.end_byte) for n in found)


def _form_spans(root: Node, *, keep_multiline: bool = False) -> list[tuple[int, int]]:
    """What the readers never see: every comment, and the two characters of every pair of
    brackets that groups nothing (python_canonical.redundant_brackets); with `keep_multiline`,
    a pair whose text spans lines stays."""
    captures = QueryCursor(_form_query()).captures(root)
    spans = [(n.start_byte, n.end_byte) for n in captures.get("comment", [])]
    if too_deep(root):
        return sorted(spans)  # too deep to read: its brackets stay for the depth check to refuse
    judge = BracketJudge()
    pairs = sorted(captures.get("brackets", []), key=lambda n: (n.start_byte, -n.end_byte))
    for node in pairs:  # outer pairs first
        if judge.redundant(node) and not (
            keep_multiline and node.start_point[0] != node.end_point[0]
        ):
            spans += [(node.start_byte, node.start_byte + 1), (node.end_byte - 1, node.end_byte)]
    return sorted(spans)


def blank_comments(data: bytes, spans: list[tuple[int, int]]) -> bytes:
    """`data` with each (start, end) byte span replaced by as many spaces."""
    parts, last = [], 0
    for start, end in spans:
        parts += [data[last:start], b" " * (end - start)]
        last = end
    parts.append(data[last:])
    return b"".join(parts)


def _readable(data: bytes, root: Node) -> tuple[list[tuple[int, int]], Node]:
    """The spans the readers never see (_form_spans) and the tree of `data` with them blanked.
    Where blanking leaves a shape tree-sitter-python rejects though the source parses (a
    condition broken over lines that dedent below its block, inside brackets that group
    nothing), the bracket pairs that hold line breaks stay."""
    spans = _form_spans(root)
    if not spans:
        return spans, root
    blanked = _parser().parse(blank_comments(data, spans)).root_node
    if blanked.has_error and not root.has_error:
        spans = _form_spans(root, keep_multiline=True)
        blanked = _parser().parse(blank_comments(data, spans)).root_node
    return spans, blanked


def _code_tree(data: bytes) -> Node:
    """The module node of `data` with its comments and redundant brackets blanked (see the
    module docstring). A text with neither is parsed once."""
    tree = _parser().parse(data)
    if b"#" not in data and b"(" not in data:
        return tree.root_node
    return _readable(data, tree.root_node)[1]


def code_text(text: str) -> str:
    """`text` with every comment and redundant pair of brackets blanked, as the readers' trees
    see it (same length in bytes)."""
    data = text.encode("utf-8")
    if b"#" not in data and b"(" not in data:
        return text
    spans, _ = _readable(data, _parser().parse(data).root_node)
    return blank_comments(data, spans).decode("utf-8") if spans else text


@lru_cache(maxsize=16)
def comments(text: str) -> tuple[tuple[int, str], ...]:
    """(start byte, text) of every comment of `text`, in order: for the readers of comments that
    are data, which place them among the code by byte offset."""
    data = text.encode("utf-8")
    if b"#" not in data:
        return ()
    spans = _comment_spans(_parser().parse(data).root_node)
    return tuple((start, data[start:end].decode("utf-8")) for start, end in spans)


def parse_python(
    text: str, path: str, *, check_depth: bool = True, cost_budget: int | None = None
) -> Node:
    """The module node; a file with syntax errors, or nested too deeply (or, with
    `cost_budget`, costlier than it: limits.check_syntax_tree), is a ParseError naming the file
    and its first bad line.

    `check_depth=False` skips the depth walk (a third of the cost of a parse) for callers that
    only read statements, never expressions: their recursion follows compound statements, and
    a RecursionError there still ends as a ParseError (extract_engine's backstop)."""
    root = parse_tree(text)
    if check_depth or cost_budget is not None:
        check_syntax_tree(root, path, "Python", cost_budget=cost_budget)
    if root.has_error:
        bad = _first_error(root)
        where = f" (line {bad.start_point[0] + 1})" if bad is not None else ""
        raise ParseError(f"{path} does not parse as Python{where}", paths=[path])
    return root


def _first_error(node: Node) -> Node | None:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "ERROR" or current.is_missing:
            return current
        stack.extend(reversed(current.children))
    return None


def node_text(node: Node) -> str:
    return node.text.decode("utf-8") if node.text is not None else ""


JOINED_ATTRIBUTE = re.compile(r"(?<=[\w)\]])\s*\.\s+(?=[A-Za-z_])|(?<=[\w)\]])\s+\.(?=[A-Za-z_])")


def code_of(node: Node) -> str:
    """A node's code as one canonical line, for the fields that carry code (conditions,
    expressions, annotations, reasons): rendered from the syntax tree by the one canonical
    unparser (python_canonical.py): no comments, no layout, no redundant brackets, one spacing
    rule, no trailing comma, one quote style."""
    return canonical_code(node)


def canonical_text(code: str) -> str:
    """code_of for code given as text (what libcst renders of a node, perhaps without the
    brackets that held its line breaks): parsed with tree-sitter, an expression over several
    lines first inside brackets of its own; text that does not parse is only compacted."""
    text = code.strip()
    if "\n" in text:
        bracketed = _parser().parse(f"(\n{text}\n)".encode()).root_node
        if not bracketed.has_error and bracketed.named_child_count == 1:
            return code_of(bracketed)
    root = _parser().parse(text.encode("utf-8")).root_node
    if root.has_error:
        return compact_text(code)
    return code_of(root)


def compact_text(code: str) -> str:
    """Code given as text on one line: runs of blanks and line breaks as one space, none inside
    brackets or before a joined `.attribute`."""
    text = " ".join(code.split())
    text = re.sub(r"\s+([)\],}])", r"\1", re.sub(r"([(\[{])\s+", r"\1", text))
    return JOINED_ATTRIBUTE.sub(".", text)


def string_value(node: Node) -> str | None:
    """The value of a string literal without interpolation (also implicit concatenation),
    brackets around it looked through; None for any other node."""
    node = unparenthesize(node)
    if node.type == "concatenated_string":
        parts = [string_value(c) for c in node.named_children]
        return "".join(parts) if all(p is not None for p in parts) else None  # type: ignore[arg-type]
    if node.type != "string":
        return None
    if any(c.type == "interpolation" for c in node.named_children):
        return None
    text = node_text(node)
    if (
        len(text) >= 2
        and text[0] == text[-1]
        and text[0] in "\"'"
        and "\\" not in text
        and text[1:-1].count(text[0]) == 0
    ):
        return text[1:-1]  # the common case: a plain one-line literal without escapes or prefix
    try:
        value = ast.literal_eval(node_text(node))  # a literal only: never evaluates code
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, str) else None


def import_source(statement: Node) -> tuple[int, str] | None:
    """(level, dotted module) of `from <module> import ...`: `from ..a.b import x` -> (2, "a.b");
    None when the statement has no module."""
    source = statement.child_by_field_name("module_name")
    if source is None:
        return None
    if source.type == "relative_import":
        prefix = next((c for c in source.children if c.type == "import_prefix"), None)
        dotted = next((c for c in source.children if c.type == "dotted_name"), None)
        return (
            len(node_text(prefix)) if prefix is not None else 0,
            node_text(dotted) if dotted is not None else "",
        )
    return 0, node_text(source)


def imported_names(statement: Node) -> list[tuple[str, str]]:
    """(local name, imported name) of `from m import a, b as c` -> [("a", "a"), ("c", "b")]."""
    names = []
    for item in statement.children_by_field_name("name"):
        if item.type == "aliased_import":
            name = item.child_by_field_name("name")
            alias = item.child_by_field_name("alias")
            if name is not None and alias is not None:
                names.append((node_text(alias), node_text(name)))
        elif item.type == "dotted_name":
            names.append((node_text(item), node_text(item)))
    return names


FROM_IMPORT_TEXT = re.compile(r"from[ \t]+(\.*)([^\W\d][\w.]*)?[ \t]+import[ \t]+(.*)", re.S)


def from_import(statement: Node) -> tuple[int, str, list[tuple[str, str]], bool] | None:
    """(level, dotted module, imported_names, whether it is `import *`) of a
    `from <module> import ...` statement, or None when the statement has no module: what
    import_source and imported_names say, read from the statement's text when it is plain
    (`from ..a.b import (x, y as z)` without comments or line continuations), else from its
    nodes."""
    parts = _plain_from_import(node_text(statement))
    if parts is not None:
        return parts
    source = import_source(statement)
    if source is None:
        return None
    names = imported_names(statement)
    wildcard = not names and any(c.type == "wildcard_import" for c in statement.children)
    return source[0], source[1], names, wildcard


def _plain_from_import(text: str) -> tuple[int, str, list[tuple[str, str]], bool] | None:
    found = FROM_IMPORT_TEXT.match(text)
    if found is None:
        return None
    dots, dotted, listed = found.groups()
    listed = listed.strip()
    if listed == "*":
        return len(dots), dotted or "", [], True
    if listed.startswith("("):
        if not listed.endswith(")"):
            return None
        listed = listed[1:-1]
    if "#" in listed or "\\" in listed:
        return None
    items = listed.split(",")
    if len(items) > 1 and not items[-1].strip():
        items.pop()  # a trailing comma
    names = []
    for item in items:
        words = item.split()
        if len(words) == 1 and words[0].isidentifier():
            names.append((words[0], words[0]))
        elif len(words) == 3 and words[1] == "as" and words[0].isidentifier():
            if not words[2].isidentifier():
                return None
            names.append((words[2], words[0]))
        else:
            return None
    return len(dots), dotted or "", names, False


def if_clauses(statement: Node) -> tuple[list[tuple[Node, Node]], Node | None]:
    """An `if_statement`'s (condition, block) pairs, the `if` then each `elif` in order, and the
    `else` block (None without one)."""
    clauses = [
        (statement.child_by_field_name("condition"), statement.child_by_field_name("consequence"))
    ]
    otherwise = None
    for part in statement.children_by_field_name("alternative"):
        if part.type == "elif_clause":
            clauses.append(
                (part.child_by_field_name("condition"), part.child_by_field_name("consequence"))
            )
        else:
            otherwise = part.child_by_field_name("body")
    return clauses, otherwise


def unparenthesize(node: Node) -> Node:
    """The expression (or assignment target) inside any brackets around it: `((x))` -> `x`,
    `(a) = v`'s target (a pattern to tree-sitter) -> `a`; `(a, b)` and `(a,)` are tuples."""
    while node.type in ("parenthesized_expression", "tuple_pattern"):
        if node.named_child_count != 1 or any(c.type == "," for c in node.children):
            break
        node = node.named_children[0]
    return node


def call_name(node: Node | None) -> str:
    """The name a call calls, brackets looked through: `f(...)` -> "f", `a.b.f(...)` -> "f";
    "" when `node` is not a call or calls something else (`fs[0](...)`)."""
    if node is None:
        return ""
    node = unparenthesize(node)
    if node.type != "call":
        return ""
    function = unparenthesize(node.child_by_field_name("function"))
    if function.type == "identifier":
        return node_text(function)
    if function.type == "attribute":
        return node_text(function.child_by_field_name("attribute"))
    return ""


def assignments(block: Node, *, include_bare: bool = False) -> list[tuple[str, Node | None]]:
    """(name, value node) for every `NAME = value` / `NAME: T = value` directly in a module or
    class body, in order, the value's brackets looked through; with `include_bare`, also
    `NAME: T` with None as the value."""
    found: list[tuple[str, Node | None]] = []
    for statement in block.named_children:
        if statement.type != "expression_statement" or statement.named_child_count != 1:
            continue
        assignment = statement.named_children[0]
        if assignment.type != "assignment":
            continue
        left = assignment.child_by_field_name("left")
        right = assignment.child_by_field_name("right")
        if left is not None and left.type == "identifier" and (right is not None or include_bare):
            found.append((node_text(left), unparenthesize(right) if right is not None else None))
    return found


def top_level_assignments(root: Node) -> list[tuple[str, Node]]:
    """(name, value node) for every `NAME = value` / `NAME: T = value` at module level, in order."""
    return assignments(root)  # type: ignore[return-value]


# ------------------------------------------------------------------ definitions and classes


def undecorated(node: Node) -> Node:
    """The definition a `decorated_definition` wraps; any other node as it is."""
    if node.type == "decorated_definition":
        return node.child_by_field_name("definition") or node
    return node


def defined_name(definition: Node) -> str:
    """The name of a class or function definition; "" for a node without one."""
    name = definition.child_by_field_name("name")
    return node_text(name) if name is not None else ""


def top_level_classes(root: Node) -> dict[str, Node]:
    """name -> class_definition of the classes defined directly at module level (decorators
    looked through); a later definition of a name wins."""
    found = {}
    for statement in root.named_children:
        definition = undecorated(statement)
        if definition.type == "class_definition" and definition.child_by_field_name("name"):
            found[defined_name(definition)] = definition
    return found


def class_named(root: Node, name: str, path: str) -> Node:
    """The top-level class `name`; its absence is an AnchorError naming the file and class."""
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


def _methods(cls: Node) -> list[tuple[str, Node]]:
    body = cls.child_by_field_name("body")
    found = []
    for member in body.named_children if body is not None else ():
        method = undecorated(member)
        if method.type == "function_definition":
            found.append((defined_name(method), method))
    return found


def methods_of(cls: Node) -> dict[str, Node]:
    """name -> the last function definition of that name directly in the class body (at the
    place of the first), decorators looked through."""
    return dict(_methods(cls))


def class_methods(root: Node, class_name: str) -> list[tuple[str, Node]]:
    """(name, function_definition) of every method of the top-level classes named `class_name`,
    decorators looked through, in source order."""
    found = []
    for statement in root.named_children:
        definition = undecorated(statement)
        if definition.type == "class_definition" and defined_name(definition) == class_name:
            found += _methods(definition)
    return found


# ------------------------------------------------------------------ statements


def walk(node: Node) -> Iterator[Node]:
    """Every named node below (and including) `node`, in source order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack += reversed(current.named_children)


def single_assignment(node: Node) -> tuple[Node, Node] | None:
    """(target, value) of an assignment with one target, `target = value` or annotated
    `target: T = value` (an annotated assignment is an assignment), given the statement or the
    assignment; the target's brackets looked through. None for `a = b = v` (two targets), a
    bare annotation `x: T`, or any other node."""
    if node.type == "expression_statement":
        if node.named_child_count != 1:
            return None
        node = node.named_children[0]
    if node.type != "assignment":
        return None
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    parent = node.parent
    if left is None or right is None or right.type == "assignment":
        return None
    if parent is not None and parent.type == "assignment":
        return None  # the inner part of `x = y = v`
    return unparenthesize(left), right


def assigned_name(node: Node) -> tuple[str, Node] | None:
    """(name, value) of single_assignment when its target is a plain name."""
    found = single_assignment(node)
    if found is None or found[0].type != "identifier":
        return None
    return node_text(found[0]), found[1]


def statements(block: Node | None) -> list[Node]:
    """The statements of a block, docstrings (any string statement) and `pass` dropped."""
    found = []
    for statement in block.named_children if block is not None else ():
        if statement.type == "pass_statement":
            continue
        if statement.type == "expression_statement" and statement.named_child_count == 1:
            if string_value(statement.named_children[0]) is not None:
                continue
        found.append(statement)
    return found


def returned(statement: Node) -> Node | None:
    """The value of `return value`, else None."""
    if statement.type != "return_statement" or not statement.named_child_count:
        return None
    return statement.named_children[0]


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


def assignments_and_ifs(node: Node):
    """("assign", (target, value)) and ("if", the `if` statement or `elif` clause: its condition
    and consequence) in source order under `node`, not looking into expressions (no statement
    is inside one)."""
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


# ------------------------------------------------------------------ expressions

NAMES = ("identifier", "true", "false", "none")  # True/False/None are names, as to Python's ast
COLLECTIONS = ("list", "tuple", "set", "expression_list")
COMPREHENSIONS = ("generator_expression", "list_comprehension")


def name_of(node: Node) -> str | None:
    """`x` -> "x" (True, False and None too), brackets looked through; else None."""
    inner = unparenthesize(node)
    return node_text(inner) if inner.type in NAMES else None


def call_parts(node: Node) -> tuple[Node, list[Node]] | None:
    """(callee, argument values) of a call, brackets looked through: a keyword or starred
    argument gives its value, a generator argument `f(x for x in y)` is the one value."""
    inner = unparenthesize(node)
    if inner.type != "call":
        return None
    arguments = inner.child_by_field_name("arguments")
    if arguments is None:
        return None
    if arguments.type != "argument_list":
        return inner.child_by_field_name("function"), [arguments]
    values = []
    for argument in arguments.named_children:
        if argument.type == "keyword_argument":
            argument = argument.child_by_field_name("value") or argument
        elif argument.type in ("list_splat", "dictionary_splat") and argument.named_children:
            argument = argument.named_children[0]
        values.append(argument)
    return inner.child_by_field_name("function"), values


def arguments(call: Node) -> list[Node]:
    """The argument values of call_parts; none for any other node."""
    parts = call_parts(call)
    return parts[1] if parts is not None else []


def callee(node: Node) -> str | None:
    """The canonical code of what a call calls (`a.b.f`), else None."""
    parts = call_parts(node)
    return code_of(parts[0]) if parts is not None else None


def keywords(call: Node) -> dict[str, Node]:
    """keyword -> value node of a call's keyword arguments."""
    arguments = unparenthesize(call).child_by_field_name("arguments")
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


def attribute(node: Node) -> tuple[Node, str] | None:
    """(object, attribute name) of `obj.attr`, brackets looked through."""
    inner = unparenthesize(node)
    if inner.type != "attribute":
        return None
    return inner.child_by_field_name("object"), node_text(inner.child_by_field_name("attribute"))


def comparison(node: Node) -> tuple[list[Node], list[str]] | None:
    """(operands, operators) of a comparison: `a not in b` -> ([a, b], ["not in"])."""
    inner = unparenthesize(node)
    if inner.type != "comparison_operator":
        return None
    operators = inner.children_by_field_name("operators")
    ids = {o.id for o in operators}
    operands = [c for c in inner.children if c.is_named and not c.is_extra and c.id not in ids]
    return operands, [o.type for o in operators]


def single_comparison(node: Node) -> tuple[Node, str, Node] | None:
    """(left, operator, right) of a comparison with one operator."""
    found = comparison(node)
    if found is None or len(found[1]) != 1 or len(found[0]) != 2:
        return None
    return found[0][0], found[1][0], found[0][1]


def boolean(node: Node, operator: str) -> tuple[Node, Node] | None:
    """(left, right) of `left <operator> right` (`and` / `or`), brackets looked through."""
    inner = unparenthesize(node)
    if inner.type != "boolean_operator":
        return None
    if node_text(inner.child_by_field_name("operator")) != operator:
        return None
    return inner.child_by_field_name("left"), inner.child_by_field_name("right")


def negated(node: Node) -> Node | None:
    """x of `not x`."""
    inner = unparenthesize(node)
    return inner.child_by_field_name("argument") if inner.type == "not_operator" else None


def conjuncts(node: Node) -> list[Node]:
    """The operands of a chain of `and`: `a and b and c` -> [a, b, c]."""
    parts = boolean(node, "and")
    if parts is not None:
        return conjuncts(parts[0]) + conjuncts(parts[1])
    return [node]


def number_literal(node: Node | None) -> str | None:
    """An int or float literal as Python writes it (`16`, `0.92`), brackets looked through; None
    for any other node, an imaginary `1j` included."""
    if node is None:
        return None
    node = unparenthesize(node)
    text = node_text(node)
    if node.type in ("integer", "float") and not text.endswith(("j", "J")):
        return text
    return None


# ------------------------------------------------------------------ class fields


def class_fields(cls: Node) -> dict[str, Node]:
    """name -> value of each field of a class body, `name: T = value` and `name = value` alike
    (an annotated field is a field); the last one of a name wins. A chain `a = b = v` and a
    body on the header's line give none."""
    found: dict[str, Node] = {}
    for statement in class_suite(cls):
        assigned = assigned_name(statement)
        if assigned is not None:
            found[assigned[0]] = assigned[1]
    return found


def field_default(value: Node) -> Node:
    """A pydantic field's default: `Field(default=X, ...)` (or `pydantic.Field(...)`) -> X; any
    other value as it is."""
    call = unparenthesize(value)
    if call_name(call) != "Field":
        return value
    found = keywords(call).get("default")
    return found if found is not None else value


def attribute_name(node: Node) -> str:
    """`x.name` -> "name" (brackets looked through); "" for anything else."""
    found = attribute(node)
    return found[1] if found is not None else ""
