"""Reviewer pages across engines: the index and the cross-engine matrix keyed by HF architecture.

Rendered from the same records as the modules (loaded back from generated/), so they are as
deterministic as the modules. Line numbers never appear in cells."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from extractors import families
from extractors.records import EngineFacts
from extractors.render import markdown_table

ENGINE_ORDER = ("vllm", "llamacpp", "sglang", "trtllm")
ENGINE_TITLES = {
    "vllm": "vLLM",
    "llamacpp": "llama.cpp",
    "sglang": "SGLang",
    "trtllm": "TensorRT-LLM",
}


@dataclass(frozen=True)
class MatrixCell:
    """What one engine says about one HF architecture."""

    status: str  # "registered", "registered*" (with a documented constraint)
    detail: str  # task group, GGUF arch, constraint text
    where: str  # path and symbol, no line numbers
    flags: tuple[str, ...] = ()


def _rows(facts: EngineFacts, fact: str) -> tuple:
    try:
        return facts.fact(fact).records
    except KeyError:
        return ()


def _vllm_cells(facts: EngineFacts) -> dict[str, MatrixCell]:
    cells = {}
    class_flags = families.vllm_architecture_flags(facts)
    for row in _rows(facts, "registry_rows"):
        detail = row.task_group + (f" ({row.section})" if row.section else "")
        if row.also_in:
            detail += "; also " + ", ".join(row.also_in)
        cells[row.architecture] = MatrixCell(
            "registered",
            detail,
            f"{row.path} {row.dict_name}",
            class_flags.get(row.architecture, ()),
        )
    return cells


def _generic_cells(facts: EngineFacts) -> dict[str, MatrixCell]:
    """Any fact whose records carry an `architecture` field (engines without a custom adapter)."""
    cells: dict[str, MatrixCell] = {}
    for result in facts.facts:
        if "architecture" not in result.kind.record.model_fields:
            continue
        for row in result.records:
            where = " ".join(
                str(getattr(row, f)) for f in ("path", "symbol") if getattr(row, f, "")
            )
            cells.setdefault(row.architecture, MatrixCell("registered", result.kind.title, where))
    return cells


CLASS_FLAGS = {
    "llm_arch_is_hybrid": "hybrid",
    "llm_arch_is_recurrent": "recurrent",
    "llm_arch_is_diffusion": "diffusion",
}


def _llamacpp_cells(facts: EngineFacts) -> dict[str, MatrixCell]:
    """The HF -> GGUF join, text rows (the language model) first; class flags from llama.cpp."""
    cells: dict[str, MatrixCell] = {}
    rows = sorted(_rows(facts, "hf_architectures"), key=lambda r: r.model_type != "text")
    for row in rows:
        if row.architecture in cells:
            continue
        if row.resolution != "resolved":
            cells[row.architecture] = MatrixCell(
                "converter registered", f"unresolved: {row.resolution}", f"{row.path} {row.symbol}"
            )
            continue
        flags = tuple(CLASS_FLAGS[p] for p in row.properties if p in CLASS_FLAGS)
        cells[row.architecture] = MatrixCell(
            "converts",
            f"GGUF {row.gguf_arch} ({row.model_type})",
            f"{row.path} {row.symbol}",
            flags,
        )
    return cells


def _sglang_cells(facts: EngineFacts) -> dict[str, MatrixCell]:
    mla = {r.architecture: r for r in _rows(facts, "mla_architectures")}
    mha = {r.architecture for r in _rows(facts, "explicit_mha_architectures")}
    set_flags = families.sglang_architecture_flags(facts)
    cells = {}
    for row in _rows(facts, "registry_rows"):
        flags = []
        if row.architecture in mla:
            flags.append("MLA if condition holds" if mla[row.architecture].conditional else "MLA")
        if row.architecture in mha:
            flags.append("MHA (explicit)")
        flags.extend(set_flags.get(row.architecture, ()))
        cells[row.architecture] = MatrixCell(
            "registered", row.module, f"{row.path} EntryClass", tuple(flags)
        )
    return cells


def _trtllm_cells(facts: EngineFacts) -> dict[str, MatrixCell]:
    """Registered via @register_auto_model; documented constraints (footnotes) make it `registered*`;
    the feature matrix's Sliding Window Attention column becomes a flag."""
    notes: dict[str, list[str]] = {}
    swa: dict[str, str] = {}
    for cell in _rows(facts, "feature_matrix"):
        if cell.feature.lower().startswith("sliding window"):
            swa[cell.architecture] = cell.status
        for note in (*cell.notes, *cell.row_notes):
            if note not in notes.setdefault(cell.architecture, []):
                notes[cell.architecture].append(note)
    for row in _rows(facts, "supported_models"):
        for note in row.architecture_notes:
            if note not in notes.setdefault(row.architecture, []):
                notes[row.architecture].append(note)
    cells = {}
    for row in _rows(facts, "registry_rows"):
        constraint = notes.get(row.architecture, [])
        flags = (f"SWA {swa[row.architecture]}",) if row.architecture in swa else ()
        detail = row.class_name + (": " + " / ".join(constraint) if constraint else "")
        cells[row.architecture] = MatrixCell(
            "registered*" if constraint else "registered",
            detail,
            f"{row.path} @register_auto_model",
            flags,
        )
    return cells


