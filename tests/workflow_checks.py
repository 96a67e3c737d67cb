"""What tests/test_workflows.py checks in the workflows and the hashed locks, as functions that return problems.

Each takes the text or the parsed YAML, so a test runs it on the real files (no problem) and on planted mistakes
(exactly the expected problem): a check that cannot fail is caught there. docs/CI.md explains the rules.
"""
from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import yaml
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
PINS = json.loads((ROOT / "tests" / "data" / "pinned_actions.json").read_text())["actions"]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())

# The stacks that guard no real workload, updated before the others. Changing it is a decision, made here and in
# pulumi-up.yml together (docs/CI.md, "Deployment order").
NON_PRODUCTION = ["dev"]
# The job of each workflow that lists the stacks (`egress stacks`) for the per-stack jobs' matrices.
SETUP_JOB = "stacks"
# pulumi-up.yml's jobs: the stacks first, then what each deploy job updates (the key of `egress stacks --format github-output`).
DEPLOY_JOBS = {"non-production": "first", "production": "parallel", "production-shared-policy": "serial"}
# Settings the workflows read that are no credential: both the preview and the deployment may name them.
NOT_CREDENTIALS = {"PULUMI_ORG", "AWS_REGION"}
# The environment the locks target: CPython on GitHub's ubuntu x86_64 runners (tools/lock.py).
TARGET_MARKERS = {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
                  "implementation_name": "cpython", "platform_python_implementation": "CPython"}
LOCKS = {".venv": ["requirements-build.txt", "requirements.txt"],
         "policy/venv": ["requirements-build.txt", "policy/requirements.txt"]}


def parse_workflow(text: str) -> dict:
    workflow = yaml.safe_load(text)
    if True in workflow:  # YAML 1.1 reads the key `on` as the boolean true
        workflow["on"] = workflow.pop(True)
    return workflow


def load(name: str) -> dict:
    return parse_workflow((WORKFLOWS / name).read_text())


def workflow_files() -> list[Path]:
    return sorted([*WORKFLOWS.glob("*.yml"), *WORKFLOWS.glob("*.yaml")])


def steps(workflow: dict):
    for job_id, job in workflow["jobs"].items():
        for step in job.get("steps", []):
            yield job_id, step


# --- actions pinned by commit ------------------------------------------------------------------------------------

PINNED = re.compile(r"(?P<action>[\w.-]+/[\w.-]+(?:/[\w./-]+)?)@(?P<commit>[0-9a-f]{40})")
USES_LINE = re.compile(r"^\s*(?:-\s+)?uses:\s*(?P<ref>\S+)(?P<rest>.*)$")


def pin_problems(name: str, text: str) -> list[str]:
    """Every `uses:` is a local workflow or a full commit SHA of a known action, its tag in a trailing comment,
    with only inputs the action declares (and the ones it requires)."""
    problems = []
    for number, line in enumerate(text.splitlines(), 1):
        m = USES_LINE.match(line)
        if not m or m["ref"].startswith("./"):
            continue
        pin = PINNED.fullmatch(m["ref"])
        if not pin:
            problems.append(f"{name}:{number}: {m['ref']} is not pinned to a full commit SHA")
            continue
        entry = PINS.get(pin["action"])
        tag = re.fullmatch(r"\s*#\s*(v[\d.]+)\s*", m["rest"])
        if entry is None:
            problems.append(f"{name}:{number}: {pin['action']} is not in tests/data/pinned_actions.json")
        elif pin["commit"] != entry["commit"]:
            problems.append(f"{name}:{number}: {pin['action']}@{pin['commit']} is not the pinned commit of {entry['tag']}")
        elif not tag or tag[1] != entry["tag"]:
            problems.append(f"{name}:{number}: {pin['action']} needs the trailing comment '# {entry['tag']}'")
    for job_id, job in parse_workflow(text)["jobs"].items():
        for step in [job, *job.get("steps", [])]:  # a job's own `uses:` calls a reusable workflow
            ref = step.get("uses")
            if ref is None or ref.startswith("./"):
                continue
            pin = PINNED.fullmatch(ref)
            entry = PINS.get(pin["action"]) if pin else None
            if entry is None:
                continue  # reported above, on its line
            given = set(step.get("with") or {})
            for key in sorted(given - set(entry["inputs"])):
                problems.append(f"{name}: job {job_id}: {pin['action']} has no input {key!r}")
            for key in sorted(set(entry["required"]) - given):
                problems.append(f"{name}: job {job_id}: {pin['action']} needs the input {key!r}")
    return problems


