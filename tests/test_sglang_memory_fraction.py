"""SGLang's static memory-fraction heuristic (ServerArgs._handle_gpu_memory_settings) as data,
and apron's evaluation of it for --gpu-memory."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from apron import plan
from apron.constraints import load_constraints
from apron.engines.sglang.fraction import Model, static_fraction
from apron.engines.sglang.server_args import ASSUMPTIONS, ServerArgs, server_args
from apron.expressions import infix
from apron.extractors.errors import AnchorError
from apron.extractors.parsing.expressions import python_conjuncts
from apron.extractors.sglang.memory_fraction import memory_fraction_steps
from apron.extractors.sglang.server_arg_defaults import server_arg_defaults
from tests.sglang_serving_miniatures import SERVER_ARGS, SERVER_ARGS_PATH

CORPUS = Path(__file__).resolve().parent / "corpus"
LLAMA_31_8B = 16_060_522_496  # metadata.total_size of meta-llama/Llama-3.1-8B's index
GIB80 = 80 * 2**30
LLAMA = Model(use_mla=False, is_multimodal=False, vision_config=None, model_path="llama-3.1")


def steps(text: str = SERVER_ARGS):
    return memory_fraction_steps(text, SERVER_ARGS_PATH)


def defaults(text: str = SERVER_ARGS) -> ServerArgs:
    """The miniature's ServerArgs at its defaults, as apron reads the extracted fact."""
    return ServerArgs({r.field: r.default for r in server_arg_defaults(text, SERVER_ARGS_PATH)})


def committed_defaults() -> ServerArgs:
    return server_args(load_constraints().get("sglang"))


GPU_MEM_GIVEN = ("!=", "gpu_mem", None)  # `gpu_mem is not None`


def test_bands_give_chunked_prefill_and_decode_max_bs_by_gpu_memory_and_tp():
    rows, warnings = steps()
    bands = [(r.target, r.value, python_conjuncts(r.when)) for r in rows if r.part == "band"]
    # the miniature: < 30 GiB -> 1024 / 16; < 100 GiB -> 4096 / 64 (tp < 2) or 128; else 8192 / 256
    assert [(t, v) for t, v, _ in bands] == [
        ("self.chunked_prefill_size", 1024),
        ("decode_cuda_graph_config.max_bs", 16),
        ("self.chunked_prefill_size", 4096),
        ("decode_cuda_graph_config.max_bs", 64),
        ("decode_cuda_graph_config.max_bs", 128),
        ("self.chunked_prefill_size", 8192),
        ("decode_cuda_graph_config.max_bs", 256),
        ("self.chunked_prefill_size", 2048),
    ]
    assert bands[3][2] == [
        GPU_MEM_GIVEN,
        (">=", "gpu_mem", ("*", 30, 1024)),
        ("<", "gpu_mem", ("*", 100, 1024)),
        ("==", "decode_cuda_graph_config.max_bs", None),
        ("<", "self.tp_size", 2),
    ]
    assert bands[4][2][-1] == (">=", "self.tp_size", 2)
    # the `gpu_mem is None` else
    assert bands[7][2] == [("==", "gpu_mem", None), ("==", "self.chunked_prefill_size", None)]
    assert warnings == []


