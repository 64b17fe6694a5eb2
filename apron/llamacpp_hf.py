"""An HF config.json through the llama.cpp converter's extracted HF -> GGUF mapping
(generated/llamacpp converter_hparams and gguf_writer_keys): the GGUF metadata
`convert_hf_to_gguf` would write for the hparams, as a header apron sizes with the rules of
apron/llamacpp_memory.py. A write apron cannot reproduce (a computed value) is left out, and
when the sizing then needs it, the figure is unknown naming that write."""

from __future__ import annotations

from typing import Any

from apron.config import ModelConfig
from apron.constraints import Citation, EngineConstraints
from apron.gguf_header import GgufHeader
from apron.llamacpp_memory import SIZING_KEYS


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


def hf_header(model: ModelConfig, c: EngineConstraints, row: Any) -> tuple[GgufHeader, list, list]:
    """(header, unread sizing writes, citations) for the converter class of an hf_architectures
    row; an unread sizing write is one of SIZING_KEYS whose value apron cannot reproduce."""
    chain = _chain(c, row.converter_class.rsplit(".", 1)[-1], row.path)
    keys = {r.method: r.key for r in c.rows("gguf_writer_keys")}
    hparams = model.text if model.text_key else model.raw
    block_keys = next((r.block_count_keys for r in chain if r.block_count_keys), ())
    metadata: dict[str, Any] = {"general.architecture": row.gguf_arch}
    unread: list[tuple[str, str]] = []  # (GGUF key suffix, the write)
    cites: list[Citation] = []
    # the base's writes first (super().set_gguf_parameters() is called before the class's own);
    # a class that does not define the method inherits it
    ordered = []
    for cls in chain:
        if cls.defines:
            ordered.insert(0, cls)
            if not cls.calls_super:
                break
    for cls in ordered:
        cites.append(c.cite(cls))
        for write in cls.writes:
            method, how, *args = write
            key = keys.get(method, "")
            if not key:
                continue
            key = key.replace("{arch}", row.gguf_arch)
            value = None
            if how == "find_hparam":
                value = _find(hparams, tuple(args))
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
                value = _find(hparams, tuple(block_keys))
            else:
                suffix = key.removeprefix(f"{row.gguf_arch}.")
                if suffix in SIZING_KEYS:  # named, not quoted: the code is in the fact
                    unread.append((suffix, f"{method} ({cls.converter_class})"))
                metadata.pop(key, None)
                continue
            if value is not None:
                metadata[key] = value
    return GgufHeader(model.source, 3, metadata, ()), unread, cites
