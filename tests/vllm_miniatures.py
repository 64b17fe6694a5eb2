"""Hand-written miniatures in the shape of vLLM's files (same paths, same syntax patterns)."""

from tests.vllm_class_miniatures import (
    LLAMA,
    MODEL_CONFIG,
    MODEL_INFO,
    REGISTRY_IMPORTS,
    interface_files,
)
from tests.vllm_serving_miniatures import MODEL_CONFIG_TP_METHODS, serving_files
from tests.vllm_state_miniatures import (
    FLOAT16_LITERAL,
    NORMALIZE_LITERAL,
    TORCH_UTILS,
    TORCH_UTILS_PATH,
    state_files,
)

CONVERTOR_PATH = "vllm/transformers_utils/model_arch_config_convertor.py"
CONFIG_MODEL_PATH = "vllm/config/model.py"
CONFIG_SINGLE_PATH = "vllm/config.py"
REGISTRY_PATH = "vllm/model_executor/models/registry.py"

CONVERTOR_V1 = '''
"""Miniature convertor."""


class ModelArchConfigConvertorBase:
    def __init__(self, hf_config, hf_text_config):
        self.hf_config = hf_config
        self.hf_text_config = hf_text_config

    def get_total_num_attention_heads(self) -> int:
        return getattr(self.hf_text_config, "num_attention_heads", 0)

    def get_total_num_kv_heads(self) -> int:
        attributes = [
            "n_head_kv",  # falcon
            "num_kv_heads",
            "num_key_value_heads",
        ]
        default_factory = self.get_total_num_attention_heads
        return getattr_iter(self.hf_text_config, attributes, default_factory=default_factory)

    def is_deepseek_mla(self) -> bool:
        if not hasattr(self.hf_text_config, "model_type"):
            return False
        elif self.hf_text_config.model_type in (
            "deepseek_v2",
            "deepseek_v3",  # the big one
        ):
            return getattr(self.hf_text_config, "kv_lora_rank", None) is not None
        elif self.hf_text_config.model_type == "eagle":
            return (
                self.hf_text_config.model.model_type in ("deepseek_v3",)
                and getattr(self.hf_text_config, "kv_lora_rank", None) is not None
            )
        return False


class MambaConvertor(ModelArchConfigConvertorBase):
    def get_total_num_kv_heads(self) -> int:
        return 0


class FalconConvertor(ModelArchConfigConvertorBase):
    def get_total_num_kv_heads(self) -> int:
        new_arch = getattr(self.hf_text_config, "new_decoder_architecture", False)
        if not new_arch and getattr(self.hf_text_config, "multi_query", False):
            return 1
        return super().get_total_num_kv_heads()


class MptConvertor(ModelArchConfigConvertorBase):
    def get_total_num_kv_heads(self) -> int:
        if "kv_n_heads" in self.hf_text_config.attn_config:
            return self.hf_text_config.attn_config["kv_n_heads"]
        return self.hf_text_config.num_attention_heads


class FalconMambaConvertor(MambaConvertor):
    pass


class QuietConvertor(ModelArchConfigConvertorBase):
    def get_head_size(self) -> int:
        return 0


MODEL_ARCH_CONFIG_CONVERTORS = {
    "mamba": MambaConvertor,
    "falcon_mamba": FalconMambaConvertor,
    "falcon": FalconConvertor,
    "mpt": MptConvertor,
    "quiet": QuietConvertor,
}
'''

# v2: adds an MLA type, appends an alias, adds a compress_ratios gate, drops mpt.
CONVERTOR_V2 = (
    CONVERTOR_V1.replace(
        '"deepseek_v3",  # the big one\n', '"deepseek_v3",  # the big one\n            "kimi_k2",\n'
    )
    .replace(
        '            "num_key_value_heads",\n',
        '            "num_key_value_heads",\n            "num_attention_groups",\n',
    )
    .replace(
        '            return getattr(self.hf_text_config, "kv_lora_rank", None) is not None\n'
        "        elif",
        '            if hasattr(self.hf_text_config, "compress_ratios"):\n'
        '                return getattr(self.hf_text_config, "head_dim", None) is not None\n'
        "            else:\n"
        '                return getattr(self.hf_text_config, "kv_lora_rank", None) is not None\n'
        "        elif",
    )
    .replace('    "mpt": MptConvertor,\n', "")
)

