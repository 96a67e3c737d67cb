"""The GitHub Actions workflows in .github/workflows.

actionlint (installed by .ci/run into .tools/actionlint, pinned) must find nothing in them, and must find each of
the mistakes planted in a broken workflow, so the first check cannot pass because the linter checks nothing. The
structural tests pin what the workflows are for: the PR preview and the deployment run pulumi/actions with the
CrossGuard pack in policy/, and every workflow that works per stack takes its matrix from its `stacks` job (`egress
stacks`), so a new stacks/Pulumi.<name>.yaml needs no workflow edit (tests/test_fleet_workflows.py adds one). The safety tests (tests/workflow_checks.py and
tests/gate_checks.py, each also run on planted mistakes): actions pinned by commit, no checkout keeping its token, the PR preview in its own
environment with read-only PREVIEW_* credentials, non-production stacks deployed before production ones, every
update right after a successful preview of the same stack and pack, and both virtualenvs installed from hashed locks
that agree with pyproject.toml (docs/CI.md). The policy gate (issue 18): the PR preview and the gate before each update
run the CLI's `pulumi preview --event-log` and `egress policy-events` on it (a mandatory policy that could not run
passes the engine's preview), and every check a pull request runs has its own name, each listed in docs/CI.md's
"Required checks".
"""
from __future__ import annotations

import copy
import json
import os
import re
import runpy
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from gate_checks import commands, gate_problems, script_problems
from workflow_checks import (
    DEPLOY_JOBS,
    PINNED,
    PINS,
    check_names,
    checkout_problems,
    install_problems,
    load,
    lock_entries,
    lock_problems,
    lock_requirements,
    order_problems,
    parse_workflow,
    pin_problems,
    pr_gate_problems,
    preview_problems,
    pull_request_secret_problems,
    run_setup,
    fleet_tree,
    setup_script,
    steps,
    target_python,
    workflow_files,
)

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


def all_workflows() -> dict[str, dict]:
    return {p.name: load(p.name) for p in workflow_files()}


def steps_using(job: dict, action: str) -> list[dict]:
    return [s for s in job.get("steps", []) if s.get("uses", "").split("@")[0] == action]


def the_step_using(job: dict, action: str) -> dict:
    found = steps_using(job, action)
    assert len(found) == 1, f"expected one step using {action}, found {len(found)}"
    return found[0]


def matrix_stacks(job: dict) -> list[str]:
    return job["strategy"]["matrix"]["stack"]


FROM_STACKS_JOB = "${{ fromJSON(needs.stacks.outputs.stacks) }}"


def the_install_script(job: dict) -> str:
    (step,) = [s for s in job["steps"] if s.get("name") == "Python dependencies (hashed locks)"]
    return step["run"]


def test_stacks_exist():
    assert len(STACKS) >= 2 and "dev" in STACKS, STACKS


def test_no_expression_is_interpolated_into_a_script():
    # Values reach `run:` scripts through env; a ${{ }} inside a script is pasted into the shell unquoted.
    for name, workflow in all_workflows().items():
        for job_id, job in workflow["jobs"].items():
            for step in job.get("steps", []):
                assert "${{" not in step.get("run", ""), (name, job_id, step.get("name"), step["run"])
                if step.get("uses", "").startswith("actions/github-script@"):
                    assert "${{" not in step["with"]["script"], (name, job_id, step.get("name"))


def the_step_named(job: dict, name: str) -> dict:
    (step,) = [s for s in job["steps"] if s.get("name") == name]
    return step


