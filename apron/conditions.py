"""Evaluate the structured condition terms of extracted rules against a config.

A term is `(key, test, *operands)` as the extractors write it (`("multi_query", "truthy")`,
`("compress_ratios", "absent")`, `("model_type", "in", "falcon", "RefinedWeb")`); a condition is
a tuple of terms that must all hold. A test apron does not know evaluates to None (unknown) and
the caller reports it: apron never guesses what an uninterpreted rule means, and it never reads
the rule's words."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from apron.config import ModelConfig

# the tests of extractors/rule_terms.py; the round-trip test keeps the two lists the same
TESTS = ("present", "absent", "truthy", "falsy", "equals", "not-equals", "in", "not-in")


class Evaluation(NamedTuple):
    """The truth of a condition (None when it cannot be evaluated) and notes on how it was read."""

    value: bool | None
    notes: tuple[str, ...]
    problem: str


def _compared(model: ModelConfig, key: str) -> Any:
    # vLLM keys its model_type tests on hf_config.model_type, the top-level one
    return model.model_type if key == "model_type" else model.get(key)


def term_truth(model: ModelConfig, term: Any) -> Evaluation:
    """Truth of one term for this config."""
    if not isinstance(term, tuple | list) or len(term) < 2:
        return Evaluation(None, (), f"condition term {term!r} is not (key, test, *operands)")
    key, test, *operands = term
    if test in ("present", "absent"):
        return Evaluation(model.present(key) == (test == "present"), (), "")
    if test in ("truthy", "falsy"):
        read = model.read(key)
        if read is None:
            # A flag the config does not carry reads as false (Python's getattr(cfg, flag, False)).
            value = False
            notes: tuple[str, ...] = (f"{key} absent from the config: read as false",)
        else:
            value = bool(read.value)
            notes = ()
        return Evaluation(value == (test == "truthy"), notes, "")
    if test in ("equals", "not-equals") and len(operands) == 1:
        equal = _compared(model, key) == operands[0]
        return Evaluation(equal == (test == "equals"), (), "")
    if test in ("in", "not-in") and operands:
        inside = (_compared(model, key) or "") in operands
        return Evaluation(inside == (test == "in"), (), "")
    return Evaluation(None, (), f"condition term {tuple(term)!r} is not interpreted")


def evaluate(model: ModelConfig, terms: Iterable[Any]) -> Evaluation:
    """Truth of a conjunction of terms for this config; the empty condition holds."""
    notes: list[str] = []
    result = True
    for term in terms:
        ev = term_truth(model, term)
        if ev.value is None:
            return Evaluation(None, tuple(notes), ev.problem)
        notes.extend(ev.notes)
        result = result and ev.value
    return Evaluation(result, tuple(notes), "")
