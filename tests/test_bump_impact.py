"""The bump's calculator impact on miniatures shaped like the real bumps (#34): vLLM 0231dd54 ->
6adad087 made FLASH_ATTN's get_preferred_block_size a shape the reader does not evaluate (vLLM's
capacity turns unknown for dense models) and put an `if` in NemotronHForCausalLM's state dtype
hook (its state per sequence moves). The body says both in words, with the reason."""

from __future__ import annotations

import pytest

from apron.extractors.commands.bump import plan_bump, render_pr_body
from apron.extractors.commands.generate import run
from apron.extractors.engines import ENGINES
from apron.extractors.runner.pipeline import ProjectPaths
from tests.conftest import commit_tree, git, write_pin
from tests.vllm_miniatures import REGISTRY_PATH, REGISTRY_V1, tree_v1
from tests.vllm_serving_miniatures import FLASH_BACKEND

VLLM = ENGINES["vllm"]
URL = "https://github.com/vllm-project/vllm"
FLASH_PATH = "vllm/v1/attention/backends/flash.py"
NEMOTRON_PATH = "vllm/model_executor/models/nemotron_h.py"

# the registry with Nemotron-H's row (module nemotron_h, the class it registers)
REGISTRY = REGISTRY_V1.replace(
    '    "DeepseekV3ForCausalLM":',
    '    "NemotronHForCausalLM": ("nemotron_h", "NemotronHForCausalLM"),\n'
    '    "DeepseekV3ForCausalLM":',
    1,
)

# NemotronHForCausalLM's hooks, in the shape of vllm/model_executor/models/nemotron_h.py
NEMOTRON_HOOKS = """
from vllm.model_executor.layers.mamba.mamba_utils import (
    MambaStateDtypeCalculator,
    MambaStateShapeCalculator,
)


class NemotronHForCausalLM(nn.Module, IsHybrid):
    @classmethod
    def get_mamba_state_dtype_from_config(cls, vllm_config):
        return MambaStateDtypeCalculator.mamba2_state_dtype(
            vllm_config.model_config.dtype,
            vllm_config.cache_config.mamba_cache_dtype,
            vllm_config.cache_config.mamba_ssm_cache_dtype,
        )

    @classmethod
    def get_mamba_state_shape_from_config(cls, vllm_config):
        parallel_config = vllm_config.parallel_config
        hf_config = vllm_config.model_config.hf_config
        intermediate_size = hf_config.mamba_num_heads * hf_config.mamba_head_dim
        return MambaStateShapeCalculator.mamba2_state_shape(
            intermediate_size=intermediate_size,
            tp_world_size=parallel_config.tensor_parallel_size,
            n_groups=hf_config.n_groups,
            num_heads=hf_config.mamba_num_heads,
            head_dim=hf_config.mamba_head_dim,
            state_size=hf_config.ssm_state_size,
            conv_kernel=hf_config.conv_kernel,
        )
"""
# 6adad087's shape: the dtype hook first asks the cache config (a statement the reader does not
# follow), and FLASH's preferred block size comes from a helper it does not evaluate
NEMOTRON_HOOKS_LATER = NEMOTRON_HOOKS.replace(
    "        return MambaStateDtypeCalculator.mamba2_state_dtype(",
    "        if vllm_config.cache_config.use_replayssm:\n"
    "            return MambaStateDtypeCalculator.append_replayssm_ring(None)\n"
    "        return MambaStateDtypeCalculator.mamba2_state_dtype(",
)
FLASH_LATER = FLASH_BACKEND.replace(
    "        if current_platform.is_xpu():\n            return 64\n"
    "        return super().get_preferred_block_size(default_block_size)",
    "        return pick_block_size(default_block_size)",
)


@pytest.fixture(scope="module")
def body(tmp_path_factory):
    """One bump, planned once for the module (its impact plans every sample twice)."""
    root = tmp_path_factory.mktemp("bump-impact")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("APRON_CACHE_DIR", str(root / "cache"))  # never the user's cache
        return _planned(root)


def _planned(root):
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    shas = [
        commit_tree(repo, files, message, date)
        for files, message, date in [
            (
                {**tree_v1(), REGISTRY_PATH: REGISTRY, NEMOTRON_PATH: NEMOTRON_HOOKS},
                "v1",
                "2026-07-24T10:00:00+00:00",
            ),
            (
                {NEMOTRON_PATH: NEMOTRON_HOOKS_LATER, FLASH_PATH: FLASH_LATER},
                "a replay ring for SSM states; FLASH picks its block size at runtime",
                "2026-08-14T10:00:00+00:00",
            ),
        ]
    ]
    project = ProjectPaths(root / "project")
    project.pins.mkdir(parents=True)
    project.generated.mkdir()
    write_pin(project, "vllm", URL, shas[0], "2026-07-24")
    run(VLLM, project, commit=None, source=str(repo))
    plan = plan_bump(VLLM, project, to=shas[1], source=str(repo), allow_shrink=True)
    return plan, render_pr_body(plan)


def verdict_of(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("**Verdict:**"))


def test_the_verdict_says_vllm_capacity_turns_unknown_for_dense_models(body):
    plan, text = body
    verdict = verdict_of(text)
    assert verdict.startswith("**Verdict:** the calculator's figures move on 20 of the 21 impact ")
    phrase = verdict.split("impact samples: ")[1].split("; ")[0]
    figures, rest = phrase.split(": unknown for ")
    assert set(figures.removeprefix("vLLM ").split(", ")) == {
        "KV tokens on 80 GiB",
        "block size (tokens)",
        "sequences of 32,768 on 80 GiB",
    }
    assert rest.startswith("dense models, ")  # every dense sample, by its family's name
    assert rest.endswith(": vLLM's default block size of FLASH is no longer read")


def test_the_verdict_says_the_nemotron_h_state_moves_and_why(body):
    plan, text = body
    state = next(
        c
        for c in plan.impact.changes
        if (c.sample, c.engine, c.figure, c.tp)
        == ("nemotron-h-8b-base-8k", "vLLM", "state per sequence", 1)
    )
    # the miniature calculators give 49.4 MiB; without the dtype hook vLLM's state is unknown
    assert (state.before, state.after) == ("49.4 MiB (51,806,208 B)", "unknown")
    assert (
        "vLLM state per sequence, state per sequence per GPU: unknown for 1 hybrid model "
        "(nemotron-h-8b-base-8k): vLLM's recurrent state dtype of NemotronHForCausalLM is no "
        "longer read"
    ) in verdict_of(text)


def test_the_readings_lost_say_what_and_where(body):
    plan, text = body
    lost = text.split("## Readings lost")[1].split("\n## ")[0]
    assert (
        "- vLLM's default block size of FLASH (attention backend #0 where not use_mla) is no "
        "longer read (it was 32, now unknown); still in the code at "
        f"{FLASH_PATH} line 5 (`attention_backends`)" in lost
    )
    assert (
        "- vLLM's recurrent state dtype of NemotronHForCausalLM (its "
        "get_mamba_state_dtype_from_config) is no longer read (it was read, now it is not); "
        f"still in the code at {NEMOTRON_PATH} line 10 (`mamba_state_hooks`)" in lost
    )


def test_the_body_says_when_the_engine_has_not_measured_the_commit(body):
    plan, text = body
    assert (
        "the conformance harness has not measured this commit (conformance/vllm/"
        f"{plan.new_pin.commit} holds no measurements.jsonl): how apron compares with vLLM there "
        "is not known" in verdict_of(text)
    )
