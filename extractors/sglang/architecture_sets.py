"""SGLang's architecture-name sets in configs/model_config.py: which architectures each `is_*`
predicate and each ModelConfig attribute picks out.

A set may be a literal in the function, a local list, or a module constant, built with
`*SPREAD` of other constants and grown by module-level `.append(...)`. An extra condition of the
set (`... and index_topk is not None`) or of one member (Laguna only with a sliding window) is
kept in structured form; an opt-in by config field (`getattr(hf_text_config, "is_hybrid_swa",
False)`) is the member "*". Pure: file text in, records out."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import libcst as cst

from extractors.errors import AnchorError
from extractors.parsing.python_cst import (
    class_methods,
    compact_code,
    conjuncts,
    parse_module,
    statements,
    string_value,
    top_level_assignments,
    top_level_classes,
    walk,
)
from extractors.records import ExtractionWarning, WarnsInFile
from extractors.sglang.model_config_shape import sets_text
from extractors.sglang.records import SglangArchitectureSet

FACT = "architecture_sets"
CLASS = "ModelConfig"
PREDICATE_PREFIX = "is_"
HYBRID_SWA_SETS = ("is_hybrid_swa_model", "is_hybrid_model")
ARCH_CALLS = ("_hf_arch",)
CONFIG_ROOTS = {
    "self.hf_text_config": "hf_text_config",
    "self.hf_config": "hf_config",
    "hf_text_config": "hf_text_config",
    "hf_config": "hf_config",
    "config": "hf_config",
}
CONFIG_READERS = ("getattr", "_hf_attr")


@dataclass(frozen=True)
class Member:
    architecture: str
    via: str
    symbol: str
    condition: cst.BaseExpression | None = None  # a member appended under a module-level `if`


@dataclass(frozen=True)
class Condition:
    expression: str
    config: str = ""
    field: str = ""
    check: str = "expression"
    default: str = ""
    when_absent: bool | None = None


@dataclass
class _Reader(WarnsInFile):
    module: cst.Module
    path: str
    constants: dict[str, cst.BaseExpression]
    appended: dict[str, list[Member]]
    warnings: list[ExtractionWarning] = field(default_factory=list)

    def code(self, node: cst.CSTNode) -> str:
        return compact_code(self.module, node)

    # -- collections

    def members(
        self,
        node: cst.BaseExpression,
        env: dict[str, cst.BaseExpression],
        symbol: str,
        seen: frozenset[str] = frozenset(),
    ) -> list[Member] | None:
        """The architectures of a string collection (literal, local or module constant)."""
        if isinstance(node, cst.Name) and node.value not in seen:
            name = node.value
            if name in env:
                return self.members(env[name], env, symbol, seen | {name})
            if name in self.constants:
                found = self.members(self.constants[name], {}, name, seen | {name})
                return None if found is None else found + self.appended.get(name, [])
            return None
        if not isinstance(node, cst.List | cst.Tuple | cst.Set):
            return None
        found: list[Member] = []
        for element in node.elements:
            if isinstance(element, cst.StarredElement):
                inner = self.members(element.value, env, symbol, seen)
                spread = f"*{self.code(element.value)}"
                if inner is None:
                    self.warn(
                        "unresolved-spread",
                        spread,
                        f"`{spread}` in {symbol} is not a string collection apron can read",
                        symbol,
                    )
                    continue
                found += [
                    Member(m.architecture, m.via or spread, m.symbol, m.condition) for m in inner
                ]
                continue
            value = string_value(element.value)
            if value is None:
                self.warn(
                    "non-literal-member",
                    self.code(element.value),
                    f"{symbol} holds `{self.code(element.value)}`, which is not a string literal",
                    symbol,
                )
                continue
            found.append(Member(value, "", symbol))
        return found

    # -- architecture expressions and membership tests

    def is_arch(self, node: cst.BaseExpression, arch_names: frozenset[str]) -> bool:
        if isinstance(node, cst.Name):
            return node.value in arch_names or "architectures" in node.value
        if isinstance(node, cst.Call) and self.code(node.func) in ARCH_CALLS:
            return True
        return "architectures" in self.code(node)

    def membership(
        self,
        node: cst.BaseExpression,
        env: dict[str, cst.BaseExpression],
        arch_names: frozenset[str],
        symbol: str,
    ) -> list[Member] | None:
        """The members when `node` is true exactly for architectures of a set, else None."""
        if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.Or):
            left = self.membership(node.left, env, arch_names, symbol)
            right = self.membership(node.right, env, arch_names, symbol)
            return left + right if left is not None and right is not None else None
        if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
            op = node.comparisons[0].operator
            right = node.comparisons[0].comparator
            if isinstance(op, cst.In):
                literal = string_value(node.left)
                if literal is not None and self.is_arch(right, arch_names):
                    return [Member(literal, "", symbol)]
                if self.is_arch(node.left, arch_names):
                    return self.members(right, env, symbol)
            if isinstance(op, cst.Equal):
                for arch, other in ((node.left, right), (right, node.left)):
                    literal = string_value(other)
                    if literal is not None and self.is_arch(arch, arch_names):
                        return [Member(literal, "", symbol)]
            return None
        if (
            isinstance(node, cst.Call)
            and self.code(node.func) == "any"
            and len(node.args) == 1
            and isinstance(node.args[0].value, cst.GeneratorExp | cst.ListComp)
        ):
            generator = node.args[0].value
            loop = generator.for_in
            if loop.inner_for_in is not None or not isinstance(loop.target, cst.Name):
                return None
            target = loop.target.value
            if self.is_arch(loop.iter, arch_names):
                return self.membership(generator.elt, env, arch_names | {target}, symbol)
            element = generator.elt
            if (
                isinstance(element, cst.Comparison)
                and len(element.comparisons) == 1
                and isinstance(element.comparisons[0].operator, cst.In)
                and isinstance(element.left, cst.Name)
                and element.left.value == target
                and self.is_arch(element.comparisons[0].comparator, arch_names)
            ):
                return self.members(loop.iter, env, symbol)
        return None

    def split(
        self,
        test: cst.BaseExpression,
        env: dict[str, cst.BaseExpression],
        arch_names: frozenset[str],
        symbol: str,
    ) -> tuple[list[Member] | None, list[cst.BaseExpression]]:
        """(members, the other conjuncts) of a test with exactly one membership conjunct."""
        parts = conjuncts(test)
        tested = [(p, self.membership(p, env, arch_names, symbol)) for p in parts]
        with_members = [(p, m) for p, m in tested if m is not None]
        if len(with_members) != 1:
            return None, [p for p in parts if not self.is_guard(p)]
        part, members = with_members[0]
        return members, [p for p in parts if p is not part and not self.is_guard(p)]

    def is_guard(self, node: cst.BaseExpression) -> bool:
        """`hf_text_config is not None`: a check that an optional config argument was given."""
        return (
            isinstance(node, cst.Comparison)
            and len(node.comparisons) == 1
            and isinstance(node.comparisons[0].operator, cst.IsNot)
            and self.code(node.comparisons[0].comparator) == "None"
            and (
                (isinstance(node.left, cst.Name) and node.left.value in CONFIG_ROOTS)
                or self.code(node.left).endswith(".architectures")
            )
        )

    # -- conditions

    def config_read(self, node: cst.BaseExpression) -> tuple[str, str, str] | None:
        """(config, field, default) for `getattr(cfg, "f", D)`, `_hf_attr(cfg, "f")`, `cfg.f`."""
        if isinstance(node, cst.Call) and self.code(node.func) in CONFIG_READERS:
            if len(node.args) in (2, 3):
                root = CONFIG_ROOTS.get(self.code(node.args[0].value))
                key = string_value(node.args[1].value)
                if root and key:
                    default = self.code(node.args[2].value) if len(node.args) == 3 else ""
                    if self.code(node.func) == "_hf_attr":
                        default = "None"
                    return root, key, default
        if isinstance(node, cst.Attribute):
            root = CONFIG_ROOTS.get(self.code(node.value))
            if root:
                return root, node.attr.value, ""
        return None

    def condition(self, node: cst.BaseExpression, negate: bool = False) -> Condition:
        text = self.code(node)
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            return self.condition(node.expression, not negate)
        read: tuple[str, str, str] | None = None
        check = "truthy"
        if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
            op = node.comparisons[0].operator
            if self.code(node.comparisons[0].comparator) == "None" and isinstance(
                op, cst.IsNot | cst.Is
            ):
                read = self.config_read(node.left)
                check = "is not None" if isinstance(op, cst.IsNot) else "is None"
        elif isinstance(node, cst.Call) and self.code(node.func) == "hasattr":
            if len(node.args) == 2:
                root = CONFIG_ROOTS.get(self.code(node.args[0].value))
                key = string_value(node.args[1].value)
                if root and key:
                    read, check = (root, key, ""), "present"
        else:
            read = self.config_read(node)
        if read is None:
            return Condition(f"not ({text})" if negate else text)
        if negate:
            check = {
                "truthy": "falsy",
                "is not None": "is None",
                "is None": "is not None",
                "present": "absent",
            }[check]
            text = (
                text[: -len(" is not None")] + " is None"
                if text.endswith(" is not None")
                else (f"not {text}")
            )
        return Condition(text, read[0], read[1], check, read[2], _when_absent(check, read[2]))

    def row(
        self,
        set_name: str,
        member: Member,
        returns: bool,
        conditions: list[Condition],
        symbol: str,
    ) -> SglangArchitectureSet:
        if member.condition is not None:
            conditions = [*conditions, self.condition(member.condition)]
        single = conditions[0] if len(conditions) == 1 else None
        expression = " and ".join(c.expression for c in conditions) or None
        if conditions and (single is None or single.check == "expression"):
            self.warn(
                "unstructured-condition",
                set_name,
                f"condition `{expression}` is kept as text only",
                symbol,
            )
        return SglangArchitectureSet(
            set_name=set_name,
            architecture=member.architecture,
            member_returns=returns,
            via=member.via,
            condition=expression,
            condition_config=single.config if single else "",
            condition_field=single.field if single else "",
            condition_check=(single.check if single else "expression") if conditions else "",
            condition_default=single.default if single else "",
            condition_when_absent=single.when_absent if single else None,
            path=self.path,
            symbol=member.symbol,
        )


_LITERALS: dict[str, object] = {"None": None, "True": True, "False": False}


def _when_absent(check: str, default: str) -> bool | None:
    """The truth of a structured condition when its field is absent, from the getattr default
    as written; None when the read has no default or the default is not a plain literal."""
    if check in ("present", "absent"):
        return check == "absent"
    if default in _LITERALS:
        value = _LITERALS[default]
    elif re.fullmatch(r"-?\d+(?:\.\d+)?", default):
        value = float(default)
    elif len(default) >= 2 and default[0] == default[-1] and default[0] in "\"'":
        value = default[1:-1]
    else:
        return None
    return {
        "is not None": value is not None,
        "is None": value is None,
        "truthy": bool(value),
        "falsy": not value,
    }.get(check)


def _returned_bool(body: list[cst.CSTNode]) -> bool | None:
    if body and isinstance(body[-1], cst.Return) and isinstance(body[-1].value, cst.Name):
        return {"True": True, "False": False}.get(body[-1].value.value)
    return None


def _locals(
    body: list[cst.CSTNode], reader: _Reader, arch_names: frozenset[str]
) -> tuple[dict[str, cst.BaseExpression], frozenset[str]]:
    env: dict[str, cst.BaseExpression] = {}
    names = set(arch_names)
    for node in body:
        if (
            isinstance(node, cst.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0].target, cst.Name)
        ):
            name = node.targets[0].target.value
            env[name] = node.value
            if reader.is_arch(node.value, frozenset(names)):
                names.add(name)
    return env, frozenset(names)


def _branches(node: cst.If) -> list[tuple[cst.BaseExpression, list[cst.CSTNode]]]:
    """(test, body) of an if and each of its elifs."""
    found = [(node.test, statements(node.body))]
    while isinstance(node.orelse, cst.If):
        node = node.orelse
        found.append((node.test, statements(node.body)))
    return found


def _branch_rows(
    reader: _Reader,
    name: str,
    test: cst.BaseExpression,
    inner: list[cst.CSTNode],
    env: dict[str, cst.BaseExpression],
    arch_names: frozenset[str],
) -> list[SglangArchitectureSet]:
    returns = _returned_bool(inner)
    members, others = reader.split(test, env, arch_names, name)
    conditions = [reader.condition(o) for o in others]
    if members is None:
        if returns is True and conditions:
            return [reader.row(name, Member("*", "", name), True, conditions, name)]
        return []
    outcome = True if returns is None else returns
    exceptions: dict[str, list[Condition]] = {}
    for statement in inner:
        if not isinstance(statement, cst.If):
            continue
        if _returned_bool(statements(statement.body)) is not (not outcome):
            continue
        excepted, unless = reader.split(statement.test, env, arch_names, name)
        for member in excepted or ():
            exceptions[member.architecture] = [reader.condition(u, negate=True) for u in unless]
    return [
        reader.row(name, m, outcome, conditions + exceptions.get(m.architecture, []), name)
        for m in members
    ]


def _predicate_rows(reader: _Reader, fn: cst.FunctionDef) -> list[SglangArchitectureSet]:
    name = fn.name.value
    body = statements(fn.body)
    env, arch_names = _locals(body, reader, frozenset())
    rows: list[SglangArchitectureSet] = []
    for node in body:
        if isinstance(node, cst.Return) and node.value is not None:
            members, others = reader.split(node.value, env, arch_names, name)
            conditions = [reader.condition(o) for o in others]
            rows += [reader.row(name, m, True, conditions, name) for m in members or ()]
            continue
        if isinstance(node, cst.If):
            for test, branch in _branches(node):
                rows += _branch_rows(reader, name, test, branch, env, arch_names)
    return rows


def _attribute_rows(reader: _Reader, cls: cst.ClassDef) -> list[SglangArchitectureSet]:
    """`self.X = <membership>` in any method, and local lists tested in a method's `if`."""
    rows: list[SglangArchitectureSet] = []
    class_name = cls.name.value
    for method_name, method in class_methods(cls).items():
        symbol = f"{class_name}.{method_name}"
        nodes = list(walk(method))  # one walk for the assignments and the ifs
        assigns = [n for n in nodes if isinstance(n, cst.Assign) and len(n.targets) == 1]
        env, arch_names = _locals(assigns, reader, frozenset())
        for node in assigns:
            target = node.targets[0].target
            if isinstance(target, cst.Attribute) and reader.code(target.value) == "self":
                members, others = reader.split(node.value, env, arch_names, symbol)
                conditions = [reader.condition(o) for o in others]
                set_name = f"{class_name}.{target.attr.value}"
                rows += [reader.row(set_name, m, True, conditions, symbol) for m in members or ()]
        for node in nodes:
            if not isinstance(node, cst.If):
                continue
            for part in conjuncts(node.test):
                local = _local_collection(part, env)
                if local is None or local in arch_names:
                    continue
                members, others = reader.split(node.test, env, arch_names, symbol)
                conditions = [reader.condition(o) for o in others]
                set_name = f"{symbol}.{local}"
                rows += [reader.row(set_name, m, True, conditions, symbol) for m in members or ()]
    return rows


