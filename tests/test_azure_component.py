"""AzureFirewallEgress under the Pulumi SDK mocks: exact resources, names, priorities, rule contents, write chains,
the explicit provider for a hub policy in another subscription, and the invokes that judge an existing policy."""
from __future__ import annotations

from pathlib import Path

import pulumi
import pytest

from egress.project import open_project
from egress.resolve import resolve
from egress.targets.azure.compile import compile_azure, fqdn_tag_members
from egress.targets.azure.plan import AzureCompileError
from egress.targets.azure.policy import check_existing_policy
from egress.targets.azure.render import plan_bodies

from components.engine_values import engine_numbers
from pulumi_harness import RecordingMonitor, by_name

ROOT = Path(__file__).resolve().parents[1]


SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"


def created_ip_group_id(inputs: dict, subscription: str = SUBSCRIPTION) -> str:
    return f"/subscriptions/{subscription}/resourceGroups/{inputs['resourceGroupName']}/providers/Microsoft.Network/ipGroups/{inputs['ipGroupsName']}"


class Mocks(pulumi.runtime.Mocks):
    """``policies``: what the invokes find, {policy name: {"dnsSettings": ..., "basePolicy": ..., "groups": {name: body}}}.
    ``ip_group_id``: the id Azure gives a created IP Group (from its inputs); in a preview a create's id is not known."""

    def __init__(self, policies=None, ip_group_id=created_ip_group_id, preview=False):
        self.policies = policies or {}
        self.calls = []
        self.ip_group_id = ip_group_id
        self.preview = preview

    def new_resource(self, args):
        state = dict(args.inputs)
        if args.typ == "azure-native:network:FirewallPolicy":
            state["name"] = "policy-autoname"  # the provider's autoname; RCGs must use the real name
        if args.typ == "azure-native:network:IpGroup":
            # An empty id at preview is an unknown one to the SDK (as the engine answers a create it has not run).
            return ("" if self.preview else self.ip_group_id(args.inputs)), state
        return f"/ids/{args.name}", state

    def call(self, args):
        self.calls.append((args.token, dict(args.args), args.provider))
        policy = self.policies.get(args.args.get("firewallPolicyName"), {})
        if args.token == "azure-native:network:getFirewallPolicy":
            base = "/subscriptions/s/resourceGroups/rg-hub/providers/Microsoft.Network/firewallPolicies/" + args.args["firewallPolicyName"]
            return {key: value for key, value in policy.items() if key != "groups"} | {
                "ruleCollectionGroups": [{"id": f"{base}/ruleCollectionGroups/{name}"} for name in policy.get("groups", {})]}
        if args.token == "azure-native:network:getFirewallPolicyRuleCollectionGroup":
            body = policy["groups"][args.args["ruleCollectionGroupName"]]
            return {"name": body["name"], "priority": body["properties"]["priority"], "ruleCollections": body["properties"]["ruleCollections"]}
        return {}


def deploy(stack: str, policies=None, mocks=None, preview=False, **overrides):
    """What __main__.py does for the azure target: provider, existing-policy check, component."""
    from components.azure_firewall import AzureFirewallEgress
    from components.azure_policy_reader import policy_provider, read_existing_policy

    catalog, profile, reqs = open_project(ROOT).requirements(stack)
    profile = profile.model_copy(update=overrides)
    reqs = resolve(catalog, profile)
    plan = compile_azure(catalog, profile, reqs)
    mocks = mocks or Mocks(policies, preview=preview)
    monitor = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project="egress-matrix", stack=stack, preview=preview, monitor=monitor)
    outputs = {}

    @pulumi.runtime.test
    def run():
        provider = policy_provider("egress", plan.policy)
        if plan.policy.existing_id:
            check_existing_policy(plan, read_existing_policy(plan.policy, provider), reqs, fqdn_tag_members(catalog, reqs))
        component = AzureFirewallEgress("egress", plan, resource_group_name=profile.azure_resource_group, location=profile.location,
                                        policy_provider=provider)
        return pulumi.Output.all(component.policy_id, component.rule_collection_groups, component.rule_counts).apply(
            lambda values: outputs.update(policy=values[0], groups=values[1], counts=values[2]))

    run()
    return plan, monitor.registrations, outputs, mocks