def test_pull_request_preview_runs_pulumi_with_the_policy_pack_and_the_gate():
    workflow = load("pulumi-preview.yml")
    assert "pull_request" in workflow["on"]
    assert "pull_request_target" not in workflow["on"]  # it would hand secrets to the PR's code
    assert set(workflow["jobs"]) == {"stacks", "preview"}
    job = workflow["jobs"]["preview"]
    assert matrix_stacks(job) == FROM_STACKS_JOB and job["needs"] == "stacks"
    assert workflow["jobs"]["stacks"]["if"] == job["if"]  # a fork's PR: neither runs
    assert job["strategy"]["fail-fast"] is False
    assert job["permissions"] == {"contents": "read", "pull-requests": "write", "id-token": "write"}
    assert "github.event.pull_request.number" in job["concurrency"]["group"]
    assert "matrix.stack" in job["concurrency"]["group"]

    # pulumi/actions only installs the CLI: its preview deletes the event log the gate reads.
    assert the_step_using(job, "pulumi/actions")["with"] == {"pulumi-version": "3.272.0"}
    preview = the_step_named(job, "pulumi preview")
    assert preview["env"]["PULUMI_ACCESS_TOKEN"] == "${{ secrets.PREVIEW_PULUMI_ACCESS_TOKEN }}"
    assert "matrix.stack" in preview["env"]["STACK"]
    assert preview["env"]["POLICY_PACK"] == "policy"
    assert preview["env"]["POLICY_PACK_CONFIG"] == "policy/config/default.json"
    command = next(c for c in commands(preview["run"]) if c.startswith("pulumi preview"))
    for flag in ("--diff", "--suppress-outputs", "--non-interactive", "--color never"):  # never the outputs: every reader sees them
        assert flag in command.split(" 2>&1")[0], flag
    assert pr_gate_problems(workflow) == []

    # The comment is posted (edited in place) before the last step fails the job, whatever the codes.
    comment = the_step_using(job, "actions/github-script")
    script = comment["with"]["script"]
    assert "<!-- pulumi-preview:${stack} -->" in script and "updateComment" in script and "createComment" in script
    assert "policy-gate.txt" in script and "pulumi-preview.txt" in script and ".replace(/</g" in script
    assert job["steps"].index(comment) == len(job["steps"]) - 2 and "if" not in comment


def test_pr_gate_check_catches_a_preview_the_gate_cannot_judge():
    pristine = load("pulumi-preview.yml")

    def planted(change) -> list[str]:
        workflow = copy.deepcopy(pristine)
        job = workflow["jobs"]["preview"]
        change(job["steps"], the_step_named(job, "pulumi preview"), the_step_named(job, "Policy gate (egress policy-events)"))
        return pr_gate_problems(workflow)

    where = "pulumi-preview.yml: job preview"
    # The preview before this issue: pulumi/actions' own, whose event log is gone; no gate.
    def actions_preview(steps, preview, gate):
        steps.remove(gate)
        steps.remove(preview)
        steps[steps.index(next(s for s in steps if s.get("uses", "").startswith("pulumi/actions@")))]["with"]["command"] = "preview"
    assert planted(actions_preview) == [
        f"{where}: pulumi/actions runs 'preview': its event log is deleted, so the policy gate cannot judge it (install the CLI only, "
        "and run it)",
        f"{where}: 0 step(s) run pulumi preview with the event log and 0 run egress policy-events on it; expected one each"]
    # A preview without --event-log, and a gate that reads another file or config, holds a secret, or ignores its result.
    assert planted(lambda steps, preview, gate: preview.update(run=preview["run"].replace('--event-log "$EVENT_LOG" ', ""))) == [
        f"{where}: 0 step(s) run pulumi preview with the event log and 1 run egress policy-events on it; expected one each"]
    assert planted(lambda steps, preview, gate: gate.update(run=gate["run"].replace("|| code=$?", "|| true"))) == [
        f"{where}: 1 step(s) run pulumi preview with the event log and 0 run egress policy-events on it; expected one each"]
    def other_log(steps, preview, gate):
        gate["env"] = {**gate["env"], "EVENT_LOG": "events.jsonl", "POLICY_PACK_CONFIG": "advisory.json",
                       "T": "${{ secrets.PREVIEW_PULUMI_ACCESS_TOKEN }}"}
    assert planted(other_log) == [
        f"{where}: the policy gate reads EVENT_LOG='events.jsonl', the preview wrote '${{{{ runner.temp }}}}/pulumi-events.jsonl'",
        f"{where}: the policy gate reads POLICY_PACK_CONFIG='advisory.json', the preview wrote 'policy/config/default.json'",
        f"{where}: the policy gate step reads a secret (it needs none)"]
    assert planted(lambda steps, preview, gate: gate.update(run=gate["run"].replace('echo "code=$code"', 'echo "code=0"'))) == [
        f'{where}: the policy gate step must have an id, start with code=0 and record echo "code=$code" >> "$GITHUB_OUTPUT"']
    # The last step fails the job on the preview's code only: a mandatory policy that could not run would pass.
    assert planted(lambda steps, preview, gate: steps[-1].update({"if": "steps.preview.outputs.code != '0'"})) == [
        f"{where}: the last step must fail the job when either code is not 0 (if: steps.gate.outputs.code != '0' || "
        "steps.preview.outputs.code != '0'; it has \"steps.preview.outputs.code != '0'\")"]
    assert planted(lambda steps, preview, gate: steps.insert(steps.index(preview), steps.pop(steps.index(gate)))) == [
        f"{where}: the policy gate runs before the preview"]


