"""`extract history` over miniature repositories: items that come, go and come back, a layout
change in the middle, a commit that does not parse, facts that read earlier facts, the parse
cache (parses counted through the extractor interface) and the number of fetch requests."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import ClassVar

import pytest
from typer.testing import CliRunner

from apron.extractors.commands.cli import app
from apron.extractors.commands.history import pr_number, run_history, table_rows, unsupported_runs
from apron.extractors.engine_api import EngineSpec, FactExtractor, FactOutput
from apron.extractors.engines import ENGINES
from apron.extractors.errors import UsageError
from apron.extractors.git import GitSource
from apron.extractors.records import FactKind, Record
from apron.extractors.runner.factcache import FactCache
from apron.extractors.snapshot import Snapshot

OLD = "vllm/model_executor/models/registry.py"
NEW = "vllm/models/registry.py"


def registry(rows: Mapping[str, str], broken: bool = False) -> str:
    """A hand-written registry in the shape of vLLM's: one dict of rows, merged."""
    body = "".join(f'    "{arch}": ("{module}", "{arch}"),\n' for arch, module in rows.items())
    text = f"_TEXT_GENERATION_MODELS = {{\n{body}}}\n\n_VLLM_MODELS = {{\n    **_TEXT_GENERATION_MODELS,\n}}\n"
    return text.replace("_VLLM_MODELS = {", "_VLLM_MODELS = {(") if broken else text


def counting(engine: EngineSpec, fact: str, calls: list[str]) -> EngineSpec:
    """The engine with one fact, its extractor wrapped to count runs (= parses)."""
    original = next(f for f in engine.facts if f.kind.name == fact)

    def run(snapshot: Snapshot, done: Mapping[str, tuple[Record, ...]]) -> FactOutput:
        calls.append(snapshot.commit)
        return original.run(snapshot, done)

    return replace(engine, facts=(replace(original, run=run),))


@pytest.fixture
def registry_repo(make_repo):
    a, b, c = "LlamaForCausalLM", "MistralForCausalLM", "GemmaForCausalLM"
    return make_repo(
        [
            (
                {OLD: registry({a: "llama", b: "mistral"}), "README.md": "x\n"},
                "init",
                "2025-01-01T00:00:00+00:00",
            ),  # 0 since
            (
                {"README.md": "y\n"},
                "docs only (#100)",
                "2025-01-02T00:00:00+00:00",
            ),  # 1 not followed
            (
                {OLD: registry({a: "llama", b: "mistral", c: "gemma"})},
                "add gemma (#101)",
                "2025-01-03T00:00:00+00:00",
            ),  # 2
            (
                {OLD: registry({a: "llama", c: "gemma"})},
                "drop mistral (#102)",
                "2025-01-04T00:00:00+00:00",
            ),  # 3
            (
                {OLD: None, NEW: registry({a: "llama", c: "gemma"})},
                "move the registry (#103)",
                "2025-01-05T00:00:00+00:00",
            ),  # 4 layout
            (
                {NEW: registry({a: "llama", c: "gemma", b: "mistral"}, broken=True)},
                "half a change (#104)",
                "2025-01-06T00:00:00+00:00",
            ),  # 5 syntax
            (
                {NEW: registry({a: "llama", c: "gemma", b: "mistral"})},
                "mistral is back (#105)",
                "2025-01-07T00:00:00+00:00",
            ),  # 6
            (
                {NEW: registry({a: "llama2", c: "gemma", b: "mistral"})},
                "llama module (#106)",
                "2025-01-08T00:00:00+00:00",
            ),  # 7 change
            (
                {NEW: registry({a: "llama2", b: "mistral"})},
                "drop gemma (#107)",
                "2025-01-09T00:00:00+00:00",
            ),  # 8
            (
                {NEW: registry({a: "llama2", c: "gemma", b: "mistral"})},
                "Revert drop gemma (#108)",
                "2025-01-10T00:00:00+00:00",
            ),  # 9 = 7
        ]
    )


def test_pr_number_from_subject():
    assert pr_number("[Model] Add Foo (#1234)") == 1234
    assert pr_number('Revert "Add Foo (#12)" (#34)') == 34
    assert pr_number("no number here") is None


