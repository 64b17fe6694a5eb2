"""The llama.cpp column's KV-cache and recurrent-state bytes for a GGUF header, by the rules
extracted from llama.cpp (generated/llamacpp: hparams_steps replayed for the hparams,
tensor_shapes, memory_rules, memory_callbacks, hparams_formulas, cache_sizes, context_defaults,
ggml_type_sizes, limits, class_set_members).

What llama.cpp decides at run time is assumed and said: flash attention `auto` is taken as on
(no transposed V), every layer's cache is counted wherever it is offloaded, n_rs_seq is 0."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from apron.constraints import Citation, EngineConstraints
from apron.engines.llamacpp.gguf_header import GgufHeader
from apron.engines.llamacpp.hparams import LOADER, Refused, load_hparams
from apron.engines.llamacpp.tensors import check_tensors
from apron.errors import ConstraintsError
from apron.expressions import Symbol, Unknown, evaluate
from apron.record import Record
from apron.terminal import shown

__all__ = ["Refused", "Unknown", "cache_type", "figures", "limit", "render", "weights_bytes"]

UINT32_MAX = 2**32 - 1  # llama_hparams' sizing methods return uint32_t (src/llama-hparams.h)


def limit(c: EngineConstraints, name: str) -> int:
    """One of llama.cpp's extracted limits (generated/llamacpp limits) by name; ConstraintsError
    when it is not extracted or not read as a number (never a default)."""
    row = next((r for r in c.rows("limits") if r.name == name), None)
    if row is None or row.value is None:
        why = "not extracted" if row is None else row.unknown
        raise ConstraintsError(
            f"generated/llamacpp limits: {name} is {why}; re-extract llama.cpp "
            "(extract --engine llamacpp)"
        )
    return row.value


ENGINE = "llamacpp"
# the GGUF keys (after "<arch>.") hparams_of reads: a converter write of one of them that apron
# cannot reproduce makes an HF config's figure unknown (apron/engines/llamacpp/hf.py)
SIZING_KEYS = frozenset(
    {
        "block_count",
        "embedding_length",
        "context_length",
        "attention.head_count",
        "attention.head_count_kv",
        "attention.key_length",
        "attention.value_length",
        "attention.key_length_swa",
        "attention.value_length_swa",
        "attention.key_length_mla",
        "attention.value_length_mla",
        "attention.sliding_window",
        "attention.sliding_window_pattern",
        "attention.shared_kv_layers",
        "ssm.conv_kernel",
        "ssm.inner_size",
        "ssm.state_size",
        "ssm.group_count",
        "wkv.head_size",
        "token_shift_count",
        "shortconv.l_cache",
        "kda.head_dim",
        "nextn_predict_layers",
        "full_attention_interval",
    }
)
DEFAULT_CONTEXT_TYPE = "LLAMA_CONTEXT_TYPE_DEFAULT"
ASSUMPTIONS = (
    "flash attention: llama.cpp's default is auto (decided on the device at load); "
    "assumed on, so V is not transposed (v_trans=false: per-layer V widths)",
    "offload: every layer's cache is counted, on whichever device llama.cpp puts it",
    "n_rs_seq = 0 (no speculative recurrent rollback)",
)


class LlamaCppFigures(Record):
    """Bytes for all n_seq_max sequences together, as llama.cpp allocates them."""

    memory_class: str  # "" when llama.cpp builds no memory
    kv_bytes: int | None
    state_bytes: int | None
    kv_cells: dict[str, int]  # cache -> cells (n_ctx_seq, size_swa)
    arithmetic: tuple[str, ...]
    unknown: tuple[str, ...]
    notes: tuple[str, ...]
    citations: tuple[Citation, ...]
    refused: str = ""  # llama.cpp refuses to load the file: its reason (also in `unknown`)
    n_ctx: int | None = None  # the context llama.cpp sizes (cparams.n_ctx after padding)


def hparams_of(
    header: GgufHeader,
    c: EngineConstraints,
    arch: str,
    assume_written: Callable[[str], bool] | None = None,
) -> tuple[dict, dict[str, Callable[..., Any]], list[str]]:
    """llama_hparams as llama.cpp's loader reads the header (apron/engines/llamacpp/hparams.py replays
    the extracted steps), and llama_hparams' sizing methods as calls over them."""
    hp: dict[str, Any] = {}
    calls = _method_calls(c, hp)
    predicates = {
        p: any(r.arch == arch and r.predicate == p for r in c.rows("class_set_members"))
        for p in ("llm_arch_is_recurrent", "llm_arch_is_hybrid")
    }
    for p in predicates:
        calls[p] = lambda _a, p=p: int(predicates[p])
    calls["ml.get_arch"] = lambda: Symbol(arch)
    hp["LLAMA_MAX_LAYERS"] = limit(c, "LLAMA_MAX_LAYERS")
    notes = load_hparams(header, c, arch, hp, calls, assume_written)
    heads, kv_heads = hp.get("n_head_arr"), hp.get("n_head_kv_arr")
    if isinstance(heads, list) and isinstance(kv_heads, list):
        for il, (h, kv) in enumerate(zip(heads, kv_heads, strict=False)):
            if isinstance(h, int) and isinstance(kv, int) and kv and h % kv:
                raise Refused(
                    f"layer {il}: head_count {h:,} is not a multiple of head_count_kv {kv:,} "
                    "(ggml's attention asserts it: ggml_can_mul_mat, ggml/src/ggml.c)"
                )
    # loaded: hp no longer changes, so each method's answer per layer is computed once
    for name in [n for n in calls if n in {r.method for r in c.rows("hparams_formulas")}]:
        calls[name] = functools.lru_cache(maxsize=None)(calls[name])
    return hp, calls, notes


