"""apron: a GPU-free, mechanism-aware KV-cache calculator driven by generated engine constraints.

Every answer is a prediction that cites the engine commits whose extracted rules it used.
apron imports `generated/` only: never the extractors and never engine source.

The public API is the names in `__all__`:

- `load_constraints(directory=None) -> ConstraintSet`: every engine's committed constraints in a
  `generated/` directory (default: the installed `generated` package), read through the strict
  loader; `ConstraintSet.get(engine)` is an `EngineConstraints` (engine, commit, commit_date,
  upstream, facts: fact name -> rows) or None when that engine has no generation.
- `plan(config, *, context=None, kv_dtype="bf16", batch=1, constraints=None, tp=1,
  gpu_memory=None, memory_fraction=None, model_dir=None, weights_bytes=None, params=None,
  weights_dtype=None) -> Plan`: the labelled prediction for
  one Hugging Face config (a dict, a path to config.json or a model directory, or a
  `ModelConfig`); `Plan.prediction` holds the figures, `Plan.engines` what each engine would do
  at its pinned commit (with `gpu`, its per-GPU share at `tp`, and `capacity`, what fits in
  `gpu_memory` bytes), `Plan.weights` the checkpoint's weight bytes, `Plan.support` which
  engines register the architecture. `kv_dtype="auto"` takes each engine's own choice from
  the checkpoint (its dtype and quantization config; `apron.kv_dtype`), read from `model_dir`
  or the config's directory. `weights_bytes`, or `params` with `weights_dtype`, give the weights
  figure for the capacity without a checkpoint.
- `load_config`, `load_sample`, `sample_names`, `ModelConfig`: reading configs.
- `ApronInputError` (unreadable input) and `ConstraintsError` (a generated module that does not
  match its schema).

    >>> import apron
    >>> result = apron.plan(apron.load_sample("llama-3.1-8b"), context=8192)
    >>> result.prediction.kv_bytes_at_context
    1073741824
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from apron.config import ModelConfig, load_config, load_sample, sample_names
    from apron.constraints import ConstraintSet, EngineConstraints, load_constraints
    from apron.errors import ApronInputError, ConstraintsError
    from apron.planning.planner import KV_DTYPES, plan
    from apron.results import Plan

__all__ = [
    "KV_DTYPES",
    "ApronInputError",
    "ConstraintSet",
    "ConstraintsError",
    "EngineConstraints",
    "ModelConfig",
    "Plan",
    "load_config",
    "load_constraints",
    "load_sample",
    "plan",
    "sample_names",
]


def __getattr__(name: str) -> object:
    """A public name, imported from its module at first use and kept on the package (PEP 562),
    so that `import apron` (and an `extract` run, which imports this package too) costs no
    calculator; the imports are written out so static tools follow them."""
    if name in ("KV_DTYPES", "plan"):
        from apron.planning import planner as module
    elif name in ("ModelConfig", "load_config", "load_sample", "sample_names"):
        from apron import config as module
    elif name in ("ConstraintSet", "EngineConstraints", "load_constraints"):
        from apron import constraints as module
    elif name in ("ApronInputError", "ConstraintsError"):
        from apron import errors as module
    elif name == "Plan":
        from apron import results as module
    else:
        raise AttributeError(f"module 'apron' has no attribute {name!r}")
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