def test_registry_timeline(registry_repo, tmp_path):
    repo, shas = registry_repo
    calls: list[str] = []
    engine = counting(ENGINES["vllm"], "registry_rows", calls)
    source = GitSource("vllm", str(repo), cache_dir=tmp_path / "c")
    history = run_history(engine, "registry_rows", source, shas[0], shas[-1])
    evaluated = [e.commit.sha for e in history.evaluations]
    assert evaluated == [shas[0], *shas[2:]]  # the README-only commit is not looked at
    line = history.timeline()
    items = {i.key["architecture"]: i for i in line.items}
    llama, mistral, gemma = (
        items[k] for k in ("LlamaForCausalLM", "MistralForCausalLM", "GemmaForCausalLM")
    )
    assert [(i.first.sha, i.at_start, i.removed) for i in llama.intervals] == [
        (shas[0], True, None)
    ]
    assert [(c.sha, f) for c, f in llama.changes] == [(shas[7], {"module": ["llama", "llama2"]})]
    # mistral leaves in #102 and comes back in #105, right after the commit that does not parse
    first, second = mistral.intervals
    assert (first.first.sha, first.removed.sha, first.last.sha) == (shas[0], shas[3], shas[2])
    assert first.last.date == "2025-01-03" and pr_number(first.removed.subject) == 102
    assert (second.first.sha, second.removed, second.uncertain) == (shas[6], None, True)
    # gemma: added, survives the move (only its path changed: not a change), dropped, reverted
    assert [(i.first.sha, i.removed.sha if i.removed else None) for i in gemma.intervals] == [
        (shas[2], shas[8]),
        (shas[9], None),
    ]
    assert gemma.changes == []
    assert [e.commit.sha for e in line.unsupported] == [shas[5]]
    assert "ParseError" in line.unsupported[0].error
    assert "does not parse as Python" in line.unsupported[0].error
    # parses: one per distinct input; the revert (#108) has the same blob at the same path as #106
    assert len(calls) == len(evaluated) - 1
    assert history.parses == len(calls) and history.hits >= 1
    assert set(history.probes.files) == {OLD, NEW}


def test_second_run_parses_nothing_and_persists(registry_repo, tmp_path):
    repo, shas = registry_repo
    calls: list[str] = []
    engine = counting(ENGINES["vllm"], "registry_rows", calls)
    cache_dir = tmp_path / "c"
    first = run_history(
        engine,
        "registry_rows",
        GitSource("vllm", str(repo), cache_dir=cache_dir),
        shas[0],
        shas[-1],
        cache=FactCache.at(cache_dir),
    )
    parsed = len(calls)
    assert parsed > 0
    again = run_history(
        engine,
        "registry_rows",
        GitSource("vllm", str(repo), cache_dir=cache_dir),
        shas[0],
        shas[-1],
        cache=FactCache.at(cache_dir),
    )  # a new process, in effect
    assert len(calls) == parsed  # every commit answered from the on-disk cache
    assert again.parses == 0 and again.fetch_requests == 0
    assert again.to_json()["items"] == first.to_json()["items"]


def test_layout_only_in_the_middle_is_found(make_repo, tmp_path):
    """Both ends use the old path; a stretch in between used the new one. Commits that only
    touched the new path are found once a commit there shows the extractor reading it."""
    a, b = "LlamaForCausalLM", "MistralForCausalLM"
    repo, shas = make_repo(
        [
            ({OLD: registry({a: "llama"})}, "init"),
            ({OLD: None, NEW: registry({a: "llama"})}, "move (#1)"),
            ({NEW: registry({a: "llama", b: "mistral"})}, "add mistral (#2)"),
            ({NEW: registry({a: "llama"})}, "drop mistral (#3)"),
            ({NEW: None, OLD: registry({a: "llama"})}, "move back (#4)"),
        ]
    )
    source = GitSource("vllm", str(repo), cache_dir=tmp_path / "c")
    history = run_history(ENGINES["vllm"], "registry_rows", source, shas[0], shas[-1])
    assert [e.commit.sha for e in history.evaluations] == shas
    mistral = next(
        i for i in history.timeline().items if i.key["architecture"] == "MistralForCausalLM"
    )
    assert [(i.first.sha, i.removed.sha) for i in mistral.intervals] == [(shas[2], shas[3])]