def _n_ff(hp: dict, il: int) -> int:
    value = hp["n_ff_arr"][il]
    if value is None:
        raise Unknown("feed_forward_length (n_ff), which this architecture's rule reads")
    return value


def _method_calls(c: EngineConstraints, hp: dict) -> dict[str, Callable[..., Any]]:
    """llama_hparams' methods as Python calls, each evaluating its extracted branches."""
    branches: dict[str, list] = {}
    for row in c.rows("hparams_formulas"):
        branches.setdefault(row.method, []).append(row)
    calls: dict[str, Callable[..., Any]] = {}

    def method(name: str) -> Callable[..., Any]:
        def run(il: int = 0) -> Any:
            for row in sorted(branches.get(name, ()), key=lambda r: r.branch):
                env = {**hp, "il": il}
                if row.condition != () and not evaluate(row.condition, env, calls):
                    continue
                if row.unknown:
                    raise Unknown(f"llama_hparams::{name}: {row.unknown}")
                value = evaluate(row.value, env, calls)
                if isinstance(value, int) and not isinstance(value, bool):
                    if not 0 <= value <= UINT32_MAX:
                        raise Unknown(
                            f"llama_hparams::{name}({il}) = {value:,}: past uint32_t, the type "
                            "it returns (llama.cpp's value would wrap)"
                        )
                return value
            raise Unknown(f"llama_hparams::{name} returns nothing for layer {il}")

        return run

    for name in branches:
        calls[name] = method(name)
    calls.setdefault("n_ff", lambda il=0: _n_ff(hp, il))  # llama_hparams::n_ff: the array
    return calls


def _type_bytes(c: EngineConstraints, ggml_type: str, elements: int) -> int:
    row = next((r for r in c.rows("ggml_type_sizes") if r.ggml_type == ggml_type), None)
    if row is None or row.type_size is None or not row.blck_size:
        raise Unknown(f"bytes per element of {ggml_type}")
    if elements % row.blck_size:
        raise Unknown(f"{elements} elements are not whole {ggml_type} blocks")
    return elements // row.blck_size * row.type_size


def cache_type(c: EngineConstraints, name: str) -> str:
    """`--cache-type-k q8_0` -> GGML_TYPE_Q8_0 (by the type_name of ggml's type traits)."""
    for row in c.rows("ggml_type_sizes"):
        if row.type_name == name.lower() or row.ggml_type == name.upper():
            return row.ggml_type
    known = ", ".join(r.type_name for r in c.rows("ggml_type_sizes"))
    raise Unknown(f"cache type {shown(repr(name))} is not one of llama.cpp's ({known})")


def _default(c: EngineConstraints, field: str) -> Any:
    row = next((r for r in c.rows("context_defaults") if r.field == field), None)
    if row is None:
        raise Unknown(f"common_params default {field}")
    return row.int_value if row.int_value is not None else row.value


def _assign(c: EngineConstraints, function: str, env: dict) -> list:
    """Run a function's extracted size assignments in order, into `env`."""
    used = []
    rows = sorted(
        (r for r in c.rows("cache_sizes") if r.function == function), key=lambda r: r.order
    )
    for row in rows:
        if row.condition != () and not evaluate(row.condition, env):
            continue
        if row.unknown:
            raise Unknown(f"{function}: {row.variable}: {row.unknown}")
        env[row.variable] = evaluate(row.value, env)
        used.append(row)
    return used


