"""The KV-head scan of vLLM's ModelConfig.get_total_num_kv_heads with its per-model_type
overrides, applied to a config from one engine's extracted `kv_head_*` facts: vLLM's own, and
SGLang's, whose get_total_num_kv_heads reads the same way (apron.engines.sglang)."""

from __future__ import annotations

from apron.conditions import holds
from apron.config import ModelConfig, is_int
from apron.constraints import Citation, EngineConstraints
from apron.results import HeadCount
from apron.terminal import shown

ALIASES, FALLBACK, OVERRIDES = "kv_head_aliases", "kv_head_fallback", "kv_head_overrides"


def _unknown(
    reason: str, missing: tuple[str, ...] = (), cites: tuple[Citation, ...] = ()
) -> HeadCount:
    return HeadCount(
        count=None, per_layer=(), how="", unknown=(reason,), missing=missing, citations=cites
    )


class _Outcome:
    """What one override rule did: gave heads (known or unknown), sent the count to the base
    alias scan (`scan`, skipping later rules, as `return super()...` does), or did not apply
    (neither: the next rule, then the scan)."""

    __slots__ = ("heads", "scan", "notes")

    def __init__(
        self, heads: HeadCount | None = None, scan: bool = False, notes: tuple[str, ...] = ()
    ) -> None:
        self.heads, self.scan, self.notes = heads, scan, notes


def _value(
    model: ModelConfig, what: str, key: str, constant: object, how: str, cite: Citation
) -> _Outcome:
    """What a rule value gives: a constant, the base alias scan, or a config key's value."""
    if what == "constant" and is_int(constant):
        return _Outcome(
            HeadCount(
                count=constant, per_layer=(), how=how, unknown=(), missing=(), citations=(cite,)
            )
        )  # type: ignore[arg-type]
    if what == "base scan":
        return _Outcome(scan=True)
    if what == "key" and key:
        read = model.read(key)
        if read is None:
            return _Outcome(_unknown(f"{how}: {key} is absent from the config", (key,), (cite,)))
        if not is_int(read.value):
            return _Outcome(
                _unknown(
                    f"{how}: {read.key} is {shown(repr(read.value))}, not an integer", (), (cite,)
                )
            )
        return _Outcome(
            HeadCount(
                count=read.value,
                per_layer=(),
                how=f"{how}: {read.key} = {read.value}",
                unknown=(),
                missing=(),
                citations=(cite,),
            )
        )
    return _Outcome(_unknown(f"{how}: value {shown(repr(what))} is not interpreted", (), (cite,)))


def _gives(model: ModelConfig, row: object, how: str, cite: Citation) -> _Outcome:
    return _value(
        model,
        str(row.gives or ""),
        str(row.gives_key or ""),
        row.gives_constant,
        how,
        cite,
    )


def _otherwise(model: ModelConfig, row: object, how: str, cite: Citation) -> _Outcome:
    return _value(
        model,
        str(row.otherwise or ""),
        str(row.otherwise_key or ""),
        row.otherwise_constant,
        how,
        cite,
    )


