"""apron against SGLang's own answers at its pin (conformance/sglang/<commit>/, measured by
conformance/sglang/run): every recorded figure apron maps onto equals apron's, or apron says
`unknown` for a reason the record accepts; the registry and the architecture sets SGLang reports
at run time equal generated/sglang."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from apron.config import load_config
from apron.constraints import load_constraints
from apron.engines import sglang as sglang_rules
from apron.engines.sglang import fraction as sglang_fraction
from apron.planning.planner import plan
from tests.conformance_records import Measurement, commit_dirs, facts, measurements

ENGINE = "sglang"
COMMITS = [p.name for p in commit_dirs(ENGINE)]


class Answer(NamedTuple):
    """apron's figure for a measurement, or why it has none."""

    value: Any
    unknown: str = ""


@cache
def _constraints():
    return load_constraints()


@cache
def _view(path: Path, tp: int, kv_dtype: str):
    """apron's SGLang column for one input at tp and KV dtype (None: apron refuses the input)."""
    try:
        found = _plan(path, tp, kv_dtype)
    except Exception as err:  # an ApronInputError is a refusal: the reason is its message
        return str(err)
    return next(v for v in found.engines if v.engine == ENGINE)


@cache
def _plan(path: Path, tp: int, kv_dtype: str):
    return plan(str(path), tp=tp, kv_dtype=kv_dtype, constraints=_constraints())


def _layer_bytes(m: Measurement) -> Answer:
    """One layer's bytes per token of a kind (the full-attention or windowed layers of SGLang's
    hybrid-SWA pool) on one GPU: apron's per-layer breakdown of the SGLang column at tp
    (apron.mechanisms.layer_specs.layers_of, what its pool arithmetic sizes), one figure for every layer of
    that kind."""
    from apron.mechanisms import per_gpu
    from apron.mechanisms.layer_specs import ATTENTION, WINDOWED, layers_of
    from apron.serving_rules import serving_rules

    tp, kv_dtype = m.settings["tp"], m.settings["kv_dtype"]
    view = _view(m.input, tp, kv_dtype)
    if isinstance(view, str) or view.gpu is None or view.gpu.kv_bytes_per_token is None:
        return Answer(None, _why(view))
    engine = _constraints().get(ENGINE)
    model = load_config(str(m.input))
    heads = sglang_rules.kv_heads(model, engine)
    split = per_gpu.heads_per_gpu(model, heads, tp, serving_rules(engine, ENGINE))
    request = _plan(m.input, tp, kv_dtype).request
    layers = layers_of(
        model, view.mechanism, split, request, view.gpu.kv_bytes_per_token,
        view.gpu.state_bytes_per_sequence or 0,
    )  # fmt: skip
    if layers.unknown:
        return Answer(None, layers.unknown)
    kind = ATTENTION if m.figure == "full_layer_bytes_per_token" else WINDOWED
    found = {layer.per_token_bytes for layer in layers.of(kind)}
    if len(found) != 1:
        return Answer(None, f"{len(found)} different {kind} layer widths: {sorted(found)}")
    return Answer(found.pop())


def _swa_ratio(m: Measurement) -> Answer:
    """The hybrid-SWA pool's swa_full_tokens_ratio: ServerArgs' default and the per-model
    overrides apron reads (apron.engines.sglang.capacity.setting)."""
    from apron.engines.sglang.capacity import SWA_RATIO, setting

    value, source, _others = setting(
        _constraints().get(ENGINE), load_config(str(m.input)), SWA_RATIO
    )
    try:
        return Answer(float(value), "")
    except (TypeError, ValueError):
        return Answer(None, f"{SWA_RATIO} {value!r} ({source})")


def _why(view) -> str:
    return view if isinstance(view, str) else " | ".join(view.notes)


def _cell_size(m: Measurement) -> Answer:
    view = _view(m.input, m.settings["tp"], m.settings["kv_dtype"])
    if isinstance(view, str):
        return Answer(None, view)
    gpu = view.gpu
    value = gpu.kv_bytes_per_token if gpu is not None else view.kv_bytes_per_token
    return Answer(value, "" if value is not None else _why(view))


