"""The `extract` command line."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from extractors.errors import ExtractionError
from extractors.pipeline import RunResult, find_project, run

app = typer.Typer(add_completion=False, no_args_is_help=False,
                  help="Extract serving-engine constraints at pinned commits into generated/.")
err_console = Console(stderr=True, highlight=False, soft_wrap=True)
out_console = Console(highlight=False, soft_wrap=True)

EngineOpt = Annotated[str | None, typer.Option("--engine", "-e",
                      help="vllm, llamacpp (llama.cpp), sglang or trtllm (tensorrt-llm).")]
CommitOpt = Annotated[str | None, typer.Option("--commit", "-c",
                      help="Commit to extract (full SHA; abbreviated if already cached). Default: the pin.")]
SourceOpt = Annotated[str | None, typer.Option("--source", "-s",
                      help="https:// or file:// URL or local path of the engine repository. "
                           "Default: $APRON_SOURCE_<ENGINE>, else the pin's URL.")]
RootOpt = Annotated[Path | None, typer.Option("--root", help="Project checkout (holds pins/ and generated/).")]


def fail(err: ExtractionError) -> None:
    err_console.print(f"[bold red]error:[/] {err}", markup=True)
    raise typer.Exit(err.exit_code)


def print_summary(result: RunResult, wrote: bool) -> None:
    facts = result.facts
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
            if delta.reordered:
                bits.append("reordered")
            line += " (" + " ".join(bits) + " against generated/)"
        out_console.print(line)
    out_console.print(f"  warnings: {len(facts.warnings)}")
    for warning in facts.warnings[:10]:
        out_console.print(f"    [{warning.code}] {warning.message}", markup=False)
    if len(facts.warnings) > 10:
        out_console.print(f"    ... {len(facts.warnings) - 10} more in generated/{facts.engine}/README.md")
    if result.previous is not None and result.diff.empty and result.previous.commit == facts.commit:
        out_console.print("  no change against generated/")
    out_console.print(f"  wrote generated/{facts.engine}/" if wrote else "  dry run: nothing written")


@app.callback(invoke_without_command=True)
def extract(ctx: typer.Context, engine: EngineOpt = None, commit: CommitOpt = None,
            source: SourceOpt = None, root: RootOpt = None,
            dry_run: Annotated[bool, typer.Option("--dry-run", help="Extract and report; write nothing.")] = False) -> None:
    """Extract one engine at a commit (default: its pin) and write generated/<engine>/."""
    if ctx.invoked_subcommand is not None:
        return
    if engine is None:
        err_console.print(ctx.get_help())
        raise typer.Exit(2)
    from extractors.engines import engine_by_id

    try:
        spec = engine_by_id(engine)
        paths = find_project(root)
        result = run(spec, paths, commit=commit, source=source, write=not dry_run)
    except ExtractionError as err:
        fail(err)
        return
    print_summary(result, wrote=not dry_run)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