def checkout_problems(name: str, workflow: dict) -> list[str]:
    """No checkout leaves the job's token in .git/config, where the code it checked out could read it."""
    return [f"{name}: job {job_id}: actions/checkout keeps credentials (set persist-credentials: false)"
            for job_id, step in steps(workflow)
            if step.get("uses", "").startswith("actions/checkout@")
            and (step.get("with") or {}).get("persist-credentials") is not False]


# --- credentials -------------------------------------------------------------------------------------------------

def referenced(node, context: str) -> set[str]:
    """The names read from `secrets.X` / `vars.X` anywhere in NODE (a workflow, a job, a step)."""
    return set(re.findall(rf"\b{context}\.(\w+)", json.dumps(node)))


def preview_problems(preview: dict, up: dict) -> list[str]:
    """The PR preview runs in its own `preview` environment, reads only PREVIEW_* credentials, none the deployment
    reads, and no workflow-level env hands a secret to every job."""
    problems = []
    for name, workflow in (("pulumi-preview.yml", preview), ("pulumi-up.yml", up)):
        if referenced(workflow.get("env", {}), "secrets"):
            problems.append(f"{name}: workflow-level env reads a secret (every job would get it)")
    for job_id, job in preview["jobs"].items():
        if job_id == SETUP_JOB and not referenced(job, "secrets") | referenced(job, "vars") and "id-token" not in (job.get("permissions") or {}):
            continue  # lists the stacks from the checkout: no credential, so no environment needed
        environment = job.get("environment")
        environment = environment.get("name") if isinstance(environment, dict) else environment
        if environment != "preview":
            problems.append(f"pulumi-preview.yml: job {job_id} runs in environment {environment!r}, not 'preview'")
    deploy = (referenced(up, "secrets") | referenced(up, "vars")) - NOT_CREDENTIALS
    for context in ("secrets", "vars"):
        for key in sorted(referenced(preview, context) - NOT_CREDENTIALS):
            if key in deploy:
                problems.append(f"pulumi-preview.yml reads the deployment's {context}.{key}")
            elif not key.startswith("PREVIEW_"):
                problems.append(f"pulumi-preview.yml reads {context}.{key}: preview credentials are named PREVIEW_*")
    for key in sorted(deploy):
        if key.startswith("PREVIEW_"):
            problems.append(f"pulumi-up.yml reads the preview's {key}")
    return problems


def pull_request_secret_problems(name: str, workflow: dict) -> list[str]:
    """A workflow a pull request triggers runs the PR's code: it reads no deployment secret."""
    if "pull_request" not in workflow["on"] and "pull_request_target" not in workflow["on"]:
        return []
    return [f"{name}: a pull request's workflow reads secrets.{key}"
            for key in sorted(referenced(workflow, "secrets") - {"GITHUB_TOKEN"}) if not key.startswith("PREVIEW_")]


# --- deployment order --------------------------------------------------------------------------------------------

def setup_script(workflow: dict) -> str:
    """The `run:` of the setup job's step that writes `egress stacks` to $GITHUB_OUTPUT."""
    (step,) = [s for s in workflow["jobs"][SETUP_JOB]["steps"] if "egress stacks" in s.get("run", "")]
    return step["run"]


def first_stacks(script: str) -> list[str]:
    """The stacks `--first NAME` names in the setup script: the non-production ones."""
    return [m for line in script_lines(script) if "egress stacks" in line and "--format github-output" in line
            for m in re.findall(r"--first (\S+)", line)]


def script_lines(script: str) -> list[str]:
    """The script's lines, without blank lines and comments."""
    return [line.strip() for line in script.splitlines() if line.strip() and not line.strip().startswith("#")]


