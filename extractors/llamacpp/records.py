"""Record types of the llama.cpp facts."""

from __future__ import annotations

from typing import ClassVar

from apron.extractors.llamacpp.cpp_formula import infix
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
    converter_mro: tuple[str, ...]  # the converter classes in Python's method resolution order
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


def infix_field(record: Record, name: str, formulas: tuple[str, ...]) -> str | None:
    """A reverse-Polish field of `record` in C++-like infix ("always" for an empty condition),
    None for any other field."""
    if name not in formulas:
        return None
    tokens = getattr(record, name)
    if not tokens:
        return "always" if name in ("condition", "when") else "unknown"
    return infix(tokens)


class HparamsFormula(Record):
    """One branch of a llama_hparams sizing method (src/llama-hparams.cpp): where `condition`
    holds and no earlier branch returned, the method returns `value`. Both are reverse-Polish
    tokens (extractors/llamacpp/cpp_formula.py); () condition: unconditional; () value with
    `unknown` set: a statement this reader could not turn into tokens."""

    KEY: ClassVar[tuple[str, ...]] = ("method", "branch")

    method: str  # n_embd_r
    branch: int  # source order, from 0
    condition: tuple[str, ...]
    value: tuple[str, ...]
    unknown: str  # "" when read
    path: str
    symbol: str

    def label(self) -> str:
        """ "n_embd_r #1: n_embd * (n_shortconv_l_cache - 1) when n_shortconv_l_cache != 0"."""
        value = infix(self.value) if self.value else f"unknown ({self.unknown})"
        when = f" when {infix(self.condition)}" if self.condition else ""
        return f"{self.method} #{self.branch}: {value}{when}"

    def shown(self, name: str) -> str | None:
        return infix_field(self, name, ("condition", "value"))


class MemoryRule(Record):
    """One memory llama_model::create_memory builds: for the architectures `archs` (a case of
    its switch; () the default case) under `condition` (reverse-Polish, () always), the class
    it constructs ("" for nullptr: no memory) with its arguments by constructor parameter."""

    KEY: ClassVar[tuple[str, ...]] = ("branch",)

    branch: int  # source order, from 0
    archs: tuple[str, ...]
    condition: tuple[str, ...]
    memory_class: str  # llama_memory_recurrent, llama_kv_cache_iswa, ...; "" = nullptr
    arguments: tuple[str, ...]  # "parameter=code", in parameter order
    path: str
    symbol: str

    def shown(self, name: str) -> str | None:
        return infix_field(self, name, ("condition",))


class MemoryCallback(Record):
    """A layer filter or reuse callback create_memory sets before it builds a memory: for the
    callback `variable` when `condition` holds (reverse-Polish; it names the architectures),
    branch `branch` of the lambda returns `value` where `when` holds (`il`: the layer index)."""

    KEY: ClassVar[tuple[str, ...]] = ("variable", "archs", "branch")

    variable: str  # filter_attn, filter_recr, filter, reuse
    archs: tuple[str, ...]  # the LLM_ARCH_* the condition names
    condition: tuple[str, ...]
    branch: int
    when: tuple[str, ...]
    value: tuple[str, ...]
    unknown: str
    path: str
    symbol: str

    def shown(self, name: str) -> str | None:
        return infix_field(self, name, ("condition", "when", "value"))


class CacheSizeRule(Record):
    """An assignment that sizes a cache or the context: in `function`, `variable` is set to
    `value` where `condition` holds (reverse-Polish tokens both). `order` is the source order
    among all the function's rows: an assignment reads the values assigned before it."""

    KEY: ClassVar[tuple[str, ...]] = ("function", "variable", "order")

    function: str  # llama_kv_cache_iswa::llama_kv_cache_iswa
    variable: str  # size_swa, cparams.n_ctx
    order: int
    condition: tuple[str, ...]
    value: tuple[str, ...]
    unknown: str
    path: str
    symbol: str

    def label(self) -> str:
        """ "size_swa #1 = GGML_PAD(std::min(...), 256)" (the function is in the section)."""
        value = infix(self.value) if self.value else f"unknown ({self.unknown})"
        when = f" when {infix(self.condition)}" if self.condition else ""
        return f"{self.variable} #{self.order} = {value}{when}"

    def shown(self, name: str) -> str | None:
        return infix_field(self, name, ("condition", "value"))


