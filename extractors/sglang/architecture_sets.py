"""SGLang's architecture-name sets in configs/model_config.py: which architectures each `is_*`
predicate and each ModelConfig attribute picks out.

A set may be a literal in the function, a local list, or a module constant, built with
`*SPREAD` of other constants and grown by module-level `.append(...)`. An extra condition of the
set (`... and index_topk is not None`) or of one member (Laguna only with a sliding window) is
kept in structured form; an opt-in by config field (`getattr(hf_text_config, "is_hybrid_swa",
False)`) is the member "*". Pure: file text in, records out.

Read from tree-sitter's tree of the file (the one model_config's other readers share), walking
statements only where a reader looks for assignments and `if`s. Expressions are read as libcst
shows them: parentheses are looked through when a node's kind is tested, and kept in its code."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tree_sitter import Node

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.config_reads import config_root
from apron.extractors.parsing.expressions import (
    config_condition,
    has_unread,
    python_all,
    python_not,
)
from apron.extractors.parsing.python_forms import body_statements
from apron.extractors.parsing.python_ts import (
    COLLECTIONS,
    COMPREHENSIONS,
    assignments_and_ifs,
    attribute,
    boolean,
    call_parts,
    callee,
    code_of,
    comparison,
    conjuncts,
    defined_name,
    if_clauses,
    methods_of,
    name_of,
    negated,
    node_text,
    parse_python,
    returned,
    single_assignment,
    single_comparison,
    statements,
    string_value,
    undecorated,
    unparenthesize,
)
from apron.extractors.records import ExtractionWarning, WarnsInFile
from apron.extractors.sglang.records import SglangArchitectureSet

FACT = "architecture_sets"
CLASS = "ModelConfig"
PREDICATE_PREFIX = "is_"
HYBRID_SWA_SETS = ("is_hybrid_swa_model", "is_hybrid_model")
ARCH_CALLS = ("_hf_arch",)
CONFIG_READERS = ("getattr", "_hf_attr")


@dataclass(frozen=True)
class Member:
    architecture: str
    via: str
    symbol: str
    condition: Node | None = None  # a member appended under a module-level `if`


@dataclass(frozen=True)
class Condition:
    expression: str  # as written (a negated exception: its negation)
    rule: Any  # in the rule language (config_condition)


@dataclass
class _Reader(WarnsInFile):
    path: str
    constants: dict[str, Node]
    appended: dict[str, list[Member]]
    warnings: list[ExtractionWarning] = field(default_factory=list)

    # -- collections

    def members(
        self,
        node: Node,
        env: dict[str, Node],
        symbol: str,
        seen: frozenset[str] = frozenset(),
    ) -> list[Member] | None:
        """The architectures of a string collection (literal, local or module constant)."""
        name = name_of(node)
        if name is not None and name not in seen:
            if name in env:
                return self.members(env[name], env, symbol, seen | {name})
            if name in self.constants:
                found = self.members(self.constants[name], {}, name, seen | {name})
                return None if found is None else found + self.appended.get(name, [])
            return None
        inner = unparenthesize(node)
        if inner.type not in COLLECTIONS:
            return None
        found: list[Member] = []
        for element in inner.named_children:
            if element.type == "list_splat":
                value = element.named_children[0]
                inner_members = self.members(value, env, symbol, seen)
                spread = f"*{code_of(value)}"
                if inner_members is None:
                    self.warn(
                        "unresolved-spread",
                        spread,
                        f"`{spread}` in {symbol} is not a string collection apron can read",
                        symbol,
                    )
                    continue
                found += [
                    Member(m.architecture, m.via or spread, m.symbol, m.condition)
                    for m in inner_members
                ]
                continue
            value = string_value(element)
            if value is None:
                self.warn(
                    "non-literal-member",
                    code_of(element),
                    f"{symbol} holds `{code_of(element)}`, which is not a string literal",
                    symbol,
                )
                continue
            found.append(Member(value, "", symbol))
        return found

    # -- architecture expressions and membership tests

    def is_arch(self, node: Node, arch_names: frozenset[str]) -> bool:
        name = name_of(node)
        if name is not None:
            return name in arch_names or "architectures" in name
        if callee(node) in ARCH_CALLS:
            return True
        return "architectures" in code_of(node)

    def membership(
        self,
        node: Node,
        env: dict[str, Node],
        arch_names: frozenset[str],
        symbol: str,
    ) -> list[Member] | None:
        """The members when `node` is true exactly for architectures of a set, else None."""
        either = boolean(node, "or")
        if either is not None:
            left = self.membership(either[0], env, arch_names, symbol)
            right = self.membership(either[1], env, arch_names, symbol)
            return left + right if left is not None and right is not None else None
        compared = single_comparison(node)
        if compared is not None:
            left, op, right = compared
            if op == "in":
                literal = string_value(left)
                if literal is not None and self.is_arch(right, arch_names):
                    return [Member(literal, "", symbol)]
                if self.is_arch(left, arch_names):
                    return self.members(right, env, symbol)
            if op == "==":
                for arch, other in ((left, right), (right, left)):
                    literal = string_value(other)
                    if literal is not None and self.is_arch(arch, arch_names):
                        return [Member(literal, "", symbol)]
            return None
        if comparison(node) is not None:
            return None
        parts = call_parts(node)
        if parts is None or code_of(parts[0]) != "any" or len(parts[1]) != 1:
            return None
        generator = unparenthesize(parts[1][0])
        if generator.type not in COMPREHENSIONS:
            return None
        loops = [c for c in generator.named_children if c.type == "for_in_clause"]
        if (
            len(loops) != 1
            or unparenthesize(loops[0].child_by_field_name("left")).type != "identifier"
        ):
            return None
        target = node_text(unparenthesize(loops[0].child_by_field_name("left")))
        loop_iter = loops[0].child_by_field_name("right")
        element = generator.child_by_field_name("body")
        if self.is_arch(loop_iter, arch_names):
            return self.membership(element, env, arch_names | {target}, symbol)
        tested = single_comparison(element)
        if (
            tested is not None
            and tested[1] == "in"
            and name_of(tested[0]) == target
            and self.is_arch(tested[2], arch_names)
        ):
            return self.members(loop_iter, env, symbol)
        return None

    def split(
        self,
        test: Node,
        env: dict[str, Node],
        arch_names: frozenset[str],
        symbol: str,
    ) -> tuple[list[Member] | None, list[Node]]:
        """(members, the other conjuncts) of a test with exactly one membership conjunct."""
        parts = conjuncts(test)
        tested = [(p, self.membership(p, env, arch_names, symbol)) for p in parts]
        with_members = [(p, m) for p, m in tested if m is not None]
        if len(with_members) != 1:
            return None, [p for p in parts if not self.is_guard(p)]
        part, members = with_members[0]
        return members, [p for p in parts if p.id != part.id and not self.is_guard(p)]

    def is_guard(self, node: Node) -> bool:
        """`hf_text_config is not None`: a check that an optional config argument was given."""
        compared = single_comparison(node)
        if compared is None:
            return False
        left, op, right = compared
        return (
            op == "is not"
            and code_of(right) == "None"
            and (config_root(left) is not None or code_of(left).endswith(".architectures"))
        )

    # -- conditions

    def condition(self, node: Node, negate: bool = False) -> Condition:
        """A condition (an exception's, negated) as written and in the rule language."""
        rule = config_condition(node, readers=CONFIG_READERS)
        return Condition(_text(node, negate), python_not(rule) if negate else rule)

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
        expression = " and ".join(c.expression for c in conditions) or None
        rule = python_all(c.rule for c in conditions)
        if has_unread(rule):
            self.warn(
                "unstructured-condition",
                set_name,
                f"condition `{expression}` is not read",
                symbol,
            )
        return SglangArchitectureSet(
            set_name=set_name,
            architecture=member.architecture,
            member_returns=returns,
            via=member.via,
            condition=expression,
            condition_rule=rule,
            path=self.path,
            symbol=member.symbol,
        )


def _text(node: Node, negate: bool) -> str:
    """A condition's code, or its negation's as a reader writes it."""
    inner = negated(node)
    if inner is not None:
        return _text(inner, not negate)
    text = code_of(node)
    if not negate:
        return text
    if text.endswith(" is not None"):
        return text[: -len(" is not None")] + " is None"
    return f"not ({text})"


def _returned_bool(body: list[Node]) -> bool | None:
    value = returned(body[-1]) if body else None
    name = name_of(value) if value is not None else None
    return {"True": True, "False": False}.get(name) if name is not None else None


def _locals(
    assigned: list[tuple[Node, Node]], reader: _Reader, arch_names: frozenset[str]
) -> tuple[dict[str, Node], frozenset[str]]:
    env: dict[str, Node] = {}
    names = set(arch_names)
    for target, value in assigned:
        name = name_of(target)
        if name is not None and unparenthesize(target).type == "identifier":
            env[name] = value
            if reader.is_arch(value, frozenset(names)):
                names.add(name)
    return env, frozenset(names)


def _branch_rows(
    reader: _Reader,
    name: str,
    test: Node,
    inner: list[Node],
    env: dict[str, Node],
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
        if statement.type != "if_statement":
            continue
        if _returned_bool(statements(statement.child_by_field_name("consequence"))) is not (
            not outcome
        ):
            continue
        excepted, unless = reader.split(
            statement.child_by_field_name("condition"), env, arch_names, name
        )
        for member in excepted or ():
            exceptions[member.architecture] = [reader.condition(u, negate=True) for u in unless]
    return [
        reader.row(name, m, outcome, conditions + exceptions.get(m.architecture, []), name)
        for m in members
    ]


def _predicate_rows(reader: _Reader, name: str, fn: Node) -> list[SglangArchitectureSet]:
    body = body_statements(fn)
    assigned = [a for a in map(single_assignment, body) if a is not None]
    env, arch_names = _locals(assigned, reader, frozenset())
    rows: list[SglangArchitectureSet] = []
    for node in body:
        value = returned(node)
        if value is not None:
            members, others = reader.split(value, env, arch_names, name)
            conditions = [reader.condition(o) for o in others]
            rows += [reader.row(name, m, True, conditions, name) for m in members or ()]
            continue
        if node.type == "if_statement":
            clauses, _ = if_clauses(node)
            for test, branch in clauses:
                rows += _branch_rows(reader, name, test, statements(branch), env, arch_names)
    return rows


def _attribute_rows(reader: _Reader, cls: Node) -> list[SglangArchitectureSet]:
    """`self.X = <membership>` in any method, and local lists tested in a method's `if`."""
    rows: list[SglangArchitectureSet] = []
    class_name = defined_name(cls)
    for method_name, method in methods_of(cls).items():
        symbol = f"{class_name}.{method_name}"
        found = list(assignments_and_ifs(method))  # one walk for the assignments and the ifs
        assigns = [a for kind, a in found if kind == "assign"]
        env, arch_names = _locals(assigns, reader, frozenset())
        for target, value in assigns:
            read = attribute(target)
            if read is not None and code_of(read[0]) == "self":
                members, others = reader.split(value, env, arch_names, symbol)
                conditions = [reader.condition(o) for o in others]
                set_name = f"{class_name}.{read[1]}"
                rows += [reader.row(set_name, m, True, conditions, symbol) for m in members or ()]
        for kind, clause in found:
            if kind != "if":
                continue
            test = clause.child_by_field_name("condition")
            for part in conjuncts(test):
                local = _local_collection(part, env, reader.constants)
                if local is None or local in arch_names:
                    continue
                members, others = reader.split(test, env, arch_names, symbol)
                conditions = [reader.condition(o) for o in others]
                set_name = f"{symbol}.{local}"
                rows += [reader.row(set_name, m, True, conditions, symbol) for m in members or ()]
    return rows


def _local_collection(
    node: Node, env: dict[str, Node], constants: Mapping[str, Node]
) -> str | None:
    """The local list or module constant named in `<arch> in NAME`, else None (a method's `if`
    on a module constant, `elif architectures[0] in MIMO_V2_MULTIMODAL_ARCHS and ...`, is a set
    of its own, named after the constant)."""
    compared = single_comparison(node)
    if compared is None or compared[1] != "in" or unparenthesize(compared[2]).type != "identifier":
        return None
    name = name_of(compared[2])
    return name if name in env or name in constants else None


def _top_level_assignments(root: Node) -> dict[str, Node]:
    """`NAME = value` and `NAME: T = value` at module level; the last assignment wins."""
    found: dict[str, Node] = {}
    for statement in root.named_children:
        if statement.type != "expression_statement":
            continue
        inner = statement.named_children
        if len(inner) != 1 or inner[0].type != "assignment":
            continue
        value = inner[0].child_by_field_name("right")
        target = inner[0].child_by_field_name("left")
        if value is None or target is None or unparenthesize(target).type != "identifier":
            continue
        if value.type == "assignment" and inner[0].child_by_field_name("type") is None:
            continue  # `a = b = value`: two targets
        found[node_text(unparenthesize(target))] = value
    return found


def _module_appends(reader: _Reader, root: Node) -> None:
    """Members added at module level: `NAME.append("X")`, under an `if` or not."""
    for statement in root.named_children:
        condition: Node | None = None
        body: list[Node] = [statement]
        if statement.type == "if_statement" and not statement.children_by_field_name("alternative"):
            condition = statement.child_by_field_name("condition")
            body = statements(statement.child_by_field_name("consequence"))
        for node in body:
            inner = node.named_children if node.type == "expression_statement" else []
            parts = call_parts(inner[0]) if len(inner) == 1 else None
            if parts is None or len(parts[1]) != 1:
                continue
            method = attribute(parts[0])
            if method is None or method[1] != "append":
                continue
            name = name_of(method[0])
            if (
                name is None
                or unparenthesize(method[0]).type != "identifier"
                or name not in reader.constants
            ):
                continue
            value = string_value(parts[1][0])
            if condition is not None and unparenthesize(condition).type == "named_expression":
                condition = unparenthesize(condition).child_by_field_name("value")
            if value is None:
                when = f" when `{code_of(condition)}`" if condition is not None else ""
                reader.warn(
                    "run-time-member",
                    name,
                    f"{name} also gets `{code_of(parts[1][0])}` appended{when}: "
                    "a value known only at run time",
                    name,
                )
                continue
            reader.appended.setdefault(name, []).append(Member(value, "append", name, condition))


def _tests_architectures(fn: Node) -> bool:
    """Whether any comparison under `fn` names `architectures`."""
    if b"architectures" not in (fn.text or b""):
        return False
    stack = [fn]
    while stack:
        node = stack.pop()
        if node.type == "comparison_operator" and "architectures" in code_of(node):
            return True
        stack.extend(node.children)
    return False


def architecture_sets(
    text: str, path: str
) -> tuple[list[SglangArchitectureSet], list[ExtractionWarning]]:
    """Every architecture each `is_*` function and ModelConfig attribute of the file tests."""
    root = parse_python(text, path)
    reader = _Reader(path, _top_level_assignments(root), {})
    _module_appends(reader, root)
    rows: list[SglangArchitectureSet] = []
    functions = [
        (defined_name(undecorated(s)), s)
        for s in root.named_children
        if undecorated(s).type == "function_definition"
        and defined_name(undecorated(s)).startswith(PREDICATE_PREFIX)
    ]
    for name, statement in functions:
        found = _predicate_rows(reader, name, undecorated(statement))
        if not found and _tests_architectures(statement):
            reader.warn(
                "unread-predicate",
                name,
                f"{name} tests architectures in a shape apron does not read",
                name,
            )
        rows += found
    classes = {
        defined_name(c): c
        for c in map(undecorated, root.named_children)
        if c.type == "class_definition"
    }
    cls = classes.get(CLASS)
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
