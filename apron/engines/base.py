"""The protocol every engine package (apron/engines/<engine>/) implements for the planner, its
records, and the shared defaults an engine assigns for what it has nothing of its own for."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from apron.config import ModelConfig
from apron.constraints import Citation, EngineConstraints
from apron.deployment import Deployment
from apron.kv_dtype import KvDtypeChoice
from apron.record import Record
from apron.results import Capacity, EngineView, GpuShare, HeadCount, MlaDecision, Request


class EngineDecision(Record):
    """What one engine's extracted rules decide for a config.

    kv_heads / mla: the engine's own resolution (None when it has no such rule extracted).
    flags: architecture classes the engine assigns ("hybrid", "recurrent", "diffusion", ...).
    computes_figures: whether the extracted rules are enough to say what the engine allocates.
    window_aware: whether the engine sizes sliding-window layers to their window (None: apron's
    layout decides); False means every layer is allocated at full context, for `window_why`.
    own_flags: the flags are the engine's own classification of the architecture; its view uses
    them instead of every engine's flags.
    no_kv_cache: why the engine allocates no KV cache for this config ("" when it does).
    encoder_only_kv: why the engine sizes its ordinary KV pool even for an encoder-only model
    ("" when it follows the encoder-only decision)."""

    engine: str
    kv_heads: HeadCount | None
    mla: MlaDecision | None
    flags: tuple[str, ...]
    notes: tuple[str, ...]
    citations: tuple[Citation, ...]
    computes_figures: bool
    window_aware: bool | None = None
    window_why: str = ""
    own_flags: bool = False
    no_kv_cache: str = ""
    encoder_only_kv: str = ""


class ContextDefault(Record):
    """An engine's own default context for a config (its `default_context(model, constraints)`
    hook, used when --context is not given): tokens (None: unknown, see how), how it is derived,
    and where the rule is."""

    tokens: int | None
    how: str
    citations: tuple[Citation, ...] = ()


class MemoryFraction(Record):
    """An engine's own default memory fraction for a config (used when --memory-fraction is not
    given), where it comes from, the arithmetic lines and the rules it cites."""

    fraction: float | None
    source: str
    arithmetic: tuple[str, ...]
    citations: tuple[Citation, ...]


class EngineRules(Protocol):
    """What the planner asks each engine's package (apron/engines/<engine>/) for; an engine with
    nothing of its own for a member assigns the shared default below (pre-commit's lang_base)."""

    ENGINE: str

    def decide(self, model: ModelConfig, constraints: EngineConstraints) -> EngineDecision:
        """Its decisions for one config (KV heads, MLA, flags, whether it computes figures)."""

    def default_context(
        self, model: ModelConfig, constraints: EngineConstraints
    ) -> ContextDefault | None:
        """Its own default context when --context is not given; None: the shared one."""

    def own_view(self, column: Column) -> EngineView | None:
        """Its whole column by its own sizing rules; None: the shared mechanism path."""

    def memory_fraction(
        self,
        constraints: EngineConstraints,
        model: ModelConfig,
        mla: bool,
        gpu_memory: int,
        tp: int,
    ) -> MemoryFraction | None:
        """Its default memory fraction for this config; None: its serving rules' fraction."""

    def fit_capacity(self, fit: CapacityInputs) -> Capacity:
        """What fits on one GPU by its own pool arithmetic."""

    def pooling(self, model: ModelConfig, constraints: EngineConstraints) -> bool:
        """Whether it runs the config as a pooling (embedding) model: its KV dtype auto differs."""

    def kv_dtype_unknown(
        self, model: ModelConfig, constraints: EngineConstraints, kv_dtype: str
    ) -> str:
        """Why its KV cell at this KV dtype depends on what it decides on the GPU at run time
        ("" when it does not): its KV figures are then unknown."""

    def tp_refusals(self, model: ModelConfig, tp: int) -> tuple[str, ...]:
        """Why it refuses `tp` for this config besides its extracted tp checks (rules of its model
        code read by hand); () when it does not."""

    def state_tp_refusal(self, model: ModelConfig, state_rule: Any, tp: int) -> str:
        """Why its state mixer for `state_rule` (apron.state_shapes) refuses `tp` ("" when it
        does not)."""

    def auto_kv_dtype(
        self,
        constraints: EngineConstraints | None,
        config: Mapping[str, Any],
        model_dir: Path | None,
        mla: bool,
        pooling: bool,
    ) -> KvDtypeChoice | None:
        """What `--kv-dtype auto` resolves to for this checkpoint; None: not extracted."""


class Column(Record):
    """What an engine's own column is computed from (EngineRules.own_view)."""

    model: ModelConfig
    request: Request
    constraints: EngineConstraints
    decision: EngineDecision
    registered: bool | None
    notes: tuple[str, ...]
    citations: tuple[Citation, ...]
    deployment: Deployment


class CapacityInputs(Record):
    """What an engine's capacity rule reads (EngineRules.fit_capacity)."""

    constraints: EngineConstraints
    model: ModelConfig
    mechanism: str | None
    share: GpuShare
    heads: HeadCount
    request: Request
    rules: Any  # apron.serving_rules.ServingRules
    deployment: Deployment
    context: int | None
    weights_unknown: str
    window_aware: bool | None


def no_default_context(model: ModelConfig, constraints: EngineConstraints) -> None:
    """The shared default: the context the request already carries."""
    return None


def no_own_view(column: Column) -> None:
    """The shared default: the column comes from apron's mechanism path."""
    return None


def no_memory_fraction(
    constraints: EngineConstraints, model: ModelConfig, mla: bool, gpu_memory: int, tp: int
) -> None:
    """The shared default: the memory fraction of the engine's serving rules."""
    return None


def block_capacity(fit: CapacityInputs) -> Capacity:
    """The shared default: the generic block fit (apron.mechanisms.per_gpu.engine_capacity)."""
    from apron.mechanisms import per_gpu

    return per_gpu.engine_capacity(
        fit.model,
        fit.mechanism,
        fit.share,
        fit.rules,
        fit.deployment.gpu_memory,
        fit.deployment.memory_fraction,
        fit.context,
        fit.weights_unknown,
    )


def no_auto_kv_dtype(
    constraints: EngineConstraints | None,
    config: Mapping[str, Any],
    model_dir: Path | None,
    mla: bool,
    pooling: bool,
) -> None:
    """The shared default: how the engine resolves `auto` is not among the extracted rules."""
    return None


def kv_dtype_known(model: ModelConfig, constraints: EngineConstraints, kv_dtype: str) -> str:
    """The shared default: the KV cell does not depend on a run-time decision."""
    return ""


def no_tp_refusals(model: ModelConfig, tp: int) -> tuple[str, ...]:
    """The shared default: no tp refusal beyond the extracted tp checks."""
    return ()


def no_state_tp_refusal(model: ModelConfig, state_rule: Any, tp: int) -> str:
    """The shared default: its state mixers refuse no tp of their own."""
    return ""


def not_pooling(model: ModelConfig, constraints: EngineConstraints) -> bool:
    """The shared default: no pooling-model rule of its own."""
    return False
