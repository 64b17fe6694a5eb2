"""llama.cpp: architecture names, the architecture class sets (recurrent, hybrid, diffusion, ...),
the HF architecture -> GGUF architecture join, and sliding-window rules per architecture."""

from __future__ import annotations

from collections.abc import Mapping

from apron.extractors.llamacpp import (
    class_sets,
    converter,
    converter_hparams,
    families,
    hf_join,
    hparams_steps,
    limits,
    matrix_cells,
    memory_rules,
    sliding_window,
    support,
    tensor_shapes,
)
from apron.extractors.llamacpp.arch_names import arch_names
from apron.extractors.llamacpp.records import (
    ArchName,
    CacheSizeRule,
    ClassPredicate,
    ClassSetListed,
    ClassSetMember,
    ContextDefault,
    ConverterHparams,
    GgmlTypeSize,
    GgufWriterKey,
    HfArchitecture,
    HparamsFormula,
    HparamsStep,
    Limit,
    MemoryCallback,
    MemoryRule,
    RecurrentLayerRule,
    SlidingWindowRule,
    TensorShape,
)
from apron.extractors.parsing.cpp_ts import brace_warnings, parse_cpp, parse_cpp_methods
from apron.extractors.records import FactKind, Record, SupportScan, warning
from apron.extractors.runner.base import EngineSpec, FactExtractor, FactOutput
from apron.extractors.snapshot import Snapshot

ARCH_CPP = "src/llama-arch.cpp"
ARCH_H = "src/llama-arch.h"
MODEL_CPP = "src/llama-model.cpp"
MODELS_DIR = "src/models"
MODELS_H = "src/models/models.h"
MODEL_H = "src/llama-model.h"
GGUF_CONSTANTS = "gguf-py/gguf/constants.py"
GGUF_WRITER = "gguf-py/gguf/gguf_writer.py"
# Converter layouts, newest first: since 2026-05-15 the classes live in the conversion/ package
# (conversion/__init__.py routes HF architectures to modules); before, in one script.
CONVERTER_PACKAGE = "conversion"
CONVERTER_PACKAGE_INIT = "conversion/__init__.py"
CONVERTER_SCRIPT = "convert_hf_to_gguf.py"
REGISTER_ANCHOR = "@ModelBase.register(...) classes"


HPARAMS_CPP = "src/llama-hparams.cpp"
HPARAMS_H = "src/llama-hparams.h"
KV_ISWA_CPP = "src/llama-kv-cache-iswa.cpp"
CONTEXT_CPP = "src/llama-context.cpp"
COMMON_H = "common/common.h"
GGML_C = "ggml/src/ggml.c"
GGML_COMMON_H = "ggml/src/ggml-common.h"
GGML_H = "ggml/include/ggml.h"
MEMORY_HEADERS = (
    "src/llama-kv-cache.h",
    "src/llama-kv-cache-iswa.h",
    "src/llama-memory-hybrid.h",
    "src/llama-memory-hybrid-iswa.h",
    "src/llama-memory-recurrent.h",
)

ARCH_READS = (ARCH_CPP, ARCH_H)
CONVERTER_READS = (CONVERTER_PACKAGE_INIT, f"{CONVERTER_PACKAGE}/*.py", CONVERTER_SCRIPT)


