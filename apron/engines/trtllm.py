"""TensorRT-LLM's extracted facts applied to a config. Only registration and documented
constraints (feature-matrix cells, footnotes) are extracted, so this view carries notes and the
support table carries the rows; no byte figures."""

from __future__ import annotations

from apron.config import ModelConfig
from apron.constraints import EngineConstraints, field
from apron.engines.base import EngineDecision

ENGINE = "trtllm"


def decide(model: ModelConfig, trtllm: EngineConstraints) -> EngineDecision:
    arch = model.architecture
    notes: list[str] = []
    cites = []
    for fact, rows in sorted(trtllm.facts.items()):
        for row in rows:
            if field(row, "architecture") != arch:
                continue
            for name in ("sliding_window_attention", "feature", "value", "cell"):
                value = field(row, name)
                if isinstance(value, str) and value:
                    notes.append(f"{fact}: {name} = {value}")
            for note in field(row, "footnotes", ()) or field(row, "notes", ()) or ():
                notes.append(f"{fact}: {note}")
            cites.append(trtllm.cite(row, fact))
    return EngineDecision(ENGINE, None, None, (), tuple(dict.fromkeys(notes)), tuple(cites[:5]),
                          computes_figures=False)
