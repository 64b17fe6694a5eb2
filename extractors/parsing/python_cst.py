"""libcst helpers: parse safely, find classes and methods, and describe small expressions in words."""

from __future__ import annotations

import ast
from collections.abc import Callable
from functools import lru_cache

import libcst as cst

from apron.extractors.errors import ParseError
from apron.extractors.parsing.cst_children import children
from apron.extractors.parsing.limits import CST_COST_BUDGET, check_syntax_tree
from apron.extractors.parsing.python_ts import canonical_text, code_text, parse_tree


def parse_module(text: str, path: str) -> cst.Module:
    """Parse Python source; a syntax error or pathological nesting becomes a ParseError.

    tree-sitter measures the file first: libcst crashes the interpreter on very deep nesting and
    its memory grows with depth, so a file over the limits never reaches it."""
    check_syntax_tree(parse_tree(text), path, "Python", cost_budget=CST_COST_BUDGET)
    return _libcst(text, path)


KeepBody = Callable[[str, bytes], bool]


def parse_module_keeping(text: str, path: str, keep: KeepBody) -> cst.Module:
    """parse_module for a caller that reads only some definitions' bodies: the body of each
    top-level function (qualified name `f`) and of each method of a top-level class (`C.m`) is
    handed to libcst as `...` unless `keep(qualified name, the definition's source bytes)` says
    so. Everything else stays: imports, assignments, class headers, class-level statements and
    every definition's name, parameters and decorators, so an anchor that is missing is missing
    as in parse_module. Lines keep their numbers (the body's newlines follow the `...`). A file
    tree-sitter finds errors in is parsed whole, so its errors are those of parse_module.

    A caller that filters by text (`keep=lambda _, code: b"page_size" in code`) may do so only
    for constructs whose source must contain that text."""
    check_syntax_tree(parse_tree(text), path, "Python", cost_budget=CST_COST_BUDGET)
    return _libcst(text_keeping(text, keep), path)


def _elided_bodies(root, keep: KeepBody) -> list[tuple[int, int]]:
    """Byte ranges, in order, of the bodies of top-level functions and top-level classes'
    methods that `keep` does not keep."""
    ranges = []

    def consider(statement, qualname: str) -> None:
        method = _definition(statement)
        block = method.child_by_field_name("body")
        if block is None or block.end_byte <= block.start_byte:
            return
        if not keep(qualname, statement.text or b""):
            ranges.append((block.start_byte, block.end_byte))

    for statement in root.named_children:
        definition = _definition(statement)
        function = _definition_name(statement, "function_definition")
        if function is not None:
            consider(statement, function)
            continue
        if definition.type != "class_definition":
            continue
        class_name = _definition_name(statement, "class_definition")
        body = definition.child_by_field_name("body")
        for member in body.named_children if body is not None else ():
            name = _definition_name(member, "function_definition")
            if name is not None:
                consider(member, f"{class_name}.{name}")
    return ranges


def _definition(statement):
    if statement.type == "decorated_definition":
        return statement.child_by_field_name("definition") or statement
    return statement


def _definition_name(statement, kind: str) -> str | None:
    definition = _definition(statement)
    if definition.type != kind:
        return None
    name = definition.child_by_field_name("name")
    return name.text.decode("utf-8") if name is not None and name.text is not None else None


def _libcst(text: str, path: str) -> cst.Module:
    try:
        return _libcst_parsed(text)
    except cst.ParserSyntaxError as err:
        raise ParseError(
            f"{path} does not parse as Python: {err.message} "
            f"(line {err.raw_line}, column {err.raw_column})",
            paths=[path],
        ) from None
    except RecursionError:
        raise ParseError(f"{path} is nested too deeply to parse", paths=[path]) from None


@lru_cache(maxsize=8)
def _libcst_parsed(text: str) -> cst.Module:
    """libcst's module for `text`, parsed once while it is among the last few parsed (modules
    are immutable; several facts of one engine read the same file). Errors are not kept. Its
    comments are blanked first, as for tree-sitter (python_ts.code_text): no reader sees one."""
    return cst.parse_module(code_text(text))


