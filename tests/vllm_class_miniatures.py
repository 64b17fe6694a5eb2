"""Hand-written miniatures in the shape of vLLM's model-class machinery (registry `_ModelInfo`,
interfaces, adapters, model files): same paths and syntax patterns, not their text."""

MODELS = "vllm/model_executor/models"
REGISTRY_PATH = f"{MODELS}/registry.py"

INTERFACES_BASE = """
from typing import ClassVar, Literal, Protocol, runtime_checkable

import torch.nn as nn

from vllm.utils.func_utils import supports_kw


@runtime_checkable
class VllmModel(Protocol):
    def __init__(self, vllm_config, prefix: str = "") -> None: ...

    def embed_input_ids(self, input_ids): ...

    def forward(self, input_ids, positions): ...


def _check_init(model) -> bool:
    model_init = model.__init__
    return supports_kw(model_init, "vllm_config")


def _check_forward(model) -> bool:
    model_forward = getattr(model, "forward", None)
    if not callable(model_forward):
        return False
    wanted = ("input_ids", "positions")
    missing = tuple(kw for kw in wanted if not supports_kw(model_forward, kw))
    if missing and issubclass(model, nn.Module):
        logger.warning("missing %s", missing)
    return len(missing) == 0


def is_vllm_model(model) -> bool:
    return _check_init(model) and _check_forward(model)


@runtime_checkable
class VllmModelForTextGeneration(VllmModel, Protocol):
    def compute_logits(self, hidden_states): ...


def is_text_generation_model(model) -> bool:
    if not is_vllm_model(model):
        return False
    if isinstance(model, type):
        return isinstance(model, VllmModelForTextGeneration)
    return isinstance(model, VllmModelForTextGeneration)


@runtime_checkable
class VllmModelForPooling(VllmModel, Protocol):
    is_pooling_model: ClassVar[Literal[True]] = True
    default_seq_pooling_type: ClassVar[str] = "LAST"
    attn_type: ClassVar[str] = "decoder"
    score_type: ClassVar[str] = "bi-encoder"


def is_pooling_model(model) -> bool:
    if not is_vllm_model(model):
        return False
    return getattr(model, "is_pooling_model", False)


def default_pooling_type(*, seq_pooling_type: str = "LAST"):
    def func(model):
        model.default_seq_pooling_type = seq_pooling_type
        return model

    return func


def get_default_seq_pooling_type(model) -> str:
    return getattr(model, "default_seq_pooling_type", "LAST")


def attn_type(attn_type: str):
    def func(model):
        model.attn_type = attn_type
        return model

    return func


def get_attn_type(model) -> str:
    return getattr(model, "attn_type", "decoder")


def get_score_type(model) -> str:
    found = set()
    for m in model.__mro__:
        value = getattr(m, "score_type", "bi-encoder")
        if value != "bi-encoder":
            found.add(value)
    assert len(found) < 2
    return "bi-encoder" if not found else list(found)[0]
"""

INTERFACES = """
from typing import ClassVar, Literal, Protocol, runtime_checkable


@runtime_checkable
class SupportsPP(Protocol):
    supports_pp: ClassVar[Literal[True]] = True

    def make_empty_intermediate_tensors(self, batch_size): ...


@runtime_checkable
class _SupportsPPType(Protocol):
    supports_pp: Literal[True]

    def make_empty_intermediate_tensors(self, batch_size): ...


def supports_pp(model) -> bool:
    has_attributes = _pp_attributes(model)
    accepts = _pp_inspect(model)
    if has_attributes and not accepts:
        logger.warning("no intermediate_tensors")
    return has_attributes and accepts


def _pp_attributes(model) -> bool:
    if isinstance(model, type):
        return isinstance(model, _SupportsPPType)
    return isinstance(model, SupportsPP)


def _pp_inspect(model) -> bool:
    model_forward = getattr(model, "forward", None)
    if not callable(model_forward):
        return False
    return supports_kw(model_forward, "intermediate_tensors")


@runtime_checkable
class HasInnerState(Protocol):
    has_inner_state: ClassVar[Literal[True]] = True


def has_inner_state(model) -> bool:
    return getattr(model, "has_inner_state", False)


@runtime_checkable
class IsAttentionFree(Protocol):
    is_attention_free: ClassVar[Literal[True]] = True


def is_attention_free(model) -> bool:
    return getattr(model, "is_attention_free", False)


@runtime_checkable
class IsHybrid(Protocol):
    is_hybrid: ClassVar[Literal[True]] = True

    @classmethod
    def get_mamba_state_shape_from_config(cls, vllm_config): ...


def is_hybrid(model) -> bool:
    return getattr(model, "is_hybrid", False)


@runtime_checkable
class SupportsMultiModal(Protocol):
    supports_multimodal: ClassVar[Literal[True]] = True

    def embed_input_ids(self, input_ids, multimodal_embeddings=None): ...


def supports_multimodal(model) -> bool:
    return getattr(model, "supports_multimodal", False)


@runtime_checkable
class SupportsCrossEncoding(Protocol):
    score_type: ClassVar[str] = "cross-encoder"


@runtime_checkable
class SupportsLoRA(Protocol):
    supports_lora: ClassVar[Literal[True]] = True
    embedding_modules: ClassVar[dict] = {}


@runtime_checkable
class _SupportsLoRAType(Protocol):
    supports_lora: Literal[True]
    packed_modules_mapping: dict
    embedding_modules: dict


def supports_lora(model) -> bool:
    result = _supports_lora(model)
    if not result:
        missing = tuple(a for a in ("embedding_modules",) if not hasattr(model, a))
        if missing:
            logger.warning("missing %s", missing)
    return result


def _supports_lora(model) -> bool:
    if isinstance(model, type):
        return isinstance(model, _SupportsLoRAType)
    return isinstance(model, SupportsLoRA)


@runtime_checkable
class SupportsEagle(Protocol):
    supports_eagle: ClassVar[Literal[True]] = True


def supports_eagle(model) -> bool:
    return isinstance(model, SupportsEagle)


class SupportsQuant:
    packed_modules_mapping: ClassVar[dict | None] = None
"""

