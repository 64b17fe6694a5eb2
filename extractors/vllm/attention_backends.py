"""vLLM's CUDA attention backends and the KV block size each gives: the priority lists of
cuda.py's _get_backend_priorities, the backend classes AttentionBackendEnum names, their
get_supported_kernel_block_sizes, and the block size get_preferred_block_size picks from the
default. Pure: file texts in, records out.

Read with tree-sitter: each file as its skeleton (python_skeleton.method_skeleton), with only the
bodies of the methods read here kept, or whole when the skeleton does not parse."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from tree_sitter import Node

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.python_classes import (
    InconsistentHierarchy,
    c3_linearization,
    class_bases,
)
from apron.extractors.parsing.python_imports import absolute_module, module_of_path
from apron.extractors.parsing.python_skeleton import method_skeleton, quotes_only_in_docstring
from apron.extractors.parsing.python_ts import (
    arguments,
    call_name,
    class_named,
    code_of,
    defined_name,
    from_import,
    if_clauses,
    methods_of,
    node_text,
    number_literal,
    parse_python,
    parse_tree,
    statements,
    string_value,
    top_level_classes,
    undecorated,
    unparenthesize,
)
from apron.extractors.vllm.records import AttentionBackendChoice

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
# The method bodies read in a backend module: the kernel sizes and preferred block of every
# class of a backend's MRO, and the base class's supports_block_size (base_rule_holds; one
# shape for backend.py, which both read).
BACKEND_METHODS = frozenset({KERNEL_SIZES, PREFERRED, "supports_block_size"})
# Platform probes on `current_platform` on a CUDA machine; any other probe is unknown.
CUDA_PROBES = {"is_cuda": True, "is_cuda_alike": True, "is_rocm": False, "is_xpu": False}
_DEF_NAME = re.compile(r"\s*(?:async\s+)?def\s+(\w+)")

Reader = Callable[[str], str | None]


class Branch:
    """One `return [AttentionBackendEnum.X, ...]` of the priority function and its path."""

    __slots__ = ("backends", "use_mla", "words", "default")

    def __init__(self, backends: list[str], use_mla: bool, words: str, default: bool) -> None:
        self.backends, self.use_mla, self.words, self.default = backends, use_mla, words, default


def _tree(text: str, path: str) -> Node:
    """The module as tree-sitter parses its skeleton: the bodies of methods other than
    BACKEND_METHODS elided (a backend module is mostly kernels and metadata builders), unless
    the skeleton does not parse; then the whole text, whose errors are the file's."""
    skeleton = method_skeleton(text, keep=_backend_method)
    if skeleton != text:
        root = parse_tree(skeleton)
        if not root.has_error:
            return parse_python(skeleton, path)
    return parse_python(text, path)


def _backend_method(definition: str) -> bool:
    """A method whose body is kept: one of BACKEND_METHODS, or one whose end the skeleton
    could not be sure of."""
    name = _DEF_NAME.match(definition)
    return (
        name is None or name.group(1) in BACKEND_METHODS or not quotes_only_in_docstring(definition)
    )


def _body(definition: Node) -> Node | None:
    return definition.child_by_field_name("body")


def _branches(body: Node | None, path: tuple[tuple[str, bool], ...]):
    """Every list return under `body`, with the if-tests (code, holds) that lead to it."""
    for statement in statements(body):
        if statement.type == "return_statement":
            value = statement.named_children[0] if statement.named_child_count else None
            value = unparenthesize(value) if value is not None else None
            if value is None or value.type != "list":
                continue
            names = []
            for element in value.named_children:
                element = unparenthesize(element)
                if element.type != "attribute":
                    continue
                owner = unparenthesize(element.child_by_field_name("object"))
                if owner.type == "identifier" and node_text(owner) == ENUM:
                    names.append(node_text(element.child_by_field_name("attribute")))
            yield names, path
        elif statement.type == "if_statement":
            yield from _if_branches(statement, path)


def _if_branches(statement: Node, path: tuple[tuple[str, bool], ...]):
    """The branches of an if/elif/else chain: each clause's test holds, the earlier ones fail."""
    clauses, otherwise = if_clauses(statement)
    for condition, block in clauses:
        test = code_of(condition)
        yield from _branches(block, (*path, (test, True)))
        path = (*path, (test, False))
    if otherwise is not None:
        yield from _branches(otherwise, path)


