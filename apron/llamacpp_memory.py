"""The llama.cpp column's KV-cache and recurrent-state bytes for a GGUF header, by the rules
extracted from llama.cpp (generated/llamacpp: memory_rules, hparams_formulas, cache_sizes,
context_defaults, ggml_type_sizes, recurrent_layers, sliding_window, class_set_members).

What llama.cpp decides at run time is assumed and said: flash attention `auto` is taken as on
(no transposed V), every layer's cache is counted wherever it is offloaded, n_rs_seq is 0."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from apron.constraints import Citation, EngineConstraints
from apron.errors import ConstraintsError
from apron.gguf_header import GgufHeader
from apron.llamacpp_formula import Unknown, evaluate
from apron.terminal import shown

__all__ = ["Refused", "Unknown", "cache_type", "figures", "limit", "render", "weights_bytes"]


class Refused(Unknown):
    """What llama.cpp itself refuses (its loader throws, or a ggml assert stops it): the figure
    is unknown, and `apron gguf` exits 2 with the reason."""


# the keys llama_model::load_hparams reads with get_key_or_arr: a u32, or an array of i32 / u32 /
# bool with one entry per layer (at most LLAMA_MAX_LAYERS); every other count key is a u32
PER_LAYER_KEYS = frozenset(
    {"feed_forward_length", "attention.head_count", "attention.head_count_kv"}
)
PER_LAYER_ARRAY_TYPES = frozenset({"arr[i32]", "arr[u32]", "arr[bool]"})
LOADER = "llama.cpp's model loader (src/llama-model-loader.cpp)"
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
# cannot reproduce makes an HF config's figure unknown (apron/llamacpp_hf.py)
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


class LlamaCppFigures(NamedTuple):
    """Bytes for all n_seq_max sequences together, as llama.cpp allocates them."""

    memory_class: str  # "" when llama.cpp builds no memory
    kv_bytes: int | None
    state_bytes: int | None
    kv_cells: dict[str, int]  # cache -> cells (n_ctx_seq, size_swa)
    arithmetic: tuple[str, ...]
    unknown: tuple[str, ...]
    notes: tuple[str, ...]
    citations: tuple[Citation, ...]
    refused: str = ""  # what llama.cpp itself refuses about this input (then unknown says it too)


def _per_layer(value: Any, n_layer: int, default: Any) -> list:
    if value is None:
        value = default
    if isinstance(value, list):
        return [int(v) for v in value] + [0] * (n_layer - len(value))
    return [value] * n_layer


def hparams_of(header: GgufHeader, c: EngineConstraints, arch: str) -> tuple[dict, list[str]]:
    """llama_hparams members from the GGUF keys llama_model::load_hparams reads (the generic
    keys: block count, embedding length, head counts, key/value lengths, ssm.*, wkv, shortconv;
    this key -> member table is apron's, not extracted), plus the SWA layer pattern
    (sliding_window fact) and the recurrent layers (recurrent_layers fact)."""
    notes: list[str] = []

    def count(key: str, default: Any = None) -> Any:
        """A count or length key as llama.cpp's loader reads it: an unsigned 32-bit integer (or,
        for the per-layer keys, an array of one per layer); a GGUF type the loader refuses is
        Refused, any other value unknown, naming the key, never a figure."""
        value = header.arch_key(key)
        if value is None:
            return default
        name = f"{shown(header.architecture)}.{key}"
        kind = header.arch_key_type(key)
        if key in PER_LAYER_KEYS and isinstance(value, list) and kind is not None:
            if kind not in PER_LAYER_ARRAY_TYPES:
                raise Refused(f"{name} is not a string/float32/uint32/int32 array ({LOADER})")
        elif kind is not None and kind != "u32":
            raise Refused(f"key {name} has wrong type {kind} but expected type u32 ({LOADER})")
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, bool) or not isinstance(item, int) or not 0 <= item < 2**32:
                raise Unknown(
                    f"{name} = {shown(value)}: llama.cpp's loader reads it as an unsigned 32-bit "
                    "integer"
                )
        return value

    for required in ("context_length", "embedding_length", "block_count"):
        if header.arch_key(required) is not None:
            continue
        if header.types is not None:  # a GGUF file: the loader throws
            raise Refused(
                f"key not found in model: {shown(header.architecture)}.{required} ({LOADER})"
            )
        if required != "context_length":  # an HF config's converter writes did not give it
            raise Unknown(f"no {header.architecture}.{required} (llama.cpp's loader requires it)")
    n_layer = count("block_count", 0)
    n_embd = count("embedding_length", 0)
    max_layers = limit(c, "LLAMA_MAX_LAYERS")
    if n_layer > max_layers:
        raise Refused(
            f"{shown(header.architecture)}.block_count = {n_layer:,}: over LLAMA_MAX_LAYERS "
            f"{max_layers}, the size of llama_hparams' per-layer arrays ({LOADER} throws "
            "n > N_MAX reading them)"
        )
    per_layer = {key: count(key) for key in sorted(PER_LAYER_KEYS)}
    for key, value in per_layer.items():
        if isinstance(value, list) and len(value) != n_layer:
            raise Refused(
                f"key {shown(header.architecture)}.{key} has wrong array length; expected "
                f"{n_layer:,}, got {len(value):,} ({LOADER})"
            )
    n_head = _per_layer(per_layer["attention.head_count"], n_layer, 0)
    n_head_kv = _per_layer(per_layer["attention.head_count_kv"], n_layer, None)
    n_head_kv = [h if kv is None else kv for h, kv in zip(n_head, n_head_kv, strict=True)]
    for il, (heads, kv_heads) in enumerate(zip(n_head, n_head_kv, strict=True)):
        if kv_heads and heads % kv_heads:
            raise Refused(
                f"layer {il}: head_count {heads:,} is not a multiple of head_count_kv "
                f"{kv_heads:,} (ggml's attention asserts it: ggml_can_mul_mat, "
                "ggml/src/ggml.c)"
            )
    head0 = next((h for h in n_head if h), 0)
    head_k = count("attention.key_length")
    head_v = count("attention.value_length")
    head_k = int(head_k) if head_k is not None else (n_embd // head0 if head0 else 0)
    head_v = int(head_v) if head_v is not None else head_k
    hp: dict[str, Any] = {
        "n_layer": n_layer,
        "n_embd": n_embd,
        "n_head_arr": n_head,
        "n_head_kv_arr": n_head_kv,
        "n_ff_arr": _per_layer(per_layer["feed_forward_length"], n_layer, None),
        "n_embd_head_k_full": head_k,
        "n_embd_head_v_full": head_v,
        "n_embd_head_k_swa": count("attention.key_length_swa", head_k),
        "n_embd_head_v_swa": count("attention.value_length_swa", head_v),
        "n_embd_head_k_mla_impl": count("attention.key_length_mla", 0),
        "n_embd_head_v_mla_impl": count("attention.value_length_mla", 0),
        "ssm_d_conv": count("ssm.conv_kernel", 0),
        "ssm_d_inner": count("ssm.inner_size", 0),
        "ssm_d_state": count("ssm.state_size", 0),
        "ssm_n_group": count("ssm.group_count", 0),
        "wkv_head_size": count("wkv.head_size", 0),
        "token_shift_count": count("token_shift_count", 2),
        "n_shortconv_l_cache": count("shortconv.l_cache", 0),
        "n_embd_head_kda": count("kda.head_dim", 0),
        "n_swa": count("attention.sliding_window", 0),
        "nextn_predict_layers": count("nextn_predict_layers", 0),
        "kv_only_nextn": 0,
        "n_layer_kv_from_start": -1,
        "n_ctx_train": count("context_length", 0),
    }
    if header.arch_key("attention.shared_kv_layers") is not None:
        raise Unknown("KV layer sharing (attention.shared_kv_layers): n_layer_kv_from_start")
    hp["swa_type"], hp["swa_layers"] = _swa(header, c, arch, hp, notes)
    hp["recurrent_layer_arr"] = _recurrent(header, c, arch, hp)
    return hp, notes


def _swa(header: GgufHeader, c: EngineConstraints, arch: str, hp: dict, notes: list[str]):
    n_layer = hp["n_layer"]
    rule = next((r for r in c.rows("sliding_window") if r.arch == arch), None)
    none = ("LLAMA_SWA_TYPE_NONE", [0] * n_layer)
    if rule is None or not hp["n_swa"]:
        return none
    if rule.pattern != "period" or rule.period_default is None:
        raise Unknown(f"the SWA layer pattern of {arch} ({rule.pattern})")
    period = rule.period_default
    if rule.pattern_gguf_key:
        override = header.metadata.get(rule.pattern_gguf_key.replace("%s", header.architecture))
        if isinstance(override, int):
            period = override
        elif override is not None:
            raise Unknown(f"{rule.pattern_gguf_key} as a per-layer array")
    # llama_hparams::set_swa_pattern (src/llama-hparams.cpp)
    if rule.dense_first:
        layers = [int(period == 0 or il % period != 0) for il in range(n_layer)]
    else:
        layers = [int(period == 0 or il % period < period - 1) for il in range(n_layer)]
    swa_type = "LLAMA_SWA_TYPE_" + (rule.swa_types[0].upper() if rule.swa_types else "STANDARD")
    if rule.conditional:
        notes.append("sliding window conditional in the loader: " + "; ".join(rule.conditions))
    return swa_type, layers


def _recurrent(header: GgufHeader, c: EngineConstraints, arch: str, hp: dict) -> list[int]:
    n_layer = hp["n_layer"]
    recurrent = any(
        r.arch == arch and r.predicate == "llm_arch_is_recurrent"
        for r in c.rows("class_set_members")
    )
    rule = next((r for r in c.rows("recurrent_layers") if r.arch == arch), None)
    if rule is None:
        return [int(recurrent)] * n_layer  # llama_model::load_hparams' std::fill
    if rule.fill:
        return [int(rule.fill == "true")] * n_layer
    if rule.unknown or rule.conditional:
        raise Unknown(f"recurrent layers of {arch}: {rule.unknown or 'conditional assignment'}")
    names: dict[str, Any] = {}
    for item in rule.locals_:
        key, _, value = item.partition("=")
        names[key] = int(value)
    for item in rule.local_keys:
        key, _, pattern = item.partition("=")
        found = header.metadata.get(pattern.replace("%s", header.architecture))
        if found is not None:
            names[key] = int(found)
    calls = {"n_head_kv": lambda il: hp["n_head_kv_arr"][il], "n_ff": lambda il: _n_ff(hp, il)}
    return [
        int(bool(evaluate(rule.value, {**names, **hp, rule.index: il}, calls)))
        for il in range(n_layer)
    ]


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
                if row.condition and not evaluate(row.condition, env, calls):
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
        if row.condition and not evaluate(row.condition, env):
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
) -> LlamaCppFigures:
    try:
        return _figures(header, c, n_ctx, n_seq_max, type_k, type_v)
    except Refused as err:
        why = f"llama.cpp refuses this: {err}"
        return LlamaCppFigures("", None, None, {}, (), (why,), ASSUMPTIONS, (), str(err))
    except Unknown as err:
        return LlamaCppFigures("", None, None, {}, (), (str(err),), ASSUMPTIONS, ())
    except (TypeError, ValueError, IndexError) as err:  # a metadata value of another shape
        why = f"a metadata value llama.cpp's loader would not read ({type(err).__name__}: {err})"
        return LlamaCppFigures("", None, None, {}, (), (why,), ASSUMPTIONS, ())


def _figures(header, c, n_ctx, n_seq_max, type_k, type_v) -> LlamaCppFigures:
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
    hp, notes = hparams_of(header, c, arch)
    notes = [*notes, *ASSUMPTIONS]
    calls = _method_calls(c, hp)
    predicates = {
        p: any(r.arch == arch and r.predicate == p for r in c.rows("class_set_members"))
        for p in ("llm_arch_is_recurrent", "llm_arch_is_hybrid")
    }
    for p in predicates:
        calls[p] = lambda _a, p=p: int(predicates[p])
    k = type_k or str(_default(c, "cache_type_k"))
    v = type_v or str(_default(c, "cache_type_v"))
    k, v = cache_type(c, k), cache_type(c, v)
    env = {
        **hp,
        "arch": arch,
        "params.ctx_type": DEFAULT_CONTEXT_TYPE,
        "params.n_ctx": n_ctx if n_ctx is not None else int(_default(c, "n_ctx")),
        "params.n_batch": int(_default(c, "n_batch")),
        "params.n_ubatch": int(_default(c, "n_ubatch")),
        "cparams.n_seq_max": n_seq_max,
        "cparams.kv_unified": int(_default(c, "kv_unified")),
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
        if not row.condition or evaluate(row.condition, env, calls):
            rule = row
            break
    if rule is None:
        raise Unknown(f"no create_memory branch holds for {arch}")
    cites.append(c.cite(rule))
    if not rule.memory_class:
        return LlamaCppFigures(
            "",
            0,
            0,
            {},
            (f"{arch}: create_memory builds no memory (nullptr)",),
            (),
            tuple(notes),
            tuple(cites),
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
                "swa_full": int(_default(c, "swa_full")),
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
        rule.memory_class,
        kv_bytes,
        state_bytes,
        cells,
        tuple(arithmetic),
        (),
        tuple(notes),
        tuple(dict.fromkeys(cites)),
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
    if got.unknown:
        lines.append("  KV + state: unknown: " + "; ".join(got.unknown))
    else:
        lines.append(f"  memory: {got.memory_class or 'none (create_memory returns nullptr)'}")
        lines.append(f"  KV cache: {got.kv_bytes:,} B for {n_seq_max} sequence(s)")
        lines.append(f"  recurrent state: {got.state_bytes:,} B for {n_seq_max} sequence(s)")
        lines.extend(f"    {a}" for a in got.arithmetic)
    lines.extend(f"  assumed: {n}" for n in got.notes)
    lines.extend(f"  cites: {x.engine} {x.commit[:12]} {x.path} {x.symbol}" for x in got.citations)
    return "\n".join(lines)
