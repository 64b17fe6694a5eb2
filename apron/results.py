"""The answer types: records (apron.record: tuples with named fields, cheap to create);
`apron.json_model` mirrors them in pydantic."""

from __future__ import annotations

from apron.constraints import Citation
from apron.record import Record

PREDICTION = "prediction"
# `apron plan --json` layout version: bumped when a field is removed, renamed or changes meaning
# (adding a field does not bump it). 2: per-GPU shares, capacity and weights (tp, gpu memory).
# 3: llama.cpp's kv_bytes_at_context is one sequence at the context, like every engine's (it was
# n_ctx / n_seq_max of an n_ctx of --context); the batch total is bytes_for_batch.
# 4: engines[].gpu.tp is gone: every share is at the plan's tp, held once in request.tp (and
# written as the top-level tp, as before).
SCHEMA_VERSION = 4


class Request(Record):
    """What was asked: context length, KV dtype and batch size."""

    context: int | None
    context_source: str
    kv_dtype: str
    kv_dtype_bytes: int
    batch: int
    max_model_len: int | None = None  # the engine's derived maximum (vLLM's rule), None unknown
    max_model_len_source: str = ""
    context_warnings: tuple[str, ...] = ()
    ssm_dtype: str = ""  # --mamba-ssm-cache-dtype as the engine resolves it; "" = model dtype
    ssm_dtype_source: str = ""
    tp: int = 1  # the tensor-parallel size asked (--tp), held here only; whole-model figures
    # are computed at tp 1 (apron.planning.planner.whole_model), one GPU's share at this tp
    kv_dtype_source: str = ""  # with --kv-dtype auto: how the engine resolved it; "" = given


class HeadCount(Record):
    """KV heads per attention layer as one engine's rule resolves them (or unknown, with why)."""

    count: int | None
    per_layer: tuple[int, ...]
    how: str
    unknown: tuple[str, ...]
    missing: tuple[str, ...]
    citations: tuple[Citation, ...]

    @property
    def known(self) -> bool:
        return self.count is not None or bool(self.per_layer)


class MlaDecision(Record):
    """Whether one engine's extracted rule caches this config as an MLA latent."""

    engine: str
    is_mla: bool | None
    why: str
    citations: tuple[Citation, ...]


class MechanismResult(Record):
    """One mechanism's figures for one sequence; None means unknown (see `unknown`, `missing`).

    kv_bytes_per_token: bytes each new token adds while every caching layer keeps it (for a
    sliding-window model, before the window fills: the naive per-token figure).
    kv_bytes_at_context: one sequence's KV at the requested context (window- or hybrid-aware).
    naive_kv_bytes_at_context: what an engine that ignores the window (or gives every layer of a
    hybrid a KV cache) allocates; naive_ratio is naive / aware at the requested context.
    state_bytes_per_sequence: fixed recurrent state (0 when the mechanism has none)."""

    mechanism: str
    title: str
    kv_bytes_per_token: int | None
    kv_bytes_at_context: int | None
    naive_kv_bytes_at_context: int | None
    naive_ratio: float | None
    state_bytes_per_sequence: int | None
    unknown: tuple[str, ...]
    missing: tuple[str, ...]
    arithmetic: tuple[str, ...]
    notes: tuple[str, ...]

    @property
    def known(self) -> bool:
        return not self.unknown


class GpuShare(Record):
    """One engine's figures for one GPU at the plan's tensor-parallel size (Request.tp; tp 1:
    the whole model).

    status: "split" (figures below), "refused" (the engine refuses this tp: `refused` says why,
    `valid_tp` what works), "unknown" (a rule is missing: `unknown` says which)."""

    status: str
    kv_heads_per_gpu: int | None  # None also for MLA (no head factor) and per-layer counts
    kv_heads_how: str
    kv_bytes_per_token: int | None
    kv_bytes_at_context: int | None
    state_bytes_per_sequence: int | None
    weights_bytes: int | None
    refused: tuple[str, ...]
    valid_tp: tuple[int, ...]
    unknown: tuple[str, ...]
    arithmetic: tuple[str, ...]


class Verdict(Record):
    """Whether `batch` sequences at the context fit one GPU in one engine, as that engine sizes
    them: weights + KV + state against GPU memory x the engine's memory fraction; and, when they
    do not, the largest context at this batch and the largest batch at this context that do.

    fits None: unknown (reason says why). largest_context / largest_batch: None unknown, 0 none."""

    fits: bool | None
    reason: str
    weights_fit: bool | None
    budget_bytes: int | None  # GPU memory x memory fraction (the engine's usable memory)
    weights_bytes: int | None
    cache_bytes: int | None  # KV + state the batch at the context takes, as the engine allocates
    largest_context: int | None
    largest_batch: int | None
    notes: tuple[str, ...]
    context: int | None = None  # the context it is for, when the engine chose another (auto)