# ---------------------------------------------------------------- facts that read earlier facts


class Name(Record):
    KEY: ClassVar[tuple[str, ...]] = ("name",)
    name: str
    path: str


class Tagged(Record):
    KEY: ClassVar[tuple[str, ...]] = ("name",)
    name: str
    tag: str
    path: str


def _names(snapshot: Snapshot, done) -> FactOutput:
    path = snapshot.first_existing(["names.txt"], anchor="names")
    return FactOutput(tuple(Name(name=n, path=path) for n in snapshot.read_text(path).split()))


TAG_RUNS: list[str] = []


def _tagged(snapshot: Snapshot, done) -> FactOutput:
    TAG_RUNS.append(snapshot.commit)
    tags = dict(line.split("=") for line in snapshot.read_text("tags.txt").split())
    return FactOutput(
        tuple(
            Tagged(name=r.name, tag=tags.get(r.name, "-"), path="tags.txt") for r in done["names"]
        )
    )


TOY = EngineSpec(
    engine_id="toy",
    title="Toy",
    upstream_url="https://example.invalid/toy",
    facts=(
        FactExtractor(FactKind("names", "Names", Name, "names"), _names, reads=("names.txt",)),
        FactExtractor(
            FactKind("unused", "Unused", Name, "never read by tagged"), _names, reads=("names.txt",)
        ),
        FactExtractor(
            FactKind("tagged", "Tagged", Tagged, "names with tags"),
            _tagged,
            reads=("tags.txt",),
            needs=("names",),
        ),
    ),
)


def test_fact_that_reads_an_earlier_fact_follows_its_files(make_repo, tmp_path):
    repo, shas = make_repo(
        [
            ({"names.txt": "a b\n", "tags.txt": "a=1\n"}, "init"),
            ({"names.txt": "a b c\n"}, "add c (#1)"),  # only the earlier fact's file changes
            ({"tags.txt": "a=2\n"}, "retag a (#2)"),
            ({"other.txt": "z\n"}, "unrelated (#3)"),
            ({"names.txt": "a c\n"}, "drop b (#4)"),
            ({"names.txt": "a b c\n"}, "b again (#5)"),  # names and tags as at #2
        ]
    )
    TAG_RUNS.clear()
    source = GitSource("toy", str(repo), cache_dir=tmp_path / "c")
    history = run_history(TOY, "tagged", source, shas[0], shas[-1])
    assert [e.commit.sha for e in history.evaluations] == [
        shas[0],
        shas[1],
        shas[2],
        shas[4],
        shas[5],
    ]
    items = {i.key["name"]: i for i in history.timeline().items}
    assert [(i.first.sha, i.removed.sha if i.removed else None) for i in items["b"].intervals] == [
        (shas[0], shas[4]),
        (shas[5], None),
    ]
    assert items["c"].intervals[0].first.sha == shas[1]
    assert [(c.sha, f) for c, f in items["a"].changes] == [(shas[2], {"tag": ["1", "2"]})]
    # one run per distinct input (names, tags.txt blob): #2 has the names and tags of #5 (the
    # end, extracted first)
    assert len(TAG_RUNS) == 4 and shas[2] not in TAG_RUNS
    assert {"names.txt", "tags.txt"} == history.probes.files


def test_unknown_fact_is_a_usage_error(registry_repo, tmp_path):
    repo, shas = registry_repo
    source = GitSource("vllm", str(repo), cache_dir=tmp_path / "c")
    with pytest.raises(UsageError, match="has no fact 'nosuch'"):
        run_history(ENGINES["vllm"], "nosuch", source, shas[0], shas[-1])


# ---------------------------------------------------------------- requests, workers, CLI


