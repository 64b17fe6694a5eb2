"""The figures and verdicts `extract bump` compares before and after a pin moves.

`sample_figures()` plans every shipped sample at a fixed context and flattens what a reviewer
cares about into strings: apron's prediction and each engine's view at its pin."""

from __future__ import annotations

from pathlib import Path

from apron.config import load_sample, sample_names
from apron.constraints import load_constraints
from apron.errors import ApronInputError
from apron.planner import plan

IMPACT_CONTEXT = 32768
IMPACT_TP = 8  # the per-GPU figures a bump compares too (tensor-parallel rules)


def sample_figures(
    directory: Path | None = None, context: int = IMPACT_CONTEXT
) -> dict[str, dict[str, str]]:
    """The figures with the constraints of `directory` (default: the installed generated/)."""
    constraints = load_constraints(directory)
    figures: dict[str, dict[str, str]] = {}
    for name in sample_names():
        result = plan(load_sample(name), context=context, constraints=constraints)
        row = {
            "prediction mechanism": str(result.prediction.mechanism),
            "prediction KV bytes/token": str(result.prediction.kv_bytes_per_token),
            f"prediction KV bytes at {context}": str(result.prediction.kv_bytes_at_context),
            "prediction state bytes/sequence": str(result.prediction.state_bytes_per_sequence),
            "KV heads": str(result.kv_heads.count),
        }
        for view in result.engines:
            prefix = view.engine
            row[f"{prefix} status"] = view.status
            row[f"{prefix} registers architecture"] = str(view.registered)
            row[f"{prefix} mechanism"] = str(view.mechanism)
            row[f"{prefix} KV bytes at {context}"] = str(view.kv_bytes_at_context)
            row[f"{prefix} flags"] = ", ".join(view.flags)
        try:
            split = plan(load_sample(name), context=context, constraints=constraints, tp=IMPACT_TP)
        except ApronInputError as err:  # no engine accepts this tp: one message
            row[f"tp {IMPACT_TP}"] = str(err)
            figures[name] = row
            continue
        for view in split.engines:
            if view.gpu is None:
                continue
            prefix = f"{view.engine} at tp {IMPACT_TP}"
            row[f"{prefix} status"] = view.gpu.status
            row[f"{prefix} KV bytes/token per GPU"] = str(view.gpu.kv_bytes_per_token)
            row[f"{prefix} state bytes/sequence per GPU"] = str(view.gpu.state_bytes_per_sequence)
        figures[name] = row
    return figures