def test_deployment_runs_pulumi_up_with_the_policy_pack_per_stack_environment():
    workflow = load("pulumi-up.yml")
    assert workflow["on"]["push"]["branches"] == ["main"]
    dispatch_input = workflow["on"]["workflow_dispatch"]["inputs"]["stack"]
    # Any stack's name: the stacks job refuses one that has no file (tests/test_fleet_workflows.py), so no list to keep.
    assert dispatch_input["type"] == "string" and dispatch_input["required"] is True
    assert "inputs.stack" in json.dumps(workflow["jobs"]["stacks"])

    for job_id in DEPLOY_JOBS:
        job = workflow["jobs"][job_id]
        assert job["environment"] == "${{ matrix.stack }}", job_id  # the stack's environment's reviewers gate it
        # One update per lock: the stack's own, or the one it shares with every stack on its Azure policy.
        assert job["concurrency"] == {"group": "egress-policy-${{ matrix.lock }}", "cancel-in-progress": False}
        assert job["permissions"] == {"contents": "read", "id-token": "write"}
        assert job["strategy"]["matrix"]["include"] == f"${{{{ fromJSON(needs.stacks.outputs.{DEPLOY_JOBS[job_id]}) }}}}"
        # The CLI, then the update (the preview and policy gate between them, checked in
        # test_every_update_runs_right_after_a_successful_preview, is the CLI's).
        assert [s["with"].get("command") for s in steps_using(job, "pulumi/actions")] == [None, "up"], job_id
        pulumi_step = steps_using(job, "pulumi/actions")[1]
        assert pulumi_step["env"]["PULUMI_ACCESS_TOKEN"] == "${{ secrets.PULUMI_ACCESS_TOKEN }}"
        pulumi = pulumi_step["with"]
        assert "matrix.stack" in pulumi["stack-name"]
        assert pulumi["policyPacks"] == "policy"
        assert pulumi["policyPackConfigs"] == "policy/config/default.json"
        # No cache restored into a job that holds deployment credentials.
        assert "cache" not in the_step_using(job, "actions/setup-python")["with"]


def test_offline_checks_test_preview_every_stack_and_comment_diffs():
    workflow = load("offline-checks.yml")
    assert "pull_request" in workflow["on"] and workflow["on"]["push"]["branches"] == ["main"]
    jobs = workflow["jobs"]

    assert any(s.get("run") == ".ci/run" for s in jobs["tests"]["steps"])

    preview = jobs["preview"]
    assert matrix_stacks(preview) == FROM_STACKS_JOB and preview["needs"] == "stacks"
    assert "python3 dev.py egress stacks check" in setup_script(workflow)  # overlapping bands fail the required check `stacks`
    (run,) = [s for s in preview["steps"] if "egress preview" in s.get("run", "")]
    assert run["run"] == 'python3 dev.py egress preview --stack "$STACK" --out "out/$STACK"'
    assert run["env"]["STACK"] == "${{ matrix.stack }}"
    (upload,) = steps_using(preview, "actions/upload-artifact")
    assert upload["with"]["path"] == "out/${{ matrix.stack }}"

    diff = jobs["diff"]
    assert diff["if"] == "github.event_name == 'pull_request'"
    assert matrix_stacks(diff) == FROM_STACKS_JOB and diff["needs"] == "stacks"
    (checkout,) = steps_using(diff, "actions/checkout")
    assert checkout["with"]["fetch-depth"] == 0
    (run,) = [s for s in diff["steps"] if "egress diff" in s.get("run", "")]
    assert 'egress diff --base "origin/$BASE_REF" --stack "$STACK" > "out/diff/$STACK.md" || code=$?' in run["run"]
    # A danger to production fails the check, after the comment that names it was posted.
    assert diff["steps"][-1]["if"] == "steps.diff.outputs.code != '0'" and "exit 1" in diff["steps"][-1]["run"] and run["id"] == "diff"
    assert run["env"] == {"BASE_REF": "${{ github.base_ref }}", "STACK": "${{ matrix.stack }}"}
    assert diff["permissions"]["pull-requests"] == "write"
    (comment,) = steps_using(diff, "actions/github-script")
    script = comment["with"]["script"]
    assert "<!-- egress-diff:${stack} -->" in script and "process.env.STACK" in script
    assert "updateComment" in script and "createComment" in script