def test_reserve_terms_floor_and_fraction_are_structured():
    rows, _ = steps()
    reserve = [(r.target, r.op, infix(r.value)) for r in rows if r.part == "reserve"]
    assert ("activation_tokens", "set", "max(self.chunked_prefill_size, 1024)") in reserve
    assert ("reserved_mem", "add", "activation_tokens * 2") in reserve
    assert ("reserved_mem", "add", "self.tp_size / 4 * 1024") in reserve
    assert ("reserved_mem", "at_least", "12 * 1024") in reserve
    # the reserve block assigns mem_fraction_static, then runs on: its test is taken once
    test = next(r for r in rows if r.op == "test")
    assert (test.target, test.value) == (
        "self.mem_fraction_static is None",
        ("==", "self.mem_fraction_static", None),
    )
    graph = [r for r in rows if r.symbol == "ServerArgs.reserve_for_graph_mb" and r.op == "add"]
    assert [(infix(r.value), python_conjuncts(r.when)[-1]) for r in graph] == [
        (
            "decode_cuda_graph_config.max_bs * 4",
            ("!=", "self.disaggregation_mode", ("str", "prefill")),
        ),
        ("len(prefill_cuda_graph_config.bs) * 16", ("not", "self.use_mla_backend()")),
        ("2 * 1024", "self.use_mla_backend()"),
    ]
    floor = next(r for r in rows if r.op == "at_least" and r.target == "reserved_mem")
    assert python_conjuncts(floor.when)[-1] == (">", "gpu_mem", ("*", 50, 1024))
    # the code after `if ...: return 3 * 1024` holds only when the `if` did not
    deepep = [r for r in rows if r.symbol == "ServerArgs.reserve_for_deepep_a2a_mb"]
    backend = "resolved_view(self).moe_a2a_backend"
    assert [(r.value, python_conjuncts(r.when)[-1]) for r in deepep] == [
        (("*", 3, 1024), ("==", backend, ("str", "deepep"))),
        (0, ("!=", backend, ("str", "deepep"))),
    ]
    fraction = [(r.op, infix(r.value)) for r in rows if r.part == "fraction"]
    assert fraction == [("round", "round((gpu_mem - reserved_mem) / gpu_mem, 3)"), ("set", "0.9")]
    capture = [(r.op, infix(r.value)) for r in rows if r.part == "prefill_capture"]
    assert capture == [
        ("range", "range(8, 65, 8)"),
        ("range", "range(128, 1024 + 1, 128)"),
        ("range", "range(2048, max_bs + 1, 1024)"),
        ("at_most", "max_bs"),
    ]
    vlm = {r.target + r.op: r.value for r in rows if r.part == "vlm"}
    assert vlm["base_mem_fraction_reduction_ratioconstant"] == 0.9
    assert vlm["dynamic_adjustment_factorat_least"] == 0.7
    assert vlm["dynamic_adjustment_factorat_most"] == 1.1


def test_the_miniature_evaluates_with_its_own_numbers():
    rows, _ = steps()
    result = static_fraction(rows, GIB80, 1, LLAMA, defaults())
    # 81,920 MiB: band 2 -> chunked 4096, decode max_bs 64 (tp 1 < 2); prefill max_bs 4096 ->
    # sizes 8..64 (8) + 128..1024 (8) + 2048, 3072, 4096 (3) = 19
    # reserved = 256 + 2 x max(4096, 1024) + 1024 / 4 x 1 + (4 x 64 + 16 x 19) + 0
    #          = 256 + 8192 + 256 + 560 = 9,264 -> floor 12,288 (81,920 > 51,200)
    # round((81920 - 12288) / 81920, 3) = round(0.85, 3) = 0.85
    assert result.unknown == ()
    assert result.fraction == 0.85
    assert any("12,288" in line for line in result.lines)


def test_an_unread_shape_is_a_warning_and_its_figure_unknown():
    text = SERVER_ARGS.replace(
        "reserved_mem += activation_tokens * 2", "reserved_mem += {2: activation_tokens}[2]"
    )
    rows, warnings = steps(text)
    assert [w.code for w in warnings] == ["unread-memory-step"]
    assert "{2: activation_tokens}[2]" in warnings[0].message
    unread = next(r for r in rows if r.op == "unread")
    assert unread.target == "reserved_mem" and unread.value == ()
    result = static_fraction(rows, GIB80, 1, LLAMA, defaults())
    assert result.fraction is None
    assert "{2: activation_tokens}[2]" in result.unknown[0]


def test_a_condition_outside_the_assumptions_makes_it_unknown():
    text = SERVER_ARGS.replace(
        'if self.disaggregation_mode != "prefill":', "if self.enable_new_thing:"
    )
    result = static_fraction(steps(text)[0], GIB80, 1, LLAMA, defaults(text))
    assert result.fraction is None
    assert "`self.enable_new_thing` is not evaluated" in result.unknown[0]


def test_missing_handler_is_an_anchor_error():
    text = SERVER_ARGS.replace("def _handle_gpu_memory_settings", "def _other_settings")
    with pytest.raises(AnchorError, match="_handle_gpu_memory_settings"):
        steps(text)


def test_a_missing_block_is_an_unread_step_a_warning_and_an_unknown_fraction():
    # SGLang before 2026 (f2e0048, 2026-02-07) has no prefill cuda-graph blocks: the extraction
    # at such a commit must not fail, and no figure may be computed without them
    text = SERVER_ARGS.replace("if prefill_cuda_graph_config.bs is None:", "if True:")
    rows, warnings = steps(text)
    absent = [r for r in rows if r.op == "unread" and not r.code]
    assert [(r.part, r.target) for r in absent] == [
        ("prefill_max_bs", "if prefill_cuda_graph_config.bs is None")
    ]
    assert [w.code for w in warnings] == ["absent-memory-block"]
    result = static_fraction(rows, GIB80, 1, LLAMA, defaults())
    assert result.fraction is None
    assert result.unknown[0] == (
        "memory fraction: ServerArgs._handle_gpu_memory_settings has no "
        "`if prefill_cuda_graph_config.bs is None:` block at this commit"
    )


