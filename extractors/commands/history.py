"""`extract history`: when each item of a fact appeared and when it left, commit by commit.

The run walks the first-parent commits between `--since` and `--until` that touched the files
the fact's extractor looks at, and extracts the fact at each of them:

1. Resolve both ends and fetch the range (commits and trees, no blobs: one request).
2. Extract at both ends. The questions the extractor asked (paths it probed or read, directories
   it listed, in every layout it tried) name the files to follow.
3. List the first-parent commits that touched those files, fetch the blobs they need in one
   batch, and extract at each commit. Results are cached by what the extractor saw
   (`apron.extractors.runner.factcache`), so a commit whose files did not change costs a few tree lookups.
   A commit where the extractor reads a file not followed yet widens the set; repeat step 3.
4. Fold the per-commit results into a timeline per item (the record's KEY fields). A record
   with `present=False` (a predicate that does not exist at that commit) counts as absent.
5. Optionally (`release_view`), place the source's release tags on the timeline by containment:
   per interval the first and last release that had the item, per change the first release
   with it (`apron.extractors.commands.releases`).

A commit whose layout the extractor does not support (an AnchorError, ParseError or missing
path) is listed as "unsupported layout" and the run goes on; an item's presence is unknown
there, so the intervals around it are marked uncertain.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from apron.extractors.commands.progress import NullProgress, Progress
from apron.extractors.commands.releases import (
    NO_TAGS,
    PreviousSupportCheck,
    ReleaseSpan,
    ReleaseTag,
    previous_support_checks,
    release_span,
    release_tags,
    tags_contained,
    tags_containing,
    version_key,
)
from apron.extractors.engine_api import EngineSpec, FactExtractor
from apron.extractors.errors import AnchorError, ExtractionError, SourceUnreachableError, UsageError
from apron.extractors.git import BlobNotPresent, GitSource, ResolvedCommit
from apron.extractors.records import Record
from apron.extractors.runner.base import (
    PrefetchingSnapshot,
    declared_reads,
    extract_engine,
    with_needs,
)
from apron.extractors.runner.factcache import (
    _ABSENT,
    FactCache,
    FactRun,
    answer_question,
    cached_engine,
    decode_error,
    decode_output,
    execute_fact,
    root_key,
)
from apron.extractors.snapshot import Snapshot

PR_NUMBER = re.compile(r"\(#(\d+)\)")
PROVENANCE_FIELDS = frozenset({"path", "symbol"})
UNSUPPORTED = "unsupported layout"
NOTICES_FACT = "registry_notices"  # vLLM: previously supported and out-of-tree architectures
PREVIOUSLY_SUPPORTED = "previously-supported"


def pr_number(subject: str) -> int | None:
    """The pull request a commit subject names, as in `Add foo (#1234)` (the last one wins)."""
    found = PR_NUMBER.findall(subject)
    return int(found[-1]) if found else None


def commit_json(commit: ResolvedCommit) -> dict[str, Any]:
    return {
        "commit": commit.sha,
        "date": commit.date,
        "pr": pr_number(commit.subject),
        "subject": commit.subject,
    }


# ---------------------------------------------------------------- evaluating one commit


@dataclass
class Probes:
    """What the extractor looked at: paths probed or read, paths read, directories listed."""

    files: set[str] = field(default_factory=set)
    reads: set[str] = field(default_factory=set)
    dirs: set[str] = field(default_factory=set)

    def add_trace(self, trace) -> None:
        for (kind, arg), answer in trace:
            if kind in ("exists", "read", "blob"):
                self.files.add(arg)
                if kind == "read" and answer is not None:
                    self.reads.add(arg)
            elif kind == "list":
                self.dirs.add(arg)

    def update(self, other: Probes) -> None:
        self.files |= other.files
        self.reads |= other.reads
        self.dirs |= other.dirs

    def covers(self, other: Probes) -> bool:
        return other.files <= self.files and other.dirs <= self.dirs

    def to_json(self) -> dict[str, list[str]]:
        return {"files": sorted(self.files), "dirs": sorted(self.dirs)}


@dataclass
class Evaluation:
    commit: ResolvedCommit
    records: list[dict] | None  # None when unsupported
    error: str | None
    hit: bool
    probes: Probes


class _Miss(Exception):
    """A lookup-only evaluation found a fact that is not in the cache."""


def _digest(run: FactRun) -> str:
    body = run.payload.get("records", run.payload.get("error"))
    tag = "records" if "records" in run.payload else "error"
    return tag + ":" + hashlib.sha1(json.dumps(body, sort_keys=True).encode()).hexdigest()


class _LazyDone(Mapping):
    """`done` for one fact at one commit: earlier facts are extracted only when read."""

    def __init__(self, names: list[str], records: Any) -> None:
        self._names = names
        self._records = records

    def __getitem__(self, name: str) -> tuple[Record, ...]:
        if name not in self._names:
            raise KeyError(name)
        return self._records(name)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


class Evaluator:
    """Extracts one fact (and the earlier facts it reads) at commits, through a FactCache."""

    def __init__(self, engine: EngineSpec, fact: str, cache: FactCache) -> None:
        self.engine = engine
        self.cache = cache
        self.names = [f.kind.name for f in engine.facts]
        if fact not in self.names:
            raise UsageError(
                f"engine {engine.engine_id} has no fact {fact!r}; its facts: "
                + ", ".join(self.names)
            )
        self.fact = fact
        self.extractors: dict[str, FactExtractor] = {f.kind.name: f for f in engine.facts}
        running = with_needs(engine.facts, [fact])
        self.reads = declared_reads(f for f in engine.facts if f.kind.name in running)
        self.roots = {name: root_key(engine.engine_id, f) for name, f in self.extractors.items()}

    def runs(self, snapshot: Snapshot, *, lookup_only: bool = False) -> dict[str, FactRun]:
        """The target fact's run at this snapshot, and the runs of the facts it read."""
        runs: dict[str, FactRun] = {}
        snapshot = PrefetchingSnapshot(snapshot, self.reads)  # a miss fetches in one batch

        def compute(name: str) -> FactRun:
            if name in runs:
                return runs[name]
            extractor = self.extractors[name]
            before = list(extractor.needs)

            def digest(dep: str) -> Any:
                if dep not in before:
                    return None
                try:
                    return _digest(compute(dep))
                except _Miss:
                    if lookup_only:
                        return _ABSENT
                    raise

            found = self.cache.lookup(
                self.roots[name], lambda q: answer_question(snapshot, q, digest, lambda _: before)
            )
            if found is not None:
                self.cache.hits += 1
                runs[name] = found
                return found
            if lookup_only:
                raise _Miss(name)
            run = execute_fact(
                self.cache,
                self.roots[name],
                extractor,
                snapshot,
                _LazyDone(before, records),
                digest,
            )
            runs[name] = run
            return run

        def records(name: str) -> tuple[Record, ...]:
            run = compute(name)
            if run.failed:
                raise decode_error(run.payload)
            if not run.payload["records"] and not self.extractors[name].allow_empty:
                raise AnchorError(f"fact '{name}' extracted nothing", anchor=name)
            return decode_output(self.extractors[name], run.payload).records

        compute(self.fact)
        return runs

    def evaluate(
        self, commit: ResolvedCommit, snapshot: Snapshot, *, lookup_only: bool = False
    ) -> Evaluation | None:
        try:
            runs = self.runs(snapshot, lookup_only=lookup_only)
        except _Miss:
            return None
        except (BlobNotPresent, KeyboardInterrupt):
            raise
        except ExtractionError as err:  # a dependency failed outside any extractor's run
            return Evaluation(commit, None, f"{type(err).__name__}: {err.message}", False, Probes())
        except Exception as err:  # an extractor bug on this commit: report it, go on
            return Evaluation(
                commit, None, f"extractor failed: {type(err).__name__}: {err}", False, Probes()
            )
        probes = Probes()
        for run in runs.values():
            probes.add_trace(run.trace)
        target = runs[self.fact]
        payload = target.payload
        if "error" in payload:
            error = payload["error"]
            return Evaluation(commit, None, _error_text(error), target.hit, probes)
        if not payload["records"] and not self.extractors[self.fact].allow_empty:
            return Evaluation(
                commit,
                None,
                "extracted nothing (an empty result is not allowed)",
                target.hit,
                probes,
            )
        return Evaluation(commit, payload["records"], None, target.hit, probes)


