"""vLLM's convertor facts: the MLA model types and gates and the KV-head scan (aliases, fallback,
overrides), each read from the newest convertor layout that defines its method."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from apron.extractors.engine_api import FactExtractor, FactOutput
from apron.extractors.records import FactKind, Record
from apron.extractors.serving import kv_heads
from apron.extractors.serving.records import (
    KvHeadAlias,
    KvHeadFallback,
    KvHeadOverride,
)
from apron.extractors.snapshot import Snapshot
from apron.extractors.vllm import (
    convertor,
)
from apron.extractors.vllm.records import (
    MlaGate,
    MlaModelType,
)


@dataclass(frozen=True)
class ConvertorLayout:
    """Where `is_deepseek_mla` and `get_total_num_kv_heads` live in one era of vLLM."""

    path: str
    class_name: str
    has_convertor_map: bool


# Newest first. 2026-01-02 moved the methods from ModelConfig into the convertor base class.
CONVERTOR_LAYOUTS = (
    ConvertorLayout(
        "vllm/transformers_utils/model_arch_config_convertor.py",
        "ModelArchConfigConvertorBase",
        True,
    ),
    ConvertorLayout("vllm/config/model.py", "ModelConfig", False),  # late 2025
    ConvertorLayout("vllm/config/__init__.py", "ModelConfig", False),  # 2025-08-08 .. 2025-09-19
    ConvertorLayout("vllm/config.py", "ModelConfig", False),  # mid 2025
)


def find_layout(snapshot: Snapshot, method: str) -> ConvertorLayout:
    """The newest layout whose file defines `<class>.<method>`; an error names all tried."""
    tried = []
    for layout in CONVERTOR_LAYOUTS:
        tried.append(layout.path)
        if not snapshot.exists(layout.path):
            continue
        text = snapshot.read_text(layout.path)
        if convertor.defines_method(text, layout.path, layout.class_name, method):
            return layout
    anchors = " or ".join(f"{lay.class_name}.{method}" for lay in CONVERTOR_LAYOUTS)
    raise snapshot.missing_anchor(f"{method} is not defined in any known layout", tried, anchors)


CONVERTOR_READS = tuple(lay.path for lay in CONVERTOR_LAYOUTS)


def _layout_fact(method: str, extract: Callable[[str, ConvertorLayout], list[Record]]):
    """A fact read from the newest convertor layout that defines `<class>.<method>`."""

    def run(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
        layout = find_layout(snapshot, method)
        return FactOutput(tuple(extract(snapshot.read_text(layout.path), layout)))

    return run


def _kv_head_overrides(text: str, layout: ConvertorLayout) -> list[Record]:
    if layout.has_convertor_map:
        return convertor.kv_head_overrides_by_convertor(text, layout.path, layout.class_name)
    return kv_heads.kv_head_overrides_inline(text, layout.path, layout.class_name)


_mla_model_types = _layout_fact(
    kv_heads.MLA_METHOD,
    lambda text, lay: convertor.mla_model_types(text, lay.path, lay.class_name),
)
_mla_gates = _layout_fact(
    kv_heads.MLA_METHOD, lambda text, lay: convertor.mla_gates(text, lay.path, lay.class_name)
)
_kv_head_aliases = _layout_fact(
    kv_heads.KV_METHOD, lambda text, lay: kv_heads.kv_head_aliases(text, lay.path, lay.class_name)
)
_kv_head_fallback = _layout_fact(
    kv_heads.KV_METHOD,
    lambda text, lay: kv_heads.kv_head_fallback(text, lay.path, lay.class_name),
)
_kv_head_overrides_fact = _layout_fact(kv_heads.KV_METHOD, _kv_head_overrides)


MLA_MODEL_TYPES = FactKind(
    "mla_model_types",
    "MLA model types",
    MlaModelType,
    "model_type values is_deepseek_mla() treats as MLA; eagle_inner rows are checked against "
    "an EAGLE module's inner model.",
)
MLA_GATES = FactKind(
    "mla_gates",
    "MLA gates",
    MlaGate,
    "what a listed model_type must also have to be MLA; when the gate fails vLLM uses "
    "full attention.",
)
KV_HEAD_ALIASES = FactKind(
    "kv_head_aliases",
    "KV-head alias scan",
    KvHeadAlias,
    "config keys get_total_num_kv_heads() tries in order; the first present key wins.",
    ordered=True,
)
KV_HEAD_FALLBACK = FactKind(
    "kv_head_fallback",
    "KV-head fallback",
    KvHeadFallback,
    "the value used when no alias key is present: vLLM silently assumes MHA.",
)
KV_HEAD_OVERRIDES = FactKind(
    "kv_head_overrides",
    "KV-head overrides",
    KvHeadOverride,
    "per-model_type rules that replace or precede the alias scan; '*' applies to every "
    "model type except `excludes`.",
)

MLA_MODEL_TYPES_FACT = FactExtractor(MLA_MODEL_TYPES, _mla_model_types, reads=CONVERTOR_READS)

MLA_GATES_FACT = FactExtractor(MLA_GATES, _mla_gates, reads=CONVERTOR_READS)

KV_HEAD_ALIASES_FACT = FactExtractor(KV_HEAD_ALIASES, _kv_head_aliases, reads=CONVERTOR_READS)

KV_HEAD_FALLBACK_FACT = FactExtractor(KV_HEAD_FALLBACK, _kv_head_fallback, reads=CONVERTOR_READS)

KV_HEAD_OVERRIDES_FACT = FactExtractor(
    KV_HEAD_OVERRIDES, _kv_head_overrides_fact, reads=CONVERTOR_READS
)
