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


class Converter(NamedTuple):
    """What the converter's own tokens read (extractors/llamacpp/py_formula.py): the HF config
    as the converter sees it, and its class's attributes by name."""

    hparams: Mapping[str, Any]
    attribute: Callable[[str], Any]


_PY_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "//": lambda a, b: a // b if b else UNDEFINED,
    "/f": lambda a, b: a / b if b else UNDEFINED,
    "**": lambda a, b: a**b,
    "in": lambda a, b: int(a in b),
}
PY_CALLS: dict[str, Callable[..., Any]] = {
    "len": len,
    "int": int,
    "bool": lambda v: int(bool(v)),
    "sum": sum,
    "min": min,
    "max": max,
}


def evaluate(
    tokens: Sequence[str],
    names: Mapping[str, Any],
    calls: Mapping[str, Callable[..., Any]] | None = None,
    converter: Converter | None = None,
) -> Any:
    table = {**BUILTIN_CALLS, **(calls or {}), **(PY_CALLS if converter is not None else {})}
    stack: list[Any] = []
    tokens = tuple(tokens)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if token.lstrip("-").isdigit():
            stack.append(int(token))
        elif converter is not None and _converter_token(token, stack, converter):
            pass
        elif converter is not None and token.startswith("map:"):
            variable, _, size = token[4:].rpartition("/")
            body = tokens[i : i + int(size)]
            i += int(size)
            sequence = _defined(stack.pop())
            if not isinstance(sequence, list | tuple):
                raise Unknown(f"a comprehension over {sequence!r}")
            stack.append(
                [evaluate(body, {**names, variable: item}, calls, converter) for item in sequence]
            )
        elif token in _BINARY:
            b, a = stack.pop(), stack.pop()
            stack.append(_binary(token, a, b))
        elif token in _PY_BINARY and converter is not None:
            b, a = _defined(stack.pop()), _defined(stack.pop())
            stack.append(_PY_BINARY[token](a, b))
        elif token in ("or", "and") and converter is not None:  # Python's: the deciding value
            b, a = stack.pop(), stack.pop()
            stack.append((a if _defined(a) else b) if token == "or" else (b if _defined(a) else a))
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


def _converter_token(token: str, stack: list[Any], converter: Converter) -> bool:
    """Push the value of one of the converter's own tokens; False for any other token."""
    kind, _, rest = token.partition(":")
    hparams = converter.hparams
    if token == "None":
        stack.append(None)
    elif kind == "str":
        stack.append(rest)
    elif kind == "sym":
        stack.append(Symbol(rest))
    elif kind == "hp":
        if rest not in hparams:
            raise Unknown(f"the converter reads hparams[{rest!r}], which this config lacks")
        stack.append(_known(hparams[rest]))
    elif kind == "hpget":
        key, _, arity = rest.rpartition("/")
        default = stack.pop() if arity == "2" else None
        stack.append(_known(hparams.get(key, default)))
    elif kind in ("find", "findopt"):
        keys = rest.split("|")
        found = next((k for k in keys if k in hparams), None)
        if found is None and kind == "find":
            raise Unknown(f"the converter's find_hparam finds none of {keys}")
        stack.append(_known(hparams[found]) if found is not None else None)
    elif kind == "has":
        stack.append(int(rest in hparams))
    elif kind == "self":
        stack.append(_known(converter.attribute(rest)))
    elif kind == "tuple":
        n = int(rest)
        items = stack[len(stack) - n :] if n else []
        del stack[len(stack) - n :]
        stack.append(list(items))
    else:
        return False
    return True


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
    if (a is None or b is None) and op in ("==", "!="):
        return int((a == b) == (op == "=="))
    if isinstance(a, str) or isinstance(b, str):
        if op not in ("==", "!=") or not (isinstance(a, str) and isinstance(b, str)):
            raise Unknown(f"{a} {op} {b}: an enum constant compared with a number")
    return _BINARY[op](a, b)
