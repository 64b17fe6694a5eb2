"""The prefill cuda-graph backend SGLang's ServerArgs settles on before it sizes the memory
fraction, from the extracted rules (generated/sglang/prefill_graph_rules.py): a per-model default
hook, else `breakable` (the CUDA default) switched to `tc_piecewise` for the validated multimodal
models, then turned off when a rule of that backend's list holds (Nemotron-H, DeepSeek-V4, most
multimodal models). Each rule is an expression of the one rule language, evaluated by
apron/expressions.py over the names `environment` gives: the server args at their defaults on
CUDA (apron.engines.sglang.server_args), the ModelConfig attributes the rules read (MODEL_CONFIG)
and SGLang's architecture-set predicates (`is_nemotron_h(hf_config)`: the architecture_sets
fact). A name or call it does not give makes the backend unknown, naming it. Whether the model is
multimodal is SGLang's ModelConfig.is_multimodal (its extracted sets, and a text sub-config:
Kimi-K3)."""

from __future__ import annotations

from collections import ChainMap
from typing import Any, NamedTuple

from apron.conditions import object_holds
from apron.engines.sglang.server_args import PLATFORM_CALLS, PLATFORM_NAMES, server_args
from apron.expressions import PYTHON, Unknown, absent, evaluate

FACT = "prefill_graph_rules"
CUDA_DEFAULT = "breakable"  # cuda_graph_config.default_prefill_backend() on CUDA
DISABLED = "disabled"
SETS = "architecture_sets"
MM_DISABLED = "ModelConfig.__init__.mm_disabled_models"
# ModelConfig.__init__'s `elif architectures[0] in MIMO_V2_MULTIMODAL_ARCHS and not (hasattr(
# hf_config, "vision_config") and hasattr(hf_config, "audio_config"))`: multimodal off
MIMO_V2_MM = "ModelConfig.__init__.MIMO_V2_MULTIMODAL_ARCHS"
MODEL_CONFIG = "self.get_model_config()."
PIECEWISE_SUPPORTED = "is_multimodal_piecewise_cuda_graph_supported"
BREAKABLE_SUPPORTED = "is_multimodal_breakable_cuda_graph_supported"
PIECEWISE_DISABLED = "is_piecewise_cuda_graph_disabled_model"
# The attention backend SGLang resolves: trtllm_mla only ever serves an MLA model, where the GPU
# decides; for any other model the backend it resolves is not trtllm_mla.
NOT_MLA_BACKEND = "an attention backend for a non-MLA model (never trtllm_mla)"
# What SGLang's column plans is an HF checkpoint (config.json), never a GGUF file.
CHECKPOINT = {"check_gguf_file": lambda path: False}


class Backend(NamedTuple):
    """The settled prefill backend (None: unknown) and why."""

    backend: str | None
    why: str


def model_config_names(sets: frozenset[str], enable: Any, multimodal: bool) -> dict[str, Any]:
    """The ModelConfig attributes the rules read, as ModelConfig.__init__ sets them
    (configs/model_config.py): `enable_multimodal and <set predicate>(architectures)` for the
    two support flags, and `<disabled set>(architectures) or (is_multimodal and not <piecewise
    set>(architectures))` for the piecewise-disabled one; `sets` are the architecture sets that
    list the model's architecture, `enable` is enable_multimodal (enable_multimodal below),
    `multimodal` is ModelConfig.is_multimodal."""
    if isinstance(enable, str):
        enable = absent(enable)
    return {
        f"{MODEL_CONFIG}is_multimodal": multimodal,
        f"{MODEL_CONFIG}{BREAKABLE_SUPPORTED}": BREAKABLE_SUPPORTED in sets and enable,
        f"{MODEL_CONFIG}{PIECEWISE_SUPPORTED}": PIECEWISE_SUPPORTED in sets and enable,
        f"{MODEL_CONFIG}{PIECEWISE_DISABLED}": PIECEWISE_DISABLED in sets
        or (multimodal and PIECEWISE_SUPPORTED not in sets),
        # what a set predicate is given; it answers for the model's architecture (above)
        f"{MODEL_CONFIG}hf_config": "the model's hf_config",
        "self": "the ServerArgs object",  # what SGLang's helpers are given (not read here)
    }


def _set_predicates(constraints: Any, sets: frozenset[str]) -> dict[str, Any]:
    """SGLang's architecture-set functions (`is_nemotron_h(hf_config)`), each answering whether
    it lists the model's architecture; whatever argument it is given names the same model."""
    names = {str(r.set_name) for r in constraints.rows(SETS) if "." not in str(r.set_name)}
    return {name: (lambda *_, held=name in sets: held) for name in names}


