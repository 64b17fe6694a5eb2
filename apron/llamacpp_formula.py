"""Evaluate the reverse-Polish formulas extracted from llama.cpp (extractors/llamacpp/
cpp_formula.py documents the tokens): a stack machine over integers, names looked up in an
environment and calls dispatched to Python functions. A name or call it lacks is Unknown."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a // b,  # C++ unsigned division (every operand here is non-negative)
    "%": lambda a, b: a % b,
    "<": lambda a, b: int(a < b),
    "<=": lambda a, b: int(a <= b),
    ">": lambda a, b: int(a > b),
    ">=": lambda a, b: int(a >= b),
    "==": lambda a, b: int(a == b),
    "!=": lambda a, b: int(a != b),
    "&&": lambda a, b: int(bool(a) and bool(b)),
    "||": lambda a, b: int(bool(a) or bool(b)),
}


class Unknown(Exception):
    """A formula needs a value apron does not have: the message names it."""


def pad(x: int, n: int) -> int:
    """GGML_PAD(x, n): x rounded up to a multiple of n (ggml.h)."""
    return (x + n - 1) // n * n


BUILTIN_CALLS: dict[str, Callable[..., Any]] = {
    "std::min": min,
    "std::max": max,
    "GGML_PAD": pad,
}


def evaluate(
    tokens: Sequence[str],
    names: Mapping[str, Any],
    calls: Mapping[str, Callable[..., Any]] | None = None,
) -> Any:
    table = {**BUILTIN_CALLS, **(calls or {})}
    stack: list[Any] = []
    for token in tokens:
        if token.lstrip("-").isdigit():
            stack.append(int(token))
        elif token in _BINARY:
            b, a = stack.pop(), stack.pop()
            stack.append(_BINARY[token](a, b))
        elif token == "!":
            stack.append(int(not stack.pop()))
        elif token == "neg":
            stack.append(-stack.pop())
        elif token == "?:":
            other, then, cond = stack.pop(), stack.pop(), stack.pop()
            stack.append(then if cond else other)
        elif token.startswith("cast:"):
            pass  # integer casts of non-negative values change nothing here
        elif token.startswith("at:"):
            array = token[3:]
            if array not in names:
                raise Unknown(f"per-layer array {array}")
            stack.append(names[array][stack.pop()])
        elif token.startswith("call:"):
            name, _, arity = token[5:].rpartition("/")
            n = int(arity)
            args = stack[len(stack) - n :] if n else []
            del stack[len(stack) - n :]
            if name not in table:
                raise Unknown(f"call {name}()")
            stack.append(table[name](*args))
        else:
            if token not in names:
                raise Unknown(token)
            stack.append(names[token])
    if len(stack) != 1:
        raise Unknown(f"malformed formula {' '.join(tokens)}")
    return stack[0]
