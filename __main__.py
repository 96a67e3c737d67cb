"""egress-matrix Pulumi program: stack config -> core -> components -> exports.

The stack's required-endpoint matrix is resolved, exported, and compiled for each enforcement target the stack
lists in `egress-matrix:targets` (today: azure; AWS and Kubernetes arrive with their issues).
"""
from pathlib import Path

import pulumi

from egress.catalog import load_catalog
from egress.errors import EgressError
from egress.exports import allowlist_exports
from egress.profile import PROJECT, profile_from_pulumi_config
from egress.render import requirement_json
from egress.resolve import resolve
from egress.targets import target

ROOT = Path(__file__).resolve().parent
stack = pulumi.get_stack()

try:
    catalog = load_catalog(ROOT / "matrix")
    profile = profile_from_pulumi_config(pulumi.Config(PROJECT).get, stack)
    requirements = resolve(catalog, profile, f"Pulumi config of stack '{stack}'", stack)
    plans = {}
    for name in profile.targets:
        spec = target(name)
        spec.check_deploy(profile)
        plans[name] = spec.compile(catalog, profile, requirements, f"Pulumi config of stack '{stack}'")
except EgressError as exc:
    # RunError: Pulumi shows the message alone (no traceback); nothing has been registered at this point.
    raise pulumi.RunError(f"{type(exc).__name__}: {exc}") from None

pulumi.export("requirementCount", len(requirements))
pulumi.export("requirements", [requirement_json(r) for r in requirements])
# Addresses of this cluster that other teams must allow (IBM Cloud: gateway IPs, worker subnets, control plane).
pulumi.export("allowlistExports", allowlist_exports(catalog, profile))

if "azure" in plans:
    from components.azure_firewall import AzureFirewallEgress

    firewall = AzureFirewallEgress("egress", plans["azure"], resource_group_name=profile.azure_resource_group,
                                   location=profile.location, existing_policy_id=profile.azure_policy_id)
    pulumi.export("azureFirewallPolicyId", firewall.policy_id)
    pulumi.export("azureRuleCollectionGroups", firewall.rule_collection_groups)
    pulumi.export("azureRuleCounts", firewall.rule_counts)