CELL_ADAPTERS: dict[str, Callable[[EngineFacts], dict[str, MatrixCell]]] = {
    "vllm": _vllm_cells,
    "llamacpp": _llamacpp_cells,
    "sglang": _sglang_cells,
    "trtllm": _trtllm_cells,
}


def engine_cells(facts: EngineFacts) -> dict[str, MatrixCell]:
    return CELL_ADAPTERS.get(facts.engine, _generic_cells)(facts)


def model_type_guess(architecture: str) -> str:
    """`DeepseekV4ForCausalLM` -> `deepseek_v4`: a guess from the name, labelled as such."""
    stem = re.sub(r"(For[A-Z]\w*|Model|LMHeadModel)$", "", architecture)
    stem = stem.replace("MoE", "Moe")
    words = re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+\d*|[A-Z]+\d*|\d+", stem)
    return "_".join(w.lower() for w in words)


def mla_disagreements(all_facts: Mapping[str, EngineFacts]) -> list[tuple[str, str, str, str]]:
    """(architecture, model_type guess, vLLM says, SGLang says) where the two differ.

    vLLM decides by model_type, SGLang by architecture; the join guesses the model_type from the
    architecture name, and the table says so."""
    vllm = all_facts.get("vllm")
    sglang = all_facts.get("sglang")
    if vllm is None or sglang is None:
        return []
    vllm_mla = {r.model_type for r in _rows(vllm, "mla_model_types") if r.scope == "main"}
    sglang_says = {
        r.architecture: "MLA" + (" (conditional)" if r.conditional else "")
        for r in _rows(sglang, "mla_architectures")
    }
    for row in _rows(sglang, "explicit_mha_architectures"):
        sglang_says.setdefault(row.architecture, "MHA (explicit)")
    out = []
    for arch, says in sorted(sglang_says.items()):
        guess = model_type_guess(arch)
        vllm_word = "MLA" if guess in vllm_mla else "not in the MLA list"
        if says.startswith("MLA") != (vllm_word == "MLA"):
            out.append((arch, guess, vllm_word, says))
    return out


def _short(where: str) -> str:
    """`a/b/registry.py _X` -> `registry.py _X`: the full path is on the engine's page."""
    path, _, symbol = where.partition(" ")
    return " ".join(p for p in (path.rsplit("/", 1)[-1], symbol) if p)