# ------------------------------------------------------------------ the committed fact at the pin


def committed_rows():
    return load_constraints().get("sglang").rows("memory_fraction_steps")


def test_llama_on_80_gib_at_the_pin():
    """Read from python/sglang/srt/server_args.py at 30cb848d:
    80 GiB = 81,920 MiB is in the `gpu_mem < 90 * 1024` band: chunked_prefill_size 8192, decode
    max_bs 256 (tp 1 < 4). Not MLA: prefill max_bs = chunked_prefill_size = 8192; capture sizes
    range(4, 33, 4) 8 + range(48, 257, 16) 14 + range(288, 513, 32) 8 + range(576, 1025, 64) 8
    + range(1280, 4097, 256) 12 + range(4608, 8193, 512) 8 = 58.
    reserved = 512 + 1.5 x max(8192, 2048) + 1 x 1 / 8 x 1024 + reserve_for_graph_mb
             = 512 + 12,288 + 128 + (256 x 2 decode graph + 58 x 8 prefill graph)
             = 13,440 + 464 = 13,904 MiB; floor max(13,904, 10 x 1024) = 13,904 (81,920 > 61,440);
    deepep 0. mem_fraction_static = round((81,920 - 13,904) / 81,920, 3) = round(0.83027, 3)."""
    result = static_fraction(committed_rows(), GIB80, 1, LLAMA, committed_defaults())
    assert result.unknown == ()
    assert result.fraction == 0.83
    assert 0.80 <= result.fraction <= 0.845
    text = "\n".join(result.lines)
    assert "58 prefill capture sizes up to 8,192" in text
    assert "13,904" in text and "10,240" in text
    assert "mem_fraction_static = round((81,920 - 13,904) / 81,920, 3) = 0.83" in text


@pytest.mark.parametrize(
    ("gib", "tp", "expected"),
    [
        # < 20 GiB: chunked 2048, decode max_bs 8; capture sizes up to 2048: 8 + 14 + 8 + 8 + 4
        # (1280..2048) = 42; 512 + 1.5 x 2048 + 128 + 2 x 8 + 8 x 42 = 4,064 (no floor at
        # 16,384 MiB); round((16,384 - 4,064) / 16,384, 3) = round(0.75195, 3) = 0.752
        (16, 1, 0.752),
        # 141 GiB (< 160 GiB band): 8192 / 512 at tp 8: 512 + 12,288 + 1,024 + 1,024 + 464
        # = 15,312; round((144,384 - 15,312) / 144,384, 3) = 0.894
        (141, 8, 0.894),
    ],
)
def test_other_bands_at_the_pin(gib, tp, expected):
    assert (
        static_fraction(committed_rows(), gib * 2**30, tp, LLAMA, committed_defaults()).fraction
        == expected
    )


def test_mla_uses_the_mla_graph_reserve():
    # prefill max_bs 2048 for MLA (not used: MLA reserves 1.5 x 1024 for the prefill graph):
    # 512 + 12,288 + 128 + 512 + 1,536 = 14,976; round(66,944 / 81,920, 3) = 0.817
    mla = LLAMA._replace(use_mla=True)
    assert static_fraction(committed_rows(), GIB80, 1, mla, committed_defaults()).fraction == 0.817


def test_the_vlm_adjustment_at_the_pin():
    # 0.83 x 0.95 x clamp(1 - 0.1 x (32 x 1280^2 / (24 x 1024^2) - 1), 0.8, 1.05)
    # ratio = 52,428,800 / 25,165,824 = 2.0833; 1 - 0.10833 = 0.89167; 0.83 x 0.95 x 0.89167
    vlm = LLAMA._replace(
        is_multimodal=True, vision_config={"num_hidden_layers": 32, "hidden_size": 1280}
    )
    result = static_fraction(committed_rows(), GIB80, 1, vlm, committed_defaults())
    assert result.fraction == pytest.approx(0.83 * 0.95 * (1 - 0.1 * (52_428_800 / 25_165_824 - 1)))