def unparenthesized(node: cst.CSTNode) -> cst.CSTNode:
    """libcst's node without the brackets around it: `(x)` reads as `x`."""
    if getattr(node, "lpar", None):
        return node.with_changes(lpar=[], rpar=[])
    return node


def compact_code(module: cst.Module, node: cst.CSTNode) -> str:
    """A node's code as one canonical line (python_ts.code_of), brackets around it dropped:
    `(f( a,\n b, ))` -> `f(a, b)`."""
    return canonical_text(module.code_for_node(unparenthesized(node)))


def top_level_classes(module: cst.Module) -> dict[str, cst.ClassDef]:
    return {s.name.value: s for s in module.body if isinstance(s, cst.ClassDef)}


def top_level_assignments(module: cst.Module) -> dict[str, cst.BaseExpression]:
    """`NAME = value` and `NAME: T = value` at module level; the last assignment wins."""
    found: dict[str, cst.BaseExpression] = {}
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                target = small.targets[0].target
                if isinstance(target, cst.Name):
                    found[target.value] = small.value
            elif isinstance(small, cst.AnnAssign) and small.value is not None:
                if isinstance(small.target, cst.Name):
                    found[small.target.value] = small.value
    return found


def class_methods(cls: cst.ClassDef) -> dict[str, cst.FunctionDef]:
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    return {s.name.value: s for s in body if isinstance(s, cst.FunctionDef)}


def base_names(cls: cst.ClassDef) -> list[str]:
    names = []
    for arg in cls.bases:
        if isinstance(arg.value, cst.Name):
            names.append(arg.value.value)
        elif isinstance(arg.value, cst.Attribute):
            names.append(arg.value.attr.value)
    return names


def walk(node: cst.CSTNode):
    """Every node below `node`, depth first, `node` included."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack += reversed(children(current))


def _token_types() -> frozenset[type]:
    """The node types that hold nothing but whitespace, comments and punctuation below them:
    brackets, commas, dots, colons, `=`, operators and the whitespace nodes themselves."""
    bases = (
        cst.BaseBinaryOp,
        cst.BaseBooleanOp,
        cst.BaseCompOp,
        cst.BaseUnaryOp,
        cst.BaseAugOp,
        cst.BaseParenthesizableWhitespace,
    )
    kinds = {c for c in vars(cst).values() if isinstance(c, type) and issubclass(c, bases)}
    kinds |= {
        cst.TrailingWhitespace,
        cst.EmptyLine,
        cst.Newline,
        cst.Comment,
        cst.LeftParen,
        cst.RightParen,
        cst.LeftSquareBracket,
        cst.RightSquareBracket,
        cst.LeftCurlyBrace,
        cst.RightCurlyBrace,
        cst.Comma,
        cst.Dot,
        cst.Semicolon,
        cst.Colon,
        cst.AssignEqual,
        cst.ImportStar,
    }
    return frozenset(kinds)


TOKEN_TYPES = _token_types()


def walk_code(node: cst.CSTNode):
    """`walk` without the tokens: every node below `node` (itself included), depth first and in
    walk's order, except the whitespace, comments, brackets, commas, dots, colons, `=` and
    operators and what lies below them (only more of the same). For readers that look for
    statements and expressions; an operator is read from its expression (`node.operator`)."""
    tokens = TOKEN_TYPES
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack += [c for c in reversed(children(current)) if c.__class__ not in tokens]


def conjuncts(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The operands of a chain of `and`: `a and b and c` -> [a, b, c]."""
    if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.And):
        return conjuncts(node.left) + conjuncts(node.right)
    return [node]


