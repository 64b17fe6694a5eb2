"""An HF config.json through the llama.cpp converter's extracted HF -> GGUF mapping
(generated/llamacpp converter_hparams and gguf_writer_keys): the GGUF metadata
`convert_hf_to_gguf` would write for the hparams, as a header apron sizes with the rules of
apron/engines/llamacpp/memory.py. A write apron cannot reproduce (a computed value) is left out, and
when the sizing then needs it, the figure is unknown naming that write."""

from __future__ import annotations

from typing import Any

from apron.config import ModelConfig
from apron.constraints import Citation, EngineConstraints
from apron.engines.llamacpp.gguf_header import GgufHeader
from apron.engines.llamacpp.memory import SIZING_KEYS
from apron.llamacpp_formula import Converter, Symbol, Unknown, Unread, evaluate


def _chain(c: EngineConstraints, name: str, path: str) -> list:
    """The converter class and its bases (first base each step), nearest first."""
    rows = c.rows("converter_hparams")
    by_name: dict[str, list] = {}
    for row in rows:
        by_name.setdefault(row.converter_class, []).append(row)
    out = []
    current = next((r for r in by_name.get(name, ()) if r.path == path), None)
    current = current or (by_name.get(name) or [None])[0]
    seen = set()
    while current is not None and current.converter_class not in seen:
        seen.add(current.converter_class)
        out.append(current)
        bases = current.bases
        current = None
        for base in bases:
            found = by_name.get(base.rsplit(".", 1)[-1])
            if found:
                current = found[0]
                break
    return out


