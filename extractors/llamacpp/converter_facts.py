"""llama.cpp's converter facts: the HF architectures convert_hf_to_gguf registers, the GGUF
writer's keys, and the hyperparameters each converter class writes."""

from __future__ import annotations

from collections.abc import Mapping

from apron.extractors.engine_api import FactExtractor, FactOutput
from apron.extractors.llamacpp import (
    converter,
    converter_hparams,
    hf_join,
)
from apron.extractors.llamacpp.layout import (
    ARCH_CPP,
    CONVERTER_PACKAGE,
    CONVERTER_PACKAGE_INIT,
    CONVERTER_READS,
    CONVERTER_SCRIPT,
    GGUF_CONSTANTS,
    GGUF_WRITER,
    REGISTER_ANCHOR,
    arch_name_rows,
)
from apron.extractors.llamacpp.records import (
    ClassSetMember,
    ConverterHparams,
    GgufWriterKey,
    HfArchitecture,
)
from apron.extractors.records import FactKind, Record, SupportScan, warning
from apron.extractors.snapshot import Snapshot


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
        winners,
        unregistered,
        gguf_names,
        constants,
        arch_name_rows(needed),
        members,
        package,
        init_path,
    )
    return FactOutput(tuple(rows), (*warnings, *choose_warnings, *name_warnings, *join_warnings))


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


HF_ARCHITECTURES = FactKind(
    "hf_architectures",
    "HF architecture -> GGUF architecture",
    HfArchitecture,
    "every HF architecture the converter registers, joined through its converter class's "
    "model_arch (own or inherited) to the GGUF name, the LLM_ARCH_* value and the class-set "
    "predicates that return true for it; unresolved rows say why.",
    support=SupportScan("architecture", "registry"),
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

HF_ARCHITECTURES_FACT = FactExtractor(
    HF_ARCHITECTURES,
    _hf_architectures,
    reads=(*CONVERTER_READS, GGUF_CONSTANTS, ARCH_CPP),
    needs=("arch_names", "class_set_members"),
)

GGUF_WRITER_KEYS_FACT = FactExtractor(
    GGUF_WRITER_KEYS, _gguf_writer_keys, reads=(GGUF_CONSTANTS, GGUF_WRITER)
)

CONVERTER_HPARAMS_FACT = FactExtractor(
    CONVERTER_HPARAMS, _converter_hparams, reads=CONVERTER_READS, allow_empty=True
)
