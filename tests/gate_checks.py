"""pulumi-up.yml's preview gate, as a function that returns problems (tests/test_workflows.py runs it on the real
workflow and on planted mistakes; docs/CI.md, "Preview before update" and "The policy gate")."""
from __future__ import annotations

import re

# pulumi/actions commands that change nothing; any other (up, its alias update, destroy, refresh, an expression) is
# gated. No command at all only installs the CLI (src/main.ts), and a script running it is caught below.
NOT_DEPLOYING = {"preview", "output"}
PULUMI_CLI_DEPLOY = re.compile(r"\bpulumi\s+(?:up|update|destroy)\b")
# The update's inputs the preview's env must carry with the same value (the preview reads them as $NAME).
SAME_AS_PREVIEW = {"stack-name": "STACK", "policyPacks": "POLICY_PACK", "policyPackConfigs": "POLICY_PACK_CONFIG", "message": "MESSAGE"}
# Inputs that change only how the update is shown (or, pulumi-version, which CLI runs it: test_workflows pins it to the
# locked SDK's for every pulumi/actions step). Any other input (refresh, target, replace, config-map, upsert, plan, ...)
# would make the update do what the preview did not judge.
DISPLAY_ONLY = {"command", "pulumi-version", "diff", "comment-on-summary", "suppress-outputs", "suppress-progress", "color"}
# What the gate's script must run: the preview with the update's stack, pack and config and the event log, then the
# policy gate on that log with the same config; each failure recorded, and the step's exit code the recorded one.
PREVIEW = re.compile(r'^pulumi preview (?=.*--stack "\$STACK")(?=.*--policy-pack "\$POLICY_PACK")'
                     r'(?=.*--policy-pack-config "\$POLICY_PACK_CONFIG")(?=.*--event-log "\$EVENT_LOG").*\|\| code=\$\?$')
POLICY_GATE = re.compile(r'^egress policy-events "\$EVENT_LOG" --policy-pack-config "\$POLICY_PACK_CONFIG"(?: .*)? \|\| code=(?:1|\$\?)$')


def _expression(value) -> str:
    """An `if:` as GitHub reads it: the ${{ }} wrapper is optional."""
    text = str(value or "").strip()
    m = re.fullmatch(r"\$\{\{(.*)\}\}", text, re.S)
    return " ".join((m[1] if m else text).split())


def commands(script: str) -> list[str]:
    """The script's commands, one per line, continuation lines joined."""
    return [" ".join(line.split()) for line in re.sub(r"\\\n", " ", script).splitlines() if line.strip()]


def script_problems(script: str) -> list[str]:
    """The gate's script: the preview with the event log, then egress policy-events on it, then `exit "$code"`."""
    cmds = commands(script)
    problems = []
    previews = [i for i, c in enumerate(cmds) if PREVIEW.match(c)]
    gates = [i for i, c in enumerate(cmds) if POLICY_GATE.match(c)]
    if not previews:
        problems.append('it runs no `pulumi preview --stack "$STACK" --policy-pack "$POLICY_PACK" --policy-pack-config '
                        '"$POLICY_PACK_CONFIG" --event-log "$EVENT_LOG" ... || code=$?`')
    if not gates or (previews and gates[0] < previews[0]):
        problems.append('it runs no `egress policy-events "$EVENT_LOG" --policy-pack-config "$POLICY_PACK_CONFIG" ... || code=1` '
                        "after the preview: a mandatory policy that could not run would pass")
    if not cmds or cmds[0] != "code=0" or cmds[-1] != 'exit "$code"':
        problems.append('it does not start with code=0 and end with exit "$code": a failure would not fail the step')
    if any(re.search(r"\|\|\s*(?:true|:)\s*$", c) or c.startswith("set +e") for c in cmds):
        problems.append("it ignores a failure (|| true, || :, set +e)")
    return problems


def gate_problems(up: dict) -> list[str]:
    """Every pulumi/actions update runs right after the gate step: a `pulumi preview` of the same commit, stack, policy
    pack and config, with its event log judged by `egress policy-events` (a mandatory policy that could not run passes
    the engine's preview). pulumi/actions runs `up --yes --skip-preview`, and only a preview refuses a protected delete
    before anything runs (in an update, a protected resource's unprotected dependents go first). The step before the
    update is a `run:` step with an `id` and the update's env, whose STACK, POLICY_PACK, POLICY_PACK_CONFIG and MESSAGE
    are the update's stack-name, policyPacks, policyPackConfigs and message; the update sets nothing else that changes
    what it does; its `if` is exactly `steps.<id>.outcome == 'success'` (no always(): a failed or skipped preview skips
    it; outcome ignores a continue-on-error on the preview); the update itself is not continue-on-error (a failed update
    would count as a success, and production would follow); no script runs pulumi up/destroy around the gate."""
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
            if "run" not in before or not re.search(r"\bpulumi preview\b", before["run"]):
                problems.append(f"{name} is not right after the step that runs pulumi preview and the policy gate")
                continue
            problems += [f"{name}: the preview before it: {p}" for p in script_problems(before["run"])]
            env = before.get("env") or {}
            for key, variable in SAME_AS_PREVIEW.items():
                if env.get(variable) != given.get(key):
                    problems.append(f"{name}: the preview before it has {variable}={env.get(variable)!r}, the update {key}={given.get(key)!r}")
            for key in sorted(set(given) - DISPLAY_ONLY - set(SAME_AS_PREVIEW)):
                problems.append(f"{name} sets {key}, which the preview before it does not: it would do what the preview did not judge")
            if env != (step.get("env") or {}):
                problems.append(f"{name}: the preview before it runs with a different env")
            if not before.get("id"):
                problems.append(f"{name}: the preview before it has no id, so the update cannot test its outcome")
            elif _expression(step.get("if")) != f"steps.{before['id']}.outcome == 'success'":
                problems.append(f"{name} does not run only if the preview succeeded "
                                f"(if: steps.{before['id']}.outcome == 'success'; it has {step.get('if')!r})")
            if step.get("continue-on-error") not in (None, False) or given.get("continue-on-error") not in (None, False):
                problems.append(f"{name} is continue-on-error: a failed update would let the job succeed")
    return problems
