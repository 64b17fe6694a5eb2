"""Hand-written miniatures in the shape of SGLang's files (same paths, same syntax patterns)."""

from tests.sglang_kv_dtype_miniatures import with_deepseek_family
from tests.sglang_serving_miniatures import serving_files, with_kv_method

MODELS = "python/sglang/srt/models"
MODEL_CONFIG_PATH = "python/sglang/srt/configs/model_config.py"
OLD_DOCS = "docs/supported_models"
NEW_DOCS = "docs/docs/supported-models"

LLAMA = '''
"""Miniature llama module."""
from torch import nn


class LlamaModel(nn.Module):
    pass


class LlamaForCausalLM(nn.Module):
    def forward(self, x):
        return x


class Phi3ForCausalLM(LlamaForCausalLM):
    pass


EntryClass = [
    LlamaForCausalLM,
    Phi3ForCausalLM,  # same implementation
]
'''

# A UTF-8 byte-order mark in front, as one real module has.
QWEN2 = """\ufeff# Miniature qwen2 module.
from torch import nn


class Qwen2ForCausalLM(nn.Module):
    pass


EntryClass = Qwen2ForCausalLM
"""

DEEPSEEK_V2 = """
from torch import nn


class DeepseekV2ForCausalLM(nn.Module):
    pass


class DeepseekV3ForCausalLM(DeepseekV2ForCausalLM):
    pass


EntryClass = [DeepseekV2ForCausalLM, DeepseekV3ForCausalLM]
"""

# alias: the registered architecture is the class's own name, not the alias
GEMMA = """
from torch import nn


class GemmaForCausalLM(nn.Module):
    pass


Gemma1ForCausalLM = GemmaForCausalLM

EntryClass = Gemma1ForCausalLM
"""

NEXTN_IMPL_PATH = f"{MODELS}/deepseek_common/nextn_impl.py"
NEXTN_IMPL = """
from torch import nn


class DeepseekV3ForCausalLMNextN(nn.Module):
    pass
"""

# imported EntryClass, with an `as` alias, from a sub-package module
DEEPSEEK_NEXTN = """
from sglang.srt.models.deepseek_common.nextn_impl import (
    DeepseekV3ForCausalLMNextN as NextN,
)

EntryClass = [NextN]
"""

QUANT_BASE = """
from torch import nn


class QuantMixtralForCausalLM(nn.Module):
    pass
"""

# imported EntryClass from a sibling module, relative import
MIXTRAL_QUANT = """
from .quant_base import QuantMixtralForCausalLM

EntryClass = QuantMixtralForCausalLM
"""

REGISTRY = """
import pkgutil


def import_model_classes(package_name):
    for _, name, ispkg in pkgutil.iter_modules([]):
        module = __import__(name)
        if hasattr(module, "EntryClass"):
            entry = module.EntryClass
    return {}
"""

