"""The HF architecture join: HF `architectures[0]` -> converter class -> gguf.MODEL_ARCH member
-> GGUF name (gguf-py constants) -> LLM_ARCH_* (LLM_ARCH_NAMES) -> class-set predicates.

Every registered HF architecture becomes a row; a row whose join stops somewhere says why in
`resolution` and is also a warning, never a silent drop."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from apron.extractors.llamacpp.converter import ROUTING_MAPS, Registration
from apron.extractors.llamacpp.records import ArchName, ClassSetMember, HfArchitecture
from apron.extractors.records import ExtractionWarning, warning

RESOLVED = "resolved"


def choose_registrations(
    found: Sequence[Registration],
    routes: Mapping[str, Mapping[str, str]],
    package: str,
    init_path: str,
) -> tuple[list[Registration], list[tuple[str, str, str]], list[ExtractionWarning]]:
    """One registration per (HF architecture, model type), as the converter would pick it.

    With routing maps (the conversion/ package), the module a map routes an architecture to is
    the one imported, so its registration wins; otherwise the later registration wins (it
    overwrites the registry dict). Returns the winners, the routed-but-unregistered entries
    (hf, model type, routed module) and warnings."""
    warnings: list[ExtractionWarning] = []
    grouped: dict[tuple[str, str], list[Registration]] = {}
    for registration in found:
        grouped.setdefault((registration.architecture, registration.model_type), []).append(
            registration
        )
    winners: list[Registration] = []
    for (hf, model_type), candidates in grouped.items():
        routed = routes.get(model_type, {}).get(hf)
        pick = candidates[-1]
        if routed is not None:
            in_routed = [c for c in candidates if c.module == f"{package}.{routed}"]
            if in_routed:
                pick = in_routed[-1]
        if len(candidates) > 1:
            others = ", ".join(
                f"{c.converter_class} ({c.path})" for c in candidates if c is not pick
            )
            warnings.append(
                warning(
                    "registered-twice",
                    f"{hf}/{model_type}",
                    f"{hf} ({model_type}) is registered by {pick.converter_class} ({pick.path}) and by "
                    f"{others}; the join uses {pick.converter_class}",
                    pick.path,
                    pick.converter_class,
                )
            )
        winners.append(pick)
    unregistered: list[tuple[str, str, str]] = []
    if routes:
        registered = {(r.architecture, r.model_type): r for r in winners}
        for model_type, table in sorted(routes.items()):
            map_name = ROUTING_MAPS[model_type]
            for hf, module in sorted(table.items()):
                registration = registered.get((hf, model_type))
                if registration is None:
                    unregistered.append((hf, model_type, module))
                elif registration.module != f"{package}.{module}":
                    warnings.append(
                        warning(
                            "routed-elsewhere",
                            f"{hf}/{model_type}",
                            f"{map_name} routes {hf} to {package}/{module}.py but "
                            f"{registration.path} registers it; get_model_class finds it only if that "
                            "module was imported",
                            init_path,
                            map_name,
                        )
                    )
            for registration in winners:
                if registration.model_type == model_type and registration.architecture not in table:
                    warnings.append(
                        warning(
                            "unrouted",
                            f"{registration.architecture}/{model_type}",
                            f"{registration.path} registers {registration.architecture} "
                            f"({model_type}) but {map_name} has no entry for it, so get_model_class "
                            "cannot reach it",
                            init_path,
                            map_name,
                        )
                    )
    return winners, unregistered, warnings


def join(
    winners: Sequence[Registration],
    unregistered: Sequence[tuple[str, str, str]],
    gguf_names: Mapping[str, str],
    constants_path: str,
    arch_names: Sequence[ArchName],
    members: Sequence[ClassSetMember],
    package: str,
    init_path: str,
) -> tuple[list[HfArchitecture], list[ExtractionWarning]]:
    """The join rows and a warning for every row that does not resolve."""
    by_gguf = {a.gguf_name: a.arch for a in arch_names}
    properties: dict[str, list[str]] = {}
    for member in members:
        properties.setdefault(member.arch, []).append(member.predicate)
    rows: list[HfArchitecture] = []
    for registration in winners:
        resolution = registration.problem or RESOLVED
        gguf = gguf_names.get(registration.model_arch, "") if registration.model_arch else ""
        llm = by_gguf.get(gguf, "") if gguf else ""
        if resolution == RESOLVED and not gguf:
            resolution = (
                f"MODEL_ARCH.{registration.model_arch} has no MODEL_ARCH_NAMES entry "
                f"in {constants_path}"
            )
        elif resolution == RESOLVED and not llm:
            resolution = (
                f"GGUF name {gguf!r} has no LLM_ARCH_NAMES entry: llama.cpp cannot "
                "load what the converter writes"
            )
        runtime = tuple(
            sorted(
                {gguf_names.get(a, f"MODEL_ARCH.{a} (no name)") for a in registration.runtime_archs}
                - {gguf}
            )
        )
        rows.append(
            HfArchitecture(
                architecture=registration.architecture,
                model_type=registration.model_type,
                converter_class=registration.converter_class,
                model_arch=registration.model_arch,
                model_arch_from=registration.model_arch_from,
                converter_mro=registration.mro,
                gguf_arch=gguf,
                llm_arch=llm,
                runtime_gguf_archs=runtime,
                properties=tuple(sorted(properties.get(llm, []))) if resolution == RESOLVED else (),
                resolution=resolution,
                path=registration.path,
                symbol=registration.converter_class,
            )
        )
    for hf, model_type, module in unregistered:
        map_name = ROUTING_MAPS[model_type]
        rows.append(
            HfArchitecture(
                architecture=hf,
                model_type=model_type,
                converter_class="",
                model_arch="",
                model_arch_from="",
                converter_mro=(),
                gguf_arch="",
                llm_arch="",
                runtime_gguf_archs=(),
                properties=(),
                resolution=(
                    f"{map_name} routes it to {package}/{module}.py, which does not register "
                    "it: conversion fails"
                ),
                path=init_path,
                symbol=map_name,
            )
        )
    warnings = [
        warning(
            "unresolved",
            f"{row.architecture}/{row.model_type}",
            f"{row.architecture} ({row.model_type}): {row.resolution}",
            row.path,
            row.symbol,
        )
        for row in rows
        if row.resolution != RESOLVED
    ]
    return rows, warnings