def render_matrix(all_facts: Mapping[str, EngineFacts]) -> str:
    engines = [e for e in ENGINE_ORDER if e in all_facts] + sorted(
        e for e in all_facts if e not in ENGINE_ORDER
    )
    cells = {e: engine_cells(all_facts[e]) for e in engines}
    architectures = sorted({a for per in cells.values() for a in per})
    lines = [
        "# Cross-engine compatibility matrix",
        "",
        "Generated by `extract`. Do not edit. One row per HF architecture; one column per "
        "engine at its pinned commit.",
        "",
    ]
    lines += markdown_table(
        ["engine", "commit", "date"],
        (
            (ENGINE_TITLES.get(e, e), f"`{all_facts[e].commit}`", all_facts[e].commit_date)
            for e in engines
        ),
    )
    missing = [ENGINE_TITLES.get(e, e) for e in ENGINE_ORDER if e not in all_facts]
    if missing:
        lines += ["", "No constraints extracted (every cell unknown): " + ", ".join(missing) + "."]
    lines += ["", *families.render_family_section(all_facts)]
    lines += [
        "## MLA disagreements",
        "",
        "SGLang decides MLA by architecture name, vLLM by the text config's `model_type`. "
        "The join guesses the `model_type` from the architecture name. Where the guess names "
        "a `model_type` vLLM lists, the disagreement is direct; otherwise vLLM's answer "
        "depends on the checkpoint's (text) `model_type`, which a wrapper or draft "
        "architecture does not carry in its name.",
        "",
    ]
    disagreements = mla_disagreements(all_facts)
    if disagreements:
        direct = [d for d in disagreements if d[2] == "MLA"]
        by_config = [d for d in disagreements if d[2] != "MLA"]
        if direct:
            lines += ["### Direct (the name matches a vLLM MLA model_type)", ""]
            lines += markdown_table(
                ["architecture", "model_type (guess)", "vLLM", "SGLang"], direct
            )
            lines.append("")
        if by_config:
            lines += ["### Depends on the checkpoint's model_type", ""]
            lines += markdown_table(
                ["architecture", "model_type (guess)", "vLLM", "SGLang"], by_config
            )
    else:
        lines.append(
            "None found."
            if "sglang" in all_facts
            else "Not computed: SGLang constraints are absent."
        )
    lines += [
        "",
        "## Matrix",
        "",
        "Cell: `status: detail [flags] (file symbol)`; the engine's page gives full paths "
        "and blob SHAs. `-` = not registered at that commit; `?` = no constraints for "
        "that engine. `registered*` = registered with a documented constraint.",
        "",
    ]
    headers = ["HF architecture", *[ENGINE_TITLES.get(e, e) for e in ENGINE_ORDER]]

    vllm_mla = (
        {r.model_type for r in _rows(all_facts["vllm"], "mla_model_types") if r.scope == "main"}
        if "vllm" in all_facts
        else set()
    )

    def cell(engine: str, arch: str) -> str:
        if engine not in all_facts:
            return "?"
        found = cells[engine].get(arch)
        if found is None:
            return "-"
        found_flags = found.flags
        if engine == "vllm" and model_type_guess(arch) in vllm_mla:
            found_flags = (*found_flags, f"MLA if model_type is {model_type_guess(arch)}")
        flags = f" [{', '.join(found_flags)}]" if found_flags else ""
        return f"{found.status}: {found.detail}{flags} ({_short(found.where)})"

    lines += markdown_table(
        headers, ([a, *[cell(e, a) for e in ENGINE_ORDER]] for a in architectures)
    )
    lines += ["", f"{len(architectures)} architectures.", ""]
    return "\n".join(lines)


def render_index(all_facts: Mapping[str, EngineFacts]) -> str:
    lines = [
        "# Generated engine constraints",
        "",
        "Generated by `extract`. Do not edit: run `extract --engine <id>` (or `extract bump`).",
        "",
        "- [Cross-engine compatibility matrix](MATRIX.md)",
        "",
    ]
    rows = []
    for engine in [e for e in ENGINE_ORDER if e in all_facts]:
        facts = all_facts[engine]
        counts = ", ".join(f"{r.kind.name} {len(r.records)}" for r in facts.facts)
        rows.append(
            (
                f"[{ENGINE_TITLES[engine]}]({engine}/README.md)",
                f"`{facts.commit}`",
                facts.commit_date,
                counts,
                len(facts.warnings),
            )
        )
    lines += markdown_table(["engine", "commit", "date", "facts", "warnings"], rows)
    absent = [ENGINE_TITLES[e] for e in ENGINE_ORDER if e not in all_facts]
    if absent:
        lines += ["", "Not extracted: " + ", ".join(absent) + "."]
    return "\n".join(lines) + "\n"


__all__ = ["MatrixCell", "mla_disagreements", "model_type_guess", "render_index", "render_matrix"]