ADAPTERS = """
from .interfaces_base import VllmModelForPooling, is_pooling_model


def _create_pooling_model_cls(orig_cls):
    class ModelForPooling(orig_cls, VllmModelForPooling):
        is_pooling_model = True

    return ModelForPooling


def as_seq_cls_model(cls):
    # already a pooling model: returned unchanged
    if is_pooling_model(cls):
        return cls

    from vllm.model_executor.models.interfaces import SupportsCrossEncoding

    class ModelForSequenceClassification(_create_pooling_model_cls(cls), SupportsCrossEncoding):
        def _init_pooler(self, vllm_config):
            return None

    ModelForSequenceClassification.__name__ = "Renamed"
    return ModelForSequenceClassification
"""

REGISTRY_IMPORTS = """
from dataclasses import dataclass

from .interfaces import (
    has_inner_state,
    is_attention_free,
    is_hybrid,
    supports_multimodal,
    supports_pp,
)
from .interfaces_base import (
    get_attn_type,
    get_default_seq_pooling_type,
    get_score_type,
    is_pooling_model,
    is_text_generation_model,
)

"""

REGISTRY = (
    REGISTRY_IMPORTS
    + """
_TEXT_GENERATION_MODELS = {
    # [Decoder-only]
    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
    "QuantLlamaForCausalLM": ("llama", "QuantLlamaForCausalLM"),
    "JambaForCausalLM": ("jamba", "JambaForCausalLM"),
    "MambaForCausalLM": ("mamba", "MambaForCausalLM"),
    "BrokenForCausalLM": ("broken", "BrokenForCausalLM"),
    "GoneForCausalLM": ("gone", "GoneForCausalLM"),
    "NewArchForCausalLM": ("vllm.models.new_arch", "NewArchForCausalLM"),
}

_EMBEDDING_MODELS = {
    "LlamaForSequenceClassification": ("llama", "LlamaForSequenceClassification"),
    "BertForTokenClassification": ("bert", "BertForTokenClassification"),
    "BertForSequenceClassification": ("bert", "BertForSequenceClassification"),
}

_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
    **_EMBEDDING_MODELS,
}

_PREVIOUSLY_SUPPORTED_MODELS = {
    "MotifForCausalLM": "0.10.2",
    # encoder-decoder models were removed
    "MllamaForConditionalGeneration": "0.10.2",
}

_OOT_SUPPORTED_MODELS = {
    "BartForConditionalGeneration": "https://github.com/example/bart-plugin",
}
"""
)

MODEL_INFO = """
@dataclass(frozen=True)
class _ModelInfo:
    architecture: str
    is_text_generation_model: bool
    is_pooling_model: bool
    attn_type: str
    default_seq_pooling_type: str
    score_type: str
    supports_multimodal: bool
    supports_pp: bool
    has_inner_state: bool
    is_attention_free: bool
    is_hybrid: bool

    @staticmethod
    def from_model_cls(model) -> "_ModelInfo":
        return _ModelInfo(
            architecture=model.__name__,
            is_text_generation_model=is_text_generation_model(model),
            is_pooling_model=is_pooling_model(model),
            attn_type=get_attn_type(model),
            default_seq_pooling_type=get_default_seq_pooling_type(model),
            score_type=get_score_type(model),
            supports_multimodal=supports_multimodal(model),
            supports_pp=supports_pp(model),
            has_inner_state=has_inner_state(model),
            is_attention_free=is_attention_free(model),
            is_hybrid=is_hybrid(model),
        )
"""
REGISTRY += MODEL_INFO

# IsHybrid reaches JambaForCausalLM through two levels of bases in another module.
MAMBA_MIXINS = """
import torch.nn as nn

from vllm.model_executor.models.interfaces import HasInnerState, IsHybrid


class HybridBase(nn.Module, IsHybrid):
    pass


class HybridStateBase(HybridBase, HasInnerState):
    pass
"""

