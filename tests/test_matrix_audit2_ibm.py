"""Issue 20, the second reality audit: the IBM Cloud (VPC) rows, each finding checked on the resolved ibm-vpc stack.

12: the Container Registry asks for all of *.icr.io; the delivery hosts stay the narrow choice, *.icr.io the documented
alternative. 20: kubectl to this cluster's own master endpoint instead of every master of the region. 22: the exports
cite the current VPC page, or say where IBM now says it (its IAM section is gone).
"""
from __future__ import annotations

from pathlib import Path

from egress.exports import allowlist_exports
from egress.project import open_project
from egress.resolve import resolve

ROOT = Path(__file__).resolve().parents[1]


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
