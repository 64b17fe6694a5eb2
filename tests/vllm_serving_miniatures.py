"""Hand-written miniatures in the shape of vLLM's serving files: CacheConfig's defaults,
ModelConfig's tensor-parallel methods, MambaStateShapeCalculator and the hybrid page rule."""

CACHE_PATH = "vllm/config/cache.py"
MAMBA_PATH = "vllm/model_executor/layers/mamba/mamba_utils.py"
PLATFORM_PATH = "vllm/platforms/interface.py"
LINEAR_PATH = "vllm/model_executor/layers/linear.py"

CACHE_CONFIG = '''
from typing import ClassVar


@config
class CacheConfig:
    """Miniature cache config."""

    DEFAULT_BLOCK_SIZE: ClassVar[int] = 32

    block_size: int = Field(default=None, gt=0)
    gpu_memory_utilization: float = Field(default=0.85, gt=0, le=1)
    swap_space: float = 4

    @model_validator(mode="after")
    def _fill_block_size(self) -> "CacheConfig":
        if self.block_size is None:
            self.block_size = self.DEFAULT_BLOCK_SIZE
        return self


CacheDType = Literal[
    "auto",  # the model's dtype
    "bfloat16",
    "fp8",
]
'''

# Methods appended to a miniature ModelConfig class body (four-space indent).
MODEL_CONFIG_TP_METHODS = '''
    def verify_with_parallel_config(self, parallel_config) -> None:
        heads = self.model_arch_config.total_num_attention_heads
        tp = parallel_config.tensor_parallel_size
        if heads % tp != 0:
            raise ValueError("heads must divide")
        if parallel_config.pipeline_parallel_size > 1:
            pass

    def get_num_kv_heads(self, parallel_config) -> int:
        """KV heads per GPU."""
        if self.use_mla:
            return 1
        total = self.get_total_num_kv_heads()
        return max(1, total // parallel_config.tensor_parallel_size)
'''

# Appended to the miniature convertor base class (it reads num_attention_heads).
CONVERTOR_HEADS_METHOD = """
    def get_total_num_attention_heads(self) -> int:
        return getattr(self.hf_text_config, "n_heads_total", 0)
"""

MAMBA_UTILS = """
class MambaStateShapeCalculator:
    @classmethod
    def linear_attention_state_shape(cls, num_heads, tp_size, head_dim):
        return ((num_heads // tp_size, head_dim, head_dim),)

    @classmethod
    def mamba2_state_shape(cls, tp_world_size, intermediate_size, n_groups, num_heads,
                           head_dim, state_size, conv_kernel):
        n_groups = n_groups + cls.extra_groups(n_groups, tp_world_size)
        conv_dim = intermediate_size + 2 * n_groups * state_size
        conv = (divide(conv_dim, tp_world_size), conv_kernel - 1)
        temporal = (divide(num_heads, tp_world_size), head_dim, state_size)
        return conv, temporal

    @classmethod
    def extra_groups(cls, ngroups, tp_size):
        return 0 if ngroups % tp_size == 0 else tp_size - ngroups

    @staticmethod
    def _orient(dim: int, state_len: int) -> tuple[int, int]:
        if conv_dim_first():
            return (dim, state_len)
        return (state_len, dim)

    @classmethod
    def short_conv_state_shape(cls, tp_world_size: int, intermediate_size: int,
                               conv_kernel: int = 3):
        width = intermediate_size
        if width is None:
            width = 8
        conv = cls._orient(divide(width, tp_world_size), conv_kernel - 1)
        return (conv,)


class MambaStateDtypeCalculator:
    @classmethod
    def mamba2_state_dtype(cls, model_dtype, mamba_cache_dtype, mamba_ssm_cache_dtype):
        return cls._both(model_dtype, mamba_cache_dtype, mamba_ssm_cache_dtype)

    @classmethod
    def _both(cls, model_dtype, mamba_cache_dtype, mamba_ssm_cache_dtype):
        conv = get_kv_cache_torch_dtype(mamba_cache_dtype, model_dtype)
        if mamba_ssm_cache_dtype == "auto":
            temporal = conv
        else:
            temporal = STR_DTYPE_TO_TORCH_DTYPE[mamba_ssm_cache_dtype]
        return (conv, temporal)

    @classmethod
    def short_conv_state_dtype(cls, model_dtype, mamba_cache_dtype):
        return (torch.float32,)
"""