LLAMA = """
from torch import nn

from .adapters import as_seq_cls_model
from .interfaces import SupportsEagle, SupportsLoRA, SupportsPP, SupportsQuant


class LlamaModel(nn.Module):
    def forward(self, input_ids, positions, intermediate_tensors=None):
        return input_ids


class LlamaForCausalLM(nn.Module, SupportsLoRA, SupportsPP, SupportsEagle):
    packed_modules_mapping = {"qkv_proj": ["q_proj", "k_proj", "v_proj"]}

    def __init__(self, *, vllm_config, prefix: str = ""):
        super().__init__()

    def embed_input_ids(self, input_ids):
        return input_ids

    def forward(self, input_ids, positions, intermediate_tensors=None, **kwargs):
        return input_ids

    def compute_logits(self, hidden_states):
        return hidden_states

    def make_empty_intermediate_tensors(self, batch_size):
        return None


LlamaForSequenceClassification = as_seq_cls_model(LlamaForCausalLM)


class QuantLlamaForCausalLM(SupportsQuant, LlamaForCausalLM):
    pass
"""

JAMBA = """
from vllm.model_executor.models.mamba_mixins import HybridStateBase as StateBase
from vllm.model_executor.models.llama import LlamaForCausalLM


class JambaForCausalLM(StateBase, LlamaForCausalLM):
    pass
"""

MAMBA = """
import torch.nn as nn


class MambaForCausalLM(nn.Module):
    is_attention_free = True
    has_inner_state = True

    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()

    def embed_input_ids(self, input_ids):
        return input_ids

    def forward(self, input_ids, positions):
        return input_ids

    def compute_logits(self, hidden_states):
        return hidden_states
"""

BERT = """
import torch.nn as nn

from .interfaces import SupportsCrossEncoding, SupportsQuant
from .interfaces_base import attn_type, default_pooling_type
from vllm.compilation.decorators import support_torch_compile


@attn_type("encoder_only")
@default_pooling_type(seq_pooling_type="ALL")
class BertForTokenClassification(nn.Module):
    is_pooling_model = True

    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()

    def forward(self, input_ids, positions):
        return input_ids


@support_torch_compile
@default_pooling_type(seq_pooling_type="CLS")
class BertForSequenceClassification(nn.Module, SupportsCrossEncoding, SupportsQuant):
    is_pooling_model = True

    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()

    def forward(self, input_ids, positions):
        return input_ids
"""

BROKEN = """
from .vanished import VanishedBase


class BrokenForCausalLM(VanishedBase):
    def compute_logits(self, hidden_states):
        return hidden_states
"""

NEW_ARCH_INIT = """
from typing import TYPE_CHECKING

from vllm.platforms import current_platform

if TYPE_CHECKING or not current_platform.is_rocm():
    from .cuda.model import NewArchForCausalLM
else:
    from .rocm.model import NewArchForCausalLM

__all__ = ["NewArchForCausalLM"]
"""

# the later shape: the CUDA path is the `else` branch after non-CUDA platform checks
NEW_ARCH_INIT_ELIF = """
from vllm.platforms import current_platform

if current_platform.is_rocm():
    from .rocm.model import NewArchForCausalLM
elif current_platform.is_xpu():
    from .xpu.model import NewArchForCausalLM
else:
    from .cuda.model import NewArchForCausalLM
"""

NEW_ARCH_CUDA = """
from vllm.model_executor.models.llama import LlamaForCausalLM


class NewArchForCausalLM(LlamaForCausalLM):
    supports_pp = False
"""

MODEL_CONFIG = """
class ModelConfig:
    @property
    def attn_type(self) -> str:
        if self.pooler_config is not None:
            seq_pooling_type = self._model_info.default_seq_pooling_type
            if seq_pooling_type == "CLS":
                return "encoder_only"
            else:
                is_causal = getattr(self.hf_config, "is_causal", True)
                return "encoder_only" if not is_causal else self._model_info.attn_type
        elif self.is_hybrid:
            return "hybrid"
        return "decoder"
"""


def class_tree() -> dict[str, str]:
    return {
        REGISTRY_PATH: REGISTRY,
        f"{MODELS}/interfaces_base.py": INTERFACES_BASE,
        f"{MODELS}/interfaces.py": INTERFACES,
        f"{MODELS}/adapters.py": ADAPTERS,
        f"{MODELS}/mamba_mixins.py": MAMBA_MIXINS,
        f"{MODELS}/llama.py": LLAMA,
        f"{MODELS}/jamba.py": JAMBA,
        f"{MODELS}/mamba.py": MAMBA,
        f"{MODELS}/bert.py": BERT,
        f"{MODELS}/broken.py": BROKEN,
        "vllm/models/new_arch/__init__.py": NEW_ARCH_INIT,
        "vllm/models/new_arch/cuda/model.py": NEW_ARCH_CUDA,
        "vllm/config/model.py": MODEL_CONFIG,
    }


def interface_files() -> dict[str, str]:
    """The interface modules alone, for trees whose model files are absent."""
    return {
        f"{MODELS}/interfaces_base.py": INTERFACES_BASE,
        f"{MODELS}/interfaces.py": INTERFACES,
    }
