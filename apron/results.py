"""The answer types: plain NamedTuples (cheap to import); `apron.json_model` mirrors them in pydantic."""

from __future__ import annotations

from typing import NamedTuple

from apron.constraints import Citation

PREDICTION = "prediction"


class Request(NamedTuple):
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
    kv_dtype_source: str = ""  # with --kv-dtype auto: how the engine resolved it; "" = given


class HeadCount(NamedTuple):
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


class MlaDecision(NamedTuple):
    """Whether one engine's extracted rule caches this config as an MLA latent."""

    engine: str
    is_mla: bool | None
    why: str
    citations: tuple[Citation, ...]


class MechanismResult(NamedTuple):
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


class EngineView(NamedTuple):
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


class SupportEntry(NamedTuple):
    """One registration of the architecture in one engine (a registry row, a table row, ...)."""

    kind: str
    task_group: str
    detail: str
    constraints: tuple[str, ...]
    citation: Citation


class EngineSupport(NamedTuple):
    """Whether one engine registers architectures[0], from its generated constraints."""

    engine: str
    title: str
    commit: str | None
    status: str  # "registered", "not registered", "constraints absent", "no architecture"
    entries: tuple[SupportEntry, ...]
    notes: tuple[str, ...]


class EngineStamp(NamedTuple):
    """An engine whose constraints this answer used (or that had none)."""

    engine: str
    title: str
    commit: str | None
    commit_date: str | None
    present: bool


class Plan(NamedTuple):
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
