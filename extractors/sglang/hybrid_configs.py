"""SGLang's Mamba / linear-attention hybrids, decided by config class: the functions of
configs/hybrid_arch.py (2026), or the same-named properties of ModelRunner in
model_executor/model_runner.py (earlier).

Each function (`mamba2_config`, `hybrid_gdn_config`, `kimi_linear_config`, ...) returns
the config when `isinstance(config, A | B | ...)` holds; `mambaish_config` is the union that
selects the state pool, and it also consults `_LINEAR_ATTN_MODEL_REGISTRY`, which plugins fill at
run time (not statically known: a warning). Subclasses defined in configs/*.py match too, and
each class's `model_type` comes from its own class attribute. Pure: file texts in, records out."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from tree_sitter import Node

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.python_classes import base_names
from apron.extractors.parsing.python_skeleton import method_skeleton, quotes_only_in_docstring
from apron.extractors.parsing.python_ts import (
    CONTAINERS,
    arguments,
    assignments,
    assignments_and_ifs,
    attribute,
    call_parts,
    callee,
    code_of,
    conjuncts,
    defined_name,
    name_of,
    node_text,
    parse_once,
    parse_python,
    returned,
    single_assignment,
    statements,
    string_value,
    undecorated,
    unparenthesize,
)
from apron.extractors.records import ExtractionWarning, WarnsInFile
from apron.extractors.sglang.records import SglangHybridConfigClass

FACT = "hybrid_config_classes"
UNION = "mambaish_config"
REGISTRY_HELPERS = ("_get_linear_attn_registry_result", "linear_attn_registry_result")
REGISTER_CALL = "register_linear_attn_model("
COMPOUND = (
    "if_statement",
    "for_statement",
    "while_statement",
    "with_statement",
    "try_statement",
    "function_definition",
    "class_definition",
    "decorated_definition",
    "match_statement",
)
CONFIG_SOURCES = {
    "model_config.hf_config": "hf_config",
    "self.model_config.hf_config": "hf_config",
    "model_config.hf_config.get_text_config()": "hf_config.get_text_config()",
    'getattr(config, "text_config", None)': "hf_config.text_config",
    "config.text_config": "hf_config.text_config",
}


@dataclass(frozen=True)
class ConfigClass:
    name: str
    bases: tuple[str, ...]
    model_type: str


def config_classes(texts: Mapping[str, str]) -> dict[str, ConfigClass]:
    """Top-level classes of configs/*.py with their base names and `model_type` attribute."""
    found: dict[str, ConfigClass] = {}
    for path in sorted(texts):
        for cls in _file_classes(texts[path], path):
            found.setdefault(cls.name, cls)
    return found


@lru_cache(maxsize=128)
def _file_classes(text: str, path: str) -> tuple[ConfigClass, ...]:
    """The top-level classes of one config module, in order. Only class headers and
    class-level assignments are read, so the module is parsed with its method bodies elided
    (python_skeleton's line-based pass; a method with a triple quote that is not its docstring's
    is kept, as the pass could take the code after it for a string), or whole when that does
    not parse cleanly."""
    skeleton = method_skeleton(text, keep=lambda method: not quotes_only_in_docstring(method))
    root = parse_once(skeleton)  # read once: not kept in the memo
    if root.has_error:
        root = parse_once(text)
        if root.has_error:
            parse_python(text, path, check_depth=False)  # raises its ParseError
    found = []
    for cls in map(undecorated, root.named_children):
        if cls.type != "class_definition":
            continue
        name = defined_name(cls)
        bases = tuple(name.rsplit(".", 1)[-1] for name in base_names(cls))
        body = cls.child_by_field_name("body")
        model_type = ""
        for key, value in assignments(body) if body is not None else []:
            if key == "model_type" and value is not None:
                model_type = string_value(value) or ""
        found.append(ConfigClass(name, bases, model_type))
    registered = _registered_model_types(root)
    return tuple(
        ConfigClass(c.name, c.bases, c.model_type or registered.get(c.name, "")) for c in found
    )


REGISTRY_TABLE = "_extra_content"  # transformers' CONFIG_MAPPING: model_type -> config class


def _registered_model_types(root: Node) -> dict[str, str]:
    """config class -> the model_type the module registers it under with transformers at import
    (`CONFIG_MAPPING._extra_content["lfm2"] = Lfm2Config`, or `AutoConfig.register("x", C)`):
    the model_type a config.json names to get that class, whatever the class inherits."""
    found: dict[str, str] = {}
    for node in root.named_children:
        assigned = single_assignment(node)
        if assigned is not None and assigned[0].type == "subscript":
            table = attribute(assigned[0].child_by_field_name("value"))
            key = assigned[0].child_by_field_name("subscript")
            cls = name_of(assigned[1])
            if table is not None and table[1] == REGISTRY_TABLE and key is not None and cls:
                model_type = string_value(key)
                if model_type:
                    found.setdefault(cls, model_type)
            continue
        call = node.named_children[0] if node.type == "expression_statement" else None
        if call is not None and call.type == "call" and callee(call) == "AutoConfig.register":
            args = arguments(call)
            if len(args) >= 2 and string_value(args[0]) and name_of(args[1]):
                found.setdefault(str(name_of(args[1])), str(string_value(args[0])))
    return found


def related_config_classes(texts: Mapping[str, str], names: set[str]) -> dict[str, ConfigClass]:
    """config_classes of the files that can bear on `names`: their definitions, the classes
    deriving from them (transitively) and those classes' definitions. A class is defined in a
    file that names it, and derives from a class its file names, so only the files whose text
    contains one of those names are parsed; the first definition of each name (in path order)
    is the one config_classes gives."""
    wanted = set(names)
    while True:
        classes = config_classes({p: t for p, t in texts.items() if any(n in t for n in wanted)})
        reached = {c for name in names for c in _subclasses(classes, name)}
        if reached <= wanted:
            return classes
        wanted |= reached


def _subclasses(classes: Mapping[str, ConfigClass], name: str) -> list[str]:
    """`name` and every class of `classes` that derives from it, nearest first."""
    result, frontier = [name], [name]
    while frontier:
        nxt = sorted(c.name for c in classes.values() if set(c.bases) & set(frontier))
        nxt = [n for n in nxt if n not in result]
        result += nxt
        frontier = nxt
    return result


class _Reader(WarnsInFile):
    def __init__(self, path: str) -> None:
        self.path = path
        self.warnings: list[ExtractionWarning] = []

    def code(self, node: Node) -> str:
        return code_of(node)


def _named_classes(node: Node) -> list[str] | None:
    """`A | B | C`, `(A, B)` or `A` as class names; None for anything else."""
    name = name_of(node)
    if name is not None:
        return [name]
    read = attribute(node)
    if read is not None:
        return [read[1]]
    inner = unparenthesize(node)
    if inner.type == "binary_operator" and node_text(inner.child_by_field_name("operator")) == "|":
        left = _named_classes(inner.child_by_field_name("left"))
        right = _named_classes(inner.child_by_field_name("right"))
        return left + right if left is not None and right is not None else None
    if inner.type in ("tuple", "expression_list"):
        names = [
            _named_classes(e.named_children[0] if e.type == "list_splat" else e)
            for e in inner.named_children
        ]
        return [n for group in names for n in group] if all(g is not None for g in names) else None  # type: ignore[union-attr]
    return None


def _isinstance(node: Node) -> tuple[Node, list[str]] | None:
    parts = call_parts(node)
    if parts is not None and name_of(parts[0]) == "isinstance" and len(parts[1]) == 2:
        classes = _named_classes(parts[1][1])
        if classes is not None:
            return parts[1][0], classes
    return None


def _returns_none(body: list[Node], reader: _Reader) -> bool:
    if not body or body[-1].type != "return_statement":
        return False
    value = returned(body[-1])
    return value is None or reader.code(value) == "None"


def _holds_when(node: Node, reader: _Reader) -> str:
    """When a nested `if` lets the config through: its test, or the negation when its body
    returns None (`if not has_mamba: return None` -> `has_mamba`)."""
    test = reader.code(node.child_by_field_name("condition"))
    if not _returns_none(statements(node.child_by_field_name("consequence")), reader):
        return test
    return test[4:] if test.startswith("not ") else f"not ({test})"


def _conditional_test(node: Node | None) -> Node | None:
    """The test of `a if test else b`, else None."""
    inner = unparenthesize(node) if node is not None else None
    if inner is None or inner.type != "conditional_expression":
        return None
    return inner.named_children[1]


def _statement_code(statement: Node) -> str:
    """The code of a statement of a block, one canonical line (python_ts.code_of)."""
    return code_of(statement)


def _body_condition(body: list[Node], reader: _Reader, raw: bool = False) -> str:
    """A branch body in words: when it lets the config through (with `raw`, the tests as
    written), with the locals they read."""
    where = [reader.code(n) for n in body if single_assignment(n) is not None]
    tests = [
        reader.code(n.child_by_field_name("condition")) if raw else _holds_when(n, reader)
        for n in body
        if n.type == "if_statement"
    ]
    last = body[-1] if body else None
    conditional = _conditional_test(returned(last)) if last is not None else None
    if not tests and conditional is not None:
        tests = [reader.code(conditional)]
    if not tests:
        return " ".join(_statement_code(n) for n in body)
    text = " and ".join(tests)
    return f"{text} (where {'; '.join(where)})" if where else text


def _returns(node: Node):
    """The return statements under a statement, not looking into expressions."""
    if node.type == "return_statement":
        yield node
    elif node.type in CONTAINERS or node.type in COMPOUND or node.type.endswith("_clause"):
        for child in node.children:
            yield from _returns(child)


def _returns_config(body: list[Node], reader: _Reader) -> tuple[bool, str | None]:
    """(whether the branch can return a config, the extra condition as written)."""
    value = returned(body[0]) if len(body) == 1 else None
    if value is not None:
        if name_of(value) == "None":
            return False, None
        conditional = _conditional_test(value)
        if conditional is not None:
            return True, reader.code(conditional)
        return True, None
    condition = _body_condition(body, reader)
    can_return = any(
        (found := returned(n)) is not None and reader.code(found) != "None"
        for s in body
        for n in _returns(s)
    )
    return can_return, condition


def _function_rows(
    reader: _Reader, name: str, fn: Node, classes: Mapping[str, ConfigClass]
) -> list[SglangHybridConfigClass]:
    env: dict[str, str] = {}
    rows: list[SglangHybridConfigClass] = []
    for kind, node in assignments_and_ifs(fn):
        if kind == "assign":
            target, value = node
            if unparenthesize(target).type == "identifier":
                env[node_text(unparenthesize(target))] = reader.code(value)
            continue
        parts = conjuncts(node.child_by_field_name("condition"))
        checks = [(p, _isinstance(p)) for p in parts]
        matched = [(p, c) for p, c in checks if c is not None]
        if len(matched) != 1:
            continue
        part, (subject, written_classes) = matched[0]
        others = [reader.code(p) for p in parts if p.id != part.id]
        body = statements(node.child_by_field_name("consequence"))
        can_return, body_condition = _returns_config(body, reader)
        read = reader.code(subject)
        read = CONFIG_SOURCES.get(env.get(read, read), env.get(read, read))
        if not can_return:
            body_condition = _body_condition(body, reader, raw=True)
            when = " and ".join(others)
            reader.warn(
                "exception-branch",
                f"{name}: {', '.join(written_classes)}",
                f"{name} returns None for {', '.join(written_classes)}"
                + (f" when {when}" if when else "")
                + (f" and {body_condition}" if body_condition else "")
                + ": an exception the class rows below do not carry",
                name,
            )
            continue
        condition = " and ".join([*others, *([body_condition] if body_condition else [])]) or None
        for written in written_classes:
            for cls in _subclasses(classes, written):
                rows.append(
                    SglangHybridConfigClass(
                        function=name,
                        config_class=cls,
                        via="" if cls == written else written,
                        model_type=classes[cls].model_type if cls in classes else "",
                        config_read=read,
                        condition=condition,
                        path=reader.path,
                        symbol=name,
                    )
                )
            if written not in classes:
                reader.warn(
                    "class-not-in-configs",
                    written,
                    f"{written} is not defined in configs/*.py: its model_type and subclasses "
                    "are not known",
                    name,
                )
    return rows


def _functions(root: Node, class_name: str | None) -> dict[str, Node]:
    """name -> the function (its decorators included) of the module, or the methods of its
    last top-level class `class_name`; the last of one name wins, at the place of the first."""
    if class_name is None:
        members = root.named_children
    else:
        classes = {
            defined_name(c): c
            for c in map(undecorated, root.named_children)
            if c.type == "class_definition"
        }
        cls = classes.get(class_name)
        members = cls.child_by_field_name("body").named_children if cls is not None else []
    found: dict[str, Node] = {}
    for member in members:
        if undecorated(member).type == "function_definition":
            found[defined_name(undecorated(member))] = member
    return found


def _descendants(node: Node):
    """Every node under `node`, depth first, in source order, `node` included."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def _union_members(reader: _Reader, fn: Node) -> list[str]:
    """What `mambaish_config` combines: `f(model_config)` calls or `self.f` properties."""
    members: list[str] = []
    for node in _descendants(fn):
        if node.type == "call":
            called = name_of(node.child_by_field_name("function"))
            if called is not None:
                members.append(called)
        elif node.type == "attribute":
            read = attribute(node)
            if read is not None and reader.code(read[0]) == "self":
                members.append(read[1])
    return members


def hybrid_config_classes(
    text: str,
    path: str,
    config_texts: Mapping[str, str],
    model_texts: Mapping[str, str],
    class_name: str | None = None,
) -> tuple[list[SglangHybridConfigClass], list[ExtractionWarning]]:
    """Every config class a hybrid-arch function accepts, and the union `mambaish_config`
    (functions of the module, or methods of `class_name` in the older layout)."""
    root = parse_python(text, path)
    reader = _Reader(path)
    functions = _functions(root, class_name)
    if UNION not in functions:
        owner = f"{class_name}." if class_name else ""
        raise AnchorError(
            f"function {owner}{UNION} not found in {path}",
            paths=[path],
            anchor=f"def {owner}{UNION}(...)",
        )
    members = _union_members(reader, functions[UNION])
    checked = [n for n in functions if n != UNION and (class_name is None or n in members)]
    tested = {
        written
        for name in checked
        for node in _descendants(functions[name])
        if node.type == "call" and (found := _isinstance(node)) is not None
        for written in found[1]
    }
    classes = related_config_classes(config_texts, tested)
    by_function: dict[str, list[SglangHybridConfigClass]] = {
        name: _function_rows(reader, name, undecorated(functions[name]), classes)
        for name in checked
    }
    union: list[SglangHybridConfigClass] = []
    for called in members:
        if called in REGISTRY_HELPERS:
            registrations = sum(t.count(REGISTER_CALL) for t in model_texts.values())
            reader.warn(
                "run-time-registry",
                UNION,
                f"{UNION} also accepts any config class registered in "
                "_LINEAR_ATTN_MODEL_REGISTRY by register_linear_attn_model(...) at run time "
                f"(plugins); not statically known ({registrations} call(s) in the models "
                "package)",
                UNION,
            )
        for row in by_function.get(called, ()):
            union.append(row.model_copy(update={"function": UNION, "via": f"{called}()"}))
    rows = [r for name in sorted(by_function) for r in by_function[name]]
    rows += union
    if not rows:
        raise AnchorError(
            f"no isinstance(config, ...) check in the functions of {path}",
            paths=[path],
            anchor="isinstance(config, <ConfigClass> | ...)",
        )
    # one row per class and config tested: a function may test a class on the config and again
    # on its text_config (kimi_linear_config), and each is a way in
    unique: dict[tuple[str, str, str], SglangHybridConfigClass] = {}
    for row in rows:
        unique.setdefault((row.function, row.config_class, row.config_read), row)
    for name in sorted({r.config_class for r in unique.values() if not r.model_type}):
        if name in classes:
            reader.warn(
                "inherited-model-type",
                name,
                f"{name} sets no model_type itself: it inherits one from "
                f"{', '.join(classes[name].bases) or 'its bases'}, outside configs/",
                UNION,
            )
    return list(unique.values()), reader.warnings


def config_module_paths(paths: list[str], directory: str) -> list[str]:
    """The configs/*.py files directly in `directory` (not hybrid_arch.py itself)."""
    return [
        p
        for p in paths
        if posixpath.dirname(p) == directory
        and p.endswith(".py")
        and not p.endswith("/hybrid_arch.py")
    ]
