"""SGLang's extracted rules applied to a config: the MLA decision of its attention-arch chain.

SGLang tests `"<Arch>" in hf_config.architectures` branch by branch (generated/sglang facts
`mla_architectures`, `mla_conditions`, `explicit_mha_architectures`); the first branch that
matches wins, and an MLA branch whose extra condition fails falls through to the next ones.
SGLang's KV-head rule is not extracted, so its full-attention figures use apron's count."""

from __future__ import annotations

from typing import Any

from apron.config import ModelConfig
from apron.constraints import Citation, EngineConstraints
from apron.engines.base import EngineDecision
from apron.results import MlaDecision

ENGINE = "sglang"
MLA, CONDITIONS, EXPLICIT_MHA = "mla_architectures", "mla_conditions", "explicit_mha_architectures"


_CHECK_WORDS = {
    "is not None": "{} is not None",
    "truthy": "{} is truthy",
    "falsy": "{} is falsy",
    "present": "has {}",
}


def _condition(model: ModelConfig, row: Any) -> tuple[bool | None, str]:
    """A structured MLA-branch condition for this config: its truth (None: unknown) and words."""
    check = str(row.check or "")
    name = str(row.field or "")
    expression = str(row.expression or name)
    if not name or check == "expression":
        return None, f"condition {expression!r} is not interpreted"
    if check not in _CHECK_WORDS:
        return None, f"condition check {check!r} is not interpreted"
    words = _CHECK_WORDS[check].format(name)
    source = model.raw if row.config == "hf_config" else model.text
    if name not in source:
        when_absent = row.when_absent
        if when_absent is None:
            return None, f"{name} is absent and the condition {expression!r} has no default"
        return bool(when_absent), words
    value = source.get(name)
    truth = {
        "is not None": value is not None,
        "truthy": bool(value),
        "falsy": not value,
        "present": True,
    }[check]
    return truth, words


def mla_decision(model: ModelConfig, sglang: EngineConstraints) -> MlaDecision | None:
    if not sglang.has(MLA):
        return None
    archs = set(model.architectures)
    if not archs:
        return MlaDecision(
            ENGINE,
            None,
            "the config lists no architectures; SGLang's chain tests hf_config.architectures",
            (),
        )
    branches: list[tuple[int, str, Any]] = []
    for row in sglang.rows(MLA):
        if row.architecture in archs:
            branches.append((int(row.branch or 0), "mla", row))
    for row in sglang.rows(EXPLICIT_MHA):
        if row.architecture in archs:
            branches.append((int(row.branch or 0), "mha", row))
    notes: list[str] = []
    for _branch, kind, row in sorted(branches, key=lambda b: b[0]):
        arch = row.architecture
        cite = sglang.cite(row)
        if kind == "mha":
            reads = tuple(row.mla_fields_read or ())
            extra = f" (the branch still reads {', '.join(reads)})" if reads else ""
            return MlaDecision(
                ENGINE, False, f"SGLang's chain sets {arch} to MHA explicitly{extra}", (cite,)
            )
        if row.conditional:
            conds = [c for c in sglang.rows(CONDITIONS) if c.architecture == arch]
            results = [_condition(model, c) for c in conds]
            cites: tuple[Citation, ...] = (cite, *(sglang.cite(c) for c in conds))
            if not conds:
                return MlaDecision(
                    ENGINE,
                    None,
                    f"{arch}'s MLA branch is conditional but no condition was extracted",
                    cites,
                )
            if any(ok is None for ok, _ in results):
                why = "; ".join(text for ok, text in results if ok is None)
                return MlaDecision(ENGINE, None, f"{arch}'s MLA branch: {why}", cites)
            if all(ok for ok, _ in results):
                return MlaDecision(
                    ENGINE,
                    True,
                    f"{arch} is in SGLang's MLA set and " + " and ".join(t for _, t in results),
                    cites,
                )
            notes.append(
                f"{arch}'s MLA branch condition fails ("
                + "; ".join(t for ok, t in results if not ok)
                + ")"
            )
            continue
        return MlaDecision(ENGINE, True, f"{arch} is in SGLang's MLA architecture set", (cite,))
    why = "; ".join(notes) + "; " if notes else ""
    chain = sglang.rows(MLA)[:1]
    return MlaDecision(
        ENGINE,
        False,
        f"{why}no MLA branch of SGLang's chain matches {', '.join(sorted(archs))}: MHA",
        tuple(sglang.cite(r) for r in chain),
    )


def decide(model: ModelConfig, sglang: EngineConstraints) -> EngineDecision:
    mla = mla_decision(model, sglang)
    notes = ["SGLang's KV-head rule is not extracted: full-attention figures use apron's count"]
    return EngineDecision(ENGINE, None, mla, (), tuple(notes), (), computes_figures=mla is not None)
