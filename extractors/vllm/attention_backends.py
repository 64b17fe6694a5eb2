"""vLLM's CUDA attention backends and the KV block size each gives: the priority lists of
cuda.py's _get_backend_priorities, the backend classes AttentionBackendEnum names, their
get_supported_kernel_block_sizes, and the block size get_preferred_block_size picks from the
default. Pure: file texts in, records out."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import libcst as cst
from tree_sitter import Node

from extractors.errors import AnchorError
from extractors.parsing.python_cst import (
    class_methods,
    compact_code,
    statements,
    string_value,
    top_level_classes,
)
from extractors.parsing.python_ts import node_text, parse_tree
from extractors.vllm.cst_outline import parse_outline
from extractors.vllm.records import AttentionBackendChoice
from extractors.vllm.serving_rules import call_name, class_named, literal_text

FACT = "attention_backends"
CUDA_PATH = "vllm/platforms/cuda.py"
PRIORITIES = "_get_backend_priorities"
REGISTRY_PATH = "vllm/v1/attention/backends/registry.py"
ENUM = "AttentionBackendEnum"
BASE_PATH = "vllm/v1/attention/backend.py"
BASE_CLASS = "AttentionBackend"
KERNEL_SIZES = "get_supported_kernel_block_sizes"
PREFERRED = "get_preferred_block_size"
READS = (
    CUDA_PATH,
    REGISTRY_PATH,
    BASE_PATH,
    "vllm/v1/attention/backends/*.py",
    "vllm/v1/attention/backends/mla/*.py",
    "vllm/model_executor/layers/attention/*.py",
)
# Platform probes on `current_platform` on a CUDA machine; any other probe is unknown.
# The method bodies read in a backend module: the kernel sizes and preferred block of every
# class of a backend's MRO, and the base class's supports_block_size (base_rule_holds; one
# shape for backend.py, which both read).
BACKEND_METHODS = frozenset({KERNEL_SIZES, PREFERRED, "supports_block_size"})
CUDA_PROBES = {"is_cuda": True, "is_cuda_alike": True, "is_rocm": False, "is_xpu": False}

Reader = Callable[[str], str | None]


class Branch:
    """One `return [AttentionBackendEnum.X, ...]` of the priority function and its path."""

    __slots__ = ("backends", "use_mla", "words", "default")

    def __init__(self, backends: list[str], use_mla: bool, words: str, default: bool) -> None:
        self.backends, self.use_mla, self.words, self.default = backends, use_mla, words, default


def _branches(module: cst.Module, body: cst.BaseSuite, path: tuple[tuple[str, bool], ...]):
    """Every list return under `body`, with the if-tests (code, holds) that lead to it."""
    for statement in statements(body):
        if isinstance(statement, cst.Return) and isinstance(statement.value, cst.List):
            names = [
                e.value.attr.value
                for e in statement.value.elements
                if isinstance(e, cst.Element)
                and isinstance(e.value, cst.Attribute)
                and isinstance(e.value.value, cst.Name)
                and e.value.value.value == ENUM
            ]
            yield names, path
        elif isinstance(statement, cst.If):
            yield from _if_branches(module, statement, path)


def _if_branches(module: cst.Module, node: cst.If, path: tuple[tuple[str, bool], ...]):
    test = compact_code(module, node.test)
    yield from _branches(module, node.body, (*path, (test, True)))
    if isinstance(node.orelse, cst.If):
        yield from _if_branches(module, node.orelse, (*path, (test, False)))
    elif isinstance(node.orelse, cst.Else):
        yield from _branches(module, node.orelse.body, (*path, (test, False)))


def _words(path: tuple[tuple[str, bool], ...]) -> str:
    parts = [
        code if holds else (f"not {code}" if code.isidentifier() else f"not ({code})")
        for code, holds in path
    ]
    return " and ".join(parts) or "always"


def priority_branches(text: str, path: str) -> list[Branch]:
    """The branches of _get_backend_priorities; `default` marks the branch reached when every
    test other than use_mla fails (the GPUs no test singles out)."""
    module = parse_outline(text, path, lambda qualname, _code: qualname == PRIORITIES)
    function = next(
        (s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == PRIORITIES),
        None,
    )
    if function is None:
        raise AnchorError(f"{PRIORITIES} is not defined in {path}", paths=[path], anchor=PRIORITIES)
    found = []
    for names, conditions in _branches(module, function.body, ()):
        mla = [holds for code, holds in conditions if code == "use_mla"]
        if not names or not mla:
            continue
        others = [holds for code, holds in conditions if code != "use_mla"]
        found.append(Branch(names, mla[0], _words(conditions), not any(others)))
    if not found:
        raise AnchorError(
            f"{PRIORITIES} returns no {ENUM} list under `if use_mla` in {path}",
            paths=[path],
            anchor=f"{PRIORITIES}: return [{ENUM}.X, ...]",
        )
    return found


def enum_class_paths(text: str, path: str) -> dict[str, str]:
    """AttentionBackendEnum member -> the dotted class path it names (no body is read)."""
    module = parse_outline(text, path, lambda _qualname, _code: False, class_statements=True)
    cls = class_named(module, ENUM, path)
    found = {}
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    for statement in body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign) and isinstance(small.targets[0].target, cst.Name):
                    value = small.value
                    if isinstance(value, cst.ConcatenatedString | cst.SimpleString):
                        dotted = string_value(value)
                        if dotted:
                            found[small.targets[0].target.value] = dotted
    return found


def module_path(dotted: str) -> str:
    """`vllm.v1.attention.backends.flash_attn` -> `vllm/v1/attention/backends/flash_attn.py`."""
    return dotted.replace(".", "/") + ".py"


def _compact(code: str) -> str:
    """compact_code's spelling of a node from its source text."""
    text = " ".join(code.split())
    return re.sub(r"\s+([)\],])", r"\1", re.sub(r"([(\[])\s+", r"\1", text))