MODEL_CONFIG = """
from enum import IntEnum, auto

from sglang.srt.environ import envs

MIMO_V2_MODEL_ARCHS = (
    "MiMoV2ForCausalLM",
    "MiMoV2FlashForCausalLM",
)
MIMO_V2_MULTIMODAL_ARCHS = ("MiMoV2ForCausalLM",)
KV_QUANT_METHODS = ["fp8_e5m2"]


def _hf_arch(config):
    archs = getattr(config, "architectures", None)
    return archs[0] if archs else None


def _hf_attr(config, name):
    return getattr(config, name, None)


def is_deepseek_dsa(config):
    return (
        _hf_arch(config) in ("DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM")
        and _hf_attr(config, "index_topk") is not None
    )


def is_kimi_k3(config):
    return _hf_arch(config) == "KimiK3ForConditionalGeneration"


def is_minimax_sparse(config):
    arch = (config.architectures or [None])[0]
    return arch in ("MiniMaxM3SparseForCausalLM",)


def is_generation_model(model_architectures, is_embedding=False):
    if (
        "LlamaEmbeddingModel" in model_architectures
        or "BertModel" in model_architectures
        or "Qwen2ForRewardModel" in model_architectures
    ):
        return False
    else:
        return not is_embedding


multimodal_model_archs = [
    "Gemma3ForConditionalGeneration",
    *MIMO_V2_MULTIMODAL_ARCHS,
    "Qwen2VLForConditionalGeneration",
]

if envs.SGLANG_ENABLE_EXTERNAL_VLM.get():
    multimodal_model_archs.append("ExternalVLMForCausalLM")

if external_arch := envs.SGLANG_EXTERNAL_MM_MODEL_ARCH.get():
    multimodal_model_archs.append(external_arch)

piecewise_cuda_graph_disabled_model_archs = [
    "Qwen3NextForCausalLM",
    "Qwen2ForCausalLM",
    "LLaDAModelLM",
]


def is_multimodal_model(model_architectures):
    if any(
        multi_model_arch in model_architectures
        for multi_model_arch in multimodal_model_archs
    ):
        return True
    else:
        return False


def is_encoder_decoder_model(model_architectures):
    models = ["WhisperForConditionalGeneration", "MllamaForConditionalGeneration"]
    return any(model in model_architectures for model in models)


def is_local_attention_model(model_architectures):
    return "Llama4ForConditionalGeneration" in model_architectures


def is_multimodal_chunked_prefill_supported(model_architectures):
    unsupported = ["MllamaForConditionalGeneration", "CLIPModel"]
    if any(arch in unsupported for arch in model_architectures):
        return False
    else:
        return True


def is_piecewise_cuda_graph_disabled_model(model_architectures):
    return any(
        arch in piecewise_cuda_graph_disabled_model_archs for arch in model_architectures
    )


def is_embedding_gemma(config):
    return getattr(config, "model_type", None) == "gemma3_text"


def is_hybrid_swa_model(model_architectures, hf_text_config=None):
    hybrid_swa_archs = {
        "Llama4ForConditionalGeneration",
        "GptOssForCausalLM",
        *MIMO_V2_MODEL_ARCHS,
        "Gemma4ForCausalLM",
        "LagunaForCausalLM",
    }
    if any(arch in hybrid_swa_archs for arch in model_architectures):
        if (
            "LagunaForCausalLM" in model_architectures
            and hf_text_config is not None
            and not getattr(hf_text_config, "sliding_window", 0)
        ):
            return False
        return True
    if hf_text_config is not None and getattr(hf_text_config, "is_hybrid_swa", False):
        return True
    return False


class AttentionArch(IntEnum):
    MLA = auto()
    MHA = auto()


class ModelConfig:
    def __init__(self, hf_config, hf_text_config):
        self.hf_config = hf_config
        self.hf_text_config = hf_text_config
        self._derive_model_shapes()

    def _derive_model_shapes(self):
        self.head_dim = getattr(self.hf_text_config, "head_dim", None)
        if (
            "DeepseekV2ForCausalLM" in self.hf_config.architectures
            or "DeepseekV3ForCausalLM" in self.hf_config.architectures
            or "DeepseekV3ForCausalLMNextN" in self.hf_config.architectures
            or (
                "PixtralForConditionalGeneration" in self.hf_config.architectures
                and getattr(self.hf_text_config, "kv_lora_rank", None) is not None
            )
        ):
            self.head_dim = 256
            self.attention_arch = AttentionArch.MLA
            self.kv_lora_rank = self.hf_text_config.kv_lora_rank
        elif (
            "DeepseekV4ForCausalLM" in self.hf_config.architectures
            or "DeepseekV4ForCausalLMNextN" in self.hf_config.architectures
        ):
            self.qk_rope_head_dim = self.hf_config.qk_rope_head_dim
            self.compress_ratios = self.hf_config.compress_ratios
            self.attention_arch = AttentionArch.MHA
            self._init_mla_scaling(self.hf_config.rope_scaling)
        elif "Glm4MoeForCausalLMNextN" in self.hf_config.architectures:
            self.v_head_dim = self.head_dim
            self.attention_arch = AttentionArch.MHA
        elif "MiniCPM3ForCausalLM" in self.hf_config.architectures:
            self.head_dim = 128
            self.attention_arch = AttentionArch.MLA
        elif "DeepseekVL2ForCausalLM" in self.hf_config.architectures and getattr(
            self.hf_text_config, "use_mla", True
        ):
            self.head_dim = 256
            self.attention_arch = AttentionArch.MLA
        else:
            if "MistralForCausalLM" in self.hf_config.architectures:
                if getattr(self, "head_dim", None) is None:
                    self.head_dim = 128
            self.attention_arch = AttentionArch.MHA

    def _init_mla_scaling(self, rope_scaling):
        self.scaling = 1.0

    def _derive_hybrid_model(self):
        self.is_hybrid_swa = is_hybrid_swa_model(
            self.hf_config.architectures, self.hf_text_config
        )
        self.is_hybrid_swa_compress = self.hf_config.architectures[0] in [
            *MIMO_V2_MODEL_ARCHS,
            "Gemma4ForCausalLM",
        ]

    def get_total_num_kv_heads(self):
        falcon_model_types = ["falcon", "RefinedWeb"]
        new_decoder_arch_falcon = self.hf_config.model_type in falcon_model_types and getattr(
            self.hf_config, "new_decoder_architecture", False
        )
        if not new_decoder_arch_falcon and getattr(self.hf_text_config, "multi_query", False):
            return 1
        if self.hf_config.model_type in ["mpt"]:
            if "kv_n_heads" in self.hf_config.attn_config:
                return self.hf_config.attn_config["kv_n_heads"]
            return self.hf_config.num_attention_heads
        if self.hf_config.model_type in ["dbrx"]:
            return getattr(
                self.hf_config.attn_config, "kv_n_heads", self.hf_config.num_attention_heads
            )
        attributes = ["n_head_kv", "num_kv_heads", "num_key_value_heads"]
        for attr in attributes:
            num_kv_heads = getattr(self.hf_text_config, attr, None)
            if num_kv_heads is not None:
                return num_kv_heads
        return self.hf_text_config.num_attention_heads
"""