def _error_text(error: dict) -> str:
    text = f"{error['type']}: {error['message']}"
    if error.get("anchor"):
        text += f" (anchor: {error['anchor']})"
    return text


# ---------------------------------------------------------------- worker processes

_WORKER: dict[str, Any] = {}


def _worker_chunk(commits: list[ResolvedCommit]) -> tuple[list, list, tuple[int, int]]:
    """Evaluate consecutive commits in a worker; unchanged files within the chunk are hits.

    A commit whose blob is not in the cache comes back as (commit, blob SHA): workers never
    fetch, the parent fetches all such blobs in one request."""
    state = _WORKER
    if "source" not in state:
        state["source"] = GitSource(
            state["engine_id"], state["source_arg"], cache_dir=state["cache_dir"]
        )
        state["cache"] = FactCache(None, collect=True)
        state["evaluator"] = Evaluator(state["engine"], state["fact"], state["cache"])
    source, cache, evaluator = state["source"], state["cache"], state["evaluator"]
    out: list[Evaluation | tuple[ResolvedCommit, str]] = []
    misses, hits = cache.misses, cache.hits
    for commit in commits:
        out.append(_evaluate_or_blob(evaluator, source, commit))
    return out, cache.take_new(), (cache.misses - misses, cache.hits - hits)