def string_value(node: cst.BaseExpression) -> str | None:
    """The value of a plain string literal (or implicit concatenation), else None."""
    if isinstance(node, cst.SimpleString | cst.ConcatenatedString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def string_sequence(node: cst.BaseExpression) -> list[str] | None:
    """The strings of a tuple/list/set literal of string literals, in order; else None."""
    if isinstance(node, cst.Tuple | cst.List | cst.Set):
        values = [string_value(e.value) for e in node.elements]
        if all(v is not None for v in values):
            return values  # type: ignore[return-value]
    return None


def int_value(node: cst.BaseExpression) -> int | None:
    if isinstance(node, cst.Integer):
        return int(ast.literal_eval(node.value))
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = int_value(node.expression)
        return -inner if inner is not None else None
    return None


def statements(body: cst.BaseSuite) -> list[cst.CSTNode]:
    """The statements of a suite, with simple statement lines flattened, docstrings dropped."""
    flat: list[cst.CSTNode] = []
    items = body.body if isinstance(body, cst.IndentedBlock) else [body]
    for item in items:
        if isinstance(item, cst.SimpleStatementLine | cst.SimpleStatementSuite):
            for small in item.body:
                if isinstance(small, cst.Expr) and string_value(small.value) is not None:
                    continue  # docstring
                if isinstance(small, cst.Pass):
                    continue
                flat.append(small)
        else:
            flat.append(item)
    return flat


CONFIG_ROOTS = (
    "self.hf_text_config",
    "self.hf_config",
    "hf_text_config",
    "hf_config",
    "self.text_config",
    "text_config",
)


class ExpressionDescriber:
    """Turns small condition/value expressions into short readable text.

    `self.hf_text_config.attn_config["kv_n_heads"]` -> `attn_config.kv_n_heads`;
    `getattr(self.hf_text_config, "multi_query", False)` -> `multi_query`;
    local names are replaced by what they were assigned."""

    def __init__(
        self,
        module: cst.Module,
        env: dict[str, cst.BaseExpression] | None = None,
        methods: dict[str, cst.FunctionDef] | None = None,
    ) -> None:
        self.module = module
        self.env = dict(env or {})
        self.methods = methods or {}

    def code(self, node: cst.CSTNode) -> str:
        return canonical_text(self.module.code_for_node(unparenthesized(node)))

    def config_ref(self, node: cst.BaseExpression) -> str | None:
        """The dotted config field a node reads, or None when it is not a config read."""
        if isinstance(node, cst.Name):
            if node.value in self.env:
                return self.config_ref(self.env[node.value])
            return None
        text = self.code(node)
        for root in CONFIG_ROOTS:
            if text == root:
                return ""
        if isinstance(node, cst.Attribute):
            base = self.config_ref(node.value)
            if base is None:
                return None
            return f"{base}.{node.attr.value}" if base else node.attr.value
        if isinstance(node, cst.Subscript) and len(node.slice) == 1:
            index = node.slice[0].slice
            key = string_value(index.value) if isinstance(index, cst.Index) else None
            base = self.config_ref(node.value)
            if base is None or key is None:
                return None
            return f"{base}.{key}" if base else key
        if isinstance(node, cst.Call) and self._callee(node) == "getattr" and len(node.args) >= 2:
            base = self.config_ref(node.args[0].value)
            key = string_value(node.args[1].value)
            if base is None or key is None:
                return None
            return f"{base}.{key}" if base else key
        return None

    def _callee(self, node: cst.Call) -> str:
        return self.code(node.func)

    def getattr_default(self, node: cst.BaseExpression) -> cst.BaseExpression | None:
        if isinstance(node, cst.Call) and self._callee(node) == "getattr" and len(node.args) == 3:
            return node.args[2].value
        return None

    def describe(self, node: cst.BaseExpression) -> str:
        if isinstance(node, cst.Lambda) and not node.params.params:
            return self.describe(node.body)  # a default factory: what it returns
        ref = self.config_ref(node)
        if ref:
            return ref
        if isinstance(node, cst.Name):
            if node.value in self.env:
                return self._wrap(self.env[node.value])
            return node.value
        text = string_value(node)
        if text is not None:
            return text
        number = int_value(node)
        if number is not None:
            return str(number)
        if isinstance(node, cst.Attribute) and self.code(node.value) == "self":
            return node.attr.value
        if isinstance(node, cst.List | cst.Tuple | cst.Set):
            return "[" + ", ".join(self.describe(e.value) for e in node.elements) + "]"
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            return "not " + self._wrap(node.expression)
        if isinstance(node, cst.BooleanOperation):
            op = "and" if isinstance(node.operator, cst.And) else "or"
            return f"{self._wrap(node.left, op)} {op} {self._wrap(node.right, op)}"
        if isinstance(node, cst.Comparison):
            return self._describe_comparison(node)
        if isinstance(node, cst.Call):
            callee = self._callee(node)
            if callee == "hasattr" and len(node.args) == 2:
                base = self.config_ref(node.args[0].value)
                key = string_value(node.args[1].value)
                if base is not None and key is not None:
                    return f"has {base + '.' if base else ''}{key}"
            if callee.startswith("self.") and not node.args:
                return self._describe_method(callee.removeprefix("self."))
        return self.code(node)

    def _describe_method(self, name: str) -> str:
        method = self.methods.get(name)
        if method is not None:
            body = statements(method.body)
            if len(body) == 1 and isinstance(body[0], cst.Return) and body[0].value is not None:
                inner = ExpressionDescriber(self.module, methods=self.methods)
                return inner.describe(body[0].value)
        return f"{name}()"

    def _describe_comparison(self, node: cst.Comparison) -> str:
        parts = [self._wrap(node.left)]
        for target in node.comparisons:
            op = target.operator
            right = target.comparator
            if isinstance(op, cst.In | cst.NotIn) and string_value(node.left) is not None:
                ref = self.config_ref(right)
                if ref is not None and len(node.comparisons) == 1:
                    key = string_value(node.left)
                    prefix = "" if isinstance(op, cst.In) else "not "
                    return f"{prefix}has {ref + '.' if ref else ''}{key}"
            symbol = {
                cst.Equal: "==",
                cst.NotEqual: "!=",
                cst.In: "in",
                cst.NotIn: "not in",
                cst.Is: "is",
                cst.IsNot: "is not",
                cst.LessThan: "<",
                cst.GreaterThan: ">",
                cst.LessThanEqual: "<=",
                cst.GreaterThanEqual: ">=",
            }.get(type(op), self.code(op))
            parts += [symbol, self._wrap(right)]
        return " ".join(parts)

    def _wrap(self, node: cst.BaseExpression, parent_op: str | None = None) -> str:
        text = self.describe(node)
        compound = isinstance(node, cst.BooleanOperation)
        if isinstance(node, cst.Name) and node.value in self.env:
            compound = isinstance(self.env[node.value], cst.BooleanOperation)
        if compound:
            inner = node if isinstance(node, cst.BooleanOperation) else self.env[node.value]  # type: ignore[union-attr]
            op = "and" if isinstance(inner.operator, cst.And) else "or"
            if op != parent_op:
                return f"({text})"
        return text


def text_keeping(text: str, keep: KeepBody) -> str:
    """The text parse_module_keeping hands to libcst, for readers that parse it themselves (so
    that several readers of one file, each given this text, share one parse): `text` with the
    bodies `keep` does not keep as `...`. A file tree-sitter finds errors in comes back whole."""
    root = parse_tree(text)
    if root.has_error:
        return text
    data = code_text(text).encode("utf-8")  # the ranges are those of the blanked tree
    pieces, at = [], 0
    for start, end in _elided_bodies(root, keep):
        pieces += [data[at:start], b"..." + b"\n" * data.count(b"\n", start, end)]
        at = end
    pieces.append(data[at:])
    return b"".join(pieces).decode("utf-8")
