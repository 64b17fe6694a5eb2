"""The llama.cpp converter's HF -> GGUF mapping of the hparams: what each converter class's
`set_gguf_parameters` passes to which GGUFWriter method, from which HF config key, and which
GGUF key each writer method writes (gguf-py's gguf_writer.py and constants.py). Read with the
tree-sitter Python layer; a write whose argument is not a plain key read is "unread"."""

from __future__ import annotations

import re

from tree_sitter import Node

from apron.extractors.errors import ParseError
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
        if method is None and not block_keys:
            continue
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
            if node.type != "call":
                continue
            function = _attribute_chain(node.child_by_field_name("function"))
            if function == f"super().{SET_PARAMS}":
                calls_super = True
            elif function.startswith("self.gguf_writer.add_"):
                pending.append(node)
        for node in pending:
            function = _attribute_chain(node.child_by_field_name("function"))
            args = node.child_by_field_name("arguments").named_children
            method_name = function.rsplit(".", 1)[1]
            single = {k: v for k, v in walrus.items() if k not in reassigned}
            source = _source(args[0], single) if len(args) == 1 else ("unread", "")
            if source[0] == "unread" and len(args) == 1:
                source = ("unread", _code(args[0]))
            writes.append((method_name, *source))
        rows.append(
            ConverterHparams(
                converter_class=name,
                bases=bases,
                calls_super=calls_super,
                defines=method is not None,
                writes=tuple(writes),
                block_count_keys=block_keys,
                path=path,
                symbol=f"{name}.{SET_PARAMS}",
            )
        )
    return rows


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