def test_dev_stack_resources_names_and_chain():
    plan, registrations, outputs, _ = deploy("dev")
    assert sorted((r["type"], r["name"]) for r in registrations) == [
        ("azure-native:network:FirewallPolicy", "egress-policy"),
        ("azure-native:network:FirewallPolicyRuleCollectionGroup", "egress-aks"),
        ("azure-native:network:FirewallPolicyRuleCollectionGroup", "egress-kkp"),
        ("azure-native:network:FirewallPolicyRuleCollectionGroup", "egress-openshift"),
        ("azure-native:network:IpGroup", "egress-nodes"),
        ("egress:azure:FirewallEgress", "egress"),
    ]
    by = by_name(registrations)
    component_urn = by["egress"]["urn"]
    assert all(r["parent"] == component_urn for r in registrations if r["name"] != "egress")
    policy, ipg = by["egress-policy"]["urn"], by["egress-nodes"]["urn"]
    assert by["egress-policy"]["inputs"] == {"resourceGroupName": "rg-egress-dev", "location": "westeurope", "sku": {"tier": "Standard"},
                                             "threatIntelMode": "Deny", "dnsSettings": {"enableProxy": False}}
    assert by["egress-nodes"]["dependencies"] == [policy]  # destroy: IP Groups go while the policy still exists
    assert by["egress-nodes"]["inputs"] == {"resourceGroupName": "rg-egress-dev", "location": "westeurope", "ipGroupsName": "egress-dev-nodes",
                                            "ipAddresses": ["10.0.0.0/16"]}
    # One RCG write at a time: each group waits for the policy, the IP Groups and the group before it.
    assert sorted(by["egress-aks"]["dependencies"]) == sorted([policy, ipg])
    assert sorted(by["egress-kkp"]["dependencies"]) == sorted([policy, ipg, by["egress-aks"]["urn"]])
    assert sorted(by["egress-openshift"]["dependencies"]) == sorted([policy, ipg, by["egress-kkp"]["urn"]])
    nodes_id = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg-egress-dev/providers/Microsoft.Network/ipGroups/egress-dev-nodes"
    expected = {b["name"]: b for b in plan_bodies(plan, {"nodes": nodes_id})}
    for group in plan.groups:
        inputs = by[f"egress-{group.platform}"]["inputs"]
        assert inputs["ruleCollectionGroupName"] == group.name
        assert inputs["priority"] == group.priority
        assert inputs["resourceGroupName"] == "rg-egress-dev" and inputs["firewallPolicyName"] == "policy-autoname"
        assert engine_numbers(inputs["ruleCollections"]) == expected[group.name]["properties"]["ruleCollections"]
    assert outputs == {"policy": "/ids/egress-policy", "groups": ["egress-dev-aks", "egress-dev-kkp", "egress-dev-openshift"],
                       "counts": {"egress-dev-aks": 6, "egress-dev-kkp": 3, "egress-dev-openshift": 1}}


HUB = "/subscriptions/s/resourceGroups/rg-hub/providers/Microsoft.Network/firewallPolicies/fw-policy-hub"


def test_existing_policy_in_another_subscription_gets_its_own_provider():
    plan, registrations, outputs, mocks = deploy("aks-china", azure_policy_id=HUB)
    assert [(r["type"], r["name"]) for r in registrations] == [
        ("pulumi:providers:azure-native", "egress-policy-subscription"),
        ("egress:azure:FirewallEgress", "egress"),
        ("azure-native:network:FirewallPolicyRuleCollectionGroup", "egress-aks"),
    ]
    provider = registrations[0]
    assert provider["inputs"]["subscriptionId"] == "s"
    assert registrations[2]["provider"].startswith(provider["urn"] + "::")  # the groups land in the policy's subscription
    assert [(token, call["firewallPolicyName"]) for token, call, _ in mocks.calls] == [("azure-native:network:getFirewallPolicy", "fw-policy-hub")]
    assert all(ref.startswith(provider["urn"]) for _, _, ref in mocks.calls)  # and are read there
    rcg = registrations[2]["inputs"]
    assert (rcg["resourceGroupName"], rcg["firewallPolicyName"], rcg["priority"]) == ("rg-hub", "fw-policy-hub", 1000)
    assert registrations[2]["dependencies"] == []
    sources = {tuple(rule["sourceAddresses"]) for c in rcg["ruleCollections"] for rule in c["rules"]}
    assert sources == {("10.30.16.0/20",)}
    assert all("sourceIpGroups" not in rule for c in rcg["ruleCollections"] for rule in c["rules"])
    assert outputs["policy"] == HUB


