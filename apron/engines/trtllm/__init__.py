"""TensorRT-LLM's extracted facts applied to a config: registration, the supported-models table
and the model-feature matrix with its footnotes (hardware and backend constraints).

Reads generated/trtllm facts `registry_rows`, `supported_models` and `feature_matrix` by field
name. TensorRT-LLM's KV sizing rules are not extracted, so this view carries documented
constraints, not byte figures; the feature matrix's Sliding Window Attention cell says which of
apron's two sliding-window figures the documentation points to."""

from __future__ import annotations

from apron.config import ModelConfig
from apron.constraints import EngineConstraints
from apron.engines import base
from apron.engines.base import EngineDecision
from apron.terminal import shown

ENGINE = "trtllm"
MATRIX, SUPPORTED = "feature_matrix", "supported_models"


def _notes(*values: object) -> list[str]:
    out: list[str] = []
    for value in values:
        if isinstance(value, str) and value:
            out.append(value)
        elif isinstance(value, tuple | list):
            out.extend(str(v) for v in value if v)
    return out


def decide(model: ModelConfig, trtllm: EngineConstraints) -> EngineDecision:
    arch = model.architecture
    notes: list[str] = []
    cites = []
    cells = [r for r in trtllm.rows(MATRIX) if r.architecture == arch]
    if cells:
        statuses = ", ".join(f"{c.feature} {c.status}" for c in cells)
        notes.append(f"feature matrix: {statuses}")
        for cell in cells:
            for note in _notes(cell.notes):
                notes.append(f"{cell.feature}: {note}")
            notes.extend(f"row: {note}" for note in _notes(cell.row_notes))
            feature = str(cell.feature).lower()
            if "sliding window" in feature:
                status = str(cell.status).lower()
                if status == "no":
                    notes.append(
                        "Sliding Window Attention is documented as unsupported for this "
                        "architecture: expect the naive (window-ignoring) figure"
                    )
                elif status == "yes":
                    notes.append(
                        "Sliding Window Attention is documented as supported: the "
                        "window-aware figure applies"
                    )
        cites.append(trtllm.cite(cells[0], "Model-Feature Support Matrix"))
    for row in trtllm.rows(SUPPORTED):
        if row.architecture == arch:
            notes.extend(_notes(row.architecture_notes, row.model_notes, row.example_notes))
            cites.append(trtllm.cite(row, str(row.section or "supported models")))
    if not cells and trtllm.has(MATRIX):
        notes.append(f"no feature-matrix row for {shown(arch)}")
    return EngineDecision(
        engine=ENGINE,
        kv_heads=None,
        mla=None,
        flags=(),
        notes=tuple(dict.fromkeys(notes)),
        citations=tuple(cites[:4]),
        computes_figures=False,
    )


# the planner's protocol (apron.engines.base.EngineRules): no sizing rules of its own
default_context = base.no_default_context
own_view = base.no_own_view
memory_fraction = base.no_memory_fraction
fit_capacity = base.block_capacity
pooling = base.not_pooling
tp_refusals = base.no_tp_refusals
state_tp_refusal = base.no_state_tp_refusal
kv_dtype_unknown = base.kv_dtype_known
auto_kv_dtype = base.no_auto_kv_dtype
