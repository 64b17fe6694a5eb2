"""The llama.cpp converter's HF -> GGUF mapping of the hparams: what each converter class's
`set_gguf_parameters` passes to which GGUFWriter method, from which HF config key, and which
GGUF key each writer method writes (gguf-py's gguf_writer.py and constants.py). Read with the
tree-sitter Python layer; a write whose argument is not a plain key read is "unread"."""

from __future__ import annotations

import re

from tree_sitter import Node

from apron.extractors.errors import ParseError
from apron.extractors.llamacpp import py_formula
from apron.extractors.llamacpp.cpp_formula import UnreadableFormula
from apron.extractors.llamacpp.records import ConverterHparams, GgufWriterKey
from apron.extractors.parsing.python_skeleton import method_skeleton, quotes_only_in_docstring
from apron.extractors.parsing.python_ts import (
    code_of,
    methods_of,
    node_text,
    parse_python,
    string_value,
    unparenthesize,
    walk,
)

SET_PARAMS = "set_gguf_parameters"
WRITER_CLASS = "GGUFWriter"
KEYS_CLASS = "Keys"


def _classes(root: Node, prefix: str = ""):
    for statement in root.named_children:
        definition = statement
        if statement.type == "decorated_definition":
            definition = statement.child_by_field_name("definition")
        if definition is not None and definition.type == "class_definition":
            name = prefix + node_text(definition.child_by_field_name("name"))
            yield name, definition
            body = definition.child_by_field_name("body")
            if body is not None:
                yield from _classes(body, name + ".")


def _code(node: Node) -> str:
    """code_of with one blank after every comma (code_of keeps `f(a,b)` and `f(a, b)` apart,
    and a line break after a comma reads as a blank)."""
    return re.sub(r",(?=\S)", ", ", code_of(node))


def _attribute_chain(node: Node) -> str:
    return "".join(node_text(node).split())


def _string_list(node: Node) -> tuple[str, ...] | None:
    node = unparenthesize(node)
    if node.type not in ("list", "tuple"):
        return None
    values = [string_value(c) for c in node.named_children]
    return tuple(values) if all(v is not None for v in values) else None  # type: ignore[return-value]


def _source(arg: Node, walrus: dict[str, Node]) -> tuple[str, ...]:
    """(how, keys...) for one argument of a writer call."""
    arg = unparenthesize(arg)
    if arg.type == "identifier" and node_text(arg) in walrus:
        arg = unparenthesize(walrus[node_text(arg)])
    if arg.type == "named_expression":
        arg = unparenthesize(arg.child_by_field_name("value"))
    if arg.type == "call" and _attribute_chain(arg.child_by_field_name("function")) == (
        "self.find_hparam"
    ):
        args = [a for a in arg.child_by_field_name("arguments").named_children]
        keys = _string_list(args[0]) if args else None
        if keys is not None:
            return ("find_hparam", *keys)
    if arg.type == "subscript":
        value = _attribute_chain(arg.child_by_field_name("value"))
        key = arg.child_by_field_name("subscript")
        if value in ("self.hparams", "hparams") and key is not None:
            text = string_value(key)
            if text is not None:
                return ("hparams", text)
    if arg.type == "call":
        function = _attribute_chain(arg.child_by_field_name("function"))
        call_args = arg.child_by_field_name("arguments").named_children
        if function in ("self.hparams.get", "hparams.get") and len(call_args) in (1, 2):
            text = string_value(call_args[0])
            default = call_args[1] if len(call_args) == 2 else None
            if text is not None and default is None:
                return ("get", text)
            if text is not None and default is not None and default.type == "integer":
                return ("get", text, node_text(default))
    if _attribute_chain(arg) == "self.block_count":
        return ("block_count",)
    if arg.type == "integer":
        return ("literal", node_text(arg))
    try:
        return ("expr", *py_formula.formula(arg, walrus))
    except UnreadableFormula:
        return ("unread", _code(arg))