def test_never_terminates_tls():
    _, registrations, _, _ = deploy("aks-public")
    rules = [rule for r in registrations if r["type"].endswith("RuleCollectionGroup") for c in r["inputs"]["ruleCollections"] for rule in c["rules"]]
    app_rules = [rule for rule in rules if rule["ruleType"] == "ApplicationRule"]
    assert app_rules and all(rule["terminateTLS"] is False for rule in app_rules)
    assert any("*.hcp.francecentral.azmk8s.io" in rule.get("targetFqdns", []) for rule in app_rules)


def test_existing_ip_group_is_used_not_created():
    existing = "/subscriptions/s/resourceGroups/rg-net/providers/Microsoft.Network/ipGroups/ipg-aks-nodes"
    _, registrations, _, _ = deploy("aks-public", azure_ip_group_ids=(f"nodes={existing}",))
    assert sorted(r["type"] for r in registrations) == [
        "azure-native:network:FirewallPolicy", "azure-native:network:FirewallPolicyRuleCollectionGroup", "egress:azure:FirewallEgress"]
    rcg = next(r for r in registrations if r["type"].endswith("RuleCollectionGroup"))
    assert {tuple(rule["sourceIpGroups"]) for c in rcg["inputs"]["ruleCollections"] for rule in c["rules"]} == {(existing,)}


def _hub_group(name: str, priority: int, action: str = "Allow", rules=()) -> dict:
    return {"name": name, "properties": {"priority": priority, "ruleCollections": [
        {"ruleCollectionType": "FirewallPolicyFilterRuleCollection", "name": f"{name}-rules", "priority": 100, "action": {"type": action},
         "rules": list(rules)}]}}


def test_ip_group_writes_are_serialized():
    _, registrations, _, _ = deploy("dev", azure_roles=("nodes", "seed"))
    by = by_name(registrations)
    assert by["egress-seed"]["inputs"]["ipGroupsName"] == "egress-dev-seed"
    assert by["egress-nodes"]["dependencies"] == [by["egress-policy"]["urn"]]
    assert by["egress-seed"]["dependencies"] == [by["egress-nodes"]["urn"]]  # one IP Group update at a time
    first_rcg = min((r for r in registrations if r["type"].endswith("RuleCollectionGroup")), key=lambda r: r["inputs"]["priority"])
    assert sorted(first_rcg["dependencies"]) == sorted([by["egress-policy"]["urn"], by["egress-nodes"]["urn"], by["egress-seed"]["urn"]])


def test_policy_in_the_stacks_own_subscription_uses_the_default_provider():
    own = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-hub/providers/Microsoft.Network/firewallPolicies/fw-policy-hub"
    _, registrations, _, mocks = deploy("aks-public", azure_policy_id=own)
    assert "pulumi:providers:azure-native" not in [r["type"] for r in registrations]
    assert [ref for _, _, ref in mocks.calls] == [""]


def test_existing_policy_is_read_and_a_priority_clash_refused_before_anything_is_written():
    taken = {"fw-policy-hub": {"dnsSettings": {"enableProxy": True}, "groups": {"team-b-egress": _hub_group("team-b-egress", 1000)}}}
    with pytest.raises(AzureCompileError, match=r"egress-aks-china-aks: priority 1000 is taken on Firewall Policy .*fw-policy-hub by team-b-egress\. "
                                                r"Fix: move egress-matrix:azurePriorityBase"):
        deploy("aks-china", policies=taken, azure_policy_id=HUB)
    free = {"fw-policy-hub": {"dnsSettings": {"enableProxy": True}, "groups": {"team-b-egress": _hub_group("team-b-egress", 500),
                                                                                 "egress-aks-china-aks": _hub_group("egress-aks-china-aks", 1000)}}}
    _, registrations, _, mocks = deploy("aks-china", policies=free, azure_policy_id=HUB)
    assert [r["name"] for r in registrations if r["type"].endswith("RuleCollectionGroup")] == ["egress-aks"]  # its own group, re-written
    assert sorted(call["ruleCollectionGroupName"] for token, call, _ in mocks.calls if token.endswith("Group")) == ["egress-aks-china-aks", "team-b-egress"]