def figures(
    header: GgufHeader,
    c: EngineConstraints,
    *,
    n_ctx: int | None,
    n_seq_max: int,
    type_k: str | None = None,
    type_v: str | None = None,
    settings: Mapping[str, int] | None = None,
    swa_full: bool | None = None,
    kv_unified: bool | None = None,
    assume_written: Callable[[str], bool] | None = None,
) -> LlamaCppFigures:
    """What llama.cpp allocates for the header at these settings; `settings` overrides
    common_params' kv_unified, swa_full, n_batch and n_ubatch (-kvu, --swa-full, -b, -ub), as do
    `swa_full` and `kv_unified` (None: common_params' default). `assume_written` (the HF path,
    whose header apron built from the config) names required keys the converter writes though
    that header lacks them."""
    given = dict(settings or {})
    for name, value in (("swa_full", swa_full), ("kv_unified", kv_unified)):
        if value is not None:
            given[name] = int(value)
    try:
        return _figures(header, c, n_ctx, n_seq_max, type_k, type_v, given, assume_written)
    except Refused as err:
        why = f"llama.cpp refuses this: {err}"
        return LlamaCppFigures(
            memory_class="",
            kv_bytes=None,
            state_bytes=None,
            kv_cells={},
            arithmetic=(),
            unknown=(why,),
            notes=ASSUMPTIONS,
            citations=(),
            refused=str(err),
        )
    except Unknown as err:
        return LlamaCppFigures(
            memory_class="",
            kv_bytes=None,
            state_bytes=None,
            kv_cells={},
            arithmetic=(),
            unknown=(str(err),),
            notes=ASSUMPTIONS,
            citations=(),
        )
    except (TypeError, ValueError, IndexError) as err:  # a metadata value of another shape
        why = f"a metadata value llama.cpp's loader would not read ({type(err).__name__}: {err})"
        return LlamaCppFigures(
            memory_class="",
            kv_bytes=None,
            state_bytes=None,
            kv_cells={},
            arithmetic=(),
            unknown=(why,),
            notes=ASSUMPTIONS,
            citations=(),
        )