# `def set_gguf_parameters(` / `def __init__(` at a definition's start: the methods read here
_READ_METHOD = re.compile(rf"[ \t]*(?:async[ \t]+)?def[ \t]+({SET_PARAMS}|__init__)\b")


def _read_method(definition: str) -> bool:
    """Kept whole: a method read here, and one with a triple quote that is not its docstring's
    (the line-based skeleton could take the code after it for a string)."""
    return _READ_METHOD.match(definition) is not None or not quotes_only_in_docstring(definition)


def converter_hparams(text: str, path: str) -> list[ConverterHparams]:
    # the other methods' bodies elided (python_skeleton): they are most of a converter module;
    # the whole text when that skeleton does not parse (its errors are the file's)
    try:
        root = parse_python(method_skeleton(text, keep=_read_method), path)
    except ParseError:
        root = parse_python(text, path)
    rows = []
    for name, cls in _classes(root):
        methods = methods_of(cls)
        method = methods.get(SET_PARAMS)
        block_keys: tuple[str, ...] = ()
        init = methods.get("__init__")
        for node in walk(init) if init is not None else ():
            if (
                node.type == "assignment"
                and _attribute_chain(node.child_by_field_name("left")) == "self.block_count"
            ):
                right = unparenthesize(node.child_by_field_name("right"))
                if (
                    right.type == "call"
                    and _attribute_chain(right.child_by_field_name("function"))
                    == "self.find_hparam"
                ):
                    args = right.child_by_field_name("arguments").named_children
                    block_keys = (_string_list(args[0]) or ()) if args else ()
        # every class is a row, writing or not: a chain needs each class's bases
        superclasses = cls.child_by_field_name("superclasses")
        bases = tuple(
            _attribute_chain(b)
            for b in (superclasses.named_children if superclasses is not None else ())
            if b.type in ("identifier", "attribute")
        )
        writes: list[tuple[str, ...]] = []
        calls_super = False
        pending: list[Node] = []
        walrus: dict[str, Node] = {}
        reassigned: set[str] = set()
        for node in walk(method) if method is not None else ():
            if node.type == "named_expression":
                walrus[node_text(node.child_by_field_name("name"))] = node.child_by_field_name(
                    "value"
                )
            elif node.type in ("assignment", "augmented_assignment"):
                # a local `d_model = self.find_hparam([...])`, when it is its only assignment
                left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
                if left is not None and left.type == "identifier" and right is not None:
                    local = node_text(left)
                    if local in walrus or node.type == "augmented_assignment":
                        reassigned.add(local)
                    walrus[local] = right
                elif left is not None and left.type == "subscript":  # x[i] = ...: x changes
                    reassigned.add(_attribute_chain(left.child_by_field_name("value")))
                elif left is not None and left.type in ("pattern_list", "tuple_pattern"):
                    reassigned.update(node_text(n) for n in left.named_children)
            elif node.type == "for_statement":  # the loop variable takes many values
                target = node.child_by_field_name("left")
                if target is not None:
                    reassigned.update(node_text(n) for n in walk(target) if n.type == "identifier")
            if node.type != "call":
                continue
            function = _attribute_chain(node.child_by_field_name("function"))
            owner, _, verb = function.rpartition(".")
            if verb in ("append", "extend", "insert", "pop", "update", "clear") and owner:
                reassigned.add(owner)  # a local list or dict changed in place
            if function == f"super().{SET_PARAMS}":
                calls_super = True
            elif function.startswith("self.gguf_writer.add_"):
                pending.append(node)
        single = {k: v for k, v in walrus.items() if k not in reassigned}
        for node in pending:
            function = _attribute_chain(node.child_by_field_name("function"))
            args = node.child_by_field_name("arguments").named_children
            method_name = function.rsplit(".", 1)[1]
            source = _source(args[0], single) if len(args) == 1 else ("unread", "")
            if source[0] == "unread" and len(args) == 1:
                source = ("unread", _code(args[0]))
            when = _conditions(node, method, single)
            if source[0] not in ("unread", "expr") and _only_not_none(node, method):
                pass  # `if (x := find/get) is not None:` is what find/get without a value means
            elif when is None:
                source = ("unread", _code(args[0]) if len(args) == 1 else "")
            elif when and source[0] != "unread":
                value = _plain_tokens(source)
                source = (
                    ("expr_when", str(len(when)), *when, *value)
                    if value
                    else ("unread", _code(args[0]))
                )
            writes.append((method_name, *source))
        attributes, hparams_sets = _state(init, method, single)
        rows.append(
            ConverterHparams(
                converter_class=name,
                bases=bases,
                calls_super=calls_super,
                defines=method is not None,
                writes=tuple(writes),
                block_count_keys=block_keys,
                attributes=attributes,
                hparams_sets=hparams_sets,
                path=path,
                symbol=f"{name}.{SET_PARAMS}",
            )
        )
    return rows