# 2025: the chain sat in __init__ and had fewer branches
MODEL_CONFIG_OLD = """
def is_hybrid_model(model_architectures, hybrid_kvcache_ratio, context_length, chunk):
    if hybrid_kvcache_ratio is None:
        return None
    elif hybrid_kvcache_ratio > 0 and model_architectures[0] == "Llama4ForConditionalGeneration":
        return hybrid_kvcache_ratio
    else:
        return None


class AttentionArch:
    MLA = 1
    MHA = 2


class ModelConfig:
    def __init__(self, hf_config):
        self.hf_config = hf_config
        if (
            "DeepseekV2ForCausalLM" in self.hf_config.architectures
            or "DeepseekV3ForCausalLM" in self.hf_config.architectures
        ):
            self.head_dim = 256
            self.attention_arch = AttentionArch.MLA
        elif "MiniCPM3ForCausalLM" in self.hf_config.architectures:
            self.attention_arch = AttentionArch.MLA
        else:
            self.attention_arch = AttentionArch.MHA

    def get_total_num_kv_heads(self):
        attributes = ["num_kv_heads", "num_key_value_heads"]
        for attr in attributes:
            num_kv_heads = getattr(self.hf_text_config, attr, None)
            if num_kv_heads is not None:
                return num_kv_heads
        return self.hf_text_config.num_attention_heads
"""

CONFIGS = "python/sglang/srt/configs"
HYBRID_ARCH_PATH = f"{CONFIGS}/hybrid_arch.py"
MODEL_RUNNER_PATH = "python/sglang/srt/model_executor/model_runner.py"

# config classes: a subclass in another module, one whose model_type comes from transformers
CONFIG_MODULES = {
    f"{CONFIGS}/nemotron_h.py": """
from transformers import PretrainedConfig


class NemotronHConfig(PretrainedConfig):
    model_type = "nemotron_h"

    def __init__(self, hybrid_override_pattern="M-M*", **kwargs):
        self.hybrid_override_pattern = hybrid_override_pattern
        super().__init__(**kwargs)


class NemotronHPuzzleConfig(NemotronHConfig):
    model_type = "nemotron_h_puzzle"
""",
    f"{CONFIGS}/qwen3_next.py": """
from transformers.configuration_utils import PretrainedConfig


class Qwen3NextConfig(PretrainedConfig):
    model_type = "qwen3_next"
""",
    f"{CONFIGS}/qwen3_5.py": """
from sglang.srt.configs.qwen3_next import Qwen3NextConfig


class Qwen3_5TextConfig(Qwen3NextConfig):
    model_type = "qwen3_5_text"
""",
    f"{CONFIGS}/lfm2.py": """
from transformers import Lfm2Config as HFLfm2Config


class Lfm2Config(HFLfm2Config):
    def layers_block_type(self):
        return []
""",
    f"{CONFIGS}/granitemoehybrid.py": """
from transformers import PretrainedConfig


class GraniteMoeHybridConfig(PretrainedConfig):
    model_type = "granitemoehybrid"
""",
    f"{CONFIGS}/inkling.py": """
from transformers import PretrainedConfig


class InklingModelConfig(PretrainedConfig):
    model_type = "inkling_model"
""",
}