class Capacity(Record):
    """What fits on one GPU for one engine: a prediction from gpu_memory x memory_fraction minus
    the weights; activations, CUDA graphs and non-torch memory are not modelled (see notes).

    limit: "kv" (the KV blocks of a sequence at the context run out first), "state" (the fixed
    per-sequence state is the larger part), "weights" (nothing fits), "" unknown."""

    gpu_memory_bytes: int
    memory_fraction: float | None
    memory_fraction_source: str
    block_tokens: int | None
    block_tokens_source: str
    budget_bytes: int | None
    blocks: int | None
    block_bytes: int | None
    kv_tokens: int | None
    blocks_per_sequence: int | None
    sequence_bytes: int | None
    sequences: int | None
    limit: str
    unknown: tuple[str, ...]
    arithmetic: tuple[str, ...]
    notes: tuple[str, ...]
    max_concurrency: float | None = None  # requests at the context the pool holds (vLLM's figure)
    verdict: Verdict | None = None  # whether --batch at --context fits, and what would
    # how the engine lays the pool out: vLLM "uniform", "uniform_type", "groups"; SGLang
    # "default", "hybrid_swa", "mamba" (its configurator); "" unknown
    layout: str = ""


class DtypeWeights(Record):
    """Checkpoint tensor bytes of one dtype."""

    dtype: str
    bytes: int
    tensors: int


class Weights(Record):
    """The checkpoint's weight bytes (never a parameter-count guess), or unknown with why."""

    total_bytes: int | None
    by_dtype: tuple[DtypeWeights, ...]
    source: str
    unknown: str
    notes: tuple[str, ...]


class LlamaCppContext(Record):
    """How llama.cpp holds the batch: its n_ctx is split across n_seq_max sequences (unless the
    KV cache is unified), so serving `batch` sequences of `context` tokens takes
    n_ctx = batch x context with n_seq_max = batch; n_ctx_seq is what each sequence gets."""

    n_ctx: int
    n_seq_max: int
    n_ctx_seq: int
    kv_unified: bool
    words: str  # the same, for people


class EngineView(Record):
    """What one engine at its pinned commit would do with this config."""

    engine: str
    title: str
    commit: str | None
    status: str  # "constraints used", "constraints absent"
    registered: bool | None  # architectures[0] in the engine's registry; None when not extracted
    flags: tuple[str, ...]  # architecture classes the engine assigns (llama.cpp: hybrid, ...)
    mechanism: str | None
    kv_bytes_per_token: int | None
    kv_bytes_at_context: int | None
    naive_kv_bytes_at_context: int | None
    state_bytes_per_sequence: int | None
    differs_from_prediction: bool
    notes: tuple[str, ...]
    citations: tuple[Citation, ...]
    gpu: GpuShare | None = None  # per-GPU figures at --tp (None: no figures to split)
    capacity: Capacity | None = None  # what fits, when --gpu-memory is given
    # KV + state of --batch sequences at the context, as this engine allocates them, per GPU
    # (kv_bytes_at_context is one sequence's)
    bytes_for_batch: int | None = None
    llamacpp_context: LlamaCppContext | None = None  # llama.cpp's split of n_ctx (its column)
    context: int | None = None  # the context this engine's figures are at
    context_source: str = ""  # where it came from (--context, or the engine's own default)


class SupportEntry(Record):
    """One registration of the architecture in one engine (a registry row, a table row, ...)."""

    kind: str
    task_group: str
    detail: str
    constraints: tuple[str, ...]
    citation: Citation


class EngineSupport(Record):
    """Whether one engine registers architectures[0], from its generated constraints."""

    engine: str
    title: str
    commit: str | None
    status: str  # "registered", "not registered", "constraints absent", "no architecture"
    entries: tuple[SupportEntry, ...]
    notes: tuple[str, ...]


class EngineStamp(Record):
    """An engine whose constraints this answer used (or that had none)."""

    engine: str
    title: str
    commit: str | None
    commit_date: str | None
    present: bool


class Plan(Record):
    """A labelled prediction for one config: mechanism, bytes, per-engine view, engine support."""

    label: str
    source: str
    architecture: str | None
    model_type: str | None
    text_model_type: str | None
    text_config_key: str | None
    request: Request
    kv_heads: HeadCount
    prediction: MechanismResult
    kv_bytes_for_batch: int | None
    state_bytes_for_batch: int | None
    total_bytes_for_batch: int | None
    engines: tuple[EngineView, ...]
    support: tuple[EngineSupport, ...]
    constraints: tuple[EngineStamp, ...]
    notes: tuple[str, ...]
    gpu_memory_bytes: int | None = None
    weights: Weights | None = None
    schema_version: int = SCHEMA_VERSION
    pp: int = 1  # pipeline-parallel stages: capacity is per stage (vLLM)

    # properties `apron plan --json` writes beside the fields (apron.json_model)
    _json_properties = ("tp",)

    @property
    def tp(self) -> int:
        """The tensor-parallel size asked (held once, in the request)."""
        return self.request.tp