def _if_ancestors(node: Node, stop: Node) -> list[tuple[Node, bool]]:
    """The `if` statements around `node` below `stop`: (if node, in its else branch)."""
    found = []
    child, current = node, node.parent
    while current is not None and current != stop:
        if current.type == "if_statement":
            alternative = [c for c in current.children if c.type in ("else_clause", "elif_clause")]
            in_else = any(c.start_byte <= child.start_byte < c.end_byte for c in alternative)
            found.append((current, in_else))
        elif current.type in (
            "for_statement",
            "while_statement",
            "try_statement",
            "with_statement",
        ):
            found.append((current, False))
        child, current = current, current.parent
    return list(reversed(found))


def _plain_tokens(source: tuple[str, ...]) -> tuple[str, ...]:
    """A plain read as expression tokens (a write that needs a condition beside it)."""
    how, *args = source
    if how == "expr":
        return tuple(args)
    if how == "find_hparam":
        return (f"find:{'|'.join(args)}",)
    if how == "hparams":
        return (f"hp:{args[0]}",)
    if how == "get":
        return (*args[1:], f"hpget:{args[0]}/{len(args)}")
    if how == "literal":
        return (args[0],)
    return ()


def _conditions(node: Node, method: Node | None, bound: dict) -> tuple[str, ...] | None:
    """The write's enclosing if-conditions as one token list (() when unconditional); None
    when one is not readable (a loop, an elif chain, a condition of another shape)."""
    if method is None:
        return ()
    tokens: list[str] = []
    for count, (statement, in_else) in enumerate(_if_ancestors(node, method)):
        if statement.type != "if_statement":
            return None
        if in_else and any(c.type == "elif_clause" for c in statement.children):
            return None
        try:
            test = py_formula.formula(statement.child_by_field_name("condition"), bound)
        except UnreadableFormula:
            return None
        tokens.extend(test)
        if in_else:
            tokens.append("!")
        if count:
            tokens.append("&&")
    return tuple(tokens)


def _only_not_none(node: Node, method: Node | None) -> bool:
    """The write sits only under `if (x := ...) is not None:` tests (a find/get that writes
    nothing when the key is absent, which the plain forms already mean)."""
    for statement, in_else in _if_ancestors(node, method) if method is not None else ():
        condition = (
            statement.child_by_field_name("condition") if statement.type == "if_statement" else None
        )
        text = _attribute_chain(condition) if condition is not None else ""
        if in_else or not text.endswith("isnotNone"):
            return False
    return True


def _assigns_self(init: Node | None) -> bool:
    return init is not None and any(
        n.type == "assignment"
        and _attribute_chain(n.child_by_field_name("left")).startswith("self.")
        for n in walk(init)
    )


