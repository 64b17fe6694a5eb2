"""The family x engine table that opens MATRIX.md: which architectures each engine puts in
each architecture family, derived only from that engine's extracted facts by stated rules.

A family cell is the architectures the engine registers (or converts) whose facts meet the
rule, with a trace (path, symbol). A family for which an engine has no extracted fact says so;
an engine without generated constraints is `?` everywhere."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from apron.extractors.records import EngineFacts
from apron.extractors.report.markdown import markdown_table

FAMILIES = (
    "dense",
    "MLA",
    "sliding window",
    "hybrid attention+SSM",
    "SSM",
    "recurrent",
    "diffusion",
    "encoder-decoder",
    "multimodal",
    "pooling",
    "cross-encoder",
    "late interaction",
)
ENGINE_ORDER = ("vllm", "llamacpp", "sglang", "trtllm")
ENGINE_TITLES = {
    "vllm": "vLLM",
    "llamacpp": "llama.cpp",
    "sglang": "SGLang",
    "trtllm": "TensorRT-LLM",
}


@dataclass
class FamilyCell:
    """The architectures one engine puts in one family, with where the rule reads them."""

    members: set[str] = field(default_factory=set)
    traces: set[str] = field(default_factory=set)
    no_rule: str = ""  # why the engine's facts cannot place architectures in this family
    conditional: set[str] = field(default_factory=set)  # members only under an extra condition

    def add(self, architecture: str, trace: str, *, conditional: bool = False) -> None:
        self.members.add(architecture)
        self.traces.add(trace)
        if conditional:
            self.conditional.add(architecture)


def _rows(facts: EngineFacts, fact: str) -> tuple:
    try:
        return facts.fact(fact).records
    except KeyError:
        return ()


def _cells(no_rule: Mapping[str, str]) -> dict[str, FamilyCell]:
    return {family: FamilyCell(no_rule=no_rule.get(family, "")) for family in FAMILIES}


# ------------------------------------------------------------------ vLLM

VLLM_RULES = (
    (
        "dense",
        "a text-generation class (`is_text_generation_model`) with `attn_type` decoder "
        "that is in no other family below",
    ),
    (
        "MLA",
        "a text-generation class whose model_type, guessed from the architecture name, is "
        "in `is_deepseek_mla`'s list (vLLM decides by the config's model_type)",
    ),
    (
        "sliding window",
        "no per-architecture rule: vLLM reads `sliding_window` / `layer_types` from each config",
    ),
    ("hybrid attention+SSM", "`is_hybrid` (the class has `IsHybrid` in its MRO)"),
    ("SSM", "`is_attention_free` and `has_inner_state`"),
    ("recurrent", "no class of its own: an attention-free class with inner state is SSM"),
    ("diffusion", "no class flag"),
    ("encoder-decoder", "the registry files the row under `# [Encoder-decoder]`"),
    ("multimodal", "`supports_multimodal`"),
    (
        "pooling",
        "a pooling class (`is_pooling_model`, or no `is_text_generation_model`: vLLM "
        "converts it) with `score_type` bi-encoder, or a row the registry files in "
        "`_EMBEDDING_MODELS` (a generation class vLLM converts)",
    ),
    ("cross-encoder", "`score_type` cross-encoder (`SupportsCrossEncoding` in the MRO)"),
    ("late interaction", "`score_type` late-interaction (`SupportsLateInteraction`)"),
)


EMBEDDING_DICT = "_EMBEDDING_MODELS"


def model_type_guess(architecture: str) -> str:
    from apron.extractors.vllm.matrix_cells import model_type_guess as guess

    return guess(architecture)


def vllm_families(facts: EngineFacts) -> dict[str, FamilyCell]:
    cells = _cells({f: r for f, r in VLLM_RULES if r.startswith("no ")})
    flags = {r.architecture: r for r in _rows(facts, "model_class_flags")}
    registry = {r.architecture: r for r in _rows(facts, "registry_rows")}
    mla_rows = [r for r in _rows(facts, "mla_model_types") if r.scope == "main"]
    mla = {r.model_type: r for r in mla_rows}
    if not flags:
        for cell in cells.values():
            cell.no_rule = cell.no_rule or "model_class_flags not extracted"
        return cells
    for arch, row in flags.items():
        if row.status != "resolved":
            continue
        where = f"{registry[arch].path if arch in registry else row.path} _ModelInfo.from_model_cls"
        placed = []
        if row.is_hybrid:
            placed.append(("hybrid attention+SSM", f"{where} is_hybrid"))
        if row.is_attention_free and row.has_inner_state:
            placed.append(("SSM", f"{where} is_attention_free, has_inner_state"))
        if row.supports_multimodal:
            placed.append(("multimodal", f"{where} supports_multimodal"))
        section = registry[arch].section if arch in registry else ""
        if "encoder-decoder" in section.lower():
            placed.append(("encoder-decoder", f"{registry[arch].path} # [{section}]"))
        pooling = row.is_pooling_model or row.is_text_generation_model is False
        if pooling and row.score_type == "cross-encoder":
            placed.append(("cross-encoder", f"{where} score_type"))
        elif pooling and row.score_type == "late-interaction":
            placed.append(("late interaction", f"{where} score_type"))
        elif pooling:
            placed.append(("pooling", f"{where} is_pooling_model"))
        elif arch in registry and registry[arch].dict_name == EMBEDDING_DICT:
            placed.append(("pooling", f"{registry[arch].path} {EMBEDDING_DICT}"))
            if "text-generation" in registry[arch].also_in and len(placed) == 1:
                placed.append(("dense", f"{registry[arch].path} _TEXT_GENERATION_MODELS"))
        guess = model_type_guess(arch)
        if row.is_text_generation_model and guess in mla:
            placed.append(("MLA", f"{mla[guess].path} {mla[guess].symbol}"))
        for family, trace in placed:
            cells[family].add(arch, trace)
        if (
            not placed
            and row.is_text_generation_model
            and row.attn_type == "decoder"
            and not row.is_attention_free
        ):
            cells["dense"].add(arch, f"{where} is_text_generation_model, attn_type")
    return cells


# ------------------------------------------------------------------ llama.cpp

LLAMACPP_RULES = (
    (
        "dense",
        "a converted text architecture with no class predicate below and no sliding-window type",
    ),
    ("MLA", "no MLA fact is extracted for llama.cpp"),
    (
        "sliding window",
        "its GGUF architecture's hparams loader assigns a LLAMA_SWA_TYPE other "
        "than none (`sliding_window` fact)",
    ),
    ("hybrid attention+SSM", "`llm_arch_is_hybrid`"),
    ("SSM", "no class of its own: SSM architectures are in `llm_arch_is_recurrent` (recurrent)"),
    ("recurrent", "`llm_arch_is_recurrent`"),
    ("diffusion", "`llm_arch_is_diffusion`"),
    ("encoder-decoder", "no encoder-decoder fact is extracted for llama.cpp"),
    ("multimodal", "the converter also registers the architecture for an mmproj file"),
    ("pooling", "no pooling fact is extracted for llama.cpp"),
    ("cross-encoder", "no pooling fact is extracted for llama.cpp"),
    ("late interaction", "no pooling fact is extracted for llama.cpp"),
)
LLAMACPP_CLASSES = {
    "llm_arch_is_hybrid": "hybrid attention+SSM",
    "llm_arch_is_recurrent": "recurrent",
    "llm_arch_is_diffusion": "diffusion",
}


def llamacpp_families(facts: EngineFacts) -> dict[str, FamilyCell]:
    cells = _cells({f: r for f, r in LLAMACPP_RULES if r.startswith("no ")})
    windowed = {
        r.gguf_name: r
        for r in _rows(facts, "sliding_window")
        if any(t != "none" for t in r.swa_types)
    }
    members = {(r.predicate, r.gguf_name): r for r in _rows(facts, "class_set_members")}
    text: dict[str, object] = {}
    for row in _rows(facts, "hf_architectures"):
        if row.resolution != "resolved":
            continue
        if row.model_type == "mmproj":
            cells["multimodal"].add(row.architecture, f"{row.path} {row.symbol}")
        elif row.model_type == "text":
            text[row.architecture] = row
    for arch, row in text.items():
        placed = False
        for predicate in row.properties:
            family = LLAMACPP_CLASSES.get(predicate)
            if family is None:
                continue
            member = members.get((predicate, row.gguf_arch))
            trace = f"{member.path} {member.symbol}" if member else predicate
            cells[family].add(arch, trace)
            placed = True
        if row.gguf_arch in windowed:
            rule = windowed[row.gguf_arch]
            cells["sliding window"].add(arch, f"{rule.path} {rule.symbol}")
            placed = True
        if not placed:
            cells["dense"].add(arch, f"{row.path} {row.symbol}")
    return cells


# ------------------------------------------------------------------ SGLang

SGLANG_RULES = (
    (
        "dense",
        "registered (EntryClass) and in none of the name sets below (hybrids, which SGLang "
        "decides by config class, can be among them)",
    ),
    ("MLA", "an MLA branch of the attention-arch chain (`mla_architectures`)"),
    (
        "sliding window",
        "`is_hybrid_swa_model` (a window-aware pool); other windowed "
        "architectures are allocated at full context",
    ),
    (
        "hybrid attention+SSM",
        "decided by config class (`hybrid_arch.py`), not by architecture name",
    ),
    ("SSM", "decided by config class (`hybrid_arch.py`), not by architecture name"),
    ("recurrent", "no set"),
    ("diffusion", "no set in model_config.py"),
    ("encoder-decoder", "`is_encoder_decoder_model`"),
    ("multimodal", "`is_multimodal_model`"),
    ("pooling", "listed as not generating in `is_generation_model`"),
    ("cross-encoder", "`is_cross_encoding_pooler_model`"),
    ("late interaction", "no set"),
)
SGLANG_SETS = {
    "is_hybrid_swa_model": "sliding window",
    "is_encoder_decoder_model": "encoder-decoder",
    "is_multimodal_model": "multimodal",
    "is_cross_encoding_pooler_model": "cross-encoder",
}


def sglang_families(facts: EngineFacts) -> dict[str, FamilyCell]:
    cells = _cells(
        {f: r for f, r in SGLANG_RULES if r.startswith(("no ", "decided by config class"))}
    )
    registered = {r.architecture for r in _rows(facts, "registry_rows")}
    sets = _rows(facts, "architecture_sets")
    if not sets:
        for family in SGLANG_SETS.values():
            cells[family].no_rule = "architecture_sets not extracted at this commit"
        cells["pooling"].no_rule = "architecture_sets not extracted at this commit"
    placed: set[str] = set()
    for row in sets:
        family = SGLANG_SETS.get(row.set_name)
        if row.set_name == "is_generation_model" and row.member_returns is False:
            family = "pooling"
        if family is None or row.architecture == "*":
            continue
        conditional = getattr(row, "condition", None) is not None
        cells[family].add(row.architecture, f"{row.path} {row.symbol}", conditional=conditional)
        placed.add(row.architecture)
    cells["pooling"].members -= cells["cross-encoder"].members  # a cross-encoder also pools
    for row in _rows(facts, "mla_architectures"):
        cells["MLA"].add(row.architecture, f"{row.path} {row.symbol}", conditional=row.conditional)
        placed.add(row.architecture)
    if sets:
        path = next((r.path for r in _rows(facts, "registry_rows")), "")
        for arch in registered - placed:
            cells["dense"].add(arch, f"{path} EntryClass" if path else "EntryClass")
    else:
        cells["dense"].no_rule = "architecture_sets not extracted: dense is not separable"
    return cells


# ------------------------------------------------------------------ TensorRT-LLM

TRTLLM_RULES = (
    ("sliding window", "the feature matrix's Sliding Window Attention cell is Yes"),
    (
        "other families",
        "no per-architecture class is extracted (only the registry and the feature matrix)",
    ),
)


def trtllm_families(facts: EngineFacts) -> dict[str, FamilyCell]:
    cells = _cells({f: "no per-architecture class is extracted" for f in FAMILIES})
    cells["sliding window"].no_rule = ""
    for cell in _rows(facts, "feature_matrix"):
        if cell.feature.lower().startswith("sliding window") and cell.status.lower() == "yes":
            cells["sliding window"].add(cell.architecture, f"{cell.path} {cell.feature}")
    return cells


FAMILY_RULES: dict[str, tuple[Callable[[EngineFacts], dict[str, FamilyCell]], tuple]] = {
    "vllm": (vllm_families, VLLM_RULES),
    "llamacpp": (llamacpp_families, LLAMACPP_RULES),
    "sglang": (sglang_families, SGLANG_RULES),
    "trtllm": (trtllm_families, TRTLLM_RULES),
}


def engine_families(facts: EngineFacts) -> dict[str, FamilyCell]:
    function, _ = FAMILY_RULES[facts.engine]
    return function(facts)


def _cell_text(cell: FamilyCell) -> str:
    if not cell.members:
        return f"- ({cell.no_rule})" if cell.no_rule else "0"
    names = ", ".join(a + ("*" if a in cell.conditional else "") for a in sorted(cell.members))
    traces = "; ".join(sorted(cell.traces)[:3]) + (" ..." if len(cell.traces) > 3 else "")
    return f"**{len(cell.members)}** ({traces}) <details><summary>names</summary>{names}</details>"


def render_family_section(all_facts: Mapping[str, EngineFacts]) -> list[str]:
    """The `## Families` section: the rules per engine, then the family x engine table."""
    engines = [e for e in ENGINE_ORDER if e in all_facts]
    lines = [
        "## Families",
        "",
        "Each cell: the number of architectures the engine's extracted facts put in the family, "
        "their names (folded: open `names`), and where the rule reads them (path, symbol; a cell with many sources "
        "shows the first three). `-` with a reason: that engine has no extracted fact for the "
        "family. `?`: no constraints extracted for the engine. `*`: only when an extra "
        "condition holds (the engine's page gives it). An architecture can be in several "
        "families. The rules:",
        "",
    ]
    for engine in ENGINE_ORDER:
        _, rules = FAMILY_RULES[engine]
        lines.append(
            f"- **{ENGINE_TITLES[engine]}**: " + "; ".join(f"{f}: {r}" for f, r in rules) + "."
        )
    lines.append("")
    per_engine = {e: engine_families(all_facts[e]) for e in engines}
    rows = []
    for family in FAMILIES:
        row = [family]
        for engine in ENGINE_ORDER:
            row.append(_cell_text(per_engine[engine][family]) if engine in per_engine else "?")
        rows.append(row)
    lines += markdown_table(["family", *(ENGINE_TITLES[e] for e in ENGINE_ORDER)], rows)
    lines.append("")
    return lines


VLLM_FLAG_WORDS = (
    ("is_hybrid", "hybrid"),
    ("is_attention_free", "attention-free"),
    ("has_inner_state", "inner state"),
    ("supports_multimodal", "multimodal"),
    ("is_pooling_model", "pooling"),
    ("supports_transcription", "transcription"),
    ("supports_pp", "PP"),
    ("supports_lora", "LoRA"),
    ("supports_eagle", "EAGLE"),
    ("supports_eagle3", "EAGLE-3"),
    ("supports_quant", "SupportsQuant"),
)


def vllm_architecture_flags(facts: EngineFacts) -> dict[str, tuple[str, ...]]:
    """Per architecture, the vLLM class flags that are set, in words, for the matrix rows."""
    found: dict[str, tuple[str, ...]] = {}
    rules = _rows(facts, "attn_type_rule")
    encoder_only_pooling = set(rules[0].encoder_only_seq_pooling_types) if rules else set()
    for row in _rows(facts, "model_class_flags"):
        if row.status != "resolved":
            found[row.architecture] = ("class unresolved",)
            continue
        words = [word for name, word in VLLM_FLAG_WORDS if getattr(row, name) is True]
        pooling_run = row.is_pooling_model or row.is_text_generation_model is False
        if row.attn_type and row.attn_type != "decoder":
            words.insert(0, f"attn_type {row.attn_type}")
        elif pooling_run and row.default_seq_pooling_type in encoder_only_pooling:
            words.insert(0, f"encoder-only run ({row.default_seq_pooling_type} pooling)")
        if row.score_type and row.score_type != "bi-encoder":
            words.append(row.score_type)
        unknown = [
            name for name in ("is_hybrid", "is_attention_free") if getattr(row, name) is None
        ]
        if unknown:
            words.append("unknown: " + ", ".join(unknown))
        found[row.architecture] = tuple(words)
    return found


def sglang_architecture_flags(facts: EngineFacts) -> dict[str, tuple[str, ...]]:
    """Per architecture, the model_config.py sets that name it."""
    found: dict[str, list[str]] = {}
    for row in _rows(facts, "architecture_sets"):
        if row.architecture == "*":
            continue
        word = row.set_name if row.member_returns else f"not {row.set_name}"
        found.setdefault(row.architecture, []).append(word)
    return {a: tuple(sorted(set(w))) for a, w in found.items()}
