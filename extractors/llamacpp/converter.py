"""llama.cpp's HF -> GGUF converter, read statically: which converter class each
`@ModelBase.register("HfArch", ...)` names, and the `model_arch = gguf.MODEL_ARCH.X` that class
sets or inherits (across modules of the `conversion/` package), plus the GGUF names in
`gguf-py/gguf/constants.py`.

Parsed with tree-sitter-python: the converter is ~10k lines in one file (before 2026-05-15) or
~80 modules (since), and this runs on every pin bump."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from tree_sitter import Node

from apron.extractors.errors import AnchorError, ParseError
from apron.extractors.parsing.python_classes import (
    InconsistentHierarchy,
    base_names,
    c3_linearization,
)
from apron.extractors.parsing.python_imports import absolute_module
from apron.extractors.parsing.python_skeleton import method_skeleton, quotes_only_in_docstring
from apron.extractors.parsing.python_ts import (
    PYTHON,
    assignments,
    code_of,
    defined_name,
    import_source,
    imported_names,
    node_text,
    parse_python,
    string_value,
    top_level_assignments,
    unparenthesize,
    walk,
)
from apron.extractors.parsing.ts_query import typed_descendants
from apron.extractors.records import ExtractionWarning, warning

MMPROJ = "MMPROJ"  # the dummy MODEL_ARCH of vision/audio projectors: registered as ModelType.MMPROJ
_MODEL_ARCH_REF = re.compile(r"^(?:gguf\.)?MODEL_ARCH\.(\w+)$")
ENUM_CLASS = "MODEL_ARCH"
NAMES_DICT = "MODEL_ARCH_NAMES"
ROUTING_MAPS = {"text": "TEXT_MODEL_MAP", "mmproj": "MMPROJ_MODEL_MAP"}


# ---------------------------------------------------------------- gguf-py constants


def gguf_arch_names(text: str, path: str) -> tuple[dict[str, str], list[ExtractionWarning]]:
    """MODEL_ARCH member -> GGUF name, from `MODEL_ARCH_NAMES = {MODEL_ARCH.X: "x", ...}`;
    checked against the members of `class MODEL_ARCH`."""
    root = parse_python(text, path)
    members = _enum_members(root)
    if members is None:
        raise AnchorError(
            f"class {ENUM_CLASS} not found in {path}", paths=[path], anchor=ENUM_CLASS
        )
    mapping = dict(top_level_assignments(root)).get(NAMES_DICT)
    if mapping is None or mapping.type != "dictionary":
        raise AnchorError(f"{NAMES_DICT} dict not found in {path}", paths=[path], anchor=NAMES_DICT)
    names: dict[str, str] = {}
    warnings: list[ExtractionWarning] = []
    for pair in mapping.named_children:
        if pair.type == "comment":
            continue
        key = pair.child_by_field_name("key") if pair.type == "pair" else None
        value = pair.child_by_field_name("value") if pair.type == "pair" else None
        match = _MODEL_ARCH_REF.match(node_text(key)) if key is not None else None
        name = string_value(value) if value is not None else None
        if match is None or name is None:
            warnings.append(
                warning(
                    "unparsed-entry",
                    node_text(pair)[:60],
                    f'an entry of {NAMES_DICT} is not `MODEL_ARCH.X: "name"`',
                    path,
                    NAMES_DICT,
                )
            )
            continue
        names[match.group(1)] = name
    if not names:
        raise AnchorError(f"{NAMES_DICT} in {path} has no entries", paths=[path], anchor=NAMES_DICT)
    for member in sorted(set(names) - set(members)):
        warnings.append(
            warning(
                "name-without-member",
                member,
                f"{NAMES_DICT} names MODEL_ARCH.{member}, which class {ENUM_CLASS} does not define",
                path,
                NAMES_DICT,
            )
        )
    for member in sorted(set(members) - set(names)):
        warnings.append(
            warning(
                "member-without-name",
                member,
                f"MODEL_ARCH.{member} has no {NAMES_DICT} entry",
                path,
                NAMES_DICT,
            )
        )
    return names, warnings


def _enum_members(root: Node) -> list[str] | None:
    for statement in root.named_children:
        if statement.type == "class_definition" and defined_name(statement) == ENUM_CLASS:
            body = statement.child_by_field_name("body")
            return (
                [name for name, _ in assignments(body, include_bare=True)]
                if body is not None
                else []
            )
    return None


# ---------------------------------------------------------------- converter modules


@dataclass(eq=False)
class ConverterClass:
    """A class of a converter module, with what the join needs from its body."""

    qualname: str  # Outer.Inner for nested classes
    module: str
    path: str
    order: int  # source order across all modules read
    bases: tuple[str, ...]
    registered: tuple[str, ...] = ()
    model_arch: str | None = None  # MODEL_ARCH member set in the class body; None when not set
    model_arch_code: str = ""  # the right-hand side when it is not `gguf.MODEL_ARCH.X`
    runtime_archs: tuple[str, ...] = ()  # MODEL_ARCH members assigned to self.model_arch
    delegates: tuple[str, ...] = ()  # class references constructed into self.<attr>
    init_raises: bool = False  # its own __init__ raises unconditionally


@dataclass(eq=False)
class ConverterModule:
    name: str  # "conversion.llama", or "convert_hf_to_gguf"
    path: str
    classes: dict[str, ConverterClass] = field(default_factory=dict)
    imports: dict[str, tuple[str, str]] = field(default_factory=dict)  # local -> (module, name)
    assignments: dict[str, Node] = field(default_factory=dict)


def _definitions(block: Node) -> Iterator[tuple[Node, list[Node]]]:
    """(class or function definition, its decorators) for each definition directly in a block."""
    for statement in block.named_children:
        if statement.type == "decorated_definition":
            definition = statement.child_by_field_name("definition")
            decorators = [c for c in statement.named_children if c.type == "decorator"]
            if definition is not None:
                yield definition, decorators
        elif statement.type in ("class_definition", "function_definition"):
            yield statement, []


def _registered_names(
    decorators: Sequence[Node], where: str, path: str, warnings: list[ExtractionWarning]
) -> tuple[str, ...]:
    names: list[str] = []
    for decorator in decorators:
        call = decorator.named_children[0] if decorator.named_children else None
        if call is None or call.type != "call":
            continue
        function = call.child_by_field_name("function")
        if function is None or not node_text(function).endswith(".register"):
            continue
        arguments = call.child_by_field_name("arguments")
        for argument in arguments.named_children if arguments is not None else []:
            if argument.type == "comment":
                continue
            value = string_value(argument)
            if value is None:
                warnings.append(
                    warning(
                        "unparsed-registration",
                        f"{where}:{node_text(argument)[:40]}",
                        f"{where} registers `{node_text(argument)[:60]}`, "
                        "not a string literal; it is not recorded",
                        path,
                        where,
                    )
                )
                continue
            names.append(value)
    return tuple(names)


def _model_arch_refs(node: Node) -> list[str]:
    refs = []
    for item in walk(node):
        if item.type == "attribute":
            match = _MODEL_ARCH_REF.match(node_text(item))
            if match:
                refs.append(match.group(1))
    return refs


def _scan_method(method: Node, runtime: list[str], delegates: list[str]) -> None:
    """`self.model_arch = <expr>` (following one local name) and `self.x = SomeClass(...)`."""
    body = method.child_by_field_name("body")
    if body is None:
        return
    locals_: dict[str, list[Node]] = {}
    assignments = typed_descendants(PYTHON, body, ("assignment",))
    for assignment in assignments:
        left = assignment.child_by_field_name("left")
        right = assignment.child_by_field_name("right")
        if left is not None and right is not None and left.type == "identifier":
            locals_.setdefault(node_text(left), []).append(right)
    for assignment in assignments:
        left = assignment.child_by_field_name("left")
        right = assignment.child_by_field_name("right")
        if left is None or right is None or left.type != "attribute":
            continue
        target = node_text(left).replace(" ", "")
        if not target.startswith("self."):
            continue
        right = unparenthesize(right)
        if target == "self.model_arch":
            refs = _model_arch_refs(right)
            if right.type == "identifier":
                for value in locals_.get(node_text(right), []):
                    refs += _model_arch_refs(value)
            runtime.extend(refs)
        elif right.type == "call":
            function = right.child_by_field_name("function")
            if function is not None and function.type in ("identifier", "attribute"):
                delegates.append(node_text(function).replace(" ", ""))


def _raises_unconditionally(method: Node) -> bool:
    body = method.child_by_field_name("body")
    return body is not None and any(s.type == "raise_statement" for s in body.named_children)


def _read_class(
    module: ConverterModule,
    node: Node,
    decorators: Sequence[Node],
    prefix: str,
    counter: list[int],
    warnings: list[ExtractionWarning],
) -> None:
    qualname = prefix + defined_name(node)
    bases = tuple(base_names(node))
    counter[0] += 1
    cls = ConverterClass(
        qualname=qualname,
        module=module.name,
        path=module.path,
        order=counter[0],
        bases=bases,
        registered=_registered_names(decorators, qualname, module.path, warnings),
    )
    body = node.child_by_field_name("body")
    runtime: list[str] = []
    delegates: list[str] = []
    if body is not None:
        for name, right in assignments(body, include_bare=True):
            if name != "model_arch" or right is None:
                continue  # `model_arch: gguf.MODEL_ARCH` is an annotation, not a value
            match = _MODEL_ARCH_REF.match(node_text(right).replace(" ", ""))
            cls.model_arch = match.group(1) if match else None
            cls.model_arch_code = "" if match else code_of(right)
        for definition, inner_decorators in _definitions(body):
            if definition.type == "class_definition":
                _read_class(module, definition, inner_decorators, qualname + ".", counter, warnings)
            elif definition.type == "function_definition":
                _scan_method(definition, runtime, delegates)
                if defined_name(definition) == "__init__" and _raises_unconditionally(definition):
                    cls.init_raises = True
    cls.runtime_archs = tuple(dict.fromkeys(runtime))
    cls.delegates = tuple(dict.fromkeys(delegates))
    module.classes[qualname] = cls


# What `_read_class` finds in a method: model_arch named, or a call assigned to an attribute of
# self (`self.x = Cls(...)`, `self.a.b: T = (m.C(`); and whether an `__init__` raises. The
# pattern starts with a literal (searched for quickly) and never backtracks (possessive parts).
_SELF_CALL = re.compile(
    r"self[ \t]*+\.(?:[\w \t.]|\\\n)*+(?::[^=\n]*+)?=(?!=)\s*+\(*+\s*+[\w.]++\s*+\("
)
_INIT = re.compile(r"\s*(?:async\s+)?def\s+__init__\b")


def _method_scanned(definition: str) -> bool:
    """Whether a method's body is kept: it may hold what `_read_class` reads, or the skeleton
    could not be sure where it ends."""
    if not quotes_only_in_docstring(definition):
        return True
    if "raise" in definition and _INIT.match(definition):
        return True
    return "model_arch" in definition or _SELF_CALL.search(definition) is not None


def _parse_module(text: str, path: str) -> Node:
    """The module's tree with the bodies of the methods `_scan_method` finds nothing in elided
    (most of a converter module's bytes); the whole text when that skeleton does not parse."""
    try:
        return parse_python(method_skeleton(text, keep=_method_scanned), path)
    except ParseError:
        return parse_python(text, path)


def read_module(
    text: str,
    path: str,
    module_name: str,
    counter: list[int],
    warnings: list[ExtractionWarning],
) -> ConverterModule:
    """The classes, relative imports and top-level assignments of one converter module."""
    root = _parse_module(text, path)
    module = ConverterModule(name=module_name, path=path)
    for statement in root.named_children:
        if statement.type == "import_from_statement":
            _read_import(module, statement)
    for definition, decorators in _definitions(root):
        if definition.type == "class_definition":
            _read_class(module, definition, decorators, "", counter, warnings)
    module.assignments = dict(top_level_assignments(root))
    return module


def _read_import(module: ConverterModule, statement: Node) -> None:
    source = import_source(statement)
    if source is None:
        return
    level, dotted = source
    is_package = module.path.endswith("__init__.py")
    target = absolute_module(module.name, is_package, level, dotted)
    for local, imported in imported_names(statement):
        module.imports[local] = (target, imported)


# ---------------------------------------------------------------- resolution


@dataclass(frozen=True)
class Registration:
    """One registered HF architecture, resolved as far as the converter source allows."""

    architecture: str
    model_type: str  # "text", "mmproj", or "unknown" when model_arch does not resolve
    converter_class: str
    model_arch: str  # MODEL_ARCH member, "" when unresolved
    model_arch_from: str
    runtime_archs: tuple[str, ...]  # other MODEL_ARCH members chosen at runtime
    problem: str  # "" when model_arch resolved, else why not
    path: str
    module: str
    order: int
    mro: tuple[str, ...] = ()  # the converter classes in Python's method resolution order


class ConverterIndex:
    """All converter modules of one commit, with name resolution and MROs across modules."""

    def __init__(self, modules: Sequence[ConverterModule]) -> None:
        self.modules = {m.name: m for m in modules}
        self.by_name: dict[str, list[ConverterClass]] = {}
        for module in modules:
            for cls in module.classes.values():
                if "." not in cls.qualname:
                    self.by_name.setdefault(cls.qualname, []).append(cls)
        self._mro: dict[tuple[str, str], list[ConverterClass]] = {}

    def resolve(self, module_name: str, dotted: str, depth: int = 0) -> ConverterClass | None:
        """The class a (dotted) name refers to inside a module: its own classes, then its
        imports (followed across modules), then a unique class of that name anywhere."""
        module = self.modules.get(module_name)
        if module is None or depth > 10:
            return None
        first, *rest = dotted.split(".")
        if first in module.classes:
            qualname = ".".join([first, *rest])
            return module.classes.get(qualname)
        if first in module.imports:
            target, name = module.imports[first]
            if target in self.modules:
                return self.resolve(target, ".".join([name, *rest]), depth + 1)
            return None  # imported from outside the converter (torch, gguf, ...)
        candidates = self.by_name.get(dotted, [])
        return candidates[0] if len(candidates) == 1 else None

    def resolve_in_class(self, cls: ConverterClass, dotted: str) -> ConverterClass | None:
        """A name used inside a class body: also tries it as a nested class of the outer class."""
        found = self.resolve(cls.module, dotted)
        if found is None and "." in cls.qualname:
            outer = cls.qualname.rsplit(".", 1)[0]
            found = self.resolve(cls.module, f"{outer}.{dotted}")
        return found

    def bases(self, cls: ConverterClass) -> list[ConverterClass]:
        found = []
        for base in cls.bases:
            resolved = self.resolve_in_class(cls, base)
            if resolved is not None:
                found.append(resolved)
        return found

    def mro(self, cls: ConverterClass) -> list[ConverterClass]:
        """C3 linearization over the bases that resolve to converter classes (a plain
        depth-first order if C3 fails); external bases are skipped."""
        key = (cls.module, cls.qualname)
        if key not in self._mro:
            try:
                found = c3_linearization(
                    cls,
                    self.bases,
                    key=lambda c: (c.module, c.qualname),
                    known=lambda c: self._mro.get((c.module, c.qualname)),
                    keep=lambda c, mro: self._mro.setdefault((c.module, c.qualname), list(mro)),
                )
                self._mro[key] = list(found)
            except InconsistentHierarchy:
                self._mro[key] = _depth_first(self, cls)
        return self._mro[key]

    def model_arch(self, cls: ConverterClass) -> tuple[str | None, ConverterClass | None, str]:
        """(MODEL_ARCH member, the class that sets it, problem) following the MRO."""
        for candidate in self.mro(cls):
            if candidate.model_arch is not None:
                return candidate.model_arch, candidate, ""
            if candidate.model_arch_code:
                return (
                    None,
                    candidate,
                    (
                        f"{candidate.qualname}.model_arch is "
                        f"`{candidate.model_arch_code[:60]}`, not gguf.MODEL_ARCH.X"
                    ),
                )
        unresolved = [
            b for c in self.mro(cls) for b in c.bases if self.resolve_in_class(c, b) is None
        ]
        hint = (
            f" (bases not found in the converter: {', '.join(sorted(set(unresolved)))})"
            if unresolved
            else ""
        )
        return None, None, f"neither {cls.qualname} nor its base classes set model_arch{hint}"

    def runtime_archs(self, cls: ConverterClass, static: str | None) -> tuple[str, ...]:
        """MODEL_ARCH members the class (or an ancestor) may switch to at runtime:
        `self.model_arch = ...` assignments, and converter classes it constructs and delegates to."""
        found: list[str] = []
        for candidate in self.mro(cls):
            found += candidate.runtime_archs
            for reference in candidate.delegates:
                target = self.resolve_in_class(candidate, reference)
                if target is not None and target is not candidate:
                    arch, _, _ = self.model_arch(target)
                    if arch is not None:
                        found.append(arch)
        return tuple(sorted(set(found) - {static} if static else set(found)))


def _depth_first(index: ConverterIndex, cls: ConverterClass) -> list[ConverterClass]:
    order: list[ConverterClass] = []
    stack = [cls]
    while stack:
        current = stack.pop(0)
        if current in order:
            continue
        order.append(current)
        stack = index.bases(current) + stack
    return order


def registrations(index: ConverterIndex) -> list[Registration]:
    """Every (HF architecture, converter class) registration, in source order."""
    found: list[Registration] = []
    classes = sorted(
        (c for m in index.modules.values() for c in m.classes.values()), key=lambda c: c.order
    )
    for cls in classes:
        if not cls.registered:
            continue
        arch, origin, problem = index.model_arch(cls)
        if arch is not None and cls.init_raises:
            problem = (
                f"{cls.qualname}.__init__ raises unconditionally: this converter does not "
                f"convert a {'projector' if arch == MMPROJ else 'text model'} "
                f"(its model_arch {arch} is a placeholder)"
            )
        model_type = "unknown" if arch is None else ("mmproj" if arch == MMPROJ else "text")
        runtime = index.runtime_archs(cls, arch) if arch is not None else ()
        for hf in cls.registered:
            found.append(
                Registration(
                    architecture=hf,
                    model_type=model_type,
                    converter_class=cls.qualname,
                    model_arch=arch or "",
                    model_arch_from=origin.qualname if origin else "",
                    runtime_archs=runtime,
                    problem=problem,
                    path=cls.path,
                    module=cls.module,
                    order=cls.order,
                    mro=tuple(c.qualname for c in index.mro(cls)),
                )
            )
    return found


def routing_maps(module: ConverterModule) -> dict[str, dict[str, str]]:
    """`TEXT_MODEL_MAP` / `MMPROJ_MODEL_MAP` of conversion/__init__.py: HF arch -> module name."""
    maps: dict[str, dict[str, str]] = {}
    for model_type, name in ROUTING_MAPS.items():
        value = module.assignments.get(name)
        if value is None or value.type != "dictionary":
            continue
        routes: dict[str, str] = {}
        for pair in value.named_children:
            if pair.type != "pair":
                continue
            key = pair.child_by_field_name("key")
            target = pair.child_by_field_name("value")
            key_text = string_value(key) if key is not None else None
            target_text = string_value(target) if target is not None else None
            if key_text is not None and target_text is not None:
                routes[key_text] = target_text
        maps[model_type] = routes
    return maps