def _suite_statements(clause: Node, block: Node | None) -> Iterator[Node]:
    """The statements of a clause's indented block; none for a body on the header's line
    (`if x: import y`, whose statements are not lines of their own)."""
    if block is None or block.type != "block":
        return
    colons = [c for c in clause.children if c.type == ":" and c.end_byte <= block.start_byte]
    if colons:
        source = clause.text or b""
        gap = source[colons[-1].end_byte - clause.start_byte : block.start_byte - clause.start_byte]
        if b"\n" not in gap.replace(b"\\\r\n", b"").replace(b"\\\n", b""):
            return
    yield from _module_scope_statements(block)


def _module_scope_statements(block: Node) -> Iterator[Node]:
    """The statements that run at module scope, in order: top-level ones and those inside
    top-level if/try/with blocks, not those inside functions or classes (a base class name is
    looked up in the module's namespace)."""
    for statement in block.named_children:
        kind = statement.type
        if kind == "if_statement":
            yield from _suite_statements(statement, statement.child_by_field_name("consequence"))
            for part in statement.children_by_field_name("alternative"):
                field = "consequence" if part.type == "elif_clause" else "body"
                yield from _suite_statements(part, part.child_by_field_name(field))
        elif kind == "try_statement":
            if any(_is_except_star(c) for c in statement.children):
                continue  # `except*`: not read
            yield from _suite_statements(statement, statement.child_by_field_name("body"))
            for part in statement.named_children:
                if part.type in ("except_clause", "finally_clause"):
                    yield from _suite_statements(part, _block_of(part))
                elif part.type == "else_clause":
                    yield from _suite_statements(part, part.child_by_field_name("body"))
        elif kind == "with_statement":
            yield from _suite_statements(statement, statement.child_by_field_name("body"))
        else:
            yield statement


def _is_except_star(clause: Node) -> bool:
    return clause.type == "except_group_clause" or (
        clause.type == "except_clause" and any(c.type == "*" for c in clause.children)
    )


def _block_of(clause: Node) -> Node | None:
    return next((c for c in clause.named_children if c.type == "block"), None)


def _imports(root: Node) -> dict[str, str]:
    """Imported name -> the module it comes from (absolute `from a.b import X` at module scope)."""
    found = {}
    for statement in _module_scope_statements(root):
        if statement.type == "future_import_statement":
            source = "__future__"
        elif statement.type == "import_from_statement":
            module = statement.child_by_field_name("module_name")
            if module is None or module.type != "dotted_name":
                continue  # relative
            if any(c.type == "wildcard_import" for c in statement.children):
                continue
            source = _compact(node_text(module))
        else:
            continue
        for name in statement.children_by_field_name("name"):
            if name.type == "aliased_import":
                name = name.child_by_field_name("name")
            found[_compact(node_text(name))] = source
    return found


def _cst_module_scope_statements(body) -> Iterator[cst.CSTNode]:
    """The small statements that run at module scope, in order: top-level ones and those inside
    top-level if/try/with blocks, not those inside functions or classes (a base class name is
    looked up in the module's namespace)."""
    for statement in body:
        if isinstance(statement, cst.SimpleStatementLine):
            yield from statement.body
        elif isinstance(statement, cst.If):
            yield from _cst_module_scope_statements(statement.body.body)
            if statement.orelse is not None:
                yield from _cst_module_scope_statements((statement.orelse,))
        elif isinstance(statement, cst.Else):
            yield from _cst_module_scope_statements(statement.body.body)
        elif isinstance(statement, cst.Try | cst.With):
            yield from _cst_module_scope_statements(statement.body.body)
            for handler in getattr(statement, "handlers", ()):
                yield from _cst_module_scope_statements(handler.body.body)
            for block in (
                getattr(statement, "orelse", None),
                getattr(statement, "finalbody", None),
            ):
                if block is not None:
                    yield from _cst_module_scope_statements(block.body.body)


