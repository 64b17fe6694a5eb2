"""llama.cpp's model facts: sliding windows, hparams loading steps and formulas, tensor shapes
and recurrent layers, per architecture."""

from __future__ import annotations

from collections.abc import Mapping

from apron.extractors.engine_api import FactExtractor, FactOutput
from apron.extractors.llamacpp import (
    hparams_steps,
    memory_rules,
    sliding_window,
    tensor_shapes,
)
from apron.extractors.llamacpp.layout import (
    ARCH_CPP,
    HPARAMS_CPP,
    HPARAMS_H,
    MODEL_CPP,
    MODEL_H,
    MODELS_DIR,
    MODELS_H,
    arch_name_rows,
    read_brace_warnings,
)
from apron.extractors.llamacpp.records import (
    HparamsFormula,
    HparamsStep,
    RecurrentLayerRule,
    SlidingWindowRule,
    TensorShape,
)
from apron.extractors.parsing.cpp_ts import brace_warnings, parse_cpp, parse_cpp_methods
from apron.extractors.records import FactKind, Record
from apron.extractors.snapshot import Snapshot


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
    names = {n.arch: n.gguf_name for n in arch_name_rows(needed)}
    snapshot.read_text(ARCH_CPP)  # gguf_name comes from LLM_ARCH_NAMES: name it as a source
    rules, rule_warnings = sliding_window.sliding_window_rules(code, names)
    if pairs is None:
        braces = read_brace_warnings(snapshot, [model_cpp])
    else:  # a model file is checked as it was parsed: a method read on its own is balanced
        braces = read_brace_warnings(snapshot, [model_cpp, models_h]) + brace_warnings(
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
    names = {n.arch: n.gguf_name for n in arch_name_rows(needed)}
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
    "throws, with the condition they run under (an expression; $x is a local).",
)

TENSOR_SHAPES = FactKind(
    "tensor_shapes",
    "Tensor shapes per architecture (load_arch_tensors)",
    TensorShape,
    "every create_tensor of each architecture's load_arch_tensors: the GGUF tensor name, the "
    "dimensions it expects (expressions over llama_hparams and LLAMA_LOAD_LOCALS), whether "
    "the file must hold it, and the condition it is under; llama.cpp refuses another shape.",
)

HPARAMS_FORMULAS = FactKind(
    "hparams_formulas",
    "KV and state sizes per layer (llama_hparams)",
    HparamsFormula,
    "the branches of llama_hparams' sizing methods (n_embd_k_gqa, n_embd_v_gqa, n_embd_r, "
    "n_embd_s, has_kv, is_mla, ...): where the condition holds the method returns the value; "
    "both are expressions over llama_hparams members.",
)


RECURRENT_LAYERS = FactKind(
    "recurrent_layers",
    "Recurrent layers per architecture",
    RecurrentLayerRule,
    "per architecture whose hparams loader marks recurrent layers: the value given "
    "recurrent_layer_arr[il] (an expression in il), the loader's local integers and the GGUF "
    "keys that override them. Recurrent architectures not listed are recurrent in every layer "
    "(llm_arch_is_recurrent fills the array).",
)

SLIDING_WINDOW_FACT = FactExtractor(
    SLIDING_WINDOW,
    _sliding_window,
    reads=(MODEL_CPP, MODELS_H, f"{MODELS_DIR}/*.cpp", ARCH_CPP),
    needs=("arch_names",),
)

HPARAMS_FORMULAS_FACT = FactExtractor(HPARAMS_FORMULAS, _hparams_formulas, reads=(HPARAMS_CPP,))

HPARAMS_STEPS_FACT = FactExtractor(
    HPARAMS_STEPS,
    _hparams_steps,
    reads=(HPARAMS_H, HPARAMS_CPP, ARCH_CPP, MODEL_CPP, MODELS_H, f"{MODELS_DIR}/*.cpp"),
)

TENSOR_SHAPES_FACT = FactExtractor(
    TENSOR_SHAPES,
    _tensor_shapes,
    reads=(ARCH_CPP, MODEL_CPP, MODEL_H, MODELS_H, f"{MODELS_DIR}/*.cpp"),
    allow_empty=True,
)

RECURRENT_LAYERS_FACT = FactExtractor(
    RECURRENT_LAYERS,
    _recurrent_layers,
    reads=(MODEL_CPP, MODELS_H, f"{MODELS_DIR}/*.cpp", ARCH_CPP),
    needs=("arch_names",),
    allow_empty=True,
)