def test_two_clusters_share_one_hub_policy():
    """Hub and spoke: each stack's groups carry its cluster name; distinct priority bases keep them apart."""
    public, _, _, _ = deploy("aks-public", azure_policy_id=HUB)
    hub = {"fw-policy-hub": {"dnsSettings": {"enableProxy": False}, "groups": {g.name: _hub_group(g.name, g.priority) for g in public.groups}}}
    china, registrations, _, _ = deploy("aks-china", policies=hub, azure_policy_id=HUB, azure_priority_base=2000)
    assert [(g.name, g.priority) for g in public.groups] == [("egress-aks-public-aks", 1000)]
    assert [(g.name, g.priority) for g in china.groups] == [("egress-aks-china-aks", 2000)]
    assert china.ip_group_name("nodes") != public.ip_group_name("nodes")
    with pytest.raises(AzureCompileError, match="priority 1000 is taken .* by egress-aks-public-aks"):
        deploy("aks-china", policies=hub, azure_policy_id=HUB)


def test_fqdn_network_rules_need_the_existing_policys_dns_proxy():
    no_proxy = {"fw-policy-hub": {"groups": {}}}  # no dnsSettings: the proxy is off
    with pytest.raises(AzureCompileError, match=r"has its DNS proxy off, but rules aks-core-udp-123-fqdns use FQDNs in network rules"):
        deploy("aks-china", policies=no_proxy, azure_policy_id=HUB, azure_dns_proxy=True)
    proxied = {"fw-policy-hub": {"dnsSettings": {"enableProxy": True}, "groups": {}}}
    assert deploy("aks-china", policies=proxied, azure_policy_id=HUB, azure_dns_proxy=True)[1]


def test_a_deny_in_the_base_policy_is_refused():
    base = "/subscriptions/s/resourceGroups/rg-hub/providers/Microsoft.Network/firewallPolicies/fw-policy-base"
    deny_mcr = {"ruleType": "ApplicationRule", "name": "no-mcr", "sourceAddresses": ["*"], "protocols": [{"protocolType": "Https", "port": 443}],
                "targetFqdns": ["mcr.microsoft.com"]}
    policies = {"fw-policy-hub": {"dnsSettings": {"enableProxy": True}, "basePolicy": {"id": base}, "groups": {}},
                "fw-policy-base": {"groups": {"org-deny": _hub_group("org-deny", 200, "Deny", [deny_mcr])}}}
    with pytest.raises(AzureCompileError, match=r"the base policy .*fw-policy-base of .*fw-policy-hub blocks 1 requirement\(s\) before this stack's "
                                                r"rules are reached: nodes -> mcr.microsoft.com https/443 .*denied by parent/org-deny/org-deny-rules/no-mcr"):
        deploy("aks-china", policies=policies, azure_policy_id=HUB)
    policies["fw-policy-base"]["groups"]["org-deny"] = _hub_group("org-deny", 200, "Deny", [deny_mcr | {"targetFqdns": ["evil.example.com"]}])
    assert deploy("aks-china", policies=policies, azure_policy_id=HUB)[1]


