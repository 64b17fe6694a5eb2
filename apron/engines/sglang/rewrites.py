"""A config as SGLang's config loader presents it: the per-model_type rewrites of a
sub-configuration (generated/sglang/config_rewrites.py; Gemma 4's text_config gets the
full-attention num_global_key_value_heads and global_head_dim on its base names, the sliding
ones on swa_*), applied in order to the text config apron reads."""

from __future__ import annotations

from typing import Any

from apron.config import ModelConfig
from apron.constraints import Citation, EngineConstraints
from apron.record import Record

FACT = "config_rewrites"


class Rewritten(Record):
    """The config SGLang's ModelConfig reads (the given one when nothing is rewritten), what
    the loader set (words), where it says so, and why it is unknown ("" when known)."""

    model: ModelConfig
    words: tuple[str, ...] = ()
    citations: tuple[Citation, ...] = ()
    unknown: str = ""


def _where(row: Any) -> str:
    return f"SGLang's config loader ({row.path} {row.symbol})"


def rewritten(model: ModelConfig, sglang: EngineConstraints) -> Rewritten:
    """`model` with the rewrites SGLang's loader makes for its model_type applied."""
    rows = sorted(
        (
            r
            for r in (sglang.rows(FACT) if sglang.has(FACT) else ())
            if r.model_type == model.model_type
        ),
        key=lambda r: r.order,
    )
    if not rows:
        return Rewritten(model)
    cites = tuple(dict.fromkeys(sglang.cite(r) for r in rows))
    unread = [r for r in rows if r.kind != "copy"]
    if unread:
        why = (
            f"{_where(unread[0])} rewrites {unread[0].sub_config} of model_type "
            f"{model.model_type} by `{unread[0].code}`, which is not read"
        )
        return Rewritten(model, citations=cites, unknown=why)
    sub = rows[0].sub_config
    if model.text_key != sub:
        why = (
            f"{_where(rows[0])} rewrites {sub} of model_type {model.model_type}, which "
            "config.json does not give (transformers' class fills in one not read here)"
        )
        return Rewritten(model, citations=cites, unknown=why)
    state: dict[str, Any] = {}
    words: list[str] = []
    for row in rows:
        present = row.source in state or model.read(row.source) is not None
        if row.when == "target_absent" and (row.attribute in state or model.present(row.attribute)):
            continue
        if not present and row.read != "getattr":
            why = (
                f"{_where(row)} reads {sub}.{row.source}, which neither config.json nor "
                "transformers' class gives: SGLang fails to load it (AttributeError)"
            )
            return Rewritten(model, citations=cites, unknown=why)
        value = state[row.source] if row.source in state else model.get(row.source)
        if row.when == "source_not_none" and value is None:
            continue
        state[row.attribute] = value
        words.append(f"{row.attribute} <- {row.source} ({value})")
    if not state:
        return Rewritten(model, citations=cites)
    raw = {**model.raw, sub: {**model.text, **state}}
    return Rewritten(ModelConfig(raw, model.source, model.constraints), tuple(words), cites)
