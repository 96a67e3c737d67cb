"""pulumi-up.yml's preview gate, as a function that returns problems (tests/test_workflows.py runs it on the real
workflow and on planted mistakes; docs/CI.md, "Preview before update")."""
from __future__ import annotations

import re

# pulumi/actions commands that change nothing; any other (up, its alias update, destroy, refresh, an expression) is
# gated. No command at all only installs the CLI (src/main.ts), and a script running it is caught below.
NOT_DEPLOYING = {"preview", "output"}
PULUMI_CLI_DEPLOY = re.compile(r"\bpulumi\s+(?:up|update|destroy)\b")


def _expression(value) -> str:
    """An `if:` as GitHub reads it: the ${{ }} wrapper is optional."""
    text = str(value or "").strip()
    m = re.fullmatch(r"\$\{\{(.*)\}\}", text, re.S)
    return " ".join((m[1] if m else text).split())


def gate_problems(up: dict) -> list[str]:
    """Every pulumi/actions update runs right after a successful preview of the same commit, stack and policy pack:
    pulumi/actions runs `up --yes --skip-preview`, and only a preview refuses a protected delete before anything runs
    (in an update, a protected resource's unprotected dependents go first). The step before the update is a
    pulumi/actions preview with an `id`, the same inputs but `command` and the same env; the update's `if` is exactly
    `steps.<id>.outcome == 'success'` (no always(): a failed or skipped preview skips it; outcome ignores a
    continue-on-error on the preview); the update itself is not continue-on-error (a failed update would count as a
    success, and production would follow); no script runs pulumi up/destroy around the gate."""
    problems = []
    for job_id, job in up["jobs"].items():
        where = f"pulumi-up.yml: job {job_id}"
        job_steps = job.get("steps", [])
        for index, step in enumerate(job_steps):
            if PULUMI_CLI_DEPLOY.search(step.get("run", "")):
                problems.append(f"{where}: step {index + 1} runs the pulumi CLI's up/destroy outside the gated step")
            if step.get("uses", "").split("@")[0] != "pulumi/actions":
                continue
            given = step.get("with") or {}
            if given.get("command") in (None, *NOT_DEPLOYING):
                continue
            name = f"{where}: pulumi {given['command']} (step {index + 1})"
            before = job_steps[index - 1] if index else {}
            previous = before.get("with") or {}
            if before.get("uses", "").split("@")[0] != "pulumi/actions" or previous.get("command") != "preview":
                problems.append(f"{name} is not right after a pulumi/actions preview")
                continue
            if {k: v for k, v in previous.items() if k != "command"} != {k: v for k, v in given.items() if k != "command"}:
                differ = sorted(k for k in {*previous, *given} - {"command"} if previous.get(k) != given.get(k))
                problems.append(f"{name}: the preview before it differs in {', '.join(differ)}")
            if before.get("env") != step.get("env"):
                problems.append(f"{name}: the preview before it runs with a different env")
            if not before.get("id"):
                problems.append(f"{name}: the preview before it has no id, so the update cannot test its outcome")
            elif _expression(step.get("if")) != f"steps.{before['id']}.outcome == 'success'":
                problems.append(f"{name} does not run only if the preview succeeded "
                                f"(if: steps.{before['id']}.outcome == 'success'; it has {step.get('if')!r})")
            if step.get("continue-on-error") not in (None, False) or given.get("continue-on-error") not in (None, False):
                problems.append(f"{name} is continue-on-error: a failed update would let the job succeed")
    return problems