def _cst_imports(module: cst.Module) -> dict[str, str]:
    """_imports read from libcst's module, for a file tree-sitter finds errors in."""
    found = {}
    for node in _cst_module_scope_statements(module.body):
        if isinstance(node, cst.ImportFrom) and node.module is not None and not node.relative:
            if isinstance(node.names, cst.ImportStar):
                continue
            source = compact_code(module, node.module)
            for alias in node.names:
                found[compact_code(module, alias.name)] = source
    return found


class _Class:
    __slots__ = ("module", "node", "path", "imports")

    def __init__(
        self, module: cst.Module, node: cst.ClassDef, path: str, imports: dict[str, str]
    ) -> None:
        self.module, self.node, self.path, self.imports = module, node, path, imports


class _Modules:
    """Each module a backend walk reaches, parsed once per extraction (backends share bases)."""

    def __init__(self, read: Reader) -> None:
        self.read = read
        self.parsed: dict[str, cst.Module | None] = {}
        self.imported: dict[str, dict[str, str]] = {}

    def module(self, path: str) -> cst.Module | None:
        """The module's classes and the bodies of their BACKEND_METHODS, as libcst parses them;
        its imports are read from tree-sitter's tree (`imports`)."""
        if path not in self.parsed:
            text = self.read(path)
            self.parsed[path] = None
            if text is not None:
                self.parsed[path] = parse_outline(
                    text, path, _backend_method, module_statements=False
                )
                root = parse_tree(text)
                self.imported[path] = (
                    _cst_imports(parse_outline(text, path, _backend_method))
                    if root.has_error
                    else _imports(root)
                )
        return self.parsed[path]

    def imports(self, path: str, module: cst.Module) -> dict[str, str]:
        return self.imported[path]


def _backend_method(qualname: str, _code: bytes) -> bool:
    return qualname.partition(".")[2] in BACKEND_METHODS


def _mro(modules: _Modules, dotted: str) -> Iterator[_Class]:
    """The class at `dotted` and its bases (first base first), followed through imports."""
    seen = set()
    todo = [dotted]
    while todo and len(seen) < 12:
        current = todo.pop(0)
        if current in seen:
            continue
        seen.add(current)
        module_name, _, class_name = current.rpartition(".")
        path = module_path(module_name)
        module = modules.module(path)
        if module is None:
            continue
        node = top_level_classes(module).get(class_name)
        if node is None:
            continue
        found = _Class(module, node, path, modules.imports(path, module))
        yield found
        for base in node.bases:
            name = compact_code(module, base.value)
            if name in found.imports:
                todo.append(f"{found.imports[name]}.{name}")
            elif name in top_level_classes(module):
                todo.append(f"{module_name}.{name}")


def _sizes(cls: _Class) -> tuple[str, ...] | None:
    """The literal list get_supported_kernel_block_sizes returns, as code ("MultipleOf(16)",
    "64"); None when the method computes it."""
    body = statements(class_methods(cls.node)[KERNEL_SIZES].body)
    if len(body) != 1 or not isinstance(body[0], cst.Return):
        return None
    value = body[0].value
    if not isinstance(value, cst.List):
        return None
    sizes = []
    for element in value.elements:
        item = element.value
        if literal_text(item) is not None:
            sizes.append(literal_text(item) or "")
        elif call_name(item) == "MultipleOf" and len(item.args) == 1:  # type: ignore[attr-defined]
            inner = literal_text(item.args[0].value)  # type: ignore[attr-defined]
            if inner is None:
                return None
            sizes.append(f"MultipleOf({inner})")
        else:
            return None
    return tuple(sizes)


def _base(size: str) -> int:
    return int(size.removeprefix("MultipleOf(").removesuffix(")"))


def base_rule_holds(text: str, path: str) -> bool:
    """Does AttentionBackend keep the rule this module computes: the default block size when a
    kernel size divides it (or there are none), else the smallest kernel size?"""
    module = parse_outline(text, path, _backend_method)
    cls = top_level_classes(module).get(BASE_CLASS)
    if cls is None:
        return False
    methods = class_methods(cls)
    if PREFERRED not in methods or "supports_block_size" not in methods:
        return False
    preferred = compact_code(module, methods[PREFERRED])
    supports = compact_code(module, methods["supports_block_size"])
    return (
        "if not supported_sizes: return default_block_size" in preferred
        and "if cls.supports_block_size(default_block_size): return default_block_size" in preferred
        and "return min(s.base if isinstance(s, MultipleOf) else s for s in supported_sizes)"
        in preferred
        and "if block_size % supported_size == 0: return True" in supports
    )