def test_created_policy_settings_premium_dns_servers_and_firewall_logs():
    firewall = "/subscriptions/s/resourceGroups/rg-hub/providers/Microsoft.Network/azureFirewalls/fw-hub"
    workspace = "/subscriptions/s/resourceGroups/rg-logs/providers/Microsoft.OperationalInsights/workspaces/law-hub"
    base = "/subscriptions/s/resourceGroups/rg-hub/providers/Microsoft.Network/firewallPolicies/fw-policy-base"
    _, registrations, _, _ = deploy("aks-public", azure_firewall_tier="Premium", azure_dns_proxy=True, azure_base_policy_id=base,
                                    azure_firewall_id=firewall, azure_log_analytics_workspace_id=workspace)
    by = by_name(registrations)
    assert by["egress-policy"]["inputs"] == {
        "resourceGroupName": "rg-egress-aks-public", "location": "francecentral", "sku": {"tier": "Premium"}, "threatIntelMode": "Deny",
        "intrusionDetection": {"mode": "Deny"}, "basePolicy": {"id": base},
        "dnsSettings": {"enableProxy": True, "servers": ["10.10.0.4", "10.10.0.5"]}}  # the DNS proxy forwards to the stack's DNS servers
    logs = by["egress-firewall-logs"]["inputs"]
    assert (logs["resourceUri"], logs["workspaceId"], logs["logAnalyticsDestinationType"], logs["name"]) == (
        firewall, workspace, "Dedicated", "egress-aks-public")
    assert [entry["category"] for entry in logs["logs"]] == ["AZFWApplicationRule", "AZFWNetworkRule", "AZFWNatRule", "AZFWThreatIntel",
                                                             "AZFWIdpsSignature", "AZFWDnsQuery", "AZFWFqdnResolveFailure"]


@pytest.mark.parametrize("overrides, message", [
    ({"azure_idps_mode": "Alert"}, "IDPS is a Premium feature and azureFirewallTier is Standard"),
    ({"azure_log_analytics_workspace_id": "/subscriptions/s/resourceGroups/r/providers/Microsoft.OperationalInsights/workspaces/w"},
     "azureLogAnalyticsWorkspaceId is set but not azureFirewallId"),
    ({"azure_policy_id": HUB, "azure_firewall_tier": "Premium"}, "azureFirewallTier configure the policy the component creates"),
])
def test_policy_settings_that_cannot_apply_are_errors(overrides, message):
    catalog, profile, reqs = open_project(ROOT).requirements("aks-public")
    with pytest.raises(AzureCompileError, match=message):
        compile_azure(catalog, profile.model_copy(update=overrides), reqs)


# -- IP Group ids known at preview (constructed), checked at up --------------------------------------------------------------

def _rcg_sources(registrations) -> dict[str, set]:
    return {r["name"]: {tuple(rule.get("sourceIpGroups", ())) for c in r["inputs"]["ruleCollections"] for rule in c["rules"]}
            for r in registrations if r["type"].endswith("RuleCollectionGroup")}


NODES_ID = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg-egress-dev/providers/Microsoft.Network/ipGroups/egress-dev-nodes"


def test_rule_sources_are_known_at_a_first_preview():
    """The IP Group is created in this update: its id is unknown at preview, the constructed one the rules carry is not."""
    plan, registrations, _, _ = deploy("dev", preview=True)
    assert _rcg_sources(registrations) == {"egress-aks": {(NODES_ID,)}, "egress-kkp": {(NODES_ID,)}, "egress-openshift": {(NODES_ID,)}}
    expected = {b["name"]: b["properties"]["ruleCollections"] for b in plan_bodies(plan, {"nodes": NODES_ID})}
    by = by_name(registrations)
    for group in plan.groups:  # the whole input is known and is the body egress render writes
        assert engine_numbers(by[f"egress-{group.platform}"]["inputs"]["ruleCollections"]) == expected[group.name]
        assert by["egress-nodes"]["urn"] in by[f"egress-{group.platform}"]["dependencies"]


class PropertyDependencies(RecordingMonitor):
    def RegisterResource(self, request):
        response = super().RegisterResource(request)
        self.registrations[-1]["rule_collections_from"] = sorted(request.propertyDependencies["ruleCollections"].urns) \
            if "ruleCollections" in request.propertyDependencies else None
        return response