def test_apron_plan_shows_the_sglang_fraction_with_its_arithmetic(tmp_path):
    directory = tmp_path / "llama"
    directory.mkdir()
    shutil.copy(CORPUS / "llama-3.1-8b.json", directory / "config.json")
    index = {"metadata": {"total_size": LLAMA_31_8B}, "weight_map": {}}
    (directory / "model.safetensors.index.json").write_text(json.dumps(index))
    result = plan(directory / "config.json", gpu_memory=GIB80, context=8192)
    sglang = next(v for v in result.engines if v.engine == "sglang")
    capacity = sglang.capacity
    assert capacity.memory_fraction == 0.83
    assert all(a in capacity.memory_fraction_source for a in ASSUMPTIONS)
    assert "_handle_gpu_memory_settings" in capacity.memory_fraction_source
    assert capacity.unknown == ()
    assert any("13,904" in line for line in capacity.arithmetic)
    assert capacity.budget_bytes is not None and capacity.budget_bytes > 0
    # --memory-fraction still wins
    given = plan(directory / "config.json", gpu_memory=GIB80, context=8192, memory_fraction=0.7)
    assert next(v for v in given.engines if v.engine == "sglang").capacity.memory_fraction == 0.7


def _model(architecture: str, **extra):
    from apron.config import ModelConfig

    config = json.loads((CORPUS / "llama-3.1-8b.json").read_text())
    config["architectures"] = [architecture]
    return ModelConfig({**config, **extra}, "x")


def test_nemotron_h_has_no_prefill_graph_reserve():
    """_disable_breakable_cudagraph_if_incompatible turns prefill capture off for Nemotron-H, so
    at 80 GiB, tp 1: reserved = 512 + 1.5 x 8,192 + 1/8 x 1,024 + 2 x 256 = 13,440 MiB and the
    fraction is round(68,480 / 81,920, 3) = 0.836, what SGLang's ServerArgs gives (a llama with
    the prefill graph gets 0.83)."""
    from apron.engines.sglang.fraction import fraction_for

    sglang = load_constraints().get("sglang")
    fraction, source, _, _ = fraction_for(sglang, _model("NemotronHForCausalLM"), False, GIB80, 1)
    assert fraction == 0.836
    assert fraction_for(sglang, _model("LlamaForCausalLM"), False, GIB80, 1)[0] == 0.83


@pytest.mark.parametrize(
    ("architecture", "extra", "backend", "why"),
    [
        ("DeepseekV4ForCausalLM", {}, "disabled", "DeepSeek-V4"),
        ("NemotronHForCausalLM", {}, "disabled", "NemotronH"),
        ("LlamaForCausalLM", {}, "breakable", "CUDA default"),
        # multimodal through its text sub-config, though not in is_multimodal_model
        (
            "KimiK3ForConditionalGeneration",
            {"text_config": {"model_type": "llama"}},
            "disabled",
            "multimodal model",
        ),
        (
            "InklingForConditionalGeneration",
            {},
            "full",
            "_apply_inkling_prefill_cuda_graph_default",
        ),
    ],
)
def test_the_prefill_backend_follows_the_extracted_rules(architecture, extra, backend, why):
    from apron.engines.sglang import prefill_graph as sglang_prefill_graph

    sglang = load_constraints().get("sglang")
    model = _model(architecture, **extra)
    multimodal = sglang_prefill_graph.is_multimodal(sglang, model)
    found = sglang_prefill_graph.prefill_backend(sglang, model, False, multimodal)
    assert (found.backend, why in found.why) == (backend, True)


def test_kimi_k3_counts_as_multimodal_through_its_text_sub_config():
    from apron.engines.sglang import prefill_graph as sglang_prefill_graph

    sglang = load_constraints().get("sglang")
    sets = {
        r.architecture
        for r in sglang.rows("architecture_sets")
        if r.set_name == "is_multimodal_model"
    }
    assert "KimiK3ForConditionalGeneration" not in sets
    with_sub = _model("KimiK3ForConditionalGeneration", text_config={"model_type": "llama"})
    assert sglang_prefill_graph.is_multimodal(sglang, with_sub) is True
    assert (
        sglang_prefill_graph.is_multimodal(sglang, _model("KimiK3ForConditionalGeneration"))
        is False
    )