def _block_configs(model: ModelConfig, how: str, cite: Citation) -> _Outcome:
    blocks = model.get("block_configs")
    heads = model.integer("num_attention_heads")
    missing = tuple(
        n for n, v in (("block_configs", blocks), ("num_attention_heads", heads)) if v is None
    )
    if missing:
        return _Outcome(_unknown(f"{how}: needs {', '.join(missing)}", missing, (cite,)))
    if not isinstance(blocks, list) or not blocks:
        return _Outcome(_unknown(f"{how}: block_configs is not a non-empty list", (), (cite,)))
    per_layer: list[int] = []
    for index, block in enumerate(blocks):
        attention = block.get("attention") if isinstance(block, dict) else None
        if not isinstance(attention, dict):
            return _Outcome(
                _unknown(
                    f"{how}: block_configs[{index}] has no attention dict",
                    (f"block_configs[{index}].attention",),
                    (cite,),
                )
            )
        if attention.get("no_op") or attention.get("replace_with_linear"):
            per_layer.append(0)
            continue
        group = attention.get("n_heads_in_group")
        if not is_int(group) or group <= 0:
            return _Outcome(
                _unknown(
                    f"{how}: block_configs[{index}].attention.n_heads_in_group is {shown(repr(group))}",
                    (f"block_configs[{index}].attention.n_heads_in_group",),
                    (cite,),
                )
            )
        per_layer.append(heads // group)
    text = (
        f"{how}: per block num_attention_heads // attention.n_heads_in_group "
        f"({heads} // n), 0 for no_op / replace_with_linear blocks"
    )
    return _Outcome(
        HeadCount(
            count=None,
            per_layer=tuple(per_layer),
            how=text,
            unknown=(),
            missing=(),
            citations=(cite,),
        )
    )


def _reads(model: ModelConfig, row: object, how: str, cite: Citation) -> _Outcome:
    source = str(row.gives_key or "")
    read = model.read(source) if source else None
    if read is not None and is_int(read.value):
        return _Outcome(
            HeadCount(
                count=read.value,
                per_layer=(),
                how=f"{how}: {source} = {read.value}",
                unknown=(),
                missing=(),
                citations=(cite,),
            )
        )
    if read is not None and read.value is not None:
        return _Outcome(
            _unknown(f"{how}: {source} is {shown(repr(read.value))}, not an integer", (), (cite,))
        )
    if not row.otherwise:
        return _Outcome(_unknown(f"{how}: {source} is absent or null", (source,), (cite,)))
    return _otherwise(model, row, how, cite)


def _conditional(model: ModelConfig, row: object, how: str, cite: Citation) -> _Outcome:
    ev = holds(model, row.when)
    if ev.value is None:
        outcome = _Outcome(_unknown(f"{how}: {ev.problem}", (), (cite,)))
    elif ev.value:
        outcome = _gives(model, row, how, cite)
    elif row.otherwise:
        outcome = _otherwise(model, row, how, cite)
    else:
        outcome = _Outcome()  # no else branch: the next rule, then the scan
    outcome.notes = ev.notes
    return outcome


def _apply_override(model: ModelConfig, row: object, vllm: EngineConstraints) -> _Outcome:
    kind = str(row.kind or "")
    rule = str(row.rule or "")  # words for people, never read for meaning
    cite = vllm.cite(row)
    owner = row.convertor_class or row.symbol
    how = f"vLLM override for model_type {row.model_type} ({owner}: {rule})"
    if row.excludes != ():  # tested first, as `if not excluded and ...` does
        ev = holds(model, row.excludes)
        if ev.value is None:
            return _Outcome(_unknown(f"{how}: exclusion: {ev.problem}", (), (cite,)))
        if ev.value:
            return _Outcome()  # excluded: the rule does not apply
    if kind == "constant":
        return _gives(model, row, how, cite)
    if kind == "base":
        return _Outcome(scan=True)
    if kind == "reads":
        return _reads(model, row, how, cite)
    if kind == "conditional":
        return _conditional(model, row, how, cite)
    if kind == "derived" and row.derived_from == "block_configs":
        return _block_configs(model, how, cite)  # the one derivation apron implements
    return _Outcome(_unknown(f"{how}: a {kind or 'rule'} apron does not interpret", (), (cite,)))


def resolve_kv_heads(
    model: ModelConfig, vllm: EngineConstraints | None
) -> tuple[HeadCount, HeadCount]:
    """(apron's prediction, what vLLM would use) for the KV-head count.

    They differ only when no alias key is present: vLLM falls back to MHA silently; apron says
    unknown."""
    if vllm is None or not vllm.rows(ALIASES):
        hc = _unknown(
            "the KV-head alias order is an extracted vLLM constraint and generated/vllm has none"
        )
        return hc, hc
    model_type = model.model_type
    rules = sorted(
        (r for r in vllm.rows(OVERRIDES) if r.model_type in (model_type, "*")),
        key=lambda r: (r.rule_order or 0, r.model_type == "*"),
    )
    notes: tuple[str, ...] = ()
    for row in rules:
        outcome = _apply_override(model, row, vllm)
        notes += outcome.notes
        if outcome.heads is not None:
            heads = outcome.heads
            if notes:
                extra = f" ({'; '.join(notes)})"
                heads = heads._replace(
                    how=heads.how + extra if heads.how else "",
                    unknown=tuple(u + extra for u in heads.unknown),
                )
            return heads, heads
        if outcome.scan:
            break
    aliases = sorted(vllm.rows(ALIASES), key=lambda r: r.position or 0)
    keys = tuple(str(r.key) for r in aliases)
    for position, row in enumerate(aliases):
        key = str(row.key)
        read = model.read(key)
        if read is None:
            continue
        cite = vllm.cite(row)
        if is_int(read.value):
            how = (
                f"{key} = {read.value} (vLLM alias scan: key {position + 1} of {len(keys)}: "
                f"{', '.join(keys)})"
            )
            heads = HeadCount(
                count=read.value, per_layer=(), how=how, unknown=(), missing=(), citations=(cite,)
            )
            return heads, heads
        bad = _unknown(
            f"{key} is present but {shown(repr(read.value))}; vLLM's scan stops at the first "
            f"present key and would take that value",
            (),
            (cite,),
        )
        return bad, bad
    fallback_rows = vllm.rows(FALLBACK)
    alias_cites = tuple(vllm.cite(r) for r in aliases[:1])
    reason = (
        f"none of the KV-head keys vLLM scans ({', '.join(keys)}) is in the config, so the "
        "count is not known from the config"
    )
    if not fallback_rows:
        hc = _unknown(reason, keys, alias_cites)
        return hc, hc
    fallback = fallback_rows[0]
    name = str(fallback.fallback or "")
    key = str(fallback.fallback_key or "")
    cites = (*alias_cites, vllm.cite(fallback))
    value = model.integer(key) if key else None
    if value is None:
        engine = _unknown(
            f"{reason}; vLLM falls back to {name or 'its fallback'}, which the "
            "config does not give either",
            keys,
            cites,
        )
    else:
        engine = HeadCount(
            count=value,
            per_layer=(),
            how=f"no KV-head key: vLLM silently assumes MHA, {name} = {value}",
            unknown=(),
            missing=(),
            citations=cites,
        )
    if value is None:
        prediction = _unknown(
            f"{reason}; vLLM would fall back to {name}, which the config does not give either",
            keys,
            cites,
        )
    else:
        prediction = _unknown(
            f"{reason}; vLLM would silently assume MHA ({name} = {value})", keys, cites
        )
    return prediction, engine