# --- safety: pins, tokens, credentials, order (issue 17, items 11 and 12) -----------------------------------------


def test_every_action_is_pinned_to_a_commit_with_declared_inputs():
    for path in workflow_files():
        assert pin_problems(path.name, path.read_text()) == []
    used = {PINNED.fullmatch(step["uses"])["action"] for workflow in all_workflows().values()
            for _, step in steps(workflow) if not step.get("uses", "./").startswith("./")}
    assert sorted(PINS) == sorted(used), "tests/data/pinned_actions.json and the workflows name different actions"


PLANTED_PINS = f"""\
name: planted
on: push
jobs:
  a:
    runs-on: ubuntu-24.04
    steps:
      - uses: actions/checkout@v5
      - uses: actions/checkout@{'0' * 40} # v5.1.0
      - uses: actions/checkout@{PINS['actions/checkout']['commit']} # v5.0.0
      - uses: actions/checkout@{PINS['actions/checkout']['commit']}
      - uses: someone/else@{'a' * 40} # v1.0.0
      - uses: actions/checkout@{PINS['actions/checkout']['commit']} # v5.1.0
        with:
          fetch-dept: 0
      - uses: actions/github-script@{PINS['actions/github-script']['commit']} # v8.0.0
"""


def test_pin_check_catches_tags_unknown_commits_and_undeclared_inputs():
    commit = PINS["actions/checkout"]["commit"]
    assert pin_problems("planted.yml", PLANTED_PINS) == [
        "planted.yml:7: actions/checkout@v5 is not pinned to a full commit SHA",
        f"planted.yml:8: actions/checkout@{'0' * 40} is not the pinned commit of v5.1.0",
        "planted.yml:9: actions/checkout needs the trailing comment '# v5.1.0'",
        "planted.yml:10: actions/checkout needs the trailing comment '# v5.1.0'",
        "planted.yml:11: someone/else is not in tests/data/pinned_actions.json",
        "planted.yml: job a: actions/checkout has no input 'fetch-dept'",
        "planted.yml: job a: actions/github-script needs the input 'script'",
    ], commit


def test_no_checkout_keeps_its_token():
    for name, workflow in all_workflows().items():
        assert checkout_problems(name, workflow) == []
    planted = parse_workflow(PLANTED_PINS.replace("fetch-dept: 0", "persist-credentials: true"))
    assert len(checkout_problems("planted.yml", planted)) == 5  # the five checkouts without persist-credentials: false


def test_preview_runs_in_its_own_environment_with_read_only_credentials():
    preview, up = load("pulumi-preview.yml"), load("pulumi-up.yml")
    assert preview_problems(preview, up) == []
    for name, workflow in all_workflows().items():
        assert pull_request_secret_problems(name, workflow) == []


