"""``egress preview``: one stack's main job offline. The program runs under the SDK's mocks, the pack judges what it
registered, and the result is what a reviewer needs: resources by type, requirements covered per target, violations
by severity naming policy and resource; ``resources.json`` and every target's render in the output folder."""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from egress.deployed import DeployedResource, resource_json
from egress.profile import PROJECT
from egress.outdir import Written, write_output
from egress.project import Project
from egress.render import requirement_json
from egress.targets import TARGETS
from egress.targets.unknowns import judgeable

from .dangers import snapshot_flag
from .pack import Violation, run_pack
from .program import Recorded, run_program

SECRET_MASK = "[secret]"
RESOURCES_JSON = "resources.json"
ADVISORIES_SHOWN = 5  # per policy: every mandatory violation is printed, advisories up to this many
SEVERITY_ORDER = {"critical": 0, "high": 1, "medium": 2, "low": 3, "": 4}


@dataclass(frozen=True)
class Coverage:
    target: str
    enforced: int
    allowed: int
    extra: int
    rules_checked: int


@dataclass
class PreviewResult:
    stack: str
    recorded: Recorded
    violations: list[Violation]
    coverage: list[Coverage]
    requirements: list[dict[str, Any]]
    renders: dict[str, str] = field(default_factory=dict)
    updating: bool = False  # a preview phase over a deployed state
    corporate_proxy: list[str] = field(default_factory=list)  # what a preview cannot verify: the path through a proxy it does not deploy

    @property
    def mandatory(self) -> list[Violation]:
        return [v for v in self.violations if v.level == "mandatory"]


def mask(value: Any, paths: tuple[str, ...], prefix: str = "") -> Any:
    """``value`` with every secret path replaced by a mask (paths as the recorder writes them: a.b[0].c)."""
    if prefix in paths:
        return SECRET_MASK
    if isinstance(value, dict):
        return {k: mask(v, paths, f"{prefix}.{k}" if prefix else k) for k, v in value.items()}
    if isinstance(value, list):
        return [mask(v, paths, f"{prefix}[{i}]") for i, v in enumerate(value)]
    return value


def _coverage(resolved: tuple, resources: list[DeployedResource]) -> list[Coverage]:
    catalog, profile, requirements = resolved
    out = []
    for name in profile.targets:
        spec = TARGETS[name]
        enforced = spec.enforced(catalog, profile, requirements)
        verdict = spec.evaluate(spec.deployed(judgeable(resources)), enforced, catalog)  # what a preview cannot know: the pack says
        out.append(Coverage(name, len(enforced), len(enforced) - len(verdict.missing), len(verdict.extra), verdict.rules_checked))
    return out


def _corporate_proxy(resolved: tuple) -> list[str]:
    """The path through a corporate proxy the stack points its cluster at but does not deploy: nothing offline can see
    that proxy's allowlist, so the preview says so and counts what must traverse it and what goes around it."""
    from egress.proxy_path import DIRECT, PROXY, UNREACHABLE, requirement_paths, setups

    catalog, profile, requirements = resolved
    if not profile.cluster_proxy or not (profile.http_proxy or profile.https_proxy):
        return []
    lines = []
    paths = requirement_paths(catalog, profile, requirements)
    for setup in setups(catalog, profile):
        count = Counter(p.route for p in paths if p.kind == setup.kind)
        lines += [f"path through the corporate proxy not verified offline ({setup.label} -> {setup.https_proxy or setup.http_proxy})",
                  f"  {count[PROXY]} requirement path(s) of {'/'.join(setup.roles)} must traverse it: its allowlist is egress export --for proxy",
                  *([f"  {len(profile.proxy_readiness_endpoints)} readiness endpoint(s) the network operator probes through it whatever noProxy says"]
                    if setup.kind == "openshift" and profile.proxy_readiness_endpoints else []),
                  f"  {count[DIRECT]} go direct ({setup.list_name}, or not HTTP): the firewall must allow them"]
        if count[UNREACHABLE]:
            lines.append(f"  {count[UNREACHABLE]} fail until the proxy exempts them from TLS inspection (egress export --for proxy lists them)")
    others = sorted({p.role for p in paths if not p.kind})
    if others:
        lines.append(f"  {sum(1 for p in paths if not p.kind)} of role(s) {', '.join(others)}, which do not use it: the firewall must allow them")
    lines.append("  egress probe checks these paths from where each role runs")
    return lines


def _renders(project: Project, stack: str, resolved: tuple) -> dict[str, str]:
    catalog, profile, requirements = resolved
    files: dict[str, str] = {}
    for name in profile.targets:
        spec = TARGETS[name]
        files.update(spec.render(spec.compile(catalog, profile, requirements, f"{project.stack_file(stack)}: stack '{stack}'")))
    return files


