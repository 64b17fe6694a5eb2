"""`extract bump`: move a pin, regenerate, and explain the change for a pull request."""

from __future__ import annotations

import re

from apron.extractors.commands.generate import readings_lost_at
from apron.extractors.engine_api import EngineSpec
from apron.extractors.errors import (
    GeneratedError,
    GuardError,
    UnknownCommitError,
    UsageError,
)
from apron.extractors.git import GitSource
from apron.extractors.pins import ANY_SHA, FULL_SHA, Pin, load_pin, pin_path, render_pin
from apron.extractors.report.bump_plan import BumpPlan, Shrink
from apron.extractors.report.diff import EngineDiff, diff_engine, with_removal_notes
from apron.extractors.report.engine_reports import engine_report
from apron.extractors.report.generated_files import current_facts, render_generated
from apron.extractors.report.impact import calculator_impact
from apron.extractors.report.pr_body import (
    BodyLinks,
    render_full_diff,
    render_pr_body,
    render_pr_title,
)
from apron.extractors.runner.pipeline import (
    ProjectPaths,
    extract_at,
    refuse_leftovers,
    source_for,
    start_writing,
    write_rendered,
)
from apron.extractors.runner.writer import project_lock

__all__ = [
    "BodyLinks",
    "BumpPlan",
    "READINGS_LOST_EXIT",
    "apply_bump",
    "plan_bump",
    "render_full_diff",
    "render_pr_body",
    "render_pr_title",
]

NO_CHANGE_EXIT = 3  # documented: nothing changed beyond the header; no pull request
READINGS_LOST_EXIT = 4  # documented: bumped, but readings were lost; the PR opens as a draft
SHRINK_LIMIT = 0.5
REF_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,200}\Z")  # \Z: no trailing newline


def resolve_ref(source: GitSource, ref: str | None) -> str:
    """A commit SHA as given, a branch/tag name via the source, or the source's HEAD."""
    if ref is None:
        return source.default_branch_head()
    if FULL_SHA.match(ref):
        return ref
    if ANY_SHA.match(ref):  # hex-looking: a tag or branch of that name wins over a SHA prefix
        try:
            return source.ref_head(ref)
        except UnknownCommitError:
            return ref
    if ref.startswith("-") or not REF_NAME.match(ref) or ".." in ref:
        raise UsageError(
            f"--to {ref!r} is neither a hexadecimal SHA nor a plain branch or tag name"
        )
    return source.ref_head(ref)


def find_shrinks(diff: EngineDiff) -> list[Shrink]:
    shrinks = [
        Shrink(d.fact, d.old_count, d.new_count)
        for d in diff.facts
        if d.old_count and d.new_count < d.old_count * SHRINK_LIMIT
    ]
    shrinks += [Shrink(kind, 1, 0) for kind in diff.lost_kinds]
    return shrinks


def plan_bump(
    engine: EngineSpec,
    paths: ProjectPaths,
    *,
    to: str | None,
    source: str | None,
    allow_shrink: bool = False,
    with_impact: bool = True,
) -> BumpPlan:
    old_pin = load_pin(paths.pins, engine.engine_id)
    try:  # the diff and the shrink guard compare with it: no bump without it
        old_facts = current_facts(paths, engine)
    except GeneratedError as err:
        raise GeneratedError(
            f"bump refuses to run: the previous generation cannot be read, so the diff and "
            f"the shrink guard would compare with nothing ({err.message}); regenerate it at "
            f"the pin first (extract --engine {engine.engine_id})",
            engine=engine.engine_id,
        ) from err
    chosen = source_for(engine, old_pin, source)
    with GitSource(engine.engine_id, chosen) as git_source:
        commit = resolve_ref(git_source, to)
    if old_facts is not None and old_facts.commit != old_pin.commit:
        raise GuardError(
            f"generated/{engine.engine_id} was extracted at {old_facts.commit} but "
            f"pins/{engine.engine_id}.toml names {old_pin.commit}: the bump would compare "
            f"against the wrong commit; run `extract --engine {engine.engine_id}` first",
            engine=engine.engine_id,
        )
    new_facts = extract_at(engine, commit, chosen, upstream_url=old_pin.url)
    diff = diff_engine(old_facts, new_facts)
    removal_notes = engine_report(engine.engine_id).removal_notes
    if removal_notes is not None:
        diff = with_removal_notes(diff, removal_notes(new_facts))
    shrinks = find_shrinks(diff)
    if shrinks and not allow_shrink:
        listed = "; ".join(f"{s.fact}: {s.old_count} -> {s.new_count}" for s in shrinks)
        raise GuardError(
            f"the bump would shrink fact sets by more than half or lose a fact kind "
            f"({listed}); rerun with --allow-shrink to accept it",
            engine=engine.engine_id,
            commit=new_facts.commit,
            source=chosen,
        )
    new_pin = Pin(url=old_pin.url, commit=new_facts.commit, date=new_facts.commit_date)
    plan = BumpPlan(
        engine=engine,
        old_pin=old_pin,
        new_pin=new_pin,
        old_facts=old_facts,
        new_facts=new_facts,
        diff=diff,
        shrinks=shrinks,
        accepted_shrink=bool(shrinks),
    )
    plan.readings_lost = readings_lost_at(engine, chosen, old_facts, new_facts)
    plan.rendered = render_generated(paths, new_facts)
    if with_impact and not plan.no_change:
        plan.impact = calculator_impact(paths, plan.rendered, engine.engine_id, new_facts.commit)
    return plan


def apply_bump(paths: ProjectPaths, plan: BumpPlan) -> None:
    """generated/ and the pin as one atomic change, the pin swapped in last: a failure anywhere
    leaves both as they were, so the pin never names a commit whose files were not written."""
    with project_lock(paths.root):
        start_writing(paths)
        refuse_leftovers(paths, "bump")
        write_rendered(
            paths,
            plan.rendered,
            {pin_path(paths.pins, plan.engine.engine_id): render_pin(plan.new_pin)},
        )
