"""Read an existing Network Firewall policy (``awsFirewallPolicyArn``) with an invoke, before anything is registered,
for ``egress.targets.aws.policy.check_existing_policy``."""
from __future__ import annotations

import pulumi_aws as aws

from egress.targets.aws.policy import ExistingFirewallPolicy


def read_existing_policy(arn: str) -> ExistingFirewallPolicy:
    found = aws.networkfirewall.get_firewall_policy(arn=arn)
    if not found.firewall_policies:  # the offline preview's mocks answer nothing: nothing was read, nothing is known
        return ExistingFirewallPolicy(arn=arn)
    (policy,) = found.firewall_policies
    engine = policy.stateful_engine_options[0] if policy.stateful_engine_options else None
    return ExistingFirewallPolicy(
        arn=arn, rule_order=(engine.rule_order or "") if engine else "",
        default_actions=tuple(policy.stateful_default_actions or ()),
        references=tuple((ref.resource_arn, int(ref.priority)) for ref in policy.stateful_rule_group_references or ()))
