"""What llama.cpp allocated at its pin (conformance/llamacpp/<commit>/, measured by the harness
there) against apron: each recorded figure of a GGUF header through `apron gguf`'s sizing, and of
a config.json through the llama.cpp column of `apron plan`, is equal, or an unknown whose reason
the record accepts; a file llama.cpp refuses, apron refuses (the GGUF) or does not size (the
config.json, whose GGUF apron only reconstructs)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from typer.testing import CliRunner

from apron.command_line.cli import app
from apron.constraints import load_constraints
from apron.engines.llamacpp.gguf_header import gguf_limits, read_header
from apron.engines.llamacpp.memory import cache_type, figures
from apron.planning.planner import plan
from tests.conformance_records import Measurement, commit_dirs, facts, measurements

C = load_constraints().get("llamacpp")
LIMITS = gguf_limits(C) if C is not None else None
RECORDS = [m for d in commit_dirs("llamacpp") for m in measurements("llamacpp", d.name)]
AT_PIN = [m for m in RECORDS if C is not None and m.commit == C.commit]


class Answer(NamedTuple):
    """apron's figures for one input at one setting, by the names the records use."""

    values: dict[str, Any]
    unknown: tuple[str, ...]
    refused: str


@cache
def header(path: Path):
    """One GGUF file's header, read once for all the settings its records measure."""
    return read_header(path, LIMITS)


@cache
def gguf_answer(path: Path, settings_json: str) -> Answer:
    s = json.loads(settings_json)
    got = figures(
        header(path),
        C,
        n_ctx=s["context"],
        n_seq_max=s["n_seq"],
        type_k=cache_type(C, s["cache_type_k"]),
        type_v=cache_type(C, s["cache_type_v"]),
        swa_full=s["swa_full"],
        kv_unified=s["kv_unified"],
    )
    values = {
        "memory_class": got.memory_class or "none",
        "kv_bytes": got.kv_bytes,
        "state_bytes": got.state_bytes,
        "n_ctx": got.n_ctx,
        "kv_cells": got.kv_cells.get("base"),
        "kv_cells_swa": got.kv_cells.get("swa"),
    }
    return Answer(values, got.unknown, got.refused)


def llamacpp_view(path: Path, context: int | None, batch: int):
    return next(
        v
        for v in plan(path, context=context, kv_dtype="fp16", batch=batch).engines
        if v.engine == "llamacpp"
    )