# The older layout: everything inline in ModelConfig (vllm/config.py or vllm/config/model.py).
MODEL_CONFIG_OLD = '''
class ModelConfig:
    @property
    def attn_type(self) -> str:
        if self.pooler_config is not None:
            if self._model_info.default_seq_pooling_type == "CLS":
                return "encoder_only"
            return self._model_info.attn_type
        return "decoder"

    @property
    def is_deepseek_mla(self) -> bool:
        if not hasattr(self.hf_text_config, "model_type"):
            return False
        elif self.hf_text_config.model_type in ('deepseek_v2', 'deepseek_v3'):
            return self.hf_text_config.kv_lora_rank is not None
        elif self.hf_text_config.model_type == 'eagle':
            return self.hf_text_config.model.model_type in ('deepseek_v2',) \\
                and self.hf_text_config.kv_lora_rank is not None
        return False

    def get_total_num_kv_heads(self) -> int:
        """Returns the total number of KV heads."""
        falcon_model_types = ["falcon", "RefinedWeb"]
        new_decoder_arch_falcon = (
            self.hf_config.model_type in falcon_model_types
            and getattr(self.hf_config, "new_decoder_architecture", False))
        if not new_decoder_arch_falcon and getattr(self.hf_text_config, "multi_query", False):
            return 1
        if self.hf_config.model_type == "mpt":
            if "kv_n_heads" in self.hf_config.attn_config:
                return self.hf_config.attn_config["kv_n_heads"]
            return self.hf_config.num_attention_heads
        if self.hf_config.model_type == "nemotron-nas":
            for block in self.hf_config.block_configs:
                if not block.attention.no_op:
                    return self.hf_config.num_attention_heads // block.attention.n_heads_in_group
            raise RuntimeError("no kv heads")
        if self.is_attention_free:
            return 0
        attributes = [
            "n_head_kv",
            "num_kv_heads",
            "num_key_value_heads",
        ]
        for attr in attributes:
            num_kv_heads = getattr(self.hf_text_config, attr, None)
            if num_kv_heads is not None:
                return num_kv_heads
        return self.hf_text_config.num_attention_heads
'''

REGISTRY_V1 = """
import sys

_TEXT_GENERATION_MODELS = {
    # [Decoder-only]
    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
    "AquilaForCausalLM": ("llama", "LlamaForCausalLM"),  # AquilaChat2
    # a note that is not a section
    "DeepseekV3ForCausalLM": ("deepseek_v2", "DeepseekV3ForCausalLM"),
    "DeepseekV4ForCausalLM": ("vllm.models.deepseek_v4", "DeepseekV4ForCausalLM"),
    # [Encoder-decoder]
    "WhisperForConditionalGeneration": (
        "whisper",
        "WhisperForConditionalGeneration",
    ),
}

_EMBEDDING_MODELS = {
    # [Text-only]
    "BertModel": ("bert", "BertEmbeddingModel"),
    **{
        k: (mod, arch)
        for k, (mod, arch) in _TEXT_GENERATION_MODELS.items()
        if arch == "LlamaForCausalLM"
    },
    "Qwen2Model": ("qwen2", "Qwen2ForCausalLM"),
}

_MULTIMODAL_MODELS = {
    # [Decoder-only]
    "LlavaForConditionalGeneration": ("llava", "LlavaForConditionalGeneration"),
}

_SPECULATIVE_DECODING_MODELS = {
    "EagleLlamaForCausalLM": ("llama_eagle", "EagleLlamaForCausalLM"),
}

_TRANSFORMERS_BACKEND_MODELS = {
    # Text generation models
    "TransformersForCausalLM": ("transformers", "TransformersForCausalLM"),
}

_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
    **_EMBEDDING_MODELS,
    **_MULTIMODAL_MODELS,
    **_SPECULATIVE_DECODING_MODELS,
    **_TRANSFORMERS_BACKEND_MODELS,
}

_PREVIOUSLY_SUPPORTED_MODELS = {"MotifForCausalLM": "0.10.2"}
_OOT_SUPPORTED_MODELS = {"BartForConditionalGeneration": "https://github.com/example/bart-plugin"}
"""
REGISTRY_V1 = REGISTRY_IMPORTS + REGISTRY_V1 + MODEL_INFO