class ContextDefault(Record):
    """A default of `struct common_params` (common/common.h): what llama-server / llama-cli
    use unless a flag says otherwise."""

    KEY: ClassVar[tuple[str, ...]] = ("field",)

    field: str  # n_ctx
    value: str  # the initializer as code: "0", "GGML_TYPE_F16", "LLAMA_FLASH_ATTN_TYPE_AUTO"
    int_value: int | None  # the initializer when it is an integer or bool literal
    path: str
    symbol: str


class GgmlTypeSize(Record):
    """A ggml type's block: `blck_size` elements take `type_size` bytes (ggml/src/ggml.c
    type_traits; `sizeof(block_x)` read from ggml-common.h's static_assert on that block).
    None with `unknown` set when a size could not be read statically."""

    KEY: ClassVar[tuple[str, ...]] = ("ggml_type",)

    ggml_type: str  # GGML_TYPE_Q8_0
    type_name: str  # "q8_0": llama.cpp's --cache-type-k/-v spelling
    blck_size: int | None
    type_size: int | None
    blck_size_code: str
    type_size_code: str
    unknown: str
    path: str
    symbol: str


class RecurrentLayerRule(Record):
    """How one architecture's hparams loader marks its recurrent layers: `value` (reverse-Polish,
    in the layer index `index`) is assigned to `hparams.recurrent_layer_arr[index]` for every
    layer, or `fill` is the one value std::fill gives every layer. `locals_` are the loader's
    local integers with their defaults ("full_attn_interval=4"), `local_keys` the GGUF keys that
    override them ("full_attn_interval=%s.full_attention_interval")."""

    KEY: ClassVar[tuple[str, ...]] = ("arch",)
    PROVENANCE: ClassVar[tuple[str, ...]] = ("path", "symbol", "model_class")

    arch: str
    gguf_name: str
    index: str
    value: tuple[str, ...]
    fill: str  # "true"/"false" for std::fill over the array, "" otherwise
    locals_: tuple[str, ...]
    local_keys: tuple[str, ...]
    conditional: bool  # the assignment sits under an if (not evaluated by apron)
    unknown: str
    model_class: str
    path: str
    symbol: str


class GgufWriterKey(Record):
    """A GGUFWriter method of gguf-py (gguf-py/gguf/gguf_writer.py) and the GGUF key it writes
    (its Keys.* constant resolved in gguf-py/gguf/constants.py; "{arch}" is the architecture)."""

    KEY: ClassVar[tuple[str, ...]] = ("method",)

    method: str  # add_head_count_kv
    key_constant: str  # Keys.Attention.HEAD_COUNT_KV
    key: str  # "{arch}.attention.head_count_kv"; "" when the constant is not found
    path: str
    symbol: str


class ConverterHparams(Record):
    """What one converter class's set_gguf_parameters writes from the HF config: each write is
    (writer method, how, HF keys...): how is "find_hparam" (the first key present), "hparams"
    (hparams[key]), "get" (hparams.get(key[, integer default]): not written when absent
    without one), "literal" (an integer), "block_count" (self.block_count: the keys of
    `block_count_keys`), "expr" (the converter's own expression, reverse-Polish tokens of
    extractors/llamacpp/py_formula.py), "expr_when" (N, then N condition tokens, then the
    value's: written where the condition holds) or "unread" (an argument of another shape, or
    under a condition not read, as code in the last element). `calls_super`: it
    calls super().set_gguf_parameters() first; `bases`: its base classes, for the MRO."""

    KEY: ClassVar[tuple[str, ...]] = ("converter_class",)  # unique at the pin, across modules
    PROVENANCE: ClassVar[tuple[str, ...]] = ("path", "symbol")  # a move between layouts

    converter_class: str
    bases: tuple[str, ...]
    calls_super: bool
    calls_base: str  # `Base.set_gguf_parameters(self)`: the class it calls by name, or ""
    defines: bool  # the class defines set_gguf_parameters itself
    defines_find_hparam: bool  # it overrides find_hparam (the lookup the writes' keys go through)
    writes: tuple[tuple[str, ...], ...]
    block_count_keys: tuple[str, ...]  # from `self.block_count = self.find_hparam([...])`
    # (NAME, op, how, ...): class-body defaults, then `self.NAME = / += expr` in __init__, in
    # order (op "=" or "+="; how as a write's: expr, expr_when, unread)
    attributes: tuple[tuple[str, ...], ...]
    # (KEY, how, ...): `self.hparams["KEY"] = expr` in __init__ then set_gguf_parameters, in
    # order (how: expr, expr_when, unread, as a write)
    hparams_sets: tuple[tuple[str, ...], ...]
    path: str
    symbol: str


