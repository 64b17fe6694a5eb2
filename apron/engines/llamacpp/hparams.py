"""llama.cpp's llama_hparams for a GGUF header, by replaying the loader steps extracted from
llama.cpp (generated/llamacpp hparams_steps): the member defaults, the base loader, the
architecture's load_arch_hparams and the helpers it calls, in source order, with the GGUF's
metadata where they read a key. What llama.cpp refuses (a required key absent, a value of the
wrong type, a GGML_ASSERT or throw that fires) is Refused with llama.cpp's reason; a value the
steps could not compute stays Unread and is Unknown only where a sizing formula uses it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from apron.constraints import EngineConstraints
from apron.engines.llamacpp.gguf_header import GgufHeader
from apron.expressions import Symbol, Unknown, Unread, evaluate
from apron.terminal import shown

DEFAULTS = "llama_hparams"  # the function name of the member-default steps
LOADER = "llama.cpp's model loader (src/llama-model-loader.cpp)"
# the GGUF type llama_model_loader's typed get_key reads into a member of this C type (GKV<T>);
# any other type is refused; get_arr takes an int32, uint32 or bool array into an integer one
GGUF_TYPES = {
    "uint32_t": "u32",
    "int32_t": "i32",
    "bool": "bool",
    "float": "f32",
    "std::string": "str",
}
INTEGER_ARRAYS = frozenset({"arr[i32]", "arr[u32]", "arr[bool]"})
ARCH_LOADER = "load_arch_hparams"
_RANGES = {"uint32_t": (0, 2**32), "int32_t": (-(2**31), 2**31), "uint64_t": (0, 2**64)}
_WORDS = {"uint32_t": "an unsigned 32-bit integer", "int32_t": "a signed 32-bit integer"}


class Refused(Unknown):
    """llama.cpp refuses to load this file: the message says why, as llama.cpp does."""


def _element_type(target_type: str) -> str:
    """std::array<uint32_t, LLAMA_MAX_LAYERS> -> uint32_t."""
    if target_type.startswith("std::array<"):
        return target_type[len("std::array<") :].split(",")[0].strip()
    return target_type


def _check_type(full_key: str, kind: str | None, type_: str, per_layer: bool) -> None:
    """Refused as llama.cpp's loader refuses a key of another GGUF type (a header read from a
    file knows each key's type; one apron built from a config does not: None)."""
    if kind is None:
        return
    if per_layer and kind.startswith("arr["):
        if type_ in ("uint32_t", "int32_t") and kind not in INTEGER_ARRAYS:
            raise Refused(
                f"{shown(full_key)} is not a string/float32/uint32/int32 array ({LOADER})"
            )
        return
    expected = GGUF_TYPES.get(type_)
    if expected is not None and kind != expected:
        raise Refused(
            f"key {shown(full_key)} has wrong type {kind} but expected type {expected} ({LOADER})"
        )


def _check(full_key: str, value: Any, type_: str) -> Any:
    """A GGUF value as llama.cpp's typed read of `type_` takes it, or Unknown naming the key."""
    if type_ in _RANGES:
        low, high = _RANGES[type_]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value < high:
            raise Unknown(
                f"{full_key} = {value!r}: llama.cpp's loader reads it as {_WORDS.get(type_, type_)}"
            )
    elif type_ == "bool" and not isinstance(value, bool):
        raise Unknown(f"{full_key} = {value!r}: llama.cpp's loader reads it as a bool")
    elif type_ == "float" and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise Unknown(f"{full_key} = {value!r}: llama.cpp's loader reads it as a float")
    elif type_ == "std::string" and not isinstance(value, str):
        raise Unknown(f"{full_key} = {value!r}: llama.cpp's loader reads it as a string")
    return value


# id(rows) -> (rows, kept alive; function -> its steps in order): grouped once per rows tuple
_STEPS: dict[int, tuple[tuple, dict[str, list]]] = {}
_KEPT = 16  # rows tuples remembered (one per generated/ loaded)


def _steps_by_function(rows: tuple) -> dict[str, list]:
    """The loader steps of each function, in order."""
    entry = _STEPS.get(id(rows))
    if entry is None or entry[0] is not rows:
        steps: dict[str, list] = {}
        for row in rows:
            steps.setdefault(row.function, []).append(row)
        for function_rows in steps.values():
            function_rows.sort(key=lambda r: r.order)
        if len(_STEPS) >= _KEPT:
            _STEPS.clear()
        entry = _STEPS[id(rows)] = (rows, steps)
    return entry[1]


