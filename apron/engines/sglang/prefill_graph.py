"""The prefill cuda-graph backend SGLang's ServerArgs settles on before it sizes the memory
fraction, from the extracted rules (generated/sglang/prefill_graph_rules.py): a per-model default
hook, else `breakable` (the CUDA default) switched to `tc_piecewise` for the validated multimodal
models, then turned off when a rule of that backend's list holds (Nemotron-H, DeepSeek-V4, most
multimodal models). Each rule's condition is matched by its code against what it means under
default server args on CUDA; a condition not in CONDITIONS makes the backend unknown. Whether the
model is multimodal is SGLang's ModelConfig.is_multimodal (its extracted sets, and a text
sub-config: Kimi-K3)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, NamedTuple

FACT = "prefill_graph_rules"
CUDA_DEFAULT = "breakable"  # cuda_graph_config.default_prefill_backend() on CUDA
DISABLED = "disabled"
SETS = "architecture_sets"
MM_DISABLED = "ModelConfig.__init__.mm_disabled_models"
# ModelConfig.__init__'s `elif architectures[0] in MIMO_V2_MULTIMODAL_ARCHS and not (hasattr(
# hf_config, "vision_config") and hasattr(hf_config, "audio_config"))`: multimodal off
MIMO_V2_MM = "ModelConfig.__init__.MIMO_V2_MULTIMODAL_ARCHS"
HAS_ALL = re.compile(r"not \((.+)\)")
HAS_ONE = re.compile(r'hasattr\(self\.hf_config, "(\w+)"\)')


class Backend(NamedTuple):
    """The settled prefill backend (None: unknown) and why."""

    backend: str | None
    why: str


class Facts(NamedTuple):
    """What the conditions ask of the model."""

    sets: frozenset[str]  # SGLang's architecture sets listing architectures[0] unconditionally
    multimodal: bool  # ModelConfig.is_multimodal
    enable_multimodal: bool
    use_mla: bool


def _in(name: str) -> Callable[[Facts], bool | None]:
    return lambda f: name in f.sets


def _never(_: Facts) -> bool:
    return False


def _switch_to_piecewise(f: Facts) -> bool | None:
    if not (f.enable_multimodal and "is_multimodal_piecewise_cuda_graph_supported" in f.sets):
        return False
    return None if f.use_mla else True  # trtllm_mla is picked by GPU for an MLA model


# condition code (as extracted) -> its truth for the model under default server args on CUDA
CONDITIONS: dict[str, Callable[[Facts], bool | None]] = {
    "is_nemotron_h(self.get_model_config().hf_config)": _in("is_nemotron_h"),
    "is_deepseek_v4(self.get_model_config().hf_config)": _in("is_deepseek_v4"),
    "self.get_model_config().is_multimodal and not self.get_model_config()"
    ".is_multimodal_breakable_cuda_graph_supported": lambda f: (
        f.multimodal
        and not (f.enable_multimodal and "is_multimodal_breakable_cuda_graph_supported" in f.sets)
    ),
    "self.get_model_config().is_multimodal and not self.get_model_config()"
    ".is_multimodal_piecewise_cuda_graph_supported": lambda f: (
        f.multimodal
        and not (f.enable_multimodal and "is_multimodal_piecewise_cuda_graph_supported" in f.sets)
    ),
    "self.get_model_config().is_piecewise_cuda_graph_disabled_model": lambda f: (
        "is_piecewise_cuda_graph_disabled_model" in f.sets
        or (
            f.multimodal
            and not (
                f.enable_multimodal and "is_multimodal_piecewise_cuda_graph_supported" in f.sets
            )
        )
    ),
    "self.get_model_config().is_multimodal_piecewise_cuda_graph_supported and "
    'self._resolved_attention_backends()[0] != "trtllm_mla"': _switch_to_piecewise,
    # server args at their defaults, a CUDA platform, an HF checkpoint (not GGUF)
    "self._resolved().attn_cp_size > 1 and not supports_prefill_cp_bcg(self)": _never,
    "self._resolved().attn_cp_size > 1": _never,
    "self.dcp_size > 1": _never,
    "self.enable_two_batch_overlap": _never,
    'resolved_view(self).moe_a2a_backend not in ("none", "deepep", "megamoe", "flashinfer")': (
        _never
    ),
    'resolved_view(self).moe_a2a_backend != "none"': _never,
    "self._resolved().enable_dp_attention": _never,
    "self.enable_torch_compile": _never,
    "self.pp_size > 1": _never,
    "is_hip() or is_npu() or is_cpu() or is_mps() or is_xpu()": _never,
    "current_platform.is_out_of_tree() and not current_platform.support_piecewise_cuda_graph()": (
        _never
    ),
    "bool(self.lora_paths) or self.enable_lora": _never,
    'self.load_format == "gguf" or resolved_view(self).quantization == "gguf" or '
    "check_gguf_file(self.model_path)": _never,
    "self.dllm_algorithm is not None": _never,
    "self.cpu_offload_gb > 0 or self.enable_hierarchical_cache": _never,
    "self.enable_deterministic_inference": _never,
    'self.disaggregation_mode != "null"': _never,
    "self.enable_symm_mem": _never,
    "self.enable_eplb or self.expert_distribution_recorder_mode is not None": _never,
    "self.debug_cuda_graph": _never,
    "self.enable_dsa_prefill_context_parallel": _never,
}


def _sets(constraints: Any, architecture: str) -> frozenset[str]:
    return frozenset(
        str(r.set_name)
        for r in constraints.rows(SETS)
        if r.architecture == architecture and r.member_returns
    )


def is_multimodal(constraints: Any, model: Any) -> bool | str:
    """ModelConfig.is_multimodal under default server args, or why it is unknown."""
    architecture = model.architecture or ""
    sets = _sets(constraints, architecture)
    enable = MM_DISABLED not in sets  # its condition model_impl != TRANSFORMERS holds (auto)
    if MIMO_V2_MM in sets:
        turned_off = _lacks_sub_configs(constraints, architecture, model)
        if isinstance(turned_off, str):
            return turned_off
        enable = enable and not turned_off
    language_only = bool(model.top("language_model_only"))
    llava_causal = architecture.startswith("Llava") and architecture.endswith("ForCausalLM")
    sub_config = model.text_key is not None and not llava_causal
    return enable and not language_only and ("is_multimodal_model" in sets or sub_config)


def _lacks_sub_configs(constraints: Any, architecture: str, model: Any) -> bool | str:
    """Whether MIMO_V2_MULTIMODAL_ARCHS' condition holds (multimodal off): not every
    sub-configuration it asks hf_config for is there (a key of config.json, null included, is an
    attribute of the loaded config); why it is unknown when the condition is another shape."""
    row = next(
        r
        for r in constraints.rows(SETS)
        if r.set_name == MIMO_V2_MM and r.architecture == architecture and r.member_returns
    )
    condition = str(row.condition or "")
    inner = HAS_ALL.fullmatch(condition)
    keys = [HAS_ONE.fullmatch(p) for p in inner.group(1).split(" and ")] if inner else [None]
    if not all(keys):
        return f"{row.symbol}: `{condition}` ({MIMO_V2_MM}) is not evaluated"
    return not all(k.group(1) in model.raw for k in keys if k is not None)


def prefill_backend(constraints: Any, model: Any, use_mla: bool, multimodal: bool) -> Backend:
    """The prefill cuda-graph backend when _handle_gpu_memory_settings runs."""
    rows = constraints.rows(FACT) if constraints.has(FACT) else ()
    if not rows:
        return Backend(None, f"SGLang's {FACT} are not extracted")
    architecture = model.architecture or ""
    sets = _sets(constraints, architecture)
    facts = Facts(sets, multimodal, MM_DISABLED not in sets, use_mla)
    for row in rows:
        if row.kind == "default" and row.name == architecture:
            return Backend(row.target, f"{row.symbol} sets {architecture}'s prefill backend")
    backend = CUDA_DEFAULT
    steps = [f"{CUDA_DEFAULT} (the CUDA default)"]
    for kind in ("switch", "disable"):
        for row in (r for r in rows if r.backend == backend):
            if row.kind == "unread":
                return Backend(None, f"{row.symbol}: `{row.condition}` not read")
            if row.kind != kind:
                continue
            evaluate = CONDITIONS.get(row.condition)
            holds = evaluate(facts) if evaluate is not None else None
            if holds is None:
                what = "is not evaluated" if evaluate is None else "depends on the GPU"
                return Backend(None, f"{row.symbol}: `{row.condition}` {what}")
            if holds and kind == "switch":
                backend = row.target
                steps.append(f"{row.target} ({row.symbol})")
                break
            if holds:
                steps.append(f"off: {row.name} ({row.symbol})")
                return Backend(DISABLED, ", then ".join(steps))
    return Backend(backend, ", then ".join(steps))