def _local_collection(node: cst.BaseExpression, env: dict[str, cst.BaseExpression]) -> str | None:
    """The local list name in `<arch> in local_list`, else None."""
    if (
        isinstance(node, cst.Comparison)
        and len(node.comparisons) == 1
        and isinstance(node.comparisons[0].operator, cst.In)
        and isinstance(node.comparisons[0].comparator, cst.Name)
        and node.comparisons[0].comparator.value in env
    ):
        return node.comparisons[0].comparator.value
    return None


def _module_appends(reader: _Reader) -> None:
    """Members added at module level: `NAME.append("X")`, under an `if` or not."""
    for statement in reader.module.body:
        condition: cst.BaseExpression | None = None
        body: list[cst.CSTNode] = [statement]
        if isinstance(statement, cst.If) and statement.orelse is None:
            condition, body = statement.test, statements(statement.body)
        elif isinstance(statement, cst.SimpleStatementLine):
            body = list(statement.body)
        for node in body:
            call = node.value if isinstance(node, cst.Expr) else None
            if not (
                isinstance(call, cst.Call)
                and isinstance(call.func, cst.Attribute)
                and call.func.attr.value == "append"
                and isinstance(call.func.value, cst.Name)
                and call.func.value.value in reader.constants
                and len(call.args) == 1
            ):
                continue
            name = call.func.value.value
            value = string_value(call.args[0].value)
            if isinstance(condition, cst.NamedExpr):
                condition = condition.value
            if value is None:
                when = f" when `{reader.code(condition)}`" if condition is not None else ""
                reader.warn(
                    "run-time-member",
                    name,
                    f"{name} also gets `{reader.code(call.args[0].value)}` appended{when}: "
                    "a value known only at run time",
                    name,
                )
                continue
            reader.appended.setdefault(name, []).append(Member(value, "append", name, condition))