class Loader:
    """One replay of the loader steps for one header."""

    def __init__(
        self,
        header: GgufHeader,
        c: EngineConstraints,
        arch: str,
        calls: dict[str, Callable[..., Any]],
        hp: dict[str, Any],
        assume_written: Callable[[str], bool] | None = None,
    ) -> None:
        self.header, self.arch = header, arch
        self.hp = hp
        self.hp["arch"] = Symbol(arch)
        self.calls = calls
        # an HF config's header holds only the converter writes apron reproduces: a required key
        # it lacks that `assume_written` accepts is taken as written, with an unknown value
        self.assume_written = assume_written or (lambda key: False)
        self.steps = _steps_by_function(c.rows("hparams_steps"))  # read, never changed
        self.notes: list[str] = []

    # ------------------------------------------------------------ values

    def eval(self, expression: Any, scope: dict[str, Any]) -> Any:
        return evaluate(expression, {**self.hp, **scope}, self.calls)

    def store(self, target: str, value: Any, scope: dict[str, Any], index: Any = None) -> None:
        where = scope if target.startswith("$") else self.hp
        if index is None:
            where[target] = value
            return
        array = where.get(target)
        if not isinstance(array, list):
            where[target] = Unread(f"{target} written at [{index}] before it was filled")
            return
        if isinstance(index, int) and 0 <= index < len(array):
            array[index] = value

    def layers(self) -> int:
        n_layer = self.hp.get("n_layer")
        if isinstance(n_layer, Unread):
            raise Unknown(f"n_layer: {n_layer.reason}")
        if not isinstance(n_layer, int):
            raise Unknown("n_layer (block_count) before a per-layer array is filled")
        max_layers = self.hp.get("LLAMA_MAX_LAYERS")
        if isinstance(max_layers, int) and n_layer > max_layers:
            raise Refused(
                f"{shown(self.header.architecture)}.block_count = {n_layer:,}: over "
                f"LLAMA_MAX_LAYERS {max_layers}, the size of llama_hparams' per-layer arrays "
                f"({LOADER} throws n > N_MAX reading them)"
            )
        return max(n_layer, 1)

    # ------------------------------------------------------------ running

    def run(self) -> dict[str, Any]:
        scope: dict[str, Any] = {}
        self.block(self.steps.get(DEFAULTS, ()), scope, -1)
        entry = next(
            (
                name
                for name, rows in self.steps.items()
                if any(r.kind == "call" and r.target == ARCH_LOADER and not r.archs for r in rows)
            ),
            None,
        )
        if entry is None:
            raise Unknown("no base hparams loader among the extracted steps (hparams_steps)")
        self.function(entry, ())
        return self.hp

    def function(self, name: str, arguments: tuple) -> None:
        rows = self.steps.get(name)
        if rows is None:
            raise Unknown(f"no extracted steps for {name}")
        scope: dict[str, Any] = {}
        params = [r for r in rows if r.kind == "param"]
        for i, param in enumerate(params):
            if i < len(arguments):
                scope[param.target] = arguments[i]
            elif param.value != ():
                scope[param.target] = self.eval(param.value, {})
            else:
                raise Unknown(f"{name}: no value for parameter {param.target}")
        self.block([r for r in rows if r.kind != "param"], scope, -1)

    def block(self, rows: Iterable, scope: dict[str, Any], loop: int) -> None:
        rows = list(rows)
        for row in rows:
            if row.loop != loop:
                continue
            if self.step(row, rows, scope) == "return":
                return

    def holds(self, row, scope: dict[str, Any]) -> bool | None:
        if row.condition == ():
            return True
        try:
            return bool(self.eval(row.condition, scope))
        except Refused:
            raise
        except Unknown as err:
            if row.kind in ("assert", "throw"):
                self.notes.append(
                    f"llama.cpp also checks `{row.code}` ({row.symbol}), which apron cannot evaluate ({err})"
                )
                return None
            if row.kind in ("return", "call", "loop"):
                raise Unknown(f"{row.symbol}: whether `{row.code}` runs ({err})") from None
            if row.target:
                self.store(
                    row.target,
                    Unread(
                        f"{row.symbol}: `{row.code}` under a condition apron cannot evaluate ({err})"
                    ),
                    scope,
                )
            if row.found:
                self.store(row.found, Unread(str(err)), scope)
            return None

    def step(self, row, rows: list, scope: dict[str, Any]) -> str:
        holds = self.holds(row, scope)
        if not holds:
            return ""
        kind = row.kind
        if kind == "key":
            self.key(row, scope)
        elif kind in ("assign", "fill"):
            try:
                value = self.eval(row.value, scope)
            except Refused:
                raise
            except Unknown as err:
                value = Unread(f"{row.symbol}: `{row.code}` ({err})")
            if kind == "fill":
                value = [value] * self.layers()
                self.store(row.target, value, scope)
            elif row.index != ():
                self.store(row.target, value, scope, self.eval(row.index, scope))
            else:
                self.store(row.target, value, scope)
        elif kind == "loop":
            try:
                start, bound = self.eval(row.value, scope), self.eval(row.arguments[0], scope)
            except Refused:
                raise
            except Unknown as err:  # every target the loop writes is unknown
                for inner in rows:
                    if inner.loop == row.order and inner.target:
                        why = f"{row.symbol}: `{row.code}` runs a number of times apron cannot tell ({err})"
                        self.store(inner.target, Unread(why), scope)
                return ""
            for i in range(start, bound):
                scope[row.target] = i
                self.block(rows, scope, row.order)
        elif kind == "call":
            arguments = tuple(self.eval(a, scope) for a in row.arguments)
            if row.target == ARCH_LOADER:
                own = next(
                    (
                        name
                        for name, r in self.steps.items()
                        if any(self.arch in s.archs for s in r)
                    ),
                    None,
                )
                if own is not None:
                    self.function(own, arguments)
            else:
                target = row.target if "::" in row.target else f"{DEFAULTS}::{row.target}"
                self.function(target, arguments)
        elif kind == "assert":
            try:
                if row.value == ():
                    raise Unknown(row.unknown)
                checked = self.eval(row.value, scope)
            except Refused:
                raise
            except Unknown as err:
                self.notes.append(
                    f"llama.cpp also checks `{row.code}` ({row.symbol}), which apron cannot evaluate ({err})"
                )
                return ""
            if not checked:
                raise Refused(f"{row.code} fails ({row.symbol})")
        elif kind == "throw":
            raise Refused(f"{row.code} ({row.symbol})")
        elif kind == "return":
            return "return"
        elif kind == "unread" and row.target:
            self.store(row.target, Unread(f"{row.symbol}: `{row.code}` ({row.unknown})"), scope)
        return ""

    def key(self, row, scope: dict[str, Any]) -> None:
        full = row.key.replace("%s", self.header.architecture)
        value = self.header.metadata.get(full)
        found = value is not None
        element = _element_type(row.target_type)
        if not found and row.required:
            if not self.assume_written(full):
                raise Refused(f"key not found in model: {shown(full)} ({row.symbol})")
            found, value = (
                True,
                Unread(f"{full}: the converter writes it; apron does not reproduce that write"),
            )
        if found and not isinstance(value, Unread):
            form = row.key_form
            kind = None if self.header.types is None else self.header.types.get(full)
            if form in ("scalar", "per_layer") or (
                form == "scalar_or_array" and not isinstance(value, list)  # an array: ignored
            ):
                _check_type(full, kind, element, form == "per_layer")
            if form == "per_layer":
                n = self.eval(row.value, scope) if row.value != () else self.layers()
                if isinstance(value, list):
                    if len(value) != n:
                        raise Refused(
                            f"key {shown(full)} has wrong array length; expected {n:,}, got "
                            f"{len(value):,} ({LOADER})"
                        )
                    # get_arr takes a BOOL array into integers (llama-model-loader.cpp)
                    items = [
                        _check(full, int(v) if isinstance(v, bool) else v, element) for v in value
                    ]
                else:
                    items = [_check(full, value, element)] * n
                array = self.hp.get(row.target) if not row.target.startswith("$") else None
                if not isinstance(array, list):
                    array = [0] * max(n, self.layers())
                array = list(array)
                array[:n] = items
                value = array
            elif form == "scalar_or_array" and isinstance(value, list):
                if row.required:
                    raise Refused(f"expected scalar, found array for key: {shown(full)} ({LOADER})")
                found = False
            elif form == "array_length":
                if not isinstance(value, list):
                    found = False
                else:
                    value = len(value)
            elif form == "array":
                if not isinstance(value, list):
                    found = False
            elif isinstance(value, list):
                raise Unknown(
                    f"{full} is an array; llama.cpp's loader reads one {element or 'value'}"
                )
            else:
                value = _check(full, value, element)
        if found and row.target:
            self.store(row.target, value, scope)
        if row.found:  # a write apron does not reproduce may also be absent
            self.store(row.found, value if isinstance(value, Unread) else int(found), scope)


def load_hparams(
    header: GgufHeader,
    c: EngineConstraints,
    arch: str,
    hp: dict[str, Any],
    calls: dict[str, Callable[..., Any]],
    assume_written: Callable[[str], bool] | None = None,
) -> list[str]:
    """Fill `hp` with llama_hparams as llama.cpp's loader reads `header` (members by name;
    per-layer arrays as lists of n_layer values; enum values as Symbols). `calls` are the
    llama_hparams methods and predicates the steps call, evaluated against `hp` itself. Returns
    notes: the checks llama.cpp makes that apron could not evaluate."""
    if not c.has("hparams_steps"):
        raise Unknown("no hparams_steps fact in generated/llamacpp")
    loader = Loader(header, c, arch, calls, hp, assume_written)
    loader.run()
    return list(dict.fromkeys(loader.notes))
