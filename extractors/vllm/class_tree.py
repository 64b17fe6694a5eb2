"""A static model of vLLM's Python modules: names, imports, classes, adapters and Python's MRO.

Nothing is imported or run. A module is parsed with tree-sitter-python; a name is followed
through `from x import y [as z]`, module-level aliases, adapter calls such as
`as_seq_cls_model(LlamaForCausalLM)` (the function's nested class, with its parameter bound)
and decorators that set class attributes (`@attn_type("encoder_only")`). Classes defined
outside the vLLM tree (torch, typing, transformers) are leaves that set no vLLM flag.

A module is read as its outline (top-level statements; class and function bodies elided) and a
class or function body only when the tree needs it (`ClassTree.full_definition`), parsed from its
own span as the module's skeleton would have it."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from tree_sitter import Node

from apron.extractors.errors import ParseError
from apron.extractors.parsing.outline_imports import (
    TextImport,
    outside_statements,
    split_plain_imports,
)
from apron.extractors.parsing.python_classes import (
    InconsistentHierarchy,
    c3_linearization,
    class_bases,
)
from apron.extractors.parsing.python_imports import absolute_module
from apron.extractors.parsing.python_skeleton import (
    lean_class_skeleton,
    method_skeleton,
    module_outline,
)
from apron.extractors.parsing.python_ts import (
    defined_name,
    from_import,
    if_clauses,
    import_source,
    imported_names,
    node_text,
    parse_python,
    string_value,
    unparenthesize,
)
from apron.extractors.parsing.signature_text import plain_parameters

ROOT_PACKAGE = "vllm"
BUILTIN_CLASSES = frozenset({"object", "type", "dict", "list", "tuple", "Exception"})
ReadText = Callable[[str], "str | None"]
# A line joined to the one before at column 0 would end a body early in the outline's
# line-based pass, and the rest could still parse; such modules are read as skeletons. (The
# outline's rows are lines of the text, so a text with `\r` line ends is one too.)
CONTINUED_AT_COLUMN_0 = re.compile(r"\\\n[^ \t\n]")


class Unresolved(Exception):
    """A name or class that cannot be followed statically; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Constant:
    """A class attribute whose value is a plain literal (str, bool, int, None)."""

    value: object


NON_LITERAL = object()  # an attribute that exists but whose value is not a literal


class Method:
    """A method's name and parameters (`self`/`cls` left out). A method read from a lean class
    skeleton (`lean_class_skeleton`) has its name only; its parameters are parsed from its
    signature's text the first time they are asked for."""

    __slots__ = ("name", "_params", "_var_keyword", "_signature")

    def __init__(
        self,
        name: str,
        params: tuple[str, ...] = (),
        has_var_keyword: bool = False,
        *,
        signature: tuple[str, str, str] | None = None,  # (its text, path, the file's text)
    ) -> None:
        self.name = name
        self._params = params
        self._var_keyword = has_var_keyword
        self._signature = signature

    def _read_signature(self) -> None:
        text, path, file_text = self._signature
        plain = plain_parameters(text)
        if plain is not None:
            params, self._var_keyword = plain
            self._params = tuple(params[1:] if params[:1] in (["self"], ["cls"]) else params)
        else:
            definition = f"{text}    ...\n"
            try:
                root = parse_python(definition, path)
            except ParseError:
                root = _skeleton_or_whole(definition, path, file_text)  # the file's own error
            read = _method(root.named_children[0])
            self._params, self._var_keyword = read.params, read.has_var_keyword
        self._signature = None  # read (an error leaves it to be raised again)

    @property
    def params(self) -> tuple[str, ...]:
        if self._signature is not None:
            self._read_signature()
        return self._params

    @property
    def has_var_keyword(self) -> bool:
        if self._signature is not None:
            self._read_signature()
        return self._var_keyword

    def accepts(self, keyword: str) -> bool:
        return self.has_var_keyword or keyword in self.params

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Method):
            return NotImplemented
        return (self.name, self.params, self.has_var_keyword) == (
            other.name,
            other.params,
            other.has_var_keyword,
        )

    __hash__ = None  # as a mutable dataclass's

    def __repr__(self) -> str:
        return (
            f"Method(name={self.name!r}, params={self.params!r}, "
            f"has_var_keyword={self.has_var_keyword!r})"
        )


