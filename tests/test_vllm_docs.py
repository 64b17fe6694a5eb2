"""vLLM supported-model docs tables: rows, sections, marks, bad input, findings."""

from __future__ import annotations

import pytest

from apron.extractors.engines import ENGINES
from apron.extractors.errors import AnchorError, MissingPathError
from apron.extractors.parsing.markdown import parse_document
from apron.extractors.runner.base import extract_engine
from apron.extractors.snapshot import MemorySnapshot
from apron.extractors.vllm.docs_tables import page_rows
from tests.vllm_miniatures import REGISTRY_PATH, REGISTRY_V1, tree_v1

VLLM = ENGINES["vllm"]
SUPPORTED = "docs/models/supported_models.md"
POOLING = "docs/models/pooling_models"

SUPPORTED_2026 = """# Supported Models

## Model Implementation

### Transformers

```python
# Only do this for mixture-of-experts models
| a fenced | pipe line |
|----------|-----------|
```

### Plugins

| Architecture | Models | Plugin Repository |
|--------------|--------|-------------------|
| `BartForConditionalGeneration` | BART | [bart-plugin](https://example.invalid) |

## Feature Status Legend

- ✅︎ indicates that the feature is supported for the model.

## List of Text-only Language Models

### Generative Models

#### Text Generation

<style>
th {
  white-space: nowrap;
}
</style>

| Architecture | Models | Example HF Models | [LoRA](../features/lora.md) | [PP](../serving/parallelism_scaling.md) |
| ------------ | ------ | ----------------- | -------------------- | ------------------------- |
| `LlamaForCausalLM` | Llama 3.1, Llama 3 | `meta-llama/Meta-Llama-3.1-8B`, etc. | ✅︎ | ✅︎ |
| `ChatGLMModel`, `ChatGLMForConditionalGeneration` | ChatGLM | `zai-org/chatglm2-6b` | ✅ | 🚧 |
| `DeepseekV3ForCausalLM` | DeepSeek-V3 | `deepseek-ai/DeepSeek-V3` | ⚠️ | maybe |
| `AfmoeForCausalLM` | Afmoe | TBA | ✅︎ |

## List of Multimodal Language Models

### Generative Models

#### Text Generation

| Architecture | Models | Inputs | Example HF Models | [LoRA](../features/lora.md) | [PP](../serving/parallelism_scaling.md) |
| ------------ | ------ | ------ | ----------------- | -------------------- | ------------------------- |
| `LlavaForConditionalGeneration` | LLaVA-1.5 | T + I<sup>E+</sup> | `llava-hf/llava-1.5-7b-hf` | ✅︎ | ✅︎ |
| `Qwen2VlForConditionalGeneration` | Qwen2-VL | T + I<sup>E+</sup> + V<sup>E+</sup> | `Qwen/Qwen2-VL-7B-Instruct` | ✅︎ | ✅︎ |
"""

EMBED_2026 = """# Embedding Usages

## Supported Models

### Text-only Models

| Architecture | Models | Example HF Models | [LoRA](../../features/lora.md) | [PP](../../serving/parallelism_scaling.md) |
| ------------ | ------ | ----------------- | ------------------------------ | ------------------------------------------ |
| `BertModel` | BERT-based | `BAAI/bge-base-en-v1.5`, etc. | | |
| `Qwen3Model`<sup>C</sup>, `Qwen3ForCausalLM`<sup>C</sup> | Qwen3-based | `Qwen/Qwen3-Embedding-0.6B`, etc. | ✅︎ | ✅︎ |
| `*Model`<sup>C</sup>, `*ForCausalLM`<sup>C</sup>, etc. | Generative models | N/A | \\* | \\* |

<sup>C</sup> Automatically converted into an embedding model via `--convert embed`.
"""

README_2026 = """# Pooling Models

### Model Conversion

| Architecture                                    | `--convert` | Supported pooling tasks      |
|-------------------------------------------------|-------------|------------------------------|
| `*ForTextEncoding`, `*EmbeddingModel`, `*Model` | `embed`     | `token_embed`, `embed`       |
"""

REGISTRY = """
_TEXT_GENERATION_MODELS = {
    # [Decoder-only]
    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
    "ChatGLMModel": ("chatglm", "ChatGLMForCausalLM"),
    "DeepseekV3ForCausalLM": ("deepseek_v2", "DeepseekV3ForCausalLM"),
    "MptForCausalLM": ("mpt", "MPTForCausalLM"),
}
_EMBEDDING_MODELS = {
    "BertModel": ("bert", "BertEmbeddingModel"),
}
_MULTIMODAL_MODELS = {
    "LlavaForConditionalGeneration": ("llava", "LlavaForConditionalGeneration"),
    "Qwen2VLForConditionalGeneration": ("qwen2_vl", "Qwen2VLForConditionalGeneration"),
}
_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
    **_EMBEDDING_MODELS,
    **_MULTIMODAL_MODELS,
}
"""


def tree_2026() -> dict[str, str]:
    return {
        REGISTRY_PATH: REGISTRY,
        SUPPORTED: SUPPORTED_2026,
        f"{POOLING}/README.md": README_2026,
        f"{POOLING}/embed.md": EMBED_2026,
    }


def extract(files):
    return extract_engine(
        VLLM,
        MemorySnapshot(files, engine="vllm"),
        commit_date="2026-05-19",
        only={"registry_rows", "docs_table_rows", "docs_registry_findings"},
    )


def rows_by_arch(facts):
    return {r.architectures: r for r in facts.fact("docs_table_rows").records}


