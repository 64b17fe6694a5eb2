"""A failure at any step leaves generated/ and pins/ byte for byte as they were: a source or
extractor error, an exception inside the renderer, a full disk or an interrupt at every single
write, rename or mkdir the writer does. `bump` writes generated/ and the pin as one change, so
the pin never names a commit whose generated files were not written."""

from __future__ import annotations

import builtins
import errno
import io
import os
import shutil
import sys
from pathlib import Path

import pytest

from apron.extractors.commands import cli
from apron.extractors.commands.bump import apply_bump, plan_bump
from apron.extractors.commands.generate import run
from apron.extractors.engines import ENGINES
from apron.extractors.errors import AnchorError, UnknownCommitError
from apron.extractors.pins import load_pin
from apron.extractors.report import generated_files, render
from apron.extractors.runner.pipeline import ProjectPaths
from apron.extractors.runner.writer import WriteError
from tests.conftest import write_pin
from tests.hostile.helpers import UPSTREAM, clean_tree, folder_bytes
from tests.vllm_miniatures import CONVERTOR_PATH, CONVERTOR_V2, REGISTRY_PATH, REGISTRY_V2

VLLM = ENGINES["vllm"]
WRITE_MODES = set("wax+")
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


class Faults:
    """Counts every file-system change under `root` (open for writing, os.open with write flags,
    mkdir, rename/replace, unlink, rmdir) and makes the Nth one fail: with ENOSPC (a full disk)
    or KeyboardInterrupt, once or from then on."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._patch = monkeypatch = pytest.MonkeyPatch()
        self.seen: list[str] = []
        self.fail_at: int | None = None
        self.persistent = False
        self.error: type[BaseException] = OSError
        real = {
            "open": builtins.open,
            "os.open": os.open,
            "mkdir": os.mkdir,
            "replace": os.replace,
            "rename": os.rename,
        }

        def wrap(name, function, writes):
            def wrapper(*args, **kwargs):
                if writes(*args, **kwargs):
                    self._step(
                        f"{name} {args[0]}"
                        + (f" -> {args[1]}" if name in ("replace", "rename") else "")
                    )
                return function(*args, **kwargs)

            return wrapper

        def opens_for_writing(file, mode="r", *args, **kwargs):
            return self._under(file) and bool(WRITE_MODES & set(mode))

        def os_open_writes(path, flags, *args, **kwargs):
            return self._under(path) and bool(flags & WRITE_FLAGS)

        def moves(src, dst, *args, **kwargs):
            return self._under(src) or self._under(dst)

        fake_open = wrap("open", real["open"], opens_for_writing)
        monkeypatch.setattr(builtins, "open", fake_open)
        monkeypatch.setattr(io, "open", fake_open)
        monkeypatch.setattr(os, "open", wrap("os.open", real["os.open"], os_open_writes))
        monkeypatch.setattr(
            os,
            "mkdir",
            wrap(
                "mkdir",
                real["mkdir"],  # an existing dir is a no-op
                lambda p, *a, **k: self._under(p) and not os.path.lexists(p),
            ),
        )
        monkeypatch.setattr(os, "replace", wrap("replace", real["replace"], moves))
        monkeypatch.setattr(os, "rename", wrap("rename", real["rename"], moves))

    def _under(self, path) -> bool:
        if isinstance(path, int):
            return False
        try:
            return Path(os.fsdecode(path)).resolve().is_relative_to(self.root)
        except (TypeError, ValueError, OSError):
            return False

    def _step(self, what: str) -> None:
        self.seen.append(what)
        count = len(self.seen)
        if self.fail_at is not None and (
            count == self.fail_at or (self.persistent and count > self.fail_at)
        ):
            if self.error is OSError:
                raise OSError(errno.ENOSPC, "No space left on device (simulated)", what)
            raise self.error()

    def __enter__(self) -> Faults:
        return self

    def __exit__(self, *exc) -> None:
        self._patch.undo()

    def arm(
        self, fail_at: int | None, *, persistent: bool = False, error: type[BaseException] = OSError
    ) -> None:
        self.seen.clear()
        self.fail_at, self.persistent, self.error = fail_at, persistent, error


@pytest.fixture
def upgrade(project, make_repo):
    """generated/ and the pin at v1; v2 changes facts, v3 breaks the registry anchor."""
    repo, shas = make_repo(
        [
            (clean_tree("vllm"), "v1"),
            ({CONVERTOR_PATH: CONVERTOR_V2, REGISTRY_PATH: REGISTRY_V2}, "v2"),
            ({REGISTRY_PATH: REGISTRY_V2.replace("_VLLM_MODELS", "_ALL")}, "v3: anchor renamed"),
        ]
    )
    write_pin(project, "vllm", UPSTREAM["vllm"], shas[0])
    run(VLLM, project, commit=None, source=str(repo))
    (project.generated / "hand-written-notes.md").write_text("kept as is\n")
    return repo, shas


def state(project: ProjectPaths) -> dict[str, bytes]:
    return folder_bytes(project.root)


def count_steps(project: ProjectPaths, tmp_path: Path, action) -> list[str]:
    """The file-system steps `action(paths)` takes when nothing fails, on a copy of the project."""
    clone = ProjectPaths(tmp_path / "clone")
    shutil.copytree(project.root, clone.root, symlinks=True)
    with Faults(clone.root) as faults:
        faults.arm(None)
        action(clone)
        steps = list(faults.seen)
    assert len(steps) >= 6, steps
    return steps


# ------------------------------------------------------------------ extract: any step fails


def _fail_in(monkeypatch, target, name):
    def boom(*args, **kwargs):
        raise RuntimeError(f"renderer bug in {name}")

    monkeypatch.setattr(target, name, boom)


@pytest.mark.parametrize(
    ("step", "commit_index", "error"),
    [
        ("unknown commit", None, UnknownCommitError),
        ("extractor: anchor renamed", 2, AnchorError),
        ("renderer: a fact module", 1, RuntimeError),
        ("renderer: engine README", 1, RuntimeError),
        ("renderer: warnings module", 1, RuntimeError),
        ("renderer: shared schema", 1, RuntimeError),
        ("reviewer: index", 1, RuntimeError),
        ("reviewer: cross-engine matrix", 1, RuntimeError),
    ],
)
def test_failed_extract_leaves_generated_and_pins_identical(
    project, upgrade, monkeypatch, step, commit_index, error
):
    repo, shas = upgrade
    patch = {
        "renderer: a fact module": (render, "render_fact_module"),
        "renderer: engine README": (render, "render_engine_markdown"),
        "renderer: warnings module": (render, "render_warnings_module"),
        "renderer: shared schema": (generated_files, "render_schema"),
        "reviewer: index": (generated_files, "render_index"),
        "reviewer: cross-engine matrix": (generated_files, "render_matrix"),
    }.get(step)
    if patch:
        _fail_in(monkeypatch, *patch)
    before = state(project)
    commit = "b" * 40 if commit_index is None else shas[commit_index]
    with pytest.raises(error):
        run(VLLM, project, commit=commit, source=str(repo))
    assert state(project) == before


def test_renderer_bug_through_the_cli_is_one_line_and_changes_nothing(
    project, upgrade, monkeypatch, capsys
):
    repo, shas = upgrade
    _fail_in(monkeypatch, render, "render_fact_module")
    monkeypatch.delenv("APRON_DEBUG", raising=False)
    monkeypatch.setattr(
        sys,
        "argv",
        [
            "extract",
            "--engine",
            "vllm",
            "--commit",
            shas[1],
            "--source",
            str(repo),
            "--root",
            str(project.root),
        ],
    )
    before = state(project)
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    err = capsys.readouterr().err
    assert exit_info.value.code == 70
    assert "internal error: RuntimeError: renderer bug in render_fact_module" in err
    assert "Traceback" not in err
    assert state(project) == before


def extract_once(monkeypatch) -> None:
    """`run` extracts a commit once and reuses the facts: these tests fail its writes, and the
    extraction before them gives the same facts every time."""
    from apron.extractors.commands import generate

    done: dict[tuple, object] = {}
    extract = generate.extract_at

    def once(engine, commit, source, **options):
        key = (engine.engine_id, commit, source)
        if key not in done:
            done[key] = extract(engine, commit, source, **options)
        return done[key]

    monkeypatch.setattr(generate, "extract_at", once)


@pytest.mark.parametrize("error", [OSError, KeyboardInterrupt], ids=["disk-full", "interrupt"])
def test_extract_survives_a_failure_at_every_write_step(
    project, upgrade, tmp_path, monkeypatch, error
):
    repo, shas = upgrade
    extract_once(monkeypatch)

    steps = count_steps(
        project, tmp_path, lambda paths: run(VLLM, paths, commit=shas[1], source=str(repo))
    )
    before = state(project)
    with Faults(project.root) as faults:
        for fail_at in range(1, len(steps) + 1):
            faults.arm(fail_at, error=error)
            with pytest.raises(WriteError if error is OSError else error) as info:
                run(VLLM, project, commit=shas[1], source=str(repo))
            faults.arm(None)
            assert state(project) == before, f"changed by a failure at {steps[fail_at - 1]}"
            if error is OSError:
                assert "No space left on device" in str(info.value)
                assert "nothing was changed" in str(info.value)
    run(VLLM, project, commit=shas[1], source=str(repo))  # and with the disk back, it writes
    assert state(project) != before


def test_write_error_through_the_cli_is_exit_2_with_one_message(
    project, upgrade, monkeypatch, capsys
):
    repo, shas = upgrade
    monkeypatch.setattr(
        sys,
        "argv",
        [
            "extract",
            "--engine",
            "vllm",
            "--commit",
            shas[1],
            "--source",
            str(repo),
            "--root",
            str(project.root),
        ],
    )
    before = state(project)
    with Faults(project.root) as faults, pytest.raises(SystemExit) as exit_info:
        faults.arm(3)
        cli.main()
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.startswith("error: cannot write ")
    assert "No space left on device" in err and "Traceback" not in err
    assert state(project) == before


def test_generated_files_get_ordinary_modes(project, upgrade):
    """tempfile creates 0600 files and 0700 folders; what lands in generated/ is readable."""
    mask = os.umask(0)
    os.umask(mask)
    for path in [
        project.generated / "vllm",
        *project.generated.glob("*"),
        *(project.generated / "vllm").iterdir(),
    ]:
        expected = (0o777 if path.is_dir() else 0o666) & ~mask
        assert path.stat().st_mode & 0o777 == expected, path


# ------------------------------------------------------------------ bump


@pytest.fixture
def planned(project, upgrade):
    repo, shas = upgrade
    plan = plan_bump(VLLM, project, to=shas[1], source=str(repo), with_impact=False)
    return plan, shas


def assert_pin_matches_generated(project: ProjectPaths) -> None:
    """The pin and generated/vllm name the same commit: the pin never runs ahead."""
    pin = load_pin(project.pins, "vllm")
    header = (project.generated / "vllm" / "__init__.py").read_text()
    assert f'COMMIT = "{pin.commit}"' in header


@pytest.mark.parametrize("error", [OSError, KeyboardInterrupt], ids=["disk-full", "interrupt"])
def test_bump_survives_a_failure_at_every_write_step(
    project, planned, tmp_path, monkeypatch, error
):
    plan, shas = planned
    steps = count_steps(project, tmp_path, lambda paths: apply_bump(paths, plan))
    assert any("pins/vllm.toml" in s for s in steps) and any("generated" in s for s in steps)
    before = state(project)
    with Faults(project.root) as faults:
        for fail_at in range(1, len(steps) + 1):
            faults.arm(fail_at, error=error)
            with pytest.raises(WriteError if error is OSError else error):
                apply_bump(project, plan)
            faults.arm(None)
            assert state(project) == before, f"changed by a failure at {steps[fail_at - 1]}"
    apply_bump(project, plan)
    assert load_pin(project.pins, "vllm").commit == shas[1]
    assert_pin_matches_generated(project)


@pytest.mark.parametrize("where", ["pins", "generated"])
def test_bump_with_the_pin_or_generated_unwritable(project, planned, monkeypatch, where):
    """The pin write failing and the generated write failing: either way neither changes."""
    plan, _ = planned
    before = state(project)
    with (
        Faults(project.root / where) as faults,
        pytest.raises(WriteError, match="No space left on device"),
    ):
        faults.arm(1, persistent=True)
        apply_bump(project, plan)
    assert state(project) == before
    assert_pin_matches_generated(project)


def test_bump_with_a_disk_that_stays_full_never_lets_the_pin_run_ahead(project, planned, tmp_path):
    """From step N on every change fails, the renames that would undo the swap included; the
    pin is swapped in last, so it only names the new commit when every generated file is new,
    and what could not be put back is named with where its old copy is."""
    plan, shas = planned
    steps = count_steps(project, tmp_path, lambda paths: apply_bump(paths, plan))
    pristine = tmp_path / "pristine"
    shutil.copytree(project.root, pristine, symlinks=True)
    new_files = {f"generated/{k}": v.encode() for k, v in plan.rendered.items()}
    for fail_at in range(1, len(steps) + 1):
        with Faults(project.root) as faults, pytest.raises(WriteError) as info:
            faults.arm(fail_at, persistent=True)
            apply_bump(project, plan)
        now = state(project)
        pin = now.get("pins/vllm.toml", b"").decode()
        if shas[1] in pin:
            assert all(now.get(k) == v for k, v in new_files.items()), steps[fail_at - 1]
        elif now != folder_bytes(pristine):
            assert "could not put back" in str(info.value) and "old copy at" in str(info.value)
            # every old file is still in the project, at its place or in a kept old copy
            assert set(folder_bytes(pristine).values()) <= set(now.values())
        shutil.rmtree(project.root)
        shutil.copytree(pristine, project.root, symlinks=True)
