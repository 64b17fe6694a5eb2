"""The figures `extract bump` compares before and after a pin moves.

`sample_figures(constraints)` plans every shipped sample and every impact sample (one model per
mechanism, apron/samples/impact/) at a fixed context, at tp 1 and tp 8, with a fixed weights
figure on an 80 GiB GPU, and flattens what a reviewer cares about into `ImpactFigure`s: apron's
prediction and each engine's view at its pin, capacity included (memory fraction, block size,
KV tokens and sequences that fit), each with the reason apron gives when it is unknown."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from apron.config import SAMPLES_DIR, load_sample, sample_names
from apron.constraints import ConstraintSet, load_constraints
from apron.errors import ApronInputError
from apron.planning.planner import plan
from apron.record import Record
from apron.render import short_bytes
from apron.results import EngineView, Plan

IMPACT_CONTEXT = 32768
IMPACT_TPS = (1, 8)  # the whole-model figures and one GPU's share (tensor-parallel rules)
IMPACT_GPU_MEMORY = 80 * 2**30
IMPACT_GPU_WORDS = "80 GiB"
IMPACT_WEIGHTS = 16 * 2**30  # a fixed weights figure: the samples hold no checkpoint
IMPACT_DIR = SAMPLES_DIR / "impact"
PREDICTION = "apron"  # the engine name of the prediction's figures
FAMILIES = {  # a mechanism's models, in words
    "full_attention": "dense models",
    "mla_latent": "MLA models",
    "sliding_window": "sliding-window models",
    "hybrid_ssm": "hybrid models",
    "recurrent": "recurrent models",
    "encoder_only": "encoder-only models",
    "encoder_decoder": "encoder-decoder models",
}


class ImpactFigure(Record):
    """One figure of one sample: who computes it (`engine`: a title, or "apron" for the
    prediction), what it is in words, at which tp, its value as people read it ("unknown" when
    apron has none) and why apron says what it says (its unknown reason, or its notes)."""

    sample: str
    family: str  # the sample's mechanism family in words ("dense models")
    architecture: str  # the sample's architectures[0] and model_type, space-separated
    engine: str
    figure: str
    tp: int
    value: str
    reason: str = ""

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.sample, self.engine, self.figure, self.tp)


def impact_samples() -> list[tuple[str, Path | None]]:
    """(name, path) of every sample the impact check plans: the shipped ones (path None: read by
    name), then the impact samples."""
    shipped: list[tuple[str, Path | None]] = [(name, None) for name in sample_names()]
    return shipped + [(p.stem, p) for p in sorted(IMPACT_DIR.glob("*.json"))]


def sample_figures(
    constraints: ConstraintSet | Path | None = None, context: int = IMPACT_CONTEXT
) -> list[ImpactFigure]:
    """The figures with `constraints` (a set, or the directory of a generated/ to load; default:
    the installed generated/)."""
    if not isinstance(constraints, ConstraintSet):
        constraints = load_constraints(constraints)
    found: list[ImpactFigure] = []
    for name, path in impact_samples():
        for tp in IMPACT_TPS:
            config = load_sample(name, constraints) if path is None else path
            try:
                result = plan(
                    config,
                    context=context,
                    constraints=constraints,
                    tp=tp,
                    gpu_memory=IMPACT_GPU_MEMORY,
                    weights_bytes=IMPACT_WEIGHTS,
                )
            except ApronInputError as err:  # no engine accepts this tp: one message
                found.append(
                    ImpactFigure(
                        sample=name,
                        family="",
                        architecture="",
                        engine=PREDICTION,
                        figure="plan",
                        tp=tp,
                        value="refused",
                        reason=str(err),
                    )
                )
                continue
            found += _figures(name, result, tp)
    return found


def _figures(sample: str, result: Plan, tp: int) -> Iterator[ImpactFigure]:
    family = FAMILIES.get(result.prediction.mechanism, f"{result.prediction.mechanism} models")
    prediction = result.prediction

    architecture = " ".join(n for n in (result.architecture, result.model_type) if n)

    def figure(engine: str, what: str, value: object, reason: str = "") -> ImpactFigure:
        return ImpactFigure(
            sample=sample,
            family=family,
            architecture=architecture,
            engine=engine,
            figure=what,
            tp=tp,
            value=_shown(value),
            reason=reason,
        )

    if tp == 1:
        why = "; ".join(prediction.unknown) or "; ".join(prediction.notes)
        yield figure(PREDICTION, "mechanism", prediction.mechanism, why)
        yield figure(PREDICTION, "KV bytes per token", _bytes(prediction.kv_bytes_per_token), why)
        yield figure(
            PREDICTION,
            f"KV at {IMPACT_CONTEXT:,} tokens",
            _bytes(prediction.kv_bytes_at_context),
            why,
        )
        yield figure(
            PREDICTION, "state per sequence", _bytes(prediction.state_bytes_per_sequence), why
        )
        yield figure(PREDICTION, "KV heads", result.kv_heads.count, result.kv_heads.how)
    for view in result.engines:
        yield from _view_figures(view, figure, tp)


def _view_figures(view: EngineView, figure, tp: int) -> Iterator[ImpactFigure]:
    engine = view.title
    why = "; ".join(n.removeprefix("unknown: ") for n in view.notes)
    if tp == 1:
        yield figure(engine, "registers the architecture", view.registered)
        yield figure(engine, "status", view.status)
        yield figure(engine, "mechanism", view.mechanism, why)
        yield figure(engine, "flags", ", ".join(view.flags))
        yield figure(engine, "KV bytes per token", _bytes(view.kv_bytes_per_token), why)
        yield figure(
            engine, f"KV at {IMPACT_CONTEXT:,} tokens", _bytes(view.kv_bytes_at_context), why
        )
        yield figure(engine, "state per sequence", _bytes(view.state_bytes_per_sequence), why)
    share = view.gpu
    if share is not None and tp > 1:
        why_gpu = "; ".join((*share.refused, *share.unknown))
        yield figure(engine, "tp status", share.status, why_gpu)
        yield figure(engine, "KV heads per GPU", share.kv_heads_per_gpu, share.kv_heads_how)
        yield figure(
            engine, "KV bytes per token per GPU", _bytes(share.kv_bytes_per_token), why_gpu
        )
        yield figure(
            engine, "state per sequence per GPU", _bytes(share.state_bytes_per_sequence), why_gpu
        )
    capacity = view.capacity
    if capacity is not None:
        why_fit = "; ".join(capacity.unknown)
        on = f"on {IMPACT_GPU_WORDS}"
        yield figure(engine, f"memory fraction {on}", capacity.memory_fraction, why_fit)
        yield figure(
            engine, "block size (tokens)", capacity.block_tokens, capacity.block_tokens_source
        )
        yield figure(engine, f"KV tokens {on}", capacity.kv_tokens, why_fit)
        yield figure(engine, f"sequences of {IMPACT_CONTEXT:,} {on}", capacity.sequences, why_fit)


class _Bytes(int):
    """A byte figure, shown as people read it."""


def _bytes(value: int | None) -> _Bytes | None:
    return None if value is None else _Bytes(value)


def _shown(value: object) -> str:
    if value is None or value == "":
        return "unknown" if value is None else "-"
    if isinstance(value, _Bytes):
        return f"{short_bytes(int(value))} ({int(value):,} B)" if value else "0 B"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
