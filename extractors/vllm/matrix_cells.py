"""vLLM's cells of the cross-engine matrix: registered architectures, their task group, the
class flags set on their model class, and a flag where the architecture's name suggests a
model_type that is_deepseek_mla() lists."""

from __future__ import annotations

from apron.extractors.engine_api import MatrixCell
from apron.extractors.family_cells import model_type_guess
from apron.extractors.records import EngineFacts
from apron.extractors.vllm.records import MlaModelType, RegistryRow

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
    rules = facts.records("attn_type_rule")
    encoder_only_pooling = set(rules[0].encoder_only_seq_pooling_types) if rules else set()
    for row in facts.records("model_class_flags"):
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


def main_mla_model_types(facts: EngineFacts) -> set[str]:
    """The model types is_deepseek_mla() lists for the main model (not EAGLE inner models)."""
    return {
        r.model_type
        for r in facts.records("mla_model_types")
        if isinstance(r, MlaModelType) and r.scope == "main"
    }


def matrix_cells(facts: EngineFacts) -> dict[str, MatrixCell]:
    mla = main_mla_model_types(facts)
    class_flags = vllm_architecture_flags(facts)
    cells = {}
    for row in facts.records("registry_rows"):
        assert isinstance(row, RegistryRow)
        detail = row.task_group + (f" ({row.section})" if row.section else "")
        if row.also_in:
            detail += "; also " + ", ".join(row.also_in)
        guess = model_type_guess(row.architecture)
        flags = class_flags.get(row.architecture, ())
        if guess in mla:
            flags = (*flags, f"MLA if model_type is {guess}")
        cells[row.architecture] = MatrixCell(
            "registered", detail, f"{row.path} {row.dict_name}", flags
        )
    return cells


def mla_verdicts(facts: EngineFacts) -> dict[str, str]:
    """model_type -> vLLM's MLA answer in words: vLLM decides MLA by the text config's model_type
    (the main-model list of is_deepseek_mla)."""
    return {model_type: "MLA" for model_type in main_mla_model_types(facts)}