@pytest.mark.parametrize("preview", [True, False])
def test_each_group_names_the_ip_groups_its_rules_use_as_property_dependencies(preview):
    """What the pack can follow from a group's ruleCollections to the IP Groups (and their addresses), at preview and at up."""
    catalog, profile, reqs = open_project(ROOT).requirements("dev")
    profile = profile.model_copy(update={"azure_roles": ("nodes", "seed")})
    plan = compile_azure(catalog, profile, resolve(catalog, profile))
    mocks = Mocks(preview=preview)
    monitor = PropertyDependencies(mocks)
    pulumi.runtime.set_mocks(mocks, project="egress-matrix", stack="dev", preview=preview, monitor=monitor)

    @pulumi.runtime.test
    def run():
        from components.azure_firewall import AzureFirewallEgress

        AzureFirewallEgress("egress", plan, resource_group_name=profile.azure_resource_group, location=profile.location)
        return pulumi.Output.from_input(1)

    run()
    by = by_name(monitor.registrations)
    expected = {f"egress-{g.platform}": sorted(by[f"egress-{role}"]["urn"] for role in sorted({r.role for c in g.collections for r in c.rules}))
                for g in plan.groups}
    assert {name: by[name]["rule_collections_from"] for name in expected} == expected
    assert sorted(map(len, expected.values())) == [1, 1, 2]  # kkp's rules serve both roles


def test_a_created_id_in_another_case_is_the_same_id():
    mocks = Mocks(ip_group_id=lambda inputs: created_ip_group_id(inputs).upper().replace("/SUBSCRIPTIONS/", "/subscriptions/"))
    _, registrations, _, _ = deploy("dev", mocks=mocks)
    assert set(_rcg_sources(registrations)) == {"egress-aks", "egress-kkp", "egress-openshift"}
    assert all(sources == {(NODES_ID,)} for sources in _rcg_sources(registrations).values())


def test_a_created_id_that_differs_stops_the_program_before_any_group_is_written():
    other = "11111111-1111-1111-1111-111111111111"
    mocks = Mocks(ip_group_id=lambda inputs: created_ip_group_id(inputs, other))
    monitor_registrations = []

    class Recording(RecordingMonitor):
        def RegisterResource(self, request):
            monitor_registrations.append(request.type)
            return super().RegisterResource(request)

    catalog, profile, reqs = open_project(ROOT).requirements("dev")
    plan = compile_azure(catalog, profile, reqs)
    pulumi.runtime.set_mocks(mocks, project="egress-matrix", stack="dev", preview=False, monitor=Recording(mocks))

    @pulumi.runtime.test
    def run():
        from components.azure_firewall import AzureFirewallEgress

        component = AzureFirewallEgress("egress", plan, resource_group_name=profile.azure_resource_group, location=profile.location)
        return component.policy_id

    with pytest.raises(pulumi.RunError) as info:
        run()
    assert str(info.value) == (
        f"AzureCompileError: Pulumi config of stack 'dev': IP Group egress-dev-nodes (role nodes) was created as /subscriptions/{other}/"
        "resourceGroups/rg-egress-dev/providers/Microsoft.Network/ipGroups/egress-dev-nodes, but the rules were written for "
        f"{NODES_ID} (egress-matrix:azureSubscriptionId and azureResourceGroup). No rule collection group naming it was written. Fix: set "
        "egress-matrix:azureSubscriptionId to the subscription the azure-native provider deploys to, or point the provider at it "
        "(az account set --subscription, ARM_SUBSCRIPTION_ID, or azure-native:subscriptionId)")
    assert "azure-native:network:FirewallPolicyRuleCollectionGroup" not in monitor_registrations
    assert "azure-native:network:IpGroup" in monitor_registrations


def test_without_a_subscription_the_rules_use_the_created_ids_and_the_program_says_so(monkeypatch):
    warnings = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *args, **kwargs: warnings.append(message))
    _, registrations, _, _ = deploy("dev", azure_subscription_id=None)
    assert all(sources == {(NODES_ID,)} for sources in _rcg_sources(registrations).values())  # the created id, as Azure returned it
    assert warnings == [
        "egress-matrix:azureSubscriptionId is not set: the rule collection groups reference the IP Groups by their created ids, which a "
        "first pulumi preview does not know, so the policy pack cannot judge those groups' sources until the IP Groups exist. Fix: set "
        "egress-matrix:azureSubscriptionId to the subscription the IP Groups are created in"]
    warnings.clear()
    _, registrations, _, _ = deploy("dev", preview=True, azure_subscription_id=None)
    assert len(warnings) == 1
    assert all(rule.get("sourceIpGroups") != [NODES_ID] for r in registrations if r["type"].endswith("RuleCollectionGroup")
               for c in r["inputs"]["ruleCollections"] for rule in c["rules"])  # not known at a first preview
