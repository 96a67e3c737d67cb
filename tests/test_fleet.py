"""`egress stacks` (egress/fleet.py): per stack what it writes to, its priority band and its lock; `egress stacks check`
refuses two stacks on one Azure Firewall Policy whose bands overlap or whose group names collide."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from egress.fleet import FleetError, Write, check_fleet, document, fleet, github_output
from egress.project import Project

HUB = "/subscriptions/11111111-1111-1111-1111-111111111111/resourceGroups/rg-hub/providers/Microsoft.Network/firewallPolicies/fwp-hub-westeurope"
LOCK = "azure-11111111-1111-1111-1111-111111111111-rg-hub-fwp-hub-westeurope"


def spoke(cluster: str, base: int, policy: str = HUB) -> str:
    return f"""config:
  egress-matrix:platforms: [aks]
  egress-matrix:cloud: azure-public
  egress-matrix:location: westeurope
  egress-matrix:clusterName: {cluster}
  egress-matrix:nodeSources: [10.41.16.0/20]
  egress-matrix:targets: [azure]
  egress-matrix:azurePolicyId: {policy}
  egress-matrix:azurePriorityBase: {base}
  egress-matrix:azureResourceGroup: rg-{cluster}-egress
"""


def by_name(stacks):
    return {s.stack: s for s in stacks}


def test_the_projects_stacks_and_what_each_writes(run_cli):
    code, out, err = run_cli("stacks", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    details = {d["stack"]: d for d in doc["details"]}
    assert doc["stacks"] == sorted(details) and "dev" in details and len(details) == len(list(Path("stacks").glob("Pulumi.*.yaml")))
    # The two stacks on the hub policy: its id, their bands from azurePriorityBase and the groups they compile to.
    (spoke_write,) = details["aks-spoke"]["writes"]
    assert spoke_write == {"target": "azure", "kind": "firewall-policy", "id": HUB, "access": "writes", "priorities": [2000],
                           "band": [2000, 2000], "names": ["egress-payments-aks"]}
    (contoso,) = details["aks-contoso"]["writes"]
    assert contoso["id"] == HUB and contoso["band"][0] == 3000 and contoso["band"] == [min(contoso["priorities"]), max(contoso["priorities"])]
    assert details["aks-spoke"]["lock"] == details["aks-contoso"]["lock"] == LOCK
    assert details["aks-spoke"]["sharesWith"] == ["aks-contoso"] and details["aks-spoke"]["azurePriorityBase"] == 2000
    # A stack that creates its policy, an AWS one, a Kubernetes one, and one with no target: each its own lock.
    assert [w["access"] for w in details["aks-public"]["writes"]] == ["creates"] and details["aks-public"]["lock"] == "stack-aks-public"
    assert [(w["target"], w["kind"]) for w in details["kkp-aws"]["writes"]] == [("aws", "firewall-policy"), ("aws", "rule-groups"),
                                                                                ("aws", "security-groups")]
    assert [(w["target"], w["kind"]) for w in details["openshift"]["writes"]] == [("kubernetes", "cluster")]
    assert details["ibm-vpc"]["writes"] == []
    # No --first: nothing goes first; the hub's stacks one at a time, the rest in parallel.
    assert doc["deploy"]["first"] == [] and [e["stack"] for e in doc["deploy"]["serial"]] == ["aks-contoso", "aks-spoke"]
    assert len(doc["deploy"]["parallel"]) == len(details) - 2


def test_table_and_github_output(run_cli):
    code, out, _ = run_cli("stacks")
    assert code == 0 and f"aks-spoke  (stacks/Pulumi.aks-spoke.yaml)  lock {LOCK} (with aks-contoso)" in out
    assert f"  azure firewall-policy: writes {HUB}  priorities 2000-2000 (1 group)" in out
    assert "ibm-vpc  (stacks/Pulumi.ibm-vpc.yaml)  lock stack-ibm-vpc\n  writes nothing (no egress-matrix:targets)\n" in out
    code, out, _ = run_cli("stacks", "--format", "github-output", "--first", "dev", "--only", "dev", "--only", "aks-spoke")
    assert code == 0
    assert out == ('stacks=["aks-spoke","dev"]\nfirst=[{"stack":"dev","lock":"stack-dev"}]\nparallel=[]\n'
                   f'serial=[{{"stack":"aks-spoke","lock":"{LOCK}"}}]\n')


def test_the_projects_stacks_pass_the_check(run_cli):
    code, _, err = run_cli("stacks", "check")
    assert code == 0, err
    assert "1 shared policy, each stack in its own band" in err


def test_an_unknown_stack_is_refused_with_the_list(run_cli):
    for option in ("--only", "--first"):
        code, out, err = run_cli("stacks", option, "aks-spok")
        assert code == 1 and out == ""
        message = " ".join(err.split())
        assert "stack 'aks-spok' not found (stacks/Pulumi.aks-spok.yaml). Fix: use one of: aks-china, aks-contoso" in message


def test_overlap_names_both_stacks_the_policy_and_the_range(project_copy):
    # Before egress stacks check, nothing compared two stacks: each compiled alone, and both would deploy.
    (project_copy / "stacks" / "Pulumi.aks-orders.yaml").write_text(spoke("orders", 1950).replace("[aks]", "[aks, flux]"))
    (project_copy / "stacks" / "Pulumi.aks-spoke.yaml").write_text(spoke("payments", 2000).replace("[aks]", "[aks, flux]"))
    stacks = fleet(Project(project_copy))
    low, high = by_name(stacks)["aks-spoke"].writes[0].band
    width = high - low
    assert low == 2000 and width >= 100  # aks and flux: two groups, flux's band above aks's
    assert by_name(stacks)["aks-orders"].writes[0].band == (1950, 1950 + width)
    with pytest.raises(FleetError) as raised:
        check_fleet(stacks)
    assert str(raised.value) == (
        "stacks/Pulumi.aks-orders.yaml, stacks/Pulumi.aks-spoke.yaml: stacks 'aks-orders' and 'aks-spoke' write rule collection "
        f"groups to one Firewall Policy {HUB} with overlapping priority bands: 'aks-orders' uses 1950-{1950 + width} (2 groups) "
        f"(azurePriorityBase 1950), 'aks-spoke' uses 2000-{high} (2 groups) (azurePriorityBase 2000); they overlap at "
        f"2000-{1950 + width}. Fix: move egress-matrix:azurePriorityBase of 'aks-spoke' to a band no other stack on this policy "
        f"uses, e.g. {max(high, 5200) // 100 * 100 + 100}")


def test_bands_that_only_touch_or_interleave(project_copy):
    (project_copy / "stacks" / "Pulumi.aks-spoke.yaml").write_text(spoke("payments", 2000).replace("[aks]", "[aks, flux]"))
    top = by_name(fleet(Project(project_copy)))["aks-spoke"].writes[0].band[1]
    # Just above the spoke's highest group: no overlap.
    (project_copy / "stacks" / "Pulumi.aks-orders.yaml").write_text(spoke("orders", top + 1))
    check_fleet(fleet(Project(project_copy)))
    # Inside it, between two of its groups (no priority collides, but the bands interleave): refused.
    (project_copy / "stacks" / "Pulumi.aks-orders.yaml").write_text(spoke("orders", 2050))
    with pytest.raises(FleetError, match=r"they overlap at 2050-2050\. Fix: move egress-matrix:azurePriorityBase of 'aks-orders'"):
        check_fleet(fleet(Project(project_copy)))


def test_policy_ids_compare_without_case_and_locks_follow_shared_policies(project_copy):
    (project_copy / "stacks" / "Pulumi.aks-orders.yaml").write_text(spoke("orders", 6000, HUB.replace("rg-hub", "RG-Hub").replace("fwp-hub", "FWP-Hub")))
    stacks = by_name(fleet(Project(project_copy)))
    assert stacks["aks-orders"].lock == stacks["aks-spoke"].lock == stacks["aks-contoso"].lock == LOCK
    assert stacks["aks-orders"].shares_with == ("aks-contoso", "aks-spoke")
    # Same band on another policy: no overlap, another lock.
    other = HUB.replace("fwp-hub-westeurope", "fwp-hub-northeurope")
    (project_copy / "stacks" / "Pulumi.aks-orders.yaml").write_text(spoke("orders", 2000, other))
    stacks = fleet(Project(project_copy))
    check_fleet(stacks)
    assert by_name(stacks)["aks-orders"].lock == "azure-11111111-1111-1111-1111-111111111111-rg-hub-fwp-hub-northeurope"
    assert by_name(stacks)["aks-orders"].shares_with == ()


def test_one_group_name_from_two_stacks_is_refused(project_copy):
    (project_copy / "stacks" / "Pulumi.aks-orders.yaml").write_text(spoke("payments", 7000))
    with pytest.raises(FleetError) as raised:
        check_fleet(fleet(Project(project_copy)))
    assert str(raised.value) == (
        "stacks/Pulumi.aks-spoke.yaml, stacks/Pulumi.aks-orders.yaml: stacks 'aks-spoke' and 'aks-orders' both write the rule "
        f"collection group egress-payments-aks to Firewall Policy {HUB}: the later update would replace the other's rules. "
        "Fix: give one of them another egress-matrix:clusterName")


def test_locks_join_through_a_stack_on_two_policies():
    # A stack on two policies links the stacks of both: one lock, so no two of them update at once.
    from egress.fleet import StackWrites

    a = StackWrites("a", "stacks/Pulumi.a.yaml", (Write("azure", "firewall-policy", HUB, "writes", (100,)),))
    assert Write("azure", "firewall-policy", HUB, "writes").shared_key == LOCK
    assert Write("azure", "firewall-policy", HUB, "creates").shared_key is None
    assert document([a], [a], ["a"])["deploy"] == {"first": [{"stack": "a", "lock": ""}], "parallel": [], "serial": []}
    assert github_output(document([a], [a], []))  == 'stacks=["a"]\nfirst=[]\nparallel=[{"stack":"a","lock":""}]\nserial=[]\n'


def test_a_hub_group_one_stack_declares_holds_its_priority_for_every_stack_on_the_policy():
    from egress.fleet import FleetError, StackWrites, Write, check_fleet

    policy = "/subscriptions/1/resourceGroups/rg-hub/providers/Microsoft.Network/firewallPolicies/fwp-hub"
    # 'a' declares what an export taken after both deployed lists: the hub's own group and both stacks' groups.
    a = StackWrites("a", "stacks/Pulumi.a.yaml", (Write("azure", "firewall-policy", policy, "writes", (2000,), ("egress-a-aks",),
                                                        (("egress-a-aks", 2000), ("egress-b-aks", 3000), ("hub-platform", 100))),), 2000)
    b = StackWrites("b", "stacks/Pulumi.b.yaml", (Write("azure", "firewall-policy", policy, "writes", (3000,), ("egress-b-aks",)),), 3000)
    check_fleet([a, b])  # the stacks' own groups in the export are theirs, not the hub's
    c = StackWrites("c", "stacks/Pulumi.c.yaml", (Write("azure", "firewall-policy", policy, "writes", (100,), ("egress-c-aks",)),), 100)
    with pytest.raises(FleetError, match="stack 'c' writes rule collection group egress-c-aks at priority 100 .* where stack 'a' declares "
                                         "the hub's group hub-platform at 100"):
        check_fleet([a, b, c])
