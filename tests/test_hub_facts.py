"""Hub facts (egress/hub_facts.py, egress/targets/azure/policy.py): what a stack on an existing Firewall Policy knows
of it, from where, and that an unknown fact is never judged as a false one."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from egress.hub_facts import HubFactsError, declared_hub_facts
from egress.project import open_project
from egress.targets.azure.compile import compile_azure, fqdn_tag_members
from egress.targets.azure.plan import AzureCompileError
from egress.targets.azure.policy import NO_BASE_POLICY, ExistingPolicy, check_existing_policy, fact_lines, judge_existing_policy

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "hub"
HUB = "/subscriptions/11111111-1111-1111-1111-111111111111/resourceGroups/rg-hub/providers/Microsoft.Network/firewallPolicies/fwp-hub-westeurope"
BASE = "/subscriptions/11111111-1111-1111-1111-111111111111/resourceGroups/rg-hub/providers/Microsoft.Network/firewallPolicies/fwp-base"
SHOW, GROUPS, BASE_GROUPS = "hub/fwp-hub-westeurope.show.json", "hub/fwp-hub-westeurope.rcgs.json", "hub/fwp-base.rcgs.json"
STACK_FILE = "stacks/Pulumi.aks-spoke.yaml"


def spoke(**overrides):
    """aks-spoke's catalog, profile (with overrides), requirements and Azure plan."""
    from egress.resolve import resolve

    catalog, profile, _ = open_project(ROOT).requirements("aks-spoke")
    profile = profile.model_copy(update=overrides)
    requirements = resolve(catalog, profile)
    return catalog, profile, requirements, compile_azure(catalog, profile, requirements)


@pytest.fixture
def exports(tmp_path: Path) -> Path:
    (tmp_path / "hub").mkdir()
    for name in (SHOW, GROUPS, BASE_GROUPS):
        shutil.copy(DATA / Path(name).name, tmp_path / name)
    return tmp_path


def test_nothing_declared_means_nothing_known():
    _, profile, _, _ = spoke()
    facts = declared_hub_facts(profile, ROOT, STACK_FILE)
    assert (facts.dns_proxy, facts.base_policy_id, facts.groups, facts.parent_groups, facts.sources) == (None, None, None, None, {})
    assert fact_lines(facts) == ["DNS proxy: not read offline", "base policy: not read offline", "rule collection groups: not read offline",
                                 "base policy's rules: not read offline"]


def test_settings_are_facts_with_their_stack_file_key():
    _, profile, _, _ = spoke(azure_hub_dns_proxy=True, azure_hub_base_policy_id="none", azure_hub_groups=("hub-platform=100",))
    facts = declared_hub_facts(profile, ROOT, STACK_FILE)
    assert (facts.dns_proxy, facts.base_policy_id, facts.groups, facts.parent_groups) == (True, NO_BASE_POLICY, {"hub-platform": 100}, ())
    assert fact_lines(facts) == [
        f"DNS proxy: on (declared in {STACK_FILE}: egress-matrix:azureHubDnsProxy)",
        f"base policy: none (declared in {STACK_FILE}: egress-matrix:azureHubBasePolicyId)",
        f"rule collection groups: 1 (hub-platform 100) (declared in {STACK_FILE}: egress-matrix:azureHubGroups)"]


def test_the_azure_cli_exports_are_read_and_attributed_by_their_ids(exports):
    _, profile, _, _ = spoke(azure_hub_exports=(BASE_GROUPS, GROUPS, SHOW))  # any order: the show names the base policy
    facts = declared_hub_facts(profile, exports, STACK_FILE)
    assert facts.dns_proxy is True and facts.base_policy_id == BASE
    assert facts.groups == {"hub-platform": 100, "egress-contoso-aks": 3000}
    assert [g["name"] for g in facts.parent_groups] == ["security-baseline"]
    assert facts.parent_groups[0]["properties"]["ruleCollections"][0]["action"] == {"type": "Deny"}
    assert facts.sources == {"dns_proxy": f"read from {SHOW}", "base_policy_id": f"read from {SHOW}", "groups": f"read from {GROUPS}",
                             "parent_groups": f"read from {BASE_GROUPS}"}


def test_the_unflattened_rest_shape_is_read_too(exports):
    show = json.loads((exports / SHOW).read_text())
    flat = {k: show.pop(k) for k in ("basePolicy", "dnsSettings", "ruleCollectionGroups", "sku", "threatIntelMode", "provisioningState")}
    (exports / SHOW).write_text(json.dumps({**show, "properties": {**flat, "dnsSettings": {"enableProxy": False}}}))
    _, profile, _, _ = spoke(azure_hub_exports=(SHOW,))
    facts = declared_hub_facts(profile, exports, STACK_FILE)
    assert (facts.dns_proxy, facts.base_policy_id, facts.groups) == (False, BASE, None)


def test_a_setting_and_an_export_that_disagree_are_refused(exports):
    _, profile, _, _ = spoke(azure_hub_dns_proxy=False, azure_hub_exports=(SHOW,))
    with pytest.raises(HubFactsError) as info:
        declared_hub_facts(profile, exports, STACK_FILE)
    assert str(info.value).startswith(f"{SHOW}: field 'dnsSettings.enableProxy' = True: disagrees with False (declared in {STACK_FILE}: "
                                      "egress-matrix:azureHubDnsProxy). Fix: export the hub policy again")


def test_an_export_of_another_policy_is_refused(exports):
    _, profile, _, _ = spoke(azure_hub_exports=(BASE_GROUPS,))  # the base policy's groups, but nothing names the base policy
    with pytest.raises(HubFactsError, match=r"field 'id' = '\(a policy id, not shown\)': groups of a policy that is neither "
                                            r"egress-matrix:azurePolicyId .* nor its base policy \(not declared\)"):
        declared_hub_facts(profile, exports, STACK_FILE)