class _Calls(dict):
    """The calls apron answers; any other call's value is absent: unknown only where a rule
    uses it (`attn_cp_size > 1 and not supports_prefill_cp_bcg(self)` with attn_cp_size 1)."""

    def __contains__(self, name: object) -> bool:
        return True

    def __missing__(self, name: str) -> Any:
        return lambda *_: absent(f"{name}() is not read")


def environment(constraints: Any, model: Any, use_mla: bool, multimodal: bool):
    """(names, calls) the rules are evaluated in for this model under default server args."""
    sets = _sets(constraints, model.architecture or "")
    backends = (
        absent("the attention backend SGLang picks for an MLA model from the GPU")
        if use_mla
        else [NOT_MLA_BACKEND]
    )
    names = ChainMap(
        model_config_names(sets, enable_multimodal(constraints, model), multimodal),
        {"self._resolved_attention_backends()": backends, "self.model_path": model.source},
        PLATFORM_NAMES,
        server_args(constraints),
    )
    return names, _Calls({**_set_predicates(constraints, sets), **PLATFORM_CALLS, **CHECKPOINT})


def _sets(constraints: Any, architecture: str) -> frozenset[str]:
    return frozenset(
        str(r.set_name)
        for r in constraints.rows(SETS)
        if r.architecture == architecture and r.member_returns
    )


def enable_multimodal(constraints: Any, model: Any) -> bool | str:
    """ModelConfig.__init__'s enable_multimodal under default server args (--enable-multimodal
    not given): off for the mm_disabled_models (their condition model_impl != TRANSFORMERS
    holds under the default "auto") and for a MIMO_V2_MULTIMODAL_ARCHS checkpoint without its
    sub-configurations, else on; why it is unknown when it cannot be told."""
    architecture = model.architecture or ""
    sets = _sets(constraints, architecture)
    if MM_DISABLED in sets:
        return False
    if MIMO_V2_MM in sets:
        turned_off = _lacks_sub_configs(constraints, architecture, model)
        return turned_off if isinstance(turned_off, str) else not turned_off
    return True


def is_multimodal(constraints: Any, model: Any) -> bool | str:
    """ModelConfig.is_multimodal under default server args, or why it is unknown."""
    architecture = model.architecture or ""
    sets = _sets(constraints, architecture)
    enable = enable_multimodal(constraints, model)
    if isinstance(enable, str):
        return enable
    language_only = bool(model.top("language_model_only"))
    llava_causal = architecture.startswith("Llava") and architecture.endswith("ForCausalLM")
    sub_config = model.text_key is not None and not llava_causal
    return enable and not language_only and ("is_multimodal_model" in sets or sub_config)


def _lacks_sub_configs(constraints: Any, architecture: str, model: Any) -> bool | str:
    """Whether MIMO_V2_MULTIMODAL_ARCHS' condition holds (multimodal off), evaluated from its
    extracted rule on the config as SGLang loads it; why it is unknown when it cannot be."""
    row = next(
        r
        for r in constraints.rows(SETS)
        if r.set_name == MIMO_V2_MM and r.architecture == architecture and r.member_returns
    )
    evaluation = object_holds(model, row.condition_rule)
    if evaluation.value is None:
        return f"{row.symbol}: `{row.condition}` ({MIMO_V2_MM}): {evaluation.problem}"
    return evaluation.value


def prefill_backend(constraints: Any, model: Any, use_mla: bool, multimodal: bool) -> Backend:
    """The prefill cuda-graph backend when _handle_gpu_memory_settings runs."""
    rows = constraints.rows(FACT) if constraints.has(FACT) else ()
    if not rows:
        return Backend(None, f"SGLang's {FACT} are not extracted")
    architecture = model.architecture or ""
    for row in rows:
        if row.kind == "default" and row.name == architecture:
            return Backend(row.target, f"{row.symbol} sets {architecture}'s prefill backend")
    names, calls = environment(constraints, model, use_mla, multimodal)
    backend = CUDA_DEFAULT
    steps = [f"{CUDA_DEFAULT} (the CUDA default)"]
    for kind in ("switch", "disable"):
        for row in (r for r in rows if r.backend == backend):
            if row.kind == "unread":
                return Backend(None, f"{row.symbol}: `{row.condition}` not read")
            if row.kind != kind:
                continue
            try:
                holds = bool(evaluate(row.rule, names, calls, PYTHON))
            except Unknown as err:
                return Backend(None, f"{row.symbol}: `{row.condition}` is not evaluated: {err}")
            if holds and kind == "switch":
                backend = row.target
                steps.append(f"{row.target} ({row.symbol})")
                break
            if holds:
                steps.append(f"off: {row.name} ({row.symbol})")
                return Backend(DISABLED, ", then ".join(steps))
    return Backend(backend, ", then ".join(steps))
