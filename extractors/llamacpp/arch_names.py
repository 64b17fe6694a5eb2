"""llama.cpp architecture names: the LLM_ARCH_NAMES map (llm_arch -> GGUF name) in
src/llama-arch.cpp, cross-checked with `enum llm_arch` in src/llama-arch.h."""

from __future__ import annotations

from apron.extractors.llamacpp.records import ArchName
from apron.extractors.parsing.cpp_ts import (
    code_children,
    enum_members,
    enumerator_name,
    node_text,
    parse_cpp,
    string_value,
    variable_initializer,
)
from apron.extractors.records import ExtractionWarning, warning

NAMES_MAP = "LLM_ARCH_NAMES"
ARCH_ENUM = "llm_arch"


def enum_values(header_text: str, header_path: str) -> list[str]:
    """The enumerators of `enum llm_arch`, in order; an error when the enum is missing or empty."""
    source = parse_cpp(header_text, header_path)
    members = enum_members(source.root, ARCH_ENUM)
    if members is None:
        raise source.missing(f"enum {ARCH_ENUM} not found in {header_path}", f"enum {ARCH_ENUM}")
    if not members:
        raise source.missing(
            f"enum {ARCH_ENUM} in {header_path} has no enumerators", f"enum {ARCH_ENUM}"
        )
    for member in members:
        source.require_clean(member, f"enum {ARCH_ENUM}")
    return [enumerator_name(m) for m in members]


def names_map(text: str, path: str) -> tuple[list[tuple[str, str, str]], list[ExtractionWarning]]:
    """(enum value, GGUF name, preprocessor condition) for every entry of LLM_ARCH_NAMES."""
    source = parse_cpp(text, path)
    init = variable_initializer(source.root, NAMES_MAP)
    if init is None:
        raise source.missing(f"{NAMES_MAP} map not found in {path}", NAMES_MAP)
    source.require_clean(init, NAMES_MAP)
    if init.type != "initializer_list":
        raise source.missing(f"{NAMES_MAP} in {path} is not a brace-initialized map", NAMES_MAP)
    entries: list[tuple[str, str, str]] = []
    warnings: list[ExtractionWarning] = []
    for item in code_children(init):
        parts = code_children(item) if item.type == "initializer_list" else []
        name = string_value(parts[1]) if len(parts) == 2 else None
        if len(parts) != 2 or parts[0].type != "identifier" or name is None:
            warnings.append(
                warning(
                    "unparsed-entry",
                    node_text(item)[:60],
                    f'an entry of {NAMES_MAP} is not `{{ LLM_ARCH_X, "name" }}`',
                    path,
                    NAMES_MAP,
                )
            )
            continue
        entries.append((node_text(parts[0]), name, source.condition_at(item)))
    if not entries:
        raise source.missing(
            f'{NAMES_MAP} in {path} has no `{{ LLM_ARCH_X, "name" }}` entries', NAMES_MAP
        )
    return entries, warnings


def arch_names(
    cpp_text: str, cpp_path: str, header_text: str, header_path: str
) -> tuple[list[ArchName], list[ExtractionWarning]]:
    """Every LLM_ARCH_NAMES entry as a record; enum values without a name, names without an enum
    value, and duplicate keys or names are warnings."""
    entries, warnings = names_map(cpp_text, cpp_path)
    enum = enum_values(header_text, header_path)
    enum_set = set(enum)
    records: dict[str, ArchName] = {}
    names_seen: dict[str, str] = {}
    for arch, name, condition in entries:
        if arch in records:
            warnings.append(
                warning(
                    "duplicate-key",
                    arch,
                    f"{arch} appears twice in {NAMES_MAP}; std::map keeps the first entry "
                    f"({records[arch].gguf_name!r}), not {name!r}",
                    cpp_path,
                    NAMES_MAP,
                )
            )
            continue
        if name in names_seen:
            warnings.append(
                warning(
                    "duplicate-name",
                    name,
                    f"GGUF name {name!r} is given to {names_seen[name]} and {arch}; "
                    "llm_arch_from_string returns the first",
                    cpp_path,
                    NAMES_MAP,
                )
            )
        else:
            names_seen[name] = arch
        if arch not in enum_set:
            warnings.append(
                warning(
                    "name-without-enum",
                    arch,
                    f"{NAMES_MAP} names {arch} ({name!r}) but enum {ARCH_ENUM} in {header_path} "
                    "has no such value",
                    cpp_path,
                    NAMES_MAP,
                )
            )
        records[arch] = ArchName(
            arch=arch,
            gguf_name=name,
            in_enum=arch in enum_set,
            preprocessor_condition=condition,
            path=cpp_path,
            symbol=NAMES_MAP,
        )
    for value in enum:
        if value not in records:
            warnings.append(
                warning(
                    "enum-without-name",
                    value,
                    f"enum {ARCH_ENUM} has {value} but {NAMES_MAP} gives it no GGUF name "
                    '(llm_arch_name returns "unknown")',
                    header_path,
                    f"enum {ARCH_ENUM}",
                )
            )
    return list(records.values()), warnings
