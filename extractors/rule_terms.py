"""Condition terms of extracted rules as data: `(config key, test, *operands)`, and their words.

A term is a plain tuple of strings so that generated modules hold it as a literal:
`("multi_query", "truthy")`, `("compress_ratios", "absent")`, `("model_type", "in", "a", "b")`.
A condition is a tuple of terms that must all hold; the empty tuple holds always. The words
(`"not new_decoder_architecture and multi_query"`) are rendered from the terms for people; nothing
reads the words back."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

Term = tuple[str, ...]

PRESENT, ABSENT = "present", "absent"  # the key is in the config (hasattr / `"k" in cfg`)
TRUTHY, FALSY = "truthy", "falsy"  # the value is true / false; an absent key reads as false
EQUALS, NOT_EQUALS = "equals", "not-equals"  # one string operand
IN, NOT_IN = "in", "not-in"  # one or more string operands

NEGATION = {
    PRESENT: ABSENT,
    ABSENT: PRESENT,
    TRUTHY: FALSY,
    FALSY: TRUTHY,
    EQUALS: NOT_EQUALS,
    NOT_EQUALS: EQUALS,
    IN: NOT_IN,
    NOT_IN: IN,
}
_OPERANDS = {  # test -> (fewest, most) operands
    PRESENT: (0, 0),
    ABSENT: (0, 0),
    TRUTHY: (0, 0),
    FALSY: (0, 0),
    EQUALS: (1, 1),
    NOT_EQUALS: (1, 1),
    IN: (1, None),
    NOT_IN: (1, None),
}
TESTS = tuple(_OPERANDS)


def term_problem(term: Sequence[str]) -> str:
    """Why `term` is not a well-formed term; "" when it is."""
    if len(term) < 2 or not all(isinstance(part, str) for part in term):
        return f"term {tuple(term)!r} is not (key, test, *operands) strings"
    key, test, *operands = term
    if not key:
        return f"term {tuple(term)!r} has an empty key"
    if test not in _OPERANDS:
        return f"term {tuple(term)!r} has test {test!r}, not one of {', '.join(TESTS)}"
    fewest, most = _OPERANDS[test]
    if len(operands) < fewest or (most is not None and len(operands) > most):
        return f"term {tuple(term)!r}: test {test!r} takes {fewest}..{most or 'n'} operands"
    return ""


def negated(term: Term) -> Term:
    """The term that holds exactly when `term` does not."""
    key, test, *operands = term
    return (key, NEGATION[test], *operands)


def term_words(term: Sequence[str]) -> str:
    """`("multi_query", "falsy")` -> "not multi_query"; `("k", "present")` -> "has k"."""
    key, test, *operands = term
    if test == PRESENT:
        return f"has {key}"
    if test == ABSENT:
        return f"not has {key}"
    if test == TRUTHY:
        return key
    if test == FALSY:
        return f"not {key}"
    if test == EQUALS:
        return f"{key} == {operands[0]}"
    if test == NOT_EQUALS:
        return f"{key} != {operands[0]}"
    listed = "[" + ", ".join(operands) + "]"
    return f"{key} in {listed}" if test == IN else f"{key} not in {listed}"


def condition_words(terms: Iterable[Sequence[str]]) -> str:
    """The words of a conjunction; "always" for the empty condition."""
    return " and ".join(term_words(t) for t in terms) or "always"


def condition_problem(terms: Iterable[Sequence[str]]) -> str:
    """The first malformed term's problem; "" when every term is well formed."""
    for term in terms:
        problem = term_problem(term)
        if problem:
            return problem
    return ""