def test_rows_sections_examples_and_marks():
    facts = extract(tree_2026())
    rows = rows_by_arch(facts)
    llama = rows[("LlamaForCausalLM",)]
    assert llama.path == SUPPORTED
    assert (
        llama.section == "List of Text-only Language Models > Generative Models > Text Generation"
    )
    assert llama.models == "Llama 3.1, Llama 3"
    assert llama.example_hf_models == ("meta-llama/Meta-Llama-3.1-8B",)
    assert llama.features == ("LoRA=yes", "PP=yes")
    assert rows[("ChatGLMModel", "ChatGLMForConditionalGeneration")].features == (
        "LoRA=yes",
        "PP=planned",
    )  # ✅ without the variation selector is the same mark
    llava = rows[("LlavaForConditionalGeneration",)]
    assert llava.section.startswith("List of Multimodal Language Models")
    assert llava.inputs == "T + I^E+"
    assert rows[("Qwen2VlForConditionalGeneration",)].inputs == "T + I^E+ + V^E+"
    plugin = rows[("BartForConditionalGeneration",)]
    assert plugin.section == "Model Implementation > Plugins"
    assert plugin.other_columns == ("Plugin Repository=bart-plugin",)


def test_pooling_pages_marks_and_patterns():
    facts = extract(tree_2026())
    rows = rows_by_arch(facts)
    qwen3 = rows[("Qwen3Model", "Qwen3ForCausalLM")]
    assert qwen3.path == f"{POOLING}/embed.md"
    assert qwen3.section == "Supported Models > Text-only Models"
    assert qwen3.architecture_marks == ("C", "C")
    assert rows[("BertModel",)].features == ("LoRA=no", "PP=no")
    pattern = rows[("*Model", "*ForCausalLM")]
    assert pattern.features == ("LoRA=as-original-model", "PP=as-original-model")
    conversion = rows[("*ForTextEncoding", "*EmbeddingModel", "*Model")]
    assert conversion.other_columns == (
        "--convert=embed",
        "Supported pooling tasks=token_embed, embed",
    )


def test_bad_rows_are_warnings_not_drops():
    facts = extract(tree_2026())
    warned = {(w.code, w.subject): w for w in facts.warnings if w.fact == "docs_table_rows"}
    assert set(warned) == {
        ("unknown-cell-value", "DeepseekV3ForCausalLM"),
        ("ragged-row", "AfmoeForCausalLM"),
    }
    rows = rows_by_arch(facts)
    assert rows[("DeepseekV3ForCausalLM",)].features == ("LoRA=limited", "PP=?maybe")
    assert rows[("AfmoeForCausalLM",)].features == ("LoRA=yes", "PP=no")
    assert warned[("ragged-row", "AfmoeForCausalLM")].symbol.endswith("Text Generation")


def test_fenced_block_is_neither_heading_nor_table():
    doc = parse_document(SUPPORTED_2026, SUPPORTED)
    assert "Only do this for mixture-of-experts models" not in {h for _, h, _ in doc.headings}
    rows, _ = page_rows(doc)
    assert all(r.architectures[0] != "a fenced" for r in rows)
    assert len(rows) == 7


def test_findings():
    facts = extract(tree_2026())
    found = {(f.finding, f.architecture): f for f in facts.fact("docs_registry_findings").records}
    assert set(found) == {
        ("documented-other-spelling", "Qwen2VlForConditionalGeneration"),
        ("documented-not-registered", "ChatGLMForConditionalGeneration"),
        ("documented-not-registered", "BartForConditionalGeneration"),
        ("documented-not-registered", "AfmoeForCausalLM"),
        ("documented-not-registered", "Qwen3Model"),
        ("documented-not-registered", "Qwen3ForCausalLM"),
        ("registered-not-documented", "MptForCausalLM"),
    }
    spelled = found[("documented-other-spelling", "Qwen2VlForConditionalGeneration")]
    assert spelled.registered_as == ("Qwen2VLForConditionalGeneration",)
    assert spelled.registered_in == (f"{REGISTRY_PATH}: _MULTIMODAL_MODELS",)
    converted = found[("documented-not-registered", "Qwen3Model")]
    assert converted.note.startswith("docs mark it ^C")
    assert found[("registered-not-documented", "MptForCausalLM")].note == "group: text-generation"


def test_older_single_pooling_page_layout():
    facts = extract(tree_v1())
    paths = {r.path for r in facts.fact("docs_table_rows").records}
    assert paths == {SUPPORTED, "docs/models/pooling_models.md"}


def test_missing_pages_and_headings_are_errors():
    with pytest.raises(MissingPathError) as err:
        extract({REGISTRY_PATH: REGISTRY_V1})
    assert SUPPORTED in str(err.value) and "docs/source/models/supported_models.md" in str(
        err.value
    )

    no_pooling = {k: v for k, v in tree_2026().items() if not k.startswith(POOLING)}
    with pytest.raises(MissingPathError) as err:
        extract(no_pooling)
    assert f"{POOLING}/*.md" in str(err.value) and "docs/models/pooling_models.md" in str(err.value)

    renamed = {
        **tree_2026(),
        SUPPORTED: SUPPORTED_2026.replace("## List of Multimodal Language Models", "## Multimodal"),
    }
    with pytest.raises(AnchorError) as err:
        extract(renamed)
    assert err.value.anchor == "heading: List of Multimodal Language Models"
    assert SUPPORTED in str(err.value) and "engine: vllm" in str(err.value)

    no_tables = {
        **tree_2026(),
        f"{POOLING}/embed.md": "# Embedding\n\nNo tables.\n",
        f"{POOLING}/README.md": "# Pooling\n",
    }
    with pytest.raises(AnchorError) as err:
        extract(no_tables)
    assert err.value.anchor == "pooling model tables"
