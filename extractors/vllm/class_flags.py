"""vLLM model-class flags: what `_ModelInfo.from_model_cls` computes per registered architecture.

The fields and the expression for each come from `from_model_cls` itself; the flag functions
(`is_hybrid(model)` ...) and the interface classes they read come from interfaces.py and
interfaces_base.py, followed from registry.py's imports. Each registry row's class is resolved
through the tree (`class_tree`) and the expressions evaluated on it (`flag_eval`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tree_sitter import Node

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.python_ts import (
    class_methods,
    code_of,
    node_text,
    undecorated,
    unparenthesize,
)
from apron.extractors.records import ExtractionWarning, warning
from apron.extractors.vllm.class_tree import ClassInfo, ClassTree, Unresolved, c3_mro
from apron.extractors.vllm.flag_eval import ClassValue, FlagEvaluator, Unknown
from apron.extractors.vllm.records import InterfaceFlag, ModelClassFlags, RegistryRow

FACT = "model_class_flags"
INTERFACE_FACT = "interface_flags"
MODEL_INFO_CLASS = "_ModelInfo"
FROM_METHOD = "from_model_cls"
# Flag functions of interfaces.py that `_ModelInfo` does not carry but the matrix reports.
EXTRA_FLAG_FUNCTIONS = ("supports_lora", "supports_eagle", "supports_eagle3")
QUANT_INTERFACE = "SupportsQuant"
SKIPPED_FIELDS = ("architecture",)
# Files the class walk reaches beyond the registry and the model folders, fetched with the
# declared batch (a walk that discovers them fetches one request each): the model packages of
# the `vllm/models/` layout (`<model>/__init__.py`, `<model>/nvidia/model.py`, ...), whose depth
# varies, and the module of `support_torch_compile`, the class decorator most model files import.
WALK_READS = ("vllm/models/**", "vllm/compilation/decorators.py")


def module_name(path: str) -> str:
    """`vllm/model_executor/models/registry.py` -> `vllm.model_executor.models.registry`."""
    stem = path.removesuffix(".py").removesuffix("/__init__")
    return stem.replace("/", ".")


def registry_module_for(row: RegistryRow) -> str:
    """The module a registry row names: dotted `vllm.*` as is, else inside the registry's package."""
    if row.module.startswith("vllm."):
        return row.module
    return module_name(row.path).rpartition(".")[0] + "." + row.module


def model_info_fields(root: Node, path: str) -> tuple[str, list[tuple[str, Node]]]:
    """(parameter name, [(field, expression)]) of `return _ModelInfo(...)` in `from_model_cls`."""
    for name, method in class_methods(root, MODEL_INFO_CLASS):
        if name != FROM_METHOD:
            continue
        params = method.child_by_field_name("parameters").named_children
        param = node_text(params[0]) if params else ""
        if params and params[0].type != "identifier":
            param = node_text(params[0].named_children[0])
        for inner in method.child_by_field_name("body").named_children:
            if inner.type != "return_statement" or not inner.named_child_count:
                continue
            call = unparenthesize(inner.named_children[0])
            if call.type != "call" or node_text(call.child_by_field_name("function")) != (
                MODEL_INFO_CLASS
            ):
                continue
            fields = []
            for argument in call.child_by_field_name("arguments").named_children:
                if argument.type == "keyword_argument":
                    fields.append(
                        (
                            node_text(argument.child_by_field_name("name")),
                            argument.child_by_field_name("value"),
                        )
                    )
            return param, fields
    anchor = f"{MODEL_INFO_CLASS}.{FROM_METHOD}"
    raise AnchorError(
        f"{anchor} returning {MODEL_INFO_CLASS}(...) not found in {path}",
        paths=[path],
        anchor=anchor,
    )


def interface_modules(tree: ClassTree, registry_module: str) -> list[str]:
    """Modules registry.py imports its flag functions from (interfaces, interfaces_base)."""
    mod = tree.module(registry_module)
    names = sorted(
        {
            b.module
            for b in mod.bindings.values()
            if b.kind == "import" and b.module.rsplit(".", 1)[-1].startswith("interfaces")
        }
    )
    return names


