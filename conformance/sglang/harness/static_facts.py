"""What SGLang reports at run time of the facts apron extracts statically: the model registry
(and the model modules that fail to import, with the error) and the answers of model_config.py's
architecture-set functions for every candidate architecture."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

IMPORT_ERROR = re.compile(r"Ignore import error when loading (\S+): (.*)", re.S)
# set functions called with a list of architectures
LIST_SETS = (
    "is_audio_model",
    "is_cross_encoding_pooler_model",
    "is_encoder_decoder_model",
    "is_generation_model",
    "is_local_attention_model",
    "is_multimodal_breakable_cuda_graph_supported",
    "is_multimodal_chunked_prefill_supported",
    "is_multimodal_model",
    "is_multimodal_piecewise_cuda_graph_supported",
    "is_piecewise_cuda_graph_disabled_model",
)
# set functions called with a config; the attributes their extra condition reads, set so that it
# holds (the facts record the condition separately)
CONFIG_SETS = {
    "is_deepseek_dsa": {"index_topk": 2048},
    "is_deepseek_v4": {},
    "is_kimi_k3": {},
    "is_minimax_sparse": {},
    "is_nemotron_h": {},
}
ARCHITECTURE_LITERAL = re.compile(r'architecture="([A-Za-z0-9_]+)"')


def registry() -> tuple[dict[str, str], dict[str, str]]:
    """(architecture -> module of its class, model module -> its import error)."""
    failures: dict[str, str] = {}

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            found = IMPORT_ERROR.match(record.getMessage())
            if found:
                module = found.group(1).rsplit(".", 1)[-1]
                failures[module] = found.group(2).split(" (/")[0]

    logger = logging.getLogger("sglang.srt.models.registry")
    logger.addHandler(Collect())
    from sglang.srt.models.registry import ModelRegistry

    models = {arch: cls.__module__.rsplit(".", 1)[-1] for arch, cls in ModelRegistry.models.items()}
    return dict(sorted(models.items())), dict(sorted(failures.items()))


def candidates(registry_archs: set[str], generated: Path) -> list[str]:
    """Every architecture to ask the set functions about: the registry's and every one named in
    apron's static SGLang facts."""
    names = set(registry_archs)
    for name in ("architecture_sets.py", "registry_rows.py"):
        path = generated / name
        if path.is_file():
            names |= set(ARCHITECTURE_LITERAL.findall(path.read_text(encoding="utf-8")))
    return sorted(names)


def set_answers(names: list[str]) -> dict[str, list[str]]:
    """set function -> the candidate architectures for which it returns True."""
    from sglang.srt.configs import model_config

    answers: dict[str, list[str]] = {}
    for function in LIST_SETS:
        check = getattr(model_config, function)
        answers[function] = [a for a in names if check([a])]
    swa = model_config.is_hybrid_swa_model
    windowed = SimpleNamespace(sliding_window=4096)
    answers["is_hybrid_swa_model"] = [a for a in names if swa([a], windowed)]
    for function, attributes in CONFIG_SETS.items():
        check = getattr(model_config, function)
        answers[function] = [a for a in names if check(_config(a, attributes))]
    return dict(sorted(answers.items()))


def _config(architecture: str, attributes: dict[str, Any]) -> SimpleNamespace:
    return SimpleNamespace(architectures=[architecture], **attributes)


def static_facts(generated: Path) -> dict[str, Any]:
    models, failures = registry()
    names = candidates(set(models), generated)
    answers = set_answers(names)
    return {
        "registry": models,
        "import_failures": failures,
        "set_candidates": names,
        "set_answers": answers,
        "set_checks": len(names) * len(answers),
    }
