"""Hand-written miniatures in the shape of SGLang's serving files: ServerArgs's page size and
memory fraction, the page-size pass, the pool cell size, LlamaAttention's head checks, the
ModelConfig KV-head split and a *StateShape class."""

SERVER_ARGS_PATH = "python/sglang/srt/server_args.py"
OVERRIDES_PATH = "python/sglang/srt/arg_groups/overrides.py"
POOL_PATH = "python/sglang/srt/model_executor/pool_configurator.py"
MAMBA_PATH = "python/sglang/srt/configs/mamba_utils.py"
LLAMA_PATH = "python/sglang/srt/models/llama.py"

SERVER_ARGS = """
from typing import Optional


@dataclasses.dataclass
class ServerArgs:
    model_path: str = ""
    mem_fraction_static: A[Optional[float], "fraction", NS("schedule")] = None
    swa_full_tokens_ratio: A[float, "ratio", NS("schedule")] = 0.8
    page_size: A[Optional[int], Arg(help="tokens in a page"), NS("schedule")] = None
    tp_size: int = 1
    pp_size: A[int, "pipeline stages", NS("parallel")] = 1
    dp_size: int = 1
    chunked_prefill_size: Optional[int] = None
    max_total_tokens: Optional[int] = None
    disaggregation_mode: A[str, "PD", NS("disagg")] = "null"
    enable_dp_attention: bool = False
    moe_a2a_backend: A[str, "a2a", NS("exec.moe")] = "none"
    language_only: bool = False
    language_model_only: bool = False

    def _handle_page_size(self):
        from sglang.srt.arg_groups.overrides import _page_default, run_post_process_pass

        run_post_process_pass(self, _page_default)

    def _handle_memory(self, gpu_mem):
        if self.mem_fraction_static is None:
            reserved = 1024 + self.tp_size * 512
            self.mem_fraction_static = (
                round((gpu_mem - reserved) / gpu_mem, 3) if gpu_mem is not None else 0.8
            )

    def _handle_gpu_memory_settings(self, gpu_mem):
        decode_cuda_graph_config = self.cuda_graph_config.decode
        prefill_cuda_graph_config = self.cuda_graph_config.prefill
        if gpu_mem is not None:
            if gpu_mem < 30 * 1024:
                if self.chunked_prefill_size is None:
                    self.chunked_prefill_size = 1024
                if decode_cuda_graph_config.max_bs is None:
                    decode_cuda_graph_config.max_bs = 16
            elif gpu_mem < 100 * 1024:
                if self.chunked_prefill_size is None:
                    self.chunked_prefill_size = 4096
                if decode_cuda_graph_config.max_bs is None:
                    if self.tp_size < 2:
                        decode_cuda_graph_config.max_bs = 64
                    else:
                        decode_cuda_graph_config.max_bs = 128
            else:
                if self.chunked_prefill_size is None:
                    self.chunked_prefill_size = 8192
                if decode_cuda_graph_config.max_bs is None:
                    decode_cuda_graph_config.max_bs = 256
        else:
            if self.chunked_prefill_size is None:
                self.chunked_prefill_size = 2048
        if prefill_cuda_graph_config.max_bs is None:
            if not self.use_mla_backend():
                prefill_cuda_graph_config.max_bs = self.chunked_prefill_size
            else:
                prefill_cuda_graph_config.max_bs = 1024
        if prefill_cuda_graph_config.bs is None:
            prefill_cuda_graph_config.bs = self._generate_prefill_cuda_graph_batch_sizes(
                prefill_cuda_graph_config.max_bs
            )
        if self.mem_fraction_static is None:
            if self.post_capture_kv_sizing_planned():
                reserved_mem = 256
            else:
                if self.chunked_prefill_size > 0:
                    activation_tokens = max(self.chunked_prefill_size, 1024)
                else:
                    activation_tokens = max(self.max_prefill_tokens, 1024)
                reserved_mem = 256
                reserved_mem += activation_tokens * 2
                reserved_mem += self.tp_size / 4 * 1024
                reserved_mem += self.reserve_for_graph_mb()
                if gpu_mem is not None and gpu_mem > 50 * 1024:
                    reserved_mem = max(reserved_mem, 12 * 1024)
                reserved_mem += self.reserve_for_deepep_a2a_mb()
            self.mem_fraction_static = (
                round((gpu_mem - reserved_mem) / gpu_mem, 3) if gpu_mem is not None else 0.9
            )
            model_config = self.get_model_config()
            if model_config.is_multimodal and not self.language_only:
                self.adjust_mem_fraction_for_vlm(model_config)

    def reserve_for_graph_mb(self):
        decode_cuda_graph_config = self.cuda_graph_config.decode
        prefill_cuda_graph_config = self.cuda_graph_config.prefill
        reserved_mem = 0
        if self.disaggregation_mode != "prefill":
            reserved_mem += decode_cuda_graph_config.max_bs * 4
        if self.disaggregation_mode != "decode":
            if not self.use_mla_backend():
                reserved_mem += len(prefill_cuda_graph_config.bs) * 16
            else:
                reserved_mem += 2 * 1024
        return reserved_mem

    def reserve_for_deepep_a2a_mb(self):
        if resolved_view(self).moe_a2a_backend == "deepep":
            return 3 * 1024
        return 0

    def _generate_prefill_cuda_graph_batch_sizes(self, max_bs: int):
        sizes = list(range(8, 65, 8)) + list(range(128, 1024 + 1, 128))
        sizes += list(range(2048, max_bs + 1, 1024))
        return [n for n in sizes if n <= max_bs]

    def adjust_mem_fraction_for_vlm(self, model_config):
        vision = model_config.hf_config.vision_config
        base_mem_fraction_reduction_ratio = 0.9
        vit_num_layers = getattr(vision, "num_hidden_layers", 12)
        vit_hidden_size = getattr(vision, "hidden_size", 768)
        baseline_vit_layers = 12
        baseline_vit_hidden_size = 768
        sensitivity_scale = 0.2
        dynamic_adjustment_factor = 1.0
        dynamic_adjustment_factor = max(0.7, min(1.1, dynamic_adjustment_factor))
        self.mem_fraction_static = self.mem_fraction_static * dynamic_adjustment_factor
"""

