"""apron against vLLM's own measurements (conformance/vllm/<commit>/, offline): every recorded
figure equals apron's vLLM column, or apron is `unknown` with a reason the record accepts, and
an input vLLM refuses is refused by apron too. The registry and the _ModelInfo flags vLLM
reported at run time equal generated/vllm. How each figure maps onto apron's output is in
conformance/vllm/README.md."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from apron import plan
from apron.constraints import load_constraints
from apron.deployment import Deployment
from apron.engines import vllm as vllm_rules
from apron.errors import ApronInputError
from tests.conformance_records import Measurement, commit_dirs, facts, measurements


class Unknown(NamedTuple):
    """apron gave no figure; `reason` says why."""

    reason: str


class Refused(NamedTuple):
    """apron refused the input or the setting; `reason` is its message."""

    reason: str


CAPACITY_FIGURES = ("num_blocks", "max_concurrency")
MECHANISM_FLAGS = {
    "is_mla": "mla_latent",
    "is_hybrid": "hybrid_ssm",
    "is_attention_free": "recurrent",
    "is_encoder_decoder": "encoder_decoder",
}


def _commits() -> list[str]:
    return [p.name for p in commit_dirs("vllm")]


def _records() -> list[Measurement]:
    return [m for commit in _commits() for m in measurements("vllm", commit)]


# The KV dtype vLLM's "auto" resolved to (the model dtype), as apron names it. A figure that
# does not depend on the dtype (heads, flags, lengths) is asked at bf16.
KV_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}


# The engine settings the harness's VllmConfig ran with (conformance/vllm/harness/measure.py:
# CacheConfig and SchedulerConfig at their defaults, on the CPU device): prefix caching on (so a
# Mamba model's mamba_cache_mode is "align" or "all"), asynchronous scheduling off (one batch in
# flight), and the max_num_batched_tokens the record names. `vllm serve` on a GPU differs (async
# on, prefix caching off for a hybrid): apron takes these as the flags vLLM takes them.
HARNESS = {"async_scheduling": False, "prefix_caching": True}


@functools.cache
def _plan(
    path: Path,
    tp: int,
    kv_dtype: str,
    context: int | None,
    budget: int | None,
    batched: int | None = None,
):
    """apron's plan, or its refusal. A KV budget B is asked as --gpu-memory B+1
    --memory-fraction 1 --weights-bytes 1 (apron's budget: GPU x fraction - weights)."""
    capacity = {}
    if budget is not None:
        capacity = {"gpu_memory": budget + 1, "memory_fraction": 1.0, "weights_bytes": 1}
        capacity["deployment"] = Deployment(max_num_batched_tokens=batched, **HARNESS)
    try:
        return plan(path, tp=tp, kv_dtype=kv_dtype, context=context, **capacity)
    except ApronInputError as refusal:
        return Refused(str(refusal))


def _vllm_view(result):
    return next(v for v in result.engines if v.engine == "vllm")


def _share(view) -> Any:
    """The vLLM column's per-GPU share, or why there is none."""
    gpu = view.gpu
    if gpu is None:
        return Unknown("; ".join(view.notes) or "no per-GPU figures")
    if gpu.status == "refused":
        return Refused("; ".join(gpu.refused))
    return gpu


def apron_answer(m: Measurement) -> Any:
    """apron's figure for one measurement: a value, Unknown(reason) or Refused(reason)."""
    settings = m.settings
    tp = settings.get("tp", 1)
    is_capacity = m.figure in CAPACITY_FIGURES
    result = _plan(
        m.input,
        tp,
        KV_DTYPES.get(settings.get("kv_dtype", "bfloat16"), settings.get("kv_dtype")),
        settings.get("context") if is_capacity else None,
        settings.get("kv_budget_bytes") if is_capacity else None,
        settings.get("max_num_batched_tokens") if is_capacity else None,
    )
    if isinstance(result, Refused):
        return result
    view = _vllm_view(result)
    refused = [n for n in view.notes if n.startswith(vllm_rules.REFUSES_CONFIG)]
    if refused:  # the vLLM column says vLLM cannot load the config; other columns go on
        return Refused(refused[0])
    if m.figure == "model_config":
        return "accepted"
    if m.figure in MECHANISM_FLAGS:
        is_it = view.mechanism == MECHANISM_FLAGS[m.figure]
        if view.mechanism is None or (not is_it and view.kv_bytes_per_token is None):
            # a mechanism apron names but cannot size (e.g. MLA mixed with linear attention)
            return Unknown("; ".join((*result.prediction.unknown, *view.notes)) or "unknown")
        return is_it
    if m.figure == "max_model_len":
        return result.request.max_model_len
    if m.figure == "total_kv_heads":
        heads = result.kv_heads
        return heads.count if heads.count is not None else Unknown("; ".join(heads.unknown))
    share = _share(view)
    if not hasattr(share, "status"):
        return share
    if m.figure == "kv_heads_per_gpu":
        if share.status == "unknown" or share.kv_heads_per_gpu is None:
            why = (*share.unknown, *result.kv_heads.unknown) or ("no per-GPU KV-head count",)
            return Unknown("; ".join(why))
        return share.kv_heads_per_gpu
    if m.figure in ("kv_bytes_per_token", "state_bytes_per_sequence"):
        value = getattr(share, m.figure)
        return Unknown("; ".join(share.unknown) or "unknown") if value is None else value
    if is_capacity:
        fit = view.capacity
        if fit is None:
            return Unknown("no capacity")
        if m.refused is not None and fit.sequences == 0:
            # vLLM refuses to start when not one sequence at max_model_len fits the KV budget;
            # apron says no sequence fits at that context
            return Refused(f"apron: 0 sequences of {settings['context']:,} tokens fit")
        value = fit.blocks if m.figure == "num_blocks" else fit.sequences
        if value is None:
            return Unknown("; ".join(fit.unknown) or "unknown")
        if fit.block_tokens != settings["block_tokens"]:
            return f"apron's block of {fit.block_tokens} tokens"
        return value
    raise AssertionError(f"{m.label}: figure {m.figure!r} has no mapping onto apron's output")


def agrees(m: Measurement, answer: Any) -> tuple[bool, str]:
    """(agrees, what apron said) for one recorded figure."""
    if m.refused is not None:
        if isinstance(answer, Refused):
            return True, answer.reason
        if isinstance(answer, Unknown) and m.accept_unknown is not None:
            return m.accept_unknown in answer.reason, f"apron: unknown ({answer.reason})"
        return False, f"vLLM refused ({m.refused}) but apron answered {answer!r}"
    if isinstance(answer, Refused):
        return False, f"apron refused: {answer.reason}"
    if isinstance(answer, Unknown):
        accepted = m.accept_unknown is not None and m.accept_unknown in answer.reason
        return accepted, f"apron: unknown ({answer.reason})"
    return answer == m.value, f"apron: {answer!r}, vLLM: {m.value!r}"


RECORDS = _records()

# Figures where apron and vLLM still disagree, each with why (conformance/vllm/README.md). The
# test asserts they still disagree, so that fixing one makes this list shorter.
OPEN_DISAGREEMENTS: dict[str, str] = {}


def _label(m: Measurement) -> str:
    return m.label.split(":", 1)[1]


@pytest.mark.parametrize("m", RECORDS, ids=[m.label for m in RECORDS])
def test_apron_equals_vllm(m: Measurement):
    ok, said = agrees(m, apron_answer(m))
    if _label(m) in OPEN_DISAGREEMENTS:
        assert not ok, f"{m.label} agrees now ({said}): take it off OPEN_DISAGREEMENTS"
        return
    assert ok, f"{m.label}: {said}"


def test_every_open_disagreement_is_a_recorded_figure():
    assert set(OPEN_DISAGREEMENTS) <= {_label(m) for m in RECORDS}


def test_the_records_cover_the_pin_with_forty_configs():
    pinned = load_constraints().get("vllm").commit
    assert pinned in _commits()
    inputs = {m.input.name for m in RECORDS if m.commit == pinned}
    assert len(inputs) >= 40


def test_a_figure_that_differs_fails():
    kv = next(
        m for m in RECORDS if m.figure == "kv_bytes_per_token" and m.value and not m.accept_unknown
    )
    wrong = kv.__class__(**{**kv.__dict__, "value": kv.value + 1})
    assert agrees(kv, apron_answer(kv))[0]
    assert not agrees(wrong, apron_answer(wrong))[0]
    refused = kv.__class__(**{**kv.__dict__, "value": None, "refused": "no"})
    assert not agrees(refused, apron_answer(refused))[0]


def test_an_unknown_needs_the_reason_the_record_accepts():
    m = RECORDS[0]
    assert not agrees(m, Unknown("anything"))[0]
    accepting = m.__class__(**{**m.__dict__, "accept_unknown": "some rule"})
    assert agrees(accepting, Unknown("because some rule is not extracted"))[0]
    assert not agrees(accepting, Unknown("another reason"))[0]


# -- the static facts -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def reported():
    commit = load_constraints().get("vllm").commit
    return facts("vllm", commit)


def test_the_registry_vllm_reports_is_the_extracted_registry(reported):
    from apron.generated.vllm import registry_rows

    extracted = {r.architecture: (r.module, r.class_name) for r in registry_rows.ROWS}
    at_run_time = {a: (e["module"], e["class_name"]) for a, e in reported["registry"].items()}
    assert set(at_run_time) == set(extracted)
    assert {a: c for a, (_, c) in at_run_time.items()} == {a: c for a, (_, c) in extracted.items()}


def test_every_flag_vllm_reports_is_the_extracted_flag(reported):
    from apron.generated.vllm import model_class_flags

    extracted = {r.architecture: r for r in model_class_flags.ROWS}
    differing = []
    compared = 0
    for arch, flags in sorted(reported["flags"].items()):
        row = extracted[arch]
        for flag, value in sorted(flags.items()):
            compared += 1
            if getattr(row, flag) != value:
                differing.append(f"{arch}.{flag}: vLLM {value!r}, extracted {getattr(row, flag)!r}")
    assert not differing, differing
    assert len(reported["flags"]) >= 340  # the rest do not import here (facts.json says why)
    assert compared == 22 * len(reported["flags"])