def _figures(
    header, c, n_ctx, n_seq_max, type_k, type_v, settings, assume_written
) -> LlamaCppFigures:
    cites: list[Citation] = []
    gguf = header.architecture
    kind = None if header.types is None else header.types.get("general.architecture")
    if kind is not None and kind != "str":
        raise Refused(
            f"key general.architecture has wrong type {kind} but expected type str ({LOADER})"
        )
    arch = next((r.arch for r in c.rows("arch_names") if r.gguf_name == gguf), None)
    if arch is None:
        raise Refused(
            f"unknown model architecture: {shown(repr(gguf))} (not in llama.cpp's "
            "LLM_ARCH_NAMES; its loader throws)"
        )
    hp, calls, notes = hparams_of(header, c, arch, assume_written)
    check_tensors(header, c, arch, hp, calls, from_config=assume_written is not None)
    notes = [*notes, *ASSUMPTIONS]
    k = type_k or str(_default(c, "cache_type_k"))
    v = type_v or str(_default(c, "cache_type_v"))
    k, v = cache_type(c, k), cache_type(c, v)
    env = {
        **hp,
        "arch": arch,
        "params.ctx_type": DEFAULT_CONTEXT_TYPE,
        "params.n_ctx": n_ctx if n_ctx is not None else int(_default(c, "n_ctx")),
        "params.n_batch": settings.get("n_batch", int(_default(c, "n_batch"))),
        "params.n_ubatch": settings.get("n_ubatch", int(_default(c, "n_ubatch"))),
        "cparams.n_seq_max": n_seq_max,
        "cparams.kv_unified": settings.get("kv_unified", int(_default(c, "kv_unified"))),
        "cparams.causal_attn": 1,
        **{a: a for a in ("LLAMA_CONTEXT_TYPE_MTP", "LLAMA_SWA_TYPE_NONE")},
        **{r.arch: r.arch for r in c.rows("arch_names")},
    }
    max_seq = limit(c, "LLAMA_MAX_SEQ")
    if not 1 <= n_seq_max <= max_seq:
        raise Refused(
            f"n_seq_max must be <= {max_seq} (LLAMA_MAX_SEQ; llama_context refuses {n_seq_max:,})"
        )
    for row in _assign(c, "llama_context::llama_context", env):
        cites.append(c.cite(row))
    widest = limit(c, "llama_context_params::n_ctx")
    if env["cparams.n_ctx"] > widest:
        raise Refused(
            f"n_ctx {env['params.n_ctx'] or hp['n_ctx_train']:,} padded to 256 is "
            f"{env['cparams.n_ctx']:,}, past the uint32_t n_ctx llama.cpp holds it in: it wraps "
            "to 0 and llama_context throws n_ctx_seq == 0"
        )
    if env["cparams.n_ctx_seq"] == 0:
        raise Refused("n_ctx_seq == 0 (llama_context throws: no context for a sequence)")
    # create_memory: the first branch whose case and condition hold
    rule = None
    for row in sorted(c.rows("memory_rules"), key=lambda r: r.branch):
        if row.archs and arch not in row.archs:
            continue
        if not row.archs and any(arch in r.archs for r in c.rows("memory_rules")):
            continue
        if row.condition == () or evaluate(row.condition, env, calls):
            rule = row
            break
    if rule is None:
        raise Unknown(f"no create_memory branch holds for {arch}")
    cites.append(c.cite(rule))
    if not rule.memory_class:
        return LlamaCppFigures(
            memory_class="",
            kv_bytes=0,
            state_bytes=0,
            kv_cells={},
            arithmetic=(f"{arch}: create_memory builds no memory (nullptr)",),
            unknown=(),
            notes=tuple(notes),
            citations=tuple(cites),
            n_ctx=env["cparams.n_ctx"],
        )
    args = dict(a.split("=", 1) for a in rule.arguments)
    arithmetic: list[str] = []
    n_ctx_seq, n_unified = env["cparams.n_ctx_seq"], env["cparams.kv_unified"]
    n_stream = 1 if n_unified else n_seq_max
    arithmetic.append(
        f"n_ctx = GGML_PAD({env['params.n_ctx']}, 256) -> {env['cparams.n_ctx']}; "
        f"n_ctx_seq = {n_ctx_seq}; streams = {n_stream} (kv_unified={bool(n_unified)})"
    )
    kv_bytes = state_bytes = 0
    cells: dict[str, int] = {}
    attn = "kv" in rule.memory_class or "hybrid" in rule.memory_class
    recr = "recurrent" in rule.memory_class or "hybrid" in rule.memory_class
    filters = _filters(c, arch, env, calls, rule.memory_class)
    if attn and not any(hp["n_head_kv_arr"]):
        raise Unknown(f"no {header.architecture}.attention.head_count(_kv): every layer 0 heads")
    if attn:
        types = (args.get("type_k", ""), args.get("type_v", ""))
        tk = k if types[0] == "params.type_k" else types[0]
        tv = v if types[1] == "params.type_v" else types[1]
        iswa = rule.memory_class.endswith("_iswa")
        size_swa = None
        if iswa:
            iswa_env = {
                "kv_size": n_ctx_seq,
                "n_swa": hp["n_swa"],
                "unified": n_unified,
                "n_seq_max": n_seq_max,
                "n_ubatch": env["cparams.n_ubatch"],
                "swa_full": settings.get("swa_full", int(_default(c, "swa_full"))),
            }
            for row in _assign(c, "llama_kv_cache_iswa::llama_kv_cache_iswa", iswa_env):
                cites.append(c.cite(row))
            size_swa = iswa_env["size_swa"]
            cells["swa"] = size_swa
            arithmetic.append(
                f"SWA cache: GGML_PAD(min({n_ctx_seq}, {hp['n_swa']}*"
                f"{n_seq_max if n_unified else 1} + {env['cparams.n_ubatch']}), 256) = {size_swa} cells"
            )
        cells["base"] = n_ctx_seq
        is_mla = calls["is_mla"]()
        per_layer = []
        for il in range(hp["n_layer"]):
            if not calls["has_kv"](il) or not filters["attn"](il):
                continue
            size = size_swa if iswa and calls["is_swa"](il) else n_ctx_seq
            ek = calls["n_embd_k_gqa"](il)
            ev = 0 if is_mla else calls["n_embd_v_gqa"](il)
            b = _type_bytes(c, tk, ek * size * n_stream) + (
                _type_bytes(c, tv, ev * size * n_stream) if ev else 0
            )
            per_layer.append((il, ek, ev, size, b))
            kv_bytes += b
        groups: dict[tuple, list[int]] = {}
        for il, ek, ev, size, b in per_layer:
            groups.setdefault((ek, ev, size, b), []).append(il)
        for (ek, ev, size, b), layers in sorted(groups.items(), key=lambda g: g[1][0]):
            arithmetic.append(
                f"{len(layers)} attention layer(s) × {size} cells × {n_stream} stream(s) × "
                f"(K {ek} {tk} + V {ev} {tv}) = {len(layers)} × {b:,} B"
            )
    if recr:
        tr, ts = args.get("type_r", ""), args.get("type_s", "")
        rs_size = max(1, n_seq_max)  # create_memory: std::max((uint32_t) 1, cparams.n_seq_max)
        n_r, n_s = calls["n_embd_r"](), calls["n_embd_s"]()
        n_recr = sum(1 for il in range(hp["n_layer"]) if filters["recr"](il))
        per = _type_bytes(c, tr, n_r * rs_size) + _type_bytes(c, ts, n_s * rs_size)
        state_bytes = n_recr * per
        arithmetic.append(
            f"{n_recr} recurrent layer(s) × {rs_size} cell(s) × (r {n_r} {tr} + s {n_s} {ts}) "
            f"= {n_recr} × {per:,} B"
        )
    cites.extend(
        c.cite(r)
        for r in c.rows("hparams_formulas")
        if r.method in ("n_embd_k_gqa", "n_embd_v_gqa", "n_embd_r", "n_embd_s")
    )
    return LlamaCppFigures(
        memory_class=rule.memory_class,
        kv_bytes=kv_bytes,
        state_bytes=state_bytes,
        kv_cells=cells,
        arithmetic=tuple(arithmetic),
        unknown=(),
        notes=tuple(notes),
        citations=tuple(dict.fromkeys(cites)),
        n_ctx=env["cparams.n_ctx"],
    )


