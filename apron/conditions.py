"""Evaluate the small condition phrases the extractors write ("not has compress_ratios",
"not new_decoder_architecture and multi_query", "model_type in [a, b]") against a config.

Only conjunctions of simple terms are understood. Anything else evaluates to None (unknown) and
the caller reports the phrase: apron never guesses what an uninterpreted rule means."""

from __future__ import annotations

import re
from typing import NamedTuple

from apron.config import ModelConfig

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
_HAS = re.compile(rf"^(not )?has ({_IDENT})$")
_FLAG = re.compile(rf"^(not )?({_IDENT})$")
_MODEL_TYPE_IN = re.compile(r"^model_type (in|not in) \[(.*)\]$")
_MODEL_TYPE_EQ = re.compile(r"^model_type (==|!=) (\S+)$")


class Evaluation(NamedTuple):
    """The truth of a phrase (None when it cannot be evaluated) and notes on how it was read."""

    value: bool | None
    notes: tuple[str, ...]
    problem: str


def _term(model: ModelConfig, term: str) -> Evaluation:
    term = term.strip()
    if term.startswith("(") and term.endswith(")"):
        return Evaluation(None, (), f"nested condition {term!r} is not interpreted")
    if term == "always":
        return Evaluation(True, (), "")
    if match := _HAS.match(term):
        present = model.present(match.group(2))
        return Evaluation(present != bool(match.group(1)), (), "")
    if match := _MODEL_TYPE_IN.match(term):
        names = [n.strip().strip("'\"") for n in match.group(2).split(",") if n.strip()]
        inside = (model.model_type or "") in names
        return Evaluation(inside if match.group(1) == "in" else not inside, (), "")
    if match := _MODEL_TYPE_EQ.match(term):
        equal = model.model_type == match.group(2).strip("'\"")
        return Evaluation(equal if match.group(1) == "==" else not equal, (), "")
    if match := _FLAG.match(term):
        name = match.group(2)
        read = model.read(name)
        if read is None:
            # A flag the config does not carry reads as false (Python's getattr(cfg, flag, False)).
            value = False
            notes: tuple[str, ...] = (f"{name} absent from the config: read as false",)
        else:
            value = bool(read.value)
            notes = ()
        return Evaluation(value != bool(match.group(1)), notes, "")
    return Evaluation(None, (), f"condition {term!r} is not interpreted")


def evaluate(model: ModelConfig, phrase: str) -> Evaluation:
    """Truth of `phrase` for this config; terms joined by " and " only."""
    phrase = phrase.strip()
    if not phrase:
        return Evaluation(None, (), "empty condition")
    if " or " in phrase:
        return Evaluation(None, (), f"condition {phrase!r} (with 'or') is not interpreted")
    notes: list[str] = []
    result = True
    for term in phrase.split(" and "):
        ev = _term(model, term)
        if ev.value is None:
            return Evaluation(None, tuple(notes), ev.problem)
        notes.extend(ev.notes)
        result = result and ev.value
    return Evaluation(result, tuple(notes), "")