def _arch_names(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    cpp = snapshot.first_existing([ARCH_CPP], anchor="LLM_ARCH_NAMES")
    header = snapshot.first_existing([ARCH_H], anchor="enum llm_arch")
    records, warnings = arch_names(snapshot.read_text(cpp), cpp, snapshot.read_text(header), header)
    warnings += _brace_warnings(snapshot, [cpp, header])
    return FactOutput(tuple(records), tuple(warnings))


def _brace_warnings(snapshot: Snapshot, paths: list[str]) -> list:
    """Unbalanced braces in C++ files this fact read (parses are cached: no second parse)."""
    return brace_warnings([parse_cpp(snapshot.read_text(p), p) for p in paths])


def _scan(snapshot: Snapshot) -> class_sets.PredicateScan:
    cpp = snapshot.first_existing([ARCH_CPP], anchor="llm_arch_is_* predicates")
    header = snapshot.first_existing([ARCH_H], anchor="llm_arch_is_* declarations")
    return class_sets.scan_predicates(
        snapshot.read_text(cpp), cpp, snapshot.read_text(header), header
    )


def _names(needed: Mapping[str, tuple[Record, ...]]) -> list[ArchName]:
    return [r for r in needed["arch_names"] if isinstance(r, ArchName)]


def _class_predicates(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    scan = _scan(snapshot)
    rows = class_sets.predicate_rows(scan, _names(needed), ARCH_CPP)
    return FactOutput(tuple(rows), scan.warnings)


def _class_set_listed(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    return FactOutput(tuple(class_sets.listed_rows(_scan(snapshot))))


def _class_set_members(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    rows, warnings = class_sets.members(_scan(snapshot), _names(needed))
    return FactOutput(tuple(rows), tuple(warnings))


def _converter_modules(
    snapshot: Snapshot, warnings: list
) -> tuple[list[converter.ConverterModule], str, str]:
    """The converter modules of whichever layout this commit has: (modules, package, init path)."""
    counter = [0]
    if snapshot.exists(CONVERTER_PACKAGE_INIT):
        paths = [p for p in snapshot.list_files(CONVERTER_PACKAGE) if p.endswith(".py")]
        modules = []
        for path in paths:
            stem = path.rsplit("/", 1)[-1].removesuffix(".py")
            name = CONVERTER_PACKAGE if stem == "__init__" else f"{CONVERTER_PACKAGE}.{stem}"
            modules.append(
                converter.read_module(snapshot.read_text(path), path, name, counter, warnings)
            )
        return modules, CONVERTER_PACKAGE, CONVERTER_PACKAGE_INIT
    path = snapshot.first_existing(
        [CONVERTER_PACKAGE_INIT, CONVERTER_SCRIPT], anchor=REGISTER_ANCHOR
    )
    module = converter.read_module(
        snapshot.read_text(path), path, "convert_hf_to_gguf", counter, warnings
    )
    return [module], "", ""


def _hf_architectures(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    warnings: list = []
    modules, package, init_path = _converter_modules(snapshot, warnings)
    index = converter.ConverterIndex(modules)
    found = converter.registrations(index)
    if not found:
        tried = [m.path for m in modules]
        raise snapshot.missing_anchor(
            "no converter class registers an HF architecture", tried, REGISTER_ANCHOR
        )
    routes = {}
    if package:
        routes = converter.routing_maps(index.modules[package]) if package in index.modules else {}
    winners, unregistered, choose_warnings = hf_join.choose_registrations(
        found, routes, package, init_path
    )
    constants = snapshot.first_existing([GGUF_CONSTANTS], anchor=converter.NAMES_DICT)
    gguf_names, name_warnings = converter.gguf_arch_names(snapshot.read_text(constants), constants)
    members = [r for r in needed["class_set_members"] if isinstance(r, ClassSetMember)]
    snapshot.read_text(ARCH_CPP)  # the join ends in LLM_ARCH_NAMES: name it as a source
    rows, join_warnings = hf_join.join(
        winners, unregistered, gguf_names, constants, _names(needed), members, package, init_path
    )
    return FactOutput(tuple(rows), (*warnings, *choose_warnings, *name_warnings, *join_warnings))


def _sliding_window(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    model_cpp = snapshot.first_existing([MODEL_CPP], anchor=sliding_window.MAPPING_FUNCTION)
    pairs = sliding_window.mapping_classes(snapshot.read_text(model_cpp), model_cpp)
    warnings = []
    if pairs is None:
        code = sliding_window.switch_layout_code(snapshot.read_text(model_cpp), model_cpp)
    else:
        models_h = snapshot.first_existing([MODELS_H], anchor="struct llama_model_*")
        paths = [p for p in snapshot.list_files(MODELS_DIR) if p.endswith(".cpp")]
        methods = sliding_window.hparams_methods([(p, snapshot.read_text(p)) for p in paths])
        if not methods:
            raise snapshot.missing_anchor(
                f"no llama_model_*::{sliding_window.HPARAMS_METHOD} is defined in {MODELS_DIR}/",
                paths or [MODELS_DIR],
                f"llama_model_*::{sliding_window.HPARAMS_METHOD}",
            )
        bases = sliding_window.struct_bases(snapshot.read_text(models_h), models_h)
        code, warnings = sliding_window.per_model_code(pairs, methods, bases, models_h)
    names = {n.arch: n.gguf_name for n in _names(needed)}
    snapshot.read_text(ARCH_CPP)  # gguf_name comes from LLM_ARCH_NAMES: name it as a source
    rules, rule_warnings = sliding_window.sliding_window_rules(code, names)
    if pairs is None:
        braces = _brace_warnings(snapshot, [model_cpp])
    else:  # a model file is checked as it was parsed: a method read on its own is balanced
        braces = _brace_warnings(snapshot, [model_cpp, models_h]) + brace_warnings(
            [
                parse_cpp_methods(snapshot.read_text(p), p, sliding_window.HPARAMS_METHOD)
                for p in paths
            ]
        )
    return FactOutput(tuple(rules), (*warnings, *rule_warnings, *braces))


def _hparams_steps(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    """The member defaults, the base loader, each architecture's load_arch_hparams and the
    llama_hparams helpers they call, as steps (extractors/llamacpp/hparams_steps.py)."""
    header = snapshot.first_existing([HPARAMS_H], anchor=f"struct {hparams_steps.HPARAMS_STRUCT}")
    defaults, member_types = hparams_steps.member_defaults(snapshot.read_text(header), header)
    keys = memory_rules.kv_names(snapshot.read_text(ARCH_CPP), ARCH_CPP)
    model_cpp = snapshot.first_existing([MODEL_CPP], anchor=" or ".join(hparams_steps.BASE_LOADERS))
    model_source = parse_cpp(snapshot.read_text(model_cpp), model_cpp)
    rows: list[HparamsStep] = list(defaults)
    warnings: list = []

    def add(source, node, function, archs, parameters=()) -> None:
        steps, found = hparams_steps.read_function(
            source, node, function, archs, keys, member_types, parameters
        )
        rows.extend(steps)
        warnings.extend(found)

    name, node = hparams_steps.base_loader(model_source)
    add(model_source, node, name, ())
    helpers_path = snapshot.first_existing([HPARAMS_CPP], anchor="llama_hparams::set_swa_pattern")
    helpers_source = parse_cpp(snapshot.read_text(helpers_path), helpers_path)
    for method, definition in sorted(hparams_steps.helper_definitions(helpers_source).items()):
        parameters = hparams_steps.helper_parameters(snapshot.read_text(header), header, method)
        add(helpers_source, definition, f"{hparams_steps.HPARAMS_STRUCT}::{method}", (), parameters)
    pairs = sliding_window.mapping_classes(snapshot.read_text(model_cpp), model_cpp)
    if pairs is not None:
        models_h = snapshot.first_existing([MODELS_H], anchor="struct llama_model_*")
        paths = [p for p in snapshot.list_files(MODELS_DIR) if p.endswith(".cpp")]
        methods = sliding_window.hparams_methods([(p, snapshot.read_text(p)) for p in paths])
        bases = sliding_window.struct_bases(snapshot.read_text(models_h), models_h)
        archs_of: dict[str, list[str]] = {owner: [] for owner in methods}
        for arch, model_class in pairs:
            owner, seen = model_class, set()
            while owner not in methods and owner in bases and owner not in seen:
                seen.add(owner)
                owner = bases[owner]
            if owner in methods:
                archs_of[owner].append(arch)
        for owner, (source, definition) in sorted(methods.items()):
            function = f"{owner}::{sliding_window.HPARAMS_METHOD}"
            add(source, definition, function, tuple(sorted(set(archs_of[owner]))))
    return FactOutput(tuple(rows), tuple(warnings))


def _tensor_shapes(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    """Each architecture's load_arch_tensors: the tensors it creates and their shapes."""
    model_cpp = snapshot.first_existing([MODEL_CPP], anchor=sliding_window.MAPPING_FUNCTION)
    pairs = sliding_window.mapping_classes(snapshot.read_text(model_cpp), model_cpp)
    if pairs is None:  # the older single-switch layout: tensors were not per class
        return FactOutput(())
    paths = [p for p in snapshot.list_files(MODELS_DIR) if p.endswith(".cpp")]
    methods = tensor_shapes.tensor_methods([(p, snapshot.read_text(p)) for p in paths])
    if not methods:  # tensors still loaded by one llama_model::load_tensors switch
        return FactOutput(())
    names = tensor_shapes.tensor_names(snapshot.read_text(ARCH_CPP), ARCH_CPP)
    model_h = snapshot.first_existing([MODEL_H], anchor=tensor_shapes.LOCALS_MACRO)
    macro = tensor_shapes.load_locals(snapshot.read_text(model_h), model_h)
    models_h = snapshot.first_existing([MODELS_H], anchor="struct llama_model_*")
    bases = sliding_window.struct_bases(snapshot.read_text(models_h), models_h)
    archs_of: dict[str, list[str]] = {owner: [] for owner in methods}
    for arch, model_class in pairs:
        owner, seen = model_class, set()
        while owner not in methods and owner in bases and owner not in seen:
            seen.add(owner)
            owner = bases[owner]
        if owner in methods:
            archs_of[owner].append(arch)
    rows: list = []
    warnings: list = []
    for owner, (source, definition) in sorted(methods.items()):
        function = f"{owner}::{tensor_shapes.TENSORS_METHOD}"
        found, notes = tensor_shapes.read_tensors(
            source, definition, function, tuple(sorted(set(archs_of[owner]))), names, macro
        )
        rows.extend(found)
        warnings.extend(notes)
    return FactOutput(tuple(rows), tuple(warnings))


def _hparams_formulas(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    path = snapshot.first_existing([HPARAMS_CPP], anchor="llama_hparams::n_embd_r")
    rows, warnings = memory_rules.hparams_formulas(snapshot.read_text(path), path)
    return FactOutput(tuple(rows), tuple(warnings))


def _create_memory(snapshot: Snapshot) -> tuple[list, list, list]:
    path = snapshot.first_existing([MODEL_CPP], anchor=memory_rules.CREATE_MEMORY)
    text = snapshot.read_text(path)
    parameters = {}
    for name in memory_rules.memory_classes(text, path):
        header = memory_rules.header_of(name)
        parameters[name] = (
            memory_rules.constructor_parameters(snapshot.read_text(header), header, name)
            if snapshot.exists(header)
            else None
        )
    return memory_rules.create_memory_rules(text, path, parameters)


def _memory_rules(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    rules, _, warnings = _create_memory(snapshot)
    return FactOutput(tuple(rules), tuple(warnings))


def _memory_callbacks(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    _, callbacks, _ = _create_memory(snapshot)
    return FactOutput(tuple(callbacks))


def _cache_sizes(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    iswa = snapshot.first_existing([KV_ISWA_CPP], anchor=memory_rules.ISWA_CONSTRUCTOR)
    context = snapshot.first_existing([CONTEXT_CPP], anchor=memory_rules.CONTEXT_CONSTRUCTOR)
    a, wa = memory_rules.assignments_in(
        snapshot.read_text(iswa), iswa, memory_rules.ISWA_CONSTRUCTOR, memory_rules.ISWA_VARIABLES
    )
    b, wb = memory_rules.assignments_in(
        snapshot.read_text(context),
        context,
        memory_rules.CONTEXT_CONSTRUCTOR,
        memory_rules.CONTEXT_VARIABLES,
    )
    return FactOutput((*a, *b), (*wa, *wb))


def _context_defaults(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    path = snapshot.first_existing([COMMON_H], anchor="struct common_params")
    rows, warnings = memory_rules.context_defaults(snapshot.read_text(path), path)
    return FactOutput(tuple(rows), tuple(warnings))


def _limits(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    texts = {
        path: snapshot.read_text(snapshot.first_existing([path], anchor=anchor))
        for path, anchor in _limit_anchors().items()
    }
    rows, warnings = limits.limits(texts)
    return FactOutput(tuple(rows), tuple(warnings))


def _limit_anchors() -> dict[str, str]:
    """Each file the limits fact reads -> the first name it looks for there (for the error when
    the file is missing)."""
    anchors: dict[str, str] = {}
    for name, path in limits.DEFINES.items():
        anchors.setdefault(path, name)
    for (struct, field), path in limits.FIELDS.items():
        anchors.setdefault(path, f"{struct}::{field}")
    return dict(sorted(anchors.items()))


def _ggml_type_sizes(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    ggml_c = snapshot.first_existing([GGML_C], anchor="type_traits")
    common = snapshot.first_existing([GGML_COMMON_H], anchor="block_* static_assert")
    header = snapshot.first_existing([GGML_H], anchor="typedef ggml_fp16_t")
    rows, warnings = memory_rules.ggml_type_sizes(
        snapshot.read_text(ggml_c),
        ggml_c,
        snapshot.read_text(common),
        common,
        snapshot.read_text(header),
        header,
    )
    return FactOutput(tuple(rows), tuple(warnings))


def _recurrent_layers(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    model_cpp = snapshot.first_existing([MODEL_CPP], anchor=sliding_window.MAPPING_FUNCTION)
    pairs = sliding_window.mapping_classes(snapshot.read_text(model_cpp), model_cpp)
    if pairs is None:
        code = sliding_window.switch_layout_code(snapshot.read_text(model_cpp), model_cpp)
    else:
        models_h = snapshot.first_existing([MODELS_H], anchor="struct llama_model_*")
        paths = [p for p in snapshot.list_files(MODELS_DIR) if p.endswith(".cpp")]
        methods = sliding_window.hparams_methods([(p, snapshot.read_text(p)) for p in paths])
        bases = sliding_window.struct_bases(snapshot.read_text(models_h), models_h)
        code, _ = sliding_window.per_model_code(pairs, methods, bases, models_h)
    keys = memory_rules.kv_names(snapshot.read_text(ARCH_CPP), ARCH_CPP)
    names = {n.arch: n.gguf_name for n in _names(needed)}
    rows, warnings = [], []
    for item in code:
        row, found = memory_rules.recurrent_layer_rule(
            item.arch,
            names.get(item.arch, ""),
            item.model_class,
            item.statements,
            item.source.path,
            item.symbol,
            keys,
        )
        warnings.extend(found)
        if row is not None:
            rows.append(row)
    return FactOutput(tuple(rows), tuple(warnings))


def _gguf_writer_keys(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    constants = snapshot.first_existing([GGUF_CONSTANTS], anchor="class Keys")
    writer = snapshot.first_existing([GGUF_WRITER], anchor="class GGUFWriter")
    keys = converter_hparams.key_constants(snapshot.read_text(constants), constants)
    rows = converter_hparams.writer_keys(snapshot.read_text(writer), writer, keys)
    if not rows:
        raise snapshot.missing_anchor(
            "no GGUFWriter.add_* method writes a Keys.* constant", [writer], "GGUFWriter.add_*"
        )
    warnings = [
        warning(
            "key-unresolved",
            r.method,
            f"{r.key_constant} is not a string constant of class Keys in {constants}",
            writer,
            r.symbol,
        )
        for r in rows
        if not r.key
    ]
    return FactOutput(tuple(rows), tuple(warnings))


def _converter_hparams(snapshot: Snapshot, needed: Mapping[str, tuple[Record, ...]]) -> FactOutput:
    if snapshot.exists(CONVERTER_PACKAGE_INIT):
        paths = sorted(p for p in snapshot.list_files(CONVERTER_PACKAGE) if p.endswith(".py"))
    else:
        paths = [
            snapshot.first_existing(
                [CONVERTER_PACKAGE_INIT, CONVERTER_SCRIPT], anchor="set_gguf_parameters"
            )
        ]
    rows = []
    for path in paths:
        rows.extend(converter_hparams.converter_hparams(snapshot.read_text(path), path))
    # no row: no class writes hparams (the converter's own anchor, its registry, is checked by
    # hf_architectures); apron then says the mapping is missing
    return FactOutput(tuple(rows))


ARCH_NAMES = FactKind(
    "arch_names",
    "Architecture names",
    ArchName,
    "LLM_ARCH_NAMES: each llm_arch enum value and the GGUF general.architecture string it "
    "loads; cross-checked with enum llm_arch.",
)
CLASS_PREDICATES = FactKind(
    "class_predicates",
    "Architecture class predicates",
    ClassPredicate,
    "every llm_arch_is_* / llm_arch_supports_* predicate at this commit with its polarity in "
    "words; a predicate that does not exist at this commit is a row with present=False "
    "(absent, not empty). member_count counts the LLM_ARCH_NAMES entries (but "
    "LLM_ARCH_UNKNOWN) for which it returns true.",
)
CLASS_SET_LISTED = FactKind(
    "class_set_listed",
    "Class sets: listed case labels",
    ClassSetListed,
    "the raw `case LLM_ARCH_X:` labels of each predicate's switch and what each returns "
    "(llm_arch_supports_sm_tensor lists the architectures that return false).",
)
CLASS_SET_MEMBERS = FactKind(
    "class_set_members",
    "Class sets: members",
    ClassSetMember,
    "the architectures for which each predicate returns true (it HAS the property): listed "
    "labels that return true, or every unlisted architecture when the default is true.",
)
HF_ARCHITECTURES = FactKind(
    "hf_architectures",
    "HF architecture -> GGUF architecture",
    HfArchitecture,
    "every HF architecture the converter registers, joined through its converter class's "
    "model_arch (own or inherited) to the GGUF name, the LLM_ARCH_* value and the class-set "
    "predicates that return true for it; unresolved rows say why.",
    support=SupportScan("architecture", "registry"),
)
SLIDING_WINDOW = FactKind(
    "sliding_window",
    "Sliding-window attention",
    SlidingWindowRule,
    "per architecture whose hparams loader mentions sliding-window attention: the "
    "LLAMA_SWA_TYPE_* it assigns (under which condition), the set_swa_pattern period and "
    "dense_first flag, and the GGUF keys that override the pattern and the window. "
    "Architectures not listed never set one (swa_type stays none).",
)

HPARAMS_STEPS = FactKind(
    "hparams_steps",
    "Hparams loading steps (llama_hparams)",
    HparamsStep,
    "the member defaults of struct llama_hparams, the base loader, each architecture's "
    "load_arch_hparams and the helpers they call, one step per statement that can change a "
    "member: GGUF key reads (key, required, found), assignments, loops, fills, calls, asserts, "
    "throws, with the condition they run under (reverse-Polish; $x is a local).",
)

TENSOR_SHAPES = FactKind(
    "tensor_shapes",
    "Tensor shapes per architecture (load_arch_tensors)",
    TensorShape,
    "every create_tensor of each architecture's load_arch_tensors: the GGUF tensor name, the "
    "dimensions it expects (reverse-Polish over llama_hparams and LLAMA_LOAD_LOCALS), whether "
    "the file must hold it, and the condition it is under; llama.cpp refuses another shape.",
)

HPARAMS_FORMULAS = FactKind(
    "hparams_formulas",
    "KV and state sizes per layer (llama_hparams)",
    HparamsFormula,
    "the branches of llama_hparams' sizing methods (n_embd_k_gqa, n_embd_v_gqa, n_embd_r, "
    "n_embd_s, has_kv, is_mla, ...): where the condition holds the method returns the value; "
    "both are reverse-Polish tokens over llama_hparams members.",
)
MEMORY_RULES = FactKind(
    "memory_rules",
    "Memory per architecture (create_memory)",
    MemoryRule,
    "what llama_model::create_memory builds: no memory for the listed architectures, else "
    "recurrent, hybrid, hybrid-iswa, iswa or plain KV by the condition, with each "
    "constructor argument (K/V types, r/s types, cache sizes) by parameter name.",
)
MEMORY_CALLBACKS = FactKind(
    "memory_callbacks",
    "Layer filters and reuse (create_memory)",
    MemoryCallback,
    "the per-architecture layer filters (attention / recurrent) and KV reuse callbacks "
    "create_memory passes: what the lambda returns for layer il, as reverse-Polish tokens.",
)
CACHE_SIZES = FactKind(
    "cache_sizes",
    "Cache size and context padding",
    CacheSizeRule,
    "the SWA cache size of llama_kv_cache_iswa and the padding of n_ctx / n_ctx_seq in "
    "llama_context: each assignment in order, with its condition, as reverse-Polish tokens.",
)
CONTEXT_DEFAULTS = FactKind(
    "context_defaults",
    "Context defaults (common_params)",
    ContextDefault,
    "the defaults llama-server / llama-cli start from: n_ctx (0 = the training context), "
    "n_batch, n_ubatch, n_parallel, cache types, flash attention, kv_unified, swa_full.",
)
LIMITS = FactKind(
    "limits",
    "Limits on what llama.cpp loads and is asked",
    Limit,
    "the #defines llama.cpp checks a GGUF file and a context against (LLAMA_MAX_SEQ, "
    "LLAMA_MAX_LAYERS, GGML_MAX_DIMS, GGML_MAX_NAME, GGUF_VERSION, GGUF_MAX_STRING_LENGTH, "
    "GGUF_MAX_ARRAY_ELEMENTS) and the largest value of the C type of each setting apron takes "
    "as an option (common_params::n_ctx, llama_context_params::n_seq_max, ...).",
)
GGML_TYPE_SIZES = FactKind(
    "ggml_type_sizes",
    "Bytes per block of the cache types (ggml)",
    GgmlTypeSize,
    "ggml's type_traits for the KV cache types: blck_size elements take type_size bytes; "
    "sizeof(block_x) from ggml-common.h's static_assert on the block.",
)
RECURRENT_LAYERS = FactKind(
    "recurrent_layers",
    "Recurrent layers per architecture",
    RecurrentLayerRule,
    "per architecture whose hparams loader marks recurrent layers: the value given "
    "recurrent_layer_arr[il] (reverse-Polish in il), the loader's local integers and the GGUF "
    "keys that override them. Recurrent architectures not listed are recurrent in every layer "
    "(llm_arch_is_recurrent fills the array).",
)

GGUF_WRITER_KEYS = FactKind(
    "gguf_writer_keys",
    "GGUF key per writer method (gguf-py)",
    GgufWriterKey,
    "each GGUFWriter.add_* method of gguf-py and the GGUF key it writes ({arch}: the "
    "architecture), its Keys.* constant resolved in constants.py.",
)
CONVERTER_HPARAMS = FactKind(
    "converter_hparams",
    "HF config -> GGUF hparams (converter)",
    ConverterHparams,
    "what each converter class's set_gguf_parameters writes from the HF config: writer "
    "method, how the value is read (find_hparam keys, hparams[key], literal, block_count) or "
    "unread with its code; whether it calls super() first, and its bases.",
)

ENGINE = EngineSpec(
    engine_id="llamacpp",
    title="llama.cpp",
    upstream_url="https://github.com/ggml-org/llama.cpp",
    matrix_cells=matrix_cells.matrix_cells,
    families=families.llamacpp_families,
    family_rules=families.LLAMACPP_RULES,
    release_tags=r"b\d+",
    support_facts=("arch_names", "class_set_members"),
    support_judge=support.judge,
    calculator_facts=(
        "class_set_members",
        "sliding_window",
        "hparams_formulas",
        "memory_rules",
        "memory_callbacks",
        "cache_sizes",
        "context_defaults",
        "ggml_type_sizes",
        "recurrent_layers",
        "gguf_writer_keys",
        "converter_hparams",
        "hparams_steps",
        "tensor_shapes",
        "limits",
    ),
    facts=(
        FactExtractor(ARCH_NAMES, _arch_names, reads=ARCH_READS),
        FactExtractor(CLASS_PREDICATES, _class_predicates, reads=ARCH_READS, needs=("arch_names",)),
        FactExtractor(CLASS_SET_LISTED, _class_set_listed, reads=ARCH_READS, allow_empty=True),
        FactExtractor(
            CLASS_SET_MEMBERS,
            _class_set_members,
            reads=ARCH_READS,
            needs=("arch_names",),
            allow_empty=True,
        ),
        FactExtractor(
            HF_ARCHITECTURES,
            _hf_architectures,
            reads=(*CONVERTER_READS, GGUF_CONSTANTS, ARCH_CPP),
            needs=("arch_names", "class_set_members"),
        ),
        FactExtractor(
            SLIDING_WINDOW,
            _sliding_window,
            reads=(MODEL_CPP, MODELS_H, f"{MODELS_DIR}/*.cpp", ARCH_CPP),
            needs=("arch_names",),
        ),
        FactExtractor(HPARAMS_FORMULAS, _hparams_formulas, reads=(HPARAMS_CPP,)),
        FactExtractor(
            HPARAMS_STEPS,
            _hparams_steps,
            reads=(HPARAMS_H, HPARAMS_CPP, ARCH_CPP, MODEL_CPP, MODELS_H, f"{MODELS_DIR}/*.cpp"),
        ),
        FactExtractor(
            TENSOR_SHAPES,
            _tensor_shapes,
            reads=(ARCH_CPP, MODEL_CPP, MODEL_H, MODELS_H, f"{MODELS_DIR}/*.cpp"),
            allow_empty=True,
        ),
        FactExtractor(MEMORY_RULES, _memory_rules, reads=(MODEL_CPP, *MEMORY_HEADERS)),
        FactExtractor(
            MEMORY_CALLBACKS,
            _memory_callbacks,
            reads=(MODEL_CPP, *MEMORY_HEADERS),
            allow_empty=True,
        ),
        FactExtractor(CACHE_SIZES, _cache_sizes, reads=(KV_ISWA_CPP, CONTEXT_CPP)),
        FactExtractor(CONTEXT_DEFAULTS, _context_defaults, reads=(COMMON_H,)),
        FactExtractor(LIMITS, _limits, reads=limits.PATHS),
        FactExtractor(GGML_TYPE_SIZES, _ggml_type_sizes, reads=(GGML_C, GGML_COMMON_H, GGML_H)),
        FactExtractor(
            RECURRENT_LAYERS,
            _recurrent_layers,
            reads=(MODEL_CPP, MODELS_H, f"{MODELS_DIR}/*.cpp", ARCH_CPP),
            needs=("arch_names",),
            allow_empty=True,
        ),
        FactExtractor(GGUF_WRITER_KEYS, _gguf_writer_keys, reads=(GGUF_CONSTANTS, GGUF_WRITER)),
        FactExtractor(
            CONVERTER_HPARAMS, _converter_hparams, reads=CONVERTER_READS, allow_empty=True
        ),
    ),
)
