"""Form is not meaning: every fact of every engine, extracted from its miniatures (and, as a
real-mirror test, from the real source at the pin) under semantics-preserving edits
(tests/metamorphic.py), renders byte-identical generated files."""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apron.extractors.engines import ENGINES
from apron.extractors.git import GitSource
from apron.extractors.pins import load_pin
from apron.extractors.report.generated_files import render_all
from apron.extractors.runner.base import extract_engine
from apron.extractors.snapshot import MemorySnapshot, Snapshot
from tests import llamacpp_miniatures, sglang_miniatures, vllm_miniatures
from tests.conftest import REPO_ROOT, mirror
from tests.metamorphic import ALL_KINDS, CPP_EDITS, PYTHON_EDITS, edit_file


class EditedSnapshot(Snapshot):
    """`inner` with each engine file edited by `kinds`; blob SHAs are the originals', so the
    provenance headers stay the same and any difference is a difference of facts."""

    def __init__(self, inner: Snapshot, kinds: tuple[str, ...]) -> None:
        self.inner = inner
        self.kinds = kinds
        self.engine = inner.engine
        self.commit = inner.commit
        self.commit_date = getattr(inner, "commit_date", None)
        self.edited: set[str] = set()
        self._memo: dict[str, bytes] = {}

    def exists(self, path: str) -> bool:
        return self.inner.exists(path)

    def list_files(self, directory: str) -> list[str]:
        return self.inner.list_files(directory)

    def blob_sha(self, path: str) -> str:
        return self.inner.blob_sha(path)

    def prefetch(self, paths: Iterable[str]) -> None:
        self.inner.prefetch(paths)

    def read_bytes(self, path: str) -> bytes:
        if path not in self._memo:
            self._memo[path] = self._edited(path)
        return self._memo[path]

    def _edited(self, path: str) -> bytes:
        data = self.inner.read_bytes(path)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return data
        edited = edit_file(path, text, self.kinds)
        if edited != text:
            self.edited.add(path)
        return edited.encode("utf-8")


def _full(*trees: dict[str, str | None]) -> dict[str, str]:
    files: dict[str, str] = {}
    for tree in trees:
        for path, text in tree.items():
            if text is None:
                files.pop(path, None)
            else:
                files[path] = text
    return files


MINIATURES = {
    "vllm": [_full(vllm_miniatures.tree_v1())],
    "llamacpp": [
        _full(llamacpp_miniatures.tree_v1()),
        _full(llamacpp_miniatures.tree_v1(), llamacpp_miniatures.tree_v2()),
    ],
    "sglang": [
        _full(sglang_miniatures.tree_2025()),
        _full(sglang_miniatures.tree_2025(), sglang_miniatures.tree_2026()),
    ],
}


def same_files(got: dict[str, str], expected: dict[str, str]) -> None:
    """Equal, or fail with the first differing line of the first differing file."""
    assert sorted(got) == sorted(expected)
    for name in sorted(expected):
        if got[name] != expected[name]:
            pairs = zip(got[name].splitlines(), expected[name].splitlines(), strict=False)
            line = next(((g, e) for g, e in pairs if g != e), ("(length)", "(length)"))
            pytest.fail(f"{name} differs:\n  got      {line[0][:600]}\n  expected {line[1][:600]}")


def rendered(engine: str, snapshot: Snapshot) -> dict[str, str]:
    date = getattr(snapshot, "commit_date", None) or "2026-01-01"
    facts = extract_engine(ENGINES[engine], snapshot, commit_date=date)
    return render_all(facts)


def _miniature(engine: str, index: int) -> MemorySnapshot:
    return MemorySnapshot(MINIATURES[engine][index], engine=engine, commit="1" * 40)


BASELINES: dict[tuple[str, int], dict[str, str]] = {}


def baseline(engine: str, index: int) -> dict[str, str]:
    if (engine, index) not in BASELINES:
        BASELINES[engine, index] = rendered(engine, _miniature(engine, index))
    return BASELINES[engine, index]


CASES = [(engine, i) for engine, trees in MINIATURES.items() for i in range(len(trees))]


@pytest.mark.parametrize("kind", ALL_KINDS)
@pytest.mark.parametrize(("engine", "index"), CASES, ids=[f"{e}-{i}" for e, i in CASES])
def test_each_edit_of_the_miniatures_gives_the_same_facts(engine, index, kind):
    snapshot = EditedSnapshot(_miniature(engine, index), (kind,))
    same_files(rendered(engine, snapshot), baseline(engine, index))


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_each_edit_really_edits_some_miniature(kind):
    """An edit that changes no fixture would prove nothing."""
    changed = [
        path
        for engine, trees in MINIATURES.items()
        for tree in trees
        for path, text in tree.items()
        if edit_file(path, text, (kind,)) != text
    ]
    assert changed, f"{kind} changes no miniature file"


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
@given(
    case=st.sampled_from(CASES),
    kinds=st.lists(st.sampled_from(ALL_KINDS), min_size=2, max_size=5, unique=True),
)
def test_composed_edits_of_the_miniatures_give_the_same_facts(case, kinds):
    engine, index = case
    snapshot = EditedSnapshot(_miniature(engine, index), tuple(kinds))
    same_files(rendered(engine, snapshot), baseline(engine, index))


