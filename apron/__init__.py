"""apron: a GPU-free, mechanism-aware KV-cache calculator driven by generated engine constraints.

Every answer is a prediction that cites the engine commits whose extracted rules it used.
apron imports `generated/` only: never the extractors and never engine source."""

from __future__ import annotations

from apron.config import ModelConfig, load_config, load_sample, sample_names
from apron.constraints import load_constraints
from apron.errors import ApronInputError
from apron.plan import KV_DTYPES, plan
from apron.results import Plan

__all__ = [
    "KV_DTYPES",
    "ApronInputError",
    "ModelConfig",
    "Plan",
    "load_config",
    "load_constraints",
    "load_sample",
    "plan",
    "sample_names",
]