def test_preview_check_catches_production_credentials_and_a_missing_environment():
    preview, up = load("pulumi-preview.yml"), load("pulumi-up.yml")
    job = preview["jobs"]["preview"]
    job.pop("environment")
    the_step_named(job, "pulumi preview")["env"]["PULUMI_ACCESS_TOKEN"] = "${{ secrets.PULUMI_ACCESS_TOKEN }}"
    job["steps"].append({"run": "true", "env": {"K": "${{ secrets.KUBE_TOKEN }}"}})
    preview["env"] = {"T": "${{ secrets.PREVIEW_PULUMI_ACCESS_TOKEN }}"}
    preview["jobs"]["stacks"]["permissions"] = {"contents": "read", "id-token": "write"}  # the stacks job with an OIDC token
    assert preview_problems(preview, up) == [
        "pulumi-preview.yml: workflow-level env reads a secret (every job would get it)",
        "pulumi-preview.yml: job stacks runs in environment None, not 'preview'",
        "pulumi-preview.yml: job preview runs in environment None, not 'preview'",
        "pulumi-preview.yml reads secrets.KUBE_TOKEN: preview credentials are named PREVIEW_*",
        "pulumi-preview.yml reads the deployment's secrets.PULUMI_ACCESS_TOKEN",
    ]
    assert pull_request_secret_problems("pulumi-preview.yml", preview) == [
        "pulumi-preview.yml: a pull request's workflow reads secrets.KUBE_TOKEN",
        "pulumi-preview.yml: a pull request's workflow reads secrets.PULUMI_ACCESS_TOKEN",
    ]


def test_deployment_updates_non_production_stacks_first():
    assert order_problems(load("pulumi-up.yml")) == []


def test_order_check_catches_production_first_all_at_once_or_no_lock():
    up = load("pulumi-up.yml")
    up["jobs"]["production"].pop("needs")
    up["jobs"]["production-shared-policy"]["if"] = "github.event_name == 'push'"
    assert order_problems(up) == [
        "production job does not need the stacks job",
        "production job does not need the non-production job: it would start at the same time",
        "production-shared-policy job does not wait for the non-production updates to succeed",
    ]
    # A production stack updated first, no fleet check, the shared-policy stacks all at once, a concurrency group per stack.
    up = load("pulumi-up.yml")
    (step,) = [s for s in up["jobs"]["stacks"]["steps"] if "egress stacks" in s.get("run", "")]
    step["run"] = step["run"].replace("--first dev", "--first dev --first aks-public").replace("python3 dev.py egress stacks check\n", "")
    up["jobs"]["production-shared-policy"]["strategy"].pop("max-parallel")
    up["jobs"]["production"]["concurrency"]["group"] = "pulumi-up-${{ matrix.stack }}"
    up["jobs"]["production"]["strategy"]["matrix"] = {"stack": "${{ fromJSON(needs.stacks.outputs.stacks) }}"}
    assert order_problems(up) == [
        "pulumi-up.yml: the stacks job does not run `egress stacks check` (overlapping bands would deploy)",
        "pulumi-up.yml: the stacks job updates ['dev', 'aks-public'] first, expected ['dev']",
        "production job: its matrix is not the stacks job's 'parallel' list",
        "production job: its concurrency group is not its stack's lock (egress-policy-${{ matrix.lock }})",
        "production-shared-policy job: not one stack at a time (max-parallel: 1): GitHub cancels all but one pending job of a group",
    ]
    # One job updating every stack at once (the workflow before issue 17).
    assert order_problems({"jobs": {"up": up["jobs"]["production"]}}) == [
        "pulumi-up.yml: jobs ['up'], expected ['non-production', 'production', 'production-shared-policy', 'stacks']"]


# --- preview before update (issue 17) ---------------------------------------------------------------------------


def test_every_update_runs_right_after_a_successful_preview_and_policy_gate():
    # pulumi/actions' `up` skips the preview; only a preview refuses a protected delete before anything changes, and only
    # the policy gate on its event log fails a mandatory policy that could not run.
    up = load("pulumi-up.yml")
    assert gate_problems(up) == []
    for job_id in DEPLOY_JOBS:
        job = up["jobs"][job_id]
        update = steps_using(job, "pulumi/actions")[-1]
        preview = job["steps"][job["steps"].index(update) - 1]
        assert preview["id"] == "preview" and update["if"] == "steps.preview.outcome == 'success'", job_id
        assert preview["env"]["EVENT_LOG"] == "${{ runner.temp }}/pulumi-events.jsonl"
        assert script_problems(preview["run"]) == []


