"""egress-least-privilege-before-write: what one rule-carrying resource would allow beyond the stack's plan, judged
before it is written (advisory, as egress-least-privilege: AWS domain lists allow more than asked by design)."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from .support import write_validator

NAME = "egress-least-privilege-before-write"

POLICY = ResourceValidationPolicy(
    name=NAME,
    description="Each resource that carries egress rules allows nothing beyond what the stack's plan allows, judged on its checked "
                "inputs before it is written.",
    enforcement_level=EnforcementLevel.ADVISORY,
    severity=Severity.MEDIUM,
    validate=write_validator(lambda verdict: [f"writing this resource would allow beyond the matrix: {e}" for e in verdict.extra]),
    remediation_steps="Remove the rule or narrow it to the matrix's destinations.",
)
