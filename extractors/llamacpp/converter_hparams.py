"""The llama.cpp converter's HF -> GGUF mapping of the hparams: what each converter class's
`set_gguf_parameters` passes to which GGUFWriter method, from which HF config key, and which
GGUF key each writer method writes (gguf-py's gguf_writer.py and constants.py). Read with the
tree-sitter Python layer; a write whose argument is not a plain key read is "unread"."""

from __future__ import annotations

import re

from tree_sitter import Node

from apron.extractors.errors import ParseError
from apron.extractors.llamacpp import py_body, py_formula
from apron.extractors.llamacpp.cpp_formula import UnreadableFormula
from apron.extractors.llamacpp.records import ConverterHparams, GgufWriterKey
from apron.extractors.parsing.python_classes import base_names
from apron.extractors.parsing.python_describe import string_sequence
from apron.extractors.parsing.python_skeleton import method_skeleton, quotes_only_in_docstring
from apron.extractors.parsing.python_ts import (
    code_of,
    defined_name,
    methods_of,
    node_text,
    parse_python,
    string_value,
    undecorated,
    unparenthesize,
    walk,
)

SET_PARAMS = "set_gguf_parameters"
WRITER_CLASS = "GGUFWriter"
KEYS_CLASS = "Keys"


def _classes(root: Node, prefix: str = ""):
    for statement in root.named_children:
        definition = undecorated(statement)
        if definition.type == "class_definition":
            name = prefix + defined_name(definition)
            yield name, definition
            body = definition.child_by_field_name("body")
            if body is not None:
                yield from _classes(body, name + ".")


def _code(node: Node) -> str:
    """code_of with one blank after every comma (code_of keeps `f(a,b)` and `f(a, b)` apart,
    and a line break after a comma reads as a blank)."""
    return re.sub(r",(?=\S)", ", ", code_of(node))


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
                and code_of(node.child_by_field_name("left")) == "self.block_count"
            ):
                right = unparenthesize(node.child_by_field_name("right"))
                if (
                    right.type == "call"
                    and code_of(right.child_by_field_name("function")) == "self.find_hparam"
                ):
                    args = right.child_by_field_name("arguments").named_children
                    block_keys = (_strings(args[0]) or ()) if args else ()
        # every converter class is a row, writing or not: a chain needs each class's bases
        bases = tuple(base_names(cls))
        reading = py_body.read_body(method)
        writes = [_write(w) for w in reading.writes]
        init_reading = py_body.read_body(init)
        hparams_sets = tuple(
            _assignment(a, with_op=False)
            for a in (*init_reading.hparams_sets, *reading.hparams_sets)
        )
        attributes = tuple(
            (*_class_attributes(cls), *(_assignment(a) for a in init_reading.attributes))
        )
        calls_super = reading.calls_super
        calls_base = reading.calls_base
        if not (bases or method is not None or init is not None or attributes):
            continue  # neither a converter class nor a mixin of one: nothing a chain reads
        rows.append(
            ConverterHparams(
                converter_class=name,
                bases=bases,
                calls_super=calls_super,
                calls_base=calls_base,
                defines=method is not None,
                defines_find_hparam="find_hparam" in methods,
                writes=tuple(writes),
                block_count_keys=block_keys,
                attributes=attributes,
                hparams_sets=hparams_sets,
                path=path,
                symbol=f"{name}.{SET_PARAMS}",
            )
        )
    return rows


def _plain(tokens: tuple[str, ...]) -> tuple[str, ...] | None:
    """The plain forms a write's tokens may be: (how, keys...), or None."""
    if len(tokens) == 1:
        token = tokens[0]
        kind, _, rest = token.partition(":")
        if kind == "hp":
            return ("hparams", rest)
        if kind in ("find", "findopt"):
            return ("find_hparam", *rest.split("|"))
        if kind == "hpget" and rest.endswith("/1"):
            return ("get", rest[:-2])
        if token == "self:block_count":
            return ("block_count",)
        if token.lstrip("-").isdigit():
            return ("literal", token)
    if len(tokens) == 2 and tokens[0].isdigit() and tokens[1].startswith("hpget:"):
        if tokens[1].endswith("/2"):
            return ("get", tokens[1][6:-2], tokens[0])
    return None


def _write(write: py_body.Write) -> tuple[str, ...]:
    """(writer method, how, ...) of one GGUFWriter call (see ConverterHparams)."""
    function = code_of(write.call.child_by_field_name("function"))
    method = function.rsplit(".", 1)[1]
    args = write.call.child_by_field_name("arguments").named_children
    if len(args) != 1:
        return (method, "unread", _code(write.call.child_by_field_name("arguments")))
    condition = write.condition
    if condition is None:  # in a loop or a with/try block
        return (method, "unread", _code(args[0]))
    try:
        tokens = py_formula.formula(args[0], write.values)
    except UnreadableFormula:
        if not condition:
            return (method, "unread", _code(args[0]))
        tokens = (f"undef:{_code(args[0])[:60]}",)  # unknown where the condition holds
    plain = _plain(tokens)
    optional = len(tokens) == 1 and tokens[0].startswith(("findopt:", "hpget:"))
    if plain is not None and (not condition or (optional and condition == (*tokens, "None", "!="))):
        return (method, *plain)  # `if (x := find/get) is not None:` is what find/get mean
    if not condition:
        return (method, "expr", *tokens)
    return (method, "expr_when", str(len(condition)), *condition, *tokens)


def _assignment(a: py_body.Assignment, with_op: bool = True) -> tuple[str, ...]:
    """(NAME, [op,] how, ...): how "expr", "expr_when" or "unread" (its code)."""
    head = (a.name, a.op) if with_op else (a.name,)
    if a.condition is None or a.value is None or (not with_op and a.op != "="):
        return (*head, "unread", a.code)
    if not a.condition:
        return (*head, "expr", *a.value)
    return (*head, "expr_when", str(len(a.condition)), *a.condition, *a.value)


def _class_attributes(cls: Node) -> list[tuple[str, ...]]:
    """`NAME = value` / `NAME: T = value` in the class body: defaults of self.NAME."""
    body = cls.child_by_field_name("body")
    out = []
    for statement in body.named_children if body is not None else ():
        if statement.type != "expression_statement" or not statement.named_children:
            continue
        assign = statement.named_children[0]
        left, right = assign.child_by_field_name("left"), assign.child_by_field_name("right")
        if (
            assign.type != "assignment"
            or left is None
            or right is None
            or left.type != "identifier"
        ):
            continue
        try:
            out.append((node_text(left), "=", "expr", *py_formula.formula(right)))
        except UnreadableFormula:
            continue  # model_arch = gguf.MODEL_ARCH.X and the like: read elsewhere
    return out


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
                    chain = code_of(inner)
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


def _strings(node: Node) -> tuple[str, ...] | None:
    """The strings of a literal list or tuple of string literals; else None."""
    if unparenthesize(node).type not in ("list", "tuple"):
        return None
    found = string_sequence(node)
    return tuple(found) if found is not None else None