@cache
def config_answer(path: Path, context: int, n_seq: int) -> Answer:
    """The llama.cpp column of `apron plan` (fp16 is llama.cpp's f16 cache): figures per
    sequence, times n_seq for the totals llama.cpp allocates. `apron plan --context C --batch N`
    is N sequences of C tokens each, llama.cpp's -c N*C -np N: the record's -c n_ctx -np N is
    asked as --context n_ctx/N (n_ctx 0: the context_length, apron's default context)."""
    if n_seq == 1:
        view = llamacpp_view(path, context or None, 1)
    else:
        n_ctx = context or llamacpp_view(path, None, 1).context
        if n_ctx is None:  # no default context: the batch-1 view says why
            view = llamacpp_view(path, None, 1)
        else:
            assert n_ctx % n_seq == 0, f"{path.name}: n_ctx {n_ctx} is not {n_seq} sequences"
            view = llamacpp_view(path, n_ctx // n_seq, n_seq)
            split = view.llamacpp_context
            assert split is None or (split.n_ctx, split.n_seq_max) == (n_ctx, n_seq)
    unknown = tuple(n for n in view.notes if n.startswith("unknown: "))
    kv, state = view.kv_bytes_at_context, view.state_bytes_per_sequence
    values = {
        "memory_class": view.mechanism if view.mechanism != "none" else "none",
        "kv_bytes": kv * n_seq if kv is not None else None,
        "state_bytes": state * n_seq if state is not None else None,
    }
    refused = next((n for n in unknown if "refuses" in n), "")
    return Answer(values if not unknown else {}, unknown, refused)


def answer(m: Measurement) -> Answer:
    if m.input.suffix == ".gguf":
        return gguf_answer(m.input, json.dumps(m.settings, sort_keys=True))
    return config_answer(m.input, m.settings["context"], m.settings["n_seq"])


def disagreement(m: Measurement, got: Answer) -> str | None:
    """Why apron's answer does not match the record, or None when it does."""
    if m.refused is not None:
        if m.input.suffix == ".gguf" and not got.refused:
            return f"llama.cpp refuses ({m.refused}); apron gives {got.values or got.unknown}"
        if m.input.suffix != ".gguf" and got.values:
            return f"llama.cpp refuses the converted GGUF ({m.refused}); apron gives {got.values}"
        return None
    if got.unknown:
        if m.accept_unknown and any(m.accept_unknown in u for u in got.unknown):
            return None
        return f"llama.cpp measured {m.value!r}; apron: {'; '.join(got.unknown)}"
    value = got.values.get(m.figure)
    if value != m.value:
        return f"llama.cpp measured {m.value!r}; apron {value!r}"
    return None


def test_the_pin_is_measured():
    assert C is not None
    assert AT_PIN, (
        f"no conformance/llamacpp/{C.commit}/measurements.jsonl: measure the pinned commit "
        "(conformance/llamacpp/run, see conformance/llamacpp/README.md)"
    )


@pytest.mark.parametrize("m", AT_PIN, ids=lambda m: m.label)
def test_apron_agrees_with_llamacpp(m):
    problem = disagreement(m, answer(m))
    assert problem is None, f"{m.label}: {problem}"


def test_a_figure_that_differs_fails():
    m = next(r for r in AT_PIN if r.figure == "kv_bytes" and r.input.suffix == ".gguf")
    assert disagreement(m, answer(m)) is None
    doctored = Measurement(**{**m.__dict__, "value": m.value + 2})
    assert "llama.cpp measured" in (disagreement(doctored, answer(m)) or "")


def test_an_unknown_is_accepted_only_with_its_reason():
    m = next(r for r in AT_PIN if r.figure == "kv_bytes" and r.input.suffix == ".gguf")
    unknown = Answer({}, ("some reason apron gives",), "")
    assert disagreement(m, unknown)
    accepting = Measurement(**{**m.__dict__, "accept_unknown": "reason apron"})
    assert disagreement(accepting, unknown) is None


def test_a_refusal_must_be_refused():
    m = next(r for r in AT_PIN if r.refused is not None and r.input.suffix == ".gguf")
    assert disagreement(m, answer(m)) is None
    assert disagreement(m, Answer({"kv_bytes": 1}, (), ""))


def test_the_cli_gives_the_recorded_figure():
    """`apron gguf` itself on one record: the figure in its output is the measured one."""
    m = next(
        r
        for r in AT_PIN
        if r.figure == "kv_bytes" and r.input.suffix == ".gguf" and r.settings["swa_full"]
    )
    s = m.settings
    args = ["gguf", str(m.input), "--batch", str(s["n_seq"]), "--swa-full"]
    args += ["--context", str(s["context"])] if s["context"] else []
    args += ["--cache-type-k", s["cache_type_k"], "--cache-type-v", s["cache_type_v"]]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    assert f"KV cache: {m.value:,} B for {s['n_seq']} sequence(s)" in out.output


def test_the_architecture_classes_llamacpp_reports_are_the_extracted_ones():
    """llama_model_is_recurrent / _hybrid / _diffusion on each loaded GGUF equal the class sets
    extracted from llm_arch_is_* (generated/llamacpp class_set_members)."""
    reported = facts("llamacpp", C.commit)
    assert reported
    names = {r.gguf_name: r.arch for r in C.rows("arch_names")}
    for gguf_name, classes in sorted(reported.items()):
        arch = names[gguf_name]
        for predicate, value in classes.items():
            extracted = any(
                r.arch == arch and r.predicate == predicate for r in C.rows("class_set_members")
            )
            assert extracted == value, f"{gguf_name}: {predicate}"
