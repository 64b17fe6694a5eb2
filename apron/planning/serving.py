"""The capacity step of a plan: one engine's per-GPU share at --tp and, with --gpu-memory, what
fits, each engine by its own rules (apron.engines.base.EngineRules: memory_fraction, fit_capacity)."""

from __future__ import annotations

from apron import parallel
from apron.config import ModelConfig
from apron.constraints import Citation, EngineConstraints
from apron.deployment import Deployment
from apron.engines.base import CapacityInputs
from apron.mechanisms import mla_latent
from apron.mechanisms.select import Selection
from apron.planning.engine_registry import ENGINE_RULES
from apron.record import Record
from apron.results import Capacity, GpuShare, HeadCount, MechanismResult, Request, Weights


class Serving(Record):
    """What the per-GPU and capacity figures need beyond the request."""

    gpu_memory: int | None
    memory_fraction: float | None
    weights: Weights
    deployment: Deployment = Deployment()


def serving_figures(
    model: ModelConfig,
    request: Request,
    engine_id: str,
    constraints: EngineConstraints,
    selection: Selection,
    heads: HeadCount,
    figures: MechanismResult,
    serving: Serving,
    window_aware: bool | None = None,
) -> tuple[GpuShare, Capacity | None, tuple[Citation, ...]]:
    """The engine's per-GPU share at --tp and, with --gpu-memory, what fits (and the serving
    rules it cites)."""
    mla = figures.mechanism == mla_latent.NAME  # the MLA KV-head rule holds at tp 1 too
    if request.tp == 1 and serving.gpu_memory is None and not mla:  # no serving rule is needed
        return parallel.whole_model_share(heads, figures, serving.weights.total_bytes), None, ()
    from apron.mechanisms import per_gpu
    from apron.serving_rules import serving_rules

    rules = serving_rules(constraints, engine_id)
    share = per_gpu.gpu_share(
        model,
        request,
        request.tp,
        rules,
        selection,
        heads,
        figures,
        serving.weights.total_bytes,
        engine=ENGINE_RULES[engine_id],
    )
    used = rules.citations if request.tp > 1 or serving.gpu_memory is not None or mla else ()
    if serving.gpu_memory is None:
        return share, None, used
    fraction_lines: tuple[str, ...] = ()
    own = (
        ENGINE_RULES[engine_id].memory_fraction(
            constraints, model, figures.mechanism == mla_latent.NAME, serving.gpu_memory, request.tp
        )
        if serving.memory_fraction is None
        else None
    )
    if own is not None:
        fraction_lines = own.arithmetic
        rules = rules._replace(memory_fraction=own.fraction, memory_fraction_source=own.source)
        used = tuple(dict.fromkeys((*used, *own.citations)))
    fits = _engine_capacity(
        model, request, engine_id, constraints, figures, share, heads, rules, serving, window_aware
    )
    if fraction_lines:
        fits = fits._replace(arithmetic=(*fraction_lines, *fits.arithmetic))
    return share, fits, used


def _engine_capacity(
    model: ModelConfig,
    request: Request,
    engine_id: str,
    constraints: EngineConstraints,
    figures: MechanismResult,
    share: GpuShare,
    heads: HeadCount,
    rules,
    serving: Serving,
    window_aware: bool | None,
) -> Capacity:
    """What fits on one GPU, by the engine's own pool arithmetic (vLLM's KV cache groups,
    SGLang's pool configurators); the generic block fit for an engine without its own."""
    from apron.mechanisms import per_gpu

    deployment = serving.deployment._replace(
        gpu_memory=serving.gpu_memory,
        memory_fraction=serving.memory_fraction,
        batch=request.batch,
    )
    split = per_gpu.heads_per_gpu(model, heads, request.tp, rules)
    return ENGINE_RULES[engine_id].fit_capacity(
        CapacityInputs(
            constraints=constraints,
            model=model,
            mechanism=figures.mechanism,
            share=share,
            heads=split,
            request=request,
            rules=rules,
            deployment=deployment,
            context=request.context,
            weights_unknown=serving.weights.unknown,
            window_aware=window_aware,
        )
    )