class _Edited:
    """SGLang's committed constraints with some rows of one fact replaced."""

    def __init__(self, fact, edit):
        self.sglang = load_constraints().get("sglang")
        self.fact, self.edited = fact, [edit(r) for r in self.sglang.rows(fact)]

    def rows(self, fact):
        return self.edited if fact == self.fact else self.sglang.rows(fact)

    def has(self, fact):
        return True


def _backend(constraints, architecture="LlamaForCausalLM", use_mla=False):
    from apron.engines.sglang import prefill_graph as sglang_prefill_graph

    return sglang_prefill_graph.prefill_backend(constraints, _model(architecture), use_mla, False)


@pytest.mark.parametrize(
    ("rule", "named"),
    [
        ("self.enable_new_thing", "self.enable_new_thing"),  # not a ServerArgs field
        (("call", "new_check", "self"), "new_check() is not read"),  # a call apron does not know
        ("self.get_model_config().is_new", "self.get_model_config().is_new"),
    ],
)
def test_a_rule_that_reads_what_apron_lacks_makes_the_backend_unknown(rule, named):
    """The rules are evaluated by name, not matched by their text: a rule that reads a name
    apron does not give is unknown, naming that name."""
    edited = _Edited(
        "prefill_graph_rules",
        lambda r: r._replace(rule=rule) if r.name.startswith("NemotronH") else r,
    )
    found = _backend(edited)
    assert found.backend is None and named in found.why


def test_the_server_args_defaults_are_the_extracted_ones():
    """A default the fact gives decides the rule: two-batch overlap on by default would turn
    Llama's prefill graph off, as SGLang's _disable_breakable_cudagraph_if_incompatible does."""
    assert _backend(load_constraints().get("sglang")).backend == "breakable"
    overlap_on = _Edited(
        "server_arg_defaults",
        lambda r: r._replace(default=True) if r.field == "enable_two_batch_overlap" else r,
    )
    found = _backend(overlap_on)
    assert found.backend == "disabled" and "two-batch overlap" in found.why


def test_a_default_apron_cannot_evaluate_is_unknown_where_read():
    unread = _Edited(
        "server_arg_defaults",
        lambda r: r._replace(default=("undef", "f()")) if r.field == "dcp_size" else r,
    )
    found = _backend(unread)
    assert found.backend is None and "ServerArgs.dcp_size's default" in found.why


def test_an_mla_models_switch_waits_on_the_gpus_attention_backend():
    """`is_multimodal_piecewise_cuda_graph_supported and _resolved_attention_backends()[0] !=
    "trtllm_mla"`: for a model outside the piecewise set the left side decides (False); for an
    MLA model in it, the backend SGLang picks from the GPU decides: unknown."""
    sglang = load_constraints().get("sglang")
    assert _backend(sglang, use_mla=True).backend == "breakable"
    member = next(
        r.architecture
        for r in sglang.rows("architecture_sets")
        if r.set_name == "is_multimodal_piecewise_cuda_graph_supported" and r.member_returns
    )
    found = _backend(sglang, member, use_mla=True)
    assert found.backend is None and "picks for an MLA model from the GPU" in found.why