def order_problems(up: dict) -> list[str]:
    """pulumi-up: a `stacks` job lists the stacks (checking the fleet first); the non-production stacks (--first) in a
    first job, the others in two jobs that wait for it to succeed: the ones that share a policy one at a time, the rest
    in parallel; every deploy job's concurrency group is its stack's lock."""
    jobs = up["jobs"]
    if set(jobs) != {SETUP_JOB, *DEPLOY_JOBS}:
        return [f"pulumi-up.yml: jobs {sorted(jobs)}, expected {sorted([SETUP_JOB, *DEPLOY_JOBS])}"]
    problems = []
    script = setup_script(up)
    if "python3 dev.py egress stacks check" not in script_lines(script):
        problems.append("pulumi-up.yml: the stacks job does not run `egress stacks check` (overlapping bands would deploy)")
    if first_stacks(script) != NON_PRODUCTION:
        problems.append(f"pulumi-up.yml: the stacks job updates {first_stacks(script)} first, expected {NON_PRODUCTION}")
    for job_id, key in DEPLOY_JOBS.items():
        job = jobs[job_id]
        if job.get("strategy", {}).get("matrix") != {"include": f"${{{{ fromJSON(needs.{SETUP_JOB}.outputs.{key}) }}}}"}:
            problems.append(f"{job_id} job: its matrix is not the stacks job's {key!r} list")
        if job.get("concurrency") != {"group": "egress-policy-${{ matrix.lock }}", "cancel-in-progress": False}:
            problems.append(f"{job_id} job: its concurrency group is not its stack's lock (egress-policy-${{{{ matrix.lock }}}})")
        if job.get("environment") != "${{ matrix.stack }}":
            problems.append(f"{job_id} job: not in its stack's environment")
        if key != "parallel" and job.get("strategy", {}).get("max-parallel") != 1:
            problems.append(f"{job_id} job: not one stack at a time (max-parallel: 1): GitHub cancels all but one pending job of a group")
        needs = job.get("needs", [])
        needs = [needs] if isinstance(needs, str) else needs
        if SETUP_JOB not in needs:
            problems.append(f"{job_id} job does not need the stacks job")
        if key != "first":
            if "non-production" not in needs:
                problems.append(f"{job_id} job does not need the non-production job: it would start at the same time")
            if "needs.non-production.result == 'success'" not in job.get("if", ""):
                problems.append(f"{job_id} job does not wait for the non-production updates to succeed")
    if len({json.dumps(jobs[j].get("steps")) for j in DEPLOY_JOBS}) != 1:
        problems.append("the deploy jobs run different steps")
    return problems


def matrix_entries(job: dict, outputs: dict[str, str]) -> list[dict]:
    """A job's matrix as GitHub expands it, given the setup job's outputs: `stack: ${{ fromJSON(...) }}` or
    `include: ${{ fromJSON(...) }}` of needs.stacks.outputs.<key>; a literal list of stacks as it is."""
    matrix = (job.get("strategy") or {}).get("matrix")
    if not matrix:
        return []
    (key, value), = matrix.items()
    if isinstance(value, list):
        return [{key: v} for v in value]
    m = re.fullmatch(rf"\$\{{\{{ fromJSON\(needs\.{SETUP_JOB}\.outputs\.([\w-]+)\) \}}\}}", value)
    assert m, f"matrix {key}: {value!r} is neither a list nor fromJSON(needs.{SETUP_JOB}.outputs.<name>)"
    items = json.loads(outputs[m[1]])
    return items if key == "include" else [{key: v} for v in items]


def expand(text: str, matrix: dict) -> str:
    """TEXT with ${{ matrix.<key> }} filled in."""
    return re.sub(r"\$\{\{\s*matrix\.([\w-]+)\s*\}\}", lambda m: str(matrix[m[1]]), text)


# --- hashed locks ------------------------------------------------------------------------------------------------

def lock_entries(text: str) -> tuple[dict[str, tuple[str, list[str]]], list[str]]:
    """{name: (version, hashes)} of a pip requirements lock, and the lines that are not `name==version --hash=...`."""
    entries, problems = {}, []
    joined = re.sub(r"\\\n", " ", text)
    for line in joined.splitlines():
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r"(?P<name>[A-Za-z0-9][\w.-]*)==(?P<version>[\w.+!-]+)(?:\s*;\s*(?P<marker>[^-][^\n]*?))?"
                         r"(?P<hashes>(?:\s+--hash=\S+)*)", line)
        if not m:
            problems.append(f"not an exact, hashed pin: {line[:80]!r}")
            continue
        if m["marker"] and not Marker(m["marker"]).evaluate(TARGET_MARKERS | {"python_version": target_python()}):
            continue
        hashes = m["hashes"].split()
        if not hashes:
            problems.append(f"{m['name']}=={m['version']} has no hash")
        problems += [f"{m['name']}: {h} is not a sha256" for h in hashes if not re.fullmatch(r"--hash=sha256:[0-9a-f]{64}", h)]
        entries[canonicalize_name(m["name"])] = (m["version"], hashes)
    return entries, problems


def lock_problems(name: str, text: str, requirements: list[str]) -> list[str]:
    """The lock pins every package with hashes, and every REQUIREMENTS (pyproject's) at a version it allows."""
    entries, problems = lock_entries(text)
    problems = [f"{name}: {p}" for p in problems]
    env = TARGET_MARKERS | {"python_version": target_python(), "python_full_version": f"{target_python()}.0"}
    for spec in requirements:
        requirement = Requirement(spec)
        if requirement.marker and not requirement.marker.evaluate(env):
            continue
        pinned = entries.get(canonicalize_name(requirement.name))
        if pinned is None:
            problems.append(f"{name}: pyproject's {spec!r} is not locked")
        elif not requirement.specifier.contains(Version(pinned[0]), prereleases=True):
            problems.append(f"{name}: {requirement.name}=={pinned[0]} is outside pyproject's {spec!r}")
    return problems


