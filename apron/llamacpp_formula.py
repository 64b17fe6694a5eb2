"""Evaluate the reverse-Polish formulas extracted from llama.cpp (extractors/llamacpp/
cpp_formula.py documents the tokens): a stack machine over integers, names looked up in an
environment and calls dispatched to Python functions. A name or call it lacks is Unknown; so is
a value the loader steps could not compute (Unread). An upper-case name the environment lacks is
an enum constant (Symbol): only == and != compare it. A division by zero is Undefined, which
`||`, `&&` and `?:` may leave unused, as C++'s short circuit does."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple


class Unknown(Exception):
    """A formula needs a value apron does not have: the message names it."""


class Unread(NamedTuple):
    """A value llama.cpp computes that apron could not: using it is Unknown for `reason`."""

    reason: str


class Symbol(str):
    """An enum constant (LLAMA_SWA_TYPE_STANDARD, LLM_ARCH_LLAMA): compared by name only."""


class _Undefined:
    """x / 0 or x % 0: fine where a short circuit never evaluates it, Unknown where it is used."""


UNDEFINED = _Undefined()
_CONSTANT = re.compile(r"^[A-Z][A-Z0-9_]*$")

_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a // b if b else UNDEFINED,  # C++ unsigned division: operands >= 0
    "%": lambda a, b: a % b if b else UNDEFINED,
    "<": lambda a, b: int(a < b),
    "<=": lambda a, b: int(a <= b),
    ">": lambda a, b: int(a > b),
    ">=": lambda a, b: int(a >= b),
    "==": lambda a, b: int(a == b),
    "!=": lambda a, b: int(a != b),
    "&&": lambda a, b: int(bool(a) and bool(b)),
    "||": lambda a, b: int(bool(a) or bool(b)),
}


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
            stack.append(_binary(token, a, b))
        elif token == "!":
            stack.append(int(not _defined(stack.pop())))
        elif token == "neg":
            stack.append(-_defined(stack.pop()))
        elif token == "?:":
            other, then, cond = stack.pop(), stack.pop(), stack.pop()
            stack.append(then if _defined(cond) else other)
        elif token.startswith("cast:"):
            pass  # integer casts of non-negative values change nothing here
        elif token.startswith("at:"):
            array = token[3:]
            if array not in names:
                raise Unknown(f"per-layer array {array}")
            values = _known(names[array])
            index = _defined(stack.pop())
            if not isinstance(values, list) or not 0 <= index < len(values):
                raise Unknown(f"{array}[{index}]")
            stack.append(_known(values[index]))
        elif token.startswith("call:"):
            name, _, arity = token[5:].rpartition("/")
            n = int(arity)
            args = stack[len(stack) - n :] if n else []
            del stack[len(stack) - n :]
            if name not in table:
                raise Unknown(f"call {name}()")
            stack.append(table[name](*(_defined(a) for a in args)))
        elif token in names:
            stack.append(_known(names[token]))
        elif _CONSTANT.match(token):
            stack.append(Symbol(token))
        else:
            raise Unknown(token)
    if len(stack) != 1:
        raise Unknown(f"malformed formula {' '.join(tokens)}")
    return _defined(stack[0])


def _known(value: Any) -> Any:
    if isinstance(value, Unread):
        raise Unknown(value.reason)
    return value


def _defined(value: Any) -> Any:
    if value is UNDEFINED:
        raise Unknown("a division by zero")
    return value


def _binary(op: str, a: Any, b: Any) -> Any:
    if op == "||" and a is not UNDEFINED and a:
        return 1
    if op == "&&" and a is not UNDEFINED and not a:
        return 0
    a, b = _defined(a), _defined(b)
    if isinstance(a, str) or isinstance(b, str):
        if op not in ("==", "!=") or not (isinstance(a, str) and isinstance(b, str)):
            raise Unknown(f"{a} {op} {b}: an enum constant compared with a number")
    return _BINARY[op](a, b)
