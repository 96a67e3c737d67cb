"""azureHubExports (egress/hub_exports.py, egress/hub_facts.py): read only from inside the project, never echoed in an
error; declarations and exports compared as a read is online; a partial declaration or export stays partial."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from egress.hub_exports import HubFactsError, described
from egress.hub_facts import declared_hub_facts
from egress.targets.azure.policy import NO_BASE_POLICY, ExistingPolicy, check_existing_policy, disagreements, fact_lines
from test_hub_facts import BASE, GROUPS, HUB, SHOW, STACK_FILE, spoke

DATA = Path(__file__).resolve().parent / "data" / "hub"
SECRET = "aws_access_key_id = AKIAIOSFODNN7EXAMPLE"
OURS = ["egress-payments-aks"]  # aks-spoke's own group


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "hub").mkdir(parents=True)
    for name in (SHOW, GROUPS):
        shutil.copy(DATA / Path(name).name, root / name)
    (tmp_path / "fakecreds").write_text(SECRET)
    return root


def _refused(project: Path, *exports: str, **overrides) -> str:
    _, profile, _, _ = spoke(azure_hub_exports=exports, **overrides)
    with pytest.raises(HubFactsError) as info:
        declared_hub_facts(profile, project, STACK_FILE, OURS)
    return str(info.value)


# --- item 3: where an export may be read from, and what an error may show ---

@pytest.mark.parametrize("name,problem", [
    ("{outside}/fakecreds", "an absolute path"),
    ("../fakecreds", "leads out of the project"),
    ("hub/../../fakecreds", "leads out of the project"),
    ("hub/link.json", "leads out of the project"),  # a symlink in the project to the file outside
])
def test_an_export_outside_the_project_is_refused_naming_the_setting(project, name, problem):
    (project / "hub" / "link.json").symlink_to(project.parent / "fakecreds")
    name = name.format(outside=project.parent)
    message = _refused(project, name)
    assert message.startswith(f"{STACK_FILE}: field 'egress-matrix:azureHubExports' = '{name}': {problem}")
    assert "Fix: copy the export into the project" in message
    assert "AKIA" not in message and "aws_access_key_id" not in message


def test_a_symlink_inside_the_project_is_read(project):
    (project / "hub" / "same.json").symlink_to(project / GROUPS)
    _, profile, _, _ = spoke(azure_hub_exports=("hub/same.json",))
    assert declared_hub_facts(profile, project, STACK_FILE, OURS).groups == {"hub-platform": 100, "egress-contoso-aks": 3000}


def test_a_folder_is_not_an_export(project):
    assert "field 'egress-matrix:azureHubExports' = 'hub': not a regular file" in _refused(project, "hub")


def test_an_unreadable_export_inside_the_project_is_not_echoed(project):
    (project / "hub" / "creds.json").write_text(SECRET + "\n")
    message = _refused(project, "hub/creds.json")
    assert message.startswith("hub/creds.json: line 1, column 1: field '(document)' = '(not shown)': not valid JSON")
    assert "AKIA" not in message


@pytest.mark.parametrize("document,shown,hidden", [
    ({"id": "/subscriptions/1/resourceGroups/r/providers/Microsoft.Network/firewallPolicies/fwp-other", "type": "Microsoft.Network/FirewallPolicies"},
     "field 'id' = '(a policy id, not shown)': not the policy the stack attaches to", "fwp-other"),
    ({"id": HUB, "dnsSettings": {"enableProxy": "sk-secret-token"}}, "field 'dnsSettings.enableProxy' = '(a string, not shown)'", "sk-secret"),
    ({"id": HUB, "type": "Microsoft.Network/azureFirewalls"}, "field 'type' = 'Microsoft.Network/azureFirewalls': not a Firewall Policy", None),
    ({"id": HUB, "type": "password=hunter2"}, "field 'type' = '(a string, not shown)': not a Firewall Policy", "hunter2"),
    ([{"id": f"{HUB}/ruleCollectionGroups/x", "name": "ghp_token", "priority": "100", "ruleCollections": []}],
     "group 1: field 'priority' = '(a string, not shown)'", "ghp_token"),
    ([{"id": f"{HUB}/ruleCollectionGroups/x", "name": "g", "priority": 99, "ruleCollections": []}], "group 1: field 'priority' = 99", None),
])
def test_an_error_shows_no_text_of_the_file(project, document, shown, hidden):
    (project / "hub" / "x.json").write_text(json.dumps(document))
    message = _refused(project, "hub/x.json")
    assert shown in message
    assert hidden is None or hidden not in message


def test_what_an_error_may_show_of_an_export_value():
    assert [described(v) for v in (True, None, 100, 2.5, 10**9, "Microsoft.Network/firewallPolicies", "x", [1, 2], {"a": 1})] == [
        True, None, 100, 2.5, "(a number, not shown)", "Microsoft.Network/FirewallPolicies", "(a string, not shown)",
        "(a list of 2 item(s), not shown)", "(an object, not shown)"]


# --- item 6: declarations and exports merged as the online comparison does ---

def _groups_file(project: Path, groups: dict[str, int]) -> str:
    (project / "hub" / "g.json").write_text(json.dumps([{"id": f"{HUB}/ruleCollectionGroups/{n}", "name": n, "priority": p, "ruleCollections": []}
                                                        for n, p in groups.items()]))
    return "hub/g.json"


def test_an_unnamed_priority_matches_the_exported_group_at_it(project):
    _, profile, _, _ = spoke(azure_existing_priorities=(100,), azure_hub_exports=(_groups_file(project, {"hub-platform": 100}),))
    facts = declared_hub_facts(profile, project, STACK_FILE, OURS)
    assert (facts.groups, facts.groups_partial, facts.sources["groups"]) == ({"hub-platform": 100}, False, "read from hub/g.json")


def test_the_stacks_own_group_in_a_later_export_is_no_disagreement(project):
    name = _groups_file(project, {"hub-platform": 100, "egress-payments-aks": 2000})
    _, profile, _, _ = spoke(azure_hub_groups=("hub-platform=100",), azure_hub_exports=(name,))
    assert declared_hub_facts(profile, project, STACK_FILE, OURS).groups == {"hub-platform": 100, "egress-payments-aks": 2000}


def test_a_real_disagreement_names_only_the_settings_set_and_no_exported_name(project):
    name = _groups_file(project, {"hub-platform": 100, "secret-team": 300})
    message = _refused(project, name, azure_hub_groups=("hub-platform=100", "team-b=400"))
    assert message.startswith("hub/g.json: field '(groups)' = '(2 group(s), not shown)': disagrees with egress-matrix:azureHubGroups "
                              f"(declared in {STACK_FILE}): declared but not in the file or at another priority there: team-b=400; in "
                              "the file but not declared: group(s) 2. Fix: export the hub policy again")
    assert "secret-team" not in message and "azureExistingPriorities" not in message
    message = _refused(project, name, azure_existing_priorities=(500,))
    assert "no group at 500, which egress-matrix:azureExistingPriorities (declared in" in message
    assert "azureHubGroups" not in message


# --- suspicion: azureExistingPriorities alone are some of the groups, not all ---

def test_priorities_alone_are_a_partial_fact_the_rest_still_not_read():
    catalog, profile, reqs, plan = spoke(azure_existing_priorities=(300,))
    facts = declared_hub_facts(profile, Path("."), STACK_FILE, OURS)
    assert (facts.groups, facts.groups_partial) == ({"(unnamed: azureExistingPriorities) 300": 300}, True)
    assert fact_lines(facts)[2] == (f"rule collection groups: at least 1 ((unnamed) 300; the others not read offline) (declared in {STACK_FILE}: "
                                    "egress-matrix:azureExistingPriorities)")
    advisories = check_existing_policy(plan, facts, reqs)
    assert any(a.startswith(f"rule collection groups of Firewall Policy {HUB}: not read offline; this stack's priorities 2000 may be taken "
                            "other than 300, and the count of groups (at most 50) is not known") for a in advisories)
    # a partial list is not counted against the limit; a complete one is
    many = ExistingPolicy(policy_id=HUB, groups={f"g{i}": 10000 + i for i in range(50)}, groups_partial=True)
    check_existing_policy(plan, many, reqs)
    with pytest.raises(Exception, match="would hold 51 rule collection groups, over 50"):
        check_existing_policy(plan, many.model_copy(update={"groups_partial": False}), reqs)


def test_online_a_partial_declaration_is_compared_by_its_priorities_only():
    _, profile, _, plan = spoke(azure_existing_priorities=(300,))
    declared = declared_hub_facts(profile, Path("."), STACK_FILE, OURS)
    read = ExistingPolicy(policy_id=HUB, groups={"hub-platform": 100, "hub-shared": 300}, sources={"groups": "read from the policy"})
    assert disagreements(declared, read, plan) == []
    moved = read.model_copy(update={"groups": {"hub-platform": 100, "hub-shared": 310}})
    assert disagreements(declared, moved, plan) == [
        f"rule collection groups of Firewall Policy {HUB}: declared in {STACK_FILE}: egress-matrix:azureExistingPriorities says groups at 300, "
        "but the policy as read has none there: the policy as read is judged. Fix: correct the declaration (offline previews judge by it)"]


# --- suspicion: an export without dnsSettings ---

def test_a_full_show_without_dns_settings_is_proxy_off_and_a_partial_one_unknown(project):
    show = json.loads((project / SHOW).read_text())
    del show["dnsSettings"], show["basePolicy"]
    (project / SHOW).write_text(json.dumps(show))
    _, profile, _, _ = spoke(azure_hub_exports=(SHOW,))
    facts = declared_hub_facts(profile, project, STACK_FILE, OURS)
    assert (facts.dns_proxy, facts.base_policy_id) == (False, NO_BASE_POLICY)  # Azure's defaults: the whole resource was printed
    query = {"id": show["id"], "name": show["name"], "type": show["type"]}  # e.g. --query "{id:id, name:name, type:type}"
    (project / SHOW).write_text(json.dumps(query))
    facts = declared_hub_facts(profile, project, STACK_FILE, OURS)
    assert (facts.dns_proxy, facts.base_policy_id) == (None, None)
    assert "DNS proxy: not read offline" in fact_lines(facts)
