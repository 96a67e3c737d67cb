"""An existing firewall policy the rule groups are to run in (``awsFirewallPolicyArn``): what it must be (pure).

Read by ``components/aws_policy_reader.py`` before anything is registered. Refused: a policy not in STRICT_ORDER (a
strict-order rule group can only be referenced from a strict-order policy, and rule order never changes after
creation: reference/aws-egress.md §2.2, §2.4); one of our priorities held by a group not the stack's. Reported as
warnings: a default action that does not drop what no rule passes, the references the policy still lacks, and ours at
another priority than the plan's (references written before priorities were fixed per kind and role).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .plan import AwsCompileError, AwsPlan

DROPPING = ("aws:drop_established", "aws:drop_strict")


@dataclass(frozen=True)
class ExistingFirewallPolicy:
    """What was read of the policy; ``None`` fields: not read (offline, where the invoke answers nothing)."""

    arn: str
    rule_order: Optional[str] = None  # STRICT_ORDER | DEFAULT_ACTION_ORDER ('' when the policy does not say: AWS's default, action order)
    default_actions: Optional[tuple[str, ...]] = None
    references: Optional[tuple[tuple[str, int], ...]] = None  # (rule group ARN, priority)


def _ours(arn: str, group: str) -> bool:
    # Our groups are auto-named '<plan name>-<suffix>'.
    return arn.rsplit("/", 1)[-1].startswith(f"{group}-")


def check_existing_policy(plan: AwsPlan, policy: ExistingFirewallPolicy) -> list[str]:
    """Errors raise AwsCompileError; the warnings are returned for the program to log. Nothing read (offline): what
    could not be checked, as warnings; an unread policy is never judged as if it had no rule order or references."""
    if policy.rule_order is None or policy.default_actions is None or policy.references is None:
        ours = ", ".join(str(g.priority) for g in sorted(plan.rule_groups, key=lambda g: g.priority))
        return [f"firewall policy {policy.arn}: not read offline; its rule order (it must be STRICT_ORDER), its default actions and "
                f"whether priorities {ours} (this stack's) are free are checked when `pulumi preview` or `pulumi up` reads it"]
    if policy.rule_order != "STRICT_ORDER":
        raise AwsCompileError(f"firewall policy {policy.arn} uses rule order {policy.rule_order or 'DEFAULT_ACTION_ORDER'}; the rule groups "
                              "are STRICT_ORDER and only a STRICT_ORDER policy may reference them (a policy's rule order cannot be changed). "
                              "Fix: name a STRICT_ORDER policy in egress-matrix:awsFirewallPolicyArn, or set awsFirewallPolicy: true to "
                              "create one")
    by_priority = {priority: arn for arn, priority in policy.references}
    warnings = []
    missing = []
    moved = []
    for group in sorted(plan.rule_groups, key=lambda g: g.priority):
        holder = by_priority.get(group.priority)
        # Held by another of the stack's own groups: that reference moves too (an upgrade from positional priorities).
        if holder is not None and not any(_ours(holder, g.name) for g in plan.rule_groups):
            raise AwsCompileError(f"firewall policy {policy.arn} already references {holder} at priority {group.priority}, which rule group "
                                  f"{group.name} needs. Fix: set egress-matrix:awsPriorityBase so the groups' priorities "
                                  f"({', '.join(str(g.priority) for g in plan.rule_groups)}) are free in the policy")
        held = sorted(priority for arn, priority in policy.references if _ours(arn, group.name))
        if not held:
            missing.append(f"{group.name} at priority {group.priority}")
        elif group.priority not in held:
            moved.append(f"{group.name} at priority {', '.join(map(str, held))} (now {group.priority})")
    if missing:
        warnings.append(f"firewall policy {policy.arn} does not reference {', '.join(missing)} yet: add the references exported as "
                        "awsRuleGroupReferences to it")
    if moved:
        warnings.append(f"firewall policy {policy.arn} references {', '.join(moved)}: each group now has a fixed priority by its kind and "
                        "role; replace the policy's references to these groups with awsRuleGroupReferences")
    if not set(policy.default_actions) & set(DROPPING):
        warnings.append(f"firewall policy {policy.arn} has default actions {list(policy.default_actions)}: what no rule passes is not "
                        "dropped. Add aws:drop_established (and aws:alert_established) to its stateful default actions")
    return warnings