@dataclass
class ClassInfo:
    """One class: its qualified name, resolved bases, own attributes and methods."""

    qualname: str
    module: str
    path: str
    bases: list[ClassInfo] = field(default_factory=list)
    attributes: dict[str, object] = field(default_factory=dict)  # Constant or NON_LITERAL
    annotations: set[str] = field(default_factory=set)  # annotated without a value
    methods: dict[str, Method] = field(default_factory=dict)
    external: bool = False  # outside the vLLM tree: sets no vLLM flag
    opaque_reason: str = ""  # inside the tree but not resolvable: lookups through it are unknown
    is_protocol: bool = False
    complete: bool = True  # False while the tree is still reading its bases and body
    # computed once the class and every class of its MRO are complete
    mro_cache: tuple[ClassInfo, ...] | None = field(default=None, repr=False, compare=False)
    lookup_cache: dict[str, object] = field(default_factory=dict, repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]

    def own(self, attribute: str) -> object | None:
        """The class's own value for `attribute` (Constant, NON_LITERAL, a Method), or None."""
        if attribute in self.attributes:
            return self.attributes[attribute]
        return self.methods.get(attribute)


def external_class(qualname: str) -> ClassInfo:
    return ClassInfo(qualname=qualname, module=qualname.rpartition(".")[0], path="", external=True)


def opaque_class(qualname: str, reason: str) -> ClassInfo:
    return ClassInfo(
        qualname=qualname, module=qualname.rpartition(".")[0], path="", opaque_reason=reason
    )


def c3_mro(cls: ClassInfo) -> tuple[ClassInfo, ...]:
    """Python's C3 linearization; an inconsistent hierarchy is Unresolved (as Python's TypeError).
    Computed once per class: the linearization of a complete hierarchy never changes."""
    try:
        return c3_linearization(
            cls,
            lambda c: c.bases,
            key=lambda c: c.qualname,
            known=lambda c: c.mro_cache,
            keep=_keep_mro,
        )
    except InconsistentHierarchy as err:
        raise Unresolved(str(err)) from None


def _keep_mro(cls: ClassInfo, mro: tuple[ClassInfo, ...]) -> None:
    if all(c.complete for c in mro):
        cls.mro_cache = mro


@dataclass(slots=True)
class Binding:
    kind: str  # "import", "class", "function", "value"
    node: Node | None = None
    module: str = ""  # for imports: the source module
    name: str = ""  # for imports: the imported name


@dataclass
class Module:
    name: str
    path: str
    root: Node
    bindings: dict[str, Binding]
    star_imports: list[str]
    text: str = ""
    # row of a top-level `class`/`def` line in `root` -> the span of `text` its body was elided
    # from (`root` is the module's outline); read with ClassTree.full_definition
    elided: dict[int, tuple[int, int]] = field(default_factory=dict)


def module_candidates(module: str) -> tuple[str, ...]:
    base = module.replace(".", "/")
    return (f"{base}.py", f"{base}/__init__.py")


def _definition(statement: Node) -> tuple[Node, list[Node]]:
    """(class or function node, decorator expressions) for a possibly decorated definition."""
    if statement.type == "decorated_definition":
        decorators = [
            unparenthesize(d.named_children[0]) for d in statement.children if d.type == "decorator"
        ]
        definition = statement.child_by_field_name("definition")
        return definition, decorators
    return statement, []


CUDA_CHECKS = ("is_cuda", "is_cuda_alike")  # platform checks that hold on NVIDIA GPUs