def preview(project: Project, stack: str, pack_config: Optional[dict[str, Any]] = None, progress=None, phase: str = "up",
            prior: Optional[list[DeployedResource]] = None) -> PreviewResult:
    """``progress(text)`` is told what runs next (a spinner on a terminal). ``phase`` "preview": as a real ``pulumi
    preview`` presents the resources (a first deployment, or an update of ``prior``, the deployed state)."""
    step = progress or (lambda text: None)
    resolved = project.requirements(stack)  # a bad stack fails here, with the core's message; resolved once for what follows
    step(f"running the program for stack '{stack}' under the Pulumi mocks")
    recorded = run_program(project.root, stack, phase=phase, prior=prior or ())
    step("running the policy pack")
    violations = run_pack(recorded, pack_config)
    violations.sort(key=lambda v: (v.level != "mandatory", SEVERITY_ORDER.get(v.severity, 9), v.policy, v.resource, v.message))
    step("judging coverage and rendering the targets")
    return PreviewResult(stack=stack, recorded=recorded, violations=violations, coverage=_coverage(resolved, recorded.resources),
                         requirements=[requirement_json(r) for r in resolved[2]], renders=_renders(project, stack, resolved),
                         updating=prior is not None, corporate_proxy=_corporate_proxy(resolved))


def snapshot(result: PreviewResult) -> dict[str, Any]:
    """What ``resources.json`` holds (secrets masked), and what ``egress diff`` compares."""
    recorded = result.recorded
    return {
        "stack": result.stack,
        "resources": [resource_json(DeployedResource(**{**r.__dict__, "props": mask(r.props, r.secret_paths)}))
                      for r in sorted(recorded.resources, key=lambda r: (r.type, r.name))],  # registration order is async
        "outputs": {k: (SECRET_MASK if k in recorded.secret_outputs else v) for k, v in sorted(recorded.outputs.items())},
        "warnings": list(recorded.warnings),
        "requirements": result.requirements,
        "coverage": [c.__dict__ for c in result.coverage],
        "violations": [v.__dict__ for v in result.violations],
        # what the preview could not verify (a corporate proxy it does not deploy): egress diff prints it as preview does
        **({"corporateProxy": list(result.corporate_proxy)} if result.corporate_proxy else {}),
        # What egress diff needs to judge a change as the engine would: the cluster its names carry, and whether the stack
        # plans a migration (firewall resources not protected).
        "cluster": recorded.config.get(f"{PROJECT}:clusterName") or result.stack,
        "allowFirewallReplacement": snapshot_flag(recorded.config),
        **({"phase": recorded.phase} if recorded.phase != "up" else {}),
    }


def write(result: PreviewResult, out: Path, project_root: Optional[Path] = None) -> Written:
    """``resources.json`` and every target's render, replacing what an earlier run wrote for these targets and nothing
    else (egress/outdir.py, shared with ``egress render``)."""
    files = {**result.renders, RESOURCES_JSON: json.dumps(snapshot(result), indent=2, ensure_ascii=False) + "\n"}
    return write_output(out, files, [RESOURCES_JSON, *(c.target for c in result.coverage)], project_root)


def summary_lines(result: PreviewResult) -> list[str]:
    recorded = result.recorded
    shown_as = {"up": "as an update leaves them", "preview": "as `pulumi preview` shows an update of the deployed state" if result.updating
                else "as `pulumi preview` shows a first deployment"}[recorded.phase]
    lines = [f"stack {result.stack}: {len(recorded.resources)} resources ({shown_as}), {len(result.requirements)} requirements"]
    unknown = sum(1 for r in recorded.resources if r.unknowns)
    if unknown:
        lines.append(f"  {unknown} resource(s) with values not known until the update runs (ids, ARNs, etags): the pack judged around them")
    for typ, count in sorted(Counter(r.type for r in recorded.resources).items()):
        lines.append(f"  {count:>4}  {typ}")
    for c in result.coverage:
        if c.enforced or not (c.target == "kubernetes" and result.corporate_proxy):
            lines.append(f"{c.target}: {c.allowed}/{c.enforced} enforced requirements allowed by what will be deployed "
                         f"({c.rules_checked} rules checked, {c.extra} allowed beyond the matrix)")
        # else: the kubernetes target deploys no egress proxy, only the cluster's proxy settings: the line below says what is unverified
    lines.extend(line if line.startswith(" ") else f"kubernetes: {line}" for line in result.corporate_proxy)
    for note in recorded.notes:
        lines.append(f"note: {note}")
    for warning in recorded.warnings:
        lines.append(f"warning: {warning}")
    counts = Counter((v.level, v.severity) for v in result.violations)
    mandatory, advisory = len(result.mandatory), len(result.violations) - len(result.mandatory)
    lines.append(f"policy pack: {mandatory} mandatory, {advisory} advisory violation(s)"
                 + (" (" + ", ".join(f"{n} {lvl}/{sev or 'unrated'}" for (lvl, sev), n in sorted(counts.items())) + ")" if counts else ""))
    shown: Counter = Counter()
    for v in result.violations:
        shown[v.policy, v.level] += 1
        if v.level == "mandatory" or shown[v.policy, v.level] <= ADVISORIES_SHOWN:
            lines.append(f"  {v.line()}")
    for (policy, level), count in sorted(shown.items()):
        if level != "mandatory" and count > ADVISORIES_SHOWN:
            lines.append(f"  ... {count - ADVISORIES_SHOWN} more advisory from {policy} (all in resources.json)")
    return lines
