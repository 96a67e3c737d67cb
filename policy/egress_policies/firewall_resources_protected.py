"""firewall-resources-protected: every firewall resource is registered with Pulumi's ``protect``, so the real engine
refuses to replace or delete it (an emptied hub policy, a security group nothing carries, a proxy address that moved);
a stack planning a migration says so with allowFirewallReplacement.

A pack sees the new state only, so it cannot tell a replacement from a creation; it can see that the option which makes
the engine refuse one is set. This catches a program (or a fork of a component) that drops it."""
from __future__ import annotations

import pulumi
from pulumi_policy import EnforcementLevel, ResourceValidationArgs, ResourceValidationPolicy, Severity

from egress.deployed import PROTECTED_TYPES
from egress.profile import PROJECT

NAME = "firewall-resources-protected"


def violation(resource_type: str, name: str, protect: bool, migration: bool) -> list[str]:
    if resource_type not in PROTECTED_TYPES or protect or migration:
        return []
    return [f"{resource_type} '{name}' is not protected: pulumi up would replace or delete it without refusing (a firewall "
            "resource's replacement or deletion can break or open the network it guards)"]


def _migration() -> bool:
    return (pulumi.Config(PROJECT).get("allowFirewallReplacement") or "").strip().lower() == "true"


def _validate(args: ResourceValidationArgs, report_violation) -> None:
    for message in violation(args.resource_type, args.name, bool(args.opts.protect), _migration() if args.resource_type in PROTECTED_TYPES else False):
        report_violation(message, None)


POLICY = ResourceValidationPolicy(
    name=NAME,
    description="Firewall resources (policies, rule collection groups, rule groups, security groups, the proxy and API-server "
                "Services) are registered protected, so the engine refuses to replace or delete them.",
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    validate=_validate,
    remediation_steps="Register the resource with ResourceOptions(protect=True) as the components do; for a planned migration set "
                      "egress-matrix:allowFirewallReplacement: true in that change only (README, 'Protection and migrations').",
)
