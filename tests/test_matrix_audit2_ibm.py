"""Issue 20, the second reality audit: the IBM Cloud (VPC) rows, each finding checked on the resolved ibm-vpc stack.

12: the Container Registry asks for all of *.icr.io; the delivery hosts stay the narrow choice, *.icr.io the documented
alternative. 20: kubectl to this cluster's own master endpoint instead of every master of the region. 22: the exports
cite the current VPC page, or say where IBM now says it (its IAM section is gone).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from egress.errors import ProfileError
from egress.exports import allowlist_exports
from egress.profile import profile_from_config
from egress.project import open_project
from egress.resolve import resolve
from egress.targets.azure.compile import compile_azure, fqdn_tag_members
from egress.targets.azure.evaluate import evaluate_bodies
from egress.targets.azure.render import plan_bodies

ROOT = Path(__file__).resolve().parents[1]
# the master's service endpoint URLs as `ibmcloud ks cluster get` prints them (public and private share the port)
ENDPOINTS = ("https://c100.us-south.containers.cloud.ibm.com:31234", "https://c100.private.us-south.containers.cloud.ibm.com:31234/")


def stack(name: str, **overrides):
    catalog, profile, _ = open_project(ROOT).requirements(name)
    profile = profile.model_copy(update=overrides)
    return catalog, profile, resolve(catalog, profile)


def one(reqs, destination: str):
    found = [r for r in reqs if r.destination == destination]
    assert len(found) == 1, (destination, found)
    return found[0]


# 12 ----------------------------------------------------------------------------------------------- *.icr.io
def test_regional_registry_offers_every_icr_io_subdomain_as_the_documented_alternative():
    _, _, reqs = stack("ibm-vpc", ibm_registry_regions=("global", "eu-de"))
    registry = one(reqs, "de.icr.io")
    assert [(o.kind, o.destinations) for o in registry.options()] == [("fqdn", ("de.icr.io",)), ("wildcard", ("*.icr.io",))]
    assert registry.chosen == "narrowest of 2 resolvable options; also allowed: *.icr.io (wildcard)"
    # the narrow choice stays: the registry and the delivery hosts the page lists, never the wildcard itself
    workstation = {r.destination for r in reqs if r.role == "workstation"}
    assert {"de.icr.io", "dd0.de.icr.io", "icr.io", "dd0.icr.io", "dd2.icr.io"} <= workstation
    assert "*.icr.io" not in workstation


def test_a_firewall_that_allows_every_icr_io_subdomain_as_ibm_asks_is_complete_and_not_too_broad():
    """Judged as Azure Firewall judges it: *.icr.io in place of us.icr.io and its delivery host misses nothing and, being
    the rows' documented alternative, is no extra; without the alternative the same rule would be an extra."""
    catalog, profile, reqs = stack("ibm-vpc", azure_roles=("workstation",), targets=("azure",), ibm_master_endpoints=ENDPOINTS)
    plan = compile_azure(catalog, profile, reqs)
    ids = {role: f"/ipGroups/egress-{role}" for role in plan.ip_groups}
    text = json.dumps(plan_bodies(plan, ids))
    assert '"us.icr.io"' in text and '"dd0.us.icr.io"' in text
    ibm_wording = json.loads(text.replace('"us.icr.io"', '"*.icr.io"').replace('"dd0.us.icr.io", ', "").replace(', "dd0.us.icr.io"', ""))

    def judge(requirements):
        return evaluate_bodies(ibm_wording, requirements, plan.role_sources, {ids[r]: c for r, c in plan.ip_groups.items()},
                               fqdn_tag_members(catalog, requirements))

    verdict = judge(reqs)
    assert (verdict.missing, verdict.extra) == ((), ())
    without = [r.model_copy(update={"alternatives": (), "chosen": None}) if r.destination == "us.icr.io" else r for r in reqs]
    assert any("*.icr.io" in line for line in judge(without).extra)


def test_the_global_registry_has_no_wildcard_alternative_because_it_does_not_cover_the_apex():
    catalog, _, reqs = stack("ibm-vpc", ibm_registry_regions=("global",))
    assert [o.destinations for o in one(reqs, "icr.io").options()] == [("icr.io",)]
    entry = next(e for e in catalog.entries if e.id == "ibm-registry-global")
    assert "*.icr.io" in entry.note and "apex" in entry.note


def test_delivery_hosts_cite_the_sections_that_list_them():
    catalog, _, reqs = stack("ibm-vpc", ibm_registry_regions=("global", "jp-osa"))
    doc = catalog.sources["ibm-registry-firewall"].cited
    assert one(reqs, "dd0.icr.io").citations == ((doc, "Using a public network to access Container Registry by using the domain `icr.io`"),)
    assert one(reqs, "dd2.icr.io").citations == ((doc, "Using a public network to access Container Registry by using the domain `icr.io`"),)
    assert one(reqs, "dd0.jp2.icr.io").citations == ((doc, "Using a public network to access Container Registry regions"),)
    for expansion in catalog.expansions:
        if expansion.host == "icr.io" or expansion.host.endswith(".icr.io"):
            assert expansion.citation.section == "Accessing Container Registry through a firewall", expansion.host
            assert "*.icr.io" in expansion.note, expansion.host


