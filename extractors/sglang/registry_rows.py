"""SGLang registry rows: the `EntryClass` of every module in python/sglang/srt/models/.

SGLang has no literal registry. At import it walks the models package (top-level modules only)
and registers each class named by a module's `EntryClass` under the class's `__name__`.
Statically: find `EntryClass = X` / `EntryClass = [X, Y]`, resolve each name to the class it
binds (a local class, an alias `A = B`, an import from another module), and take the class's
name. Parsed with tree-sitter-python: ~200 files per commit, of which only those whose text
contains `EntryClass` are parsed up front; the others only when an import leads to them."""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from tree_sitter import Node

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.python_imports import imported_path_stem
from apron.extractors.parsing.python_top_level import Outline, top_level_outline
from apron.extractors.parsing.python_ts import (
    import_source,
    imported_names,
    node_text,
    parse_once,
    parse_python,
    undecorated,
    unparenthesize,
)
from apron.extractors.records import ExtractionWarning
from apron.extractors.sglang.module_imports import import_errors
from apron.extractors.sglang.records import SglangRegistryRow

ENTRY = "EntryClass"
PACKAGE_ROOT = "python"  # python/sglang/... is the import root of `sglang`
MAX_HOPS = 8


@dataclass(frozen=True)
class EntryValue:
    """What an EntryClass assignment lists: plain names, and the code of anything else."""

    names: tuple[str, ...]
    problems: tuple[str, ...]


@dataclass
class ModuleScan:
    """What one module binds at top level (including inside top-level if/try blocks).

    `imports` maps local -> (import level, module as written, name). The module's top-level
    `from` imports may be kept as text (`import_text`) and read when `imports` is first used:
    most EntryClass names are classes of their own module."""

    path: str
    classes: set[str] = field(default_factory=set)
    aliases: dict[str, str] = field(default_factory=dict)  # A = B (B a plain name)
    entry: EntryValue | None = None  # the value of the last top-level EntryClass assignment
    nested_entry: bool = False  # an EntryClass assignment inside an if/try block
    import_text: str = ""
    read_imports: dict[str, tuple[int, str, str]] | None = field(default=None, repr=False)

    @property
    def imports(self) -> dict[str, tuple[int, str, str]]:
        if self.read_imports is None:
            self.read_imports = {}
            if self.import_text:
                root = parse_python(self.import_text, self.path, check_depth=False)
                for statement in root.named_children:
                    if statement.type == "import_from_statement":
                        _read_import(self, statement)
        return self.read_imports


def _statements(root: Node):
    """Top-level statements, descending into top-level if/try/with blocks (not defs)."""
    for statement in root.named_children:
        yield statement, True
        if statement.type in ("if_statement", "try_statement", "with_statement"):
            for block in _blocks(statement):
                for inner in block.named_children:
                    yield inner, False


def _blocks(node: Node):
    for child in node.named_children:
        if child.type == "block":
            yield child
        elif child.type in (
            "else_clause",
            "elif_clause",
            "except_clause",
            "finally_clause",
            "except_group_clause",
        ):
            yield from _blocks(child)


def scan_module(text: str, path: str) -> ModuleScan:
    """Classes, aliases, imports and the EntryClass value of one module.

    The scan reads no class body and no function, so it parses the module's top-level outline
    (apron.extractors.parsing.python_top_level), and the full text only when the outline does not parse
    cleanly; its `from` imports are parsed when first used."""
    text = text.lstrip("\ufeff")
    outline = top_level_outline(text)
    root = parse_once(outline.names)
    if root.has_error:
        root = parse_python(text, path, check_depth=False)  # its error, or the full reading
        outline = Outline(text, "")
    scan = ModuleScan(path=path, import_text=outline.imports)
    if not outline.imports:
        scan.read_imports = {}
    for statement, at_top in _statements(root):
        node = undecorated(statement)
        if node.type == "class_definition":
            name = node.child_by_field_name("name")
            if name is not None:
                scan.classes.add(node_text(name))
        elif node.type == "import_from_statement":
            _read_import(scan, node)
        elif node.type == "expression_statement" and node.named_child_count == 1:
            assignment = node.named_children[0]
            if assignment.type != "assignment":
                continue
            left = assignment.child_by_field_name("left")
            right = assignment.child_by_field_name("right")
            if left is None or right is None or left.type != "identifier":
                continue
            name = node_text(left)
            if name == ENTRY:
                if at_top:
                    scan.entry = _entry_value(right)
                else:
                    scan.nested_entry = True
            elif (
                unparenthesize(right).type == "identifier"
                and node_text(unparenthesize(right)) != name
            ):
                scan.aliases[name] = node_text(unparenthesize(right))
    return scan


def _read_import(scan: ModuleScan, node: Node) -> None:
    source = import_source(node)
    if source is None:
        return
    level, module = source
    for local, imported in imported_names(node):
        scan.imports[local] = (level, module, imported)


def _entry_value(node: Node) -> EntryValue:
    """The names an EntryClass value lists. A non-name element is a problem, not a crash."""
    value = unparenthesize(node)
    elements = value.named_children if value.type in ("list", "tuple") else [value]
    names, problems = [], []
    for element in elements:
        element = unparenthesize(element)
        if element.type == "identifier":
            names.append(node_text(element))
        elif element.type == "comment":
            continue
        else:
            problems.append(node_text(element)[:60])
    return EntryValue(tuple(names), tuple(problems))


def entry_names(scan: ModuleScan) -> tuple[list[str], list[str]]:
    """(names listed in EntryClass, problems)."""
    if scan.entry is None:
        return [], []
    return list(scan.entry.names), list(scan.entry.problems)