def _words(path: tuple[tuple[str, bool], ...]) -> str:
    parts = [
        code if holds else (f"not {code}" if code.isidentifier() else f"not ({code})")
        for code, holds in path
    ]
    return " and ".join(parts) or "always"


def priority_branches(text: str, path: str) -> list[Branch]:
    """The branches of _get_backend_priorities; `default` marks the branch reached when every
    test other than use_mla fails (the GPUs no test singles out)."""
    root = _tree(text, path)
    function = next(
        (
            d
            for d in map(undecorated, root.named_children)
            if d.type == "function_definition" and defined_name(d) == PRIORITIES
        ),
        None,
    )
    if function is None:
        raise AnchorError(f"{PRIORITIES} is not defined in {path}", paths=[path], anchor=PRIORITIES)
    found = []
    for names, conditions in _branches(_body(function), ()):
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
    cls = class_named(_tree(text, path), ENUM, path)
    found = {}
    body = _body(cls)
    for statement in body.named_children if body is not None else ():
        if statement.type != "expression_statement":
            continue
        for small in statement.named_children:
            if small.type != "assignment" or small.child_by_field_name("type") is not None:
                continue  # `X: str = ...` is an annotated assignment, not a member
            target = small.child_by_field_name("left")
            value = small.child_by_field_name("right")
            while value is not None and value.type == "assignment":  # `A = B = "x"`: A
                value = value.child_by_field_name("right")
            value = unparenthesize(value) if value is not None else None
            if target is None or target.type != "identifier" or value is None:
                continue
            if value.type in ("string", "concatenated_string"):
                dotted = string_value(value)
                if dotted:
                    found[node_text(target)] = dotted
    return found


def module_path(dotted: str) -> str:
    """`vllm.v1.attention.backends.flash_attn` -> `vllm/v1/attention/backends/flash_attn.py`."""
    return dotted.replace(".", "/") + ".py"


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


def _imports(root: Node, module: str, is_package: bool) -> dict[str, str]:
    """Local name -> the dotted path of what it imports, for the `from` imports at module scope
    (`from .base import AttentionBackend as Base` in `a.b.x` -> Base: a.b.base.AttentionBackend)."""
    found = {}
    for statement in _module_scope_statements(root):
        parts = from_import(statement) if statement.type == "import_from_statement" else None
        if parts is None or parts[3]:
            continue  # no module, or `import *`
        level, dotted, names, _ = parts
        source = absolute_module(module, is_package, level, dotted)
        for local, imported in names:
            found[local] = f"{source}.{imported}"
    return found


class _Modules:
    """Each module a backend walk reaches, parsed once per extraction (backends share bases)."""

    def __init__(self, read: Reader) -> None:
        self.read = read
        self.parsed: dict[str, Node | None] = {}
        self.imported: dict[str, dict[str, str]] = {}

    def module(self, path: str) -> Node | None:
        """The module's tree (its skeleton with the BACKEND_METHODS bodies), None when absent."""
        if path not in self.parsed:
            text = self.read(path)
            self.parsed[path] = None
            if text is not None:
                root = _tree(text, path)
                self.parsed[path] = root
                self.imported[path] = _imports(root, *module_of_path(path))
        return self.parsed[path]

    def imports(self, path: str) -> dict[str, str]:
        return self.imported[path]


class _Class:
    __slots__ = ("dotted", "node", "path", "imports")

    def __init__(self, dotted: str, node: Node, path: str, imports: dict[str, str]) -> None:
        self.dotted, self.node, self.path, self.imports = dotted, node, path, imports


def _class_at(modules: _Modules, dotted: str) -> _Class | None:
    """The class a dotted path names, when its module is in the tree and defines it."""
    module_name, _, class_name = dotted.rpartition(".")
    path = module_path(module_name)
    root = modules.module(path)
    node = top_level_classes(root).get(class_name) if root is not None else None
    return _Class(dotted, node, path, modules.imports(path)) if node is not None else None


