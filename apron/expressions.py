"""The one rule language: extracted expressions as nested tuples, and their one evaluator.

An expression is stored in generated/ as a plain literal (extractors/parsing/expressions.py
builds it from C++ or Python source; `infix` below, the one renderer, writes it for people):

- a leaf: an int, float, bool or None is itself; a str is a *name* looked up in the
  environment the caller passes ("n_embd", "$il"; SGLang's quantities spelled as their code,
  "self.tp_size", "self.use_mla_backend()"); a name the environment lacks that is written
  in upper case (LLM_ARCH_LLAMA, LLAMA_SWA_TYPE_STANDARD) is an enum constant (Symbol);
- a node: a tuple whose first item names it (NODES lists each with its operand count):
  ("str", TEXT) a string, ("sym", NAME) an enum constant, ("undef", WHY) code the reader does not
  read; ("call", NAME, *args) a function of the environment's call table; ("at", ARRAY, i) an
  element of a per-layer array; ("cast", TYPE, x); ("map", VAR, seq, body) `[body for VAR in
  seq]`; ("list", *items); ("?:", test, then, else); unary "!" (C++: 0 or 1), "not" (Python:
  a bool), "neg"; binary "+ - * / % < <= > >= == != && ||" (C++: "/" divides integers) and
  "// /f ** in item or and" (Python: "/f" is `/`, "item" is `x[i]`, "or"/"and" return the
  deciding value; in a Python rule, one evaluated with a converter, "==" and "!=" compare any
  two values as Python does, and strings compare and concatenate as Python's do); and the reads
  of the HF config, resolved through the environment's Converter (llama.cpp's converter's
  `self.hparams`, or the config as a serving engine's conditions read it: apron/conditions.py):
  ("hp", KEY) `hparams[KEY]`, ("hpget", KEY[, default]) `hparams.get(KEY, default)` (vLLM's
  `getattr(cfg, KEY, default)`), ("find", *KEYS), ("findopt", *KEYS), ("has", KEY) `KEY in
  hparams` (vLLM's `hasattr(cfg, KEY)`), ("self", NAME); a configuration class's code reads the
  same nodes (transformers, extractors/transformers/config_classes.py: `self.x` is ("self", "x"),
  a config.json key that is not a field, `kwargs.get(k, d)`, is ("hpget", k, d), `k in kwargs`
  is ("has", k)), resolved against the config the class builds; and ("getattr", NAME, default),
  Python's `getattr(obj, "attr", default)` with NAME the dotted path (vLLM's rules): NAME's value,
  or `default` where the environment holds none for it (no such name, or `absent(why)`).
- ("dict", k1, v1, k2, v2, ...) a Python dict display; indexing it ("item") with a key it does
  not hold raises KeyError in the engine's code: Raises, not Unknown, where the value is used (a
  key a dict from the environment lacks is Unknown: that dict may be filled by code not read).
- The empty tuple is no expression (a condition that always holds).

The Python operators need no converter (vLLM's rules are Python too); `x[i]` also indexes a
mapping. An environment may give a name the value `absent(why)`: undefined, so Unknown naming
`why` only where the value is used (vLLM's config paths a config lacks).

`infix(expression)` renders it as C++/Python-like words for people (nothing reads them back);
`names_in` lists the names it reads and `substituted` puts values in their place (for words).

`evaluate(expression, names, calls, converter)` compiles an expression once (a closure per
node, cached per expression object) and runs it: a name or call it lacks is Unknown; so is a
value the caller could not compute (Unread). A division by zero is undefined, which `||`, `&&`
and `?:` may leave unused; every operand is evaluated, in source order, before its operator.
Python's operators follow Python where C++'s would not (a string compared with a number is not
equal; strings concatenate); a list built past MAX_LIST items (`[x] * n`, `range(n)`) is
undefined rather than built. `infix` renders any expression for people (the one renderer)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from apron.record import Record


class Unknown(Exception):
    """An expression needs a value apron does not have: the message names it."""


class Raises(Unknown):
    """The engine's own code raises here (a dict display indexed with a key it lacks): building
    fails, so the input is refused, not unknown."""


class Unread(Record):
    """A value the engine computes that apron could not: using it is Unknown for `reason`."""

    reason: str


class Symbol(str):
    """An enum constant (LLAMA_SWA_TYPE_STANDARD, LLM_ARCH_LLAMA): compared by name only."""


class _Undefined(Record):
    """A value C++ or Python would not compute here (x / 0, a config key the converter reads and
    this config lacks, code the reader does not read): fine where a short circuit or `?:` never
    uses it, Unknown (naming why) where it is used."""

    reason: str
    raises: bool = False  # the engine's code raises here (Raises where it is used)


def absent(why: str) -> Any:
    """A value for an environment (a name, a converter attribute) that is Unknown naming `why`
    only where an expression uses it: a branch not taken, or a short circuit, leaves it unused."""
    return _Undefined(why)


class Converter(Record):
    """What the converter's reads resolve against: the HF config as the converter sees it, and
    its class's attributes by name."""

    hparams: Mapping[str, Any]
    attribute: Callable[[str], Any]
    find_override: str = ""  # a converter class that overrides find_hparam: misses are unknown


