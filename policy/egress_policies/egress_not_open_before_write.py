"""egress-not-open-before-write: a resource that carries egress rules (including one security-group rule) is judged
before it is written for what it would open beyond the stack's breadth limits, by coverage as egress-not-open judges
the whole stack; a resource policy, so `pulumi up` refuses the write instead of reporting it after."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from .support import write_validator

NAME = "egress-not-open-before-write"

POLICY = ResourceValidationPolicy(
    name=NAME,
    description="Each resource that carries egress rules (rule collection group, IP Group, Network Firewall rule group, security-group "
                "rule, squid.conf) opens nothing beyond the stack's breadth limits, judged on its checked inputs before it is written.",
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    validate=write_validator(lambda verdict: [f"writing this resource would open: {f}" for f in verdict.open]),
    remediation_steps="Narrow the rule to the matrix's destinations and ports; where a vendor row really is this wide, give its matrix entry "
                      "broad: '<reason>', or set egress-matrix:allowBroadEgress for the stack.",
)