# 22 ----------------------------------------------------------------------------------------------- exports
def test_exports_cite_the_current_page_or_where_ibm_says_it_now():
    catalog, profile, _ = stack("ibm-vpc")
    # (how the document is named, section): the export names it as every output does (Source.cited)
    got = {e["id"]: (next(v for k, v in e["citation"].items() if k != "section"), e["citation"]["section"])
           for e in allowlist_exports(catalog, profile)}
    current = catalog.sources["ibm-vpc-firewall-current"].cited
    assert got == {
        "ibm-gateway-ips-for-other-services": (current, "Allowing ingress from a cluster to another service"),
        "ibm-worker-subnets-for-other-services": (current, "Allowing egress to a cluster from another service"),
        "ibm-gateway-ips-for-iam": (catalog.sources["ibm-classic-firewall"].cited,
                                    "Updating IAM allowlists for IBM Cloud Kubernetes Service network zones"),
        # only the seed copy of the VPC page asks for this one: it keeps that citation and says so
        "ibm-worker-subnets-for-iam": (catalog.sources["ibm-vpc-firewall"].cited,
                                       "Updating IAM allowlists for {{site.data.keyword.containershort}} IP addresses"),
        "ibm-control-plane-for-iam": (catalog.sources["ibm-iam-firewall-ips"].cited, "IAM firewall IP addresses"),
    }
    notes = {e.id: e.note or "" for e in catalog.exports}
    assert "Only the seed copy" in notes["ibm-worker-subnets-for-iam"]
    assert "no IAM section" in notes["ibm-gateway-ips-for-iam"]
    assert "network zone that references the Kubernetes" in " ".join(notes["ibm-control-plane-for-iam"].split())
    for source in ("ibm-vpc-firewall-current", "ibm-classic-firewall", "ibm-iam-firewall-ips"):
        assert catalog.sources[source].url.startswith("https://"), source


# 20 ----------------------------------------------------------------------------------------------- kubectl master


def test_kubectl_reaches_this_clusters_master_only_once_the_stack_names_its_endpoints():
    _, _, reqs = stack("ibm-vpc", ibm_master_endpoints=ENDPOINTS)
    master = [r for r in reqs if r.entry_ids == ("ibm-kubectl-master",)]
    assert [(r.destination, r.kind, r.protocol, [str(p) for p in r.ports]) for r in master] == [
        ("c100.private.us-south.containers.cloud.ibm.com", "fqdn", "https", ["31234"]),
        ("c100.us-south.containers.cloud.ibm.com", "fqdn", "https", ["31234"])]
    assert master[0].chosen.startswith("narrowest of 2 resolvable options; also allowed: *.us-south.containers.cloud.ibm.com (wildcard)")
    assert not [r for r in reqs if r.destination.startswith("*.")]  # no master of the region but this one, on no other port


def test_without_the_endpoints_every_master_of_the_region_stays_open_and_the_choice_says_what_to_set():
    _, _, reqs = stack("ibm-vpc")
    master = one(reqs, "*.us-south.containers.cloud.ibm.com")
    assert [str(p) for p in master.ports] == ["30000-32767"]
    assert master.chosen == ("narrowest of 1 resolvable options; not resolvable here: "
                             "{ibm_master_host} (set egress-matrix:ibmMasterEndpoints), {ibm_master_port} (set egress-matrix:ibmMasterEndpoints)")


def test_the_narrow_master_compiles_to_an_azure_application_rule_on_its_one_port():
    """The region-wide row cannot be an application rule at all (30000-32767); the cluster's own endpoint can."""
    catalog, profile, reqs = stack("ibm-vpc", azure_roles=("workstation",), targets=("azure",), ibm_master_endpoints=ENDPOINTS)
    plan = compile_azure(catalog, profile, reqs)
    rules = [rule for group in plan.groups for collection in group.collections for rule in collection.rules
             if "c100.us-south.containers.cloud.ibm.com" in (getattr(rule, "target_fqdns", None) or ())]
    assert [(rule.target_fqdns, rule.protocols) for rule in rules] == [
        (("c100.private.us-south.containers.cloud.ibm.com", "c100.us-south.containers.cloud.ibm.com"), (("Https", 31234),))]


@pytest.mark.parametrize("endpoints,problem", [
    ((ENDPOINTS[0], "https://c100.private.us-south.containers.cloud.ibm.com:31140"),
     "would also open c100.private.us-south.containers.cloud.ibm.com:31234"),
    (("https://c100.us-south.containers.cloud.ibm.com",), "has no port"),
    (("c100.us-south.containers.cloud.ibm.com:31234",), "is not an https:// URL"),
    (("https://c100.us-south.containers.cloud.ibm.com:31234/version",), "has a path"),
])
def test_endpoints_that_would_open_more_than_they_say_are_refused(endpoints, problem):
    with pytest.raises(ProfileError, match=re.escape(problem)) as caught:
        profile_from_config({"platforms": ["ibm-vpc"], "ibmMasterEndpoints": list(endpoints)}, "Pulumi.ibm-vpc.yaml", "ibm-vpc")
    assert "config.egress-matrix:ibmMasterEndpoints" in str(caught.value) and "Fix:" in str(caught.value)


def test_ns1_monitoring_ranges_are_an_optional_inbound_export_with_their_port():
    # item 22: the current VPC page adds "IBM NS1 Connect Monitoring IP Ranges" (optional, inbound to the cluster)
    catalog, profile, _ = stack("ibm-vpc")
    assert "ibm-ns1-monitoring-for-ingress" not in {e["id"] for e in allowlist_exports(catalog, profile)}
    catalog, profile, _ = stack("ibm-vpc", levels=("required", "recommended", "optional"))
    ns1 = next(e for e in allowlist_exports(catalog, profile) if e["id"] == "ibm-ns1-monitoring-for-ingress")
    assert ns1["values"] == ["163.114.225.0/24", "163.114.230.0/24", "163.114.231.0/24"]
    assert (ns1["direction"], ns1["level"], ns1["ports"]) == ("inbound", "optional", ["443"])
    assert "missing" not in ns1
    assert ns1["citation"]["section"] == "IBM NS1 Connect Monitoring IP Ranges"