def _bases_in_tree(modules: _Modules, cls: _Class) -> list[_Class]:
    """The bases of a class that are classes of the tree, followed through imports; a base
    from outside it (torch, abc) has nothing the walk reads."""
    module_name = cls.dotted.rpartition(".")[0]
    found = []
    for name in map(code_of, class_bases(cls.node)):
        base = _class_at(modules, cls.imports.get(name, f"{module_name}.{name}"))
        if base is not None:
            found.append(base)
    return found


def _mro(modules: _Modules, dotted: str) -> tuple[_Class, ...]:
    """The class at `dotted` and the classes of its MRO that are in the tree, in Python's C3
    order; InconsistentHierarchy when Python would refuse the class."""
    start = _class_at(modules, dotted)
    if start is None:
        return ()
    return c3_linearization(start, lambda c: _bases_in_tree(modules, c), key=lambda c: c.dotted)


def _sizes(cls: _Class) -> tuple[str, ...] | None:
    """The literal list get_supported_kernel_block_sizes returns, as code ("MultipleOf(16)",
    "64"); None when the method computes it."""
    body = statements(_body(methods_of(cls.node)[KERNEL_SIZES]))
    if len(body) != 1 or body[0].type != "return_statement" or not body[0].named_child_count:
        return None
    value = unparenthesize(body[0].named_children[0])
    if value.type != "list":
        return None
    sizes = []
    for item in value.named_children:
        if item.type == "comment":
            continue
        if item.type == "list_splat":
            item = item.named_children[0]
        if number_literal(item) is not None:
            sizes.append(number_literal(item) or "")
        elif call_name(item) == "MultipleOf" and len(arguments(unparenthesize(item))) == 1:
            inner = number_literal(arguments(unparenthesize(item))[0])
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
    cls = top_level_classes(_tree(text, path)).get(BASE_CLASS)
    if cls is None:
        return False
    methods = methods_of(cls)
    if PREFERRED not in methods or "supports_block_size" not in methods:
        return False
    preferred = code_of(methods[PREFERRED])
    supports = code_of(methods["supports_block_size"])
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


def _on_cuda(test: Node | None) -> bool | None:
    if test is None:
        return None
    test = unparenthesize(test)
    if test.type == "not_operator":
        inner = _on_cuda(test.child_by_field_name("argument"))
        return None if inner is None else not inner
    if test.type != "call" or arguments(test):
        return None
    function = unparenthesize(test.child_by_field_name("function"))
    if function.type != "attribute":
        return None
    owner = unparenthesize(function.child_by_field_name("object"))
    if owner.type == "identifier" and node_text(owner) == "current_platform":
        return CUDA_PROBES.get(node_text(function.child_by_field_name("attribute")))
    return None


def _override_on_cuda(cls: _Class) -> str:
    """How an own get_preferred_block_size behaves on CUDA: "super" when it ends in
    `return super().get_preferred_block_size(...)` past platform guards false on CUDA, a
    literal when it returns one, else "" (not evaluated)."""
    for statement in statements(_body(methods_of(cls.node)[PREFERRED])):
        if statement.type == "if_statement" and not statement.children_by_field_name("alternative"):
            if _on_cuda(statement.child_by_field_name("condition")) is False:
                continue
            return ""
        if statement.type == "return_statement" and statement.named_child_count:
            value = statement.named_children[0]
            if number_literal(value) is not None:
                return number_literal(value) or ""
            function = (
                unparenthesize(unparenthesize(value).child_by_field_name("function"))
                if call_name(value)
                else None
            )
            if (
                call_name(value) == PREFERRED
                and function is not None
                and function.type == "attribute"
                and call_name(function.child_by_field_name("object")) == "super"
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
    try:
        mro = _mro(modules, dotted)
    except InconsistentHierarchy as err:
        return (), None, str(err), path, symbol
    for cls in mro:
        methods = methods_of(cls.node)
        if PREFERRED in methods and not override and defined_name(cls.node) != BASE_CLASS:
            override = _override_on_cuda(cls) or "opaque"
            if override == "opaque":
                reason = f"{defined_name(cls.node)}.{PREFERRED} is not evaluated"
                return (), None, reason, path, symbol
        if KERNEL_SIZES in methods and sizes is None and not sizes_from:
            sizes_from = f"{defined_name(cls.node)}.{KERNEL_SIZES}"
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
