"""Hand-written miniatures in the shape of TensorRT-LLM's files (same paths, same syntax)."""

MODELS = "tensorrt_llm/_torch/models"
PAGE_PATH = "docs/source/models/supported-models.md"

MODELING_LLAMA = """
from ..model_config import ModelConfig
from .modeling_utils import DecoderModelForCausalLM, register_auto_model


class LlamaModel:
    pass


@register_auto_model("LlamaForCausalLM")
class LlamaForCausalLM(DecoderModelForCausalLM[LlamaModel, object]):

    def __init__(self, model_config: ModelConfig):
        super().__init__(LlamaModel(), config=model_config, hidden_size=1, vocab_size=1)


@register_auto_model("Llama4ForConditionalGeneration")
class Llama4ForConditionalGeneration(DecoderModelForCausalLM):
    pass
"""

# the registered string differs from the class name
MODELING_NEMOTRON_NAS = """
from .modeling_utils import DecoderModelForCausalLM, register_auto_model


@register_auto_model("DeciLMForCausalLM")
class NemotronNASForCausalLM(DecoderModelForCausalLM):
    pass
"""

# stacked decorators, one class registered under three strings, other decorators around
MODELING_DEEPSEEKV3 = """
from . import modeling_utils
from .modeling_utils import register_auto_model, register_vision_encoder


@register_auto_model("GlmMoeDsaForCausalLM")
@register_auto_model("DeepseekV32ForCausalLM")
@modeling_utils.register_auto_model("DeepseekV3ForCausalLM")
class DeepseekV3ForCausalLM(object):
    pass


@register_vision_encoder(object, vlm_base_model=object)
class NotRegistered(object):
    pass
"""

# the call form
MODELING_QWEN3 = """
from .modeling_utils import register_auto_model


class Qwen3ForCausalLM(object):
    pass


register_auto_model("Qwen3ForCausalLM")(Qwen3ForCausalLM)
"""

# a spelling variant of a page row, a row the page footnotes AutoDeploy-only, a vision tower
MODELING_HUNYUAN_DENSE = """
from .modeling_utils import register_auto_model


@register_auto_model("HunYuanDenseV1ForCausalLM")
class HunYuanDenseV1ForCausalLM(object):
    pass
"""

MODELING_SEEDOSS = """
from .modeling_utils import register_auto_model


@register_auto_model("SeedOssForCausalLM")
class SeedOssForCausalLM(object):
    pass
"""

MODELING_SIGLIP = """
from torch import nn

from .modeling_utils import register_auto_model


@register_auto_model("SiglipVisionModel")
class SiglipVisionModel(nn.Module):
    pass
"""

# one string registered by two modules; the lazy-loading index names the second by path
MODELING_A_LEGACY = """
from .modeling_utils import register_auto_model


@register_auto_model("Qwen3NextForCausalLM")
class Qwen3NextLegacy(object):
    pass
"""

MODELING_QWEN3_NEXT = """
from .modeling_utils import register_auto_model


@register_auto_model("Qwen3NextForCausalLM")
class Qwen3NextForCausalLM(object):
    pass
"""

ARCH_INDEX = """
_ZOO_PACKAGE = "tensorrt_llm._torch.models"

MODEL_ARCH_TO_MODULE = {
    "LlamaForCausalLM": "modeling_llama",
    "PhantomForCausalLM": "modeling_phantom",
    "Qwen3NextForCausalLM": "modeling_qwen3_next",
}

MODEL_CLASS_TO_MODULE = {
    "LlamaForCausalLM": "modeling_llama",
}
"""

MODELING_UTILS = """
MODEL_CLASS_MAPPING = {}


def register_auto_model(name):
    def decorator(cls):
        MODEL_CLASS_MAPPING[name] = cls
        return cls
    return decorator
"""

