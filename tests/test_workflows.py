"""The GitHub Actions workflows in .github/workflows.

actionlint (installed by .ci/run into .tools/actionlint, pinned) must find nothing in them, and must find each of
the mistakes planted in a broken workflow, so the first check cannot pass because the linter checks nothing. The
structural tests pin what the workflows are for: the PR preview and the deployment run pulumi/actions with the
CrossGuard pack in policy/, and every workflow that works per stack covers exactly the stacks in stacks/ (a new
stacks/Pulumi.<name>.yaml without its workflow entries fails here).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
STACKS = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
REQUIRE_ENGINES = bool(os.environ.get("EGRESS_REQUIRE_ENGINES"))


# --- actionlint ------------------------------------------------------------------------------------------------


def _find_actionlint() -> str | None:
    """$ACTIONLINT, else what .ci/run installs, else one on PATH."""
    if os.environ.get("ACTIONLINT"):
        return os.environ["ACTIONLINT"]
    local = ROOT / ".tools" / "actionlint" / "bin" / "actionlint"
    if local.exists():
        return str(local)
    return shutil.which("actionlint")


@pytest.fixture(scope="module")
def actionlint() -> str:
    exe = _find_actionlint()
    if exe is None:
        # Skipped in a quick local loop without it; .ci/run installs it and sets EGRESS_REQUIRE_ENGINES, so CI fails.
        message = "actionlint is not installed (.ci/run installs it into .tools/actionlint)"
        if REQUIRE_ENGINES:
            pytest.fail(f"{message}, and EGRESS_REQUIRE_ENGINES is set")
        pytest.skip(message)
    return exe


def run_actionlint(exe: str, files: list[Path], cwd: Path) -> list[dict]:
    """actionlint's findings for FILES, as its JSON objects (message, filepath, line, column, kind)."""
    proc = subprocess.run(
        [exe, "-no-color", "-format", "{{json .}}", *map(str, files)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    # 0: no problem, 1: problems found; anything else is the linter failing (bad flags, unreadable file).
    assert proc.returncode in (0, 1), f"actionlint exited {proc.returncode}:\n{proc.stderr}{proc.stdout}"
    findings = json.loads(proc.stdout) if proc.stdout.strip() else []
    assert (proc.returncode == 1) == bool(findings), (proc.returncode, proc.stdout, proc.stderr)
    return findings


def _show(findings: list[dict]) -> str:
    return "\n".join(f"{f['filepath']}:{f['line']}:{f['column']}: {f['message']} [{f['kind']}]" for f in findings)


@pytest.mark.engine
def test_actionlint_finds_nothing_in_the_workflows(actionlint):
    files = sorted([*WORKFLOWS.glob("*.yml"), *WORKFLOWS.glob("*.yaml")])
    assert files, "no workflow in .github/workflows"
    findings = run_actionlint(actionlint, files, ROOT)
    assert not findings, "actionlint:\n" + _show(findings)


# Each planted mistake: a fragment of the message actionlint must report, and the line it must report it on.
BROKEN_WORKFLOW = """\
name: broken
on:
  pull_request:
jobs:
  preview:
    runs-on: ubuntu-latestt
    strategy:
      matrix:
        stack: [dev]
    steps:
      - uses: actions/checkout@v5
        with:
          fetch-dept: 0
      - uses: pulumi/actions@v7
        with:
          command: preview
          stack-nam: dev
      - run: echo "${{ matrix.nope }}"
      - run: echo "${{ github.event.pull_request.title }}"
      - run: |
          out=$(ls)
          echo $out
  comment:
    needs: [previeww]
    runs-on: ubuntu-24.04
    steps:
      - run: echo finished
"""
PLANTED = {
    'label "ubuntu-latestt" is unknown': 6,
    'input "fetch-dept" is not defined in action "actions/checkout@v5"': 13,
    'input "stack-nam" is not defined in action "pulumi/actions@v7"': 17,
    'property "nope" is not defined': 18,
    '"github.event.pull_request.title" is potentially untrusted': 19,
    'needs job "previeww" which does not exist': 23,
}
SHELLCHECK_PLANTED = ("SC2086", 22)  # `echo $out`: unquoted expansion


@pytest.mark.engine
def test_actionlint_catches_a_broken_workflow(actionlint, tmp_path):
    workflow = tmp_path / "broken.yml"
    workflow.write_text(BROKEN_WORKFLOW)
    findings = run_actionlint(actionlint, [workflow], tmp_path)
    report = _show(findings)
    for fragment, line in PLANTED.items():
        assert any(fragment in f["message"] and f["line"] == line for f in findings), (
            f"actionlint missed {fragment!r} on line {line}:\n{report}"
        )

    # actionlint runs ShellCheck on each `run:` script when it is on PATH (.ci/run installs it).
    if shutil.which("shellcheck") is None:
        if REQUIRE_ENGINES:
            pytest.fail("shellcheck is not installed, and EGRESS_REQUIRE_ENGINES is set")
        pytest.skip("shellcheck is not installed: actionlint's shellcheck integration is not exercised")
    code, line = SHELLCHECK_PLANTED
    assert any(f["kind"] == "shellcheck" and code in f["message"] and f["line"] == line for f in findings), (
        f"actionlint did not report ShellCheck's {code} on line {line}:\n{report}"
    )


# --- structure ---------------------------------------------------------------------------------------------------


def load(name: str) -> dict:
    workflow = yaml.safe_load((WORKFLOWS / name).read_text())
    # YAML 1.1 reads the key `on` as the boolean true.
    if True in workflow:
        workflow["on"] = workflow.pop(True)
    return workflow


def all_workflows() -> dict[str, dict]:
    return {p.name: load(p.name) for p in sorted(WORKFLOWS.glob("*.y*ml"))}


def steps_using(job: dict, action: str) -> list[dict]:
    return [s for s in job.get("steps", []) if s.get("uses", "").split("@")[0] == action]


def the_step_using(job: dict, uses: str) -> dict:
    steps = [s for s in job.get("steps", []) if s.get("uses") == uses]
    assert len(steps) == 1, f"expected one step using {uses}, found {len(steps)}"
    return steps[0]


def matrix_stacks(job: dict) -> list[str]:
    return job["strategy"]["matrix"]["stack"]


def test_stacks_exist():
    assert len(STACKS) >= 2 and "dev" in STACKS, STACKS


def test_every_action_is_pinned_to_a_major_version():
    for name, workflow in all_workflows().items():
        for job_id, job in workflow["jobs"].items():
            for step in job.get("steps", []):
                if "uses" in step:
                    assert re.fullmatch(r"[\w.-]+/[\w./-]+@v\d+", step["uses"]), (name, job_id, step["uses"])


def test_no_expression_is_interpolated_into_a_script():
    # Values reach `run:` scripts through env; a ${{ }} inside a script is pasted into the shell unquoted.
    for name, workflow in all_workflows().items():
        for job_id, job in workflow["jobs"].items():
            for step in job.get("steps", []):
                assert "${{" not in step.get("run", ""), (name, job_id, step.get("name"), step["run"])
                if step.get("uses", "").startswith("actions/github-script@"):
                    assert "${{" not in step["with"]["script"], (name, job_id, step.get("name"))


def test_pull_request_preview_runs_pulumi_with_the_policy_pack():
    workflow = load("pulumi-preview.yml")
    assert "pull_request" in workflow["on"]
    assert "pull_request_target" not in workflow["on"]  # it would hand secrets to the PR's code
    (job,) = workflow["jobs"].values()
    assert sorted(matrix_stacks(job)) == STACKS
    assert job["strategy"]["fail-fast"] is False
    assert job["permissions"] == {"contents": "read", "pull-requests": "write", "id-token": "write"}
    assert "github.event.pull_request.number" in job["concurrency"]["group"]
    assert "matrix.stack" in job["concurrency"]["group"]
    assert job["env"]["PULUMI_ACCESS_TOKEN"] == "${{ secrets.PULUMI_ACCESS_TOKEN }}"

    setup = the_step_using(job, "actions/setup-python@v6")
    assert str(setup["with"]["python-version"]) == "3.11"
    assert any("-r requirements.txt" in s.get("run", "") for s in job["steps"])

    pulumi = the_step_using(job, "pulumi/actions@v7")["with"]
    assert pulumi["command"] == "preview"
    assert "matrix.stack" in pulumi["stack-name"]
    assert pulumi["comment-on-pr"] is True
    assert pulumi["policyPacks"] == "policy"
    assert pulumi["policyPackConfigs"] == "policy/config/default.json"
    assert pulumi["diff"] is True
    assert pulumi["suppress-outputs"] is True


def test_deployment_runs_pulumi_up_with_the_policy_pack_per_stack_environment():
    workflow = load("pulumi-up.yml")
    assert workflow["on"]["push"]["branches"] == ["main"]
    dispatch_input = workflow["on"]["workflow_dispatch"]["inputs"]["stack"]
    assert dispatch_input["type"] == "choice"
    assert sorted(dispatch_input["options"]) == STACKS

    (job,) = workflow["jobs"].values()
    assert job["environment"] == "${{ matrix.stack }}"  # reviewers of the stack's environment gate its update
    assert job["concurrency"] == {"group": "pulumi-up-${{ matrix.stack }}", "cancel-in-progress": False}
    assert job["permissions"]["id-token"] == "write"
    # The matrix is the chosen stack on a manual run and this JSON list on a push.
    expression = job["strategy"]["matrix"]["stack"]
    assert "inputs.stack" in expression
    (push_list,) = re.findall(r"'(\[\s*\"[^']*\])'", expression)
    assert sorted(json.loads(push_list)) == STACKS

    pulumi = the_step_using(job, "pulumi/actions@v7")["with"]
    assert pulumi["command"] == "up"
    assert "matrix.stack" in pulumi["stack-name"]
    assert pulumi["policyPacks"] == "policy"
    assert pulumi["policyPackConfigs"] == "policy/config/default.json"


def test_offline_checks_test_preview_every_stack_and_comment_diffs():
    workflow = load("offline-checks.yml")
    assert "pull_request" in workflow["on"] and workflow["on"]["push"]["branches"] == ["main"]
    jobs = workflow["jobs"]

    assert any(s.get("run") == ".ci/run" for s in jobs["tests"]["steps"])

    preview = jobs["preview"]
    assert sorted(matrix_stacks(preview)) == STACKS
    (run,) = [s for s in preview["steps"] if "egress preview" in s.get("run", "")]
    assert run["run"] == 'python3 dev.py egress preview --stack "$STACK" --out "out/$STACK"'
    assert run["env"]["STACK"] == "${{ matrix.stack }}"
    (upload,) = steps_using(preview, "actions/upload-artifact")
    assert upload["with"]["path"] == "out/${{ matrix.stack }}"

    diff = jobs["diff"]
    assert diff["if"] == "github.event_name == 'pull_request'"
    assert sorted(matrix_stacks(diff)) == STACKS
    (checkout,) = steps_using(diff, "actions/checkout")
    assert checkout["with"]["fetch-depth"] == 0
    (run,) = [s for s in diff["steps"] if "egress diff" in s.get("run", "")]
    assert 'egress diff --base "origin/$BASE_REF" --stack "$STACK" > "out/diff/$STACK.md"' in run["run"]
    assert run["env"] == {"BASE_REF": "${{ github.base_ref }}", "STACK": "${{ matrix.stack }}"}
    assert diff["permissions"]["pull-requests"] == "write"
    (comment,) = steps_using(diff, "actions/github-script")
    script = comment["with"]["script"]
    assert "<!-- egress-diff:${stack} -->" in script and "process.env.STACK" in script
    assert "updateComment" in script and "createComment" in script