def architecture_sets(
    text: str, path: str
) -> tuple[list[SglangArchitectureSet], list[ExtractionWarning]]:
    """Every architecture each `is_*` function and ModelConfig attribute of the file tests."""
    module = parse_module(sets_text(text), path)
    reader = _Reader(module, path, top_level_assignments(module), {})
    _module_appends(reader)
    rows: list[SglangArchitectureSet] = []
    functions = [
        s
        for s in module.body
        if isinstance(s, cst.FunctionDef) and s.name.value.startswith(PREDICATE_PREFIX)
    ]
    for fn in functions:
        found = _predicate_rows(reader, fn)
        if not found and any(
            reader.is_arch(n, frozenset()) for n in walk(fn) if isinstance(n, cst.Comparison)
        ):
            reader.warn(
                "unread-predicate",
                fn.name.value,
                f"{fn.name.value} tests architectures in a shape apron does not read",
                fn.name.value,
            )
        rows += found
    cls = top_level_classes(module).get(CLASS)
    if cls is not None:
        rows += _attribute_rows(reader, cls)
    if not any(r.set_name in HYBRID_SWA_SETS for r in rows):
        raise AnchorError(
            f"no hybrid-SWA architecture set ({' or '.join(HYBRID_SWA_SETS)}) found in {path}",
            paths=[path],
            anchor=" / ".join(f"def {n}(...)" for n in HYBRID_SWA_SETS),
        )
    unique: dict[tuple[str, str], SglangArchitectureSet] = {}
    for row in rows:
        unique.setdefault((row.set_name, row.architecture), row)
    return list(unique.values()), list(dict.fromkeys(reader.warnings))
