"""The Azure evaluator judges rule collection group bodies the way Azure processes rules (exact verdicts).

Bodies are hand-written in the shape render.rcg_body emits, and each passes the Azure REST model when built; every
verdict is compared whole, so what is missing, extra and assumed is pinned together.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from azure_rest_model import problems
from egress.addresses import PortRange
from egress.models import Requirement, ResolvedAlternative
from egress.project import open_project
from egress.targets import TARGETS
from egress.targets.azure.evaluate import INFRASTRUCTURE, evaluate, evaluate_bodies
from egress.targets.verdict import Verdict

ROOT = Path(__file__).resolve().parents[1]
NODES = "10.10.16.0/20"
GROUP_ID = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-hub/providers/Microsoft.Network/ipGroups/ipg-registries"
TAG = "AzureKubernetesService"


def need(destination: str, kind: str = "fqdn", protocol: str = "https", ports: tuple[int | tuple[int, int], ...] = (443,),
         entry: str = "e1", alternatives: tuple[ResolvedAlternative, ...] = ()) -> Requirement:
    ranges = tuple(PortRange(p, p) if isinstance(p, int) else PortRange(*p) for p in ports)
    return Requirement(role="nodes", destination=destination, kind=kind, protocol=protocol, ports=ranges, level="required",
                       purposes=("test",), entry_ids=(entry,), citations=(), platforms=("aks",), sources=(NODES,),
                       alternatives=alternatives)


def app(name: str, targets: tuple[str, ...] = (), protocols: tuple[tuple[str, int], ...] = (("Https", 443),),
        sources: tuple[str, ...] = (NODES,), **fields) -> dict:
    rule = {"ruleType": "ApplicationRule", "name": name, "description": "test",
            "protocols": [{"protocolType": p, "port": n} for p, n in protocols], "sourceAddresses": list(sources), "terminateTLS": False}
    if targets:
        rule["targetFqdns"] = list(targets)
    return {**rule, **fields}


def net(name: str, addresses: tuple[str, ...] = (), ports: tuple[str, ...] = ("443",), protocols: tuple[str, ...] = ("TCP",),
        sources: tuple[str, ...] = (NODES,), **fields) -> dict:
    rule = {"ruleType": "NetworkRule", "name": name, "description": "test", "ipProtocols": list(protocols),
            "sourceAddresses": list(sources), "destinationPorts": list(ports)}
    if addresses:
        rule["destinationAddresses"] = list(addresses)
    return {**rule, **fields}


def collection(name: str, priority: int, *rules: dict, action: str = "Allow") -> dict:
    return {"ruleCollectionType": "FirewallPolicyFilterRuleCollection", "name": name, "priority": priority,
            "action": {"type": action}, "rules": list(rules)}


def rcg(name: str, priority: int, *collections: dict) -> dict:
    body = {"name": name, "properties": {"priority": priority, "ruleCollections": list(collections)}}
    assert problems(body) == []  # real-looking: the body passes the Azure REST model
    return body


def judge(bodies, requirements, **kwargs) -> Verdict:
    return evaluate_bodies(bodies, requirements, {"nodes": [NODES]}, **kwargs)


def missing(req: Requirement, denied_by: str = "") -> str:
    ports = ",".join(str(p) for p in req.ports)
    reason = f" denied by {denied_by}" if denied_by else ""
    return f"nodes -> {req.destination} {req.protocol}/{ports} (entries: {', '.join(req.entry_ids)}){reason}"


MCR = need("mcr.microsoft.com")


# ------------------------------------------------------------------------------------------- processing order
def test_a_deny_collection_with_a_lower_priority_number_wins_inside_one_group():
    body = rcg("egress-aks", 1000,
               collection("aks-application", 200, app("nodes-https-443", ("mcr.microsoft.com",))),
               collection("block-registries", 100, app("no-mcr", ("mcr.microsoft.com",)), action="Deny"))
    assert judge([body], [MCR]) == Verdict(missing=(missing(MCR, "egress-aks/block-registries/no-mcr"),), extra=(), rules_checked=2,
                                           assumed=(INFRASTRUCTURE,))
    body["properties"]["ruleCollections"][1]["priority"] = 300
    assert judge([body], [MCR]) == Verdict(rules_checked=2, assumed=(INFRASTRUCTURE,))


def test_group_priority_comes_before_collection_priority():
    allow = rcg("egress-aks", 300, collection("aks-application", 100, app("nodes-https-443", ("mcr.microsoft.com",))))
    deny = rcg("org-deny", 200, collection("deny-mcr", 500, app("no-mcr", ("mcr.microsoft.com",)), action="Deny"))
    assert judge([allow, deny], [MCR]).missing == (missing(MCR, "org-deny/deny-mcr/no-mcr"),)
    deny["properties"]["priority"] = 400
    assert judge([allow, deny], [MCR]) == Verdict(rules_checked=2, assumed=(INFRASTRUCTURE,))


def test_network_rules_decide_before_every_application_rule():
    # An application Deny in the first group does not stop a network Allow that Azure processes first.
    first = rcg("org-deny", 100, collection("deny-https", 100, app("no-mcr", ("mcr.microsoft.com",), sources=("*",)), action="Deny"))
    web = rcg("egress-web", 200, collection("web-network", 100, net("any-443", ("*",))))
    wildcard = need("*.data.mcr.microsoft.com", kind="wildcard", entry="e2")
    assert judge([first, web], [MCR, wildcard]) == Verdict(
        extra=("egress-web/web-network/any-443 allows * tcp/443, which no requirement asks for",), rules_checked=2, assumed=(INFRASTRUCTURE,))
    # A network Deny in the last group beats an application Allow in the first.
    allow = rcg("egress-aks", 100, collection("aks-application", 100, app("nodes-https-443", ("mcr.microsoft.com",))))
    last = rcg("org-deny-all", 65000, collection("deny-tcp", 65000, net("no-tcp", ("*",), ports=("*",), sources=("*",)), action="Deny"))
    assert judge([allow, last], [MCR]) == Verdict(missing=(missing(MCR, "org-deny-all/deny-tcp/no-tcp"),), rules_checked=2,
                                                  assumed=(INFRASTRUCTURE,))


def test_a_parent_policy_deny_beats_a_child_allow_but_not_a_child_network_rule():
    parent = rcg("org-baseline", 65000, collection("deny-web", 65000, app("no-https", ("*",), sources=("*",)), action="Deny"))
    child = rcg("egress-aks", 100,
                collection("aks-network", 100, net("nodes-tcp-443-addresses", ("203.0.113.20",))),
                collection("aks-application", 200, app("nodes-https-443", ("mcr.microsoft.com",))))
    api = need("203.0.113.20", kind="ip", protocol="tcp", entry="e2")
    assert judge([child], [MCR, api], parent_bodies=[parent]) == Verdict(
        missing=(missing(MCR, "parent/org-baseline/deny-web/no-https"),), rules_checked=3, assumed=(INFRASTRUCTURE,))
    assert judge([child], [MCR, api]) == Verdict(rules_checked=2, assumed=(INFRASTRUCTURE,))


def test_a_deny_whose_sources_only_overlap_the_role_still_denies():
    allow = rcg("egress-aks", 1000, collection("aks-application", 200, app("nodes-https-443", ("mcr.microsoft.com",))))
    deny = rcg("org-deny", 100, collection("quarantine", 100, net("quarantined-subnet", ("*",), ports=("*",), sources=("10.10.17.0/24",)),
                                           action="Deny"))
    assert judge([allow, deny], [MCR]).missing == (missing(MCR, "org-deny/quarantine/quarantined-subnet"),)
    deny["properties"]["ruleCollections"][0]["rules"][0]["sourceAddresses"] = ["10.99.0.0/16"]
    assert judge([allow, deny], [MCR]) == Verdict(rules_checked=2, assumed=(INFRASTRUCTURE,))


def test_an_allow_must_hold_every_source_and_the_whole_port_range():
    half = rcg("egress-aks", 1000, collection("aks-network", 100,
                                              net("half", ("192.0.2.10",), ports=("30000-31000",), sources=("10.10.16.0/21",)),
                                              net("ranges", ("192.0.2.10",), ports=("30000-31000",), sources=("10.10.16.0-10.10.31.255",))))
    nodeports = need("192.0.2.10", kind="ip", protocol="tcp", ports=((30000, 32767),))
    assert judge([half], [nodeports]).missing == (missing(nodeports),)
    narrow = need("192.0.2.10", kind="ip", protocol="tcp", ports=((30000, 30100),))
    assert judge([half], [narrow]).missing == ()  # the range source covers all of 10.10.16.0/20


def test_an_earlier_deny_that_blocks_a_whole_flow_makes_it_not_extra():
    deny = rcg("org-deny", 100, collection("deny-example", 100, app("no-example", ("*.example.com",), sources=("*",)), action="Deny"))
    stray = rcg("egress-aks", 1000, collection("aks-application", 200, app("nodes-https-443", ("mcr.microsoft.com", "evil.example.com"))))
    assert judge([deny, stray], [MCR]) == Verdict(rules_checked=2, assumed=(INFRASTRUCTURE,))
    deny["properties"]["ruleCollections"][0]["rules"][0]["sourceAddresses"] = ["10.10.16.0/24"]  # blocks only part of the sources
    assert judge([deny, stray], [MCR]).extra == (
        "egress-aks/aks-application/nodes-https-443 allows evil.example.com https/443, which no requirement asks for",)


# ------------------------------------------------------------------------------------------- target FQDN wildcards
def test_star_without_a_dot_allows_the_apex_and_opens_look_alikes():
    body = rcg("egress-contoso", 1000, collection("contoso", 200, app("contoso-https", ("*contoso.com",))))
    reqs = [need("contoso.com"), need("www.contoso.com", entry="e2"), need("*.contoso.com", kind="wildcard", entry="e3")]
    assert judge([body], reqs) == Verdict(
        extra=("egress-contoso/contoso/contoso-https allows *contoso.com https/443, which also opens look-alike names such as "
               "th3re4lcontoso.com; no requirement asks for those",), rules_checked=1, assumed=(INFRASTRUCTURE,))


def test_star_dot_allows_subdomains_at_any_depth_but_never_the_apex():
    body = rcg("egress-contoso", 1000, collection("contoso", 200, app("contoso-https", ("*.contoso.com",))))
    apex, deep, wildcard = need("contoso.com"), need("a.b.contoso.com", entry="e2"), need("*.contoso.com", kind="wildcard", entry="e3")
    assert judge([body], [apex, deep, wildcard]) == Verdict(missing=(missing(apex),), rules_checked=1, assumed=(INFRASTRUCTURE,))
    assert judge([body], [deep]).extra == (
        "egress-contoso/contoso/contoso-https allows *.contoso.com https/443, which no requirement asks for",)


# ------------------------------------------------------------------------------------------- network destinations
def test_an_address_range_allows_the_addresses_inside_it_only():
    body = rcg("egress-kkp", 1100, collection("kkp-network", 100, net("seed-8443", ("10.0.0.1-10.0.0.9",), ports=("8443",))))
    inside = need("10.0.0.5", kind="ip", protocol="tcp", ports=(8443,))
    outside = need("10.0.0.10", kind="ip", protocol="tcp", ports=(8443,), entry="e2")
    assert judge([body], [inside, outside]) == Verdict(
        missing=(missing(outside),),
        extra=("egress-kkp/kkp-network/seed-8443 allows 10.0.0.1-10.0.0.9 tcp/8443, which no requirement asks for",), rules_checked=1)


def test_an_ip_group_as_destination():
    body = rcg("egress-kkp", 1100, collection("kkp-network", 100, net("registries", ports=("5000",), destinationIpGroups=[GROUP_ID])))
    mirror = need("192.0.2.0/28", kind="cidr", protocol="tcp", ports=(5000,))
    assert judge([body], [mirror], ip_groups={GROUP_ID: ["192.0.2.0/28"]}) == Verdict(rules_checked=1)
    assert judge([body], [mirror]) == Verdict(
        missing=(missing(mirror),),
        extra=(f"egress-kkp/kkp-network/registries allows IP Group {GROUP_ID} (addresses not known) tcp/5000, which no requirement asks for",),
        rules_checked=1, assumed=(f"egress-kkp/kkp-network/registries uses IP Group {GROUP_ID}, whose addresses are not known: taken to hold none",))


def test_icmp_and_any_protocol_are_extra():
    body = rcg("egress-aks", 1000, collection("aks-network", 100,
                                              net("ping", ("10.10.0.4",), ports=("*",), protocols=("ICMP",)),
                                              net("dns", ("10.10.0.4",), ports=("53",), protocols=("Any",))))
    dns = need("10.10.0.4", kind="ip", protocol="udp", ports=(53,))
    assert judge([body], [dns]) == Verdict(extra=(
        "egress-aks/aks-network/ping allows ICMP to 10.10.0.4, which no requirement asks for",
        "egress-aks/aks-network/dns allows 10.10.0.4 tcp/53, which no requirement asks for",
        "egress-aks/aks-network/dns allows ICMP to 10.10.0.4, which no requirement asks for",
    ), rules_checked=2)


def test_an_fqdn_network_rule_allows_by_resolved_address():
    body = rcg("egress-aks", 1000, collection("aks-network", 100,
                                              net("nodes-udp-123-fqdns", ports=("123",), protocols=("UDP",), destinationFqdns=["ntp.ubuntu.com"])))
    ntp = need("ntp.ubuntu.com", protocol="udp", ports=(123,))
    assert judge([body], [ntp, need("*.ubuntu.com", kind="wildcard", protocol="udp", ports=(123,), entry="e2")]) == Verdict(
        missing=("nodes -> *.ubuntu.com udp/123 (entries: e2)",), rules_checked=1,
        assumed=("egress-aks/aks-network/nodes-udp-123-fqdns allows ntp.ubuntu.com by resolved address: any other name sharing those "
                 "addresses passes too",))


def test_a_service_tag_matches_by_name_and_an_alternative_is_enough():
    body = rcg("egress-aks", 1000, collection("aks-network", 100, net("tunnel", ("AzureCloud.francecentral",), ports=("1194",), protocols=("UDP",))))
    tunnel = need("*", kind="any", protocol="udp", ports=(1194,), alternatives=(
        ResolvedAlternative(kind="ip", destinations=("203.0.113.20",), protocol="udp", ports=(PortRange(1194, 1194),)),
        ResolvedAlternative(kind="service-tag", destinations=("AzureCloud.francecentral",), protocol="udp", ports=(PortRange(1194, 1194),)),
    ))
    assert judge([body], [tunnel]) == Verdict(rules_checked=1)
    body["properties"]["ruleCollections"][0]["rules"][0]["destinationAddresses"] = ["AzureCloud.westeurope"]
    assert judge([body], [tunnel]).missing == (missing(tunnel),)


def test_all_of_ipv4_on_every_port_allows_names_and_is_extra():
    body = rcg("egress-web", 2000, collection("web-network", 100, net("everything-tcp", ("0.0.0.0/0",), ports=("*",))))
    assert judge([body], [MCR]) == Verdict(
        extra=("egress-web/web-network/everything-tcp allows 0.0.0.0/0 tcp/*, which no requirement asks for",), rules_checked=1)


# ------------------------------------------------------------------------------------------- application extras
def test_a_web_category_never_allows_and_is_extra():
    body = rcg("egress-web", 2000, collection("web", 200, app("tech-sites", webCategories=["ComputersAndTechnology"])))
    docs = need("learn.microsoft.com")
    assert judge([body], [docs]) == Verdict(
        missing=(missing(docs),),
        extra=("egress-web/web/tech-sites allows web category ComputersAndTechnology https/443, which cannot be judged offline",),
        rules_checked=1, assumed=(INFRASTRUCTURE,))


def test_a_target_url_never_allows_and_is_extra():
    body = rcg("egress-web", 2000, collection("web", 200, app("downloads", targetUrls=["download.docker.com/linux/ubuntu/*"], terminateTLS=True)))
    docker = need("download.docker.com")
    assert judge([body], [docker]) == Verdict(
        missing=(missing(docker),),
        extra=("egress-web/web/downloads allows URL download.docker.com/linux/ubuntu/* https/443, which cannot be judged offline",),
        rules_checked=1, assumed=(INFRASTRUCTURE,))


def test_a_denied_web_category_is_an_assumption_not_a_deny():
    deny = rcg("org-deny", 100, collection("no-gambling", 100, app("gambling", webCategories=["Gambling"], sources=("*",)), action="Deny"))
    allow = rcg("egress-aks", 1000, collection("aks-application", 200, app("nodes-https-443", ("mcr.microsoft.com",))))
    assert judge([deny, allow], [MCR]) == Verdict(rules_checked=2, assumed=(
        "org-deny/no-gambling/gambling denies web categories or URLs: whether they cover a required destination cannot be judged "
        "offline; taken not to", INFRASTRUCTURE))


def test_an_fqdn_tag_allows_its_members_with_an_assumption_and_extra_protocols():
    body = rcg("egress-aks", 1000, collection("aks-application", 200,
                                              app("nodes-fqdn-tag", protocols=(("Http", 80), ("Https", 443)), fqdnTags=[TAG])))
    reqs = [MCR, need("*.data.mcr.microsoft.com", kind="wildcard", entry="e2")]
    members = {TAG: {"mcr.microsoft.com", "*.data.mcr.microsoft.com"}}
    assert judge([body], reqs, tag_members=members) == Verdict(
        extra=(f"egress-aks/aks-application/nodes-fqdn-tag allows FQDN tag {TAG} http/80, which no requirement for its members asks for",),
        rules_checked=1,
        assumed=(f"egress-aks/aks-application/nodes-fqdn-tag allows FQDN tag {TAG}, taken to hold the matrix's destinations for it "
                 "(2 requirement(s) allowed by it); Microsoft publishes no member list, so what else it opens cannot be listed offline",
                 INFRASTRUCTURE))
    assert judge([body], reqs).missing == (missing(reqs[0]), missing(reqs[1]))  # without members the tag allows nothing


def test_the_infrastructure_collection_is_assumed_only_with_application_rules():
    network_only = rcg("egress-aks", 1000, collection("aks-network", 100, net("api", ("203.0.113.20",))))
    assert judge([network_only], []) == Verdict(
        extra=("egress-aks/aks-network/api allows 203.0.113.20 tcp/443, which no requirement asks for",), rules_checked=1)
    with_app = rcg("egress-aks", 1000, collection("aks-application", 200, app("nodes-https-443", ("mcr.microsoft.com",))))
    assert judge([with_app], [MCR]).assumed == (INFRASTRUCTURE,)


def test_dnat_collections_are_ignored():
    dnat = {"ruleCollectionType": "FirewallPolicyNatRuleCollection", "name": "inbound", "priority": 100, "action": {"type": "DNAT"},
            "rules": [{"ruleType": "NatRule", "name": "ssh", "ipProtocols": ["TCP"], "sourceAddresses": ["*"],
                       "destinationAddresses": ["198.51.100.4"], "destinationPorts": ["22"], "translatedAddress": "10.10.16.4",
                       "translatedPort": "22"}]}
    # Built by hand: the offline REST check knows only filter-collection actions (Allow, Deny), not DNAT.
    body = {"name": "egress-aks", "properties": {"priority": 1000, "ruleCollections": [
        dnat, collection("aks-application", 200, app("nodes-https-443", ("mcr.microsoft.com",)))]}}
    assert judge([body], [MCR]) == Verdict(rules_checked=1, assumed=(INFRASTRUCTURE,))


# ------------------------------------------------------------------------------------------- artefacts and round trip
def _azure_stacks() -> list[str]:
    files = sorted((ROOT / "stacks").glob("Pulumi.*.yaml"))
    return [f.name[len("Pulumi."):-len(".yaml")] for f in files
            if "azure" in (yaml.safe_load(f.read_text()).get("config") or {}).get("egress-matrix:targets", ())]


@pytest.mark.parametrize("stack", _azure_stacks())
def test_rendered_stacks_round_trip_and_a_parent_deny_all_blocks_them(stack):
    catalog, profile, reqs = open_project(ROOT).requirements(stack)
    spec = TARGETS["azure"]
    files = spec.render(spec.compile(catalog, profile, reqs, stack))
    enforced = spec.enforced(catalog, profile, reqs)
    verdict = spec.evaluate(files, enforced, catalog)
    assert (verdict.missing, verdict.extra, verdict.assumed[-1]) == ((), (), INFRASTRUCTURE)
    deny_all = rcg("org-baseline", 65000, collection("deny-all", 65000, net("everything", ("*",), ports=("*",), protocols=("Any",), sources=("*",)),
                                                      action="Deny"))
    blocked = evaluate({**files, "azure/parent/org-baseline.json": json.dumps(deny_all)}, enforced)
    assert len(blocked.missing) == len(enforced) and blocked.extra == ()
    assert {m.rsplit(" denied by ", 1)[1] for m in blocked.missing} == {"parent/org-baseline/deny-all/everything"}