def _kv_heads(m: Measurement) -> Answer:
    view = _view(m.input, m.settings["tp"], "bf16")
    if isinstance(view, str) or view.gpu is None or view.gpu.kv_heads_per_gpu is None:
        return Answer(None, _why(view))
    return Answer(view.gpu.kv_heads_per_gpu)


def _attention_arch(m: Measurement) -> Answer:
    view = _view(m.input, 1, "bf16")
    if isinstance(view, str):
        return Answer(None, view)
    decision = sglang_rules.mla_decision(load_config(str(m.input)), _constraints().get(ENGINE))
    if decision is None or decision.is_mla is None:
        return Answer(None, decision.why if decision else "no MLA rule")
    return Answer("mla" if decision.is_mla else "mha")


def _hybrid_swa(m: Measurement) -> Answer:
    found, why, _ = sglang_rules.hybrid_swa(load_config(str(m.input)), _constraints().get(ENGINE))
    return Answer(found, "" if found is not None else why)


def _state_pool(m: Measurement) -> Answer:
    pool = sglang_rules.state_pool_class(load_config(str(m.input)), _constraints().get(ENGINE))
    return Answer(pool is not None)


def _context(m: Measurement) -> Answer:
    view = _view(m.input, 1, "bf16")
    if isinstance(view, str):
        return Answer(None, view)
    return Answer(view.context, "" if view.context is not None else view.context_source)


def _fraction(m: Measurement) -> Answer:
    view = _view(m.input, 1, "bf16")
    if isinstance(view, str):
        return Answer(None, view)
    model = load_config(str(m.input))
    fraction, source, _lines, _cites = sglang_fraction.fraction_for(
        _constraints().get(ENGINE),
        model,
        view.mechanism == "mla_latent",
        m.settings["gpu_memory"],
        m.settings["tp"],
    )
    return Answer(fraction, "" if fraction is not None else source)


# measured figure -> apron's answer for it; the other recorded figures are the engine's
# intermediate answers (head sizes, layer counts, ...), kept for people (conformance/sglang/README)
COMPARED = {
    "cell_size": _cell_size,
    "kv_heads_per_gpu": _kv_heads,
    "attention_arch": _attention_arch,
    "is_hybrid_swa": _hybrid_swa,
    "state_pool_config": _state_pool,
    "context_len": _context,
    "mem_fraction_static": _fraction,
    "full_layer_bytes_per_token": _layer_bytes,
    "swa_layer_bytes_per_token": _layer_bytes,
    "swa_full_tokens_ratio": _swa_ratio,
}


def _measured(m: Measurement) -> Any:
    if m.figure == "state_pool_config":
        return m.value is not None
    return m.value


def _hybrid_swa_pool(m: Measurement, rows: list[Measurement]) -> bool:
    """A cell size of SGLang's hybrid-SWA pool (full + ratio x SWA layers) is compared through
    its two kinds of layer, not as one figure."""
    return any(
        r.input == m.input
        and r.settings == m.settings
        and r.figure == "pool_configurator"
        and r.value != "DefaultPoolConfigurator"
        for r in rows
    )


def _mla(m: Measurement, rows: list[Measurement]) -> bool:
    """SGLang's get_num_kv_heads still answers for an MLA model, but its pool stores one latent
    per token: the KV-head figure is not one the MLA pool uses, so it is not compared."""
    return any(
        r.input == m.input and r.figure == "attention_arch" and r.value == "mla" for r in rows
    )


def _cases() -> list[Measurement]:
    cases = []
    for commit in COMMITS:
        rows = measurements(ENGINE, commit)
        for m in rows:
            if m.figure not in COMPARED and not m.refused:
                continue
            if m.figure == "cell_size" and _hybrid_swa_pool(m, rows):
                continue
            if m.figure == "kv_heads_per_gpu" and _mla(m, rows):
                continue
            cases.append(m)
    return cases


# Disagreements measured at the pin and not fixed yet, each named with what differs; strict, so
# a fix makes the test fail until its line goes. None at the pin (issue #32's last six: Gemma 4's
# KV heads after the loader's swap, Kimi Linear's and Kimi-K3's context and Kimi-K3's state pool).
KNOWN: dict[tuple[str, str, str], str] = {}


