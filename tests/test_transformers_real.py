"""The committed generated/transformers/ against the real sources: the pinned transformers sdist
(APRON_TRANSFORMERS_SDIST, a local copy; `pip download --no-deps --no-binary :all:
transformers==<release>`) and the vLLM mirror (APRON_MIRROR_VLLM). Skips unless both are given."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from apron.extractors.transformers.__main__ import render_project
from tests.conftest import REPO_ROOT, mirror

SDIST = os.environ.get("APRON_TRANSFORMERS_SDIST")
VLLM = mirror("vllm")

pytestmark = [
    pytest.mark.real_mirror,
    pytest.mark.skipif(
        not (SDIST and VLLM), reason="APRON_TRANSFORMERS_SDIST and APRON_MIRROR_VLLM not set"
    ),
]


def test_committed_modules_are_what_the_pinned_sources_give():
    files = render_project(REPO_ROOT, Path(SDIST or ""), VLLM)
    folder = REPO_ROOT / "generated" / "transformers"
    for name, text in files.items():
        assert (folder / name).read_text(encoding="utf-8") == text, name
    ours = files["config_classes.py"]
    # transformers 5.5.3 src/transformers/models/qwen3/configuration_qwen3.py: head_dim: int = 128
    assert '    ("Qwen3Config", "head_dim", 128, True),' in ours
    # .../granitemoehybrid/configuration_granitemoehybrid.py: mamba_expand: int | None = 2
    assert '    ("GraniteMoeHybridConfig", "mamba_expand", 2, True),' in ours
    # vLLM registers its own Qwen3NextConfig for qwen3_next
    assert '    ("qwen3_next", "Qwen3NextConfig"),' in files["vllm_config_classes.py"]