def target_python() -> str:
    """The Python the locks were resolved for, from their header (tools/lock.py writes it)."""
    m = re.search(r"for CPython (\d+\.\d+) on Linux x86_64", (ROOT / "requirements.txt").read_text())
    assert m, "requirements.txt: the header naming the target Python is missing (python3 tools/lock.py writes it)"
    return m[1]


def lock_requirements() -> dict[str, list[str]]:
    """What each lock must satisfy, from pyproject.toml."""
    core = PYPROJECT["project"]["dependencies"]
    pulumi_extra = PYPROJECT["project"]["optional-dependencies"]["pulumi"]
    build = PYPROJECT["build-system"]["requires"]
    return {
        "requirements.txt": [*core, *pulumi_extra, *build],
        "requirements-build.txt": build,
        "policy/requirements.txt": [*core, *[r for r in pulumi_extra if r.startswith("pulumi-policy")], *build],
    }


def install_problems(name: str, script: str) -> list[str]:
    """The venvs' install script: each lock with --require-hashes into its venv, then the project with --no-deps,
    every pip run without build isolation (a build dependency fetched by pip itself would be unhashed)."""
    problems = []
    define = re.search(r'pip_install\(\) \{ "\$1/bin/python" -m pip install (?P<flags>[^;]*)"\$\{@:2\}"; \}', script)
    if not define or "--no-build-isolation" not in define["flags"]:
        problems.append(f"{name}: pip_install() must run pip with --no-build-isolation")
    calls = [line.split() for line in script.splitlines() if line.strip().startswith("pip_install ")]
    if re.search(r"\bpip3? install\b", script.replace(define[0], "") if define else script):
        problems.append(f"{name}: a pip install outside pip_install()")
    for venv, locks in LOCKS.items():
        mine = [c[2:] for c in calls if c[1] == venv]
        installed = [args[args.index("-r") + 1] for args in mine if "-r" in args]
        if installed != locks:
            problems.append(f"{name}: {venv} installs {installed}, expected {locks} in that order")
        for args in mine:
            if "-r" in args and "--require-hashes" not in args:
                problems.append(f"{name}: {venv}: {' '.join(args)} without --require-hashes")
            if "-r" not in args and args != ["--no-deps", "--check-build-dependencies", "-e", "."]:
                problems.append(f"{name}: {venv}: {' '.join(args)} is neither a hashed lock nor the project (--no-deps)")
        if not any(args[-2:] == ["-e", "."] for args in mine):
            problems.append(f"{name}: {venv} lacks the project itself (--no-deps -e .)")
    return problems


# --- the policy gate of the PR preview (issue 18) ----------------------------------------------------------------

def pr_gate_problems(preview: dict) -> list[str]:
    """pulumi-preview: each job runs the CLI's `pulumi preview` with the event log (pulumi/actions' preview deletes it),
    then `egress policy-events` on that log with the same pack config, outside the step that holds the credentials;
    both exit codes are recorded, and the last step fails the job if either is not 0 (after the comment is posted)."""
    from gate_checks import POLICY_GATE, PREVIEW, commands

    problems = []
    for job_id, job in preview["jobs"].items():
        if job_id == SETUP_JOB:
            continue  # lists the stacks; runs no pulumi
        where = f"pulumi-preview.yml: job {job_id}"
        job_steps = job.get("steps", [])
        for step in job_steps:
            if step.get("uses", "").split("@")[0] == "pulumi/actions" and (step.get("with") or {}).get("command"):
                problems.append(f"{where}: pulumi/actions runs {step['with']['command']!r}: its event log is deleted, so the policy "
                                "gate cannot judge it (install the CLI only, and run it)")
        runs = [(i, s, commands(s.get("run", ""))) for i, s in enumerate(job_steps)]
        previews = [(i, s) for i, s, cmds in runs if any(PREVIEW.match(c) for c in cmds)]
        gates = [(i, s) for i, s, cmds in runs if any(POLICY_GATE.match(c) for c in cmds)]
        if len(previews) != 1 or len(gates) != 1:
            problems.append(f"{where}: {len(previews)} step(s) run pulumi preview with the event log and {len(gates)} run egress "
                            "policy-events on it; expected one each")
            continue
        (p_index, p_step), (g_index, g_step) = previews[0], gates[0]
        p_env, g_env = p_step.get("env") or {}, g_step.get("env") or {}
        if g_index <= p_index:
            problems.append(f"{where}: the policy gate runs before the preview")
        for key in ("EVENT_LOG", "POLICY_PACK_CONFIG"):
            if g_env.get(key) != p_env.get(key):
                problems.append(f"{where}: the policy gate reads {key}={g_env.get(key)!r}, the preview wrote {p_env.get(key)!r}")
        if referenced(g_step, "secrets"):
            problems.append(f"{where}: the policy gate step reads a secret (it needs none)")
        ids = []
        for step, what in ((p_step, "preview"), (g_step, "policy gate")):
            cmds = commands(step["run"])
            if not step.get("id") or 'echo "code=$code" >> "$GITHUB_OUTPUT"' not in cmds or cmds[0] != "code=0":
                problems.append(f"{where}: the {what} step must have an id, start with code=0 and record "
                                'echo "code=$code" >> "$GITHUB_OUTPUT"')
            if any(re.search(r"\|\|\s*(?:true|:)\s*$", c) for c in cmds):
                problems.append(f"{where}: the {what} step ignores a failure (|| true)")
            ids.append(step.get("id"))
        last = job_steps[-1]
        wanted = {f"steps.{ids[0]}.outputs.code != '0'", f"steps.{ids[1]}.outputs.code != '0'"}
        condition = " ".join(str(last.get("if", "")).split())
        if set(condition.split(" || ")) != wanted or "exit 1" not in last.get("run", ""):
            problems.append(f"{where}: the last step must fail the job when either code is not 0 (if: {' || '.join(sorted(wanted))}; "
                            f"it has {last.get('if')!r})")
    return problems


