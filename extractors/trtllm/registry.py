"""TensorRT-LLM registered architectures: `@register_auto_model("<Arch>")` on model classes in
tensorrt_llm/_torch/models/modeling_*.py (PyTorch backend). Parsed with tree-sitter-python.

The registered string is what `config.architectures` must contain; it can differ from the
class name (`"DeciLMForCausalLM"` on `NemotronNASForCausalLM`), so both are recorded. The
call form `register_auto_model("X")(Cls)` is read too.

A string registered by two modules is resolved the engine's way: by `MODEL_ARCH_TO_MODULE` in
`_arch_index.py` where that lazy-loading index exists (the module it names is the one imported
for the architecture), else by the import order of the package `__init__.py` (the registry is a
dict, so the module imported last overwrites the others)."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence

from tree_sitter import Node

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.python_ts import (
    import_source,
    node_text,
    parse_python,
    string_value,
    top_level_assignments,
)
from apron.extractors.records import ExtractionWarning, warning
from apron.extractors.trtllm.records import TrtllmRegisteredArchitecture

DECORATOR = "register_auto_model"
ARCH_INDEX = "MODEL_ARCH_TO_MODULE"
VISION_ENCODER = re.compile(r"Vision(?:Model|Tower|Encoder|Transformer)$")


def _registered_string(call: Node) -> tuple[str | None, bool]:
    """(string, is_register_call) for `register_auto_model("X")` / `x.register_auto_model("X")`."""
    if call.type != "call":
        return None, False
    function = call.child_by_field_name("function")
    if function is None or node_text(function).rsplit(".", 1)[-1] != DECORATOR:
        return None, False
    arguments = call.child_by_field_name("arguments")
    args = [
        a
        for a in (arguments.named_children if arguments is not None else [])
        if a.type != "comment"
    ]
    if len(args) != 1:
        return None, True
    return string_value(args[0]), True


def _walk_classes(node: Node):
    """(decorators, class node) for every class at any depth outside function bodies."""
    for child in node.named_children:
        if child.type == "decorated_definition":
            definition = child.child_by_field_name("definition")
            decorators = [d for d in child.named_children if d.type == "decorator"]
            if definition is not None and definition.type == "class_definition":
                yield decorators, definition
        elif child.type == "class_definition":
            yield [], child
        elif child.type in (
            "if_statement",
            "try_statement",
            "block",
            "else_clause",
            "elif_clause",
            "except_clause",
            "finally_clause",
            "with_statement",
        ):
            yield from _walk_classes(child)


def module_registrations(
    text: str, path: str
) -> tuple[list[tuple[str, str]], list[ExtractionWarning]]:
    """(registered string, class name) pairs of one module, in source order, and problems."""
    root = parse_python(text.lstrip("\ufeff"), path)
    found: list[tuple[str, str]] = []
    warnings: list[ExtractionWarning] = []

    def warn(subject: str, message: str) -> None:
        warnings.append(
            warning(
                code="unparsed-registration",
                subject=subject,
                message=message,
                path=path,
                symbol=DECORATOR,
            )
        )

    for decorators, cls in _walk_classes(root):
        name_node = cls.child_by_field_name("name")
        class_name = node_text(name_node) if name_node is not None else "?"
        # decorators apply bottom-up; the order of registration is bottom-up too
        for decorator in reversed(decorators):
            expression = decorator.named_children[0] if decorator.named_children else None
            if expression is None:
                continue
            value, is_register = _registered_string(expression)
            if not is_register:
                continue
            if value is None:
                warn(
                    class_name,
                    f"@{DECORATOR} on {class_name} does not take one plain string; not recorded",
                )
                continue
            found.append((value, class_name))
    for statement in root.named_children:
        if statement.type != "expression_statement" or not statement.named_children:
            continue
        call = statement.named_children[0]
        if call.type != "call":
            continue
        inner = call.child_by_field_name("function")
        if inner is None:
            continue
        value, is_register = _registered_string(inner)
        if not is_register:
            continue
        arguments = call.child_by_field_name("arguments")
        targets = [
            a
            for a in (arguments.named_children if arguments is not None else [])
            if a.type == "identifier"
        ]
        if value is None or len(targets) != 1:
            warn(
                node_text(call)[:60],
                f"a {DECORATOR}(...)(...) call is not "
                '`register_auto_model("X")(Class)`; not recorded',
            )
            continue
        found.append((value, node_text(targets[0])))
    return found, warnings


def arch_index(text: str, path: str) -> dict[str, str]:
    """MODEL_ARCH_TO_MODULE of `_arch_index.py`: architecture -> providing modeling_* module."""
    root = parse_python(text, path)
    value = dict(top_level_assignments(root)).get(ARCH_INDEX)
    if value is None or value.type != "dictionary":
        raise AnchorError(
            f"{ARCH_INDEX} dict not found in {path}", paths=[path], anchor=f"{ARCH_INDEX} = {{...}}"
        )
    index: dict[str, str] = {}
    for pair in value.named_children:
        if pair.type != "pair":
            continue
        key = pair.child_by_field_name("key")
        module = pair.child_by_field_name("value")
        arch = string_value(key) if key is not None else None
        target = string_value(module) if module is not None else None
        if arch is not None and target is not None:
            index[arch] = target
    return index


def import_order(text: str, path: str) -> list[str]:
    """The sibling modules the package `__init__.py` imports, in order (`from .modeling_x import`)."""
    root = parse_python(text, path)
    order: list[str] = []

    def visit(node: Node) -> None:
        for child in node.named_children:
            if child.type == "import_from_statement":
                source = import_source(child)
                name = source[1].split(".")[0] if source is not None and source[0] == 1 else ""
                if name and name not in order:
                    order.append(name)
            elif child.type in ("if_statement", "try_statement", "block", "else_clause"):
                visit(child)

    visit(root)
    return order


def _component(architecture: str, class_name: str) -> str:
    if VISION_ENCODER.search(architecture) or VISION_ENCODER.search(class_name):
        return "vision-encoder"
    return ""


def _winner(
    architecture: str,
    found: list[tuple[str, str, str]],
    index: Mapping[str, str] | None,
    order: Sequence[str],
) -> tuple[int, str]:
    """(position in `found` of the registration the engine uses, how that was decided)."""
    modules = [module for module, _, _ in found]
    if index is not None and index.get(architecture) in modules:
        return modules.index(index[architecture]), f"{ARCH_INDEX} in _arch_index.py"
    if order and all(m in order for m in modules):
        last = max(range(len(modules)), key=lambda i: order.index(modules[i]))
        return last, "the module __init__.py imports last overwrites the others"
    return 0, "first by path: neither _arch_index.py nor the import order of __init__.py decides"


def registered_architectures(
    texts: Mapping[str, str],
    *,
    index: Mapping[str, str] | None = None,
    index_path: str = "",
    order: Sequence[str] = (),
) -> tuple[list[TrtllmRegisteredArchitecture], list[ExtractionWarning]]:
    """One row per registered string over all modules; a string registered twice is resolved
    the engine's way (see the module docstring) and is a warning."""
    found: dict[str, list[tuple[str, str, str]]] = {}
    warnings: list[ExtractionWarning] = []
    for path in sorted(texts):
        module = posixpath.splitext(posixpath.basename(path))[0]
        registrations, problems = module_registrations(texts[path], path)
        warnings += problems
        for architecture, class_name in registrations:
            found.setdefault(architecture, []).append((module, class_name, path))
    rows: list[TrtllmRegisteredArchitecture] = []
    for architecture, registrations in found.items():
        resolved_by = ""
        chosen = 0
        if len(registrations) > 1:
            chosen, resolved_by = _winner(architecture, registrations, index, order)
            where = ", ".join(f"{m}.{c}" for m, c, _ in registrations)
            module, class_name, path = registrations[chosen]
            warnings.append(
                warning(
                    code="duplicate-architecture",
                    subject=architecture,
                    message=f"{architecture} is registered on {where}; the engine uses "
                    f"{module}.{class_name} ({resolved_by})",
                    path=path,
                    symbol=DECORATOR,
                )
            )
        module, class_name, path = registrations[chosen]
        if index is not None and index.get(architecture) not in (None, module):
            warnings.append(
                warning(
                    code="index-disagrees",
                    subject=architecture,
                    message=f"{ARCH_INDEX} names {index[architecture]} for {architecture}, "
                    f"but only {module} registers it",
                    path=index_path,
                    symbol=ARCH_INDEX,
                )
            )
        rows.append(
            TrtllmRegisteredArchitecture(
                architecture=architecture,
                class_name=class_name,
                module=module,
                also_in=tuple(
                    f"{m}.{c}" for i, (m, c, _) in enumerate(registrations) if i != chosen
                ),
                resolved_by=resolved_by,
                component=_component(architecture, class_name),
                path=path,
            )
        )
    if index is not None:
        warnings += [
            warning(
                code="not-in-index",
                subject=row.architecture,
                message=f"{row.architecture} is registered in {row.module} but {ARCH_INDEX} does "
                "not list it: the lazy model zoo imports its module only for another reason",
                path=index_path,
                symbol=ARCH_INDEX,
            )
            for row in rows
            if row.architecture not in index
        ]
        warnings += [
            warning(
                code="index-not-registered",
                subject=architecture,
                message=f"{ARCH_INDEX} lists {architecture} ({module}), which no decorator "
                "registers",
                path=index_path,
                symbol=ARCH_INDEX,
            )
            for architecture, module in sorted(index.items())
            if architecture not in found
        ]
    return rows, warnings