def preferred_block(sizes: tuple[str, ...], default: int) -> int:
    """The base rule: `default` when no kernel size is given or one divides it, else the
    smallest kernel size."""
    if not sizes or any(default % _base(s) == 0 for s in sizes):
        return default
    return min(_base(s) for s in sizes)


def _on_cuda(test: cst.BaseExpression) -> bool | None:
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _on_cuda(test.expression)
        return None if inner is None else not inner
    if (
        isinstance(test, cst.Call)
        and isinstance(test.func, cst.Attribute)
        and isinstance(test.func.value, cst.Name)
        and test.func.value.value == "current_platform"
        and not test.args
    ):
        return CUDA_PROBES.get(test.func.attr.value)
    return None


def _override_on_cuda(cls: _Class) -> str:
    """How an own get_preferred_block_size behaves on CUDA: "super" when it ends in
    `return super().get_preferred_block_size(...)` past platform guards false on CUDA, a
    literal when it returns one, else "" (not evaluated)."""
    for statement in statements(class_methods(cls.node)[PREFERRED].body):
        if isinstance(statement, cst.If) and statement.orelse is None:
            if _on_cuda(statement.test) is False:
                continue
            return ""
        if isinstance(statement, cst.Return) and statement.value is not None:
            value = statement.value
            if literal_text(value) is not None:
                return literal_text(value) or ""
            if (
                call_name(value) == PREFERRED
                and isinstance(value.func, cst.Attribute)  # type: ignore[attr-defined]
                and call_name(value.func.value) == "super"  # type: ignore[attr-defined]
            ):
                return "super"
        return ""
    return ""


def backend_block(modules: _Modules, dotted: str, default: int | None, base_ok: bool):
    """(kernel sizes, preferred block, reason, path, symbol) for one backend class."""
    sizes: tuple[str, ...] | None = None
    sizes_from = ""
    override = ""
    path, symbol = module_path(dotted.rpartition(".")[0]), dotted.rpartition(".")[2]
    for cls in _mro(modules, dotted):
        methods = class_methods(cls.node)
        if PREFERRED in methods and not override and cls.node.name.value != BASE_CLASS:
            override = _override_on_cuda(cls) or "opaque"
            if override == "opaque":
                reason = f"{cls.node.name.value}.{PREFERRED} is not evaluated"
                return (), None, reason, path, symbol
        if KERNEL_SIZES in methods and sizes is None and not sizes_from:
            sizes_from = f"{cls.node.name.value}.{KERNEL_SIZES}"
            sizes = _sizes(cls)
    if override.isdigit():
        return sizes or (), int(override), f"{PREFERRED} returns {override}", path, symbol
    if not sizes_from:
        return (), None, f"no {KERNEL_SIZES} found for {dotted}", path, symbol
    if sizes is None:
        return (), None, f"{sizes_from} computes its sizes", path, symbol
    if default is None:
        return sizes, None, "the default block size is not a literal", path, symbol
    if not base_ok:
        return sizes, None, f"{BASE_CLASS}.{PREFERRED} no longer has the known shape", path, symbol
    return sizes, preferred_block(sizes, default), "", path, symbol


def attention_backends(
    cuda_text: str, registry_text: str, base_text: str, read: Reader, default: int | None
) -> list[AttentionBackendChoice]:
    """One row per backend of each priority branch, with the block size it gives."""
    branches = priority_branches(cuda_text, CUDA_PATH)
    classes = enum_class_paths(registry_text, REGISTRY_PATH)
    base_ok = base_rule_holds(base_text, BASE_PATH)
    modules = _Modules(read)
    rows = []
    for branch in branches:
        for rank, backend in enumerate(branch.backends):
            dotted = classes.get(backend, "")
            if dotted:
                sizes, block, reason, path, symbol = backend_block(
                    modules, dotted, default, base_ok
                )
            else:
                sizes, block, reason = (), None, f"{ENUM}.{backend} is not in {REGISTRY_PATH}"
                path, symbol = REGISTRY_PATH, ENUM
            rows.append(
                AttentionBackendChoice(
                    use_mla=branch.use_mla,
                    branch=branch.words,
                    default_branch=branch.default,
                    rank=rank,
                    backend=backend,
                    class_path=dotted,
                    kernel_block_sizes=sizes,
                    preferred_block=block,
                    reason=reason,
                    path=path,
                    symbol=symbol,
                )
            )
    return sorted(rows, key=lambda r: (r.use_mla, r.branch, r.rank))