HYBRID_ARCH = """
from sglang.srt.configs import (
    GraniteMoeHybridConfig,
    InklingModelConfig,
    Lfm2Config,
    NemotronHConfig,
    Qwen3NextConfig,
)


def _get_linear_attn_registry_result(model_config):
    return model_config.linear_attn_registry_result


def hybrid_gdn_config(model_config):
    config = model_config.hf_config.get_text_config()
    if isinstance(config, Qwen3NextConfig):
        return config
    return None


def mamba2_config(model_config):
    config = model_config.hf_config
    if isinstance(config, NemotronHConfig) and model_config.is_draft_model:
        pattern = getattr(config, "mtp_hybrid_override_pattern", None)
        if pattern is not None and "M" not in pattern:
            return None
    if isinstance(config, NemotronHConfig | Lfm2Config):
        return config
    if isinstance(config, InklingModelConfig):
        return config if config.mamba2_cache_params is not None else None
    if isinstance(config, GraniteMoeHybridConfig):
        has_mamba = "mamba" in getattr(config, "layer_types", [])
        if not has_mamba:
            return None
        else:
            return config
    return None


def mambaish_config(model_config):
    existing = mamba2_config(model_config) or hybrid_gdn_config(model_config)
    if existing:
        return existing
    result = _get_linear_attn_registry_result(model_config)
    return result[1] if result else None
"""

# earlier: the same checks as ModelRunner properties
MODEL_RUNNER = """
from sglang.srt.configs import NemotronHConfig, Qwen3NextConfig


class ModelRunner:
    def __init__(self, model_config):
        self.model_config = model_config

    def init_memory_pool(self, x):
        if isinstance(x, int):
            return x

    @property
    def hybrid_gdn_config(self):
        config = self.model_config.hf_config
        if isinstance(config, Qwen3NextConfig):
            return config
        return None

    @property
    def mamba2_config(self):
        config = self.model_config.hf_config
        if isinstance(config, NemotronHConfig):
            return config
        return None

    @property
    def mambaish_config(self):
        return self.mamba2_config or self.hybrid_gdn_config
"""

OLD_GENERATIVE = """# Large Language Models

These models accept text input and produce text output.

## Example launch Command

```shell
python3 -m sglang.launch_server \\
  --model-path meta-llama/Llama-3.2-1B-Instruct \\  # example HF/local path
  --port 30000
```

## Supported models

```
repo:sgl-project/sglang path:/^python\\/sglang\\/srt\\/models\\// Qwen3ForCausalLM
```

| Model Family (Variants)             | Example HuggingFace Identifier    | Description |
|-------------------------------------|-----------------------------------|-------------|
| **DeepSeek** (v2, v3/R1)            | `deepseek-ai/DeepSeek-R1`         | Reasoning models. [Guide](../basic_usage/deepseek.md) |
| **Llama** (2, 3.x)                  | `meta-llama/Llama-3.1-8B`         | Meta's series. |
| **Qwen** (2, 2.5)                   | `Qwen/Qwen2-7B`, `Qwen/Qwen2.5-7B` | Alibaba's series. |
| **Persimmon** (8B)                  | `adept/persimmon-8b-chat`         | A removed model. |
| **Gemma**                           | `google/gemma-2b`                 |
"""

OLD_MULTIMODAL = """# Multimodal Language Models

## Supported models

| Model Family (Variants)    | Example HuggingFace Identifier     | Description | Notes |
|----------------------------|------------------------------------|-------------|-------|
| **DeepSeek-VL2**           | `deepseek-ai/deepseek-vl2`         | Vision-language variant. |  |
"""

