"""The `extract` command line."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from apron.console import EscapingConsole
from apron.extractors.commands.generate import RunResult, run
from apron.extractors.errors import ExtractionError, UsageError
from apron.extractors.runner.pipeline import find_project
from apron.terminal import printable
from apron.version import version_option

app = typer.Typer(
    add_completion=False,
    no_args_is_help=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Extract serving-engine constraints at pinned commits into generated/.",
)
err_console = EscapingConsole(stderr=True, highlight=False, soft_wrap=True)
out_console = EscapingConsole(highlight=False, soft_wrap=True)

EngineOpt = Annotated[
    str | None,
    typer.Option(
        "--engine", "-e", help="vllm, llamacpp (llama.cpp), sglang or trtllm (tensorrt-llm)."
    ),
]
CommitOpt = Annotated[
    str | None,
    typer.Option(
        "--commit",
        "-c",
        help="Commit to extract (full SHA; abbreviated if already cached). Default: the pin.",
    ),
]
SourceOpt = Annotated[
    str | None,
    typer.Option(
        "--source",
        "-s",
        help="https:// or file:// URL or local path of the engine repository. "
        "Default: $APRON_SOURCE_VLLM (the engine id in capitals), else the pin's URL.",
    ),
]
RootOpt = Annotated[
    Path | None,
    typer.Option(
        "--project",
        metavar="DIR",
        help="Project checkout (holds pins/ and generated/). Default: this folder or a parent; "
        "outside a checkout, --dry-run, check --offline, support and history read the pins "
        "and generated/ installed with the package.",
    ),
]
# the option's former name, still accepted (scripts and CI use it); not in the help
RootAliasOpt = Annotated[Path | None, typer.Option("--root", hidden=True)]


VersionOpt = version_option("extract")


def fail(err: ExtractionError) -> None:
    err_console.print(f"[bold red]error:[/] {escape(printable(str(err)))}", markup=True)
    raise typer.Exit(err.exit_code)


def print_summary(result: RunResult, wrote: bool) -> None:
    facts = result.facts
    for notice in result.notices:
        err_console.print(f"note: {notice}", markup=False)
    out_console.print(f"{facts.engine} @ {facts.commit} ({facts.commit_date})")
    for fact in facts.facts:
        line = f"  {fact.kind.name}: {len(fact.records)}"
        delta = next(d for d in result.diff.facts if d.fact == fact.kind.name)
        if result.previous is None:
            line += " (new)"
        elif not delta.empty:
            bits = []
            if delta.added:
                bits.append(f"+{len(delta.added)}")
            if delta.removed:
                bits.append(f"-{len(delta.removed)}")
            if delta.changed:
                bits.append(f"~{len(delta.changed)}")
            if delta.moved:
                bits.append(f"{len(delta.moved)} moved")
            if delta.reordered:
                bits.append("reordered")
            line += " (" + " ".join(bits) + " against generated/)"
        out_console.print(line)
    out_console.print(f"  warnings: {len(facts.warnings)}")
    for warning in facts.warnings[:10]:
        out_console.print(f"    [{warning.code}] {warning.message}", markup=False)
    if len(facts.warnings) > 10:
        out_console.print(
            f"    ... {len(facts.warnings) - 10} more in generated/{facts.engine}/README.md"
        )
    if result.previous is not None and result.diff.empty and result.previous.commit == facts.commit:
        out_console.print("  no change against generated/")
    out_console.print(
        f"  wrote generated/{facts.engine}/" if wrote else "  dry run: nothing written"
    )
    if result.pin_moved is not None:
        old, new = result.pin_moved
        what = (
            f"moved from {old.commit} ({old.date})"
            if old.commit != new.commit
            else f"date corrected from {old.date}"
        )
        out_console.print(
            f"  pin pins/{facts.engine}.toml now names {new.commit} ({new.date}): {what}"
        )


@app.callback(invoke_without_command=True)
def extract(
    ctx: typer.Context,
    engine: EngineOpt = None,
    commit: CommitOpt = None,
    source: SourceOpt = None,
    root: RootOpt = None,
    root_alias: RootAliasOpt = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Extract and report; write nothing.")
    ] = False,
    _version: VersionOpt = False,
) -> None:
    """Extract one engine at a commit (default: its pin) and write generated/<engine>/."""
    if ctx.invoked_subcommand is not None:
        return
    if engine is None:
        err_console.print(ctx.get_help())
        raise typer.Exit(2)
    from apron.extractors.engines import engine_by_id

    try:
        spec = engine_by_id(engine)
        paths = find_project(root or root_alias, read_only=dry_run)
        result = run(spec, paths, commit=commit, source=source, write=not dry_run)
    except ExtractionError as err:
        fail(err)
        return
    print_summary(result, wrote=not dry_run)


@app.command("bump")
def bump_command(
    ctx: typer.Context,
    engine: Annotated[
        str | None,
        typer.Option("--engine", "-e", help="Engine id (also accepted before `bump`)."),
    ] = None,
    to: Annotated[
        str | None,
        typer.Option("--to", help="Commit SHA, branch or tag. Default: the source's HEAD."),
    ] = None,
    source: SourceOpt = None,
    root: RootOpt = None,
    root_alias: RootAliasOpt = None,
    pr_title: Annotated[
        Path | None, typer.Option("--pr-title", help="Write the pull-request title here.")
    ] = None,
    pr_body: Annotated[
        Path | None, typer.Option("--pr-body", help="Write the pull-request body (markdown) here.")
    ] = None,
    full_diff: Annotated[
        Path | None,
        typer.Option("--full-diff", help="Write the full, uncapped semantic diff (markdown) here."),
    ] = None,
    full_diff_url: Annotated[
        str | None,
        typer.Option("--full-diff-url", help="Where the full diff is kept (the body links to it)."),
    ] = None,
    tree_url: Annotated[
        str | None,
        typer.Option(
            "--tree-url", help="The repository at the PR branch, for links to generated/ files."
        ),
    ] = None,
    branch: Annotated[
        str | None,
        typer.Option(
            "--branch", help="Create this branch with one commit (pin + generated/). Never pushes."
        ),
    ] = None,
    allow_shrink: Annotated[
        bool, typer.Option("--allow-shrink", help="Accept fact sets shrinking by more than half.")
    ] = False,
) -> None:
    """Move the pin to a new commit, regenerate, and write the pull-request title and body.

    Exit codes: 0 bumped; 3 nothing changed beyond the header (no files written);
    4 bumped, but readings were lost (suspected misreads, listed first in the body: open the
    pull request as a draft); 2 any error (generated/ and pins/ untouched)."""
    from apron.extractors.commands.bump import (
        NO_CHANGE_EXIT,
        READINGS_LOST_EXIT,
        BodyLinks,
        apply_bump,
        plan_bump,
        render_full_diff,
        render_pr_body,
        render_pr_title,
    )
    from apron.extractors.commands.project_branch import check_new_branch, commit_on_new_branch
    from apron.extractors.engines import engine_by_id
    from apron.extractors.runner.pipeline import refuse_leftovers, start_writing
    from apron.extractors.runner.writer import (
        WriteError,
        check_output_path,
        project_lock,
        refuse_writes_outside,
        write_file_atomically,
    )

    try:
        engine, source, root, root_alias = _before(
            ctx, "bump", engine=engine, source=source, root=root, root_alias=root_alias
        )
        spec = engine_by_id(engine)
        paths = find_project(root or root_alias)
        refuse_writes_outside(paths.root, [paths.generated, paths.pins])
        title_path = check_output_path(pr_title, "--pr-title") if pr_title else None
        body_path = check_output_path(pr_body, "--pr-body") if pr_body else None
        diff_path = check_output_path(full_diff, "--full-diff") if full_diff else None
        outputs = [p.resolve() for p in (title_path, body_path, diff_path) if p]
        if len(set(outputs)) != len(outputs):
            raise UsageError("--pr-title, --pr-body and --full-diff must name different files")
        for output in (title_path, body_path, diff_path):
            if output and any(
                output.resolve().is_relative_to(d.resolve()) for d in (paths.generated, paths.pins)
            ):
                raise UsageError(f"{output} is inside generated/ or pins/; write it elsewhere")
        if branch is not None:
            check_new_branch(paths.root, branch)
        with project_lock(paths.root):
            for note in start_writing(paths):
                err_console.print(f"note: {note}", markup=False)
            refuse_leftovers(paths, "bump")
            plan = plan_bump(spec, paths, to=to, source=source, allow_shrink=allow_shrink)
            if plan.no_change:
                out_console.print(
                    f"{spec.engine_id}: nothing changed beyond the header between "
                    f"{plan.old_pin.commit} and {plan.new_pin.commit}; no files written"
                )
                raise typer.Exit(NO_CHANGE_EXIT)
            apply_bump(paths, plan)
        try:
            if title_path:
                write_file_atomically(title_path, render_pr_title(plan))
            if diff_path:
                write_file_atomically(diff_path, render_full_diff(plan))
            if body_path:
                links = BodyLinks(
                    full_diff_path=str(full_diff or ""),
                    full_diff_url=full_diff_url or "",
                    tree_url=tree_url or "",
                )
                write_file_atomically(body_path, render_pr_body(plan, links))
        except WriteError as err:
            raise WriteError(
                f"bumped generated/ and pins/{spec.engine_id}.toml to {plan.new_pin.commit}, "
                f"but the pull-request text was not written: {err.message}",
                paths=err.paths,
            ) from err
        if branch:
            sha = commit_on_new_branch(
                paths.root,
                branch,
                [f"pins/{spec.engine_id}.toml", "generated"],
                render_pr_title(plan).strip(),
            )
            out_console.print(f"committed {sha} on branch {branch}")
    except ExtractionError as err:
        fail(err)
        return
    changed = [d for d in plan.diff.facts if not d.empty]
    out_console.print(
        f"{spec.engine_id}: {plan.old_pin.commit[:12]} -> {plan.new_pin.commit[:12]}; "
        f"changed: {', '.join(d.fact for d in changed) or 'none'}"
    )
    if plan.readings_lost:
        err_console.print(
            f"{spec.engine_id}: {len(plan.readings_lost)} readings lost (suspected misreads):",
            markup=False,
        )
        for item in plan.readings_lost:
            err_console.print(f"  {item.line()}", markup=False)
        raise typer.Exit(READINGS_LOST_EXIT)


@app.command("check")
def check_command(
    ctx: typer.Context,
    engine: EngineOpt = None,
    source: SourceOpt = None,
    root: RootOpt = None,
    root_alias: RootAliasOpt = None,
    offline: Annotated[
        bool,
        typer.Option("--offline", help="Only re-render the committed modules; no source needed."),
    ] = False,
) -> None:
    """Re-extract every engine whose source is available and fail if generated/ differs.

    Exit codes: 0 all engines checked and identical; 1 something differs (the message gives the
    command that regenerates); 5 it differs and the extraction lost readings the engine's files
    still hold (suspected misreads, listed first); 4 nothing differs but some engine could not be
    checked."""
    from apron.extractors.commands.check import (
        CHECK_DIFFERS_EXIT,
        CHECK_INCOMPLETE_EXIT,
        CHECK_READINGS_LOST_EXIT,
    )
    from apron.extractors.engines import engine_by_id
    from apron.extractors.runner.pipeline import refuse_leftovers, start_writing
    from apron.extractors.runner.writer import project_lock

    try:
        engine, source, root = _before(
            ctx, "check", engine=engine, source=source, root=root, required=()
        )
        if engine is not None:
            engine_by_id(engine)  # an unknown id is an error, offline too
        if source is not None and engine is None:
            raise UsageError(
                "--source names one engine's repository: pass --engine with it "
                "(without --engine, each engine uses $APRON_SOURCE_<ENGINE> or its pin's URL)"
            )
        paths = find_project(root or root_alias, read_only=True)
        if paths.installed:  # the package's own files: nothing to recover, nothing to lock
            outcomes = _check(paths, engine, source, offline)
        else:
            with project_lock(paths.root):
                for note in start_writing(paths):
                    err_console.print(f"note: {note}", markup=False)
                refuse_leftovers(paths, "check")
                outcomes = _check(paths, engine, source, offline)
    except ExtractionError as err:
        fail(err)
        return
    if outcomes is None:
        out_console.print("offline: every committed module re-renders byte for byte")
        return
    for outcome in outcomes:
        line = f"{outcome.engine}: {outcome.status}: {outcome.detail}"
        if outcome.command:
            line += f"\n  regenerate with: {outcome.command}"
        out_console.print(line, markup=False)
    if any(o.readings_lost for o in outcomes):
        raise typer.Exit(CHECK_READINGS_LOST_EXIT)
    if any(o.status == "differs" for o in outcomes):
        raise typer.Exit(CHECK_DIFFERS_EXIT)
    if any(o.status == "not checked" for o in outcomes):
        out_console.print("not every engine was checked: this is not a pass")
        raise typer.Exit(CHECK_INCOMPLETE_EXIT)


def _check(paths, engine: str | None, source: str | None, offline: bool):
    """The outcomes of `extract check` (None: the offline check passed)."""
    from apron.extractors.commands.check import CHECK_DIFFERS_EXIT, check_engine, check_offline
    from apron.extractors.engines import ENGINES, engine_by_id

    if offline:
        differ = check_offline(paths)
        if differ:
            err_console.print(
                "generated/ does not match its own records or its pins: "
                + "; ".join(differ)
                + "\n  regenerate with: extract --engine <id>",
                markup=False,
            )
            raise typer.Exit(CHECK_DIFFERS_EXIT)
        return None
    ids = [engine_by_id(engine).engine_id] if engine else sorted(ENGINES)
    return [check_engine(paths, e, source) for e in ids]


def main() -> None:
    """Console entry point: expected failures are one message; a bug is one line too, unless
    APRON_DEBUG is set, then it is the full traceback."""
    try:
        app(standalone_mode=True)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
    except Exception as err:  # a bug, not bad input: say so without a traceback
        if os.environ.get("APRON_DEBUG"):
            raise
        err_console.print(
            f"internal error: {type(err).__name__}: {err} (set APRON_DEBUG=1 for a traceback)",
            markup=False,
        )
        sys.exit(70)


# ---------------------------------------------------------------- extract history
# The timeline of one fact over an engine's commits; logic in extractors/commands/history.py.


@app.command("history")
def history_command(
    ctx: typer.Context,
    fact: Annotated[str, typer.Option("--fact", "-f", help="Fact kind, e.g. mla_model_types.")],
    since: Annotated[
        str, typer.Option("--since", help="Oldest commit (full SHA; abbreviated if cached).")
    ],
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            "-e",
            help="vllm, llamacpp, sglang or trtllm (also accepted before `history`).",
            show_default=False,
        ),
    ] = None,
    until: Annotated[
        str | None, typer.Option("--until", help="Newest commit. Default: the pin.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    source: SourceOpt = None,
    root: RootOpt = None,
    root_alias: RootAliasOpt = None,
    jobs: Annotated[
        int,
        typer.Option(
            "--jobs", "-j", min=0, help="Worker processes for uncached commits (0: up to 2)."
        ),
    ] = 0,
    with_releases: Annotated[
        bool,
        typer.Option(
            "--releases/--no-releases",
            help="Place the source's release tags on the timeline (one ls-remote).",
        ),
    ] = True,
) -> None:
    """When each item of a fact appeared and left, over the first-parent commits from --since to
    --until that touched the fact's files. Unsupported layouts are listed, not fatal."""
    import json

    from rich.table import Table

    from apron.extractors.commands.history import (
        default_jobs,
        fit_rows,
        previous_support,
        release_view,
        row_blocks,
        run_history,
        table_rows,
        unsupported_runs,
    )
    from apron.extractors.commands.progress import progress_for
    from apron.extractors.engines import engine_by_id
    from apron.extractors.git import GitSource
    from apron.extractors.pins import load_pin
    from apron.extractors.runner.factcache import FactCache
    from apron.extractors.runner.pipeline import source_for

    progress = progress_for(sys.stderr)
    try:
        engine, source, root, root_alias = _before(
            ctx, "history", engine=engine, source=source, root=root, root_alias=root_alias
        )
        spec = engine_by_id(engine)
        pin = None
        try:
            pin = load_pin(find_project(root or root_alias, read_only=True).pins, spec.engine_id)
        except ExtractionError:
            if until is None:
                raise
        with GitSource(spec.engine_id, source_for(spec, pin, source)) as git_source:
            history = run_history(
                spec,
                fact,
                git_source,
                since,
                until or pin.commit,  # type: ignore[union-attr]
                cache=FactCache.at(),
                progress=progress,
                jobs=jobs or default_jobs(),
            )
            releases = None
            checks = []
            if with_releases:
                progress.stage("placing release tags")
                releases = release_view(history, git_source, spec.release_tags)
                checks = previous_support(spec, history, releases, git_source, FactCache.at())
        for notice in git_source.notices:
            err_console.print(f"note: {notice}", markup=False)
    except ExtractionError as err:
        progress.close()
        fail(err)
        return
    progress.close()
    if as_json:
        body = history.to_json(releases)
        if releases is not None:
            body["previously_supported_check"] = [vars(c) for c in checks]
        print(json.dumps(body, indent=2))
        return
    title = (
        f"{history.engine} {history.fact}: {history.since.sha[:10]} "
        f"({history.since.date}) .. {history.until.sha[:10]} ({history.until.date})"
    )
    columns = ["item", "first commit with it", "last commit with it", "removed in", "note"]
    if releases is not None and releases.shown:
        columns.insert(4, "releases that had it")
    # the terminal's width; a pipe or a file 80 columns, or $COLUMNS (rich's Console default):
    # dates, SHAs and PR numbers are never cut; the item wraps instead, and where no table fits,
    # each row is a block of lines
    console = EscapingConsole(highlight=False, soft_wrap=True)  # soft wrap: the lines after it
    # cells pass apron.terminal.printable too: no raw control character reaches the terminal
    rows = [tuple(printable(cell) for cell in row) for row in table_rows(history, releases)]
    fitted = fit_rows(columns, rows, console.width)
    if fitted is None:
        console.print(title, markup=False)
        for line in row_blocks(columns, rows, console.width):
            console.print(line, markup=False)
    else:
        fitted_rows, widths = fitted
        table = Table(title=title)
        for column, width in zip(columns, widths, strict=True):
            table.add_column(column, width=width, overflow="fold")
        for row in fitted_rows:
            table.add_row(*row)
        console.print(table)
    for span, count, reason in unsupported_runs(history):
        console.print(f"{span} ({count} commit{'s' if count != 1 else ''}): {reason}", markup=False)
    console.print(
        f"{len(history.evaluations)} commits, {history.parses} parsed, "
        f"{history.hits} from cache, {history.fetch_requests} fetch requests, "
        f"{history.seconds:.1f} s",
        markup=False,
    )
    if releases is None:
        return
    for note in releases.notes:
        console.print(note, markup=False)
    if releases.shown:
        console.print(
            f"releases: {len(releases.placed)} tag(s) matching {releases.pattern} placed by "
            f"containment ({releases.older} before --since, {len(releases.unplaced)} not "
            f"placed), {releases.fetch_requests} fetch request(s), {releases.seconds:.1f} s",
            markup=False,
        )
    if checks:
        disagree = [c for c in checks if not c.agrees]
        console.print(
            f"{spec.title}'s previously supported architectures at --until: "
            f"{len(checks) - len(disagree)} agree with the timeline's last release, "
            f"{len(disagree)} do not",
            markup=False,
        )
    for check in checks:
        if not check.agrees:
            console.print(f"previously supported {check.architecture}: {check.note}", markup=False)