def interface_flags(tree: ClassTree, modules: Sequence[str]) -> list[InterfaceFlag]:
    """Every `name: ClassVar[...] = <literal>` in the classes of the interface modules."""
    found = []
    for name in modules:
        mod = tree.module(name)
        if mod is None:
            continue
        for statement in mod.root.named_children:
            if undecorated(statement).type != "class_definition":
                continue
            definition = tree.full_definition(mod, statement)
            protocol = node_text(definition.child_by_field_name("name"))
            for member in definition.child_by_field_name("body").named_children:
                if member.type != "expression_statement" or member.named_child_count != 1:
                    continue
                assignment = member.named_children[0]
                annotation = assignment.child_by_field_name("type")
                right = assignment.child_by_field_name("right")
                left = assignment.child_by_field_name("left")
                if assignment.type != "assignment" or annotation is None or right is None:
                    continue
                if not node_text(annotation).startswith("ClassVar"):
                    continue
                if unparenthesize(right).type not in ("true", "false", "string", "none", "integer"):
                    continue
                found.append(
                    InterfaceFlag(
                        protocol=protocol,
                        attribute=node_text(left),
                        value=code_of(unparenthesize(right)),
                        annotation=code_of(unparenthesize(annotation)),
                        path=mod.path,
                        symbol=protocol,
                    )
                )
    return sorted(found, key=lambda f: (f.protocol, f.attribute))


def _plain(value: object) -> bool | str | None:
    if isinstance(value, (bool, str)) or value is None:
        return value
    return None


class _FlagReader:
    def __init__(self, read_text: Callable[[str], str | None], registry_path: str) -> None:
        self.registry_module = module_name(registry_path)
        # registry.py's `_ModelInfo.from_model_cls` body is read; other method bodies are not
        self.tree = ClassTree(read_text, full_modules=(self.registry_module,))
        self.evaluator = FlagEvaluator(self.tree)
        registry = self.tree.module(self.registry_module)
        if registry is None:
            raise AnchorError(
                f"{registry_path} is missing", paths=[registry_path], anchor=MODEL_INFO_CLASS
            )
        self.registry = registry
        self.param, self.fields = model_info_fields(registry.root, registry_path)
        self.interfaces = interface_modules(self.tree, self.registry_module)
        self.extra: dict[str, tuple] = {}
        self.warnings: list[ExtractionWarning] = []
        for function in EXTRA_FLAG_FUNCTIONS:
            found = self._interface_function(function)
            if found is None:
                self.warn(
                    "missing-flag-function",
                    function,
                    f"{function} is not defined in "
                    f"{', '.join(self.interfaces)}; its column is unknown",
                    function,
                )
            else:
                self.extra[function] = found
        self.quant = self._interface_class(QUANT_INTERFACE)

    def warn(self, code: str, subject: str, message: str, symbol: str, path: str = "") -> None:
        self.warnings.append(
            warning(
                code=code,
                subject=subject,
                message=message,
                path=path or self.registry.path,
                symbol=symbol,
            )
        )

    def _interface_function(self, name: str):
        for module in self.interfaces:
            mod = self.tree.module(module)
            binding = mod.bindings.get(name) if mod is not None else None
            if binding is not None and binding.kind == "function":
                return mod, self.tree.full_definition(mod, binding.node)
        return None

    def _interface_class(self, name: str) -> ClassInfo | None:
        for module in self.interfaces:
            try:
                return self.tree.resolve(module, name)
            except Unresolved:
                continue
        return None

    def flags(self, row: RegistryRow) -> ModelClassFlags:
        target = registry_module_for(row)
        values: dict[str, object] = {}
        try:
            cls = self.tree.resolve(target, row.class_name)
            if cls.external or cls.opaque_reason:
                raise Unresolved(cls.opaque_reason or f"{cls.qualname} is outside the vLLM tree")
            mro = c3_mro(cls)
        except Unresolved as err:
            self.warn(
                "unresolved-class",
                row.architecture,
                f"{row.architecture} -> {target}.{row.class_name}: {err.reason}; every flag "
                "is unknown",
                row.class_name,
            )
            return self._record(row, None, [], values, "unresolved")
        unknown: list[str] = []
        model = ClassValue(cls)
        for name, expression in self.fields:
            if name in SKIPPED_FIELDS:
                continue
            value = self.evaluator.expression(self.registry, expression, {self.param: model}, 0)
            values[name] = value
            if isinstance(value, Unknown):
                unknown.append(f"{name} ({value.reason})")
        for name, (mod, definition) in self.extra.items():
            value = self.evaluator.call_function(mod, definition, [model], 0)
            values[name] = value
            if isinstance(value, Unknown):
                unknown.append(f"{name} ({value.reason})")
        if self.quant is not None:
            values["supports_quant"] = any(c.qualname == self.quant.qualname for c in mro)
        if unknown:
            self.warn(
                "unknown-flag",
                row.architecture,
                f"{row.architecture} ({cls.qualname}): not statically known: "
                + "; ".join(sorted(unknown)),
                row.class_name,
                cls.path,
            )
        return self._record(row, cls, mro, values, "resolved")

    def _record(self, row, cls, mro, values, status) -> ModelClassFlags:
        fields = {
            name: _plain(values.get(name))
            for name in ModelClassFlags.model_fields
            if name not in ("architecture", "class_name", "resolved_class", "status", "class_mro")
            and name not in ("path", "symbol")
        }
        return ModelClassFlags(
            architecture=row.architecture,
            class_name=row.class_name,
            resolved_class=cls.qualname if cls is not None else "",
            status=status,
            class_mro=tuple(c.qualname for c in mro if not c.external),
            path=cls.path if cls is not None else row.path,
            symbol=cls.name if cls is not None else row.class_name,
            **fields,
        )