# v2: adds OpenVLA (multimodal), removes Llava, moves Qwen2Model to multimodal.
REGISTRY_V2 = (
    REGISTRY_V1.replace('    "Qwen2Model": ("qwen2", "Qwen2ForCausalLM"),\n', "")
    .replace(
        '    "LlavaForConditionalGeneration": ("llava", "LlavaForConditionalGeneration"),\n',
        '    "OpenVLAForActionPrediction": ("openvla", "OpenVLAForActionPrediction"),\n'
        '    "Qwen2Model": ("qwen2", "Qwen2ForCausalLM"),\n',
    )
    .replace(
        '_PREVIOUSLY_SUPPORTED_MODELS = {"MotifForCausalLM": "0.10.2"}',
        '_PREVIOUSLY_SUPPORTED_MODELS = {"MotifForCausalLM": "0.10.2", '
        '"LlavaForConditionalGeneration": "0.23.0"}',
    )
)


DOCS_PATH = "docs/models/supported_models.md"
DOCS_V1 = """# Supported Models

## List of Text-only Language Models

### Generative Models

| Architecture | Models | Example HF Models | [LoRA](../features/lora.md) | [PP](../serving/parallelism.md) |
|--------------|--------|-------------------|------|----|
| `LlamaForCausalLM` | Llama 3 | `meta-llama/Meta-Llama-3-8B` | ✅︎ | ✅︎ |
| `DeepseekV3ForCausalLM` | DeepSeek-V3 | `deepseek-ai/DeepSeek-V3` | ✅︎ | ✅︎ |

## List of Multimodal Language Models

| Architecture | Models | Inputs | Example HF Models | [LoRA](../features/lora.md) |
|--------------|--------|--------|-------------------|------|
| `LlavaForConditionalGeneration` | LLaVA-1.5 | T + I | `llava-hf/llava-1.5-7b-hf` | ✅︎ |
"""


POOLING_DOCS_PATH = "docs/models/pooling_models.md"
POOLING_DOCS_V1 = """# Pooling Models

## Supported Models

### Text Embedding

| Architecture | Models | Example HF Models | [LoRA](../features/lora.md) |
|--------------|--------|-------------------|------|
| `BertModel` | BERT-based | `BAAI/bge-base-en-v1.5` | |
| `Qwen2Model` | Qwen2-based | `ssmits/Qwen2-7B-Instruct-embed-base` | ✅︎ |
"""