def _evaluate_or_blob(
    evaluator: Evaluator, source: GitSource, commit: ResolvedCommit
) -> Evaluation | tuple[ResolvedCommit, str]:
    try:
        evaluation = evaluator.evaluate(commit, source.snapshot_at(commit, allow_fetch=False))
    except BlobNotPresent as missing:
        return (commit, str(missing.args[0]))
    assert evaluation is not None
    return evaluation


def default_jobs() -> int:
    return max(1, min(2, os.cpu_count() or 1))


# ---------------------------------------------------------------- the run


@dataclass
class History:
    engine: str
    fact: str
    since: ResolvedCommit
    until: ResolvedCommit
    evaluations: list[Evaluation]  # since first, then every commit that touched the files
    probes: Probes
    parents: dict[str, ResolvedCommit]
    seconds: float
    fetch_requests: int
    parses: int
    hits: int
    key_fields: tuple[str, ...]
    _timeline: Timeline | None = field(default=None, repr=False)

    def timeline(self) -> Timeline:
        if self._timeline is None:
            self._timeline = build_timeline(self.evaluations, self.key_fields, self.parents)
        return self._timeline

    def to_json(self, releases: ReleaseView | None = None) -> dict[str, Any]:
        line = self.timeline()
        items = [item.to_json() for item in line.items]
        if releases is not None:
            for n, (item, body) in enumerate(zip(line.items, items, strict=True)):
                for m, (interval, out) in enumerate(
                    zip(item.intervals, body["intervals"], strict=True)
                ):
                    out["releases"] = releases.span_json(n, m, interval.at_start)
                for (commit, _), out in zip(item.changes, body["changes"], strict=True):
                    tag = releases.change_releases.get(commit.sha)
                    out["first_release"] = tag.name if tag else None
        body = {
            "engine": self.engine,
            "fact": self.fact,
            "since": commit_json(self.since),
            "until": commit_json(self.until),
            "followed": self.probes.to_json(),
            "stats": {
                "commits": len(self.evaluations),
                "parses": self.parses,
                "cache_hits": self.hits,
                "fetch_requests": self.fetch_requests,
                "seconds": round(self.seconds, 3),
            },
            "items": items,
            "unsupported": [
                {**commit_json(ev.commit), "reason": ev.error} for ev in line.unsupported
            ],
        }
        if releases is not None:
            body["releases"] = releases.summary_json()
        return body


