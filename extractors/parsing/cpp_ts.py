"""tree-sitter-cpp helpers: parse C++ with its preprocessor conditionals, find functions, enums,
initializer lists and switch case groups, and turn syntax errors into clear ParseErrors.

Preprocessor conditionals (`#if`, `#ifdef`, `#else`, `#endif`, ...) are blanked out before
parsing (same byte offsets), so the code of every branch is parsed, and each line remembers the
condition it sits under. tree-sitter-cpp cannot parse a directive inside an initializer list;
blanking them is what lets an `#ifdef` inside `LLM_ARCH_NAMES` parse."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

import tree_sitter_cpp
from tree_sitter import Language, Node, Parser, Point, Range, Tree

from apron.extractors.errors import AnchorError, ExtractionError, ParseError
from apron.extractors.parsing.cpp_canonical import BracketJudge, canonical_cpp
from apron.extractors.parsing.limits import (
    MAX_CONDITION_CHARS,
    MAX_SYNTAX_DEPTH,
    check_syntax_tree,
    too_deep,
)
from apron.extractors.parsing.ts_query import typed_descendants
from apron.extractors.records import ExtractionWarning

CPP = Language(tree_sitter_cpp.language())

_CONDITIONAL = re.compile(r"^\s*#\s*(ifdef|ifndef|if|elifdef|elifndef|elif|else|endif)\b(.*)$")
# a line _CONDITIONAL matches, searched in the whole text (whitespace within one line only)
_ANY_CONDITIONAL = re.compile(
    r"^[^\S\n]*#[^\S\n]*(?:ifdef|ifndef|if|elifdef|elifndef|elif|else|endif)\b", re.MULTILINE
)
# statements that leave control at a point that is not "every time the function runs"
CONDITIONAL_PARENTS = frozenset(
    {
        "if_statement",
        "else_clause",
        "switch_statement",
        "case_statement",
        "for_statement",
        "for_range_loop",
        "while_statement",
        "do_statement",
        "conditional_expression",
        "lambda_expression",
        "try_statement",
        "catch_clause",
    }
)


@lru_cache(maxsize=1)
def _parser() -> Parser:
    return Parser(CPP)


@dataclass(frozen=True)
class CppSource:
    """A parsed C++ file: the tree, the text, and the preprocessor condition of each line."""

    path: str
    text: str
    tree: Tree
    root: Node
    line_conditions: tuple[str, ...]  # per 0-based line; "" when not under a conditional
    regions_only: bool = False  # the tree holds only some definitions (parse_cpp_methods)

    def condition_at(self, node: Node) -> str:
        line = node.start_point[0]
        return self.line_conditions[line] if line < len(self.line_conditions) else ""

    def first_error_line(self, node: Node | None = None) -> int | None:
        bad = first_error(node if node is not None else self.root)
        return bad.start_point[0] + 1 if bad is not None else None

    def brace_imbalance(self) -> int:
        """`{` tokens minus `}` tokens (tree-sitter's MISSING placeholders not counted). Nonzero
        for unbalanced braces, and for braces split across the branches of an `#if`/`#else`.
        A tree without errors is balanced: every grammar rule with a `{` token has its `}`.
        When the tree holds only some definitions, the braces of the whole text are counted
        outside comments and literals."""
        if self.regions_only:
            code = _COMMENT_OR_LITERAL.sub(b"", self.text.encode("utf-8"))
            return code.count(b"{") - code.count(b"}")
        if not self.root.has_error:
            return 0
        balance = 0
        cursor = self.root.walk()
        while True:
            if cursor.goto_first_child():
                continue
            leaf = cursor.node
            if leaf is not None and not leaf.is_missing:
                balance += {"{": 1, "}": -1}.get(leaf.type, 0)
            while not cursor.goto_next_sibling():
                if not cursor.goto_parent():
                    return balance

    def require_clean(self, node: Node, anchor: str) -> None:
        """A ParseError naming path, anchor and line when `node` contains a syntax error."""
        line = self.first_error_line(node)
        if line is not None:
            raise ParseError(
                f"{self.path} does not parse as C++ at line {line}, inside {anchor}",
                paths=[self.path],
                anchor=anchor,
            )

    def missing(self, message: str, anchor: str) -> ExtractionError:
        """The error for an anchor that is not in the file: a ParseError when the file has
        syntax errors (the anchor may be hidden in them), else an AnchorError."""
        line = self.first_error_line()
        if line is not None:
            return ParseError(
                f"{message}; {self.path} does not parse as C++ (first error at line "
                f"{line}), so the anchor may be hidden in broken code",
                paths=[self.path],
                anchor=anchor,
            )
        return AnchorError(message, paths=[self.path], anchor=anchor)


def brace_warnings(sources: list[CppSource]) -> list[ExtractionWarning]:
    """A warning per file whose braces do not balance. Anchors inside broken code are already
    ParseErrors; this says that the rest of the file was read through tree-sitter's error
    recovery, so the facts should be checked by hand."""
    warnings = []
    for source in sources:
        imbalance = source.brace_imbalance()
        if imbalance:
            which = "'{' than '}'" if imbalance > 0 else "'}' than '{'"
            warnings.append(
                ExtractionWarning(
                    code="unbalanced-braces",
                    subject=source.path,
                    message=f"{source.path} has {abs(imbalance)} more {which} (counting both branches "
                    "of #if/#else); its facts were read through the parser's error recovery",
                    path=source.path,
                    symbol="",
                )
            )
    return warnings


def mask_conditionals(text: str, path: str = "<text>") -> tuple[str, tuple[str, ...]]:
    """Blank out conditional directives (keeping offsets) and name each line's condition.

    `#ifdef X` -> "defined(X)", `#ifndef X` -> "!defined(X)", `#if E` -> "E", `#else` -> the
    negation of the branches before it; nested conditions are joined with " && ".
    Lines share one condition string until the next directive; conditionals nested deeper than
    MAX_SYNTAX_DEPTH, or conditions whose text adds up past MAX_CONDITION_CHARS, are a
    ParseError (their cost grows with the square of the nesting)."""
    lines = text.split("\n")
    if _ANY_CONDITIONAL.search(text) is None:
        return text, ("",) * len(lines)
    out: list[str] = []
    conditions: list[str] = []
    stack: list[list[str]] = []  # per open #if: the conditions of its branches so far
    current = ""  # the condition of the lines since the last directive
    spent = 0
    index = 0
    while index < len(lines):
        line = lines[index]
        match = _CONDITIONAL.match(line)
        if match is None:
            out.append(line)
            conditions.append(current)
            index += 1
            continue
        directive = match.group(1)
        parts = [match.group(2)]
        end = index + 1
        while lines[end - 1].rstrip().endswith("\\") and end < len(lines):
            parts[-1] = parts[-1].rstrip().removesuffix("\\")
            parts.append(lines[end])
            end += 1
        rest = " ".join(_strip_comment(" ".join(parts)).split())
        if directive in ("if", "ifdef", "ifndef"):
            if len(stack) >= MAX_SYNTAX_DEPTH:
                raise ParseError(
                    f"{path} nests preprocessor conditionals more than "
                    f"{MAX_SYNTAX_DEPTH} levels deep (line {index + 1})",
                    paths=[path],
                )
            stack.append([_condition(directive, rest)])
        elif directive in ("elif", "elifdef", "elifndef") and stack:
            stack[-1].append(_condition(directive.removeprefix("el"), rest))
        elif directive == "else" and stack:
            stack[-1].append("else")
        elif directive == "endif" and stack:
            stack.pop()
        current = _joined(stack)
        spent += len(current)
        if spent > MAX_CONDITION_CHARS:
            raise ParseError(
                f"{path} has preprocessor conditions adding up to over "
                f"{MAX_CONDITION_CHARS} characters (line {index + 1}); too many or "
                "too long #if/#elif branches",
                paths=[path],
            )
        for blank in lines[index:end]:
            out.append(" " * len(blank))
            conditions.append(current)
        index = end
    return "\n".join(out), tuple(conditions)


def _strip_comment(text: str) -> str:
    return re.sub(r"//.*$|/\*.*?\*/", "", text)


def _condition(directive: str, rest: str) -> str:
    if directive == "ifdef":
        return f"defined({rest})"
    if directive == "ifndef":
        return f"!defined({rest})"
    return rest


def _branch(conditions: list[str]) -> str:
    """The condition of the current (last) branch of one #if chain."""
    *before, current = conditions
    negated = [f"!({c})" for c in before]
    if current == "else":
        return " && ".join(negated)
    return " && ".join([*negated, current])


def _joined(stack: list[list[str]]) -> str:
    return " && ".join(_branch(frame) for frame in stack)


@lru_cache(maxsize=256)
def parse_cpp(text: str, path: str) -> CppSource:
    """Parse C++ after blanking preprocessor conditionals. Syntax errors are reported where an
    anchor needs the broken code (`require_clean`, `missing`); only a file nested too deeply to
    walk safely is a ParseError here."""
    masked, conditions = mask_conditionals(text, path)
    tree = _without_redundant_brackets(_parser(), masked.encode("utf-8"))
    check_syntax_tree(tree.root_node, path, "C++")
    return CppSource(
        path=path, text=text, tree=tree, root=tree.root_node, line_conditions=conditions
    )


def _without_redundant_brackets(parser: Parser, data: bytes) -> Tree:
    """The tree of `data` with both characters of every pair of brackets that groups nothing
    (cpp_canonical.redundant_brackets) blanked, so that no reader sees `(x)` for `x`: form is
    not meaning. Byte offsets and lines stay those of the file."""
    tree = parser.parse(data)
    if b"(" not in data or too_deep(tree.root_node):
        return tree  # a tree too deep to read keeps its brackets for the depth check to refuse
    judge = BracketJudge()
    pairs = sorted(
        typed_descendants(CPP, tree.root_node, ("parenthesized_expression",)),
        key=lambda n: (n.start_byte, -n.end_byte),
    )  # outer pairs first
    spans = [
        span
        for node in pairs
        if judge.redundant(node)
        for span in ((node.start_byte, node.start_byte + 1), (node.end_byte - 1, node.end_byte))
    ]
    if not spans:
        return tree
    blanked = bytearray(data)
    for start, end in spans:
        blanked[start:end] = b" "
    return parser.parse(bytes(blanked))


# A definition's closing brace written alone at the start of a line: where a region ends.
_DEFINITION_END = re.compile(rb"^\}[ \t]*$", re.MULTILINE)
# Comments and string or character literals, to tell whether an offset is inside one.
_COMMENT_OR_LITERAL = re.compile(
    rb"//[^\n]*|/\*.*?(?:\*/|\Z)|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.DOTALL
)


@lru_cache(maxsize=256)
def parse_cpp_methods(text: str, path: str, method: str) -> CppSource:
    """parse_cpp for a caller that reads only the definitions of `<class>::<method>`: tree-sitter
    parses just those regions, each from the start of the line that names `::<method>(` to the
    next line holding only `}` (positions and line conditions are those of the whole file).
    The whole file is parsed instead, so errors and anchors are those of parse_cpp, when a region
    starts inside a comment or literal, or is not exactly one clean definition of such a
    method, or when there is none. Code outside the regions cannot change what they hold."""
    masked, conditions = mask_conditionals(text, path)
    data = masked.encode("utf-8")
    regions = _method_regions(data, method)
    if regions:
        ranges = [Range(_point(data, a), _point(data, b), a, b) for a, b in regions]
        tree = _without_redundant_brackets(Parser(CPP, included_ranges=ranges), data)
        if _one_clean_definition_each(tree.root_node, regions, method):
            check_syntax_tree(tree.root_node, path, "C++")
            return CppSource(
                path=path,
                text=text,
                tree=tree,
                root=tree.root_node,
                line_conditions=conditions,
                regions_only=True,
            )
    return parse_cpp(text, path)


def _method_regions(data: bytes, method: str) -> list[tuple[int, int]]:
    """Byte ranges (line start, end of the closing `}` line's brace) of the candidate
    definitions of `::method`, in order; [] when one of them starts inside a comment or a
    literal (commented-out code must not be read) or has no end."""
    starts = [
        data.rfind(b"\n", 0, m.start()) + 1
        for m in re.finditer(rb"::[ \t]*" + re.escape(method.encode()) + rb"[ \t]*\(", data)
    ]
    if not starts:
        return []
    hidden = [(m.start(), m.end()) for m in _COMMENT_OR_LITERAL.finditer(data)]
    regions: list[tuple[int, int]] = []
    for start in dict.fromkeys(starts):
        name_at = data.index(b"::", start)
        if any(a <= name_at < b for a, b in hidden) or (regions and start < regions[-1][1]):
            return []
        end = _DEFINITION_END.search(data, start)
        if end is None:
            return []
        regions.append((start, end.start() + 1))  # the line starts with its `}`
    return regions


def _point(data: bytes, offset: int) -> Point:
    line_start = data.rfind(b"\n", 0, offset) + 1
    return Point(data.count(b"\n", 0, offset), offset - line_start)


def _one_clean_definition_each(root: Node, regions: list[tuple[int, int]], method: str) -> bool:
    """Each region parsed as exactly one function definition of `<class>::method`, no errors."""
    if root.has_error:
        return False
    definitions = [c for c in root.named_children if c.type != "comment"]
    if len(definitions) != len(regions):
        return False
    for node, (_start, end) in zip(definitions, regions, strict=True):
        if node.type != "function_definition" or node.end_byte != end:
            return False
        function = _function_declarator(node.child_by_field_name("declarator"))
        name = declarator_name(function.child_by_field_name("declarator")) if function else None
        if not name or name.rpartition("::")[2] != method or "::" not in name:
            return False
    return True


def first_error(node: Node) -> Node | None:
    if not node.has_error:
        return None
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "ERROR" or current.is_missing:
            return current
        stack.extend(reversed([c for c in current.children if c.has_error or c.is_missing]))
    return None


def node_text(node: Node) -> str:
    return node.text.decode("utf-8") if node.text is not None else ""


def compact(node: Node) -> str:
    """The node's code on one canonical line (cpp_canonical.py): no comments, no layout, no
    redundant brackets, one spacing rule."""
    return canonical_cpp(node)


def walk(node: Node) -> Iterator[Node]:
    """Every node below (and including) `node`, in source order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


# The types the readers ask for, found by one query: a C++ query costs 10-20 ms to compile (the
# grammar is large), once per process and per set of types.
DEFINITION_TYPES = ("class_specifier", "function_definition", "struct_specifier")


def nodes_of_type(node: Node, *types: str) -> list[Node]:
    """The nodes of these (named) types below and including `node`, in the order of `walk`.
    A query costs about as much to compile as walking 10,000 nodes: for whole files read often."""
    if set(types) <= set(DEFINITION_TYPES):
        return [n for n in typed_descendants(CPP, node, DEFINITION_TYPES) if n.type in types]
    return typed_descendants(CPP, node, types)


def code_children(node: Node) -> list[Node]:
    """Named children that are code (no comments)."""
    return [c for c in node.named_children if c.type != "comment"]


# ---------------------------------------------------------------- declarations


def declarator_name(declarator: Node | None) -> str | None:
    """The (qualified) name a declarator declares: `llm_arch_is_hybrid`, `llama_model_x::f`."""
    while declarator is not None:
        if declarator.type in (
            "identifier",
            "field_identifier",
            "qualified_identifier",
            "destructor_name",
            "operator_name",
            "type_identifier",
        ):
            return re.sub(r"\s+", "", node_text(declarator))
        declarator = declarator.child_by_field_name("declarator")
    return None


def _function_declarator(declarator: Node | None) -> Node | None:
    while declarator is not None:
        if declarator.type == "function_declarator":
            return declarator
        declarator = declarator.child_by_field_name("declarator")
    return None


def function_definitions(root: Node) -> list[tuple[str, Node]]:
    """(qualified name, function_definition node) for every function defined in the file."""
    found = []
    for node in nodes_of_type(root, "function_definition"):
        function = _function_declarator(node.child_by_field_name("declarator"))
        if function is None:
            continue
        name = declarator_name(function.child_by_field_name("declarator"))
        if name:
            found.append((name, node))
    return found


def function_declarations(root: Node) -> list[tuple[str, Node]]:
    """(name, declaration node) for every function declared without a body."""
    found = []
    for node in walk(root):
        if node.type not in ("declaration", "field_declaration"):
            continue
        for declarator in node.children_by_field_name("declarator"):
            function = _function_declarator(declarator)
            if function is None:
                continue
            name = declarator_name(function.child_by_field_name("declarator"))
            if name:
                found.append((name, node))
    return found


def function_body(definition: Node) -> Node:
    body = definition.child_by_field_name("body")
    assert body is not None  # a function_definition always has one
    return body


def return_type_text(definition: Node) -> str:
    type_node = definition.child_by_field_name("type")
    return node_text(type_node) if type_node is not None else ""


def enum_members(root: Node, enum_name: str) -> list[Node] | None:
    """The enumerator nodes of `enum <enum_name> { ... }`, or None when there is no such enum."""
    for node in walk(root):
        if node.type != "enum_specifier":
            continue
        name = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        if name is not None and body is not None and node_text(name) == enum_name:
            return [c for c in walk(body) if c.type == "enumerator"]
    return None


def enumerator_name(enumerator: Node) -> str:
    name = enumerator.child_by_field_name("name")
    return node_text(name) if name is not None else ""


def variable_initializer(root: Node, variable: str) -> Node | None:
    """The initializer of `... <variable> = <init>;` (or `<variable>{...}`) anywhere in the file."""
    for node in walk(root):
        if node.type != "init_declarator":
            continue
        if declarator_name(node.child_by_field_name("declarator")) != variable:
            continue
        value = node.child_by_field_name("value")
        if value is not None:
            return value
    return None


_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "0": "\0", "r": "\r"}


def string_value(node: Node) -> str | None:
    """The value of a plain string literal (or adjacent literals); None for anything else."""
    if node.type == "concatenated_string":
        parts = [string_value(c) for c in code_children(node)]
        return "".join(parts) if all(p is not None for p in parts) else None  # type: ignore[arg-type]
    if node.type != "string_literal":
        return None
    chunks = []
    for child in node.named_children:
        if child.type == "string_content":
            chunks.append(node_text(child))
        elif child.type == "escape_sequence":
            raw = node_text(child)
            chunks.append(_ESCAPES.get(raw[1:], raw))
        else:
            return None
    return "".join(chunks)


def int_value(node: Node | None) -> int | None:
    """The value of a decimal/hex integer literal (suffixes allowed), else None."""
    if node is None or node.type != "number_literal":
        return None
    digits = node_text(node).rstrip("uUlL").replace("'", "")
    try:
        return int(digits, 0)
    except ValueError:
        return None


def bool_value(node: Node | None) -> bool | None:
    if node is None:
        return None
    if node.type == "true":
        return True
    if node.type == "false":
        return False
    if node.type == "parenthesized_expression" and len(code_children(node)) == 1:
        return bool_value(code_children(node)[0])
    return None


# ---------------------------------------------------------------- statements


def call_name(call: Node) -> str:
    """`hparams.set_swa_pattern(...)` -> "hparams.set_swa_pattern"."""
    function = call.child_by_field_name("function")
    return re.sub(r"\s+", "", node_text(function)) if function is not None else ""


def call_arguments(call: Node) -> list[Node]:
    arguments = call.child_by_field_name("arguments")
    return code_children(arguments) if arguments is not None else []


def is_conditional(node: Node, stop: Node) -> bool:
    """Whether `node` runs only under a condition or loop, looking up to (not past) `stop`."""
    current = node.parent
    while current is not None and current != stop:
        if current.type in CONDITIONAL_PARENTS:
            return True
        current = current.parent
    return False


def enclosing_conditions(node: Node, stop: Node) -> list[str]:
    """The `if` conditions `node` depends on, innermost last: "c" or "!(c)" for the else branch."""
    found: list[str] = []
    child = node
    current = node.parent
    while current is not None and current != stop:
        if current.type == "if_statement":
            condition = current.child_by_field_name("condition")
            text = _condition_text(condition) if condition is not None else "?"
            alternative = current.child_by_field_name("alternative")
            in_else = alternative is not None and _contains(alternative, child)
            found.append(f"!({text})" if in_else else text)
        elif current.type in (
            "switch_statement",
            "for_statement",
            "for_range_loop",
            "while_statement",
            "do_statement",
        ):
            found.append(compact(current).split("{")[0].strip())
        child = current
        current = current.parent
    return list(reversed(found))


def _condition_text(condition: Node) -> str:
    """`(const bool x = f(); x && y)` -> "x && y" (the value part of a condition clause)."""
    value = condition.child_by_field_name("value")
    text = compact(value if value is not None else condition)
    if text.startswith("(") and text.endswith(")") and value is None:
        text = text[1:-1].strip()
    return text


def _contains(outer: Node, inner: Node) -> bool:
    return outer.start_byte <= inner.start_byte and inner.end_byte <= outer.end_byte


@dataclass(frozen=True)
class CaseGroup:
    """Case labels that share one body (fall-through grouping), or the default label."""

    labels: tuple[Node, ...]  # the label expressions; empty for a group that only has `default`
    has_default: bool
    statements: tuple[Node, ...]  # the statements run for these labels, comments dropped


def switch_case_groups(switch: Node) -> list[CaseGroup]:
    """The case groups of a `switch` statement, in source order.

    Consecutive labels with no statement between them form one group (`case A: case B:`);
    a trailing group of labels with no statements runs off the end of the switch."""
    body = switch.child_by_field_name("body")
    if body is None:
        return []
    groups: list[CaseGroup] = []
    labels: list[Node] = []
    has_default = False
    for item in code_children(body):
        if item.type != "case_statement":
            # a statement directly in the switch body belongs to the labels before it
            groups.append(CaseGroup(tuple(labels), has_default, (item,)))
            labels, has_default = [], False
            continue
        value = item.child_by_field_name("value")
        if value is None:
            has_default = True
        else:
            labels.append(value)
        statements = [c for c in code_children(item) if c != value]
        if statements:
            groups.append(CaseGroup(tuple(labels), has_default, tuple(statements)))
            labels, has_default = [], False
    if labels or has_default:
        groups.append(CaseGroup(tuple(labels), has_default, ()))
    return groups


def switch_subject(switch: Node) -> str:
    condition = switch.child_by_field_name("condition")
    return _condition_text(condition) if condition is not None else ""