# ---------------------------------------------------------------- extract support
# Does an engine at a commit or release support an architecture; logic in extractors/commands/support.py.


@app.command("support")
def support_command(
    ctx: typer.Context,
    arch: Annotated[
        str, typer.Option("--arch", "-a", help="HF architecture, e.g. GptOssForCausalLM.")
    ],
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            "-e",
            help="vllm, llamacpp, sglang or trtllm (also accepted before `support`).",
            show_default=False,
        ),
    ] = None,
    release: Annotated[
        str | None, typer.Option("--release", "-r", help="A release tag of the source.")
    ] = None,
    commit: CommitOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
    source: SourceOpt = None,
    root: RootOpt = None,
    root_alias: RootAliasOpt = None,
) -> None:
    """Does the engine at a release tag, a commit or (default) its pin support an architecture?

    Answers from the facts extracted at that commit. Exit codes: 0 yes; 1 no; 3 unknown (the
    registry fact cannot be read there: the reason names the paths tried); 2 any error
    (unknown tag or commit, source unavailable)."""

    from apron.extractors.commands.support import answer_from_generated, answer_support
    from apron.extractors.engines import engine_by_id
    from apron.extractors.git import GitSource
    from apron.extractors.pins import load_pin
    from apron.extractors.report.generated_files import current_facts
    from apron.extractors.runner.factcache import FactCache
    from apron.extractors.runner.pipeline import source_for

    engine = _before_command(ctx, "engine", engine)
    commit = _before_command(ctx, "commit", commit)
    source = _before_command(ctx, "source", source)
    root = _before_command(ctx, "root", root) or _before_command(ctx, "root_alias", root_alias)
    try:
        if engine is None:
            raise UsageError("give --engine: vllm, llamacpp, sglang or trtllm")
        if release is not None and commit is not None:
            raise UsageError("give --release or --commit, not both")
        spec = engine_by_id(engine)
        pin = None
        try:
            paths = find_project(root, read_only=True)
            pin = load_pin(paths.pins, spec.engine_id)
        except ExtractionError:
            if commit is None and release is None:
                raise
        at_pin = pin is not None and release is None and commit in (None, pin.commit)
        committed = None
        if at_pin and source is None:
            try:
                committed = current_facts(paths, spec)
            except ExtractionError:  # unreadable: extract from the source instead
                committed = None
        if committed is not None and pin is not None and committed.commit == pin.commit:
            answer = answer_from_generated(spec, committed, arch)
            _print_support(answer, as_json)
        with GitSource(spec.engine_id, source_for(spec, pin, source)) as git_source:
            answer = answer_support(
                spec,
                git_source,
                arch,
                commit or (pin.commit if pin else ""),
                release=release,
                fact_cache=FactCache.at(),
            )
        for notice in git_source.notices:
            err_console.print(f"note: {notice}", markup=False)
    except ExtractionError as err:
        fail(err)
        return
    _print_support(answer, as_json)