def _state(
    init: Node | None, method: Node | None, bound: dict
) -> tuple[tuple[tuple[str, ...], ...], tuple[tuple[str, ...], ...]]:
    """(attributes, hparams_sets): each `self.NAME = expr` of __init__ read once, as
    (NAME, *tokens) (no tokens where the value, or where it sits, is not read), and each
    `self.hparams["KEY"] = expr` of __init__ or set_gguf_parameters as (KEY, how, ...) with how
    "expr", "expr_when" or "unread", as in `writes`."""
    attributes: dict[str, tuple[str, ...]] = {}
    sets: dict[str, tuple[str, ...]] = {}
    for scope in (init, method):
        if scope is None:
            continue
        local = dict(bound) if scope is method else {}
        for node in walk(scope):
            if node.type == "augmented_assignment":  # `self.x += ...`: x is not one expression
                chain = _attribute_chain(node.child_by_field_name("left"))
                if scope is init and chain.startswith("self.") and chain.count(".") == 1:
                    attributes[chain[5:]] = ()
                continue
            if node.type != "assignment":
                continue
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if left is None or right is None:
                continue
            chain = _attribute_chain(left)
            plain = not _if_ancestors(node, scope)
            if left.type == "identifier" and scope is init:
                local[node_text(left)] = right
            try:
                tokens = py_formula.formula(right, local) if plain else ()
            except UnreadableFormula:
                tokens = ()
            if left.type == "subscript" and _attribute_chain(left.child_by_field_name("value")) in (
                "self.hparams",
                "hparams",
            ):
                key = string_value(left.child_by_field_name("subscript"))
                when = _conditions(node, scope, local)
                try:
                    value = py_formula.formula(right, local)
                except UnreadableFormula:
                    value = ()
                if key is not None:
                    if key in sets or when is None or not value:
                        sets[key] = ("unread", _code(node))
                    elif when:
                        sets[key] = ("expr_when", str(len(when)), *when, *value)
                    else:
                        sets[key] = ("expr", *value)
            elif scope is init and chain.startswith("self.") and chain.count(".") == 1:
                name = chain[5:]
                attributes[name] = () if name in attributes else tokens
    return (
        tuple((k, *v) for k, v in sorted(attributes.items())),
        tuple((k, *v) for k, v in sorted(sets.items())),
    )


def key_constants(text: str, path: str) -> dict[str, str]:
    """Keys.<Group>.<NAME> -> its string, from constants.py's nested `class Keys`."""
    root = parse_python(text, path)
    out: dict[str, str] = {}
    for name, cls in _classes(root):
        if not name.startswith(KEYS_CLASS):
            continue
        body = cls.child_by_field_name("body")
        for statement in body.named_children if body is not None else ():
            if statement.type != "expression_statement" or not statement.named_children:
                continue
            assign = statement.named_children[0]
            if assign.type != "assignment":
                continue
            value = assign.child_by_field_name("right")
            text_value = string_value(unparenthesize(value)) if value is not None else None
            if text_value is not None:
                out[f"{name}.{node_text(assign.child_by_field_name('left'))}"] = text_value
    return out


def writer_keys(text: str, path: str, constants: dict[str, str]) -> list[GgufWriterKey]:
    """Each GGUFWriter.add_* method whose body writes a Keys.* constant."""
    root = parse_python(text, path)
    rows = []
    for name, cls in _classes(root):
        if name != WRITER_CLASS:
            continue
        for method, node in methods_of(cls).items():
            if not method.startswith("add_"):
                continue
            constant = ""
            for inner in walk(node):
                if inner.type == "attribute":
                    chain = _attribute_chain(inner)
                    if chain.startswith(KEYS_CLASS + ".") and chain.count(".") >= 2:
                        constant = chain.removesuffix(".format")
                        break
            if constant:
                rows.append(
                    GgufWriterKey(
                        method=method,
                        key_constant=constant,
                        key=constants.get(constant, ""),
                        path=path,
                        symbol=f"{WRITER_CLASS}.{method}",
                    )
                )
    return rows
