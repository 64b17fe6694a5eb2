"""The weights figure of a plan: given (--weights-bytes, or --params x --weights-dtype), a sample's
published checkpoint size, or the checkpoint's safetensors headers (apron.weights), else unknown
with what to give."""

from __future__ import annotations

from pathlib import Path

from apron import bounds
from apron.config import ModelConfig
from apron.errors import ApronInputError
from apron.results import DtypeWeights, Weights
from apron.terminal import shown


def checkpoint_dir(model: ModelConfig, model_dir: str | Path | None) -> Path | None:
    """The directory holding the checkpoint: given, else the one of the config.json read."""
    if model_dir is not None:
        return Path(model_dir)
    path = Path(model.source)
    return path.parent if path.is_file() else None


SAMPLE_PREFIX = "sample:"
GIVE_WEIGHTS = "give --params N or --weights-bytes N"


def sample_weights(model: ModelConfig) -> Weights | None:
    """The published checkpoint's weight bytes a sample carries (apron/samples/weights.json)."""
    if not model.source.startswith(SAMPLE_PREFIX):
        return None
    import json

    from apron.config import SAMPLES_DIR

    found = json.loads((SAMPLES_DIR / "weights.json").read_text(encoding="utf-8"))
    entry = found.get(model.source.removeprefix(SAMPLE_PREFIX))
    if entry is None:
        return None
    return Weights(
        total_bytes=int(entry["total_size"]),
        by_dtype=(),
        source=f"the sample's {entry['source']}",
        unknown="",
        notes=(),
    )


def checkpoint_weights(model: ModelConfig, model_dir: Path | None) -> Weights:
    """The checkpoint's weight bytes from the model directory (apron.weights), or unknown."""
    if model_dir is None:
        found = sample_weights(model)
        if found is not None:
            return found
        return Weights(
            total_bytes=None,
            by_dtype=(),
            source="",
            unknown=f"{model.source} is not a model directory: {GIVE_WEIGHTS} (no safetensors to read)",
            notes=(),
        )
    from apron import weights as weight_files

    found = weight_files.checkpoint_weights(model_dir)
    if found is None:
        from apron.hf_cache import hub_safetensors_headers

        headers = hub_safetensors_headers(model_dir)  # only for a model read from the Hub
        if headers:
            found = weight_files.from_headers_json(headers, "the Hub")
    if found is None:
        return Weights(
            total_bytes=None,
            by_dtype=(),
            source="",
            unknown=weight_files.weights_unknown_reason(model_dir),
            notes=(),
        )
    return Weights(
        total_bytes=found.total_bytes,
        by_dtype=tuple(DtypeWeights(d.dtype, d.bytes, d.tensors) for d in found.by_dtype),
        source=found.source,
        unknown="",
        notes=tuple(found.notes),
    )


# bits per parameter of the --weights-dtype names: a parameter count times this is the weights
PARAM_DTYPE_BITS = {
    "fp32": 32,
    "float32": 32,
    "bf16": 16,
    "bfloat16": 16,
    "fp16": 16,
    "float16": 16,
    "fp8": 8,
    "int8": 8,
    "fp4": 4,
    "int4": 4,
}


def given_weights(
    weights_bytes: int | None,
    params: int | None,
    weights_dtype: str | None,
    config_dtype: str | None = None,
) -> Weights | None:
    """The weights figure given instead of a checkpoint: --weights-bytes, or --params times the
    bytes of --weights-dtype (default: the config's torch_dtype / dtype); None when neither is
    given."""
    if weights_bytes is not None and params is not None:
        raise ApronInputError("give --weights-bytes or --params, not both")
    if weights_dtype is not None and params is None:
        raise ApronInputError("--weights-dtype goes with --params (the parameter count)")
    if weights_bytes is not None:
        weights_bytes = bounds.checked(weights_bytes, bounds.BYTES, "--weights-bytes")
        return Weights(
            total_bytes=weights_bytes, by_dtype=(), source="--weights-bytes", unknown="", notes=()
        )
    if params is None:
        return None
    params = bounds.checked(params, bounds.PARAMS, "--params")
    from_config = weights_dtype is None and config_dtype in PARAM_DTYPE_BITS
    if from_config:
        weights_dtype = config_dtype
    if weights_dtype is None or weights_dtype not in PARAM_DTYPE_BITS:
        given = "none" if weights_dtype is None else shown(repr(weights_dtype))
        raise ApronInputError(
            f"--params needs --weights-dtype (got {given}; the config's torch_dtype is "
            f"{config_dtype or 'absent'}): one of {', '.join(PARAM_DTYPE_BITS)}"
        )
    bits = PARAM_DTYPE_BITS[weights_dtype]
    total = bounds.checked(-(-params * bits // 8), bounds.BYTES, f"--params x {weights_dtype}")
    source = f"the config's {weights_dtype}" if from_config else weights_dtype
    return Weights(
        total_bytes=total,
        by_dtype=(),
        source=f"--params {params:,} x {bits} bits ({source})",
        unknown="",
        notes=(f"weights = ceil({params:,} parameters x {bits} / 8) = {total:,} B",),
    )
