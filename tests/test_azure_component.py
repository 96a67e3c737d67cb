"""AzureFirewallEgress under the Pulumi SDK mocks: exact resources, names, priorities, rule contents, depends_on chain."""
from __future__ import annotations

from pathlib import Path

import pulumi
from pulumi.runtime import rpc
from pulumi.runtime.mocks import MockMonitor

from egress.targets.azure.compile import compile_azure
from egress.targets.azure.render import plan_bodies
from egress.project import open_project

ROOT = Path(__file__).resolve().parents[1]


class Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args):
        state = dict(args.inputs)
        if args.typ == "azure-native:network:FirewallPolicy":
            state["name"] = "policy-autoname"  # the provider's autoname; RCGs must use the real name
        if args.typ == "azure-native:network:IpGroup":
            return f"/ipGroups/{args.inputs['ipGroupsName']}", state
        return f"/ids/{args.name}", state

    def call(self, args):
        return {}


class RecordingMonitor(MockMonitor):
    """Keeps what the engine would receive: type, name, parent, dependencies and inputs of every registration."""

    def __init__(self, mocks):
        super().__init__(mocks)
        self.registrations = []

    def RegisterResource(self, request):
        response = super().RegisterResource(request)
        if request.type == "pulumi:pulumi:Stack":
            return response
        inputs = rpc.deserialize_properties(request.object)
        self.registrations.append({"type": request.type, "name": request.name, "urn": response.urn,
                                   "parent": request.parent, "dependencies": list(request.dependencies), "inputs": inputs})
        return response


def deploy(stack: str, existing_policy_id: str | None = None, **overrides):
    from components.azure_firewall import AzureFirewallEgress

    catalog, profile, reqs = open_project(ROOT).requirements(stack)
    profile = profile.model_copy(update=overrides)
    plan = compile_azure(catalog, profile, reqs)
    mocks = Mocks()
    monitor = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project="egress-matrix", stack=stack, preview=False, monitor=monitor)
    outputs = {}

    @pulumi.runtime.test
    def run():
        component = AzureFirewallEgress("egress", plan, resource_group_name=profile.azure_resource_group, location=profile.location,
                                        existing_policy_id=existing_policy_id)
        return pulumi.Output.all(component.policy_id, component.rule_collection_groups, component.rule_counts).apply(
            lambda values: outputs.update(policy=values[0], groups=values[1], counts=values[2]))

    run()
    return plan, monitor.registrations, outputs


def _ints(value):
    """The engine carries numbers as floats; the REST body has ints."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_ints(v) for v in value]
    return value


def _by_name(registrations):
    return {r["name"]: r for r in registrations}


def test_dev_stack_resources_names_and_chain():
    plan, registrations, outputs = deploy("dev")
    assert sorted((r["type"], r["name"]) for r in registrations) == [
        ("azure-native:network:FirewallPolicy", "egress-policy"),
        ("azure-native:network:FirewallPolicyRuleCollectionGroup", "egress-aks"),
        ("azure-native:network:FirewallPolicyRuleCollectionGroup", "egress-kkp"),
        ("azure-native:network:FirewallPolicyRuleCollectionGroup", "egress-openshift"),
        ("azure-native:network:IpGroup", "egress-nodes"),
        ("egress:azure:FirewallEgress", "egress"),
    ]
    by = _by_name(registrations)
    component_urn = by["egress"]["urn"]
    assert all(r["parent"] == component_urn for r in registrations if r["name"] != "egress")
    policy, ipg = by["egress-policy"]["urn"], by["egress-nodes"]["urn"]
    assert by["egress-policy"]["inputs"] == {"resourceGroupName": "rg-egress-dev", "location": "westeurope", "sku": {"tier": "Standard"},
                                             "dnsSettings": {"enableProxy": False}}
    assert by["egress-nodes"]["inputs"] == {"resourceGroupName": "rg-egress-dev", "location": "westeurope", "ipGroupsName": "egress-dev-nodes",
                                            "ipAddresses": ["10.0.0.0/16"]}
    # One RCG write at a time: each group waits for the policy, the IP Groups and the group before it.
    assert sorted(by["egress-aks"]["dependencies"]) == sorted([policy, ipg])
    assert sorted(by["egress-kkp"]["dependencies"]) == sorted([policy, ipg, by["egress-aks"]["urn"]])
    assert sorted(by["egress-openshift"]["dependencies"]) == sorted([policy, ipg, by["egress-kkp"]["urn"]])
    expected = {b["name"]: b for b in plan_bodies(plan, {"nodes": "/ipGroups/egress-dev-nodes"})}
    for group in plan.groups:
        inputs = by[f"egress-{group.platform}"]["inputs"]
        assert inputs["ruleCollectionGroupName"] == group.name
        assert inputs["priority"] == group.priority
        assert inputs["resourceGroupName"] == "rg-egress-dev" and inputs["firewallPolicyName"] == "policy-autoname"
        assert _ints(inputs["ruleCollections"]) == expected[group.name]["properties"]["ruleCollections"]
    assert outputs == {"policy": "/ids/egress-policy", "groups": ["egress-dev-aks", "egress-dev-kkp", "egress-dev-openshift"],
                       "counts": {"egress-dev-aks": 6, "egress-dev-kkp": 2, "egress-dev-openshift": 1}}


def test_existing_policy_and_inline_sources():
    policy_id = "/subscriptions/s/resourceGroups/rg-hub/providers/Microsoft.Network/firewallPolicies/fw-policy-hub"
    plan, registrations, outputs = deploy("aks-china", existing_policy_id=policy_id)
    assert [(r["type"], r["name"]) for r in registrations] == [
        ("egress:azure:FirewallEgress", "egress"),
        ("azure-native:network:FirewallPolicyRuleCollectionGroup", "egress-aks"),
    ]
    rcg = registrations[1]["inputs"]
    assert (rcg["resourceGroupName"], rcg["firewallPolicyName"], rcg["priority"]) == ("rg-hub", "fw-policy-hub", 1000)
    assert registrations[1]["dependencies"] == []
    sources = {tuple(rule["sourceAddresses"]) for c in rcg["ruleCollections"] for rule in c["rules"]}
    assert sources == {("10.30.16.0/20",)}
    assert all("sourceIpGroups" not in rule for c in rcg["ruleCollections"] for rule in c["rules"])
    assert outputs["policy"] == policy_id


def test_never_terminates_tls():
    _, registrations, _ = deploy("aks-public")
    rules = [rule for r in registrations if r["type"].endswith("RuleCollectionGroup") for c in r["inputs"]["ruleCollections"] for rule in c["rules"]]
    app_rules = [rule for rule in rules if rule["ruleType"] == "ApplicationRule"]
    assert app_rules and all(rule["terminateTLS"] is False for rule in app_rules)
    assert any("*.hcp.francecentral.azmk8s.io" in rule.get("targetFqdns", []) for rule in app_rules)


def test_existing_ip_group_is_used_not_created():
    existing = "/subscriptions/s/resourceGroups/rg-net/providers/Microsoft.Network/ipGroups/ipg-aks-nodes"
    _, registrations, _ = deploy("aks-public", azure_ip_group_ids=(f"nodes={existing}",))
    assert sorted(r["type"] for r in registrations) == [
        "azure-native:network:FirewallPolicy", "azure-native:network:FirewallPolicyRuleCollectionGroup", "egress:azure:FirewallEgress"]
    rcg = next(r for r in registrations if r["type"].endswith("RuleCollectionGroup"))
    assert {tuple(rule["sourceIpGroups"]) for c in rcg["inputs"]["ruleCollections"] for rule in c["rules"]} == {(existing,)}
