"""The GitHub workflows: structure of the bump workflow and CI, and zizmor's audit of both."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO_ROOT

WORKFLOWS = REPO_ROOT / ".github" / "workflows"
FULL_SHA_WITH_VERSION = re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+$")


def load(name: str) -> dict:
    return yaml.safe_load((WORKFLOWS / name).read_text())


def uses_lines(name: str) -> list[str]:
    return [
        line.split("uses:", 1)[1].strip()
        for line in (WORKFLOWS / name).read_text().splitlines()
        if line.strip().startswith(("uses:", "- uses:"))
    ]


def steps(workflow: dict, job: str) -> list[dict]:
    return workflow["jobs"][job]["steps"]


def step(workflow: dict, job: str, predicate) -> dict:
    return next(s for s in steps(workflow, job) if predicate(s))


@pytest.mark.parametrize("name", ["bump.yml", "ci.yml"])
def test_every_action_is_pinned_to_a_full_sha_with_a_version(name):
    lines = uses_lines(name)
    assert lines
    assert all(FULL_SHA_WITH_VERSION.match(line) for line in lines), lines


@pytest.mark.parametrize("name", ["bump.yml", "ci.yml"])
def test_checkout_keeps_no_credentials_and_the_token_is_read_only(name):
    workflow = load(name)
    assert workflow["permissions"] == {}
    for job_name, job in workflow["jobs"].items():
        assert job["permissions"] == {"contents": "read"}, job_name
        checkout = step(workflow, job_name, lambda s: "actions/checkout@" in s.get("uses", ""))
        assert checkout["with"]["persist-credentials"] is False


def test_bump_workflow_triggers_and_engine_choice():
    workflow = load("bump.yml")
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as True
    assert triggers["schedule"][0]["cron"]
    engine = triggers["workflow_dispatch"]["inputs"]["engine"]
    assert engine["type"] == "choice"
    assert engine["options"] == ["all", "vllm", "llamacpp", "sglang", "trtllm"]
    # a merged bump changes main's pins/generated: the other open bump branches are rebuilt
    assert triggers["push"]["branches"] == ["main"]
    assert set(triggers["push"]["paths"]) == {"pins/**", "generated/**"}
    assert workflow["concurrency"]["cancel-in-progress"] is False
    job = workflow["jobs"]["bump"]
    assert job["strategy"]["fail-fast"] is False and "vllm" in job["strategy"]["matrix"]["engine"]
    assert job["environment"] == "bump"


def test_bump_step_writes_body_and_full_diff_and_reads_exit_3():
    workflow = load("bump.yml")
    bump = step(workflow, "bump", lambda s: s.get("id") == "bump")
    assert "extract bump --engine" in bump["run"] and '"$code" -eq 3' in bump["run"]
    assert "--full-diff full-diff.md" in bump["run"] and '--full-diff-url "$RUN_URL"' in bump["run"]
    assert "${{" not in bump["run"]  # expressions reach scripts only through env


def test_no_new_facts_closes_the_stale_pull_request():
    workflow = load("bump.yml")
    close = step(workflow, "bump", lambda s: "gh pr close" in s.get("run", ""))
    assert close["if"] == "steps.bump.outputs.changed == 'false'"
    assert '--head "$BRANCH"' in close["run"] and "--state open" in close["run"]
    assert close["env"]["GH_TOKEN"] == "${{ secrets.APRON_BUMP_TOKEN }}"


def test_full_diff_is_kept_as_artifact_and_job_summary():
    workflow = load("bump.yml")
    upload = step(workflow, "bump", lambda s: "upload-artifact@" in s.get("uses", ""))
    assert upload["with"]["path"] == "full-diff.md"
    summary = step(workflow, "bump", lambda s: "GITHUB_STEP_SUMMARY" in s.get("run", ""))
    assert "full-diff.md" in summary["run"] and "head -c" in summary["run"]  # 1 MiB cap


def test_failing_tests_still_open_a_draft_that_says_so():
    workflow = load("bump.yml")
    tests = step(workflow, "bump", lambda s: s.get("id") == "tests")
    assert tests["continue-on-error"] is True and "pytest" in tests["run"]
    notice = step(workflow, "bump", lambda s: "Tests failed" in s.get("run", ""))
    assert "steps.tests.outcome == 'failure'" in notice["if"]
    pr = step(workflow, "bump", lambda s: "create-pull-request@" in s.get("uses", ""))
    assert pr["if"] == "steps.bump.outputs.changed == 'true'"  # not skipped by failed tests
    assert (
        pr["with"]["draft"]
        == "${{ (steps.tests.outcome == 'failure' || steps.bump.outputs.lost == 'true') "
        "&& 'always-true' || 'false' }}"
    )
    assert pr["with"]["branch"] == "apron/bump-${{ matrix.engine }}"  # stable: updated in place
    assert "GITHUB_TOKEN" not in pr["with"]["token"]  # default-token PRs do not trigger CI
    assert pr["with"]["body-path"] == "pr-body.md"
    names = [s.get("uses", s.get("run", "")) for s in steps(workflow, "bump")]
    fail = steps(workflow, "bump")[-1]
    assert fail["run"] == "exit 1" and fail["if"] == "steps.tests.outcome == 'failure'"
    assert names.index(pr["uses"]) < len(names) - 1


def test_ci_runs_the_offline_rerender():
    workflow = load("ci.yml")
    triggers = workflow[True]
    assert "pull_request" in triggers
    runs = [s.get("run", "") for s in steps(workflow, "test")]
    assert "bash .ci/run" in runs
    assert ".venv/bin/extract check --offline" in runs


def zizmor() -> str:
    found = shutil.which("zizmor") or str(Path(sys.executable).with_name("zizmor"))
    if not Path(found).exists():
        pytest.fail("zizmor is not installed: install the test extras (pip install -e '.[test]')")
    return found


@pytest.mark.parametrize("persona", ["regular", "auditor"])
def test_zizmor_finds_nothing_of_medium_severity_or_above(persona):
    done = subprocess.run(
        [
            zizmor(),
            "--offline",
            "--no-progress",
            "--format",
            "json",
            "--min-severity",
            "medium",
            "--persona",
            persona,
            str(WORKFLOWS),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    findings = json.loads(done.stdout or "[]")
    described = [f"{f['ident']} ({f['determinations']['severity']}): {f['desc']}" for f in findings]
    assert described == [], described
    assert done.returncode == 0, done.stderr[-2000:]


def test_zizmor_would_catch_an_unpinned_action(tmp_path):
    bad = tmp_path / ".github" / "workflows"
    bad.mkdir(parents=True)
    text = (WORKFLOWS / "ci.yml").read_text()
    (bad / "ci.yml").write_text(
        re.sub(r"actions/checkout@[0-9a-f]{40}", "actions/checkout@v7", text)
    )
    done = subprocess.run(
        [zizmor(), "--offline", "--no-progress", "--format", "json", str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "unpinned-uses" in {f["ident"] for f in json.loads(done.stdout)}