def check_fields(reader: _FlagReader) -> None:
    """A `_ModelInfo` field the record has no column for is a warning, not a silent drop."""
    known = set(ModelClassFlags.model_fields)
    for name, _ in reader.fields:
        if name not in known and name not in SKIPPED_FIELDS:
            reader.warn(
                "unrecorded-field",
                name,
                f"_ModelInfo.{name} is computed by from_model_cls but has no column here",
                f"{MODEL_INFO_CLASS}.{FROM_METHOD}",
            )


def interface_flags_at(
    read_text: Callable[[str], str | None], registry_path: str
) -> list[InterfaceFlag]:
    """The interface flags of the modules `registry_path` imports its flag functions from."""
    tree = ClassTree(read_text)
    registry_module = module_name(registry_path)
    if tree.module(registry_module) is None:
        raise AnchorError(f"{registry_path} is missing", paths=[registry_path], anchor="interfaces")
    modules = interface_modules(tree, registry_module)
    found = interface_flags(tree, modules)
    if not found:
        raise AnchorError(
            "no ClassVar flags found in the interface modules registry.py imports",
            paths=[registry_path, *(m.replace(".", "/") + ".py" for m in modules)],
            anchor="ClassVar[Literal[True]]",
        )
    return found


def model_class_flags(
    read_text: Callable[[str], str | None], registry_path: str, rows: Sequence[RegistryRow]
) -> tuple[list[ModelClassFlags], list[InterfaceFlag], list[ExtractionWarning], list[str]]:
    """(flags per architecture, interface flags, warnings, paths read) for the registry rows."""
    reader = _FlagReader(read_text, registry_path)
    check_fields(reader)
    records = [reader.flags(row) for row in sorted(rows, key=lambda r: r.architecture)]
    interfaces = interface_flags(reader.tree, reader.interfaces)
    return records, interfaces, reader.warnings, reader.tree.read_paths


__all__ = [
    "interface_flags_at",
    "model_class_flags",
    "model_info_fields",
    "registry_module_for",
]