@dataclass(frozen=True)
class Resolved:
    class_name: str
    class_path: str
    via: tuple[str, ...]


Loader = Callable[[str], ModuleScan | None]


def resolve(name: str, scan: ModuleScan, load: Loader) -> Resolved | None:
    """Follow aliases and imports from `scan` until a class definition; None when lost."""
    via: list[str] = []
    seen: set[tuple[str, str]] = set()
    for _ in range(MAX_HOPS):
        if (scan.path, name) in seen:
            return None
        seen.add((scan.path, name))
        if name in scan.classes:
            return Resolved(class_name=name, class_path=scan.path, via=tuple(via) or ("class",))
        if name in scan.aliases:
            target = scan.aliases[name]
            via.append(f"alias {name} = {target}")
            name = target
            continue
        if name in scan.imports:
            level, module, imported = scan.imports[name]
            stem = imported_path_stem(scan.path, level, module, PACKAGE_ROOT)
            target_scan = load(stem + ".py") or load(stem + "/__init__.py")
            if target_scan is None:
                return None
            via.append(f"import from {target_scan.path}")
            scan, name = target_scan, imported
            continue
        return None
    return None


def may_assign_entry(text: str) -> bool:
    """False when scanning the module cannot find an EntryClass assignment: the scan records one
    only where an identifier's text is `EntryClass`, so that text is in the module's text."""
    return ENTRY in text


def models_registry(
    texts: Mapping[str, str], read: Callable[[str], str | None]
) -> tuple[list[SglangRegistryRow], list[ExtractionWarning]]:
    """Registry rows of the models package: `texts` maps each top-level module to its text,
    `read` gives the text of another file an import leads to (None when it does not exist).
    A module that cannot assign EntryClass registers nothing and is parsed only when an import
    leads to it; the rows are those of scanning every module."""
    scanned = [path for path, text in texts.items() if may_assign_entry(text)]
    scans = {path: scan_module(texts[path], path) for path in scanned}
    others: dict[str, ModuleScan | None] = {}
    read_texts: dict[str, str | None] = {}

    def read_any(path: str) -> str | None:
        if path in texts:
            return texts[path]
        if path not in read_texts:
            read_texts[path] = read(path)
        return read_texts[path]

    def errors_of(path: str) -> tuple[str, ...]:
        return import_errors(texts[path], path, read_any)

    def load(path: str) -> ModuleScan | None:
        if path in scans:
            return scans[path]
        if path not in others:
            text = texts[path] if path in texts else read(path)
            others[path] = scan_module(text, path) if text is not None else None
        return others[path]

    return registry_rows(scans, load, modules=sorted(texts), errors_of=errors_of)


def registry_rows(
    scans: Mapping[str, ModuleScan],
    load: Loader,
    *,
    modules: Sequence[str] | None = None,
    errors_of: Callable[[str], tuple[str, ...]] | None = None,
) -> tuple[list[SglangRegistryRow], list[ExtractionWarning]]:
    """One row per registered architecture, modules in the order SGLang imports them (sorted).
    `modules` names every module looked at, for the error when none registers anything (default:
    those in `scans`); `errors_of` gives a registering module's static import errors (a row of
    a module that does not import is kept and marked, SGLang skips it at run time)."""
    rows: dict[str, SglangRegistryRow] = {}
    warnings: list[ExtractionWarning] = []

    def warn(code: str, subject: str, message: str, path: str) -> None:
        warnings.append(
            ExtractionWarning(code=code, subject=subject, message=message, path=path, symbol=ENTRY)
        )

    for path in sorted(scans):
        scan = scans[path]
        module = posixpath.splitext(posixpath.basename(path))[0]
        if scan.nested_entry and scan.entry is None:
            warn(
                "conditional-entry",
                module,
                f"{ENTRY} is assigned only inside an if/try block; not recorded",
                path,
            )
        names, problems = entry_names(scan)
        failing = "; ".join(errors_of(path)) if errors_of is not None and names else ""
        if failing:
            warn(
                "module-does-not-import",
                module,
                f"{module} does not import at this commit ({failing}): SGLang's registry "
                "skips it, so its architectures are not served",
                path,
            )
        for problem in problems:
            warn(
                "unparsed-entry",
                f"{module}: {problem}",
                f"an {ENTRY} element is not a plain name; not recorded",
                path,
            )
        for name in names:
            found = resolve(name, scan, load)
            if found is None:
                warn(
                    "unresolved-entry",
                    name,
                    f"{ENTRY} name {name} does not resolve to a class definition; recorded "
                    "under the name as written",
                    path,
                )
                found = Resolved(class_name=name, class_path="", via=("unresolved",))
            row = SglangRegistryRow(
                architecture=found.class_name,
                module=module,
                entry_name=name,
                class_name=found.class_name,
                resolved_via=" -> ".join(found.via),
                class_path=found.class_path,
                also_in=(),
                import_error=failing,
                path=path,
            )
            previous = rows.get(row.architecture)
            if previous is not None:
                warn(
                    "duplicate-architecture",
                    row.architecture,
                    f"{row.architecture} is registered by {previous.module} and by {module}; "
                    "SGLang asserts on a duplicate; the first module (import order) is kept",
                    path,
                )
                rows[row.architecture] = previous.model_copy(
                    update={"also_in": (*previous.also_in, module)}
                )
                continue
            rows[row.architecture] = row
    if not rows:
        paths = sorted(scans) if modules is None else list(modules)
        raise AnchorError(f"no module defines {ENTRY}", paths=paths, anchor=ENTRY)
    return list(rows.values()), warnings