OVERRIDES = """
def _backend_pages(view):
    page_size = view.page_size
    if view.attention_backend == "flashmla":
        page_size = 64
    return {"page_size": page_size}


def _page_default(view):
    if view.page_size is not None:
        return {}
    if is_hip() and view.layout == "5d":
        return {"page_size": 32}
    if not is_musa():
        return {"page_size": 4}
    return {"page_size": 32}


MODEL_OVERRIDES: Dict[str, Dict[str, Any]] = {"TinyMistral": {"dtype": "bfloat16"}}


@_register_for("TinySwa", "TinySwaMtp")
def _tiny_swa_overrides(server_args, hf_config):
    overrides = {}
    # a ratio for the family unless the user gave one
    if server_args.swa_full_tokens_ratio == ServerArgs.swa_full_tokens_ratio:
        overrides["swa_full_tokens_ratio"] = 0.25
    if server_args.enable_hierarchical_cache:
        overrides["page_size"] = 64
    return overrides


@register_model_override_predicate(lambda arch: "TinyGemma" in arch)
def _tiny_gemma_overrides(server_args, hf_config):
    return {"disable_hybrid_swa_memory": True}
"""

POOL = """
class DefaultPoolConfigurator(MemoryPoolConfigurator):
    def _compute_cell_size(self, kvc, num_layers):
        model_config = kvc.model_config
        tp_size = get_parallel().attn_tp_size
        if kvc.use_mla_backend:
            cell_size = (model_config.kv_lora_rank + model_config.qk_rope_head_dim) * num_layers
        else:
            n = model_config.get_num_kv_heads(tp_size)
            cell_size = n * model_config.head_dim * 2 * num_layers
        return cell_size
"""

# Appended to the miniature llama module.
LLAMA_ATTENTION = """

class LlamaAttention(nn.Module):
    def __init__(self, config, hidden_size, num_heads, num_kv_heads):
        super().__init__()
        tp_size = get_parallel().tp_size
        self.total_num_heads = num_heads
        assert self.total_num_heads % tp_size == 0
        self.total_num_kv_heads = num_kv_heads
        if self.total_num_kv_heads >= tp_size:
            assert self.total_num_kv_heads % tp_size == 0
        else:
            assert tp_size % self.total_num_kv_heads == 0


class LlamaDecoderLayer(nn.Module):
    def __init__(self, config):
        self.self_attn = LlamaAttention(
            config=config,
            hidden_size=config.hidden_size,
            num_heads=config.n_query_heads,
            num_kv_heads=config.n_kv_heads,
        )
"""

# Inserted as the first method of the miniature ModelConfig class.
MODEL_CONFIG_KV_METHOD = '''
    def get_num_kv_heads(self, tensor_parallel_size, group_size: int = 1) -> int:
        """KV heads per GPU."""
        total = self.get_total_num_kv_heads()
        per_group = tensor_parallel_size // group_size
        return max(1, total // per_group)

'''

MAMBA_UTILS = """
@dataclass(kw_only=True, frozen=True)
class Mamba2StateShape:
    conv: list
    temporal: tuple

    @staticmethod
    def create(*, tp_world_size, intermediate_size, n_groups, num_heads, head_dim, state_size,
               conv_kernel):
        per_tp = divide(n_groups, tp_world_size) if n_groups % tp_world_size == 0 else 1
        if n_groups % tp_world_size != 0:
            extra = tp_world_size - n_groups
            n_groups += extra
        conv_dim = intermediate_size + 2 * n_groups * state_size
        conv_state_shape = divide(conv_dim, tp_world_size), conv_kernel - 1
        temporal_state_shape = (divide(num_heads, tp_world_size), head_dim, state_size)
        return Mamba2StateShape(conv=[conv_state_shape], temporal=temporal_state_shape,
                                per_tp=per_tp)
"""


def with_kv_method(model_config: str) -> str:
    """A miniature model_config.py with get_num_kv_heads as ModelConfig's first method."""
    return model_config.replace(
        "class ModelConfig:\n", "class ModelConfig:\n" + MODEL_CONFIG_KV_METHOD, 1
    )


def serving_files(llama: str) -> dict[str, str]:
    """The serving files, with `llama` (the miniature llama module) extended."""
    return {
        SERVER_ARGS_PATH: SERVER_ARGS,
        OVERRIDES_PATH: OVERRIDES,
        POOL_PATH: POOL,
        MAMBA_PATH: MAMBA_UTILS,
        LLAMA_PATH: llama + LLAMA_ATTENTION,
    }
