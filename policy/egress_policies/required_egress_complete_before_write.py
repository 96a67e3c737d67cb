"""required-egress-complete-before-write: a rule collection group, IP Group, Network Firewall rule group or squid.conf
ConfigMap is judged before it is written, against the requirements it is responsible for (the stack's own plan with
this resource in place of the plan's: egress/targets/writes.py). A resource policy, so `pulumi up` refuses the write:
required-egress-complete, a stack policy, runs only after every step was executed."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from .support import write_validator

NAME = "required-egress-complete-before-write"

POLICY = ResourceValidationPolicy(
    name=NAME,
    description="Each resource that carries egress rules (Azure rule collection group or IP Group, Network Firewall rule group, the "
                "egress proxy's squid.conf) still allows every requirement it is responsible for, judged on its checked inputs "
                "before it is written.",
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    validate=write_validator(lambda verdict: [f"writing this resource would stop allowing: {m}" for m in verdict.missing]
                             + ([verdict.foreign] if verdict.foreign else [])),
    remediation_steps="Deploy the stack's own program output (the resource was edited outside the matrix), or add the missing destination "
                      "to the matrix entry. `egress explain <destination>` shows which rule should allow it.",
)
