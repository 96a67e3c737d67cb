"""required-egress-complete: every requirement the stack's targets enforce is allowed by what will be deployed."""
from __future__ import annotations

from typing import Optional

from pulumi_policy import EnforcementLevel, Severity, StackValidationPolicy

from egress.citations import cite
from egress.deployed import DeployedResource
from egress.models import Requirement
from egress.targets import TARGETS
from egress.targets.aws.deployed import RULE_GROUP_TYPE, ROLE_TAG, SECURITY_GROUP_TYPE
from egress.targets.azure.deployed import RCG_TYPE, rcg_name
from egress.targets.kubernetes.deployed import squid_configs

from .support import JUDGED_TYPES, blocked, stack_context, stack_validator, target_verdict, unjudged_of

NAME = "required-egress-complete"
REMEDIATION = ("Deploy the stack's own program output (the rules were edited or removed outside the matrix), or add the missing "
               "destination to the matrix entry's target. `egress explain <destination>` shows which rule should allow it.")


def _citation(req: Requirement) -> str:
    return "; ".join(cite(url, section) for url, section in req.citations[:2])


def _anchor(target: str, req: Requirement, why: str, resources: list[DeployedResource]) -> Optional[DeployedResource]:
    """The resource that should carry the requirement's allow: its platform's RCG; the role's security group when no
    egress rule lets it out, else the role's rule group for its protocol; the egress proxy's ConfigMap."""
    if target == "azure":
        groups = [r for r in resources if r.type == RCG_TYPE]
        return next((g for g in groups if any(rcg_name(g).endswith(f"-{p}") for p in req.platforms)), groups[0] if groups else None)
    if target == "aws":
        security_groups = [r for r in resources if r.type == SECURITY_GROUP_TYPE and (r.props.get("tags") or {}).get(ROLE_TAG) == req.role]
        rule_groups = sorted((r for r in resources if r.type == RULE_GROUP_TYPE and f"-{req.role}-" in r.name),
                             key=lambda g: (("tls" in g.name) != (req.protocol == "https"), g.name))
        ordered = [*security_groups, *rule_groups] if "security-group" in why else [*rule_groups, *security_groups]
        return ordered[0] if ordered else None
    configs = squid_configs(resources)
    return configs[0][0] if configs else None


def misses(resources: list[DeployedResource]) -> list[tuple[str, Optional[str]]]:
    """(message, urn) per requirement a target does not allow."""
    context = stack_context()
    out: list[tuple[str, Optional[str]]] = []
    for name in context.profile.targets:
        spec = TARGETS[name]
        cannot = unjudged_of(name, resources)
        out += blocked(name, cannot)
        if any(u.pending for u in cannot):  # a requirement a resource not judged yet carries would read as missing
            continue
        artefacts, enforced, verdict = target_verdict(name, resources)
        if not enforced or not verdict.missing:
            continue
        for req in enforced:  # only on a miss: which requirements, one by one
            verdict = spec.evaluate(artefacts, [req], context.catalog)
            if verdict.missing:
                anchor = _anchor(name, req, verdict.missing[0], resources)
                out.append((f"{name}: not allowed: {verdict.missing[0]}. Needed for: {'; '.join(req.purposes)[:200]}. "
                            f"Source: {_citation(req)}", anchor.urn if anchor else None))
    return out


POLICY = StackValidationPolicy(
    name=NAME,
    description="Every requirement of the stack (resolved from its config and the matrix) is allowed by the deployed Azure rule "
                "collection groups, Network Firewall rule groups, security groups and the egress proxy's squid.conf.",
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    validate=stack_validator(misses, JUDGED_TYPES),
    remediation_steps=REMEDIATION,
)
