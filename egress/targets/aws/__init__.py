"""AWS: Network Firewall stateful rule groups (domain lists or exact Suricata rules) and security-group egress rules.

compile.py  requirements -> AwsPlan (every decision)        render.py  AwsPlan -> request bodies, the engine's rules file
evaluate.py rendered artefacts -> Verdict (strict order)    rules.py   Suricata rules read the way the engine matches them
matching.py flows and what a rule covers or overlaps       extra.py   what the rules allow beyond the requirements
plan.py     the plan's models and AWS's limits              deployed.py deployed resources -> the same artefacts
"""
from __future__ import annotations

from typing import Iterable, Mapping

from ...models import Catalog, Requirement
from ..options import left_out_lines
from ..verdict import Verdict
from .deployed import artefacts as deployed_artefacts
from .compile import check_deploy_settings, compile_aws, enforced
from .evaluate import evaluate as evaluate_artefacts
from .plan import AwsCompileError, AwsPlan
from .render import render

NAME = "aws"


def evaluate(artefacts: Mapping[str, str], requirements: Iterable[Requirement], catalog: Catalog) -> Verdict:
    """The rendered rules file and security groups judged against the requirements they enforce."""
    return evaluate_artefacts(artefacts, requirements)


def left_out_notes(plan: AwsPlan) -> tuple:
    return tuple(plan.left_out)


def summary(plan: AwsPlan) -> str:
    used = sum(g.used for g in plan.rule_groups)
    allocated = sum(g.capacity for g in plan.rule_groups)
    sg_rules = sum(len(g.rules) for g in plan.security_groups)
    text = (f"{len(plan.rule_groups)} rule group(s) ({plan.form}), capacity {used}/{allocated}, "
            f"{len(plan.security_groups)} security group(s) with {sg_rules} egress rules")
    text = "\n".join([text, *(f"  warning: {w}" for w in plan.warnings), *left_out_lines("aws", plan.left_out)])
    widened = [b for b in plan.broadening if b.allows]
    if not widened:
        return text
    return "\n".join([text, f"The domain lists allow more than the matrix for {len(widened)} target(s) (aws/domain-list-broadening.txt):", *(f"  {b.role} {b.target_type} {b.target}: {b.allows}" for b in widened)])


__all__ = ["NAME", "deployed_artefacts", "AwsCompileError", "AwsPlan", "check_deploy_settings", "compile_aws", "enforced", "evaluate", "left_out_notes", "render", "summary"]