def test_gate_check_catches_an_ungated_or_mismatched_update():
    up = load("pulumi-up.yml")
    pristine = copy.deepcopy(up["jobs"]["production"])  # both jobs share one steps list (a YAML anchor): copy it

    def planted(change) -> list[str]:
        job = copy.deepcopy(pristine)
        update = [s for s in job["steps"] if s.get("uses", "").startswith("pulumi/actions@")][-1]
        change(job["steps"], job["steps"][job["steps"].index(update) - 1], update)
        return gate_problems({"jobs": {"production": job}})

    where = "pulumi-up.yml: job production: pulumi up"
    n = len(pristine["steps"])  # the update is the last step
    # The workflow before issue 17's gate: `up` alone (pulumi/actions runs it with --skip-preview).
    def no_preview(steps, preview, update):
        steps.remove(preview)
        update.pop("if")
    assert planted(no_preview) == [f"{where} (step {n - 1}) is not right after the step that runs pulumi preview and the policy gate"]
    # Issue 17's gate: pulumi/actions' preview, whose event log is deleted: a mandatory policy that could not run passed.
    def actions_preview(steps, preview, update):
        steps[steps.index(preview)] = {"name": "pulumi preview (gate)", "id": "preview", "uses": update["uses"], "env": update["env"],
                                       "with": {**update["with"], "command": "preview"}}
    assert planted(actions_preview) == [f"{where} (step {n}) is not right after the step that runs pulumi preview and the policy gate"]
    # A preview whose event log nobody judges, or whose judgement does not fail the step.
    assert planted(lambda steps, preview, update: preview.update(run="\n".join(
        c for c in preview["run"].splitlines() if not c.startswith("egress policy-events")))) == [
        f"{where} (step {n}): the preview before it: it runs no `egress policy-events \"$EVENT_LOG\" --policy-pack-config "
        "\"$POLICY_PACK_CONFIG\" ... || code=1` after the preview: a mandatory policy that could not run would pass"]
    assert planted(lambda steps, preview, update: preview.update(run=preview["run"].replace('exit "$code"', "exit 0"))) == [
        f"{where} (step {n}): the preview before it: it does not start with code=0 and end with exit \"$code\": a failure would not "
        "fail the step"]
    assert planted(lambda steps, preview, update: preview.update(run=preview["run"].replace("|| code=1", "|| code=1\nfalse || true"))) == [
        f"{where} (step {n}): the preview before it: it ignores a failure (|| true, || :, set +e)"]
    assert planted(lambda steps, preview, update: preview.update(run=preview["run"].replace('--event-log "$EVENT_LOG" ', ""))) == [
        f"{where} (step {n}): the preview before it: it runs no `pulumi preview --stack \"$STACK\" --policy-pack \"$POLICY_PACK\" "
        "--policy-pack-config \"$POLICY_PACK_CONFIG\" --event-log \"$EVENT_LOG\" ... || code=$?`"]
    # A preview the update does not wait for, or that a failure does not stop.
    assert planted(lambda steps, preview, update: update.pop("if")) == [
        f"{where} (step {n}) does not run only if the preview succeeded (if: steps.preview.outcome == 'success'; it has None)"]
    assert planted(lambda steps, preview, update: update.update({"if": "${{ always() && steps.preview.outcome == 'success' }}"})) == [
        f"{where} (step {n}) does not run only if the preview succeeded (if: steps.preview.outcome == 'success'; "
        "it has \"${{ always() && steps.preview.outcome == 'success' }}\")"]
    assert planted(lambda steps, preview, update: preview.pop("id")) == [
        f"{where} (step {n}): the preview before it has no id, so the update cannot test its outcome"]
    # A preview of something else: another stack, another pack config, other credentials; an update that does more.
    def other_stack(steps, preview, update):
        preview["env"] = {**preview["env"], "STACK": "dev", "POLICY_PACK_CONFIG": "advisory.json"}
        update["with"]["refresh"] = True
    assert planted(other_stack) == [
        f"{where} (step {n}): the preview before it has STACK='dev', the update stack-name="
        f"{update_with(pristine)['stack-name']!r}",
        f"{where} (step {n}): the preview before it has POLICY_PACK_CONFIG='advisory.json', the update "
        "policyPackConfigs='policy/config/default.json'",
        f"{where} (step {n}) sets refresh, which the preview before it does not: it would do what the preview did not judge",
        f"{where} (step {n}): the preview before it runs with a different env",
    ]
    # A step between the preview and the update (it could change the checkout the update runs).
    assert planted(lambda steps, preview, update: steps.insert(n - 1, {"run": "git checkout -"})) == [
        f"{where} (step {n + 1}) is not right after the step that runs pulumi preview and the policy gate"]
    # A failed update that counts as a success (production would follow it).
    assert planted(lambda steps, preview, update: update.update({"continue-on-error": True})) == [
        f"{where} (step {n}) is continue-on-error: a failed update would let the job succeed"]
    # Destroy and the CLI run by a script need the gate too (the alias `update`, still gated, passes).
    def others(steps, preview, update):
        update["with"]["command"] = "update"
        steps.append({"uses": update["uses"], "with": {**update["with"], "command": "destroy"}})
        steps.append({"run": "pulumi up --yes --stack dev"})
    assert planted(others) == [
        f"pulumi-up.yml: job production: pulumi destroy (step {n + 1}) is not right after the step that runs pulumi preview and the "
        "policy gate",
        f"pulumi-up.yml: job production: step {n + 2} runs the pulumi CLI's up/destroy outside the gated step",
    ]


