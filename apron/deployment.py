"""What a deployment asks beyond the model and the context: the GPU, the memory fraction, the
batch, pipeline parallelism and the engine settings apron models (block size, batched tokens, a
fixed KV cache size). None means the engine's own default."""

from __future__ import annotations

from apron.record import Record


class LlamaCppFlags(Record):
    """llama.cpp's context flags apron models (None: llama.cpp's default, common_params)."""

    type_k: str | None = None  # -ctk
    type_v: str | None = None  # -ctv
    flash_attn: str = "auto"  # -fa on|off|auto
    kv_unified: bool | None = None  # -kvu / -no-kvu
    swa_full: bool | None = None  # --swa-full
    n_batch: int | None = None  # -b: the logical batch; n_ubatch = min(n_batch, n_ubatch)
    n_ubatch: int | None = None  # -ub: sizes the SWA cache (GGML_PAD(n_swa + n_ubatch, 256))

    def overrides(self) -> dict[str, int]:
        """The llama_context parameters they set, by the names apron.engines.llamacpp.memory binds."""
        found: dict[str, int] = {}
        if self.kv_unified is not None:
            found["kv_unified"] = int(self.kv_unified)
        if self.swa_full is not None:
            found["swa_full"] = int(self.swa_full)
        if self.n_batch is not None:
            found["n_batch"] = self.n_batch
        if self.n_ubatch is not None:
            found["n_ubatch"] = self.n_ubatch
        return found


class Deployment(Record):
    """One GPU's settings, as given on the command line (None: the engine decides)."""

    gpu_memory: int | None = None  # bytes per GPU
    gpu_name: str = ""  # the part's name, when given with --gpu ("H100 SXM")
    memory_fraction: float | None = None  # overrides every engine's default
    batch: int = 1  # sequences that must fit at once
    pp: int = 1  # pipeline-parallel stages: layers are split between them
    block_size: int | None = None  # vLLM --block-size
    max_num_batched_tokens: int | None = None  # vLLM --max-num-batched-tokens
    async_scheduling: bool | None = None  # vLLM --(no-)async-scheduling (None: its default, on)
    prefix_caching: bool | None = None  # vLLM --enable-prefix-caching (None: vllm serve's default)
    kv_cache_memory_bytes: int | None = None  # vLLM --kv-cache-memory-bytes: the KV budget itself
    swa_full_tokens_ratio: float | None = None  # SGLang --swa-full-tokens-ratio
    max_model_len_auto: bool = False  # vLLM --max-model-len auto: fit the length to memory
    llamacpp: LlamaCppFlags = LlamaCppFlags()  # llama.cpp's context flags