def test_fetch_requests_do_not_grow_with_commits(make_repo, tmp_path, monkeypatch):
    trace = tmp_path / "packets.txt"
    monkeypatch.setenv("GIT_TRACE_PACKET", str(trace))
    rows = {}
    commits = [({OLD: registry({"LlamaForCausalLM": "llama"})}, "init")]
    for i in range(30):
        rows[f"Model{i}ForCausalLM"] = f"m{i}"
        commits.append(({OLD: registry({"LlamaForCausalLM": "llama", **rows})}, f"add {i} (#{i})"))
    repo, shas = make_repo(commits)
    source = GitSource("vllm", str(repo), cache_dir=tmp_path / "c")
    history = run_history(ENGINES["vllm"], "registry_rows", source, shas[0], shas[-1])
    assert len(history.evaluations) == 31
    # since, until, the range, the registry at each end, then the 29 other blobs in one batch
    assert history.fetch_requests == 6
    assert trace.read_text().count("fetch< version 2") == history.fetch_requests


def test_worker_processes_give_the_same_timeline(registry_repo, tmp_path):
    repo, shas = registry_repo
    serial = run_history(
        ENGINES["vllm"],
        "registry_rows",
        GitSource("vllm", str(repo), cache_dir=tmp_path / "a"),
        shas[0],
        shas[-1],
    )
    parallel = run_history(
        ENGINES["vllm"],
        "registry_rows",
        GitSource("vllm", str(repo), cache_dir=tmp_path / "b"),
        shas[0],
        shas[-1],
        jobs=2,
    )
    assert parallel.to_json()["items"] == serial.to_json()["items"]
    assert parallel.to_json()["unsupported"] == serial.to_json()["unsupported"]


def test_cli_history_json_and_table(registry_repo, project):
    repo, shas = registry_repo
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "history",
            "--engine",
            "vllm",
            "--fact",
            "registry_rows",
            "--since",
            shas[0],
            "--until",
            shas[-1],
            "--source",
            str(repo),
            "--root",
            str(project.root),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["fact"] == "registry_rows" and data["until"]["commit"] == shas[-1]
    mistral = next(i for i in data["items"] if i["key"]["architecture"] == "MistralForCausalLM")
    assert mistral["intervals"][0]["removed_in"]["pr"] == 102
    assert mistral["intervals"][0]["last"]["pr"] == 101
    assert data["unsupported"][0]["pr"] == 104
    table = runner.invoke(
        app,
        [
            "history",
            "-e",
            "vllm",
            "-f",
            "registry_rows",
            "--since",
            shas[0],
            "--until",
            shas[-1],
            "--source",
            str(repo),
            "--root",
            str(project.root),
        ],
    )
    assert table.exit_code == 0, table.output
    assert "MistralForCausalLM" in table.stdout and "#102" in table.stdout
    assert "unsupported layout: ParseError" in table.stdout


def test_cli_history_errors_are_one_message(registry_repo, project):
    repo, shas = registry_repo
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "history",
            "--engine",
            "vllm",
            "--fact",
            "registry_rows",
            "--since",
            shas[-1],
            "--until",
            shas[0],
            "--source",
            str(repo),
            "--root",
            str(project.root),
        ],
    )
    assert result.exit_code == 2
    assert "is not an ancestor" in result.output and "Traceback" not in result.output
    result = runner.invoke(
        app,
        [
            "history",
            "--engine",
            "vllm",
            "--fact",
            "registry_rows",
            "--since",
            shas[0],
            "--root",
            str(project.root),
        ],
    )
    assert result.exit_code == 2 and "no pin file" in result.output


def test_table_rows_and_unsupported_runs(registry_repo, tmp_path):
    repo, shas = registry_repo
    history = run_history(
        ENGINES["vllm"],
        "registry_rows",
        GitSource("vllm", str(repo), cache_dir=tmp_path / "c"),
        shas[0],
        shas[-1],
    )
    rows = {r[0]: r for r in table_rows(history) if r[0] == "MistralForCausalLM"}
    assert rows  # two intervals, the later one after the unsupported commit
    notes = [r[4] for r in table_rows(history) if r[0] == "MistralForCausalLM"]
    assert notes[0].startswith("present at --since")
    assert "after an unsupported layout" in notes[1]
    runs = unsupported_runs(history)
    assert len(runs) == 1 and runs[0][1] == 1 and "#104" in runs[0][0]