def _before_command(ctx: typer.Context, name: str, value):
    """An option given before the command (`extract --engine vllm support`) when not after it."""
    if value is None and ctx.parent is not None:
        return ctx.parent.params.get(name)
    return value


BEFORE_ONLY = {"commit": "--commit", "dry_run": "--dry-run"}  # options of `extract` itself


def _before(ctx: typer.Context, command: str, *, required=("engine",), **values):
    """The shared options (--engine, --source, --root) of a command, given after it or before it
    (`extract --engine vllm bump`); an option of `extract` itself given before a command that
    does not take it, or a required one given nowhere, is a usage error."""
    parent = ctx.parent.params if ctx.parent is not None else {}
    for name, flag in BEFORE_ONLY.items():
        if parent.get(name):
            raise UsageError(f"{flag} is an option of `extract` itself, not of `extract {command}`")
    found = tuple(_before_command(ctx, name, value) for name, value in values.items())
    for name, value in zip(values, found, strict=True):
        if value is None and name in required:
            raise UsageError(f"give --{name} (after or before `{command}`)")
    return found


def _print_support(answer, as_json: bool) -> None:
    import json

    if as_json:
        print(json.dumps(answer.to_json(), indent=2))
    else:
        for line in answer.lines():
            out_console.print(line, markup=False)
    raise typer.Exit(answer.exit_code)
