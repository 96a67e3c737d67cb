"""Source groups on Azure Firewall (issue 19): an IP Group per group, the group's own rules sourced from it, judged by the
Azure evaluator, read back from deployed resources at every engine phase, and refused clearly where Azure would refuse."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from egress.deployed import DeployedResource
from egress.project import open_project
from egress.targets import azure
from egress.targets.azure.compile import compile_azure
from egress.targets.azure.deployed import IP_GROUP_TYPE, RCG_TYPE, ip_group_keys
from egress.targets.azure.plan import AzureCompileError
from egress.targets.azure.render import render
from egress_preview.pack import run_pack
from egress_preview.program import run_program, stack_config

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from rule_breaks import drop_azure_fqdn  # noqa: E402

SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"
IPG = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg-egress-aks-public/providers/Microsoft.Network/ipGroups/"
STRIPE = "    - {id: stripe, destination: api.stripe.com, role: payments, purpose: Payments API, owner: team-payments, reference: PAY-123}\n"
# aks-public's nodes are 10.10.16.0/20: the payments pool is one of their subnets.
PAYMENTS = "  egress-matrix:sourceGroups:\n    payments: [10.10.17.0/24]\n  egress-matrix:entries:\n" + STRIPE


def write_stack(directory: Path, extra: str, cluster: str = "aks-public", name: str = "grp") -> str:
    """aks-public with ``extra`` settings (an own catalog's features turned on when it names one), its cluster renamed."""
    text = (ROOT / "stacks" / "Pulumi.aks-public.yaml").read_text().replace("clusterName: aks-public", f"clusterName: {cluster}")
    if "egress-matrix:catalogs: [team-catalog]" in extra:
        text = text.replace("features: [pod-api-access,", "features: [core-payments, pod-api-access,")
    (directory / "stacks" / f"Pulumi.{name}.yaml").write_text(text + extra)
    return name


def compiled(directory: Path, extra: str, cluster: str = "aks-public"):
    catalog, profile, reqs = open_project(directory).requirements(write_stack(directory, extra, cluster))
    return catalog, profile, reqs, compile_azure(catalog, profile, reqs)


def rules_of(plan):
    return {r.name: r for g in plan.groups for c in g.collections for r in c.rules}


def test_a_group_gets_its_own_ip_group_and_rule(project_copy):
    catalog, profile, reqs, plan = compiled(project_copy, PAYMENTS)
    assert [(g.name, g.priority) for g in plan.groups] == [("egress-aks-public-aks", 1000), ("egress-aks-public-stack", 3000)]
    stack = plan.groups[1]
    assert [(c.name, [(r.name, r.role, r.target_fqdns, r.description) for r in c.rules]) for c in stack.collections] == [
        ("stack-application", [("stack-core-payments-https", "payments", ("api.stripe.com",), "egress-matrix entries: stack/stripe")])]
    assert plan.ip_groups == {"nodes": ("10.10.16.0/20",), "payments": ("10.10.17.0/24",)}
    assert plan.ip_group_name("payments") == "egress-aks-public-payments"
    assert not any(r.role == "payments" for r in rules_of(plan).values() if r.name != "stack-core-payments-https")
    files = render(plan)
    body = json.loads(files["azure/egress-aks-public-stack.json"])
    assert body["properties"]["ruleCollections"][0]["rules"][0]["sourceIpGroups"] == [IPG + "egress-aks-public-payments"]
    assert json.loads(files["azure/ip-groups/egress-aks-public-payments.json"]) == {
        "id": IPG + "egress-aks-public-payments", "name": "egress-aks-public-payments", "properties": {"ipAddresses": ["10.10.17.0/24"]}}


def test_the_group_alone_reaches_its_entries(project_copy):
    """The Azure evaluator on the render: every requirement allowed, nothing extra; the nodes role (whose CIDRs hold the
    group's) does not get Stripe from the group's rule; a group outside the nodes' CIDRs gets nothing it did not ask for."""
    catalog, profile, reqs, plan = compiled(project_copy, PAYMENTS)
    enforced = azure.enforced(catalog, profile, reqs)
    assert [r.destination for r in enforced if r.role == "payments"] == ["api.stripe.com"]
    verdict = azure.evaluate(render(plan), enforced, catalog)
    assert (verdict.missing, verdict.extra) == ((), ())
    stripe = next(r for r in enforced if r.role == "payments")
    as_nodes = stripe.model_copy(update={"role": "nodes", "sources": profile.node_sources})
    outside_the_group = stripe.model_copy(update={"role": "nodes", "sources": ("10.10.16.5/32",)})
    assert [m.split(" (entries")[0] for m in azure.evaluate(render(plan), [as_nodes, outside_the_group], catalog).missing] == [
        "nodes -> api.stripe.com https/443"] * 2

    _, profile, reqs, plan = compiled(project_copy, PAYMENTS.replace("10.10.17.0/24", "10.60.0.0/24"))
    mcr = next(r for r in reqs if r.role == "nodes" and r.destination == "mcr.microsoft.com")
    as_payments = mcr.model_copy(update={"role": "payments", "sources": ("10.60.0.0/24",)})
    verdict = azure.evaluate(render(plan), [*azure.enforced(catalog, profile, reqs), as_payments], catalog)
    assert [m.split(" (entries")[0] for m in verdict.missing] == ["payments -> mcr.microsoft.com https/443"] and verdict.extra == ()


def test_adding_a_group_adds_its_own_resources_only(project_copy):
    """A group and its entry add an IP Group and a rule; every other file is byte-identical. A second group adds its IP
    Group and its rule to the stack catalog's group; the first group's rule and IP Group stay byte-identical."""
    _, _, _, before = compiled(project_copy, "")
    _, _, _, one = compiled(project_copy, PAYMENTS)
    files, with_one = render(before), render(one)
    assert sorted(set(with_one) - set(files)) == ["azure/egress-aks-public-stack.json", "azure/ip-groups/egress-aks-public-payments.json"]
    assert {path: with_one[path] for path in files} == files
    billing = "  egress-matrix:sourceGroups:\n    payments: [10.10.17.0/24]\n    billing: [10.10.18.0/24]\n  egress-matrix:entries:\n" + STRIPE + (
        "    - {id: ledger, destination: ledger.example.com, role: billing, purpose: Ledger API, owner: team-billing, reference: BIL-7}\n")
    _, _, _, two = compiled(project_copy, billing)
    with_two = render(two)
    assert sorted(set(with_two) - set(with_one)) == ["azure/ip-groups/egress-aks-public-billing.json"]
    assert [p for p in with_one if with_one[p] != with_two[p]] == ["azure/egress-aks-public-stack.json"]
    assert {n: r for n, r in rules_of(two).items() if n != "stack-core-billing-https"} == rules_of(one)


def test_inline_sources_and_an_existing_ip_group_for_a_group(project_copy):
    _, _, _, plan = compiled(project_copy, PAYMENTS + "  egress-matrix:azureIpGroups: false\n")
    rule = json.loads(render(plan)["azure/egress-aks-public-stack.json"])["properties"]["ruleCollections"][0]["rules"][0]
    assert rule["sourceAddresses"] == ["10.10.17.0/24"] and "sourceIpGroups" not in rule and plan.ip_groups == {}
    existing = "/subscriptions/s/resourceGroups/rg-net/providers/Microsoft.Network/ipGroups/ipg-payments"
    _, _, _, plan = compiled(project_copy, PAYMENTS + f"  egress-matrix:azureIpGroupIds: [payments={existing}]\n")
    files = render(plan)
    assert plan.existing_ip_groups == {"payments": existing} and set(plan.ip_groups) == {"nodes"}
    assert json.loads(files["azure/egress-aks-public-stack.json"])["properties"]["ruleCollections"][0]["rules"][0]["sourceIpGroups"] == [existing]
    assert "azure/ip-groups/egress-aks-public-payments.json" not in files


TEAM = """schema: 1
kind: platform
platform: team
title: A team
features:
  core-payments: runs together with the group 'payments' in a rule name
defaults: {level: required, protocol: https}
entries:
  - {id: fx, destination: fx.example.com, feature: core-payments, role: nodes, purpose: FX rates, approval: {owner: t, reference: FX-1}}
  - {id: pay, destination: pay.example.com, role: payments, purpose: Payouts, approval: {owner: t, reference: PAY-2}}
"""


@pytest.mark.parametrize("extra, cluster, message", [
    (PAYMENTS.replace("10.10.17.0/24", "2001:db8::/64"), "aks-public",
     "source group 'payments' has IPv6 sources (2001:db8::/64): Azure Firewall IP Groups and application rules take IPv4 only (firewall-"
     "known-issues.md). Fix: list only its IPv4 CIDRs in egress-matrix:sourceGroups.payments for this target"),
    (PAYMENTS.replace("payments", "p" * 40), "c" * 33,
     f"IP Group name 'egress-{'c' * 33}-{'p' * 40}' (81 characters) is not a valid Azure name (1-80 letters, digits, '_', '.', '-'). "
     f"Fix: set a shorter egress-matrix:clusterName or the source group name '{'p' * 40}' (egress-matrix:sourceGroups)"),
    (PAYMENTS + "  egress-matrix:azureIpGroupIds: [paymnets=/subscriptions/s/resourceGroups/r/providers/Microsoft.Network/ipGroups/g]\n", "aks-public",
     "egress-matrix:azureIpGroupIds names 'paymnets', which is neither a role (nodes, control-plane, seed, bastion, workstation) nor a "
     "source group of the stack (payments). Fix: declare it under egress-matrix:sourceGroups, or correct the name before '='"),
    (PAYMENTS + "  egress-matrix:catalogs: [team-catalog]\n", "aks-public",
     "two rules of team would both be named team-core-payments-https: one for role 'nodes' (egress-matrix entries: team/fx), "
     "one for source group 'payments' (egress-matrix entries: team/pay). Fix: rename the feature or the source group"),
])
def test_what_azure_cannot_take_is_refused_clearly(project_copy, extra, cluster, message):
    (project_copy / "team-catalog").mkdir()
    (project_copy / "team-catalog" / "team.yaml").write_text(TEAM)
    with pytest.raises(AzureCompileError) as info:
        compiled(project_copy, extra, cluster)
    assert message in str(info.value)


def _ip_group(name: str) -> DeployedResource:
    return DeployedResource(IP_GROUP_TYPE, f"egress-{name}", f"urn:ipg:{name}", {"ipAddresses": ["10.0.0.0/24"]},
                            parent="urn:pulumi:s::p::egress:azure:FirewallEgress::egress")


def _rcg(*names: str) -> DeployedResource:
    rules = [{"ruleType": "ApplicationRule", "name": n, "sourceIpGroups": [IPG + f"egress-dev-{n}"]} for n in names]
    return DeployedResource(RCG_TYPE, "egress-aks", "urn:rcg", {"ruleCollections": [{"rules": rules}]})


def test_a_preview_pairs_each_unnamed_ip_group_with_its_own_reference():
    """At a first preview the IP Groups' names and ids are unknown: each is told by the role or group its logical name
    ends with. 'gpu-nodes' also ends with 'nodes' (the role); each gets its own, and where the names cannot tell (a
    cluster 'dev' with groups 'nodes' and 'dev-nodes'), neither is paired: left unjudged, never mixed up."""
    keys = ip_group_keys([_ip_group("nodes"), _ip_group("gpu-nodes"), _rcg("nodes", "gpu-nodes")])
    assert keys == {"urn:ipg:nodes": [IPG.lower() + "egress-dev-nodes"], "urn:ipg:gpu-nodes": [IPG.lower() + "egress-dev-gpu-nodes"]}
    ambiguous = [_ip_group("nodes"), _ip_group("dev-nodes"), _rcg("nodes", "dev-dev-nodes")]
    assert ip_group_keys(ambiguous) == {"urn:ipg:nodes": [], "urn:ipg:dev-nodes": []}


GROUPS = ("  egress-matrix:sourceGroups:\n    payments: [10.10.17.0/24]\n    gpu-nodes: [10.10.18.0/24]\n  egress-matrix:entries:\n" + STRIPE +
          "    - {id: weights, destination: weights.example.com, role: gpu-nodes, purpose: Model weights, owner: team-ml, reference: ML-4}\n")


def _recorded(tmp_path: Path, extra: str, **options):
    (tmp_path / "stacks").mkdir(exist_ok=True)
    stack = write_stack(tmp_path, extra)
    config, secrets = stack_config(tmp_path / "stacks" / f"Pulumi.{stack}.yaml")
    return run_program(ROOT, stack, config, secrets, **options)


def _mandatory(violations):
    return [(v.policy, v.resource, v.message) for v in violations if v.level == "mandatory" or "during preview:" in v.message]


@pytest.mark.parametrize("phase", ["preview", "up"])
def test_groups_are_read_back_and_judged_at_every_phase(tmp_path, phase):
    """A first `pulumi preview` (every id and name unknown) and the outputs after up: the pack pairs each group's IP
    Group with the rules naming it and judges everything: no mandatory violation, no "can't run"."""
    recorded = _recorded(tmp_path, GROUPS, phase=phase)
    assert sorted(r.name for r in recorded.resources if r.type == IP_GROUP_TYPE) == ["egress-gpu-nodes", "egress-nodes", "egress-payments"]
    assert _mandatory(run_pack(recorded)) == []


def test_a_group_rule_that_loses_its_entry_fails_naming_it(tmp_path, monkeypatch):
    drop_azure_fqdn(monkeypatch, "api.stripe.com")
    stopping = _mandatory(run_pack(_recorded(tmp_path, PAYMENTS)))
    resource = "azure-native:network:FirewallPolicyRuleCollectionGroup 'egress-stack'"
    assert {(p, r) for p, r, _ in stopping} == {("required-egress-complete", resource), ("required-egress-complete-before-write", resource)}
    assert all("payments -> api.stripe.com https/443" in m and "stack/stripe" in m for *_, m in stopping)


def test_a_groups_broad_entry_is_accepted_for_that_group(tmp_path):
    """egress-not-open judges a flow against the broad entries of the roles and groups whose sources hold its sources."""
    scanner = ("  egress-matrix:sourceGroups:\n    scanners: [10.60.0.0/24]\n  egress-matrix:entries:\n"
               "    - {id: scan, destination: 0.0.0.0/0, protocol: tcp, ports: [443], role: scanners, purpose: Attack-surface scanner, "
               "owner: team-sec, reference: SEC-9, broad: probes our public endpoints wherever they are}\n")
    assert _mandatory(run_pack(_recorded(tmp_path, scanner))) == []


def test_explain_names_the_groups_rule_and_the_rule_its_entry(project_copy, run_cli):
    stack = write_stack(project_copy, PAYMENTS)
    code, out, err = run_cli("explain", "api.stripe.com:443", "--stack", stack, "--project", str(project_copy))
    assert code == 0, err
    assert ("azure payments -> api.stripe.com https/443: allowed by rule collection group egress-aks-public-stack, collection "
            "stack-application, rule stack-core-payments-https") in out
    code, out, err = run_cli("explain", "--rule", "stack-core-payments-https", "--stack", stack, "--project", str(project_copy))
    assert code == 0, err
    assert "stack/stripe (stack, for payments): Payments API [approved: owner team-payments, reference PAY-123" in out


def test_adding_a_group_registers_its_own_resources_only(tmp_path):
    """What the program registers: the group's IP Group and the stack catalog's rule collection group are new; every
    other resource's inputs are byte-identical, and the roles' IP Groups keep their place in the write chain. The first
    rule collection group waits for every IP Group (a dependency, not an input: no update step)."""
    before = {r.label(): r for r in _recorded(tmp_path, "").resources}
    after = {r.label(): r for r in _recorded(tmp_path, GROUPS).resources}
    assert sorted(set(after) - set(before)) == [
        "azure-native:network:FirewallPolicyRuleCollectionGroup 'egress-stack'", "azure-native:network:IpGroup 'egress-gpu-nodes'",
        "azure-native:network:IpGroup 'egress-payments'"]
    assert [label for label in before if json.dumps(before[label].props, sort_keys=True) != json.dumps(after[label].props, sort_keys=True)] == []
    assert [label for label in before if before[label].dependencies != after[label].dependencies] == [
        "azure-native:network:FirewallPolicyRuleCollectionGroup 'egress-aks'"]
    chain = {r.name: r for r in after.values() if r.type == IP_GROUP_TYPE}
    assert chain["egress-gpu-nodes"].dependencies == (chain["egress-nodes"].urn,)
    assert chain["egress-payments"].dependencies == (chain["egress-gpu-nodes"].urn,)


def test_a_group_with_more_entries_than_one_description_names_gets_its_rule_in_parts(project_copy):
    """120 stack entries for one group: more ids than one description takes (1,024 characters). The rule is split by
    destination into parts, each naming exactly its own entries; together they allow every entry and nothing else."""
    entries = "".join(f"    - {{id: api-{i:03d}, destination: api-{i:03d}.payments.example.com, role: payments, purpose: API {i}, owner: t, "
                      f"reference: PAY-{i}}}\n" for i in range(120))
    catalog, profile, reqs, plan = compiled(project_copy, "  egress-matrix:sourceGroups:\n    payments: [10.10.17.0/24]\n  egress-matrix:entries:\n" + entries)
    parts = plan.groups[1].collections[0].rules
    assert [r.name for r in parts] == ["stack-core-payments-https", "stack-core-payments-https-part-2"]
    assert all(len(r.description) <= 1024 for r in parts)
    for rule in parts:  # each part names the entries of exactly its destinations
        ids = rule.description.removeprefix("egress-matrix entries: ").split(", ")
        assert ids == [f"stack/{host.split('.')[0]}" for host in rule.target_fqdns]
    assert sum(len(r.target_fqdns) for r in parts) == 120
    verdict = azure.evaluate(render(plan), azure.enforced(catalog, profile, reqs), catalog)
    assert (verdict.missing, verdict.extra) == ((), ())
