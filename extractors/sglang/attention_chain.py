"""SGLang's attention-architecture chain in ModelConfig: which architectures run as MLA.

SGLang picks `self.attention_arch` in an if/elif chain over
`"<Arch>" in self.hf_config.architectures`. Every branch that sets `AttentionArch.MLA` yields
its architectures, with any extra condition of the branch (`... and getattr(cfg,
"kv_lora_rank", None) is not None`) kept in structured form; every branch that sets
`AttentionArch.MHA` explicitly yields an explicit-MHA row. Pure: file text in, records out."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import libcst as cst

from extractors.errors import AnchorError
from extractors.parsing.cst_children import children
from extractors.parsing.python_cst import (
    class_methods,
    compact_code,
    conjuncts,
    parse_module,
    statements,
    string_value,
    top_level_classes,
    walk,
)
from extractors.records import ExtractionWarning
from extractors.sglang.model_config_shape import chain_text
from extractors.sglang.records import SglangExplicitMha, SglangMlaArchitecture, SglangMlaCondition

CLASS = "ModelConfig"
TARGET = "self.attention_arch"
TARGET_ATTRIBUTE = "attention_arch"
ENUM = "AttentionArch"
CONFIG_ROOTS = {
    "self.hf_text_config": "hf_text_config",
    "self.hf_config": "hf_config",
    "hf_text_config": "hf_text_config",
    "hf_config": "hf_config",
}
# latent-attention config fields; a branch that reads them treats the model as MLA-shaped
MLA_FIELDS = (
    "kv_lora_rank",
    "q_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "index_head_dim",
    "compress_ratios",
)
MLA_HELPERS = ("_init_mla_scaling",)


@dataclass(frozen=True)
class Branch:
    position: int
    test: cst.BaseExpression
    body: cst.BaseSuite


@dataclass
class ChainFacts:
    mla: list[SglangMlaArchitecture]
    conditions: list[SglangMlaCondition]
    explicit_mha: list[SglangExplicitMha]
    warnings: list[ExtractionWarning]


class _Reader:
    def __init__(self, module: cst.Module, path: str, symbol: str) -> None:
        self.module = module
        self.path = path
        self.symbol = symbol
        self.warnings: list[ExtractionWarning] = []

    def code(self, node: cst.CSTNode) -> str:
        return compact_code(self.module, node)

    def warn(self, code: str, subject: str, message: str) -> None:
        self.warnings.append(
            ExtractionWarning(
                code=code,
                subject=subject,
                message=message,
                path=self.path,
                symbol=self.symbol,
            )
        )

    # -- the chain

    def assigned_arch(self, body: cst.BaseSuite) -> tuple[str | None, bool]:
        """(MLA/MHA set at the top of the branch body or None, whether set only nested)."""
        for statement in statements(body):
            if (
                isinstance(statement, cst.Assign)
                and len(statement.targets) == 1
                and self.code(statement.targets[0].target) == TARGET
            ):
                value = statement.value
                if isinstance(value, cst.Attribute) and self.code(value.value) == ENUM:
                    return value.attr.value, False
                return "?" + self.code(value), False
        nested = any(
            self.code(n.targets[0].target) == TARGET
            for n in _assignments(body)
            if len(n.targets) == 1
            and isinstance(n.targets[0].target, cst.Attribute)
            and n.targets[0].target.attr.value == TARGET_ATTRIBUTE
        )
        return None, nested

    # -- conditions

    def memberships(self, node: cst.BaseExpression) -> list[tuple[str, list[cst.BaseExpression]]]:
        """(architecture, extra conjuncts) for every way `node` can be true by architecture."""
        if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.Or):
            return self.memberships(node.left) + self.memberships(node.right)
        if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.And):
            parts = conjuncts(node)
            with_arch = [p for p in parts if self.memberships(p)]
            if len(with_arch) != 1:
                return []
            others = [p for p in parts if p is not with_arch[0]]
            return [(arch, extra + others) for arch, extra in self.memberships(with_arch[0])]
        arch = self.membership(node)
        return [(arch, [])] if arch else []

    def membership(self, node: cst.BaseExpression) -> str | None:
        """`"Arch" in self.hf_config.architectures` -> "Arch"."""
        if not isinstance(node, cst.Comparison) or len(node.comparisons) != 1:
            return None
        target = node.comparisons[0]
        if not isinstance(target.operator, cst.In):
            return None
        if not self.code(target.comparator).endswith("architectures"):
            return None
        return string_value(node.left)

    def condition(self, arch: str, node: cst.BaseExpression) -> SglangMlaCondition:
        config, fld, check, default = "", "", "expression", None
        inner = node
        if isinstance(inner, cst.UnaryOperation) and isinstance(inner.operator, cst.Not):
            read = self.config_read(inner.expression)
            if read:
                (config, fld, default), check = read, "falsy"
        elif (
            isinstance(inner, cst.Comparison)
            and len(inner.comparisons) == 1
            and isinstance(inner.comparisons[0].operator, cst.IsNot)
            and self.code(inner.comparisons[0].comparator) == "None"
        ):
            read = self.config_read(inner.left)
            if read:
                (config, fld, default), check = read, "is not None"
        elif (
            isinstance(inner, cst.Call)
            and self.code(inner.func) == "hasattr"
            and len(inner.args) == 2
        ):
            root = CONFIG_ROOTS.get(self.code(inner.args[0].value))
            key = string_value(inner.args[1].value)
            if root and key:
                config, fld, check = root, key, "present"
        else:
            read = self.config_read(inner)
            if read:
                (config, fld, default), check = read, "truthy"
        if check == "expression":
            self.warn(
                "unstructured-condition",
                arch,
                f"condition `{self.code(node)}` is kept as text only",
            )
        return SglangMlaCondition(
            architecture=arch,
            config=config,
            field=fld,
            check=check,
            default=self.code(default) if default is not None else "",
            when_absent=_truth_when_absent(check, default),
            expression=self.code(node),
            path=self.path,
            symbol=self.symbol,
        )

    def config_read(
        self, node: cst.BaseExpression
    ) -> tuple[str, str, cst.BaseExpression | None] | None:
        """(config, field, default node) for `getattr(self.hf_text_config, "f", D)` /
        `self.hf_config.f` (default None when read without one)."""
        if (
            isinstance(node, cst.Call)
            and self.code(node.func) == "getattr"
            and len(node.args) in (2, 3)
        ):
            root = CONFIG_ROOTS.get(self.code(node.args[0].value))
            key = string_value(node.args[1].value)
            if root and key:
                return root, key, node.args[2].value if len(node.args) == 3 else None
        if isinstance(node, cst.Attribute):
            root = CONFIG_ROOTS.get(self.code(node.value))
            if root:
                return root, node.attr.value, None
        return None

    def mla_reads(self, body: cst.BaseSuite) -> tuple[str, ...]:
        found: set[str] = set()
        for node in walk(body):
            if isinstance(node, cst.Attribute):
                if node.attr.value in MLA_FIELDS and self.code(node.value) in CONFIG_ROOTS:
                    found.add(node.attr.value)
                elif node.attr.value in MLA_HELPERS and self.code(node.value) == "self":
                    found.add(node.attr.value + "()")
            elif (
                isinstance(node, cst.Call)
                and self.code(node.func) == "getattr"
                and len(node.args) >= 2
            ):
                key = string_value(node.args[1].value)
                if key in MLA_FIELDS and self.code(node.args[0].value) in CONFIG_ROOTS:
                    found.add(key)
        return tuple(sorted(found))


def _assignments(node: cst.CSTNode):
    """The assignments under `node`, not looking into expressions (no statement is in one)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Assign):
            yield current
        elif not isinstance(current, cst.BaseExpression):
            stack += children(current)


