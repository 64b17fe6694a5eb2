"""What a bump found, for the pull request's text: the old and new pins and facts, their
semantic diff, shrunken facts, the calculator's figures before and after, and readings lost.
`extract bump` builds it (commands/bump.py); the body and title render it (pr_body.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from apron.extractors.engine_api import EngineSpec
from apron.extractors.pins import Pin
from apron.extractors.records import EngineFacts
from apron.extractors.report.diff import EngineDiff
from apron.extractors.report.impact import CalculatorImpact
from apron.extractors.report.readings_lost import LostReading


@dataclass(frozen=True)
class Shrink:
    fact: str
    old_count: int
    new_count: int


@dataclass
class BumpPlan:
    engine: EngineSpec
    old_pin: Pin
    new_pin: Pin
    old_facts: EngineFacts | None
    new_facts: EngineFacts
    diff: EngineDiff
    shrinks: list[Shrink]
    accepted_shrink: bool
    impact: CalculatorImpact | None = None  # None: not computed (`extract bump` computes it)
    rendered: dict[str, str] = field(default_factory=dict)
    # Suspected misreads (extractors/report/readings_lost.py); the body puts them first.
    readings_lost: list[LostReading] = field(default_factory=list)

    @property
    def no_change(self) -> bool:
        return self.diff.empty