MODELS_CONFIG_PATH = "vllm/model_executor/models/config.py"
MODELS_CONFIG_V1 = """
class VerifyAndUpdateConfig:
    @staticmethod
    def verify_and_update_config(vllm_config) -> None:
        raise NotImplementedError


class PlainHookConfig(VerifyAndUpdateConfig):
    @staticmethod
    def verify_and_update_config(vllm_config) -> None:
        vllm_config.cache_config.block_size = 16


class HybridSsmConfig(VerifyAndUpdateConfig):
    DEFAULT_MAMBA_SSM_CACHE_DTYPE = "float32"

    @classmethod
    def set_ssm_dtype(cls, *, cache_config, hf_config) -> None:
        if cache_config.mamba_ssm_cache_dtype == "auto":
            chosen = getattr(hf_config, "mamba_ssm_cache_dtype", cls.DEFAULT_MAMBA_SSM_CACHE_DTYPE)
            cache_config.mamba_ssm_cache_dtype = chosen

    @classmethod
    def verify_and_update_config(cls, vllm_config) -> None:
        cls.set_ssm_dtype(
            cache_config=vllm_config.cache_config,
            hf_config=vllm_config.model_config.hf_config,
        )


class WrappedHybridConfig(VerifyAndUpdateConfig):
    @staticmethod
    def verify_and_update_config(vllm_config) -> None:
        HybridSsmConfig.set_ssm_dtype(
            cache_config=vllm_config.cache_config,
            hf_config=vllm_config.model_config.hf_config.text_config,
        )


class GatedDeltaConfig(VerifyAndUpdateConfig):
    @staticmethod
    def verify_and_update_config(vllm_config) -> None:
        text = vllm_config.model_config.hf_text_config
        wanted = getattr(text, "mamba_ssm_dtype", None)
        if vllm_config.cache_config.mamba_ssm_cache_dtype == "auto" and wanted is not None:
            vllm_config.cache_config.mamba_ssm_cache_dtype = wanted


MODELS_CONFIG_MAP: dict[str, type[VerifyAndUpdateConfig]] = {
    "PlainModel": PlainHookConfig,
    "HybridForCausalLM": HybridSsmConfig,
    "HybridVisionModel": WrappedHybridConfig,
    "DeltaForConditionalGeneration": GatedDeltaConfig,
}
"""


DEEPSEEK_V2 = """
from torch import nn


class DeepseekV3ForCausalLM(nn.Module):
    def compute_logits(self, hidden_states):
        return hidden_states


class SparseLatentAttention(nn.Module):
    def __init__(self, config, prefix: str = ""):
        super().__init__()
        self.sparse = hasattr(config, "index_topk")
        skip_here = False
        mtp = False
        if self.sparse:
            every: int = getattr(config, "index_topk_freq", 1)
            pattern = getattr(config, "index_topk_pattern", None)
            offset = getattr(config, "index_skip_topk_offset", 2)
            layer_id = extract_layer_index(prefix)
            if pattern is None:
                skip_here = max(layer_id - offset + 1, 0) % every != 0
            elif 0 <= layer_id < len(pattern):
                skip_here = pattern[layer_id] == "S"
            mtp = layer_id >= config.num_hidden_layers
        if self.sparse and (not skip_here or mtp):
            self.indexer = nn.Identity()
"""


def tree_v1() -> dict[str, str]:
    return {
        CONVERTOR_PATH: CONVERTOR_V1 + NORMALIZE_LITERAL,
        MODELS_CONFIG_PATH: MODELS_CONFIG_V1,
        REGISTRY_PATH: REGISTRY_V1,
        DOCS_PATH: DOCS_V1,
        POOLING_DOCS_PATH: POOLING_DOCS_V1,
        "vllm/config/model.py": MODEL_CONFIG + MODEL_CONFIG_TP_METHODS + FLOAT16_LITERAL,
        TORCH_UTILS_PATH: TORCH_UTILS,
        **interface_files(),
        **serving_files(),
        **state_files(),
        "vllm/model_executor/models/llama.py": LLAMA,
        "vllm/model_executor/models/deepseek_v2.py": DEEPSEEK_V2,
    }


def tree_v2_old_layout() -> dict[str, str | None]:
    """The second commit switches to the older single-file layout."""
    return {
        CONVERTOR_PATH: None,
        "vllm/config/model.py": None,
        CONFIG_SINGLE_PATH: MODEL_CONFIG_OLD + MODEL_CONFIG_TP_METHODS,
        REGISTRY_PATH: REGISTRY_V2,
    }