def update_with(job: dict) -> dict:
    return steps_using(job, "pulumi/actions")[-1]["with"]


# --- required checks (issue 18) ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, str]:
    """What the offline checks' `stacks` job writes to $GITHUB_OUTPUT for this project (its stacks)."""
    return run_setup(fleet_tree(tmp_path_factory.mktemp("fleet")), "offline-checks.yml")


def test_the_stacks_job_lists_every_stack(outputs):
    assert json.loads(outputs["stacks"]) == STACKS


def test_every_pull_request_check_has_its_own_name(outputs):
    # Branch protection requires checks by name: two jobs of one name would let either satisfy the other's requirement.
    names = check_names(all_workflows(), outputs)
    assert {name: jobs for name, jobs in names.items() if len(jobs) > 1} == {}
    planted = all_workflows()
    planted["pulumi-preview.yml"]["jobs"]["preview"]["name"] = "preview (${{ matrix.stack }})"
    assert sorted(name for name, jobs in check_names(planted, outputs).items() if len(jobs) > 1) == [f"preview ({s})" for s in STACKS]


def test_docs_name_the_required_checks_the_workflows_run(outputs):
    # docs/CI.md's list is what a maintainer copies into branch protection: every check a pull request runs that can
    # fail on a broken change, exactly as GitHub names it.
    text = (ROOT / "docs" / "CI.md").read_text()
    section = text[text.index("## Required checks"):]
    section = section[:section.index("\n## ", 1)] if "\n## " in section[1:] else section
    required = re.findall(r"^- `([^`]+)`", section, re.M)
    not_required = re.findall(r"`([^`]+)`", re.search(r"^Not required: (.*)$", section, re.M)[1])
    expanded = [check for name in required for check in ([name.replace("<stack>", s) for s in STACKS] if "<stack>" in name else [name])]
    assert "pulumi preview (<stack>)" in required and "preview-artifact" not in required
    assert sorted(expanded + not_required) == sorted(check_names(all_workflows(), outputs))


# --- hashed locks --------------------------------------------------------------------------------------------------


def test_locks_pin_every_package_with_hashes_within_pyprojects_ranges():
    for name, requirements in lock_requirements().items():
        assert lock_problems(name, (ROOT / name).read_text(), requirements) == []