def _known(m: Measurement) -> str:
    return KNOWN.get((m.input.name, m.figure, str(m.settings.get("kv_dtype", ""))), "")


ACCEPT_OR = " || "  # conformance/sglang/harness: alternatives of one accept_unknown


def _accepted(m: Measurement, why: str) -> bool:
    """apron's unknown is one the record accepts: its reason contains one of the alternatives."""
    return bool(m.accept_unknown) and any(a in why for a in m.accept_unknown.split(ACCEPT_OR))


def disagreement(m: Measurement) -> str:
    """'' when apron agrees with the measurement, else what differs."""
    if m.refused:
        view = _view(m.input, 1, "bf16")
        if isinstance(view, str):
            return ""  # apron refuses the input too (exit 2, its reason in `view`)
        if view.kv_bytes_per_token is None:
            why = _why(view)
            if _accepted(m, why):
                return ""
            return f"SGLang refuses ({m.refused}); apron has no figure, but says: {why}"
        return f"SGLang refuses ({m.refused}); apron gives {view.kv_bytes_per_token:,} B/token"
    answer = COMPARED[m.figure](m)
    if answer.value is None:
        if _accepted(m, answer.unknown):
            return ""
        return f"SGLang says {m.value!r}; apron unknown: {answer.unknown}"
    if answer.value != _measured(m):
        return f"SGLang says {m.value!r}; apron says {answer.value!r}"
    return ""


CASES = _cases()
PARAMS = [
    pytest.param(m, id=m.label, marks=pytest.mark.xfail(reason=_known(m), strict=True))
    if _known(m)
    else pytest.param(m, id=m.label)
    for m in CASES
]


@pytest.mark.parametrize("m", PARAMS)
def test_apron_equals_sglang(m: Measurement) -> None:
    assert disagreement(m) == ""


def test_a_differing_figure_fails() -> None:
    """The comparison is not vacuous: a figure changed by one is a disagreement."""
    m = next(c for c in CASES if c.figure == "cell_size" and c.input.name == "llama-3.1-8b.json")
    assert disagreement(m) == ""
    assert "apron says" in disagreement(m.__class__(**{**m.__dict__, "value": m.value + 1}))


def test_records_cover_the_pin() -> None:
    pin = _constraints().get(ENGINE).commit
    assert pin in COMMITS
    assert len([m for m in CASES if m.commit == pin]) > 1000


@pytest.mark.parametrize("commit", COMMITS)
def test_registry_equals_generated(commit: str) -> None:
    """SGLang's run-time registry is the static registry less the rows generated/sglang marks
    as registered by a module that does not import (sarashina2_vision at the pin: 244 of 245),
    and the modules that fail at run time are exactly the marked ones."""
    reported = facts(ENGINE, commit)
    rows = _rows(commit, "registry_rows")
    assert set(reported["registry"]) == {r.architecture for r in rows if not r.import_error}
    marked = {Path(r.path).stem for r in rows if r.import_error}
    assert marked == set(reported["import_failures"])
    for row in rows:
        if row.import_error:
            assert row.import_error in reported["import_failures"][Path(row.path).stem]


def _rows(commit: str, fact: str):
    engine = _constraints().get(ENGINE)
    assert engine.commit == commit, f"generated/sglang is at {engine.commit}, records at {commit}"
    return engine.rows(fact)


@pytest.mark.parametrize("commit", COMMITS)
def test_sets_equal_generated(commit: str) -> None:
    """Every architecture-set function's answers equal the generated set's members (sets whose
    members return False list the architectures the function says no to)."""
    reported = facts(ENGINE, commit)
    rows = _constraints().get(ENGINE).rows("architecture_sets")
    candidates = set(reported["set_candidates"])
    for function, answered in reported["set_answers"].items():
        members = [r for r in rows if r.set_name == function and r.architecture != "*"]
        assert members, function
        listed = {r.architecture for r in members} & candidates
        if all(r.member_returns for r in members):
            assert set(answered) == listed, function
        else:
            assert candidates - set(answered) == listed, function
    assert reported["set_checks"] >= 3900