def test_an_edit_that_changes_meaning_is_left_out():
    text = "X = (1)\n"
    assert edit_file("a.py", "x = 1\n", ("extra-parentheses",)) == "x = (1)\n"
    # `(a\n)` with a trailing comma would be a tuple: the AST check leaves the file alone
    assert edit_file("a.py", text, ("trailing-commas",)) == text
    odd = "def f():\n    return '''\nclass X:\n'''\n"  # own-line comment would land in a string
    assert edit_file("a.py", odd, ("own-line-comments",)) == odd


def test_the_edits_are_the_kinds_the_suite_promises():
    assert len(PYTHON_EDITS) >= 8 and len(CPP_EDITS) >= 4


# ------------------------------------------------------------------ the real source at the pins

REAL = ("vllm", "llamacpp", "sglang")
REAL_KINDS = {
    "vllm": tuple(PYTHON_EDITS),
    "sglang": tuple(PYTHON_EDITS),
    "llamacpp": tuple(PYTHON_EDITS) + tuple(CPP_EDITS),
}


@pytest.fixture(scope="module")
def real_sources(tmp_path_factory):
    opened: dict[str, GitSource] = {}
    yield lambda engine: opened.setdefault(
        engine,
        GitSource(engine, mirror(engine), cache_dir=tmp_path_factory.mktemp(f"cache-{engine}")),
    )
    for source in opened.values():
        source.close()


REAL_BASELINES: dict[str, dict[str, str]] = {}


@pytest.mark.real_mirror
@pytest.mark.parametrize(
    ("engine", "kind"),
    [(e, k) for e in REAL for k in (*REAL_KINDS[e], "all")],
)
def test_the_real_source_at_the_pin_under_each_edit_gives_the_same_facts(
    engine, kind, real_sources
):
    if mirror(engine) is None:
        pytest.skip(f"APRON_MIRROR_{engine.upper()} is not set")
    pin = load_pin(REPO_ROOT / "pins", engine)
    source = real_sources(engine)
    original = source.snapshot(pin.commit)
    if engine not in REAL_BASELINES:
        REAL_BASELINES[engine] = rendered(engine, original)
        committed = REPO_ROOT / "generated" / engine
        for name, text in REAL_BASELINES[engine].items():
            assert (committed / name).read_text(encoding="utf-8") == text, name
    kinds = REAL_KINDS[engine] if kind == "all" else (kind,)
    edited = EditedSnapshot(original, kinds)
    same_files(rendered(engine, edited), REAL_BASELINES[engine])
    assert edited.edited, f"{kind} edited none of the files {engine}'s facts read"


# Older commits the readers were compared on when they were ported (tests/test_vllm_real.py's
# layouts, tests/test_history_real.py's window, the llama.cpp commits of test_llamacpp_e2e,
# SGLang's 2025 docs layout): each one's own extraction is the baseline there.
HISTORICAL = [
    ("vllm", "7f280d69c98e560427d2cbc9c3c3c13a83510dca"),  # mid-2025: vllm/config.py
    ("vllm", "55602bb2e695108e35501dfcd5890e7664c31495"),  # 2025-08: vllm/config/__init__.py
    ("vllm", "eaf81485eda13efc10e1c38f4094978eae04e77f"),  # late 2025: vllm/config/model.py
    ("vllm", "9aaf83ef502fc37bc647f6e474314d48ba36cd1c"),  # 2026-05-19, the previous pin
    ("llamacpp", "cce09f0b2b37028caf6f549c976ba16b3e8703d8"),  # 2026-05-12, before conversion/
    ("sglang", "f2e0048d0688e929803f109bb633b327a9fb3d2c"),  # the 2025 docs layout
]


@pytest.mark.real_mirror
@pytest.mark.parametrize(("engine", "commit"), HISTORICAL)
def test_historical_real_source_under_every_edit_gives_the_same_facts(engine, commit, real_sources):
    if mirror(engine) is None:
        pytest.skip(f"APRON_MIRROR_{engine.upper()} is not set")
    original = real_sources(engine).snapshot(commit)
    edited = EditedSnapshot(original, REAL_KINDS[engine])
    same_files(rendered(engine, edited), rendered(engine, original))
    assert edited.edited, f"the edits changed none of the files {engine}'s facts read at {commit}"
