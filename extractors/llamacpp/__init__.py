"""llama.cpp: architecture names, the architecture class sets (recurrent, hybrid, diffusion, ...),
the HF architecture -> GGUF architecture join, and sliding-window rules per architecture."""

from __future__ import annotations

from collections.abc import Mapping

from apron.extractors.llamacpp import (
    class_sets,
    converter,
    families,
    hf_join,
    matrix_cells,
    sliding_window,
    support,
)
from apron.extractors.llamacpp.arch_names import arch_names
from apron.extractors.llamacpp.records import (
    ArchName,
    ClassPredicate,
    ClassSetListed,
    ClassSetMember,
    HfArchitecture,
    SlidingWindowRule,
)
from apron.extractors.parsing.cpp_ts import brace_warnings, parse_cpp, parse_cpp_methods
from apron.extractors.records import FactKind, Record, SupportScan
from apron.extractors.runner.base import EngineSpec, FactExtractor, FactOutput
from apron.extractors.snapshot import Snapshot

ARCH_CPP = "src/llama-arch.cpp"
ARCH_H = "src/llama-arch.h"
MODEL_CPP = "src/llama-model.cpp"
MODELS_DIR = "src/models"
MODELS_H = "src/models/models.h"
GGUF_CONSTANTS = "gguf-py/gguf/constants.py"
# Converter layouts, newest first: since 2026-05-15 the classes live in the conversion/ package
# (conversion/__init__.py routes HF architectures to modules); before, in one script.
CONVERTER_PACKAGE = "conversion"
CONVERTER_PACKAGE_INIT = "conversion/__init__.py"
CONVERTER_SCRIPT = "convert_hf_to_gguf.py"
REGISTER_ANCHOR = "@ModelBase.register(...) classes"


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
                converter.read_module(
                    snapshot.read_text(path), path, name, CONVERTER_PACKAGE, counter, warnings
                )
            )
        return modules, CONVERTER_PACKAGE, CONVERTER_PACKAGE_INIT
    path = snapshot.first_existing(
        [CONVERTER_PACKAGE_INIT, CONVERTER_SCRIPT], anchor=REGISTER_ANCHOR
    )
    module = converter.read_module(
        snapshot.read_text(path), path, "convert_hf_to_gguf", "", counter, warnings
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
    ),
)