_LITERALS = {"None": None, "True": True, "False": False}


def _truth_when_absent(check: str, default: cst.BaseExpression | None) -> bool | None:
    """The truth of a condition when its field is absent: from the getattr default, or False
    for `present`; None when the read has no default (it would raise) or the default is not a
    plain None/True/False/number/string literal."""
    if check == "present":
        return False
    if check == "expression" or default is None:
        return None
    if isinstance(default, cst.Name) and default.value in _LITERALS:
        value: object = _LITERALS[default.value]
    elif isinstance(default, cst.Integer | cst.Float):
        value = default.evaluated_value
    elif string_value(default) is not None:
        value = string_value(default)
    else:
        return None
    if check == "is not None":
        return value is not None
    return bool(value) if check == "truthy" else not value


def _branches(node: cst.If) -> tuple[list[Branch], cst.Else | None]:
    branches: list[Branch] = []
    current: cst.If | cst.Else | None = node
    while isinstance(current, cst.If):
        branches.append(Branch(position=len(branches) + 1, test=current.test, body=current.body))
        current = current.orelse
    return branches, current


def _chain_statements(body: cst.BaseSuite):
    """Every `if` statement in a method body, outermost first, not entering nested defs."""
    for statement in statements(body):
        if isinstance(statement, cst.FunctionDef | cst.ClassDef):
            continue
        if isinstance(statement, cst.If):
            yield statement
            current: cst.If | cst.Else | None = statement
            while current is not None:
                yield from _chain_statements(current.body)
                current = current.orelse if isinstance(current, cst.If) else None
            if isinstance(statement.orelse, cst.Else):
                yield from _chain_statements(statement.orelse.body)
        elif isinstance(statement, cst.For | cst.While | cst.With | cst.Try):
            yield from _chain_statements(statement.body)


