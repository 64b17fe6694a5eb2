"""What an engine module (apron/engines/<engine>.py, with ENGINE and `decide(model, constraints)`)
returns: its decisions for one config, from its constraints."""

from __future__ import annotations

from typing import NamedTuple

from apron.constraints import Citation
from apron.results import HeadCount, MlaDecision


class EngineDecision(NamedTuple):
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


class ContextDefault(NamedTuple):
    """An engine's own default context for a config (its `default_context(model, constraints)`
    hook, used when --context is not given): tokens (None: unknown, see how), how it is derived,
    and where the rule is."""

    tokens: int | None
    how: str
    citations: tuple[Citation, ...] = ()