UNDEFINED = _Undefined("a division by zero")
MAX_LIST = 100_000  # a list longer than this (a hostile layer count) is undefined, not built
# A Python rule that reads no HF config (a serving engine's own settings): Python's operators.
PYTHON = Converter({}, lambda name: Unread(f"self.{name}: the rule reads no attribute"))
_CONSTANT = re.compile(r"^[A-Z][A-Z0-9_]*$")

CPP_BINARY = ("+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "&&", "||")
PY_BINARY = ("//", "/f", "**", "in", "item")
# node -> (fewest, most) items after the node's name (None: any number)
NODES: dict[str, tuple[int, int | None]] = {
    **{op: (2, 2) for op in (*CPP_BINARY, *PY_BINARY, "or", "and")},
    "!": (1, 1),
    "not": (1, 1),
    "neg": (1, 1),
    "?:": (3, 3),
    "str": (1, 1),
    "sym": (1, 1),
    "undef": (1, 1),
    "call": (1, None),
    "at": (2, 2),
    "cast": (2, 2),
    "map": (3, 3),
    "list": (0, None),
    "hp": (1, 1),
    "hpget": (1, 2),
    "find": (1, None),
    "findopt": (1, None),
    "has": (1, 1),
    "self": (1, 1),
    "getattr": (2, 2),
    "dict": (0, None),
}
_TEXT_OPERANDS = {
    **{"str": 1, "sym": 1, "undef": 1, "call": 1, "at": 1, "cast": 1, "map": 1},
    "getattr": 1,
}
_TEXT_ONLY = ("hp", "find", "findopt", "has", "self")


def expression_problem(expression: Any) -> str:
    """Why `expression` is not an expression of this language; "" when it is (or is ())."""
    if expression is None or isinstance(expression, bool | int | float | str):
        return ""
    if not isinstance(expression, tuple):
        return f"{expression!r} is not a literal, a name or a node tuple"
    if not expression:
        return ""
    node, *operands = expression
    if node not in NODES:
        return f"{expression!r}: {node!r} is not a node of the rule language"
    fewest, most = NODES[node]
    if len(operands) < fewest or (most is not None and len(operands) > most):
        return f"{expression!r}: {node} takes {fewest}..{most or 'n'} operands"
    texts = len(operands) if node in _TEXT_ONLY else _TEXT_OPERANDS.get(node, 0)
    if node == "hpget":
        texts = 1
    if node == "dict" and len(operands) % 2:
        return f"{expression!r}: dict takes key, value pairs"
    if not all(isinstance(o, str) for o in operands[:texts]):
        return f"{expression!r}: {node} takes {texts} name(s) first"
    for operand in operands[texts:]:
        problem = expression_problem(operand) if operand != () else f"{expression!r}: empty"
        if problem:
            return problem
    return ""


def names_in(expression: Any) -> Iterator[str]:
    """Every name the expression reads, in order (an enum constant is a name too)."""
    if isinstance(expression, str):
        yield expression
    elif isinstance(expression, tuple) and expression:
        node = expression[0]
        if node in ("str", "sym", "undef", "hp", "hpget", "find", "findopt", "has", "self"):
            if node == "hpget" and len(expression) == 3:
                yield from names_in(expression[2])
            return
        first = 1 + _TEXT_OPERANDS.get(node, 0)  # the operands after its text ones
        if node in ("at", "getattr"):
            yield expression[1]
        for operand in expression[first:]:
            yield from names_in(operand)


def substituted(expression: Any, values: Mapping[str, Any]) -> Any:
    """The expression with each name `values` has replaced by its value, the rest as it is (for
    people: `infix(substituted(e, shown))` reads "round((81,920 - 13,904) / 81,920, 3)")."""
    if isinstance(expression, str):
        return values.get(expression, expression)
    if not isinstance(expression, tuple) or not expression:
        return expression
    node = expression[0]
    if node in ("str", "sym", "undef", "hp", "hpget", "find", "findopt", "has", "self"):
        return expression
    first = 1 + _TEXT_OPERANDS.get(node, 0)  # the operands after its text ones
    return (*expression[:first], *(substituted(e, values) for e in expression[first:]))


# ---------------------------------------------------------------- the call tables


def pad(x: int, n: int) -> int:
    """GGML_PAD(x, n): x rounded up to a multiple of n (ggml.h)."""
    return (x + n - 1) // n * n


BUILTIN_CALLS: dict[str, Callable[..., Any]] = {
    "std::min": min,
    "std::max": max,
    "GGML_PAD": pad,
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
    "range": lambda *a: _bounded_range(*a),
}


def _bounded_range(*arguments: Any) -> Any:
    """list(range(...)) of integers (not bools), undefined past MAX_LIST items."""
    if any(type(a) is not int for a in arguments):
        return _Undefined(f"range{arguments!r}: not integers")
    numbers = range(*arguments)
    if len(numbers) > MAX_LIST:
        return _Undefined(f"range{arguments!r}: more than {MAX_LIST:,} items")
    return list(numbers)


def _repeat(a: Any, b: Any) -> Any:
    """a * b, where a sequence repeated past MAX_LIST items is undefined."""
    sequence, count = (a, b) if isinstance(a, list | str) else (b, a)
    if isinstance(sequence, list | str) and isinstance(count, int):
        if len(sequence) * count > MAX_LIST:
            why = f"a sequence of {len(sequence)} repeated {count:,} times: over {MAX_LIST:,} items"
            return _Undefined(why)
    return a * b


_CPP: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b if type(a) is int and type(b) is int else _repeat(a, b),
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
_PY: dict[str, Callable[[Any, Any], Any]] = {
    "//": lambda a, b: a // b if b else UNDEFINED,
    "/f": lambda a, b: a / b if b else UNDEFINED,
    "**": lambda a, b: a**b,
    "in": lambda a, b: int(a in b),
}


def _item(a: Any, b: Any, *, raises: bool) -> Any:
    """a[b] of a list, string or dict; undefined where Python would fail (raising, when `a` is a
    dict display of the code: `raises`)."""
    if isinstance(a, Mapping):
        if not _hashable(b):
            return _Undefined(f"TypeError: unhashable {type(b).__name__}", raises)
        if b in a:
            return a[b]
        keys = ", ".join(map(repr, a))
        return _Undefined(f"KeyError: {b!r} (it maps {keys})", raises)
    if isinstance(a, list | tuple | str) and isinstance(b, int) and -len(a) <= b < len(a):
        return a[b]
    return _Undefined(f"[{b}] of {a!r}")


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


# ---------------------------------------------------------------- evaluation


# A compiled expression is a function of (names, calls, converter): the names it reads, the
# caller's call table, and the converter its reads resolve against (None outside the converter).
Compiled = Callable[[Mapping[str, Any], Mapping[str, Callable[..., Any]], "Converter | None"], Any]
_COMPILED: dict[int, tuple[Any, Compiled]] = {}  # id -> (the expression, kept alive; its function)
_CACHE_LIMIT = 100_000
_NO_CALLS: Mapping[str, Callable[..., Any]] = {}


def evaluate(
    expression: Any,
    names: Mapping[str, Any],
    calls: Mapping[str, Callable[..., Any]] | None = None,
    converter: Converter | None = None,
) -> Any:
    """The expression's value; Unknown (naming why) when it needs what apron does not have."""
    entry = _COMPILED.get(id(expression))
    function = entry[1] if entry is not None and entry[0] is expression else compiled(expression)
    value = function(names, calls or _NO_CALLS, converter)
    if type(value) is int:
        return value
    if isinstance(value, list | dict):  # a list (or dict) holding an undefined item is undefined
        value = _held_undefined(value) or value
    return _defined(value)


def _held_undefined(value: Any) -> _Undefined | None:
    """The first undefined item of a list or dict, at any depth; None when there is none."""
    items = value.values() if isinstance(value, dict) else value
    for item in items:
        if isinstance(item, _Undefined):
            return item
        if isinstance(item, list | dict):
            found = _held_undefined(item)
            if found is not None:
                return found
    return None


def compiled(expression: Any) -> Compiled:
    """The expression as a function of (names, calls, converter), built once per expression
    object (generated modules keep theirs alive, so the id stays theirs)."""
    entry = _COMPILED.get(id(expression))
    if entry is not None and entry[0] is expression:
        return entry[1]
    function = _compile(expression)
    if len(_COMPILED) >= _CACHE_LIMIT:  # expressions built on the fly, not generated ones
        _COMPILED.clear()
    _COMPILED[id(expression)] = (expression, function)
    return function


def _compile(e: Any) -> Compiled:
    if isinstance(e, str):
        return _name(e)
    if e is None or isinstance(e, bool | int | float):
        return lambda n, c, v: e
    if not isinstance(e, tuple) or not e or e[0] not in NODES:
        return _fails(f"malformed expression {e!r}")
    node = e[0]
    fewest, most = NODES[node]
    if len(e) - 1 < fewest or (most is not None and len(e) - 1 > most):
        return _fails(f"malformed expression {e!r}")
    if node in ("==", "!=") and e[2] is None:  # Python's `x is None`: the commonest test
        return _none_test(node == "==", _compile(e[1]))
    if node in _CPP:
        return _cpp_binary(node, _compile(e[1]), _compile(e[2]))
    if node in _PY:
        return _py_binary(node, _compile(e[1]), _compile(e[2]))
    builder = _BUILDERS.get(node)
    if builder is None:
        return _read(e)
    return builder(e)


def _fails(why: str) -> Compiled:
    def run(n, c, v) -> Any:
        raise Unknown(why)

    return run


def _name(name: str) -> Compiled:
    constant = Symbol(name) if _CONSTANT.match(name) else None

    def run(n, c, v) -> Any:
        if name in n:
            value = n[name]
            if type(value) is Unread:
                raise Unknown(value.reason)
            return value
        if constant is not None:
            return constant
        raise Unknown(name)

    return run


def _cpp_binary(op: str, left: Compiled, right: Compiled) -> Compiled:
    function = _CPP[op]

    def run(n, c, v) -> Any:
        a, b = left(n, c, v), right(n, c, v)
        if type(a) is int and type(b) is int:  # the common case: what the checks below allow
            return function(a, b)
        if op == "||" and not isinstance(a, _Undefined) and a:
            return 1
        if op == "&&" and not isinstance(a, _Undefined) and not a:
            return 0
        undefined = _first_undefined(a, b)
        if undefined is not None:
            return undefined
        if (a is None or b is None or v is not None) and op in ("==", "!="):
            return int((a == b) == (op == "=="))  # Python's == (v: a Python rule) of any values
        if (isinstance(a, str) or isinstance(b, str)) and v is None:  # C++: enum constants
            if op not in ("==", "!=") or not (isinstance(a, str) and isinstance(b, str)):
                raise Unknown(f"{a} {op} {b}: an enum constant compared with a number")
        return _safe(op, function, a, b)  # None + 1 in the converter's code: undefined

    return run


def _none_test(equal: bool, left: Compiled) -> Compiled:
    """x == None (1 or 0, as _cpp_binary gives it), compiled on its own."""

    def run(n, c, v) -> Any:
        a = left(n, c, v)
        if isinstance(a, _Undefined):
            return a
        return int((a is None) == equal)

    return run


def _py_binary(op: str, left: Compiled, right: Compiled) -> Compiled:
    function = _PY[op]

    def run(n, c, v) -> Any:
        a, b = left(n, c, v), right(n, c, v)
        return _first_undefined(a, b) or _safe(op, function, a, b)

    return run


def _boolean(e: tuple) -> Compiled:
    op, left, right = e[0], _compile(e[1]), _compile(e[2])

    def run(n, c, v) -> Any:  # Python's: the deciding value
        a, b = left(n, c, v), right(n, c, v)
        if isinstance(a, _Undefined):
            return a
        return (a if a else b) if op == "or" else (b if a else a)

    return run


def _unary(e: tuple) -> Compiled:
    op, argument = e[0], _compile(e[1])

    def run(n, c, v) -> Any:
        a = argument(n, c, v)
        if isinstance(a, _Undefined):
            return a
        if op == "neg":
            return -a
        return (not a) if op == "not" else int(not a)

    return run


def _choice(e: tuple) -> Compiled:
    test, then, other = (_compile(part) for part in e[1:])

    def run(n, c, v) -> Any:
        cond, a, b = test(n, c, v), then(n, c, v), other(n, c, v)
        return cond if isinstance(cond, _Undefined) else (a if cond else b)

    return run


def _cast(e: tuple) -> Compiled:
    return _compile(e[2])  # integer casts of non-negative values change nothing here


def _at(e: tuple) -> Compiled:
    array, index_of = e[1], _compile(e[2])

    def run(n, c, v) -> Any:
        position = index_of(n, c, v)
        if array not in n:
            raise Unknown(f"per-layer array {array}")
        values = _known(n[array])
        index = _defined(position)
        if not isinstance(values, list) or not 0 <= index < len(values):
            raise Unknown(f"{array}[{index}]")
        return _known(values[index])

    return run


def _call(e: tuple) -> Compiled:
    name, arguments = e[1], tuple(_compile(a) for a in e[2:])
    python = PY_CALLS.get(name)

    def run(n, c, v) -> Any:
        args = [a(n, c, v) for a in arguments]
        if v is not None and python is not None:
            function = python
        elif name in c:
            function = c[name]
        elif name in BUILTIN_CALLS:
            function = BUILTIN_CALLS[name]
        else:
            raise Unknown(f"call {name}()")
        for arg in args:
            if type(arg) is _Undefined:
                return arg
        return _safe(name, function, *args)

    return run


def _dict(e: tuple) -> Compiled:
    keys = tuple(_compile(k) for k in e[1::2])
    values = tuple(_compile(v) for v in e[2::2])

    def run(n, c, v) -> Any:
        pairs = [(key(n, c, v), value(n, c, v)) for key, value in zip(keys, values, strict=True)]
        undefined = _first_undefined(*(x for pair in pairs for x in pair))
        if undefined is not None:
            return undefined
        if not all(_hashable(key) for key, _ in pairs):
            return _Undefined("a dict display with an unhashable key")
        return dict(pairs)

    return run


def _subscript(e: tuple) -> Compiled:
    """x[i]; a dict display indexed with a key it lacks raises (the engine's code fails there)."""
    literal = isinstance(e[1], tuple) and bool(e[1]) and e[1][0] == "dict"
    container, key = _compile(e[1]), _compile(e[2])

    def run(n, c, v) -> Any:
        a, b = container(n, c, v), key(n, c, v)
        return _first_undefined(a, b) or _item(a, b, raises=literal)

    return run


def _map(e: tuple) -> Compiled:
    variable, sequence_of, body = e[1], _compile(e[2]), _compile(e[3])

    def run(n, c, v) -> Any:
        sequence = sequence_of(n, c, v)
        if isinstance(sequence, _Undefined):
            return sequence
        if isinstance(sequence, str) and len(sequence) <= MAX_LIST:
            sequence = list(sequence)  # a string is iterated by character
        if not isinstance(sequence, list | tuple):
            return _Undefined(f"a comprehension over {sequence!r}")
        found = []
        for item in sequence:
            result = body({**n, variable: item}, c, v)
            if type(result) is list:  # an element holding an undefined item is undefined
                result = _first_undefined(*result) or result
            found.append(result)
        return found

    return run


def _list(e: tuple) -> Compiled:
    items = tuple(_compile(i) for i in e[1:])
    return lambda n, c, v: [item(n, c, v) for item in items]


def _constant(e: tuple) -> Compiled:
    value: Any = e[1] if e[0] == "str" else Symbol(e[1])
    if e[0] == "undef":
        value = _Undefined(f"code the reader does not read ({e[1]})")
    return lambda n, c, v: value


def _getattr(e: tuple) -> Compiled:
    name, default_of = e[1], _compile(e[2])

    def run(n, c, v) -> Any:
        default = default_of(n, c, v)
        if name not in n:
            return default
        value = n[name]
        return default if isinstance(value, _Undefined) else _known(value)

    return run


_BUILDERS: dict[str, Callable[[tuple], Compiled]] = {
    "or": _boolean,
    "and": _boolean,
    "!": _unary,
    "not": _unary,
    "neg": _unary,
    "?:": _choice,
    "cast": _cast,
    "at": _at,
    "call": _call,
    "map": _map,
    "list": _list,
    "str": _constant,
    "sym": _constant,
    "undef": _constant,
    "getattr": _getattr,
    "dict": _dict,
    "item": _subscript,
}


def _read(e: tuple) -> Compiled:
    """The converter's reads of the HF config ("hp", "hpget", "find", "findopt", "has",
    "self"): Unknown where no converter is given."""
    kind, texts = e[0], e[1:]
    default_of = _compile(e[2]) if kind == "hpget" and len(e) == 3 else None
    if kind == "self":  # the most frequent read: its own closure
        return _self_read(texts[0])

    def run(n, c, converter) -> Any:
        default = default_of(n, c, converter) if default_of is not None else None
        if converter is None:
            raise Unknown(f"{kind}:{'|'.join(texts)}")
        hparams = converter.hparams
        if kind == "hp":
            key = texts[0]
            missing = f"the converter reads hparams[{key!r}], which this config lacks"
            return _lazy(hparams[key]) if key in hparams else _Undefined(missing)
        if kind == "hpget":
            return _lazy(hparams.get(texts[0], default))
        if kind == "has":
            return int(texts[0] in hparams)
        if kind == "self":
            return _known(converter.attribute(texts[0]))
        keys = list(texts)
        found = next((k for k in keys if k in hparams), None)
        if found is None and converter.find_override:
            why = (
                f"{converter.find_override}.find_hparam, which apron does not read, looks {keys} up"
            )
            return _Undefined(why)
        if found is None and kind == "find":
            return _Undefined(f"the converter's find_hparam finds none of {keys}")
        return _lazy(hparams[found]) if found is not None else None

    return run


def _self_read(name: str) -> Compiled:
    def run(n, c, converter) -> Any:
        if converter is None:
            raise Unknown(f"self:{name}")
        return _known(converter.attribute(name))

    return run


def _lazy(value: Any) -> Any:
    """An Unread value as an undefined one: Unknown only where it is used."""
    return _Undefined(value.reason) if isinstance(value, Unread) else value


def _known(value: Any) -> Any:
    if isinstance(value, Unread):
        raise Unknown(value.reason)
    return value


def _defined(value: Any) -> Any:
    if isinstance(value, _Undefined):
        raise (Raises if value.raises else Unknown)(value.reason)
    return value


def _safe(name: str, function: Callable[..., Any], *args: Any) -> Any:
    """A Python operation the converter makes; one that fails there (len of an int, in a
    branch not taken) is undefined here."""
    try:
        return function(*args)
    except (TypeError, ValueError, IndexError, KeyError, ZeroDivisionError, OverflowError) as err:
        return _Undefined(f"{name} fails: {err}")


def _first_undefined(*values: Any) -> _Undefined | None:
    for value in values:
        if isinstance(value, _Undefined):
            return value
    return None


# ---------------------------------------------------------------- words for people

_PRECEDENCE = {
    "or": 1,
    "||": 1,
    "and": 2,
    "&&": 2,
    "==": 3,
    "!=": 3,
    "<": 4,
    "<=": 4,
    ">": 4,
    ">=": 4,
    "in": 4,
    "+": 5,
    "-": 5,
    "*": 6,
    "/": 6,
    "/f": 6,
    "//": 6,
    "%": 6,
    "**": 7,
}
_SHOWN = {"/f": "/"}


def infix(expression: Any, names: Callable[[str], str] = str) -> str:
    """The expression as C++/Python-like words for people ("n_embd * (l - 1)"), the one
    renderer; `names` shows a name shorter ("model_config.hf_config.x" as "x")."""
    return _words(expression, names)[0]


def _words(e: Any, names: Callable[[str], str] = str) -> tuple[str, int]:
    """(text, precedence of its outermost operator; 9 for an atom)."""
    if isinstance(e, str):
        return names(e), 9
    if not isinstance(e, tuple):
        return repr(e), 9
    if not e:
        return "always", 9
    node, *rest = e
    if node in _PRECEDENCE:
        (a, pa), (b, pb) = _words(rest[0], names), _words(rest[1], names)
        p = _PRECEDENCE[node]
        left = a if pa >= p else f"({a})"
        right = b if pb > p else f"({b})"
        return f"{left} {_SHOWN.get(node, node)} {right}", p
    if node in ("!", "neg", "not"):
        a, pa = _words(rest[0], names)
        sign = {"!": "!", "neg": "-", "not": "not "}[node]
        return sign + (a if pa >= 9 else f"({a})"), 8
    if node == "?:":
        cond, then, other = (_words(r, names)[0] for r in rest)
        return f"({cond} ? {then} : {other})", 9
    if node == "cast":
        return f"({rest[0]}) {_words(rest[1], names)[0]}", 8
    if node == "at":
        return f"{rest[0]}[{_words(rest[1], names)[0]}]", 9
    if node == "item":
        return f"{_words(rest[0], names)[0]}[{_words(rest[1], names)[0]}]", 9
    if node == "call":
        return f"{rest[0]}({', '.join(_words(r, names)[0] for r in rest[1:])})", 9
    if node == "list":
        return "[" + ", ".join(_words(r, names)[0] for r in rest) + "]", 9
    if node == "map":
        body, over = _words(rest[2], names)[0], _words(rest[1], names)[0]
        return f"[{body} for {rest[0]} in {over}]", 9
    if node == "str":
        return repr(rest[0]), 9
    if node == "hp":
        return f"hparams[{rest[0]!r}]", 9
    if node == "hpget":
        default = f", {_words(rest[1], names)[0]}" if len(rest) == 2 else ""
        return f"hparams.get({rest[0]!r}{default})", 9
    if node in ("find", "findopt"):
        optional = ", optional=True" if node == "findopt" else ""
        return f"find_hparam({list(rest)!r}{optional})", 9
    if node == "has":
        return f"{rest[0]!r} in hparams", 4
    if node == "self":
        return f"self.{rest[0]}", 9
    if node == "getattr":
        return f"getattr({names(rest[0])}, {_words(rest[1], names)[0]})", 9
    if node == "undef":
        return f"<unread: {rest[0]}>", 9
    if node == "dict":
        pairs = (
            f"{_words(k, names)[0]}: {_words(v, names)[0]}"
            for k, v in zip(rest[::2], rest[1::2], strict=True)
        )
        return "{" + ", ".join(pairs) + "}", 9
    return " ".join(str(r) for r in rest), 9  # "sym"