NEW_GENERATIVE = """---
title: Large Language Models
---
These models accept text input and produce text output.

## Example launch Command

<CodeGroup>
```shell Command
python3 -m sglang.launch_server \\
  --model-path meta-llama/Llama-3.2-1B-Instruct

# comment line after a blank line inside the fence
```
</CodeGroup>

## Supported models

<table style={{width: "100%", borderCollapse: "collapse", tableLayout: "fixed"}}>
  <colgroup>
    <col style={{width: "34%"}} />
    <col style={{width: "33%"}} />
    <col style={{width: "33%"}} />
  </colgroup>
  <thead>
    <tr style={{borderBottom: "2px solid #d55816"}}>
      <th style={{textAlign: "left", padding: "10px 12px"}}>Model Family (Variants)</th>
      <th style={{textAlign: "left", padding: "10px 12px"}}>Example HuggingFace Identifier</th>
      <th style={{textAlign: "left", padding: "10px 12px"}}>Description</th>
    </tr>
  </thead>
  <tbody>
    <tr>
      <td style={{padding: "9px 12px", fontWeight: 500}}>**DeepSeek** (v2, v3/R1)</td>
      <td style={{padding: "9px 12px"}}>`deepseek-ai/DeepSeek-R1`</td>
      <td style={{padding: "9px 12px"}}>Reasoning models. <a href="/cookbook/deepseek">Guide</a></td>
    </tr>
    <tr>
      <td style={{padding: "9px 12px", fontWeight: 500}}><strong>Llama</strong> (2, 3.x)</td>
      <td style={{padding: "9px 12px"}}><code>meta-llama/Llama-3.1-8B</code></td>
      <td style={{padding: "9px 12px"}}>Meta's series.</td>
    </tr>
    <tr>
      <td style={{padding: "9px 12px", fontWeight: 500}}><strong>Qwen</strong> (2, 2.5)</td>
      <td style={{padding: "9px 12px"}}><code>Qwen/Qwen2-7B</code>, <code>Qwen/Qwen2.5-7B</code></td>
      <td style={{padding: "9px 12px"}}>Alibaba's series.</td>
    </tr>
    <tr>
      <td style={{padding: "9px 12px", fontWeight: 500}}><strong>Gemma</strong></td>
      <td style={{padding: "9px 12px"}}><code>google/gemma-2b</code></td>
    </tr>
  </tbody>
</table>
"""

NEW_MULTIMODAL = """---
title: Multimodal Language Models
---

## Supported models

<table>
  <thead>
    <tr>
      <th>Model Family (Variants)</th>
      <th>Example HuggingFace Identifier</th>
      <th>Description</th>
      <th>Notes</th>
    </tr>
  </thead>
  <tbody>
    <tr>
      <td><strong>DeepSeek-VL2</strong></td>
      <td><code>deepseek-ai/deepseek-vl2</code></td>
      <td>Vision-language variant.</td>
      <td>Use `--chat-template deepseek-vl2`</td>
    </tr>
  </tbody>
</table>
"""

NEW_REWARD = """---
title: Reward models
---

## Supported models

| Model Family (Reward) | Example HuggingFace Identifier | Description |
|---|---|---|
| **Llama (3.1 Reward / `LlamaForSequenceClassification`)** | `Skywork/Skywork-Reward-Llama-3.1-8B-v0.2` | Reward model. |
| **Qwen2 (Reward / `Qwen2forCausalLM`)** | `Qwen/Qwen2-RM` | Misspelled class name. |
"""


CONTEXT_OLD_PATH = "python/sglang/srt/hf_transformers_utils.py"
CONTEXT_PATH = "python/sglang/srt/utils/hf_transformers/common.py"
CONTEXT_LENGTH = """
import logging

# the classes AutoConfig builds for their model_type (read by config_class_attributes)
_CONFIG_REGISTRY: Dict[str, Type[PretrainedConfig]] = {
    cls.model_type: cls
    for cls in [
        NemotronHConfig,
    ]
}

# keys tried for the context length, first one set wins
CONTEXT_LENGTH_KEYS = [
    "max_sequence_length",
    "seq_length",
    "max_seq_len",
    "model_max_length",
    "max_position_embeddings",
]


def get_context_length(config):
    text_config = config
    rope_scaling = getattr(text_config, "rope_scaling", None)
    if rope_scaling:
        rope_scaling_factor = rope_scaling.get("factor", 1)
        if "original_max_position_embeddings" in rope_scaling:
            rope_scaling_factor = 1
        if rope_scaling.get("rope_type", None) == "llama3":
            rope_scaling_factor = 1
    else:
        rope_scaling_factor = 1
    for key in CONTEXT_LENGTH_KEYS:
        val = getattr(text_config, key, None)
        if val is not None:
            return int(rope_scaling_factor * val)
    return 2048
"""


