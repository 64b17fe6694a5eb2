"""generated/ and pins/ always describe the same commit: `extract --commit` moves the pin (with
the commit's committer date) and says so, `check` names a mismatch in words, and a pin's date is
a real date equal to the committer date."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from apron.extractors.commands.bump import plan_bump
from apron.extractors.commands.check import check_engine, check_offline
from apron.extractors.commands.cli import app
from apron.extractors.commands.generate import run
from apron.extractors.engines import ENGINES
from apron.extractors.errors import GuardError, PinError
from apron.extractors.pins import load_pin
from tests.conftest import write_pin
from tests.vllm_miniatures import CONVERTOR_PATH, CONVERTOR_V2, tree_v1

VLLM = ENGINES["vllm"]
URL = "https://github.com/vllm-project/vllm"
runner = CliRunner()


@pytest.fixture
def two_commits(project, make_repo):
    repo, shas = make_repo(
        [
            (tree_v1(), "v1", "2026-03-02T10:00:00+00:00"),
            ({CONVERTOR_PATH: CONVERTOR_V2}, "v2", "2026-04-05T23:30:00+00:00"),
        ]
    )
    write_pin(project, "vllm", URL, shas[0], "2026-03-02")
    run(VLLM, project, commit=None, source=str(repo))
    return project, repo, shas


def cli(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_extract_at_another_commit_moves_the_pin_and_says_so(two_commits):
    project, repo, shas = two_commits
    result = cli("--engine", "vllm", "--commit", shas[1], "--source", repo, "--root", project.root)
    assert result.exit_code == 0, result.output
    pin = load_pin(project.pins, "vllm")
    assert (pin.commit, pin.date, pin.url) == (shas[1], "2026-04-05", URL)
    assert f"pin pins/vllm.toml now names {shas[1]} (2026-04-05)" in result.output
    assert f"moved from {shas[0]} (2026-03-02)" in result.output
    assert check_offline(project) == []


def test_extract_at_the_pin_corrects_a_wrong_date(two_commits):
    project, repo, shas = two_commits
    write_pin(project, "vllm", URL, shas[0], "2026-01-09")
    result = cli("--engine", "vllm", "--source", repo, "--root", project.root)
    assert result.exit_code == 0, result.output
    assert load_pin(project.pins, "vllm").date == "2026-03-02"
    assert "date corrected from 2026-01-09" in result.output


def test_extract_at_the_pin_leaves_the_pin_file_alone(two_commits):
    project, repo, shas = two_commits
    pin_file = project.pins / "vllm.toml"
    pin_file.write_text("# a note kept\n" + pin_file.read_text())
    before = pin_file.read_bytes()
    result = cli("--engine", "vllm", "--source", repo, "--root", project.root)
    assert result.exit_code == 0 and "now names" not in result.output
    assert pin_file.read_bytes() == before


def test_dry_run_moves_nothing(two_commits):
    project, repo, shas = two_commits
    run(VLLM, project, commit=shas[1], source=str(repo), write=False)
    assert load_pin(project.pins, "vllm").commit == shas[0]


def test_check_names_a_pin_that_does_not_match_generated(two_commits):
    project, repo, shas = two_commits
    write_pin(project, "vllm", URL, shas[1], "2026-04-05")  # moved by hand, generated/ not
    outcome = check_engine(project, "vllm", str(repo))
    assert outcome.status == "differs"
    assert outcome.detail == (
        f"generated/vllm was extracted at {shas[0]} (2026-03-02) but pins/vllm.toml names "
        f"{shas[1]} (2026-04-05)"
    )
    assert outcome.command == f"extract --engine vllm --commit {shas[1]} --source {repo}"
    assert check_offline(project) == [outcome.detail]
    result = cli("check", "--offline", "--root", project.root)
    assert result.exit_code == 1 and "pins/vllm.toml names" in result.output


def test_check_names_a_pin_date_that_is_not_the_committer_date(two_commits):
    project, repo, shas = two_commits
    write_pin(project, "vllm", URL, shas[0], "2026-03-03")
    outcome = check_engine(project, "vllm", str(repo))
    assert outcome.status == "differs"
    assert outcome.detail == (
        f"generated/vllm gives {shas[0]} the date 2026-03-02 but pins/vllm.toml says 2026-03-03"
    )


def test_check_compares_the_pin_date_with_the_commit(two_commits, tmp_path):
    """Header and pin agree with each other but not with git: only the online check can tell."""
    project, repo, shas = two_commits
    for path in (project.pins / "vllm.toml", *(project.generated / "vllm").iterdir()):
        path.write_text(path.read_text().replace("2026-03-02", "2026-03-09"))
    outcome = check_engine(project, "vllm", str(repo))
    assert outcome.status == "differs"
    assert outcome.detail == (
        f"pins/vllm.toml dates {shas[0]} 2026-03-09, but its committer date is 2026-03-02"
    )


@pytest.mark.parametrize("date", ["2026-02-30", "2026-13-01", "0000-01-01"])
def test_a_pin_date_must_be_a_real_date(project, date):
    write_pin(project, "vllm", URL, "a" * 40, date)
    with pytest.raises(PinError, match=f"date '{date}' is not a real calendar date"):
        load_pin(project.pins, "vllm")


def test_bump_refuses_when_generated_and_the_pin_disagree(two_commits):
    project, repo, shas = two_commits
    write_pin(project, "vllm", URL, shas[1], "2026-04-05")
    with pytest.raises(GuardError, match="was extracted at .* but pins/vllm.toml names"):
        plan_bump(VLLM, project, to=shas[1], source=str(repo), with_impact=False)
