"""llama.cpp architecture class sets: the `llm_arch_is_*` / `llm_arch_supports_*` predicates in
src/llama-arch.cpp, each a `switch (arch)` over case labels (or a constant), with its polarity.

`llm_arch_supports_sm_tensor` lists the architectures for which it returns FALSE and returns
true by default, so the set of architectures that HAVE a property is computed from the listed
labels, what they return and the default, over every architecture in LLM_ARCH_NAMES."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from tree_sitter import Node

from apron.extractors.errors import AnchorError, ParseError
from apron.extractors.llamacpp.records import (
    ArchName,
    ClassPredicate,
    ClassSetListed,
    ClassSetMember,
)
from apron.extractors.parsing.cpp_ts import (
    CppSource,
    bool_value,
    call_name,
    code_children,
    compact,
    function_body,
    function_declarations,
    function_definitions,
    node_text,
    parse_cpp,
    return_type_text,
    switch_case_groups,
    switch_subject,
)
from apron.extractors.records import ExtractionWarning, warning

# Every predicate llama.cpp had at the pin. The first two exist since 2025-06-19 (hybrid cache);
# their absence means a rename, not an older commit. The others arrived later
# (is_diffusion 2025-07-16, supports_sm_tensor 2026-04-09, supports_rs_rollback 2026-05-16).
REQUIRED_PREDICATES = ("llm_arch_is_recurrent", "llm_arch_is_hybrid")
KNOWN_PREDICATES = (
    *REQUIRED_PREDICATES,
    "llm_arch_is_diffusion",
    "llm_arch_supports_rs_rollback",
    "llm_arch_supports_sm_tensor",
)
PREDICATE_NAME = re.compile(r"^llm_arch_(is|supports)_\w+$")
UNKNOWN_ARCH = "LLM_ARCH_UNKNOWN"  # not an architecture: excluded from "every other architecture"


@dataclass(frozen=True)
class PredicateSet:
    """One predicate as read from the source."""

    predicate: str
    shape: str  # "switch", "constant" or "unrecognized"
    listed: tuple[tuple[str, bool, str], ...]  # (arch, returns, preprocessor condition)
    default: bool | None
    reason: str  # why the shape is unrecognized; "" otherwise
    path: str

    @property
    def listed_returns(self) -> bool | None:
        values = {returns for _, returns, _ in self.listed}
        return values.pop() if len(values) == 1 else None

    def returns_for(self, arch: str) -> bool | None:
        for listed_arch, returns, _ in self.listed:
            if listed_arch == arch:
                return returns
        return self.default

    def polarity(self) -> str:
        default = _word(self.default)
        if self.shape == "unrecognized":
            return f"not extracted: {self.reason}"
        if self.shape == "constant":
            return f"no list: returns {default} for every architecture"
        listed = self.listed_returns
        if listed is None:
            return f"each listed architecture returns its own value; default {default}"
        if listed == self.default:
            return f"listed architectures return {_word(listed)}; default {default} (the list changes nothing)"
        return f"listed architectures return {_word(listed)}; default {default}"


def _word(value: bool | None) -> str:
    return {True: "true", False: "false", None: "unknown"}[value]


@dataclass(frozen=True)
class PredicateScan:
    """Everything read from llama-arch.cpp/.h about the predicates."""

    sets: tuple[PredicateSet, ...]  # present predicates, known first then discovered, by name
    absent: tuple[str, ...]  # known predicates neither defined nor declared at this commit
    warnings: tuple[ExtractionWarning, ...]


def _parameter_names(definition: Node) -> list[str]:
    declarator = definition.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    if declarator is None:
        return []
    parameters = declarator.child_by_field_name("parameters")
    names = []
    for parameter in code_children(parameters) if parameters is not None else []:
        identifiers = [n for n in _descendants(parameter) if n.type == "identifier"]
        names.append(node_text(identifiers[-1]) if identifiers else "")
    return names


def _descendants(node: Node):
    for child in node.named_children:
        yield child
        yield from _descendants(child)


def _is_unused_marker(statement: Node, parameter: str) -> bool:
    """`GGML_UNUSED(arch);` or `(void) arch;`: a statement that only silences a warning."""
    if statement.type != "expression_statement":
        return False
    code = compact(statement).replace(" ", "")
    if code in (f"(void){parameter};", f"(void)({parameter});"):
        return True
    expression = code_children(statement)
    return (
        len(expression) == 1
        and expression[0].type == "call_expression"
        and call_name(expression[0]).endswith("UNUSED")
    )


def _returned_bool(statements: Sequence[Node], after: bool | None) -> tuple[bool | None, str]:
    """What a case body returns: its first statement must be `return true/false;` or `break;`
    (then the function's return after the switch). Empty means running off the switch's end."""
    if not statements:
        return after, "" if after is not None else "labels run off the end of the switch"
    first = statements[0]
    if first.type == "compound_statement":
        return _returned_bool(code_children(first), after)
    if first.type == "return_statement":
        values = code_children(first)
        value = bool_value(values[0]) if len(values) == 1 else None
        if value is not None:
            return value, ""
        return None, f"a case returns `{compact(first)}`, not true or false"
    if first.type == "break_statement":
        return (
            after,
            "" if after is not None else "a case breaks out with no return after the switch",
        )
    return None, f"a case body starts with `{compact(first)[:60]}`, not a return"


def read_predicate(source: CppSource, name: str, definition: Node) -> PredicateSet:
    """The switch (or constant) a predicate definition consists of; shape "unrecognized" with a
    reason for anything else."""

    def unrecognized(reason: str) -> PredicateSet:
        return PredicateSet(name, "unrecognized", (), None, reason, source.path)

    body = function_body(definition)
    source.require_clean(body, name)
    if return_type_text(definition) != "bool":
        return unrecognized(f"returns `{return_type_text(definition)}`, not bool")
    parameters = _parameter_names(definition)
    if len(parameters) != 1:
        return unrecognized("does not take exactly one llm_arch parameter")
    parameter = parameters[0]
    statements = [s for s in code_children(body) if not _is_unused_marker(s, parameter)]
    if len(statements) == 1 and statements[0].type == "return_statement":
        value, reason = _returned_bool(statements, None)
        if value is None:
            return unrecognized(reason)
        return PredicateSet(name, "constant", (), value, "", source.path)
    if not statements or statements[0].type != "switch_statement" or len(statements) > 2:
        return unrecognized("the body is not a `switch` over the architecture")
    switch = statements[0]
    if switch_subject(switch) != parameter:
        return unrecognized(f"the switch is over `{switch_subject(switch)}`, not `{parameter}`")
    after: bool | None = None
    if len(statements) == 2:
        after, reason = _returned_bool(statements[1:], None)
        if after is None:
            return unrecognized(f"after the switch: {reason}")
    listed: list[tuple[str, bool, str]] = []
    default: bool | None = None
    for group in switch_case_groups(switch):
        value, reason = _returned_bool(group.statements, after)
        if value is None:
            return unrecognized(reason)
        for label in group.labels:
            label_name = node_text(label).split("::")[-1]
            if label.type not in (
                "identifier",
                "qualified_identifier",
            ) or not label_name.startswith("LLM_ARCH_"):
                return unrecognized(f"case label `{compact(label)}` is not an LLM_ARCH_* value")
            listed.append((label_name, value, source.condition_at(label)))
        if group.has_default:
            default = value
    if default is None:
        default = after
    if default is None:
        return unrecognized("no default label and no return after the switch")
    return PredicateSet(name, "switch", tuple(listed), default, "", source.path)


def scan_predicates(
    cpp_text: str, cpp_path: str, header_text: str, header_path: str
) -> PredicateScan:
    """Read every predicate defined in llama-arch.cpp or declared in llama-arch.h.

    Errors: a required predicate missing (renamed?), a predicate declared in the header but not
    defined in the .cpp (renamed or moved?), a known predicate whose body is not a switch."""
    source = parse_cpp(cpp_text, cpp_path)
    header = parse_cpp(header_text, header_path)
    definitions: dict[str, Node] = {}
    warnings: list[ExtractionWarning] = []
    for name, node in function_definitions(source.root):
        if not PREDICATE_NAME.match(name):
            continue
        if name in definitions:
            warnings.append(
                warning(
                    "defined-twice",
                    name,
                    f"{name} is defined twice in {cpp_path}; the first is read",
                    cpp_path,
                    name,
                )
            )
            continue
        definitions[name] = node
    declared = {
        name for name, _ in function_declarations(header.root) if PREDICATE_NAME.match(name)
    }
    missing = (declared | set(REQUIRED_PREDICATES)) - set(definitions)
    if missing and source.root.has_error:
        raise _broken_predicates(source, sorted(missing))
    for name in sorted(declared - set(definitions)):
        raise source.missing(
            f"{name} is declared in {header_path} but not defined in {cpp_path}: renamed or moved?",
            name,
        )
    for name in REQUIRED_PREDICATES:
        if name not in definitions:
            raise source.missing(
                f"{name} is not defined in {cpp_path} (it exists since 2025-06; renamed?)", name
            )
    sets: list[PredicateSet] = []
    discovered = sorted(set(definitions) - set(KNOWN_PREDICATES))
    for name in [n for n in KNOWN_PREDICATES if n in definitions] + discovered:
        found = read_predicate(source, name, definitions[name])
        if found.shape == "unrecognized":
            if name in KNOWN_PREDICATES:
                raise AnchorError(
                    f"{name} in {cpp_path} is not a switch over the architecture: {found.reason}",
                    paths=[cpp_path],
                    anchor=name,
                )
            warnings.append(
                warning(
                    "unrecognized-predicate",
                    name,
                    f"{name} is not extracted: {found.reason}",
                    cpp_path,
                    name,
                )
            )
        sets.append(found)
    absent = tuple(n for n in KNOWN_PREDICATES if n not in definitions)
    if absent and discovered:
        for name in absent:
            warnings.append(
                warning(
                    "possible-rename",
                    name,
                    f"{name} is absent while {', '.join(discovered)} is new; check for a rename",
                    cpp_path,
                    name,
                )
            )
    return PredicateScan(tuple(sets), absent, tuple(warnings))


def _broken_predicates(source: CppSource, missing: list[str]) -> ParseError:
    """Predicates lost in a syntax error: name the error's line and the predicate it sits in
    (the last predicate name written above that line)."""
    line = source.first_error_line() or 0
    above = "\n".join(source.text.split("\n")[:line])
    names = re.findall(r"\b(llm_arch_(?:is|supports)_\w+)\s*\(", above)
    near = names[-1] if names else missing[0]
    return ParseError(
        f"{source.path} does not parse as C++ at line {line} (in {near}); "
        f"{', '.join(missing)} cannot be read",
        paths=[source.path],
        anchor=near,
    )


def universe(names: Sequence[ArchName]) -> list[ArchName]:
    """The architectures a default applies to: every LLM_ARCH_NAMES entry but LLM_ARCH_UNKNOWN."""
    return sorted((n for n in names if n.arch != UNKNOWN_ARCH), key=lambda n: n.arch)


def members(
    scan: PredicateScan, names: Sequence[ArchName]
) -> tuple[list[ClassSetMember], list[ExtractionWarning]]:
    """The architectures each extracted predicate returns true for."""
    rows: list[ClassSetMember] = []
    warnings: list[ExtractionWarning] = []
    everyone = universe(names)
    named = {n.arch: n.gguf_name for n in names}
    for found in scan.sets:
        if found.shape == "unrecognized":
            continue
        listed = {arch: returns for arch, returns, _ in found.listed}
        for arch in sorted(set(listed) - set(named)):
            warnings.append(
                warning(
                    "listed-without-name",
                    f"{found.predicate}:{arch}",
                    f"{found.predicate} lists {arch}, which has no LLM_ARCH_NAMES entry",
                    found.path,
                    found.predicate,
                )
            )
        for entry in everyone:
            if found.returns_for(entry.arch):
                rows.append(
                    ClassSetMember(
                        predicate=found.predicate,
                        arch=entry.arch,
                        gguf_name=entry.gguf_name,
                        via="listed" if entry.arch in listed else "default",
                        path=found.path,
                        symbol=found.predicate,
                    )
                )
        for arch in sorted(set(listed) - {e.arch for e in everyone}):
            if listed[arch]:
                rows.append(
                    ClassSetMember(
                        predicate=found.predicate,
                        arch=arch,
                        gguf_name=named.get(arch, ""),
                        via="listed",
                        path=found.path,
                        symbol=found.predicate,
                    )
                )
    return rows, warnings


def predicate_rows(
    scan: PredicateScan, names: Sequence[ArchName], cpp_path: str
) -> list[ClassPredicate]:
    member_rows, _ = members(scan, names)
    counts: dict[str, int] = {}
    for row in member_rows:
        counts[row.predicate] = counts.get(row.predicate, 0) + 1
    rows = [
        ClassPredicate(
            predicate=found.predicate,
            present=True,
            shape=found.shape,
            listed_returns=found.listed_returns if found.listed else None,
            default_returns=found.default,
            polarity=found.polarity(),
            listed_count=len(found.listed),
            member_count=counts.get(found.predicate, 0),
            path=found.path,
            symbol=found.predicate,
        )
        for found in scan.sets
    ]
    rows += [
        ClassPredicate(
            predicate=name,
            present=False,
            shape="absent",
            listed_returns=None,
            default_returns=None,
            polarity="absent at this commit: the function does not exist (not an empty set)",
            listed_count=0,
            member_count=0,
            path=cpp_path,
            symbol=name,
        )
        for name in scan.absent
    ]
    return rows


def listed_rows(scan: PredicateScan) -> list[ClassSetListed]:
    return [
        ClassSetListed(
            predicate=found.predicate,
            arch=arch,
            returns=returns,
            preprocessor_condition=condition,
            path=found.path,
            symbol=found.predicate,
        )
        for found in scan.sets
        for arch, returns, condition in found.listed
    ]
