"""SGLang's attention-architecture chain in ModelConfig: which architectures run as MLA.

SGLang picks `self.attention_arch` in an if/elif chain over
`"<Arch>" in self.hf_config.architectures`. Every branch that sets `AttentionArch.MLA` yields
its architectures, with any extra condition of the branch (`... and getattr(cfg,
"kv_lora_rank", None) is not None`) kept in structured form; every branch that sets
`AttentionArch.MHA` explicitly yields an explicit-MHA row. Pure: file text in, records out.

Read from tree-sitter's tree of the file (the one model_config's other readers share), as the
libcst reader read it (extractors/parsing/python_ts.py)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from tree_sitter import Node

from apron.extractors.errors import AnchorError
from apron.extractors.parsing.config_reads import ConfigRead, config_read
from apron.extractors.parsing.expressions import config_condition, has_unread
from apron.extractors.parsing.python_ts import (
    assignments_and_ifs,
    attribute,
    boolean,
    code_of,
    conjuncts,
    defined_name,
    if_clauses,
    methods_of,
    parse_python,
    single_assignment,
    single_comparison,
    statements,
    string_value,
    undecorated,
    walk,
)
from apron.extractors.records import ExtractionWarning
from apron.extractors.sglang.records import (
    SglangExplicitMha,
    SglangMlaArchitecture,
    SglangMlaCondition,
)

CLASS = "ModelConfig"
TARGET = "self.attention_arch"
TARGET_ATTRIBUTE = "attention_arch"
ENUM = "AttentionArch"
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
    test: Node
    body: Node | None


@dataclass
class ChainFacts:
    mla: list[SglangMlaArchitecture]
    conditions: list[SglangMlaCondition]
    explicit_mha: list[SglangExplicitMha]
    warnings: list[ExtractionWarning]


class _Reader:
    def __init__(self, path: str, symbol: str) -> None:
        self.path = path
        self.symbol = symbol
        self.warnings: list[ExtractionWarning] = []

    def code(self, node: Node) -> str:
        return code_of(node)

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

    def assigned_arch(self, body: Node | None) -> tuple[str | None, bool]:
        """(MLA/MHA set at the top of the branch body or None, whether set only nested)."""
        for statement in statements(body):
            assigned = single_assignment(statement)
            if assigned is not None and self.code(assigned[0]) == TARGET:
                value = attribute(assigned[1])
                if value is not None and self.code(value[0]) == ENUM:
                    return value[1], False
                return "?" + self.code(assigned[1]), False
        nested = body is not None and any(
            kind == "assign" and self.code(found[0]) == TARGET
            for kind, found in assignments_and_ifs(body)
        )
        return None, nested

    # -- conditions

    def memberships(self, node: Node) -> list[tuple[str, list[Node]]]:
        """(architecture, extra conjuncts) for every way `node` can be true by architecture."""
        either = boolean(node, "or")
        if either is not None:
            return self.memberships(either[0]) + self.memberships(either[1])
        if boolean(node, "and") is not None:
            parts = conjuncts(node)
            with_arch = [p for p in parts if self.memberships(p)]
            if len(with_arch) != 1:
                return []
            others = [p for p in parts if p.id != with_arch[0].id]
            return [(arch, extra + others) for arch, extra in self.memberships(with_arch[0])]
        arch = self.membership(node)
        return [(arch, [])] if arch else []

    def membership(self, node: Node) -> str | None:
        """`"Arch" in self.hf_config.architectures` -> "Arch"."""
        compared = single_comparison(node)
        if compared is None or compared[1] != "in":
            return None
        if not self.code(compared[2]).endswith("architectures"):
            return None
        return string_value(compared[0])

    def condition(self, arch: str, node: Node) -> SglangMlaCondition:
        rule = config_condition(node)
        if has_unread(rule):
            self.warn("unstructured-condition", arch, f"condition `{self.code(node)}` is not read")
        return SglangMlaCondition(
            architecture=arch,
            expression=self.code(node),
            rule=rule,
            path=self.path,
            symbol=self.symbol,
        )

    def field_read(self, node: Node) -> ConfigRead | None:
        """`getattr(self.hf_text_config, "f", D)` / `self.hf_config.f`: one field of a config
        root (default None when read without one)."""
        read = config_read(node)
        return read if read is not None and read.field and "." not in read.field else None

    def mla_reads(self, body: Node | None) -> tuple[str, ...]:
        """The latent-attention fields a branch reads of a config, and the MLA helpers of
        `self` it names."""
        found: set[str] = set()
        for node in walk(body) if body is not None else ():
            if node.type not in ("attribute", "call"):
                continue
            read = self.field_read(node)
            if read is not None and read.field in MLA_FIELDS:
                found.add(read.field)
                continue
            named = attribute(node)
            if named is not None and named[1] in MLA_HELPERS and self.code(named[0]) == "self":
                found.add(named[1] + "()")
        return tuple(sorted(found))


def _branches(node: Node) -> tuple[list[Branch], Node | None]:
    """The if's and elifs' (test, body) in order, and the else block (None without one)."""
    clauses, otherwise = if_clauses(node)
    return [Branch(i + 1, test, body) for i, (test, body) in enumerate(clauses)], otherwise


LOOPS = ("for_statement", "while_statement", "with_statement", "try_statement")


def _is_try_star(statement: Node) -> bool:
    """`try: ... except* E: ...`."""
    return any(
        c.type == "except_group_clause"
        or (c.type == "except_clause" and any(t.type == "*" for t in c.children))
        for c in statement.children
    )


def _chain_statements(body: Node | None):
    """Every `if` statement in a method body, outermost first, not entering nested defs."""
    for statement in statements(body):
        if statement.type in ("function_definition", "class_definition", "decorated_definition"):
            continue
        if statement.type == "if_statement":
            yield statement
            clauses, otherwise = if_clauses(statement)
            for _test, block in clauses:
                yield from _chain_statements(block)
            if otherwise is not None:
                yield from _chain_statements(otherwise)
        elif statement.type in LOOPS:
            if statement.type == "try_statement" and _is_try_star(statement):
                continue  # libcst's TryStar, which the libcst reader did not enter
            yield from _chain_statements(statement.child_by_field_name("body"))


def find_chain(root: Node, path: str) -> tuple[str, Node]:
    """(`ModelConfig.<method>`, the first if-chain in which a branch assigns attention_arch)."""
    classes = {
        defined_name(c): c
        for c in map(undecorated, root.named_children)
        if c.type == "class_definition"
    }
    cls = classes.get(CLASS)
    if cls is None:
        raise AnchorError(
            f"class {CLASS} not found in {path}",
            paths=[path],
            anchor=f"{CLASS}: {TARGET} if/elif chain",
        )
    reader = _Reader(path, "")
    for name, method in methods_of(cls).items():
        for candidate in _chain_statements(method.child_by_field_name("body")):
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
    root = parse_python(text, path)
    symbol, chain = find_chain(root, path)
    reader = _Reader(path, symbol)
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
    if else_branch is not None and reader.assigned_arch(else_branch)[0] not in (None, "MHA"):
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