def check_names(workflows: dict[str, dict], outputs: dict[str, str]) -> dict[str, list[str]]:
    """{check name: [workflow/job, ...]} of the jobs a pull request runs, one name per matrix entry ('name' with
    ${{ matrix.stack }} filled in; the matrix from the setup job's OUTPUTS), as branch protection lists them."""
    names: dict[str, list[str]] = {}
    for file, workflow in sorted(workflows.items()):
        if "pull_request" not in workflow["on"]:
            continue
        for job_id, job in workflow["jobs"].items():
            for entry in matrix_entries(job, outputs) or [{}]:
                names.setdefault(expand(str(job.get("name", job_id)), entry), []).append(f"{file}/{job_id}")
    return names


# --- running the setup job (egress stacks) ---------------------------------------------------------------------

def fleet_tree(directory: Path) -> Path:
    """A copy of the project's data and workflows in DIRECTORY, with a dev.py that runs this venv's `egress` (the real
    one would build a venv there): what the setup job sees in a checkout."""
    import shutil
    import sys

    shutil.copy(ROOT / "Pulumi.yaml", directory / "Pulumi.yaml")
    for name in ("matrix", "stacks", "teams", ".github"):
        shutil.copytree(ROOT / name, directory / name)
    egress = Path(sys.executable).parent / "egress"
    (directory / "dev.py").write_text(f"import subprocess, sys\nsys.exit(subprocess.run([{str(egress)!r}, *sys.argv[2:]]).returncode)\n")
    return directory


def run_setup(directory: Path, workflow_name: str, inputs: dict[str, str] | None = None, fails: bool = False):
    """Run the setup job's `egress stacks` step of DIRECTORY's workflow as GitHub would (bash -eo pipefail, its env with
    ${{ inputs.* }} filled in); its $GITHUB_OUTPUT as {name: value}. Fails the test if the step fails; with FAILS, the
    other way round, and returns the step's stderr."""
    import os
    import subprocess

    workflow = parse_workflow((directory / ".github" / "workflows" / workflow_name).read_text())
    (step,) = [s for s in workflow["jobs"][SETUP_JOB]["steps"] if "egress stacks" in s.get("run", "")]
    env = {key: re.sub(r"\$\{\{\s*inputs\.(\w+)\s*\}\}", lambda m: (inputs or {}).get(m[1], ""), str(value))
           for key, value in (step.get("env") or {}).items()}
    output = directory / "github-output.txt"
    output.write_text("")
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], cwd=directory,
                          env={**os.environ, **env, "GITHUB_OUTPUT": str(output)}, capture_output=True, text=True, timeout=300)
    if fails:
        assert proc.returncode != 0, f"{workflow_name}: the stacks step passed:\n{output.read_text()}"
        return proc.stderr
    assert proc.returncode == 0, f"{workflow_name}: the stacks step failed ({proc.returncode}):\n{proc.stderr}{proc.stdout}"
    return dict(line.split("=", 1) for line in output.read_text().splitlines() if line)