PLATFORM_INTERFACE = """
class Platform:
    @classmethod
    def _align_hybrid_block_size(cls, vllm_config, backend_cls) -> None:
        cache_config = vllm_config.cache_config
        page_1 = 100
        mamba_page = 1000
        align = max(
            min(s for s in backend_cls.get_supported_kernel_block_sizes()),
            cache_config.block_size,
        )
        if cache_config.mamba_cache_mode == "all":
            chunk = lcm(256, align)
            attn_block_size = chunk * cdiv(cdiv(mamba_page, page_1), chunk)
        else:
            attn_block_size = align * cdiv(mamba_page, align * page_1)
        if cache_config.block_size < attn_block_size:
            cache_config.block_size = attn_block_size
        attn_page_size = cache_config.block_size * page_1
        cache_config.mamba_page_size_padded = attn_page_size
"""


LINEAR = """
class QKVParallelLinear(ColumnParallelLinear):
    def __init__(self, hidden_size, head_size, total_num_heads, total_num_kv_heads=None):
        self.total_num_kv_heads = total_num_kv_heads or total_num_heads
        tp_size = get_tp_world_size()
        self.num_heads = divide(total_num_heads, tp_size)
        if tp_size >= self.total_num_kv_heads:
            self.num_kv_heads = 1
            self.replicas = divide(tp_size, self.total_num_kv_heads)
        else:
            self.num_kv_heads = divide(self.total_num_kv_heads, tp_size)
            self.replicas = 1
"""


SIZING_INTERFACE_PATH = "vllm/v1/kv_cache_interface.py"
SIZING_CONFIG_PATH = "vllm/config/vllm.py"
SIZING_ARGS_PATH = "vllm/engine/arg_utils.py"

# Hand-written shapes of the sizing methods (not vLLM's text): a cap with a local, a
# three-way if/elif/else, a property with nested returns, a try and dict defaults.
SIZING_INTERFACE = """
class FullAttentionSpec(AttentionSpec):
    def max_memory_usage_bytes(self, vllm_config):
        max_model_len = vllm_config.model_config.max_model_len
        if vllm_config.parallel_config.decode_context_parallel_size > 1:
            max_model_len = cdiv(max_model_len, vllm_config.parallel_config.decode_context_parallel_size)
        return cdiv(max_model_len, self.block_size) * self.page_size_bytes


class SlidingWindowSpec(AttentionSpec):
    def max_admission_blocks_per_request(self, max_in_flight_tokens, max_model_len):
        # a comment the reader never sees
        num_tokens = min(self.sliding_window - 1 + max_in_flight_tokens, max_model_len)
        return cdiv(num_tokens, self.block_size) + 1


class MambaSpec(KVCacheSpec):
    def max_memory_usage_bytes(self, vllm_config):
        if vllm_config.cache_config.mamba_cache_mode == "all":
            return cdiv(vllm_config.model_config.max_model_len, self.block_size) * self.page_size_bytes
        elif vllm_config.cache_config.mamba_cache_mode == "align":
            return self.page_size_bytes * 2
        else:
            return self.page_size_bytes
"""

SIZING_CONFIG = """
class VllmConfig:
    @property
    def max_concurrent_batches(self) -> int:
        pp = self.parallel_config.pipeline_parallel_size
        if self.scheduler_config.async_scheduling:
            if pp <= 1:
                return 2
        return pp

    @property
    def max_in_flight_tokens(self) -> int:
        return self.max_concurrent_batches * self.scheduler_config.max_num_batched_tokens
"""

SIZING_ARGS = """
class EngineArgs:
    @classmethod
    def get_batch_defaults(cls, world_size):
        from vllm.usage.usage_lib import UsageContext

        tokens: dict[UsageContext | None, int]
        try:
            device_memory = current_platform.get_device_total_memory()
        except Exception:
            device_memory = 0
        if device_memory >= 70 * GiB_bytes:
            tokens = {UsageContext.OPENAI_API_SERVER: 8192}
        else:
            tokens = {UsageContext.OPENAI_API_SERVER: 2048}
        if current_platform.is_cpu():
            logger.info("cpu")
            tokens = {UsageContext.OPENAI_API_SERVER: 2048 * world_size}
        return tokens
"""


