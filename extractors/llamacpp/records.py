"""Record types of the llama.cpp facts."""

from __future__ import annotations

from typing import ClassVar

from apron.extractors.records import Record


class ArchName(Record):
    """One entry of LLM_ARCH_NAMES: an llm_arch enum value and its GGUF architecture name."""

    KEY: ClassVar[tuple[str, ...]] = ("arch",)

    arch: str  # LLM_ARCH_LLAMA
    gguf_name: str  # "llama": the general.architecture string of a GGUF file
    in_enum: bool  # also an enumerator of `enum llm_arch` in llama-arch.h
    preprocessor_condition: str  # "" unless the entry sits under #if/#ifdef
    path: str
    symbol: str


class ClassPredicate(Record):
    """One llm_arch_is_* / llm_arch_supports_* predicate with its shape and polarity.

    A predicate missing at this commit is a row with present=False: absent, not empty."""

    KEY: ClassVar[tuple[str, ...]] = ("predicate",)

    predicate: str  # llm_arch_is_hybrid
    present: bool
    shape: str  # "switch", "constant", "absent" or "unrecognized"
    listed_returns: bool | None  # what the listed case labels return; None when mixed or no list
    default_returns: bool | None  # what every other architecture gets
    polarity: str  # in words, e.g. "listed architectures return false; default true"
    listed_count: int
    member_count: int  # architectures for which the predicate returns true
    path: str
    symbol: str


class ClassSetListed(Record):
    """A raw `case LLM_ARCH_X:` label of a predicate's switch and what it returns there."""

    KEY: ClassVar[tuple[str, ...]] = ("predicate", "arch")

    predicate: str
    arch: str
    returns: bool
    preprocessor_condition: str  # "" unless the label sits under #if/#ifdef
    path: str
    symbol: str


class ClassSetMember(Record):
    """An architecture that HAS the property: the predicate returns true for it.

    Either a case label returns true for it, or it is not listed and the default is true."""

    KEY: ClassVar[tuple[str, ...]] = ("predicate", "arch")

    predicate: str
    arch: str
    gguf_name: str
    via: str  # "listed" (a case label returns true) or "default" (not listed; default true)
    path: str
    symbol: str


class HfArchitecture(Record):
    """An HF architecture the converter registers, joined to its GGUF and llm_arch names.

    properties lists the class-set predicates that return true for that llm_arch."""

    KEY: ClassVar[tuple[str, ...]] = ("architecture", "model_type")

    architecture: str  # the HF `architectures[0]` string, e.g. LlamaForCausalLM
    model_type: str  # "text" or "mmproj" (the converter keeps one registry per type)
    converter_class: str  # LlamaModel; nested classes as Outer.Inner
    model_arch: str  # the gguf.MODEL_ARCH member, e.g. LLAMA; "" when unresolved
    model_arch_from: str  # the class whose body sets model_arch (itself or a base class)
    gguf_arch: str  # MODEL_ARCH_NAMES[model_arch], e.g. "llama"
    llm_arch: str  # the LLM_ARCH_* whose LLM_ARCH_NAMES entry is gguf_arch
    runtime_gguf_archs: tuple[str, ...]  # GGUF names the converter may switch to at runtime
    properties: tuple[str, ...]  # class-set predicates that return true for llm_arch
    resolution: str  # "resolved", or why the join stops
    path: str  # the file that defines the converter class
    symbol: str  # the registering class


class SlidingWindowRule(Record):
    """How one architecture's hparams loader sets up sliding-window attention."""

    KEY: ClassVar[tuple[str, ...]] = ("arch",)
    PROVENANCE: ClassVar[tuple[str, ...]] = ("path", "symbol", "model_class")

    arch: str  # LLM_ARCH_GEMMA2
    gguf_name: str
    swa_types: tuple[str, ...]  # LLAMA_SWA_TYPE_* assigned, lower case, source order
    conditional: bool  # the type or pattern depends on a runtime condition (e.g. GGUF keys)
    conditions: tuple[str, ...]  # "<type> when <condition>" for each conditional assignment
    pattern: str  # "period", "per-layer array", "computed", "none"; "unknown": a type, no pattern
    period_default: int | None  # default period of set_swa_pattern (n-1 SWA layers, 1 full)
    dense_first: bool | None  # set_swa_pattern's second argument; None without a period
    pattern_gguf_key: str  # the GGUF key that can override the pattern, "" when none
    window_literals: tuple[int, ...]  # literal values assigned to hparams.n_swa, source order
    window_gguf_key: str  # the GGUF key n_swa is read from, "" when not read
    window_gguf_required: bool  # the window key is read without `false` (missing key = error)
    other: tuple[str, ...]  # SWA statements not summarised above, as code
    model_class: str  # llama_model_gemma2; "" in the single load_hparams switch layout
    path: str
    symbol: str