def _platform_truth(node: Node) -> bool | None:
    """A condition's value on a CUDA machine outside type checking: `TYPE_CHECKING` is false,
    `current_platform.is_cuda()` true, any other `current_platform.is_<x>()` false; None when the
    condition tests something else."""
    node = unparenthesize(node)
    if node.type == "identifier" and node_text(node) == "TYPE_CHECKING":
        return False
    if node.type == "not_operator":
        inner = _platform_truth(node.child_by_field_name("argument"))
        return None if inner is None else not inner
    if node.type == "boolean_operator":
        left = _platform_truth(node.child_by_field_name("left"))
        right = _platform_truth(node.child_by_field_name("right"))
        if left is None or right is None:
            return None
        operator = node.child_by_field_name("operator").type
        return (left and right) if operator == "and" else (left or right)
    if node.type == "call":
        function = node.child_by_field_name("function")
        if function.type == "attribute":
            name = node_text(function.child_by_field_name("attribute"))
            if name.startswith("is_") and "platform" in node_text(
                function.child_by_field_name("object")
            ):
                return name in CUDA_CHECKS
    return None


def _platform_branch(statement: Node) -> Node | None:
    """The block of an `if/elif/else` over platform checks that runs on CUDA, or None when a
    condition is not a platform check."""
    clauses, otherwise = if_clauses(statement)
    for condition, block in clauses:
        truth = _platform_truth(condition)
        if truth is None:
            return None
        if truth:
            return block
    return otherwise


def _bind_text_imports(imports, bindings: dict[str, Binding], stars: list[str], mod) -> None:
    """Binds top-level imports read from the outline's text (`split_plain_imports`)."""
    is_package = mod.path.endswith("__init__.py")
    for _, _, level, dotted, names in imports:
        target = absolute_module(mod.name, is_package, level, dotted)
        if names == "*":
            stars.append(target)
            continue
        for imported, alias in names:
            bindings[alias or imported] = Binding("import", None, target, imported)


def _collect_bindings(
    block: Node,
    bindings: dict[str, Binding],
    stars: list[str],
    mod,
    nested,
    text_imports: list[TextImport] = (),
):
    """The bindings of `block` in order; `text_imports` (top level only) are the statements read
    from the text, bound where their rows fall among the block's statements."""
    is_package = mod.path.endswith("__init__.py")
    pending = 0  # text imports before this index are bound
    for statement in block.named_children:
        kind = statement.type
        if pending < len(text_imports):
            row = statement.start_point[0]
            upto = pending
            while upto < len(text_imports) and text_imports[upto][0] < row:
                upto += 1
            if upto > pending:
                _bind_text_imports(text_imports[pending:upto], bindings, stars, mod)
                pending = upto
        if kind == "comment":
            continue
        new: dict[str, Binding] = {}
        if kind == "import_from_statement":
            parts = from_import(statement)
            if parts is None:
                continue
            level, dotted, names, wildcard = parts
            target = absolute_module(mod.name, is_package, level, dotted)
            if wildcard:
                stars.append(target)  # `import *` names nothing else
            for local, imported in names:
                new[local] = Binding("import", module=target, name=imported)
        elif kind in ("class_definition", "function_definition", "decorated_definition"):
            definition, _ = _definition(statement)
            name = definition.child_by_field_name("name") if definition is not None else None
            if name is not None:
                word = "class" if definition.type == "class_definition" else "function"
                new[node_text(name)] = Binding(word, node=statement)
        elif kind == "expression_statement":
            if statement.named_child_count != 1:
                continue
            assignment = statement.named_children[0]
            if assignment.type == "assignment":
                left = assignment.child_by_field_name("left")
                right = assignment.child_by_field_name("right")
                if left is not None and left.type == "identifier" and right is not None:
                    new[node_text(left)] = Binding("value", node=right)
        elif kind in ("if_statement", "try_statement", "with_statement"):
            chosen = _platform_branch(statement) if kind == "if_statement" else None
            if chosen is not None:
                _collect_bindings(chosen, bindings, stars, mod, True)
                continue
            for part in statement.named_children:
                if part.type == "block":
                    _collect_bindings(part, bindings, stars, mod, True)
                elif part.type in ("elif_clause", "else_clause", "except_clause", "finally_clause"):
                    for sub in part.named_children:
                        if sub.type == "block":
                            _collect_bindings(sub, bindings, stars, mod, True)
            continue
        for local, binding in new.items():
            if nested and local in bindings:
                continue  # the first branch of an `if`/`try` (the CUDA / normal path) wins
            bindings[local] = binding
    if pending < len(text_imports):
        _bind_text_imports(text_imports[pending:], bindings, stars, mod)