CONFIG_PARSER_PATH = "python/sglang/srt/utils/hf_transformers/config.py"
# the loader's per-model_type rewrites of text_config (read by config_rewrites)
CONFIG_PARSER = """
from .common import AutoConfig


class HfParser(ParserBase):
    def parse(self, model, trust_remote_code, revision=None, **kwargs):
        config = AutoConfig.from_pretrained(model, revision=revision, **kwargs)
        if config.model_type == "flash":
            config.update({"architectures": ["FlashForCausalLM"]})
        if config.model_type in ("duo", "duo_assistant"):
            # the global values go on the base names, the local ones on swa_*
            text_config = config.text_config
            wide_dim = getattr(text_config, "wide_head_dim", None)
            wide_heads = getattr(text_config, "num_wide_kv_heads", None)
            local_dim = text_config.head_dim
            local_heads = text_config.num_key_value_heads
            text_config.swa_head_dim = local_dim
            text_config.swa_num_key_value_heads = local_heads
            if wide_dim is not None:
                text_config.head_dim = wide_dim
            if wide_heads is not None:
                text_config.num_key_value_heads = wide_heads
            if not hasattr(text_config, "v_head_dim"):
                text_config.v_head_dim = text_config.head_dim
            if not hasattr(config, "eos_id") and hasattr(config, "eos_index"):
                config.eos_id = config.eos_index
        return config
"""


def models_tree() -> dict[str, str]:
    return {
        f"{MODELS}/__init__.py": "",
        f"{MODELS}/registry.py": REGISTRY,
        f"{MODELS}/llama.py": LLAMA,
        f"{MODELS}/qwen2.py": QWEN2,
        f"{MODELS}/deepseek_v2.py": DEEPSEEK_V2,
        f"{MODELS}/gemma.py": GEMMA,
        f"{MODELS}/deepseek_common/__init__.py": "",
        NEXTN_IMPL_PATH: NEXTN_IMPL,
        f"{MODELS}/deepseek_nextn.py": DEEPSEEK_NEXTN,
        f"{MODELS}/quant_base.py": QUANT_BASE,
        f"{MODELS}/mixtral_quant.py": MIXTRAL_QUANT,
        f"{MODELS}/utils.py": "def helper():\n    return 1\n",
    }


def tree_2025() -> dict[str, str]:
    """Old docs layout (docs/supported_models/*.md), chain in __init__."""
    return {
        **models_tree(),
        **with_deepseek_family(serving_files(LLAMA)),
        MODEL_CONFIG_PATH: with_kv_method(MODEL_CONFIG_OLD),
        MODEL_RUNNER_PATH: MODEL_RUNNER,
        CONTEXT_OLD_PATH: CONTEXT_LENGTH,
        **CONFIG_MODULES,
        f"{OLD_DOCS}/generative_models.md": OLD_GENERATIVE,
        f"{OLD_DOCS}/multimodal_language_models.md": OLD_MULTIMODAL,
    }


def tree_2026() -> dict[str, str | None]:
    """New docs layout (docs/docs/supported-models/*.mdx), the old pages removed."""
    return {
        MODEL_CONFIG_PATH: with_kv_method(MODEL_CONFIG),
        HYBRID_ARCH_PATH: HYBRID_ARCH,
        CONTEXT_OLD_PATH: None,
        CONTEXT_PATH: CONTEXT_LENGTH,
        CONFIG_PARSER_PATH: CONFIG_PARSER,
        f"{OLD_DOCS}/generative_models.md": None,
        f"{OLD_DOCS}/multimodal_language_models.md": None,
        f"{NEW_DOCS}/generative_models.mdx": NEW_GENERATIVE,
        f"{NEW_DOCS}/multimodal_language_models.mdx": NEW_MULTIMODAL,
        f"{NEW_DOCS}/reward_models.mdx": NEW_REWARD,
    }


def full_tree_2026() -> dict[str, str]:
    files = {**tree_2025(), **tree_2026()}
    return {k: v for k, v in files.items() if v is not None}
