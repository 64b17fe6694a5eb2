"""Fact results cached by what the extractor looked at, so unchanged files cost nothing.

A fact extractor is a pure function of the answers it gets from the snapshot (does this path
exist, what is in this directory, which blob is at this path) and of the records of earlier
facts it reads from `done`. We record those questions and answers as a *trace* while it runs.
A later commit gives the same result if it gives the same answers to the same questions; since
the extractor is deterministic, the next question only depends on the earlier answers, so the
traces of one extractor form a tree (a trie) and a lookup replays it: ask the first question,
follow the answer, ask the next, until a stored result is reached or an answer is new.

Each trie node is stored under a chained hash (`h' = sha1(h, question, answer)`), starting from
a root that names the engine, the fact, the extractor function and the extractor code version
(a hash of the `extractors` package source and the parser library versions), in SQLite under the
cache directory, with an in-memory memo in front. Questions are cheap tree lookups: a hit never
reads or parses a file. Errors that depend only on the files (AnchorError, ParseError, a missing
path) are cached like results; transport failures are not.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from apron.extractors import errors as error_types
from apron.extractors.errors import AnchorError, ExtractionError, MissingPathError, ParseError
from apron.extractors.records import ExtractionWarning, Record
from apron.extractors.runner.base import EngineSpec, FactExtractor, FactOutput
from apron.extractors.snapshot import Snapshot

DB_NAME = "facts-v1.sqlite3"
_QUESTION, _RESULT = 0, 1
_CACHEABLE_ERRORS = (AnchorError, ParseError, MissingPathError)
_PARSER_PACKAGES = (
    "tree-sitter",
    "tree-sitter-python",
    "tree-sitter-cpp",
    "markdown-it-py",
    "mdit-py-plugins",
    "pydantic",
)

Question = tuple[str, str]  # (kind, path): exists/list/read/blob/done
Payload = dict[str, Any]  # {"records": [...], "warnings": [...]} or {"error": {...}}


@lru_cache(maxsize=1)
def code_version() -> str:
    """A hash of every module of the `extractors` package and of the parser versions: any code
    change starts a fresh trie (correct, if sometimes more than needed)."""
    digest = hashlib.sha1()
    package = Path(__file__).resolve().parent.parent  # extractors/, every subpackage included
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes() + b"\0")
    for name in _PARSER_PACKAGES:
        try:
            digest.update(f"{name}={metadata.version(name)}\0".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{name}=-\0".encode())
    return digest.hexdigest()


def root_key(engine_id: str, extractor: FactExtractor) -> str:
    run = extractor.run
    name = f"{getattr(run, '__module__', '')}.{getattr(run, '__qualname__', repr(type(run)))}"
    text = "\0".join((code_version(), engine_id, extractor.kind.name, name))
    return hashlib.sha1(text.encode()).hexdigest()


def _step(state: str, question: Question, answer: Any) -> str:
    return hashlib.sha1(f"{state}\0{json.dumps([question, answer])}".encode()).hexdigest()


def records_digest(payload_records: list[dict]) -> str:
    return hashlib.sha1(json.dumps(payload_records, sort_keys=True).encode()).hexdigest()


# ---------------------------------------------------------------- payloads


def encode_output(output: FactOutput) -> Payload:
    return {
        "records": [r.model_dump(mode="json") for r in output.records],
        "warnings": [w.model_dump(mode="json") for w in output.warnings],
    }


def encode_error(err: ExtractionError) -> Payload:
    return {
        "error": {
            "type": type(err).__name__,
            "message": err.message,
            "paths": list(err.paths),
            "anchor": err.anchor,
        }
    }


def decode_error(payload: Payload) -> ExtractionError:
    info = payload["error"]
    cls = getattr(error_types, info["type"], None)
    if not (isinstance(cls, type) and issubclass(cls, ExtractionError)):
        cls = ExtractionError
    return cls(info["message"], paths=info.get("paths") or (), anchor=info.get("anchor"))


def decode_output(extractor: FactExtractor, payload: Payload) -> FactOutput:
    record = extractor.kind.record
    return FactOutput(
        tuple(record.model_validate(r) for r in payload["records"]),
        tuple(ExtractionWarning.model_validate(w) for w in payload["warnings"]),
    )


def compress(payload: Payload) -> bytes:
    return zlib.compress(json.dumps(payload, separators=(",", ":")).encode(), 6)


def decompress(blob: bytes) -> Payload:
    return json.loads(zlib.decompress(blob))


def check_payload(payload: Any) -> None:
    """A stored payload has the shape `encode_output` or `encode_error` gives (ValueError)."""
    if not isinstance(payload, dict):
        raise ValueError(f"payload is a {type(payload).__name__}, not an object")
    if "error" in payload:
        info = payload["error"]
        if not (isinstance(info, dict) and isinstance(info.get("message"), str)):
            raise ValueError("error payload without a message")
        if not isinstance(info.get("paths", []), list) or not isinstance(info.get("type"), str):
            raise ValueError("error payload of the wrong shape")
        return
    if not (isinstance(payload.get("records"), list) and isinstance(payload.get("warnings"), list)):
        raise ValueError("payload without records and warnings lists")


# ---------------------------------------------------------------- tracing


class Recorder:
    """The questions one extractor run asked, each once, in order, with the answers."""

    def __init__(self) -> None:
        self.trace: list[tuple[Question, Any]] = []
        self._asked: dict[Question, Any] = {}
        self.cacheable = True

    def ask(self, question: Question, compute: Callable[[], Any]) -> Any:
        if question in self._asked:
            return self._asked[question]
        answer = compute()
        self._asked[question] = answer
        self.trace.append((question, answer))
        return answer


def answer_question(
    snapshot: Snapshot,
    question: Question,
    done_digest: Callable[[str], str | None],
    done_names: Callable[[str], list[str]] | None = None,
) -> Any:
    kind, arg = question
    if kind == "exists":
        return snapshot.exists(arg)
    if kind == "list":
        return list(snapshot.list_files(arg))
    if kind in ("read", "blob"):
        try:
            return snapshot.blob_sha(arg)
        except MissingPathError:
            return None
    if kind == "done":
        return done_digest(arg)
    if kind == "names":
        return done_names(arg)
    raise ValueError(f"unknown question {question}")


class TracingSnapshot(Snapshot):
    """Forwards to a snapshot and records every question the extractor asks."""

    def __init__(self, inner: Snapshot, recorder: Recorder) -> None:
        self._inner = inner
        self._rec = recorder
        self.engine = inner.engine
        self.commit = inner.commit

    def _ask(self, kind: str, arg: str) -> Any:
        return self._rec.ask(
            (kind, arg), lambda: answer_question(self._inner, (kind, arg), _no_done)
        )

    def exists(self, path: str) -> bool:
        return self._ask("exists", path)

    def list_files(self, directory: str) -> list[str]:
        return list(self._ask("list", directory))

    def blob_sha(self, path: str) -> str:
        self._ask("blob", path)
        return self._inner.blob_sha(path)  # a missing path raises the snapshot's own error

    def _read(self, path: str, read: Callable[[str], Any]) -> Any:
        sha = self._ask("read", path)
        try:
            return read(path)
        except ParseError:
            raise  # decoding depends on the bytes only
        except ExtractionError:
            if sha is not None:
                self._rec.cacheable = False  # the blob exists but could not be read: transport
            raise
        except Exception:
            self._rec.cacheable = False
            raise

    def read_bytes(self, path: str) -> bytes:
        return self._read(path, self._inner.read_bytes)

    def read_text(self, path: str) -> str:
        return self._read(path, self._inner.read_text)

    def prefetch(self, paths: Iterable[str]) -> None:
        self._inner.prefetch(paths)


def _no_done(name: str) -> str | None:
    raise AssertionError("snapshot questions never ask for done")


class TracingDone(Mapping):
    """The `done` mapping an extractor sees: each fact it reads is a question in the trace."""

    def __init__(
        self,
        done: Mapping[str, tuple[Record, ...]],
        recorder: Recorder,
        digest: Callable[[str], str | None],
    ) -> None:
        self._done = done
        self._rec = recorder
        self._digest = digest

    def __getitem__(self, name: str) -> tuple[Record, ...]:
        answer = self._rec.ask(("done", name), lambda: self._digest(name))
        if answer is None:
            raise KeyError(name)
        return self._done[name]

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        return self._rec.ask(("done", name), lambda: self._digest(name)) is not None

    def _names(self) -> list[str]:
        return self._rec.ask(("names", ""), lambda: list(self._done))

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())


def plain_done_digest(done: Mapping[str, tuple[Record, ...]]) -> Callable[[str], str | None]:
    def digest(name: str) -> str | None:
        if name not in done:
            return None
        return records_digest([r.model_dump(mode="json") for r in done[name]])

    return digest


# ---------------------------------------------------------------- the cache


@dataclass
class FactRun:
    """One fact at one commit: its payload, the trace that led there, whether it was a hit."""

    payload: Payload
    trace: list[tuple[Question, Any]]
    hit: bool
    cacheable: bool = True

    @property
    def failed(self) -> bool:
        return "error" in self.payload

    def read_paths(self) -> list[str]:
        return [q[1] for q, a in self.trace if q[0] == "read" and a is not None]


@dataclass
class FactCache:
    """The trie of traces, in SQLite (`path`) or in memory only (`path=None`)."""

    path: Path | None = None
    hits: int = 0
    misses: int = 0
    collect: bool = False  # keep new nodes in `_pending` even without a database (workers)
    rebuilt: bool = False  # the database file was damaged and started afresh
    damage: str = ""  # what was found damaged, for the one note a run shows
    _nodes: dict[str, tuple[int, Any]] = field(default_factory=dict)
    _pending: dict[str, tuple[int, bytes]] = field(default_factory=dict)
    _db: sqlite3.Connection | None = None
    damaged_path: Path | None = None

    @classmethod
    def at(cls, cache_dir: Path | None = None) -> FactCache:
        from apron.extractors.git import cache_root
        from apron.extractors.git.cache import usable_cache_dir

        return cls(usable_cache_dir(cache_dir or cache_root()) / DB_NAME)

    def _connect(self) -> sqlite3.Connection | None:
        """The database; a damaged file is deleted and started afresh (it is only a cache),
        and if that fails too the cache works in memory for this run."""
        if self._db is None and self.path is not None:
            for attempt in (1, 2):
                try:
                    self._db = self._open_db(self.path)
                    break
                except sqlite3.DatabaseError as err:
                    if attempt == 2:
                        self.path = None
                        break
                    self._discard_file(err)
        return self._db

    @property
    def note(self) -> str | None:
        """One sentence naming the damaged database file, when it had to be rebuilt."""
        if not self.rebuilt:
            return None
        return f"the fact cache {self.damaged_path} was damaged ({self.damage}); rebuilt it"

    def _discard_file(self, err: BaseException) -> None:
        """Delete the database file and its WAL (the next connection starts an empty one)."""
        if self._db is not None:
            try:
                self._db.close()
            except sqlite3.Error:
                pass
            self._db = None
        if not self.rebuilt:
            self.damage = f"{type(err).__name__}: {err}"[:200]
            self.damaged_path = self.path
        self.rebuilt = True
        if self.path is not None:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    def damaged(self, err: BaseException) -> None:
        """A stored node could not be read back: drop the whole database (one note), forget
        what was read from it, and go on as after a miss."""
        self._discard_file(err)
        self._nodes.clear()

    @staticmethod
    def _open_db(path: Path) -> sqlite3.Connection:
        db = sqlite3.connect(path, timeout=60, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS nodes (h TEXT PRIMARY KEY, kind INTEGER, data BLOB)"
            )
            db.execute("SELECT count(*) FROM nodes WHERE h = ''").fetchone()
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    def _get(self, h: str) -> tuple[int, Any] | None:
        node = self._nodes.get(h)
        if node is not None:
            return node
        db = self._connect()
        if db is None:
            return None
        try:
            row = db.execute("SELECT kind, data FROM nodes WHERE h = ?", (h,)).fetchone()
            if row is None:
                return None
            kind, data = row
            node = (kind, tuple(json.loads(data)) if kind == _QUESTION else data)
            if kind == _QUESTION and (
                len(node[1]) != 2 or not all(isinstance(x, str) for x in node[1])
            ):
                raise ValueError(f"question node {h} is {node[1]!r}")
        except (sqlite3.DatabaseError, ValueError, TypeError, UnicodeDecodeError) as err:
            self.damaged(err)
            return None
        self._nodes[h] = node
        return node

    def _put(self, h: str, kind: int, value: Any, stored: bytes) -> None:
        self._nodes[h] = (kind, value)
        if self.path is not None or self.collect:
            self._pending[h] = (kind, stored)

    def take_new(self) -> list[tuple[str, int, bytes]]:
        """The nodes stored since the last call (a worker hands them to the parent)."""
        out = [(h, k, d) for h, (k, d) in self._pending.items()]
        self._pending.clear()
        return out

    def merge(self, nodes: Iterable[tuple[str, int, bytes]]) -> None:
        """Add nodes another process stored."""
        for h, kind, data in nodes:
            value: Any = data
            if kind == _QUESTION:
                value = tuple(json.loads(data))
            self._put(h, kind, value, data)

    def flush(self) -> None:
        for attempt in (1, 2):
            db = self._connect()
            if db is None or not self._pending:
                return
            try:
                with db:
                    db.executemany(
                        "INSERT OR REPLACE INTO nodes (h, kind, data) VALUES (?, ?, ?)",
                        [(h, k, d) for h, (k, d) in self._pending.items()],
                    )
                break
            except sqlite3.DatabaseError as err:
                if attempt == 2:
                    self.path = None  # cannot store: work in memory for the rest of the run
                    return
                self._discard_file(err)
        self._pending.clear()

    def close(self) -> None:
        self.flush()
        if self._db is not None:
            self._db.close()
            self._db = None

    # ------------------------------------------------------------ trie

    def lookup(self, root: str, ask: Callable[[Question], Any]) -> FactRun | None:
        state = root
        trace: list[tuple[Question, Any]] = []
        while True:
            node = self._get(state)
            if node is None:
                return None
            kind, value = node
            if kind == _RESULT:
                try:
                    payload = value if isinstance(value, dict) else decompress(value)
                    check_payload(payload)
                except (zlib.error, ValueError, TypeError, UnicodeDecodeError) as err:
                    self.damaged(err)
                    return None
                self._nodes[state] = (_RESULT, payload)
                return FactRun(payload, trace, hit=True)
            question = (value[0], value[1])
            answer = ask(question)
            if answer is _ABSENT:
                return None
            trace.append((question, answer))
            state = _step(state, question, answer)

    def store(
        self,
        root: str,
        trace: list[tuple[Question, Any]],
        payload: Payload,
        blob: bytes | None = None,
    ) -> None:
        state = root
        for question, answer in trace:
            self._put(state, _QUESTION, tuple(question), json.dumps(list(question)).encode())
            state = _step(state, question, answer)
        self._put(state, _RESULT, payload, blob if blob is not None else compress(payload))


_ABSENT = object()  # an answer that cannot be given (a dependency not in the cache)


def execute_fact(
    cache: FactCache,
    root: str,
    extractor: FactExtractor,
    snapshot: Snapshot,
    done: Mapping[str, tuple[Record, ...]],
    digest: Callable[[str], Any],
) -> FactRun:
    """Run the extractor with its questions traced, and store the trace (a cache miss)."""
    run = trace_fact(extractor, snapshot, done, digest)
    store_run(cache, root, run)
    return run


def trace_fact(
    extractor: FactExtractor,
    snapshot: Snapshot,
    done: Mapping[str, tuple[Record, ...]],
    digest: Callable[[str], Any],
) -> FactRun:
    """Run the extractor with its questions traced; touches no cache (a forked worker may)."""
    recorder = Recorder()
    try:
        output = extractor.run(
            TracingSnapshot(snapshot, recorder), TracingDone(done, recorder, digest)
        )
        payload = encode_output(output)
    except _CACHEABLE_ERRORS as err:
        payload = encode_error(err)
    except ExtractionError as err:
        recorder.cacheable = False
        payload = encode_error(err)
    return FactRun(payload, recorder.trace, hit=False, cacheable=recorder.cacheable)


def store_run(cache: FactCache, root: str, run: FactRun) -> None:
    """Count a miss and store its trace, when it may be stored."""
    cache.misses += 1
    if run.cacheable:
        cache.store(root, run.trace, run.payload)


# ---------------------------------------------------------------- the pipeline's engine


class _CachedRun:
    """A fact function answered from the cache when the fact's inputs did not change. Its
    three steps (`lookup`, `compute`, `finish`) let the runner compute misses in a forked
    worker while the cache is written only here."""

    def __init__(self, cache: FactCache, engine_id: str, extractor: FactExtractor) -> None:
        self.cache = cache
        self.engine_id = engine_id
        self.extractor = extractor
        self.root = root_key(engine_id, extractor)
        self.__qualname__ = f"cached[{getattr(extractor.run, '__qualname__', '?')}]"

    def __call__(self, snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactOutput:
        # a miss reads files through the runner's snapshot, which prefetches the engine's
        # declared reads in one batch first; a hit reads nothing
        found = self.lookup(snapshot, done)
        return self.finish(
            snapshot, done, found if found is not None else self.compute(snapshot, done)
        )

    def lookup(self, snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactRun | None:
        """The stored run when the trace matches (a hit), else None; computes nothing."""
        digest = plain_done_digest(done)
        found = self.cache.lookup(
            self.root, lambda q: answer_question(snapshot, q, digest, lambda _: list(done))
        )
        if found is not None:
            self.cache.hits += 1
        return found

    def compute(self, snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactRun:
        """The extractor's run with its questions traced (a miss); stores nothing."""
        return trace_fact(self.extractor, snapshot, done, plain_done_digest(done))

    def finish(
        self, snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]], answer: object
    ) -> FactOutput:
        """A hit's or a miss's output (a miss is stored first); a stored error is raised."""
        assert isinstance(answer, FactRun)
        if answer.hit:
            recorded = getattr(snapshot, "read_paths", None)
            if isinstance(recorded, list):  # a RecordingSnapshot: keep the provenance header
                recorded.extend(p for p in answer.read_paths() if p not in recorded)
        else:
            store_run(self.cache, self.root, answer)
        self.cache.flush()
        if answer.failed:
            raise decode_error(answer.payload)
        try:
            return decode_output(self.extractor, answer.payload)
        except (ValidationError, TypeError, KeyError, ValueError) as err:
            if not answer.hit:
                raise
            self.cache.damaged(err)  # a stored result of the wrong record schema
        return self.finish(snapshot, done, self.compute(snapshot, done))  # the cache is empty


def cached_engine(engine: EngineSpec, cache: FactCache) -> EngineSpec:
    """The same engine, each fact answered from `cache` when its inputs did not change.

    Use it in place of the engine: `extract_engine(cached_engine(spec, FactCache.at(dir)), ...)`."""
    facts = tuple(replace(f, run=_CachedRun(cache, engine.engine_id, f)) for f in engine.facts)
    return replace(engine, facts=facts)