class ClassTree:
    """Resolves names to classes across the modules of one tree, reading files on demand."""

    def __init__(self, read_text: ReadText, full_modules: tuple[str, ...] = ()) -> None:
        self._read_text = read_text
        self._full_modules = frozenset(full_modules)  # modules whose method bodies are read
        self._modules: dict[str, Module | None] = {}
        self._classes: dict[tuple[str, str], ClassInfo] = {}
        self._resolving: set[tuple[str, str]] = set()
        self._functions: dict[tuple[str, str], tuple[Module, Node] | None] = {}
        self._full_definitions: dict[tuple[str, int], Node] = {}
        # a class definition read as a lean skeleton -> (its span, signature spans by row)
        self._lean: dict[int, tuple[str, dict[int, tuple[int, int]]]] = {}
        self.read_paths: list[str] = []
        # `if <check>(cls): return cls` in an adapter; the flag evaluator installs its own
        self.adapter_guard: Callable[[Module, Node, str, ClassInfo], bool] | None = None

    # -------------------------------------------------------------- modules

    def module(self, name: str) -> Module | None:
        """The parsed module, or None when no file of the tree holds it."""
        if name in self._modules:
            return self._modules[name]
        found = None
        for path in module_candidates(name):
            text = self._read_text(path)
            if text is None:
                continue
            root, elided, imports = self._parse(name, text, path)
            self.read_paths.append(path)
            bindings: dict[str, Binding] = {}
            stars: list[str] = []
            found = Module(name, path, root, bindings, stars, text, elided)
            _collect_bindings(root, bindings, stars, found, False, imports)
            break
        self._modules[name] = found
        return found

    def _parse(
        self, name: str, text: str, path: str
    ) -> tuple[Node, dict[int, tuple[int, int]], list[TextImport]]:
        """The module's tree, the spans elided from it and the top-level imports read from its
        text instead. A full module is parsed whole; any other as its outline (`module_outline`:
        the bodies of top-level classes and functions are read when the tree needs them), its
        plain `from` imports read from the text (`split_plain_imports`), or, when that does not
        parse, as its skeleton (method bodies elided) or else whole, with the full text's
        errors."""
        if name in self._full_modules:
            return parse_python(text, path), {}, []
        if "\r" not in text and not CONTINUED_AT_COLUMN_0.search(text):
            outline, elided = module_outline(text, lean=True)
            rest, imports = split_plain_imports(outline)
            if imports:
                try:
                    root = parse_python(rest, path)
                    if outside_statements(root, imports):
                        return root, elided, imports
                except ParseError:
                    pass  # the outline's own parse says what is wrong
            try:
                return parse_python(outline, path), elided, []
            except ParseError:
                pass
        return _skeleton_or_whole(text, path), {}, []

    def full_definition(self, mod: Module, statement: Node) -> Node:
        """The class or function definition of a top-level `statement` with its body (methods
        elided, as the module's skeleton has them); read from its span when the module's
        outline elided it. A span that does not parse reports the file's own error."""
        definition, _ = _definition(statement)
        span = mod.elided.get(definition.start_point[0])
        if span is None:
            return definition
        key = (mod.name, span[0])
        if key not in self._full_definitions:
            text = mod.text[span[0] : span[1]]
            lean: dict[int, tuple[int, int]] = {}
            if definition.type == "class_definition":
                root, lean = _lean_or_whole(text, mod.path, mod.text)
            else:
                root = _skeleton_or_whole(text, mod.path, mod.text)
            full, _ = _definition(root.named_children[0])
            if lean:
                self._lean[full.id] = (text, lean)
            if defined_name(full) != defined_name(
                definition
            ):  # pragma: no cover - a skeleton bug guard
                raise ParseError(
                    f"{mod.path}: {defined_name(definition)} not read", paths=[mod.path]
                )
            self._full_definitions[key] = full
        return self._full_definitions[key]

    def binding(self, module_name: str, name: str, depth: int = 0) -> tuple[Module, Binding]:
        """The definition `name` refers to in `module_name`, following imports and star imports."""
        if depth > 20:
            raise Unresolved(f"import chain for {name} is longer than 20 modules")
        mod = self.module(module_name)
        if mod is None:
            raise Unresolved(f"module {module_name} has no file in the tree")
        binding = mod.bindings.get(name)
        if binding is None:
            for star in mod.star_imports:
                try:
                    return self.binding(star, name, depth + 1)
                except Unresolved:
                    continue
            raise Unresolved(f"{module_name} does not define or import {name}")
        if binding.kind == "import":
            if not _in_tree(binding.module):
                raise _External(f"{binding.module}.{binding.name}")
            target = self.module(binding.module)
            if target is None:
                submodule = f"{binding.module}.{binding.name}"
                if self.module(submodule) is not None:
                    raise Unresolved(f"{name} in {module_name} is a module, not a class")
                raise Unresolved(f"module {binding.module} (imported by {module_name}) has no file")
            return self.binding(binding.module, binding.name, depth + 1)
        return mod, binding

    # -------------------------------------------------------------- classes

    @property
    def resolving(self) -> bool:
        """True while a class is being resolved (a name's answer may then still change)."""
        return bool(self._resolving)

    def resolve(self, module_name: str, name: str) -> ClassInfo:
        """The class `name` denotes in `module_name`; external classes are leaves."""
        try:
            mod, binding = self.binding(module_name, name)
        except _External as external:
            return external_class(external.qualname)
        key = (mod.name, name)
        if key in self._resolving:
            raise Unresolved(f"{name} in {mod.name} is defined in terms of itself")
        self._resolving.add(key)
        try:
            return self._from_binding(mod, binding, name)
        finally:
            self._resolving.discard(key)

    def _from_binding(self, mod: Module, binding: Binding, name: str) -> ClassInfo:
        if binding.kind == "class":
            return self._class(mod, binding.node)
        if binding.kind == "value":
            return self.evaluate_class(mod, binding.node, {})
        raise Unresolved(f"{name} in {mod.name} is a function, not a class")

    def evaluate_class(self, mod: Module, node: Node, scope: dict[str, ClassInfo]) -> ClassInfo:
        """The class an expression denotes: a name, `module.attr`, `X[...]` or an adapter call."""
        node = unparenthesize(node)
        if node.type == "identifier":
            word = node_text(node)
            if word in scope:
                found = scope[word]
                if isinstance(found, tuple):  # a function-local `from m import name`
                    return self.resolve(*found)
                return found
            if word in BUILTIN_CLASSES:
                return external_class(f"builtins.{word}")
            return self.resolve(mod.name, word)
        if node.type == "subscript":
            return self.evaluate_class(mod, node.child_by_field_name("value"), scope)
        if node.type == "attribute":
            return self._attribute_class(mod, node)
        if node.type == "call":
            return self._adapter_call(mod, node, scope)
        raise Unresolved(f"`{node_text(node)[:60]}` in {mod.name} is not a class expression")

    def _attribute_class(self, mod: Module, node: Node) -> ClassInfo:
        dotted = node_text(node).replace(" ", "")
        head, _, rest = dotted.partition(".")
        binding = mod.bindings.get(head)
        if binding is not None and binding.kind == "import":
            full = f"{binding.module}.{binding.name}.{rest}"
        else:
            full = _import_alias(mod.root, head, rest)
        if full is None:
            raise Unresolved(f"`{dotted}` in {mod.name}: {head} is not an imported module")
        if not _in_tree(full):
            return external_class(full)
        module_name, _, cls = full.rpartition(".")
        return self.resolve(module_name, cls)

    def _class(self, mod: Module, statement: Node) -> ClassInfo:
        definition, decorators = _definition(statement)
        name = node_text(definition.child_by_field_name("name"))
        key = (mod.name, name)
        if key in self._classes:
            return self._classes[key]
        info = ClassInfo(
            qualname=f"{mod.name}.{name}", module=mod.name, path=mod.path, complete=False
        )
        self._classes[key] = info
        self._build_class(mod, self.full_definition(mod, statement), decorators, info, {})
        return info

    def _build_class(self, mod: Module, definition: Node, decorators, info: ClassInfo, scope):
        """Fills `info` from its definition and decorators; then it is complete."""
        try:
            self._fill_class(mod, definition, info, scope)
            for decorator in reversed(decorators):
                self.apply_decorator(mod, decorator, info)
        finally:
            info.complete = True

    def _fill_class(self, mod: Module, definition: Node, info: ClassInfo, scope) -> None:
        for argument in class_bases(definition):
            try:
                base = self.evaluate_class(mod, argument, scope)
            except Unresolved as err:
                base = opaque_class(node_text(argument)[:80], err.reason)
            info.bases.append(base)
            if base.external and base.name == "Protocol":
                info.is_protocol = True
        body = definition.child_by_field_name("body")
        lean = self._lean.get(definition.id)
        for statement in body.named_children if body is not None else ():
            self._read_member(mod, statement, info, scope, lean)

    def _method_alias(self, mod: Module, node: Node, scope) -> Method | None:
        """`embed_input_ids = SupportsMultiModal.embed_input_ids`: the method it names."""
        node = unparenthesize(node)
        if node.type != "attribute":
            return None
        try:
            owner = self.evaluate_class(mod, node.child_by_field_name("object"), scope)
            mro = c3_mro(owner)
        except Unresolved:
            return None
        wanted = node_text(node.child_by_field_name("attribute"))
        for entry in mro:
            if wanted in entry.methods:
                return entry.methods[wanted]
        return None

    def _read_member(self, mod: Module, statement: Node, info: ClassInfo, scope, lean) -> None:
        definition, _ = _definition(statement)
        if definition is not None and definition.type == "function_definition":
            span = lean[1].get(definition.start_point[0]) if lean is not None else None
            if span is None:
                method = _method(definition)
            else:  # `def name(): ...` in a lean skeleton: the parameters are read when needed
                signature = (lean[0][span[0] : span[1]], mod.path, mod.text)
                method = Method(defined_name(definition), signature=signature)
            info.methods[method.name] = method
            return
        if statement.type != "expression_statement" or statement.named_child_count != 1:
            return
        assignment = statement.named_children[0]
        if assignment.type != "assignment":
            return
        left = assignment.child_by_field_name("left")
        right = assignment.child_by_field_name("right")
        if left is None or left.type != "identifier":
            return
        word = node_text(left)
        if right is None:
            info.annotations.add(word)
        else:
            value = literal_value(right)
            alias = self._method_alias(mod, right, scope) if value is NON_LITERAL else None
            if alias is not None:
                info.methods[word] = alias
            else:
                info.attributes[word] = value

    # -------------------------------------------------------------- adapters and decorators

    def function(self, mod: Module, node: Node) -> tuple[Module, Node] | None:
        """The `function_definition` a callee expression names, or None when not in the tree."""
        node = unparenthesize(node)
        if node.type != "identifier":
            return None
        key = (mod.name, node_text(node))
        if key not in self._functions:
            self._functions[key] = self._function(*key)
        return self._functions[key]

    def _function(self, module_name: str, name: str) -> tuple[Module, Node] | None:
        try:
            target, binding = self.binding(module_name, name)
        except (_External, Unresolved):
            return None
        if binding.kind != "function":
            return None
        return target, self.full_definition(target, binding.node)

    def _adapter_call(self, mod: Module, call: Node, scope: dict[str, ClassInfo]) -> ClassInfo:
        found = self.function(mod, call.child_by_field_name("function"))
        callee = node_text(call.child_by_field_name("function"))
        if found is None:
            raise Unresolved(f"`{callee}(...)` in {mod.name} is not a function of the tree")
        target, definition = found
        arguments = [
            a for a in call.child_by_field_name("arguments").named_children if a.type != "comment"
        ]
        if len(arguments) != 1 or arguments[0].type == "keyword_argument":
            raise Unresolved(f"`{callee}(...)` in {mod.name} does not take one class argument")
        argument = self.evaluate_class(mod, arguments[0], scope)
        return self.apply_adapter(target, definition, argument)

    def apply_adapter(self, mod: Module, definition: Node, argument: ClassInfo) -> ClassInfo:
        """The class an adapter function returns for `argument`: its nested class with the
        parameter bound, or the argument itself through an `if <check>(param): return param`."""
        params = _method(definition, strip_self=False).params
        if not params:
            raise Unresolved(
                f"adapter {node_text(definition.child_by_field_name('name'))} has no parameter"
            )
        param = params[0]
        adapter = node_text(definition.child_by_field_name("name"))
        memo_key = (mod.name, f"{adapter}({argument.qualname})")
        if memo_key in self._classes:
            return self._classes[memo_key]
        scope: dict[str, object] = {param: argument}
        nested: dict[str, Node] = {}
        for statement in definition.child_by_field_name("body").named_children:
            if statement.type == "import_from_statement":
                source = import_source(statement)
                if source is not None:
                    target = absolute_module(
                        mod.name, mod.path.endswith("__init__.py"), source[0], source[1]
                    )
                    for local, imported in imported_names(statement):
                        scope[local] = (target, imported)
                continue
            inner, decorators = _definition(statement)
            if inner is not None and inner.type == "class_definition":
                nested[node_text(inner.child_by_field_name("name"))] = statement
                continue
            if statement.type == "if_statement" and self.adapter_guard is not None:
                if self.adapter_guard(mod, statement, param, argument):
                    return argument
            if statement.type == "return_statement" and statement.named_child_count == 1:
                returned = unparenthesize(statement.named_children[0])
                word = node_text(returned)
                if word == param:
                    return argument
                if word in nested:
                    inner, decorators = _definition(nested[word])
                    info = ClassInfo(
                        qualname=f"{mod.name}.{adapter}({argument.qualname}).{word}",
                        module=mod.name,
                        path=mod.path,
                        complete=False,
                    )
                    self._classes[memo_key] = info
                    self._build_class(mod, inner, decorators, info, scope)
                    return info
                raise Unresolved(f"adapter {adapter} returns `{word[:40]}`, not a nested class")
        raise Unresolved(f"adapter {adapter} has no `return` of a nested class")

    def apply_decorator(self, mod: Module, decorator: Node, info: ClassInfo) -> None:
        """A decorator factory `f(args)` whose inner function sets `model.<attr> = <param>`
        sets those attributes on `info`; a decorator the tree does not define is left alone."""
        if decorator.type != "call":
            return
        found = self.function(mod, decorator.child_by_field_name("function"))
        if found is None:
            return
        _, factory = found
        values = _bind_arguments(factory, decorator.child_by_field_name("arguments"))
        for inner in factory.child_by_field_name("body").named_children:
            if inner.type != "function_definition":
                continue
            inner_params = _method(inner, strip_self=False).params
            if not inner_params:
                continue
            target = inner_params[0]
            for statement in inner.child_by_field_name("body").named_children:
                if statement.type != "expression_statement" or statement.named_child_count != 1:
                    continue
                assignment = statement.named_children[0]
                left = assignment.child_by_field_name("left")
                right = assignment.child_by_field_name("right")
                if assignment.type != "assignment" or left is None or right is None:
                    continue
                if (
                    left.type != "attribute"
                    or node_text(left.child_by_field_name("object")) != target
                ):
                    continue
                attribute = node_text(left.child_by_field_name("attribute"))
                right = unparenthesize(right)
                if right.type == "identifier" and node_text(right) in values:
                    info.attributes[attribute] = values[node_text(right)]
                else:
                    info.attributes[attribute] = literal_value(right)