def _filters(c, arch, env, calls, memory_class) -> dict[str, Callable[[int], bool]]:
    """The layer filters create_memory passes for this architecture (memory_callbacks), else
    the memory class's own default: hybrid memories keep attention in the non-recurrent layers
    and state in the recurrent ones (src/llama-memory-hybrid.cpp; apron's reading, not
    extracted), a plain KV cache every layer, a recurrent memory every layer."""
    hybrid = "hybrid" in memory_class
    out: dict[str, Callable[[int], bool]] = {
        "attn": (lambda il: not calls["is_recurrent"](il)) if hybrid else (lambda il: True),
        "recr": (lambda il: bool(calls["is_recurrent"](il))) if hybrid else (lambda il: True),
    }
    names = {"filter_attn": "attn", "filter_recr": "recr", "filter": "attn"}
    for row in c.rows("memory_callbacks"):
        if arch not in row.archs or row.variable not in names:
            continue
        if not evaluate(row.condition, env, calls):
            continue
        if row.unknown:
            raise Unknown(f"create_memory {row.variable} of {arch}: {row.unknown}")
        out[names[row.variable]] = lambda il, row=row: bool(
            evaluate(row.value, {**env, "il": il}, calls)
        )
    return out


def weights_bytes(header: GgufHeader) -> int | None:
    """The tensor infos' bytes (ggml block sizes from gguf-py); None when a type is unknown.
    The first shard of a split model holds only its own tensors."""
    sizes = [t.nbytes for t in header.tensors]
    return None if any(s is None for s in sizes) else sum(s for s in sizes if s is not None)


def render(header: GgufHeader, c: EngineConstraints, got: LlamaCppFigures, n_seq_max: int) -> str:
    """The llama.cpp column as text: figures, arithmetic, assumptions and citations."""
    lines = [
        f"{shown(header.path)}: GGUF v{header.version}, architecture "
        f"{shown(repr(header.architecture))}",
        f"llama.cpp {c.commit[:12]} (prediction from its extracted rules)",
    ]
    weights = weights_bytes(header)
    split = header.metadata.get("split.count")
    lines.append(
        f"  weights: {weights:,} B in {len(header.tensors)} tensors"
        + (f" (this shard of {shown(split)})" if split else "")
        if weights is not None
        else "  weights: unknown (a tensor type gguf-py does not size)"
    )
    if got.refused:
        lines.append(f"  refused: llama.cpp does not load this file: {got.refused}")
    elif got.unknown:
        lines.append("  KV + state: unknown: " + "; ".join(got.unknown))
    else:
        lines.append(f"  memory: {got.memory_class or 'none (create_memory returns nullptr)'}")
        lines.append(f"  context: n_ctx {got.n_ctx:,}" if got.n_ctx is not None else "  context: ?")
        lines.append(f"  KV cache: {got.kv_bytes:,} B for {n_seq_max} sequence(s)")
        lines.append(f"  recurrent state: {got.state_bytes:,} B for {n_seq_max} sequence(s)")
        lines.extend(f"    {a}" for a in got.arithmetic)
    lines.extend(f"  assumed: {n}" for n in got.notes)
    lines.extend(f"  cites: {x.engine} {x.commit[:12]} {x.path} {x.symbol}" for x in got.citations)
    return "\n".join(lines)
