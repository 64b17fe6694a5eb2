"""vLLM's architectures outside the registry: `_PREVIOUSLY_SUPPORTED_MODELS` (architecture -> the
last version that served it) and `_OOT_SUPPORTED_MODELS` (architecture -> the plugin URL)."""

from __future__ import annotations

from apron.extractors.parsing.python_ts import (
    node_text,
    parse_python,
    string_value,
    top_level_assignments,
)
from apron.extractors.records import EngineFacts, ExtractionWarning, warning
from apron.extractors.vllm.records import RegistryNotice

FACT = "registry_notices"
NOTICE_DICTS = {
    "_PREVIOUSLY_SUPPORTED_MODELS": "previously-supported",
    "_OOT_SUPPORTED_MODELS": "out-of-tree",
}


def registry_notices(text: str, path: str) -> tuple[list[RegistryNotice], list[ExtractionWarning]]:
    """One record per entry of both dicts. A dict the file does not define (vLLM added them in
    late 2025) is a warning that says so: absent, not empty."""
    dicts = {name: value for name, value in top_level_assignments(parse_python(text, path))}
    notices: list[RegistryNotice] = []
    warnings: list[ExtractionWarning] = []
    for name, kind in NOTICE_DICTS.items():
        node = dicts.get(name)
        if node is None or node.type != "dictionary":
            warnings.append(
                warning(
                    code="absent",
                    subject=name,
                    message=f"{path} defines no {name} dict at this commit",
                    path=path,
                    symbol=name,
                )
            )
            continue
        for pair in node.named_children:
            if pair.type == "comment":
                continue
            key = pair.child_by_field_name("key") if pair.type == "pair" else None
            value = pair.child_by_field_name("value") if pair.type == "pair" else None
            architecture = string_value(key) if key is not None else None
            detail = string_value(value) if value is not None else None
            if architecture is None or detail is None:
                warnings.append(
                    warning(
                        code="unparsed-entry",
                        subject=node_text(pair)[:60],
                        message=f'an entry of {name} is not `"Arch": "text"`',
                        path=path,
                        symbol=name,
                    )
                )
                continue
            notices.append(
                RegistryNotice(
                    architecture=architecture, kind=kind, detail=detail, path=path, symbol=name
                )
            )
    return sorted(notices, key=lambda n: (n.kind, n.architecture)), warnings


REMOVAL_WORDS = {
    "previously-supported": "removed; vLLM lists it as previously supported up to {detail}",
    "out-of-tree": "removed; vLLM lists it as supported out of tree by {detail}",
}


def removal_notes(facts: EngineFacts) -> dict[str, str]:
    """Architecture -> why it left the registry, from this extraction's notice lists."""
    return {
        notice.architecture: REMOVAL_WORDS[notice.kind].format(detail=notice.detail)
        for notice in facts.records(FACT)
        if isinstance(notice, RegistryNotice) and notice.kind in REMOVAL_WORDS
    }


SPECULATIVE_GROUP = "speculative-decoding"  # the task group of _SPECULATIVE_DECODING_MODELS


def draft_architectures(facts: EngineFacts) -> set[str]:
    """The architectures vLLM registers in its speculative-decoding group (MTP modules, EAGLE
    and DFlash heads): drafts, not models people serve."""
    return {
        row.architecture
        for row in facts.records("registry_rows")
        if getattr(row, "task_group", "") == SPECULATIVE_GROUP
    }
