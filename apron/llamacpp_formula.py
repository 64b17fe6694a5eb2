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


class _Undefined(NamedTuple):
    """A value C++ or Python would not compute here (x / 0, a config key the converter reads and
    this config lacks, code the reader does not read): fine where a short circuit or `?:` never
    uses it, Unknown (naming why) where it is used."""

    reason: str


UNDEFINED = _Undefined("a division by zero")
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
    find_override: str = ""  # a converter class that overrides find_hparam: misses are unknown


_PY_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "item": lambda a, b: (
        a[b]
        if isinstance(a, list | tuple | str) and -len(a) <= b < len(a)
        else _Undefined(f"[{b}] of {a!r}")
    ),
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
    "all": lambda v: int(all(v)),
    "any": lambda v: int(any(v)),
    "range": lambda *a: list(range(*a)),
}


def evaluate(
    tokens: Sequence[str],
    names: Mapping[str, Any],
    calls: Mapping[str, Callable[..., Any]] | None = None,
    converter: Converter | None = None,
) -> Any:
    """The formula's value; Unknown (naming why) when it needs what apron does not have."""
    return _defined(_evaluate(tokens, names, calls, converter))


def _evaluate(
    tokens: Sequence[str],
    names: Mapping[str, Any],
    calls: Mapping[str, Callable[..., Any]] | None,
    converter: Converter | None,
) -> Any:
    """The value, or an _Undefined one (a comprehension's element may be)."""
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
            sequence = stack.pop()
            if isinstance(sequence, _Undefined):
                stack.append(sequence)
            elif not isinstance(sequence, list | tuple):
                stack.append(_Undefined(f"a comprehension over {sequence!r}"))
            else:
                stack.append(
                    [_evaluate(body, {**names, variable: v}, calls, converter) for v in sequence]
                )
        elif token in _BINARY:
            b, a = stack.pop(), stack.pop()
            stack.append(_binary(token, a, b))
        elif token in _PY_BINARY and converter is not None:
            b, a = stack.pop(), stack.pop()
            stack.append(_first_undefined(a, b) or _safe(token, _PY_BINARY[token], a, b))
        elif token in ("or", "and") and converter is not None:  # Python's: the deciding value
            b, a = stack.pop(), stack.pop()
            if isinstance(a, _Undefined):
                stack.append(a)
            else:
                stack.append((a if a else b) if token == "or" else (b if a else a))
        elif token == "!":
            a = stack.pop()
            stack.append(a if isinstance(a, _Undefined) else _not(a, converter))
        elif token == "neg":
            a = stack.pop()
            stack.append(a if isinstance(a, _Undefined) else -a)
        elif token == "?:":
            other, then, cond = stack.pop(), stack.pop(), stack.pop()
            stack.append(cond if isinstance(cond, _Undefined) else (then if cond else other))
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
            undefined = _first_undefined(*args)
            stack.append(undefined or _safe(name, table[name], *args))
        elif token in names:
            stack.append(_known(names[token]))
        elif _CONSTANT.match(token):
            stack.append(Symbol(token))
        else:
            raise Unknown(token)
    if len(stack) != 1:
        raise Unknown(f"malformed formula {' '.join(tokens)}")
    value = stack[0]
    if isinstance(value, list):  # a list holding an undefined element is undefined
        value = _first_undefined(*value) or value
    return value


def _converter_token(token: str, stack: list[Any], converter: Converter) -> bool:
    """Push the value of one of the converter's own tokens; False for any other token."""
    kind, _, rest = token.partition(":")
    hparams = converter.hparams
    if token in ("True", "False"):
        stack.append(token == "True")
    elif kind == "undef":
        stack.append(_Undefined(f"code the reader does not read ({rest})"))
    elif token == "None":
        stack.append(None)
    elif kind == "str":
        stack.append(rest)
    elif kind == "sym":
        stack.append(Symbol(rest))
    elif kind == "hp":
        missing = f"the converter reads hparams[{rest!r}], which this config lacks"
        stack.append(_lazy(hparams[rest]) if rest in hparams else _Undefined(missing))
    elif kind == "hpget":
        key, _, arity = rest.rpartition("/")
        default = stack.pop() if arity == "2" else None
        stack.append(_lazy(hparams.get(key, default)))
    elif kind in ("find", "findopt"):
        keys = rest.split("|")
        found = next((k for k in keys if k in hparams), None)
        if found is None and converter.find_override:
            why = (
                f"{converter.find_override}.find_hparam, which apron does not read, looks {keys} up"
            )
            stack.append(_Undefined(why))
        elif found is None and kind == "find":
            stack.append(_Undefined(f"the converter's find_hparam finds none of {keys}"))
        else:
            stack.append(_lazy(hparams[found]) if found is not None else None)
    elif kind == "has":
        stack.append(int(rest in hparams))
    elif kind == "self":
        stack.append(_known(converter.attribute(rest)))
    elif token.startswith("tuple/"):
        n = int(token[6:])
        items = stack[len(stack) - n :] if n else []
        del stack[len(stack) - n :]
        stack.append(list(items))
    else:
        return False
    return True


def _lazy(value: Any) -> Any:
    """An Unread value as an undefined one: Unknown only where it is used."""
    return _Undefined(value.reason) if isinstance(value, Unread) else value


def _known(value: Any) -> Any:
    if isinstance(value, Unread):
        raise Unknown(value.reason)
    return value


def _defined(value: Any) -> Any:
    if isinstance(value, _Undefined):
        raise Unknown(value.reason)
    return value


def _safe(name: str, function: Callable[..., Any], *args: Any) -> Any:
    """A Python operation the converter makes; one that fails there (len of an int, in a
    branch not taken) is undefined here."""
    try:
        return function(*args)
    except (TypeError, ValueError, IndexError, KeyError, ZeroDivisionError) as err:
        return _Undefined(f"{name} fails: {err}")


def _first_undefined(*values: Any) -> _Undefined | None:
    return next((v for v in values if isinstance(v, _Undefined)), None)


def _not(value: Any, converter: Converter | None) -> Any:
    return (not value) if converter is not None else int(not value)


def _binary(op: str, a: Any, b: Any) -> Any:
    if op == "||" and not isinstance(a, _Undefined) and a:
        return 1
    if op == "&&" and not isinstance(a, _Undefined) and not a:
        return 0
    undefined = _first_undefined(a, b)
    if undefined is not None:
        return undefined
    if (a is None or b is None) and op in ("==", "!="):
        return int((a == b) == (op == "=="))
    if isinstance(a, str) or isinstance(b, str):
        if op not in ("==", "!=") or not (isinstance(a, str) and isinstance(b, str)):
            raise Unknown(f"{a} {op} {b}: an enum constant compared with a number")
    return _safe(op, _BINARY[op], a, b)  # None + 1 in the converter's code: undefined