def _find(hparams: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        if key in hparams:
            return hparams[key]
    return None


class _Scope:
    """The converter's view of one config: its hparams after the chain's `self.hparams[...] =`
    assignments, and its attributes: the class-body defaults and the __init__ assignments of
    the chain, base class first (each __init__ calls super().__init__ first)."""

    def __init__(self, model: ModelConfig, chain: list, row: Any, block_keys: tuple) -> None:
        self.hparams: dict[str, Any] = dict(model.text if model.text_key else model.raw)
        self.chain, self.row, self.block_keys = chain, row, block_keys
        self.model = model
        self.attrs: dict[str, Any] = {}
        self.find_override = next(
            (c.converter_class for c in chain if getattr(c, "defines_find_hparam", False)), ""
        )
        self.converter = Converter(self.hparams, self.attribute, self.find_override)
        for cls in chain:  # the nearest class's code runs first, before super()
            for key, how, *rest in cls.hparams_sets:
                what = f"self.hparams[{key!r}] ({cls.converter_class})"
                value = self._value(how, rest, what)
                if value is not _SKIP:
                    self.hparams[key] = value
        if block_keys:  # TextModel.__init__: self.block_count = self.find_hparam([...])
            self.attrs["block_count"] = _find(self.hparams, tuple(block_keys))
        for cls in reversed(chain):
            for name, op, how, *rest in cls.attributes:
                what = f"self.{name} ({cls.converter_class})"
                value = self._value(how, rest, what)
                if value is _SKIP:
                    continue
                if op == "+=":
                    old = self.attrs.get(name)
                    if isinstance(old, Unread) or isinstance(value, Unread) or old is None:
                        value = Unread(f"{what} += on a value apron does not have")
                    else:
                        value = old + value
                self.attrs[name] = value

    def _value(self, how: str, rest: list, what: str) -> Any:
        if how == "unread":
            return Unread(f"{what} is set by code apron does not read: {rest[-1] if rest else ''}")
        try:
            tokens, condition = _split(how, rest)
            if condition and not evaluate(condition, {}, None, self.converter):
                return _SKIP
            return evaluate(tokens, {}, None, self.converter)
        except Unknown as err:
            return Unread(f"{what}: {err}")

    def attribute(self, name: str) -> Any:
        if name in self.attrs:
            return self.attrs[name]
        if name == "model_arch":
            return Symbol(self.row.model_arch)
        if name == "hf_arch":
            return self.model.architecture
        raise Unknown(f"self.{name}, which no converter class here sets in code apron reads")


_SKIP = object()  # an assignment whose condition does not hold: nothing changes


def _split(how: str, rest: list) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(value tokens, condition tokens) of an "expr" or "expr_when" write."""
    if how == "expr":
        return tuple(rest), ()
    n = int(rest[0])
    return tuple(rest[1 + n :]), tuple(rest[1 : 1 + n])


def hf_header(
    model: ModelConfig, c: EngineConstraints, row: Any
) -> tuple[GgufHeader, list, list, set[str]]:
    """(header, unread sizing writes, citations) for the converter class of an hf_architectures
    row, and the GGUF keys some extracted write of the chain targets (written or, for this
    config, not); an unread sizing write is one of SIZING_KEYS whose value apron cannot
    reproduce: an argument of a shape not read, or the converter's expression reading what this
    config or the reader lacks."""
    by_name = {r.converter_class: r for r in c.rows("converter_hparams")}
    chain = [by_name[name] for name in getattr(row, "converter_mro", ()) if name in by_name]
    chain = chain or _chain(c, row.converter_class.rsplit(".", 1)[-1], row.path)
    keys = {r.method: r.key for r in c.rows("gguf_writer_keys")}
    block_keys = next((r.block_count_keys for r in chain if r.block_count_keys), ())
    scope = _Scope(model, chain, row, block_keys)
    hparams = scope.hparams
    metadata: dict[str, Any] = {"general.architecture": row.gguf_arch}
    unread: list[tuple[str, str]] = []  # (GGUF key suffix, the write)
    considered: set[str] = set()
    cites: list[Citation] = []
    # the base's writes first (super().set_gguf_parameters() is called before the class's own);
    # a class that does not define the method inherits it
    ordered = []
    names = [cls.converter_class for cls in chain]
    i = 0
    while i < len(chain):
        cls = chain[i]
        i += 1
        if not cls.defines:
            continue
        ordered.insert(0, cls)
        # Base.set_gguf_parameters(self) runs Base's, whose super() goes on along self's MRO
        base = getattr(cls, "calls_base", "")
        if base and base in names[i:]:
            i = names.index(base, i)
        elif not cls.calls_super:
            break
    for cls in ordered:
        cites.append(c.cite(cls))
        for write in cls.writes:
            method, how, *args = write
            key = keys.get(method, "")
            if not key:
                continue
            key = key.replace("{arch}", row.gguf_arch)
            considered.add(key)
            suffix = key.removeprefix(f"{row.gguf_arch}.")
            value = None
            if how == "find_hparam":
                value = _find(hparams, tuple(args))
                if value is None and scope.find_override:  # it may find a key apron does not
                    value = Unread(f"{scope.find_override}.find_hparam, not read, looks {args} up")
            elif how == "hparams":
                if args[0] not in hparams:  # the converter's KeyError: it cannot convert
                    unread.append(("", f"{method} ({cls.converter_class}): no {args[0]!r}"))
                    continue
                value = hparams[args[0]]
            elif how == "get":
                value = hparams.get(args[0], int(args[1]) if len(args) > 1 else None)
            elif how == "literal":
                value = int(args[0])
            elif how == "block_count":
                try:
                    value = scope.attribute("block_count")
                except Unknown as err:
                    value = Unread(str(err))
                if value is None:
                    value = Unread(f"self.block_count: none of {list(block_keys)} in the config")
            elif how in ("expr", "expr_when"):
                tokens, condition = _split(how, args)
                try:
                    if condition and not evaluate(condition, {}, None, scope.converter):
                        continue  # the converter does not write it for this config
                    value = evaluate(tokens, {}, None, scope.converter)
                except Unknown as err:
                    value = Unread(str(err))
            else:
                value = Unread(
                    f"its argument is code apron does not read: {args[-1] if args else ''}"
                )
            if isinstance(value, Unread):
                # written, its value unknown: unknown wherever llama.cpp's loader uses it
                what = f"{method} ({cls.converter_class}): {value.reason}"
                metadata[key] = Unread(f"the converter computes {what}")
                if suffix in SIZING_KEYS:
                    unread.append((suffix, what))
                continue
            if value is not None:
                metadata[key] = _gguf_value(value)
    return (
        GgufHeader(path=model.source, version=3, metadata=metadata, tensors=()),
        unread,
        cites,
        considered,
    )


def _gguf_value(value: Any) -> Any:
    """What gguf-py writes for a Python value: a bool list stays bools, a float stays."""
    if isinstance(value, tuple):
        return list(value)
    return value