def test_exports_taken_at_different_times_are_refused(exports):
    groups = json.loads((exports / GROUPS).read_text())
    (exports / GROUPS).write_text(json.dumps(groups[:1]))
    _, profile, _, _ = spoke(azure_hub_exports=(SHOW, GROUPS))
    with pytest.raises(HubFactsError, match=r"'name' = '\(1 name\(s\), not shown\)': groups not in both this file and hub/fwp-hub-westeurope.show.json"):
        declared_hub_facts(profile, exports, STACK_FILE)


# --- the judgement: known facts judged, unknown ones advised, never a false fact ---

def _ntp_plan(**overrides):
    # Optional levels bring NTP, an FQDN network rule with azureDnsProxy (aks-core-udp-123-fqdns): it needs the policy's DNS proxy.
    return spoke(levels=("required", "recommended", "optional"), azure_dns_proxy=True, **overrides)


def test_dns_proxy_not_known_is_an_advisory_never_off():
    catalog, _, reqs, plan = _ntp_plan()
    advisories = check_existing_policy(plan, ExistingPolicy(policy_id=HUB), reqs, fqdn_tag_members(catalog, reqs))
    assert advisories[0].startswith(f"DNS proxy of Firewall Policy {HUB}: not read offline; the FQDN network rules aks-core-udp-123-fqdns "
                                    "need it on: declare egress-matrix:azureHubDnsProxy")
    assert not any("proxy off" in a for a in advisories)


def test_dns_proxy_declared_off_is_judged_with_its_source():
    catalog, profile, reqs, plan = _ntp_plan(azure_hub_dns_proxy=False)
    facts = declared_hub_facts(profile, ROOT, STACK_FILE)
    with pytest.raises(AzureCompileError, match=rf"has its DNS proxy off, but rules aks-core-udp-123-fqdns .* \(its DNS proxy: declared in "
                                                rf"{STACK_FILE}: egress-matrix:azureHubDnsProxy\)"):
        check_existing_policy(plan, facts, reqs, fqdn_tag_members(catalog, reqs))


def test_priorities_not_known_are_an_advisory_and_a_declared_clash_is_refused():
    catalog, profile, reqs, plan = spoke()
    advisories = check_existing_policy(plan, ExistingPolicy(policy_id=HUB), reqs)
    assert any(a.startswith(f"rule collection groups of Firewall Policy {HUB}: not read offline; this stack's priorities 2000 may be taken")
               for a in advisories)
    _, profile, reqs, plan = spoke(azure_hub_groups=("hub-platform=100", "team-b=2000"))
    with pytest.raises(AzureCompileError, match=r"priority 2000 is taken on Firewall Policy .* by team-b\. Fix: move egress-matrix:azurePriorityBase"):
        check_existing_policy(plan, declared_hub_facts(profile, ROOT, STACK_FILE), reqs)


def test_the_base_policy_not_known_is_an_advisory_and_its_exported_deny_refuses(exports):
    catalog, _, reqs, plan = spoke()
    advisories = check_existing_policy(plan, ExistingPolicy(policy_id=HUB), reqs)
    assert any(a.startswith(f"base policy of Firewall Policy {HUB}: not read offline; a Deny in a base policy's rules would win") for a in advisories)
    _, profile, reqs, plan = spoke(azure_hub_base_policy_id=BASE)
    advisories = check_existing_policy(plan, declared_hub_facts(profile, ROOT, STACK_FILE), reqs)
    assert any(a.startswith(f"rules of the base policy {BASE} of Firewall Policy {HUB}: not read offline") for a in advisories)
    _, profile, reqs, plan = spoke(azure_hub_exports=(SHOW, GROUPS, BASE_GROUPS))
    with pytest.raises(AzureCompileError, match=r"blocks 1 requirement\(s\) .*dc.services.visualstudio.com .*denied by parent/security-baseline/"
                                                rf"no-telemetry/deny-app-insights.*\(its rules: read from {BASE_GROUPS}\)"):
        check_existing_policy(plan, declared_hub_facts(profile, exports, STACK_FILE), reqs, fqdn_tag_members(catalog, reqs))


def test_online_a_declaration_the_read_contradicts_is_warned_and_the_read_judged():
    catalog, profile, reqs, plan = spoke(azure_hub_dns_proxy=False, azure_hub_groups=("hub-platform=100",), azure_existing_priorities=(300,))
    declared = declared_hub_facts(profile, ROOT, STACK_FILE)
    read = ExistingPolicy(policy_id=HUB, dns_proxy=True, base_policy_id=NO_BASE_POLICY, parent_groups=(),
                          groups={"hub-platform": 100, "hub-shared": 300, "egress-payments-aks": 2000}, sources=dict.fromkeys(
                              ("dns_proxy", "base_policy_id", "groups", "parent_groups"), "read from the policy"))
    notes, warnings = judge_existing_policy(plan, declared, read, reqs, fqdn_tag_members(catalog, reqs))
    assert notes[0] == "hub policy fwp-hub-westeurope: DNS proxy: on (read from the policy)"
    # the stack's own group and the group declared by its priority alone are no disagreement; the DNS proxy is
    assert warnings == [f"DNS proxy of Firewall Policy {HUB}: declared in {STACK_FILE}: egress-matrix:azureHubDnsProxy says it off, but the "
                        "policy as read has it on: the policy as read is judged. Fix: correct the declaration (offline previews judge by it)"]