@pytest.mark.real_mirror
def test_the_real_server_args_gives_the_committed_steps():
    mirror = os.environ.get("APRON_MIRROR_SGLANG")
    if not mirror:
        pytest.skip("APRON_MIRROR_SGLANG unset")
    import subprocess

    commit = "30cb848d4b455a288a37cfeb6a45aff34f5634a6"
    text = subprocess.run(
        ["git", "-C", mirror, "show", f"{commit}:{SERVER_ARGS_PATH}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows, warnings = memory_fraction_steps(text, SERVER_ARGS_PATH)
    assert tuple(r.model_dump() for r in rows) == tuple(r._asdict() for r in committed_rows())
    # the decode-disaggregation branch's `x or y or 1` is read (and not taken by default)
    assert warnings == []
    running = next(r for r in rows if r.target == "running_requests")
    assert running.value == (
        "or",
        ("or", "self.max_running_requests", "decode_cuda_graph_config.max_bs"),
        1,
    )


@pytest.mark.parametrize(
    ("architecture", "extra", "multimodal", "fraction"),
    [
        # text-only MiMo-V2 (no vision_config and audio_config): multimodal off, prefill capture
        # on: reserved 512 + 12,288 + 128 + (512 + 8 x 58) = 13,904 MiB -> round(68,016 / 81,920,
        # 3) = 0.83
        ("MiMoV2ForCausalLM", {}, False, 0.83),
        ("MiMoV2ForCausalLM", {"vision_config": {"hidden_size": 1280}}, False, 0.83),
        # both sub-configs: multimodal, prefill capture off (13,440 MiB -> 0.836), then the VLM
        # factor 0.95 x (1 - 0.1 x (32 x 1280^2 / (24 x 1024^2) - 1)) = 0.8470833...
        (
            "MiMoV2ForCausalLM",
            {"vision_config": {"num_hidden_layers": 32, "hidden_size": 1280}, "audio_config": {}},
            True,
            0.836 * 0.95 * (1 - 0.1 * (32 * 1280**2 / (24 * 1024**2) - 1)),
        ),
        ("MiMoV2FlashForCausalLM", {}, False, 0.83),  # not in MIMO_V2_MULTIMODAL_ARCHS
    ],
)
def test_mimo_v2_is_multimodal_only_with_both_sub_configs(
    architecture, extra, multimodal, fraction
):
    """ModelConfig.__init__ turns multimodal off for MIMO_V2_MULTIMODAL_ARCHS unless hf_config
    has both vision_config and audio_config (model_config.py), extracted as the set
    ModelConfig.__init__.MIMO_V2_MULTIMODAL_ARCHS with that condition."""
    from apron.engines.sglang import prefill_graph as sglang_prefill_graph
    from apron.engines.sglang.fraction import fraction_for

    sglang = load_constraints().get("sglang")
    rows = [
        r
        for r in sglang.rows("architecture_sets")
        if r.set_name == "ModelConfig.__init__.MIMO_V2_MULTIMODAL_ARCHS"
    ]
    assert [(r.architecture, r.condition) for r in rows] == [
        (
            "MiMoV2ForCausalLM",
            'not (hasattr(self.hf_config, "vision_config") and '
            'hasattr(self.hf_config, "audio_config"))',
        )
    ]
    model = _model(architecture, **extra)
    assert sglang_prefill_graph.is_multimodal(sglang, model) is multimodal
    assert fraction_for(sglang, model, False, GIB80, 1)[0] == pytest.approx(fraction, abs=1e-12)


def test_enable_multimodal_gates_the_support_flags_as_in_model_config():
    """ModelConfig sets `is_multimodal_piecewise_cuda_graph_supported = enable_multimodal and
    ...`: a text-only MiMo-V2 checkpoint (no vision_config / audio_config: multimodal off) in the
    piecewise set keeps the CUDA default; with both sub-configurations it switches to
    tc_piecewise, which no rule then turns off."""
    from apron.engines.sglang import prefill_graph as sglang_prefill_graph

    sglang = load_constraints().get("sglang")
    mimo = "MiMoV2ForCausalLM"
    piecewise = next(
        r for r in sglang.rows("architecture_sets") if r.set_name == "is_multimodal_model"
    )._replace(set_name="is_multimodal_piecewise_cuda_graph_supported", architecture=mimo)
    edited = _Edited("architecture_sets", lambda r: r)
    edited.edited.append(piecewise)
    for extra, backend in (({}, "breakable"), ({"vision_config": {}, "audio_config": {}}, None)):
        model = _model(mimo, **extra)
        multimodal = sglang_prefill_graph.is_multimodal(edited, model)
        found = sglang_prefill_graph.prefill_backend(edited, model, False, multimodal)
        assert (multimodal, found.backend) == (
            (False, "breakable") if backend else (True, "tc_piecewise")
        ), found.why


def test_every_registered_architecture_gets_a_backend_under_default_server_args():
    """No rule at the pin reads a name apron does not give: every architecture SGLang registers
    (on a llama-shaped config) settles on a backend; for an MLA model only the multimodal
    piecewise-validated ones wait on the GPU's attention backend."""
    from apron.engines.sglang import prefill_graph as sglang_prefill_graph

    sglang = load_constraints().get("sglang")
    piecewise = {
        r.architecture
        for r in sglang.rows("architecture_sets")
        if r.set_name == "is_multimodal_piecewise_cuda_graph_supported"
    }
    unknown = {False: set(), True: set()}
    for architecture in sorted({r.architecture for r in sglang.rows("registry_rows")}):
        model = _model(architecture)
        multimodal = sglang_prefill_graph.is_multimodal(sglang, model)
        for mla in (False, True):
            if sglang_prefill_graph.prefill_backend(sglang, model, mla, multimodal).backend is None:
                unknown[mla].add(architecture)
    assert unknown[False] == set()
    assert unknown[True] == piecewise and len(piecewise) == 4