def _lean_or_whole(text: str, path: str, file_text: str) -> tuple[Node, dict[int, tuple[int, int]]]:
    """A class's span parsed as its lean skeleton (methods as `def name(): ...`) and the spans
    of those methods' signatures by row; else as `_skeleton_or_whole` has it, with none."""
    skeleton, lean = lean_class_skeleton(text)
    try:
        return parse_python(skeleton, path), lean
    except ParseError:
        return _skeleton_or_whole(text, path, file_text), {}


def _skeleton_or_whole(text: str, path: str, file_text: str | None = None) -> Node:
    """`text` parsed without method bodies, or whole when that does not parse; when neither
    parses, the error of `file_text` (the whole file `text` is part of) if it has one."""
    try:
        return parse_python(method_skeleton(text), path)
    except ParseError:
        pass
    try:
        return parse_python(text, path)
    except ParseError:
        if file_text is not None and file_text != text:
            parse_python(file_text, path)
        raise


class _External(Exception):
    def __init__(self, qualname: str) -> None:
        super().__init__(qualname)
        self.qualname = qualname


def _in_tree(module: str) -> bool:
    return module == ROOT_PACKAGE or module.startswith(ROOT_PACKAGE + ".")


def _import_alias(root: Node, head: str, rest: str) -> str | None:
    """`import torch.nn as nn` / `import torch` -> the dotted name `head.rest` stands for."""
    for statement in root.named_children:
        if statement.type != "import_statement":
            continue
        for item in statement.named_children:
            if item.type == "aliased_import":
                name = item.child_by_field_name("name")
                alias = item.child_by_field_name("alias")
                if alias is not None and node_text(alias) == head:
                    return f"{node_text(name)}.{rest}"
            elif item.type == "dotted_name" and node_text(item).split(".")[0] == head:
                return f"{head}.{rest}"
    return None


