"""egress-least-privilege: nothing allowed beyond the matrix, and no allow-any destination, bare '*' or all-ports
0.0.0.0/0 anywhere (advisory by default: AWS domain lists allow more than asked by design, and show here). Breadth
beyond the stack's limits, judged by coverage rather than by these spellings, is the mandatory egress-not-open."""
from __future__ import annotations

from typing import Any, Iterator

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, Severity, StackValidationPolicy

from egress.deployed import DeployedResource
from egress.targets.aws.deployed import EGRESS_RULE_TYPE
from egress.targets.azure.deployed import RCG_TYPE

from egress.targets.unknowns import judgeable

from .support import JUDGED_TYPES, is_open, stack_context, stack_validator, target_verdict

NAME = "egress-least-privilege"
ANY = {"*", "any", "0.0.0.0/0", "::/0", "Internet"}


def _azure_wide(resource: DeployedResource) -> Iterator[str]:
    for collection in resource.props.get("ruleCollections") or []:
        if (collection.get("action") or {}).get("type") != "Allow":
            continue
        for rule in collection.get("rules") or []:
            where = f"rule {collection.get('name')}/{rule.get('name')}"
            if "*" in (rule.get("targetFqdns") or []) or "*" in (rule.get("destinationFqdns") or []):
                yield f"{where} allows the bare FQDN '*' (every name)"
            if ANY & set(rule.get("destinationAddresses") or []):
                ports = rule.get("destinationPorts") or []
                if "*" in ports or "1-65535" in ports or "0-65535" in ports:
                    yield f"{where} allows any destination on all ports"
                else:
                    yield f"{where} allows any destination address ({', '.join(sorted(ANY & set(rule['destinationAddresses'])))})"


def _sg_wide(resource: DeployedResource) -> Iterator[str]:
    p: dict[str, Any] = resource.props
    cidr = p.get("cidrIpv4") or p.get("cidrIpv6") or ""
    if is_open(str(cidr)) and (str(p.get("ipProtocol")) == "-1" or (p.get("fromPort"), p.get("toPort")) in ((0, 65535), (1, 65535))):
        yield f"egress rule allows {cidr} on all ports"


def findings(resources: list[DeployedResource], report_extra: bool = True) -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = []
    for resource in judgeable(resources):
        wide = _azure_wide(resource) if resource.type == RCG_TYPE else _sg_wide(resource) if resource.type == EGRESS_RULE_TYPE else iter(())
        out += [(text, resource.urn) for text in wide]
    if report_extra:
        context = stack_context()
        for name in context.profile.targets:
            artefacts, _, verdict = target_verdict(name, resources)
            if artefacts:
                out += [(f"{name}: allowed beyond the matrix: {extra}", None) for extra in verdict.extra]
    return out


POLICY = StackValidationPolicy(
    name=NAME,
    description="Nothing is allowed beyond the matrix: no allow-any destination, no bare '*' FQDN, no 0.0.0.0/0 on all ports, "
                "and no flow the stack's requirements do not ask for (the AWS domain-list broadening shows here).",
    enforcement_level=EnforcementLevel.ADVISORY,
    severity=Severity.MEDIUM,
    validate=stack_validator(findings, JUDGED_TYPES, ("reportBeyondMatrix", True)),
    config_schema=PolicyConfigSchema(properties={"reportBeyondMatrix": {
        "type": "boolean", "default": True,
        "description": "Report every flow the deployed rules allow that no requirement asks for (off: only the allow-any checks)."}}),
    remediation_steps="Remove the broad rule, or narrow it to the matrix's destinations. For AWS domain lists, use "
                      "egress-matrix:awsNetworkFirewallRules: suricata to allow exact names and ports only.",
)