PAGE = """(support-matrix)=
# Supported Models

The following is a table of supported models for the PyTorch backend:

| Architecture                         | Model                              | HuggingFace Example                          |
| ------------------------------------ | ---------------------------------- | -------------------------------------------- |
| `DeciLMForCausalLM`                  | Nemotron                           | `nvidia/Llama-3_1-Nemotron-51B-Instruct`     |
| `DeepSeekV2ForCausalLM` [^5]         | DeepSeek V2                        | `deepseek-ai/DeepSeek-V2-Lite`               |
| `DeepseekV3ForCausalLM`              | DeepSeek-V3, Kimi-K2               | `deepseek-ai/DeepSeek-V3`                    |
| `Gemma4ForConditionalGeneration`     | Gemma 4                            | `google/gemma-4-E2B-it`, `google/gemma-4-26B-A4B-it` [^6] |
| `LlamaForCausalLM`                   | Llama 3.1, Llama 3 | `meta-llama/Meta-Llama-3.1-70B`              |
| `Qwen3ForCausalLM`                   | Qwen3                              |
| `DeepseekV4ForCausalLM` [^11]        | DeepSeek-V4                        | `deepseek-ai/DeepSeek-V4-Pro`                |
| `HunYuanDenseForCausalLM` [^5]       | Hunyuan Dense                      | `tencent/Hunyuan-7B-Instruct`                |
| `NemotronNASForCausalLM`             | NemotronNAS                        | `nvidia/Llama-3_3-Nemotron-Super-49B-v1`     |
| `SeedOssForCausalLM` [^5]            | Seed OSS                           | `ByteDance-Seed/Seed-OSS-36B-Instruct`       |


## Model-Feature Support Matrix (Key Models)

Note: Support for other models may vary. Features marked "N/A" are not applicable.

| Model Architecture/Feature       | Overlap Scheduler | CUDA Graph | Chunked Prefill | KV Cache Reuse | Sliding Window Attention |
| -------------------------------- | ----------------- | ---------- | --------------- | -------------- | ------------------------ |
| `DeepseekV3ForCausalLM`          | Yes               | Yes        | Yes [^1]        | Yes [^2]       | N/A                      |
| `DeepseekV4ForCausalLM` [^11]    | Yes               | Yes        | Yes             | Untested       | Yes                      |
| `Qwen3NextForCausalLM` [^3]      | Yes               | Yes        | Partly          | No             | No [^4]                  |

[^1]: Chunked Prefill for MLA can only be enabled on SM90/SM100/SM103/SM120.
[^2]: KV cache reuse for MLA can only be enabled on SM90/SM100/SM103/SM120/SM121 and in BF16/FP8 KV cache dtype.
[^3]: Qwen3-Next-80B-A3B exhibits relatively low accuracy on one benchmark.
[^5]: Supported via the [AutoDeploy](../features/auto_deploy/auto-deploy.md) backend.
[^6]: Also supports text-only inference via the [AutoDeploy](../features/auto_deploy/auto-deploy.md) backend.
[^11]: DeepSeek-V4 is only supported on Blackwell GPUs (`SM100+`).

# Multimodal Feature Support Matrix (PyTorch Backend)

| Model Architecture/Feature           | Overlap Scheduler | CUDA Graph | Modality  |
| ------------------------------------ | ----------------- | ---------- | --------- |
| `Gemma4ForConditionalGeneration`     | Untested          | Yes        | L + I + V + A [^9] |
| `LlavaLlamaModel (VILA)`             | Yes               | Yes        | L + I + V |

Note:
- L: Language

```python
# Not a heading: a code sample on the page
| not | a table |
|-----|---------|
```

[^9]: Audio modality only supported on E2B/E4B variants.

# Visual Generation Models

## Supported Models

| HuggingFace Model ID | Tasks |
|---|---|
| `black-forest-labs/FLUX.1-dev` | Text-to-Image |

### Feature Matrix

| Model | FP8 blockwise | CFG Parallelism |
|---|---|---|
| **FLUX.1** | Yes | No [^1] |
| **Qwen-Image-Layered** [^3] | No | No |

[^vg1]: An unused footnote.
[^3]: A second definition of label 3, meant for the visual generation table.
"""


def tree() -> dict[str, str]:
    return {
        f"{MODELS}/__init__.py": "",
        f"{MODELS}/modeling_utils.py": MODELING_UTILS,
        f"{MODELS}/modeling_llama.py": MODELING_LLAMA,
        f"{MODELS}/modeling_nemotron_nas.py": MODELING_NEMOTRON_NAS,
        f"{MODELS}/modeling_deepseekv3.py": MODELING_DEEPSEEKV3,
        f"{MODELS}/modeling_qwen3.py": MODELING_QWEN3,
        f"{MODELS}/modeling_hunyuan_dense.py": MODELING_HUNYUAN_DENSE,
        f"{MODELS}/modeling_seedoss.py": MODELING_SEEDOSS,
        f"{MODELS}/modeling_siglip.py": MODELING_SIGLIP,
        f"{MODELS}/modeling_a_legacy.py": MODELING_A_LEGACY,
        f"{MODELS}/modeling_qwen3_next.py": MODELING_QWEN3_NEXT,
        f"{MODELS}/_arch_index.py": ARCH_INDEX,
        f"{MODELS}/checkpoints/modeling_hidden.py": "@register_auto_model('X')\nclass X: pass\n",
        PAGE_PATH: PAGE,
    }