def literal_value(node: Node) -> object:
    node = unparenthesize(node)
    if node.type == "true":
        return Constant(True)
    if node.type == "false":
        return Constant(False)
    if node.type == "none":
        return Constant(None)
    if node.type == "integer":
        try:
            return Constant(int(node_text(node), 0))
        except ValueError:
            return NON_LITERAL
    text = string_value(node)
    if text is not None:
        return Constant(text)
    return NON_LITERAL


def _method(definition: Node, *, strip_self: bool = True) -> Method:
    params: list[str] = []
    var_keyword = False
    parameters = definition.child_by_field_name("parameters")
    for param in parameters.named_children if parameters is not None else ():
        if param.type == "identifier":
            params.append(node_text(param))
        elif param.type in ("typed_parameter",):
            first = param.named_children[0]
            if first.type == "dictionary_splat_pattern":
                var_keyword = True
            elif first.type == "identifier":
                params.append(node_text(first))
        elif param.type in ("default_parameter", "typed_default_parameter"):
            name = param.child_by_field_name("name")
            if name is not None:
                params.append(node_text(name))
        elif param.type == "dictionary_splat_pattern":
            var_keyword = True
    name = definition.child_by_field_name("name")
    if strip_self and params and params[0] in ("self", "cls"):
        params = params[1:]
    return Method(node_text(name) if name is not None else "", tuple(params), var_keyword)


def _bind_arguments(factory: Node, arguments: Node | None) -> dict[str, object]:
    """Parameter name -> Constant for a decorator factory call, defaults included."""
    values: dict[str, object] = {}
    parameters = factory.child_by_field_name("parameters")
    names: list[str] = []
    for param in parameters.named_children if parameters is not None else ():
        if param.type in ("default_parameter", "typed_default_parameter"):
            name = node_text(param.child_by_field_name("name"))
            names.append(name)
            values[name] = literal_value(param.child_by_field_name("value"))
        elif param.type == "identifier":
            names.append(node_text(param))
        elif param.type == "typed_parameter" and param.named_children[0].type == "identifier":
            names.append(node_text(param.named_children[0]))
    position = 0
    for argument in arguments.named_children if arguments is not None else ():
        if argument.type == "keyword_argument":
            key = node_text(argument.child_by_field_name("name"))
            values[key] = literal_value(argument.child_by_field_name("value"))
        elif argument.type != "comment":
            if position < len(names):
                values[names[position]] = literal_value(argument)
            position += 1
    return values


__all__ = [
    "NON_LITERAL",
    "ClassInfo",
    "ClassTree",
    "Constant",
    "Method",
    "Unresolved",
    "c3_mro",
]