ARGPARSE_PATH = "vllm/utils/argparse_utils.py"
ARGPARSE = """
def human_readable_int(value):
    value = value.strip()
    match = re.fullmatch(r"(\\d+)([kK])", value)
    if match:
        decimal_multiplier = {"k": 10**3}
        binary_multiplier = {
            "K": 2**10,
        }
        number, suffix = match.groups()
        return int(number) * (decimal_multiplier.get(suffix) or binary_multiplier[suffix])
    return int(value)


def human_readable_int_or_auto(value):
    value = value.strip()
    if value == "-1" or value.lower() == "auto":
        return -1
    return human_readable_int(value)
"""


def sizing_files() -> dict[str, str]:
    return {
        ARGPARSE_PATH: ARGPARSE,
        SIZING_INTERFACE_PATH: SIZING_INTERFACE,
        SIZING_CONFIG_PATH: SIZING_CONFIG,
        SIZING_ARGS_PATH: SIZING_ARGS,
    }


def serving_files() -> dict[str, str]:
    return {
        **sizing_files(),
        CACHE_PATH: CACHE_CONFIG,
        MAMBA_PATH: MAMBA_UTILS,
        PLATFORM_PATH: PLATFORM_INTERFACE,
        LINEAR_PATH: LINEAR,
        **backend_files(),
    }


CUDA_PATH = "vllm/platforms/cuda.py"
BACKEND_REGISTRY_PATH = "vllm/v1/attention/backends/registry.py"
BACKEND_BASE_PATH = "vllm/v1/attention/backend.py"

CUDA_PRIORITIES = """
def _get_backend_priorities(use_mla, device_capability):
    if use_mla:
        if device_capability.major == 10:
            return [AttentionBackendEnum.WIDE_MLA, AttentionBackendEnum.SMALL_MLA]
        else:
            return [AttentionBackendEnum.SMALL_MLA, AttentionBackendEnum.GONE]
    else:
        return [AttentionBackendEnum.FLASH, AttentionBackendEnum.COMPUTED]
"""

BACKEND_REGISTRY = '''
class AttentionBackendEnum(Enum, metaclass=_Meta):
    """Backends."""

    FLASH = "vllm.v1.attention.backends.flash.FlashBackend"
    COMPUTED = "vllm.v1.attention.backends.flash.ComputedBackend"
    SMALL_MLA = "vllm.v1.attention.backends.mla.small.SmallMLABackend"
    WIDE_MLA = (
        "vllm.v1.attention.backends.mla.small.WideMLABackend"
    )
'''

BACKEND_BASE = """
class AttentionBackend(ABC):
    @staticmethod
    def get_supported_kernel_block_sizes():
        return [MultipleOf(1)]

    @classmethod
    def supports_block_size(cls, block_size):
        for supported_size in cls.get_supported_kernel_block_sizes():
            if isinstance(supported_size, MultipleOf):
                supported_size = supported_size.base
            if block_size % supported_size == 0:
                return True
        return False

    @classmethod
    def get_preferred_block_size(cls, default_block_size):
        supported_sizes = cls.get_supported_kernel_block_sizes()
        if not supported_sizes:
            return default_block_size
        if cls.supports_block_size(default_block_size):
            return default_block_size
        return min(s.base if isinstance(s, MultipleOf) else s for s in supported_sizes)
"""

FLASH_BACKEND = """
from vllm.v1.attention.backend import AttentionBackend


class FlashBackend(AttentionBackend):
    @staticmethod
    def get_supported_kernel_block_sizes():
        return [MultipleOf(16)]

    @classmethod
    def get_preferred_block_size(cls, default_block_size):
        if current_platform.is_xpu():
            return 64
        return super().get_preferred_block_size(default_block_size)


class ComputedBackend(AttentionBackend):
    @staticmethod
    def get_supported_kernel_block_sizes():
        sizes = [16]
        if large_pages():
            sizes.append(128)
        return sizes
"""

SMALL_MLA_BACKEND = """
from vllm.v1.attention.backend import AttentionBackend


class MLACommon(AttentionBackend):
    pass


class SmallMLABackend(MLACommon):
    @staticmethod
    def get_supported_kernel_block_sizes():
        return [64]


class WideMLABackend(MLACommon):
    @staticmethod
    def get_supported_kernel_block_sizes():
        return [32, 64]
"""


def backend_files() -> dict[str, str]:
    return {
        CUDA_PATH: CUDA_PRIORITIES,
        BACKEND_REGISTRY_PATH: BACKEND_REGISTRY,
        BACKEND_BASE_PATH: BACKEND_BASE,
        "vllm/v1/attention/backends/flash.py": FLASH_BACKEND,
        "vllm/v1/attention/backends/mla/small.py": SMALL_MLA_BACKEND,
    }