class HparamsStep(Record):
    """One step of llama.cpp's hparams loading, in source order within `function` (the member
    defaults of struct llama_hparams, the base loader, an architecture's load_arch_hparams, a
    llama_hparams helper), where `condition` holds (reverse-Polish; `$x` names a local):

    - key: read the GGUF key `key` ("%s" = the architecture) into `target` when present
      (`key_form`: scalar, scalar_or_array, per_layer with `value` the count, array,
      array_length); a `required` key that is absent refuses the file; `found` is the local
      (or `$foundN`) that holds whether it was present
    - assign: `target` (at `index` for an array) = `value`; fill: every element = `value`
    - loop: `target` from `value` while below `arguments[0]`, running the steps whose `loop`
      is this step's order
    - call: run `target` (a helper or load_arch_hparams) with `arguments`; param: a
      parameter of the function with its default `value`
    - assert (GGML_ASSERT of `value`) and throw: llama.cpp refuses the file; return
    - unread: a statement this reader does not read that writes `target` (why: `unknown`)"""

    KEY: ClassVar[tuple[str, ...]] = ("function", "order")

    function: str  # llama_model_gemma3::load_arch_hparams, llama_hparams (member defaults)
    archs: tuple[str, ...]  # the LLM_ARCH_* whose loader this is; () for shared code
    order: int
    kind: str
    target: str
    target_type: str  # the declared type of the target: uint32_t, std::array<...>, float
    key: str
    key_form: str
    required: bool
    found: str
    value: tuple[str, ...]
    arguments: tuple[tuple[str, ...], ...]
    index: tuple[str, ...]
    loop: int  # the order of the enclosing loop step, -1 outside loops
    condition: tuple[str, ...]
    unknown: str
    code: str
    path: str
    symbol: str

    def label(self) -> str:
        """ "llama_model_exaone4::load_arch_hparams #3: n_swa = 4096 when n_layer == 64"."""
        when = f" when {infix(self.condition)}" if self.condition else ""
        if self.kind == "key":
            what = f"{self.target} <- {self.key}{' (required)' if self.required else ''}"
        elif self.kind in ("assign", "fill", "param"):
            at = f"[{infix(self.index)}]" if self.index else ""
            what = f"{self.target}{at} = {infix(self.value) if self.value else '?'}"
        elif self.kind == "call":
            what = f"{self.target}({', '.join(infix(a) for a in self.arguments)})"
        elif self.kind == "assert":
            what = f"GGML_ASSERT({infix(self.value) if self.value else self.unknown})"
        else:
            what = f"{self.kind} {self.target} {self.unknown}".strip()
        return f"{self.function} #{self.order}: {what}{when}"


class TensorShape(Record):
    """A tensor an architecture's load_arch_tensors creates: its GGUF name (`name` % layer,
    then "." + `suffix`), the dimensions it expects (ne0, ne1, ...; reverse-Polish tokens over
    llama_hparams, `$i` the layer), whether the file must hold it, under which condition.
    llama.cpp refuses a file whose tensor has another shape (check_tensor_dims)."""

    KEY: ClassVar[tuple[str, ...]] = ("function", "order")

    function: str  # llama_model_mamba2::load_arch_tensors
    archs: tuple[str, ...]
    order: int
    tensor: str  # LLM_TENSOR_SSM_IN
    name: str  # "blk.%d.ssm_in"
    suffix: str  # "weight", "bias", ""
    block: tuple[str, ...]  # the block number: ("$i",) in a loop over n_layer, ("0",), ()
    dims: tuple[tuple[str, ...], ...]
    flags: str  # the flags argument as code
    required: bool  # no TENSOR_NOT_REQUIRED / TENSOR_SKIP among the flags
    condition: tuple[str, ...]
    unknown: str
    path: str
    symbol: str


class Limit(Record):
    """A bound llama.cpp holds a loaded file or a setting to: a `#define` (LLAMA_MAX_SEQ,
    GGML_MAX_DIMS, GGUF_VERSION, ...), or the largest value of an integer field's C type
    (common_params::n_ctx is an int32_t: -c takes at most 2**31-1)."""

    KEY: ClassVar[tuple[str, ...]] = ("name",)

    name: str  # LLAMA_MAX_SEQ, common_params::n_ctx
    value: int | None  # 256, 2147483647; None when the code is not a constant apron reads
    code: str  # the define's value or the field's type as written: "(1024*1024*1024)", "int32_t"
    unknown: str  # why value is None, else ""
    path: str
    symbol: str