def run_history(
    engine: EngineSpec,
    fact: str,
    source: GitSource,
    since: str,
    until: str,
    *,
    cache: FactCache | None = None,
    progress: Progress | None = None,
    jobs: int = 1,
) -> History:
    """Extract `fact` at `since` and at every first-parent commit after it, up to `until`, that
    touched the files the extractor looks at."""
    started = time.perf_counter()
    progress = progress or NullProgress()
    cache = cache or FactCache(None)
    evaluator = Evaluator(engine, fact, cache)
    requests_before, misses_before, hits_before = source.fetch_requests, cache.misses, cache.hits
    pool = _LazyPool(
        jobs,
        dict(
            engine=engine,
            engine_id=engine.engine_id,
            fact=fact,
            source_arg=source.source,
            cache_dir=source.cache_dir,
        ),
    )
    old_progress = source.progress
    source.progress = progress
    try:
        start = source.resolve(since)
        end = source.resolve(until)
        source.fetch_range(start, end)
        results: dict[str, Evaluation] = {}
        probes = Probes()
        for commit in (end, start):  # a miss fetches the declared reads in one batch
            progress.stage(f"extracting {fact} at {commit.sha[:12]} ({commit.date})")
            evaluation = evaluator.evaluate(commit, source.snapshot_at(commit))
            assert evaluation is not None
            results[commit.sha] = evaluation
            probes.update(evaluation.probes)
        commits: list[ResolvedCommit] = []
        while True:
            progress.stage(
                f"following {len(probes.files)} file(s), {len(probes.dirs)} directory(ies)"
            )
            changes = source.first_parent_changes(start, end, probes.files, probes.dirs)
            commits = [c for c, _ in changes]
            todo = [c for c in commits if c.sha not in results]
            if not todo:
                break
            # the blobs these commits gave the files read so far: one request
            source.fetch_blobs(
                blob
                for c, changed in changes
                if c.sha not in results
                for path, blob in changed
                if path in probes.reads or path.rpartition("/")[0] in probes.dirs
            )
            found = _evaluate_all(evaluator, source, todo, progress, pool, jobs)
            results.update(found)
            seen = Probes()
            for evaluation in found.values():
                seen.update(evaluation.probes)
            if probes.covers(seen):
                break
            probes.update(seen)
        cache.flush()
    finally:
        source.progress = old_progress
        pool.close()
    order = [start] + [c for c in commits if c.sha != start.sha]
    evaluations = [results[c.sha] for c in order if c.sha in results]
    parents = source.commits(sorted({ev.commit.parent for ev in evaluations if ev.commit.parent}))
    record_type = evaluator.extractors[fact].kind.record
    key_fields = tuple(record_type.KEY) or tuple(
        f for f in record_type.model_fields if f not in PROVENANCE_FIELDS
    )
    return History(
        engine=engine.engine_id,
        fact=fact,
        since=start,
        until=end,
        evaluations=evaluations,
        probes=probes,
        parents=parents,
        seconds=time.perf_counter() - started,
        fetch_requests=source.fetch_requests - requests_before,
        parses=cache.misses - misses_before,
        hits=cache.hits - hits_before,
        key_fields=key_fields,
    )


class _LazyPool:
    """Worker processes (fork), started only when there are enough cache misses to share."""

    def __init__(self, jobs: int, state: dict[str, Any]) -> None:
        self.jobs = jobs
        self._state = state
        self._pool = None

    def get(self):
        if self._pool is None:
            _WORKER.clear()
            _WORKER.update(self._state)
            self._pool = multiprocessing.get_context("fork").Pool(self.jobs)
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None


def _evaluate_all(
    evaluator: Evaluator,
    source: GitSource,
    commits: list[ResolvedCommit],
    progress: Progress,
    pool: _LazyPool,
    jobs: int,
) -> dict[str, Evaluation]:
    """Evaluate commits; the blobs they lack are fetched in one request per round."""
    out: dict[str, Evaluation] = {}
    progress.start(f"{evaluator.engine.engine_id} {evaluator.fact}", len(commits))
    try:
        pending = list(commits)
        while pending:
            waiting: list[tuple[ResolvedCommit, str]] = []
            for result in _evaluate_pass(evaluator, source, pending, pool, jobs):
                if isinstance(result, Evaluation):
                    out[result.commit.sha] = result
                    progress.advance()
                else:
                    waiting.append(result)
            if not waiting:
                break
            source.fetch_blobs(sha for _, sha in waiting)
            pending = []
            for commit, sha in waiting:
                if source.presence.has(sha):
                    pending.append(commit)
                else:  # the source does not have it: let the read report the path
                    found = evaluator.evaluate(commit, source.snapshot_at(commit))
                    assert found is not None
                    out[commit.sha] = found
                    progress.advance()
        return out
    finally:
        progress.finish()