def find_chain(module: cst.Module, path: str) -> tuple[str, cst.If]:
    """(`ModelConfig.<method>`, the first if-chain in which a branch assigns attention_arch)."""
    cls = top_level_classes(module).get(CLASS)
    if cls is None:
        raise AnchorError(
            f"class {CLASS} not found in {path}",
            paths=[path],
            anchor=f"{CLASS}: {TARGET} if/elif chain",
        )
    reader = _Reader(module, path, "")
    for name, method in class_methods(cls).items():
        for candidate in _chain_statements(method.body):
            branches, _ = _branches(candidate)
            if any(reader.assigned_arch(b.body)[0] for b in branches):
                return f"{CLASS}.{name}", candidate
    raise AnchorError(
        f"no if/elif chain in {CLASS} assigns {TARGET} in {path}",
        paths=[path],
        anchor=f"{CLASS}: {TARGET} if/elif chain",
    )


@lru_cache(maxsize=8)
def attention_chain(text: str, path: str) -> ChainFacts:
    """(Memoized: three facts read the same chain.) MLA architectures (with their conditions) and explicit-MHA architectures of the chain."""
    module = parse_module(chain_text(text), path)
    symbol, chain = find_chain(module, path)
    reader = _Reader(module, path, symbol)
    branches, else_branch = _branches(chain)
    mla: dict[str, SglangMlaArchitecture] = {}
    conditions: list[SglangMlaCondition] = []
    explicit_mha: dict[str, SglangExplicitMha] = {}
    first_branch: dict[str, int] = {}
    for branch in branches:
        arch_value, nested = reader.assigned_arch(branch.body)
        members = reader.memberships(branch.test)
        subject = ", ".join(a for a, _ in members) or reader.code(branch.test)[:60]
        if arch_value is None:
            if nested:
                reader.warn(
                    "conditional-assignment",
                    subject,
                    f"branch {branch.position} sets {TARGET} only inside a nested block; "
                    "not recorded",
                )
            continue
        if not members:
            reader.warn(
                "unparsed-branch",
                subject,
                f"branch {branch.position} sets {ENUM}.{arch_value} but its condition "
                "names no architecture this extractor can read; not recorded",
            )
            continue
        if arch_value not in ("MLA", "MHA"):
            reader.warn(
                "unknown-attention-arch",
                subject,
                f"branch {branch.position} sets {TARGET} to {arch_value}; not recorded",
            )
            continue
        for arch, extra in members:
            if arch in first_branch:
                reader.warn(
                    "shadowed-branch",
                    arch,
                    f"{arch} is tested in branch {first_branch[arch]} and again in branch "
                    f"{branch.position}; the first matching branch wins",
                )
                continue
            first_branch[arch] = branch.position
            if arch_value == "MLA":
                mla[arch] = SglangMlaArchitecture(
                    architecture=arch,
                    branch=branch.position,
                    conditional=bool(extra),
                    path=path,
                    symbol=symbol,
                )
                conditions += [reader.condition(arch, part) for part in extra]
            else:
                explicit_mha[arch] = SglangExplicitMha(
                    architecture=arch,
                    branch=branch.position,
                    mla_fields_read=reader.mla_reads(branch.body),
                    path=path,
                    symbol=symbol,
                )
    if else_branch is not None and reader.assigned_arch(else_branch.body)[0] not in (None, "MHA"):
        reader.warn("else-not-mha", "else", f"the else branch does not set {ENUM}.MHA")
    if not mla:
        raise AnchorError(
            f"the {TARGET} chain in {symbol} ({path}) has no MLA branch",
            paths=[path],
            anchor=f"{symbol}: {ENUM}.MLA branch",
        )
    return ChainFacts(
        mla=list(mla.values()),
        conditions=conditions,
        explicit_mha=list(explicit_mha.values()),
        warnings=reader.warnings,
    )
