"""Everything apron has no mechanism for (encoder-decoder cross-attention, diffusion, chunked
local attention, ...): unknown, with the reason. Never a guess."""

from __future__ import annotations

from apron.config import ModelConfig
from apron.mechanisms.base import unknown_result
from apron.results import HeadCount, MechanismResult, Request

NAME = "unsupported"
TITLE = "no implemented mechanism"


def compute(
    model: ModelConfig, heads: HeadCount, request: Request, reason: str = "", title: str = TITLE
) -> MechanismResult:
    return unknown_result(
        NAME, title, (reason or "no implemented mechanism fits this config",), state=None
    )