def _evaluate_pass(
    evaluator: Evaluator,
    source: GitSource,
    commits: list[ResolvedCommit],
    pool: _LazyPool,
    jobs: int,
) -> Iterator[Evaluation | tuple[ResolvedCommit, str]]:
    if jobs < 2 or len(commits) < 4 * jobs:
        for commit in commits:
            yield _evaluate_or_blob(evaluator, source, commit)
        return
    misses = []
    for commit in commits:  # cache hits first, in this process (no file is read)
        found = evaluator.evaluate(
            commit, source.snapshot_at(commit, allow_fetch=False), lookup_only=True
        )
        if found is None:
            misses.append(commit)
        else:
            yield found
    if len(misses) < 4 * jobs:
        for commit in misses:
            yield _evaluate_or_blob(evaluator, source, commit)
        return
    size = max(1, -(-len(misses) // (jobs * 4)))
    chunks = [misses[i : i + size] for i in range(0, len(misses), size)]
    for results, nodes, (parses, hits) in pool.get().imap(_worker_chunk, chunks):
        evaluator.cache.merge(nodes)
        evaluator.cache.misses += parses
        evaluator.cache.hits += hits
        yield from results


# ---------------------------------------------------------------- the timeline


@dataclass
class Interval:
    first: ResolvedCommit
    at_start: bool  # present in the first supported commit of the run (uncertain: was it there
    # at --since? the commits before it were unsupported)
    last: ResolvedCommit | None = None  # the last commit that had it (removal's first parent)
    removed: ResolvedCommit | None = None  # the commit that removed it
    uncertain: bool = False  # unsupported commits come right before `first`
    removal_uncertain: bool = False  # unsupported commits come right before `removed`

    def to_json(self) -> dict[str, Any]:
        return {
            "first": commit_json(self.first),
            "present_at_start": self.at_start,
            "last": commit_json(self.last) if self.last else None,
            "removed_in": commit_json(self.removed) if self.removed else None,
            "uncertain": self.uncertain,
            "removal_uncertain": self.removal_uncertain,
        }


@dataclass
class ItemTimeline:
    key: dict[str, Any]
    intervals: list[Interval] = field(default_factory=list)
    changes: list[tuple[ResolvedCommit, dict[str, list]]] = field(default_factory=list)

    @property
    def label(self) -> str:
        return " ".join(str(v) for v in self.key.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "intervals": [i.to_json() for i in self.intervals],
            "changes": [{**commit_json(c), "fields": f} for c, f in self.changes],
        }


@dataclass
class Timeline:
    items: list[ItemTimeline]
    unsupported: list[Evaluation]


def _freeze(value: Any) -> Any:
    return tuple(_freeze(v) for v in value) if isinstance(value, list) else value


def _identity(record: dict, key_fields: tuple[str, ...]) -> tuple:
    return tuple(_freeze(record.get(k)) for k in key_fields)


def _fact_changes(old: dict, new: dict) -> dict[str, list]:
    """Fields that changed, leaving out where the fact was read from (path, symbol)."""
    return {
        f: [old.get(f), new.get(f)]
        for f in sorted(set(old) | set(new))
        if f not in PROVENANCE_FIELDS and old.get(f) != new.get(f)
    }


def build_timeline(
    evaluations: list[Evaluation],
    key_fields: tuple[str, ...],
    parents: Mapping[str, ResolvedCommit] | None = None,
) -> Timeline:
    parents = parents or {}
    items: dict[tuple, ItemTimeline] = {}
    state: dict[tuple, dict] | None = None
    unsupported: list[Evaluation] = []
    gap = False
    previous_records = None
    for evaluation in evaluations:
        commit = evaluation.commit
        if evaluation.records is None:
            unsupported.append(evaluation)
            gap = True  # before the first supported commit too: "at start" is then a guess
            continue
        if evaluation.records is previous_records and not gap:
            continue  # the same cached result: nothing changed
        previous_records = evaluation.records
        current = {
            _identity(r, key_fields): r
            for r in evaluation.records
            if r.get("present") is not False  # a row that says "absent here" is not the item
        }
        if state is None:
            for key, record in current.items():
                item = items.setdefault(key, ItemTimeline({k: record.get(k) for k in key_fields}))
                item.intervals.append(Interval(first=commit, at_start=True, uncertain=gap))
        else:
            for key in current.keys() - state.keys():
                record = current[key]
                item = items.setdefault(key, ItemTimeline({k: record.get(k) for k in key_fields}))
                item.intervals.append(Interval(first=commit, at_start=False, uncertain=gap))
            for key in state.keys() - current.keys():
                interval = items[key].intervals[-1]
                interval.removed = commit
                interval.last = parents.get(commit.parent) or ResolvedCommit(commit.parent, "", "")
                interval.removal_uncertain = gap
            for key in current.keys() & state.keys():
                if current[key] != state[key]:
                    changed = _fact_changes(state[key], current[key])
                    if changed:
                        items[key].changes.append((commit, changed))
        state = current
        gap = False
    ordered = sorted(
        items.values(), key=lambda i: (i.intervals[0].first.date if i.intervals else "", i.label)
    )
    return Timeline(ordered, unsupported)


# ---------------------------------------------------------------- presenting


def _short(commit: ResolvedCommit | None) -> str:
    if commit is None:
        return ""
    pr = pr_number(commit.subject)
    text = f"{commit.date} {commit.sha[:10]}".strip()
    return f"{text} #{pr}" if pr is not None else text


def table_rows(history: History, releases: ReleaseView | None = None) -> list[tuple[str, ...]]:
    """(item, first commit that has it, last commit that had it, removed in, note) per interval;
    with placed releases, the releases that had it come before the note."""
    rows = []
    for n, item in enumerate(history.timeline().items):
        for m, interval in enumerate(item.intervals):
            notes = []
            if interval.at_start and not interval.uncertain:
                notes.append("present at --since")
            elif interval.at_start:
                notes.append("first supported commit (earlier ones: unsupported layout)")
            elif interval.uncertain:
                notes.append("after an unsupported layout: may have come earlier")
            if interval.removal_uncertain:
                notes.append("removal after an unsupported layout: may have left earlier")
            if item.changes:
                notes.append(f"{len(item.changes)} change(s)")
            row = [
                item.label,
                _short(interval.first),
                _short(interval.last),
                _short(interval.removed),
                ", ".join(notes),
            ]
            if releases is not None and releases.shown:
                row.insert(4, release_text(releases, n, interval, m))
            rows.append(tuple(row))
    return rows


TABLE_BORDER = 3  # characters a column of a rich table takes besides its text (padding, rule)
NARROWEST_ITEM = 12  # below this the item column would fold every word: one block per row


def fit_rows(
    columns: list[str], rows: list[tuple[str, ...]], width: int
) -> tuple[list[tuple[str, ...]], list[int]] | None:
    """(rows, the width of each column's text) for a table `width` characters wide whose other
    cells keep every word whole (a date, a SHA, a PR number is never cut): the item, in the first
    column, is wrapped into the room they leave. None when that room is narrower than
    NARROWEST_ITEM: print a block per row instead."""
    others = [
        max(
            len(word)
            for cell in [columns[i], *(r[i] for r in rows)]
            for word in cell.split() or [""]
        )
        for i in range(1, len(columns))
    ]
    room = width - TABLE_BORDER * len(columns) - 1 - sum(others)
    if room < NARROWEST_ITEM:
        return None
    wrapped = [("\n".join(_wrapped(row[0], room)), *row[1:]) for row in rows]
    item = max((len(line) for row in wrapped for line in row[0].split("\n")), default=4)
    widths = [max(item, len(columns[0])), *others]
    # the room left goes to the columns whose cells are longer than their longest word, in order
    spare = width - TABLE_BORDER * len(columns) - 1 - sum(widths)
    for i in range(1, len(columns)):
        longest = max(len(cell) for cell in [columns[i], *(r[i] for r in rows)])
        extra = min(spare, max(0, longest - widths[i]))
        widths[i] += extra
        spare -= extra
    return wrapped, widths


def _wrapped(text: str, width: int) -> list[str]:
    """`text` in lines of at most `width` characters, broken at blanks, a long name in pieces."""
    import textwrap

    return textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=False) or [""]


def row_blocks(columns: list[str], rows: list[tuple[str, ...]], width: int) -> list[str]:
    """The table as one block per row, for a width no table fits: the item on its line, then
    each non-empty cell as `column: value`, wrapped at blanks (words never cut)."""
    import textwrap

    lines: list[str] = []
    for row in rows:
        lines.append(row[0])
        for column, cell in zip(columns[1:], row[1:], strict=True):
            if cell:
                lines += textwrap.wrap(
                    f"{column}: {cell}",
                    max(width, 20),
                    initial_indent="  ",
                    subsequent_indent="    ",
                    break_long_words=False,
                    break_on_hyphens=False,
                )
    return lines


def unsupported_runs(history: History) -> list[tuple[str, int, str]]:
    """Consecutive unsupported commits with the same reason: (range, count, reason)."""
    runs: list[list] = []
    previous_unsupported = False
    for evaluation in history.evaluations:
        if evaluation.records is None:
            if previous_unsupported and runs[-1][2] == evaluation.error:
                runs[-1][1] = evaluation.commit
                runs[-1][3] += 1
            else:
                runs.append([evaluation.commit, evaluation.commit, evaluation.error, 1])
            previous_unsupported = True
        else:
            previous_unsupported = False
    out = []
    for first, last, reason, count in runs:
        span = _short(first) if first is last else f"{_short(first)} .. {_short(last)}"
        out.append((span, count, f"{UNSUPPORTED}: {reason}"))
    return out


# ---------------------------------------------------------------- releases


@dataclass
class ReleaseView:
    """The source's release tags placed on a history by containment (see `release_view`)."""

    pattern: str | None
    tags: list[ReleaseTag]  # every tag matching the pattern, in version order
    placed: list[ReleaseTag]  # those whose history the cache holds from --since on
    unplaced: list[ReleaseTag]  # newer than --since's releases, history not available
    older: int  # tags --since already contains (releases before the range)
    in_until: frozenset[str]  # names of the placed tags --until contains
    spans: dict[tuple[int, int], ReleaseSpan] = field(default_factory=dict)  # (item, interval)
    change_releases: dict[str, ReleaseTag | None] = field(default_factory=dict)  # commit -> tag
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    fetch_requests: int = 0

    @property
    def shown(self) -> bool:
        return bool(self.placed)

    def span_json(self, item: int, interval: int, at_start: bool) -> dict[str, Any] | None:
        span = self.spans.get((item, interval))
        if span is None:
            return None
        return {
            "first": span.first.name if span.first else None,
            "last": span.last.name if span.last else None,
            "count": span.count,
            "first_may_be_earlier": at_start,
            "last_outside_until": bool(span.last and span.last.name not in self.in_until),
        }

    def summary_json(self) -> dict[str, Any]:
        return {
            "pattern": self.pattern,
            "tags_matching": len(self.tags),
            "tags_placed": [t.name for t in self.placed],
            "tags_unplaced": [t.name for t in self.unplaced],
            "tags_before_since": self.older,
            "notes": self.notes,
            "seconds": round(self.seconds, 3),
            "fetch_requests": self.fetch_requests,
        }


def release_view(history: History, source: GitSource, pattern: str | None) -> ReleaseView:
    """Place the release tags of the source (whole name matching `pattern`) on `history`.

    A release had an item's interval when its commit contains the commit where the item appeared
    and not the commit that removed it: containment, not first-parent position, so a tag on a
    merge or on a side branch is placed where its history says. One `ls-remote --tags`, at most
    one fetch (the history of tags newer than --since's releases that the cache lacks, back to
    shortly before --since) and one `rev-list` walk per pass."""
    started = time.perf_counter()
    requests_before = source.fetch_requests
    if pattern is None:
        view = ReleaseView(None, [], [], [], 0, frozenset())
        view.notes.append("the engine declares no release tag pattern: releases not shown")
        return view
    try:
        listed = source.tags()
    except SourceUnreachableError as err:
        view = ReleaseView(pattern, [], [], [], 0, frozenset())
        view.notes.append(f"{err.message}: releases not shown")
        return view
    tags = release_tags(listed, pattern)
    if not tags:
        view = ReleaseView(pattern, [], [], [], 0, frozenset())
        view.notes.append(NO_TAGS)
        return view
    line = history.timeline()
    graph, held, shallow = _tag_graph(source, history, tags)
    in_graph = {sha for sha, _ in graph}
    older = [t for t in tags if t.commit in held - shallow and t.commit not in in_graph]
    floor = max((version_key(t.name) for t in older), default=None)
    wanted = [
        t
        for t in tags
        if (t.commit not in held or t.commit in shallow)
        and (floor is None or version_key(t.name) > floor)
    ]
    notes = []
    if wanted:
        refused = source.fetch_histories(sorted({t.commit for t in wanted}), history.since)
        if refused:
            notes.append(
                f"the history of {len(wanted)} release tag(s) could not be fetched ({refused})"
            )
        graph, held, shallow = _tag_graph(source, history, tags)
        in_graph = {sha for sha, _ in graph}
        older = [t for t in tags if t.commit in held - shallow and t.commit not in in_graph]
    placed = [t for t in tags if t.commit in in_graph and t.commit not in shallow]
    older_names = {t.name for t in older}
    unplaced = [t for t in tags if t not in placed and t.name not in older_names]
    if floor is not None:
        unplaced = [t for t in unplaced if version_key(t.name) > floor]
    if not placed:
        notes.append(
            f"no release tag matching {pattern} contains a commit of the range: releases not shown"
        )
    boundaries = []
    for item in line.items:
        for interval in item.intervals:
            boundaries.append(interval.first.sha)
            if interval.removed is not None:
                boundaries.append(interval.removed.sha)
        boundaries += [commit.sha for commit, _ in item.changes]
    containing = tags_containing(graph, placed, boundaries)
    in_until = frozenset(t.name for t in tags_contained(graph, placed, history.until.sha))
    view = ReleaseView(pattern, tags, placed, unplaced, len(older), in_until, notes=notes)
    for n, item in enumerate(line.items):
        for m, interval in enumerate(item.intervals):
            removal = containing[interval.removed.sha] if interval.removed is not None else ()
            view.spans[(n, m)] = release_span(containing[interval.first.sha], removal)
        for commit, _ in item.changes:
            found = containing[commit.sha]
            view.change_releases[commit.sha] = found[0] if found else None
    view.seconds = time.perf_counter() - started
    view.fetch_requests = source.fetch_requests - requests_before
    return view


def _tag_graph(
    source: GitSource, history: History, tags: list[ReleaseTag]
) -> tuple[list[tuple[str, tuple[str, ...]]], set[str], frozenset[str]]:
    """The commit graph from --since to --until and to every tag commit the cache holds."""
    held = source.commit_objects(t.commit for t in tags)
    shallow = source.shallow_commits()
    tips = [history.until.sha] + sorted(held - shallow)
    return source.ancestry(tips, history.since), held, shallow


def last_releases(history: History, view: ReleaseView) -> dict[str, ReleaseTag | None]:
    """Per item label, the last release that had it (over all its intervals); None when none."""
    found: dict[str, ReleaseTag | None] = {}
    for n, item in enumerate(history.timeline().items):
        lasts = [
            view.spans[(n, m)].last
            for m in range(len(item.intervals))
            if (n, m) in view.spans and view.spans[(n, m)].last is not None
        ]
        found[item.label] = (
            max(lasts, key=lambda t: (version_key(t.name), t.name)) if lasts else None
        )
    return found


def release_text(view: ReleaseView, item: int, interval: Interval, index: int) -> str:
    """`b8904 .. b9402` for the table; `none` when no release had the interval."""
    span = view.spans.get((item, index))
    if span is None:
        return ""
    if span.first is None or span.last is None:
        return "none"
    first = span.first.name + (" or earlier" if interval.at_start else "")
    text = first if span.first == span.last else f"{first} .. {span.last.name}"
    if span.last.name not in view.in_until:
        text += " (outside --until's history)"
    return text


def previous_support(
    engine: EngineSpec,
    history: History,
    view: ReleaseView,
    source: GitSource,
    cache: FactCache,
) -> list[PreviousSupportCheck]:
    """For a registry history of an engine that lists previously supported architectures
    (vLLM's `_PREVIOUSLY_SUPPORTED_MODELS`, fact registry_notices), each claim at --until set
    against the timeline's last release with the architecture. Empty when not applicable."""
    names = {f.kind.name for f in engine.facts}
    registry = next(
        (k.name for k in engine.fact_kinds if k.support and k.support.role == "registry"), None
    )
    if not view.shown or history.fact != registry or NOTICES_FACT not in names:
        return []
    try:
        facts = extract_engine(
            cached_engine(engine, cache),
            source.snapshot_at(history.until),
            commit_date=history.until.date,
            only={NOTICES_FACT},
        )
    except ExtractionError as err:
        view.notes.append(f"previously supported architectures not checked: {err.message}")
        return []
    claims = {
        r.architecture: r.detail
        for r in facts.records(NOTICES_FACT)
        if getattr(r, "kind", "") == PREVIOUSLY_SUPPORTED
    }
    return previous_support_checks(claims, last_releases(history, view))