def test_lock_check_catches_a_missing_hash_a_range_and_a_missing_dependency():
    text = (ROOT / "requirements.txt").read_text()
    sha = re.search(r"--hash=sha256:[0-9a-f]{64}", text)[0]
    pyyaml = lock_entries(text)[0]["pyyaml"][0]
    planted = re.sub(r"(?m)^pydantic==\S+", "pydantic==1.10.0", text)  # outside pydantic>=2.7,<3
    planted = re.sub(r"(?m)^(pyyaml==\S+) \\\n(?:\s+--hash=\S+ \\\n)*\s+--hash=\S+\n", r"\1\n", planted)  # no hash
    planted = re.sub(r"(?m)^typer==.*\n(?:\s+--hash=.*\n)*", "", planted)  # gone
    planted += f"rich>=13 {sha}\n-e .\n"  # a range, and an editable directory: neither can be hash-checked
    assert lock_problems("requirements.txt", planted, lock_requirements()["requirements.txt"]) == [
        f"requirements.txt: pyyaml=={pyyaml} has no hash",
        f"requirements.txt: not an exact, hashed pin: {('rich>=13 ' + sha)[:80]!r}",
        "requirements.txt: not an exact, hashed pin: '-e .'",
        "requirements.txt: pydantic==1.10.0 is outside pyproject's 'pydantic>=2.7,<3'",
        "requirements.txt: pyproject's 'typer>=0.12,<1' is not locked",
    ]


def test_locks_agree_with_each_other_and_target_the_workflows_python():
    locks = {name: lock_entries((ROOT / name).read_text())[0] for name in lock_requirements()}
    program = locks.pop("requirements.txt")
    for name, entries in locks.items():
        assert {k: v[0] for k, v in entries.items() if program[k][0] != v[0]} == {}, name
    tools_lock = runpy.run_path(str(ROOT / "tools" / "lock.py"), run_name="lock")
    assert tools_lock["TARGET_PYTHON"] == target_python()
    for name in ("pulumi-preview.yml", "pulumi-up.yml"):
        for job in load(name)["jobs"].values():
            assert str(the_step_using(job, "actions/setup-python")["with"]["python-version"]) == target_python(), name
            assert job["runs-on"].startswith("ubuntu-"), name  # Linux x86_64, as locked
            # The Pulumi CLI is the release of the locked SDK: a CLI release changes diffs like a provider's.
            for step in steps_using(job, "pulumi/actions"):
                assert step["with"]["pulumi-version"] == program["pulumi"][0], name


def test_both_venvs_are_installed_from_the_hashed_locks():
    scripts = {name: [the_install_script(job) for job_id, job in load(name)["jobs"].items() if job_id != "stacks"]
               for name in ("pulumi-preview.yml", "pulumi-up.yml")}
    (script,) = {s for found in scripts.values() for s in found}  # one install script, the same in every job
    assert install_problems("pulumi-preview.yml", script) == []
    # What Pulumi itself installs (pulumi install, or a missing venv): requirements.txt for .venv (Pulumi.yaml) and
    # policy/requirements.txt for policy/venv (PulumiPolicy.yaml) are the hashed locks, so pip checks them too.
    assert yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["runtime"]["options"] == {"toolchain": "pip", "virtualenv": ".venv"}
    assert yaml.safe_load((ROOT / "policy" / "PulumiPolicy.yaml").read_text())["runtime"]["options"] == {"virtualenv": "venv"}


def test_install_check_catches_unhashed_and_missing_installs():
    script = the_install_script(load("pulumi-up.yml")["jobs"]["production"])
    planted = (script.replace("--no-build-isolation ", "")
               .replace("pip_install .venv --require-hashes -r requirements.txt", "pip_install .venv -r requirements.txt")
               .replace("pip_install policy/venv --no-deps --check-build-dependencies -e .", "pip_install policy/venv -e .")
               + "python -m pip install pulumi-aws\n")
    assert install_problems("pulumi-up.yml", planted) == [
        "pulumi-up.yml: pip_install() must run pip with --no-build-isolation",
        "pulumi-up.yml: a pip install outside pip_install()",
        "pulumi-up.yml: .venv: -r requirements.txt without --require-hashes",
        "pulumi-up.yml: policy/venv: -e . is neither a hashed lock nor the project (--no-deps)",
    ]


def test_docs_show_the_install_commands_the_workflows_run():
    # docs/CI.md tells a person how to build the venvs for a local pulumi run: the same commands as CI.
    (block,) = re.findall(r"```sh\n(pip_install\(\).*?)```", (ROOT / "docs" / "CI.md").read_text(), re.S)
    script = the_install_script(load("pulumi-up.yml")["jobs"]["production"]).splitlines()
    assert block.splitlines() == [line for line in script if "pip check" not in line and "GITHUB_PATH" not in line]
