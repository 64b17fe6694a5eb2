"""A bump compares apron, with the new constraints, with the engine's own measurements at the new
commit when the conformance harness recorded them (conformance/<engine>/<commit>/), and says so
plainly when it did not."""

from __future__ import annotations

import json
import shutil

from apron.constraints import load_constraints
from apron.extractors.report.conformance import compare_with_records
from tests.conftest import REPO_ROOT

COMMIT = "c" * 40


def records(root, rows):
    folder = root / "conformance" / "vllm" / COMMIT
    (folder / "inputs").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "apron/samples/llama-3.1-8b.json", folder / "inputs" / "llama.json")
    lines = [json.dumps(row, sort_keys=True) for row in rows]
    (folder / "measurements.jsonl").write_text("\n".join(sorted(lines)) + "\n")


def test_apron_is_held_to_the_engines_records_at_the_new_commit(tmp_path):
    # Llama-3.1-8B: 32 layers x 8 KV heads x (128 + 128) x 2 B = 131,072 B/token; tp 2: 4 heads
    records(
        tmp_path,
        [
            {"input": "inputs/llama.json", "settings": {"context": 4096}, "figure":
             "kv_bytes_per_token", "value": 131072},
            {"input": "inputs/llama.json", "settings": {"context": 4096, "tp": 2}, "figure":
             "kv_heads_per_gpu", "value": 4},
            {"input": "inputs/llama.json", "settings": {"context": 4096, "tp": 2}, "figure":
             "kv_bytes_per_token", "value": 1},  # a figure apron disagrees with
            {"input": "inputs/llama.json", "settings": {"context": -1}, "figure":
             "kv_bytes_per_token", "value": None, "refused": "max_model_len must be positive"},
            {"input": "inputs/llama.json", "settings": {}, "figure": "head_dim", "value": 128},
        ],
    )  # fmt: skip
    outcome = compare_with_records(tmp_path, "vllm", COMMIT, load_constraints())
    assert (outcome.measured, outcome.compared, outcome.equal, outcome.not_compared) == (
        True,
        4,
        3,
        1,
    )
    assert outcome.differences == [
        'inputs/llama.json kv_bytes_per_token {"context": 4096, "tp": 2}: vllm 1, apron 65536'
    ]
    assert outcome.words("vLLM") == (
        f"against vLLM's own measurements at this commit (conformance/vllm/{COMMIT}): 4 figures "
        "compared, 3 equal, 1 differs (1 recorded figure apron does not print)"
    )


def test_no_records_for_the_commit_is_said_plainly(tmp_path):
    outcome = compare_with_records(tmp_path, "vllm", COMMIT, load_constraints())
    assert not outcome.measured
    assert outcome.words("vLLM") == (
        f"the conformance harness has not measured this commit (conformance/vllm/{COMMIT} holds "
        "no measurements.jsonl): how apron compares with vLLM there is not known"
    )
