"""egress explain: from a destination or a rule name (a firewall log line) to the requirements and the deciding rules.

Judged on the real stacks' rendered artefacts: dev (Azure, AWS domain lists, the egress proxy), kkp-aws (exact Suricata
rules), aks-china and aks-public (CIDR and IP requirements).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from egress.errors import EgressError
from egress.explain import (ALLOWED, DENIED, NOT_ENFORCED, ExplainError, explain_destination, explain_rule, format_text,
                            parse_destination_arg, to_json)
from egress.project import open_project
from egress.targets import TARGETS

ROOT = Path(__file__).resolve().parents[1]
_STACKS: dict = {}


def stack(name: str):
    """(catalog, profile, requirements, artefacts by target) of a shipped stack, rendered for every target it lists."""
    if name not in _STACKS:
        catalog, profile, reqs = open_project(ROOT).requirements(name)
        artefacts = {t: TARGETS[t].render(TARGETS[t].compile(catalog, profile, reqs, name)) for t in profile.targets}
        _STACKS[name] = (catalog, profile, reqs, artefacts)
    return _STACKS[name]


def explain(name: str, destination: str, port=None, role=None):
    catalog, profile, reqs, artefacts = stack(name)
    return explain_destination(catalog, profile, reqs, artefacts, destination, port, role)


def rule(name: str, rule_name: str):
    catalog, profile, reqs, artefacts = stack(name)
    return explain_rule(catalog, reqs, artefacts, rule_name, profile)


def needs(explanation, nearest=False):
    return [(n.flow, n.entry_ids, n.match) for n in (explanation.nearest if nearest else explanation.requirements)]


def decided(explanation):
    """(target, role, protocol/ports, outcome, [(rule name, where)] or the reason)."""
    return [(d.target, d.role, f"{d.protocol}/{d.ports}", d.outcome, [(r.name, dict(r.where)) for r in d.rules] or d.reason)
            for d in explanation.decisions]


AKS_CORE_HTTPS = ("aks-core-https", {"rule collection group": "egress-dev-aks", "collection": "aks-application", "rule": "aks-core-https"})
NODES_SG_443 = ("egress-dev-nodes-0", {"security group": "egress-dev-nodes-0", "egress": "tcp/443 to 0.0.0.0/0"})
DENY_ALL = [("deny all", {"http_access": "deny all"})]
AZURE_DEFAULT = "no rule matches it: Azure Firewall's default deny"
# Citations name the public page (matrix/sources.yaml url), never the transcribed seed file
KKP_PAGE = ("https://github.com/kubermatic/docs/blob/816edf43c67ef910bfca1ffa97b5cbf5249c11d1/content/kubermatic/v2.27/"
            "tutorials-howtos/networking/proxy-whitelisting/_index.en.md")
AKS_PAGE = ("https://github.com/MicrosoftDocs/azure-aks-docs/blob/f9be3faa3436b5bd5fb2cda4d33b5771538031f7/"
            "articles/aks/outbound-rules-control-egress.md")


def tls_drop(role: str, sid: int):
    return [(f"sid:{sid}", {"rule group": f"egress-dev-{role}-tls-sni", "sid": str(sid), "msg": "not matching any TLS allowlisted FQDNs"})]


def test_a_required_host_is_allowed_by_the_named_rule_of_each_target():
    e = explain("dev", "mcr.microsoft.com:443")
    assert (e.destination, e.kind, e.port, e.role, e.required) == ("mcr.microsoft.com", "fqdn", 443, None, True)
    # KKP pulls from MCR only for Azure clusters (issue 20): here MCR is AKS's alone, which the AWS firewall (awsPlatforms:
    # kkp, openshift) does not enforce, so its domain list drops it
    assert needs(e) == [("nodes -> mcr.microsoft.com https/443", ("aks-public-mcr",), "exact")]
    assert e.requirements[0].citations == ((AKS_PAGE, "Azure Global required FQDN / application rules"),)
    assert decided(e) == [
        ("azure", "nodes", "https/443", ALLOWED, [AKS_CORE_HTTPS]),
        ("aws", "nodes", "https/443", DENIED, tls_drop("nodes", 78551456)),
        ("kubernetes", "nodes", "https/443", ALLOWED, [("aks-core-https", {"acl": "aks-core-https"})]),
    ]
    azure, aws, kubernetes = e.decisions
    assert azure.rules[0].entry_ids == ("aks-os-updates-snapshot", "aks-public-acs-mirror", "aks-public-hcp", "aks-public-login",
                                        "aks-public-management", "aks-public-mcr", "aks-public-mcr-data", "aks-public-mcr-edge",
                                        "aks-public-packages", "aks-public-packages-aks")
    assert aws.rules[0].entry_ids == ()  # a domain list's generated drop names no entries
    assert kubernetes.rules[0].text == "http_access allow CONNECT role-nodes ports-443 aks-core-https"
    assert explain("dev", "mcr.microsoft.com", 443) == e == explain("dev", "https://MCR.Microsoft.com./v2/")


def test_a_host_under_a_required_wildcard():
    e = explain("dev", "abc.data.mcr.microsoft.com:443")
    assert needs(e) == [("nodes -> *.data.mcr.microsoft.com https/443", ("aks-public-mcr", "aks-public-mcr-data"),
                         "under *.data.mcr.microsoft.com")]
    assert decided(e) == [
        ("azure", "nodes", "https/443", ALLOWED, [AKS_CORE_HTTPS]),
        ("aws", "nodes", "https/443", DENIED, tls_drop("nodes", 78551456)),  # AKS's, not enforced on AWS here
        ("kubernetes", "nodes", "https/443", ALLOWED, [("aks-core-https-subdomains", {"acl": "aks-core-https-subdomains",
                                                                                     "allowlist entry": "aks-core-https"})]),
    ]
    assert e.decisions[2].rules[0].entry_ids == e.decisions[0].rules[0].entry_ids  # the ACL's comment names the same entries


def test_the_apex_of_a_wildcard_is_not_required_and_only_the_domain_list_lets_it_through():
    # (a wildcard the AWS firewall enforces here: OpenShift's; MCR is AKS's alone since issue 20)
    e = explain("dev", "s3.dualstack.eu-central-1.amazonaws.com:443")
    assert not e.required
    assert needs(e, nearest=True)[0] == ("nodes -> *.s3.dualstack.eu-central-1.amazonaws.com https/443", ("openshift-aws-s3-dualstack-region",),
                                         "its apex: *.s3.dualstack.eu-central-1.amazonaws.com covers subdomains only")
    # dev does not say where its nodes run, so they keep the registry.k8s.io copy of the region kkp-aws manages (issue 20)
    assert {n[0] for n in needs(e, nearest=True)[1:]} <= {
        "nodes -> prod-registry-k8s-io-eu-central-1.s3.dualstack.eu-central-1.amazonaws.com https/443",
        "seed -> prod-registry-k8s-io-eu-central-1.s3.dualstack.eu-central-1.amazonaws.com https/443"}
    assert [(d.target, d.role, d.outcome, d.required) for d in e.decisions] == [
        ("azure", "nodes", DENIED, False), ("aws", "nodes", ALLOWED, False), ("aws", "seed", DENIED, False),
        ("kubernetes", "nodes", DENIED, False), ("kubernetes", "seed", DENIED, False)]
    assert e.decisions[1].rules[0].name == "sid:71361448"  # AWS's '.s3.dualstack.eu-central-1.amazonaws.com' matches the apex too
    assert "allowed by rule group egress-dev-nodes-tls-sni, sid 71361448" in format_text(e)
    assert format_text(e).count(", though no requirement asks for it") == 1
    suricata = explain("kkp-aws", "s3.dualstack.eu-central-1.amazonaws.com:443")  # exact rules: '*.x' never the apex
    assert {d.outcome for d in suricata.decisions} == {DENIED}
    assert suricata.decisions[1].reason == ("no rule passes it: the firewall policy's default actions aws:drop_established, "
                                            "aws:alert_established drop it")


def test_suricata_passes_only_what_they_cover_and_security_groups_come_first():
    default = "no rule passes it: the firewall policy's default actions aws:drop_established, aws:alert_established drop it"
    wider = explain("kkp-aws", "*.quay.io:443")  # the rules pass quay.io's hosts one by one, never every subdomain
    assert not wider.required and [n.match for n in wider.nearest] == ["shares the domain quay.io"] * 5
    assert decided(wider) == [("aws", role, "https/443", DENIED, default) for role in ("bastion", "nodes", "seed")]
    http = explain("kkp-aws", "quay.io:80")
    assert decided(http) == [
        ("aws", "bastion", "http/80", DENIED, "no security-group egress rule of role bastion allows http/80 to quay.io (security groups deny "
                                               "what no rule allows)"),
        ("aws", "nodes", "http/80", DENIED, default), ("aws", "seed", "http/80", DENIED, default)]


def test_an_address_inside_a_required_cidr_and_an_exact_ip():
    e = explain("aks-china", "198.51.100.7:22")
    assert needs(e) == [("nodes -> 198.51.100.0/24 tcp/22", ("aks-china-tunnel-tcp-22",), "inside 198.51.100.0/24")]
    assert decided(e) == [("azure", "nodes", "tcp/22", ALLOWED, [("aks-core-tcp-22", {
        "rule collection group": "egress-aks-china-aks", "collection": "aks-network", "rule": "aks-core-tcp-22"})])]
    assert e.decisions[0].rules[0].kind == "network rule"
    assert e.notes == ()  # AzureMonitor is required on 443 only
    every_port = explain("aks-china", "198.51.100.7")
    assert [(n.protocol, n.ports) for n in every_port.requirements] == [("tcp", "22"), ("tcp", "9000"), ("udp", "1194")]
    assert [d.rules[0].name for d in every_port.decisions] == ["aks-core-tcp-22", "aks-core-tcp-9000", "aks-core-udp-1194"]
    assert every_port.notes == ("whether 198.51.100.7 belongs to service tag AzureMonitor (tcp/443) cannot be known offline",)
    ip = explain("aks-public", "203.0.113.20:443")
    assert needs(ip) == [("nodes -> 203.0.113.20 tcp/443", ("aks-public-api-server-ip",), "exact")]
    assert decided(ip) == [("azure", "nodes", "tcp/443", ALLOWED, [("aks-pod-api-access-tcp-443", {
        "rule collection group": "egress-aks-public-aks", "collection": "aks-network", "rule": "aks-pod-api-access-tcp-443"})])]
    outside = explain("aks-china", "198.51.100.7:23")
    assert not outside.required and [n.match for n in outside.nearest] == ["the same destination, another port"] * 3
    assert decided(outside) == [("azure", "nodes", "tcp/23", DENIED, AZURE_DEFAULT), ("azure", "nodes", "udp/23", DENIED, AZURE_DEFAULT)]


def test_a_wrong_port_is_denied_and_the_required_port_is_the_nearest():
    e = explain("dev", "mcr.microsoft.com:80")
    assert not e.required
    assert needs(e, nearest=True) == [("nodes -> mcr.microsoft.com https/443", ("aks-public-mcr",),
                                       "the same destination, another port")]
    http_drop = lambda role, sid: [(f"sid:{sid}", {"rule group": f"egress-dev-{role}-http-host", "sid": str(sid),  # noqa: E731
                                                   "msg": "not matching any HTTP allowlisted FQDNs"})]
    assert decided(e) == [
        ("azure", "nodes", "http/80", DENIED, AZURE_DEFAULT),
        ("aws", "nodes", "http/80", DENIED, http_drop("nodes", 28534724)),
        ("aws", "seed", "http/80", DENIED, http_drop("seed", 64662165)),
        ("kubernetes", "nodes", "http/80", DENIED, DENY_ALL),
        ("kubernetes", "seed", "http/80", DENIED, DENY_ALL),
    ]
    assert e.decisions[3].notes == ("ACL aks-core-https lists mcr.microsoft.com (for nodes, HTTPS 443)",)


def test_an_unrequired_host_is_denied_everywhere_and_the_nearest_are_named():
    e = explain("dev", "xmcr.microsoft.com:443")
    assert needs(e, nearest=True) == [
        ("nodes -> mcr.microsoft.com https/443", ("aks-public-mcr",), "shares the domain microsoft.com"),
        ("nodes -> *.data.mcr.microsoft.com https/443", ("aks-public-mcr", "aks-public-mcr-data"), "shares the domain microsoft.com"),
        ("nodes -> packages.microsoft.com https/443", ("aks-public-packages",), "shares the domain microsoft.com")]
    assert decided(e) == [
        ("azure", "nodes", "https/443", DENIED, AZURE_DEFAULT),
        ("aws", "nodes", "https/443", DENIED, tls_drop("nodes", 78551456)),
        ("aws", "seed", "https/443", DENIED, tls_drop("seed", 24745239)),
        ("kubernetes", "nodes", "https/443", DENIED, DENY_ALL),
        ("kubernetes", "seed", "https/443", DENIED, DENY_ALL),
    ]
    typo = explain("dev", "mcr.microsft.com:443").nearest  # no shared parent domain: similar names (difflib), the closest first
    assert [(n.destination, n.match) for n in typo] == [("mcr.microsoft.com", "a similar name"), ("*.data.mcr.microsoft.com", "a similar name")]
    assert explain("dev", "example.org:443").nearest == ()


def test_role_filter():
    seed = explain("dev", "acme-v02.api.letsencrypt.org:443", role="seed")
    assert needs(seed) == [("seed -> acme-v02.api.letsencrypt.org https/443", ("kkp-cert-manager-acme",), "exact")]
    assert decided(seed) == [
        ("azure", "seed", "https/443", NOT_ENFORCED, "azure does not enforce role seed for this stack (it enforces: nodes)"),
        ("aws", "seed", "https/443", ALLOWED, [("sid:47643569", {"rule group": "egress-dev-seed-tls-sni", "sid": "47643569",
                                                                  "msg": "matching TLS allowlisted FQDNs"}),
                                               ("egress-dev-seed-0", {"security group": "egress-dev-seed-0", "egress": "tcp/443 to 0.0.0.0/0"})]),
        ("kubernetes", "seed", "https/443", ALLOWED, [("kkp-cert-manager-seed-https", {"acl": "kkp-cert-manager-seed-https"})]),
    ]
    nodes = explain("dev", "acme-v02.api.letsencrypt.org:443", role="nodes")
    assert not nodes.required
    assert needs(nodes, nearest=True) == [("seed -> acme-v02.api.letsencrypt.org https/443", ("kkp-cert-manager-acme",),
                                           "the same destination, another role")]
    assert decided(nodes) == [("azure", "nodes", "https/443", DENIED, AZURE_DEFAULT),
                              ("aws", "nodes", "https/443", DENIED, tls_drop("nodes", 78551456)),
                              ("kubernetes", "nodes", "https/443", DENIED, DENY_ALL)]
    assert nodes.decisions[2].notes == ("ACL kkp-cert-manager-seed-https lists acme-v02.api.letsencrypt.org (for seed, HTTPS 443)",)


def test_a_requirement_a_target_does_not_enforce_is_said_so():
    e = explain("dev", "AzureMonitor:443")
    assert needs(e) == [("nodes -> AzureMonitor tcp/443", ("aks-monitor-service-tag",), "exact")]
    not_enforced = "{} does not enforce this requirement for this stack (its platforms, roles or protocols leave it out)"
    assert [(d.target, d.outcome, d.reason, d.notes) for d in e.decisions] == [
        ("azure", ALLOWED, "", ()),
        ("aws", NOT_ENFORCED, "an Azure service tag means nothing on AWS", (not_enforced.format("aws"),)),
        ("kubernetes", NOT_ENFORCED, "the egress proxy carries only HTTP and HTTPS: a tcp flow needs a network path of its own",
         (not_enforced.format("kubernetes"),)),
    ]
    assert e.decisions[0].rules[0].name == "aks-azure-monitor-tcp-443"


def test_the_artefacts_decide_not_the_plan():
    """Drop aks-core-http from the Azure body: the next rule in Azure's order (egress-dev-kkp's kkp-core-http) decides."""
    catalog, profile, reqs, artefacts = stack("dev")
    body = json.loads(artefacts["azure"]["azure/egress-dev-aks.json"])
    for collection in body["properties"]["ruleCollections"]:
        collection["rules"] = [r for r in collection["rules"] if r["name"] != "aks-core-http"]
    edited = {**artefacts, "azure": {**artefacts["azure"], "azure/egress-dev-aks.json": json.dumps(body)}}
    e = explain_destination(catalog, profile, reqs, edited, "security.ubuntu.com:80")  # AKS's and KKP's nodes both need it
    assert [(r.name, dict(r.where)) for r in e.decisions[0].rules] == [
        ("kkp-core-http", {"rule collection group": "egress-dev-kkp", "collection": "kkp-application", "rule": "kkp-core-http"})]
    assert explain_destination(catalog, profile, reqs, edited, "changelogs.ubuntu.com:80").decisions[0].reason == AZURE_DEFAULT  # AKS's only


def test_explain_rule_azure_and_squid_share_a_name():
    r = rule("dev", "aks-core-https")
    assert r.found and r.stack == "dev"
    assert [(m.rule.target, m.rule.kind, m.rule.describe(), m.roles) for m in r.matches] == [
        ("azure", "application rule", "rule collection group egress-dev-aks, collection aks-application, rule aks-core-https", ("nodes",)),
        ("kubernetes", "squid acl", "acl aks-core-https", ("nodes",))]
    flows = ["nodes -> *.data.mcr.microsoft.com https/443", "nodes -> *.hcp.westeurope.azmk8s.io https/443", "nodes -> acs-mirror.azureedge.net https/443",
             "nodes -> login.microsoftonline.com https/443", "nodes -> management.azure.com https/443", "nodes -> mcr-0001.mcr-msedge.net https/443",
             "nodes -> mcr.microsoft.com https/443", "nodes -> packages.aks.azure.com https/443", "nodes -> packages.microsoft.com https/443",
             "nodes -> snapshot.ubuntu.com https/443"]
    for match in r.matches:
        assert [n.flow for n in match.requirements] == flows
        assert [e.id for e in match.entries] == list(match.rule.entry_ids) and len(match.entries) == 10
    entry = r.matches[0].entries[5]
    assert (entry.id, entry.platform, entry.feature, entry.citation, entry.known) == (
        "aks-public-mcr", "aks", "", (AKS_PAGE, "Azure Global required FQDN / application rules"), True)
    path = rule("dev", "egress-dev-aks/aks-application/aks-core-https")
    assert [m.rule.target for m in path.matches] == ["azure"] and path.matches[0] == r.matches[0]
    assert [m.rule.name for m in rule("dev", "aks-network").matches] == ["aks-azure-monitor-tcp-443"]  # a collection: all its rules


def test_explain_rule_aws_sid():
    r = rule("kkp-aws", "sid:5604055")
    assert [(m.rule.name, m.rule.describe()) for m in r.matches] == [
        ("sid:5604055", 'rule group egress-kkp-eu-west-1-nodes-rules, sid 5604055, msg "kkp-core-https cdn.quay.io"')]
    match = r.matches[0]
    assert [n.flow for n in match.requirements] == ["nodes -> cdn.quay.io https/443"]
    assert [e.id for e in match.entries] == ["kkp-images-quay-io-canal", "kkp-images-quay-io-cilium", "kkp-images-quay-io-helper",
                                            "kkp-images-quay-io-kubermatic", "kkp-images-quay-io-metallb", "kkp-images-quay-io-monitoring"]
    assert rule("kkp-aws", "5604055").matches == r.matches == rule("kkp-aws", "sid 5604055").matches
    group = rule("kkp-aws", "arn:aws:network-firewall:eu-west-1:123456789012:stateful-rulegroup/egress-kkp-eu-west-1-seed-rules-0a1b2c3")
    # the seed's rules: its cloud APIs, KubeOne's hosts and, since issue 20, the registries of the images it runs
    assert len(group.matches) == 123 and {m.rule.where[0][1] for m in group.matches} == {"egress-kkp-eu-west-1-seed-rules"}
    domain_list = rule("dev", "sid:40849752").matches[0]  # a generated domain-list pass: its requirements found by matching
    assert domain_list.note == "a domain-list rule names no entries: the requirements it passes, found by matching"
    assert [n.flow for n in domain_list.requirements] == ["nodes -> quay.io https/443"]
    assert [e.id for e in domain_list.entries] == ["kkp-images-quay-io-canal", "kkp-images-quay-io-cilium", "kkp-images-quay-io-helper",
                                                  "kkp-images-quay-io-kubermatic", "kkp-images-quay-io-metallb", "kkp-images-quay-io-monitoring",
                                                  "openshift-quay"]
    drop = rule("dev", "sid:78551456").matches[0]
    assert (drop.rule.action, drop.requirements, drop.note) == ("deny", (), "a rule that denies: no requirement is behind it")


def test_explain_rule_squid_acl():
    r = rule("dev", "kkp-kubeone-seed-https")
    assert [(m.rule.target, m.rule.name, m.rule.text, m.roles) for m in r.matches] == [
        ("kubernetes", "kkp-kubeone-seed-https", "http_access allow CONNECT role-seed ports-443 kkp-kubeone-seed-https", ("seed",))]
    assert [e.id for e in r.matches[0].entries] == ["kkp-kubeone-docker-apt", "kkp-kubeone-images-docker-io", "kkp-kubeone-images-quay-io",
                                                   "kkp-kubeone-images-registry-k8s-io", "kkp-kubeone-kubernetes-packages",
                                                   "kkp-kubeone-release-version"]
    flows = [n.flow for n in r.matches[0].requirements]
    # the package hosts, and the registries of the images KubeOne deploys with the hosts a pull touches (matrix/expansions.yaml)
    assert {"seed -> dl.k8s.io https/443", "seed -> download.docker.com https/443", "seed -> pkgs.k8s.io https/443",
            "seed -> prod-cdn.packages.k8s.io https/443", "seed -> registry.k8s.io https/443", "seed -> quay.io https/443",
            "seed -> registry-1.docker.io https/443"} <= set(flows) and flows == sorted(flows)
    assert [m.rule.name for m in rule("dev", "aks-core-https-subdomains").matches] == ["aks-core-https"]


def test_explain_rule_unknown_name_lists_close_names():
    r = rule("dev", "aks-cor-https")
    assert (r.found, r.matches, r.close) == (False, (), ("aks-core-https", "aks-core-http", "kkp-core-https", "kkp-core-http",
                                                         "kkp-core-seed-https"))
    assert format_text(r) == ("Rule 'aks-cor-https' (stack dev): no rule of the artefacts has this name.\n"
                              "Close names: aks-core-https, aks-core-http, kkp-core-https, kkp-core-http, kkp-core-seed-https\n")
    assert rule("dev", "nonsense-thing").close == ()
    assert to_json(rule("dev", "nonsense-thing")) == {"stack": "dev", "rule": "nonsense-thing", "found": False, "matches": [], "close": []}


def test_format_text_allowed_and_denied():
    assert format_text(explain("dev", "mcr.microsoft.com:443")) == f"""\
mcr.microsoft.com:443 (stack dev)
Required by 1 requirement(s):
  nodes -> mcr.microsoft.com https/443, required (exact)
    entries: aks-public-mcr
    why: Microsoft Container Registry (first-party images and charts needed to create, scale and upgrade the cluster)
    cited: {AKS_PAGE} § Azure Global required FQDN / application rules
Targets:
  azure nodes -> mcr.microsoft.com https/443: allowed by rule collection group egress-dev-aks, collection aks-application, rule aks-core-https
  aws nodes -> mcr.microsoft.com https/443: denied by rule group egress-dev-nodes-tls-sni, sid 78551456, msg "not matching any TLS allowlisted FQDNs" (not counted: aws does not enforce this flow for the stack)
    aws does not enforce this requirement for this stack (its platforms, roles or protocols leave it out)
  kubernetes nodes -> mcr.microsoft.com https/443: allowed by acl aks-core-https (http_access allow CONNECT role-nodes ports-443 aks-core-https)
"""
    assert format_text(explain("dev", "example.org:443")) == """\
example.org:443 (stack dev)
Not required: no requirement of stack dev needs example.org:443.
Nearest requirements: none
Targets:
  azure nodes -> example.org https/443: denied: no rule matches it: Azure Firewall's default deny
  aws nodes -> example.org https/443: denied by rule group egress-dev-nodes-tls-sni, sid 78551456, msg "not matching any TLS allowlisted FQDNs"
  aws seed -> example.org https/443: denied by rule group egress-dev-seed-tls-sni, sid 24745239, msg "not matching any TLS allowlisted FQDNs"
  kubernetes nodes -> example.org https/443: denied by http_access deny all
  kubernetes seed -> example.org https/443: denied by http_access deny all
"""


def test_to_json_is_plain_data_and_deterministic():
    document = to_json(explain("dev", "mcr.microsoft.com:443"))
    assert json.loads(json.dumps(document)) == document == to_json(explain("dev", "mcr.microsoft.com:443"))
    assert (document["required"], document["port"], [d["outcome"] for d in document["decisions"]]) == (True, 443, [ALLOWED, DENIED, ALLOWED])
    assert document["decisions"][1]["rules"][0]["where"] == {"rule group": "egress-dev-nodes-tls-sni", "sid": "78551456",
                                                             "msg": "not matching any TLS allowlisted FQDNs"}
    assert document["requirements"][0]["citations"][0] == {"url": AKS_PAGE, "section": "Azure Global required FQDN / application rules"}
    found = to_json(rule("dev", "kkp-kubeone-seed-https"))
    assert (found["found"], [m["rule"]["name"] for m in found["matches"]], found["matches"][0]["roles"]) == (
        True, ["kkp-kubeone-seed-https"], ["seed"])


@pytest.mark.parametrize("text, expected", [
    ("mcr.microsoft.com:443", ("mcr.microsoft.com", 443)),
    ("MCR.Microsoft.com.", ("mcr.microsoft.com", None)),
    ("https://mcr.microsoft.com/v2/", ("mcr.microsoft.com", 443)),
    ("http://archive.ubuntu.com:8080/ubuntu", ("archive.ubuntu.com", 8080)),
    ("[2001:db8::1]:443", ("2001:db8::1", 443)),
    ("2001:db8::1", ("2001:db8::1", None)),
    ("198.51.100.0/24", ("198.51.100.0/24", None)),
    ("*.data.mcr.microsoft.com:443", ("*.data.mcr.microsoft.com", 443)),
    ("AzureMonitor:443", ("AzureMonitor", 443)),
    ("dl.k8s.io/release/stable.txt", ("dl.k8s.io", None)),
])
def test_destination_arguments(text, expected):
    assert parse_destination_arg(text) == expected


@pytest.mark.parametrize("destination, port, role, message", [
    ("mcr.microsoft.com:https", None, None, "destination 'mcr.microsoft.com:https': port 'https' is not a number. Fix: write "
                                            "DESTINATION[:PORT] with a port 1-65535, e.g. mcr.microsoft.com:443 or [2001:db8::1]:443"),
    ("mcr.microsoft.com:0", None, None, "destination 'mcr.microsoft.com:0': port 0 is outside 1-65535. Fix: give a port between 1 and "
                                        "65535, e.g. mcr.microsoft.com:443 or [2001:db8::1]:443"),
    ("mcr.microsoft.com", 70000, None, "destination 'mcr.microsoft.com': port 70000 is outside 1-65535. Fix: give a port between 1 and "
                                       "65535, e.g. mcr.microsoft.com:443 or [2001:db8::1]:443"),
    ("mcr.microsoft.com:443", 80, None, "destination 'mcr.microsoft.com:443' and port 80 disagree. Fix: give the port once"),
    ("mcr.microsoft.com", None, "nodez", "unknown role 'nodez'. Fix: use one of: nodes, control-plane, seed, bastion, workstation"),
    ("localhost:3128", None, None, "destination 'localhost:3128': a host name needs at least two labels. Fix: write the fully qualified "
                                   "name, e.g. 'vcenter.example.com'"),
    ("10.0.0.1/24", None, None, "destination '10.0.0.1/24': '10.0.0.1/24' has host bits set. Fix: write the network address '10.0.0.0/24'"),
    ("[2001:db8::1", None, None, "destination '[2001:db8::1' opens '[' without a closing ']:PORT'. Fix: write [IPv6]:PORT, e.g. "
                                 "mcr.microsoft.com:443 or [2001:db8::1]:443"),
    ("  ", None, None, "destination is empty. Fix: give DESTINATION[:PORT], e.g. mcr.microsoft.com:443 or [2001:db8::1]:443"),
])
def test_bad_arguments_are_one_clear_error(destination, port, role, message):
    with pytest.raises(ExplainError) as raised:
        explain("dev", destination, port, role)
    assert str(raised.value) == message
    assert isinstance(raised.value, EgressError)


def test_an_empty_rule_name_is_an_error():
    with pytest.raises(ExplainError, match=r"^rule name is empty\. Fix: give a rule name as a log shows it"):
        rule("dev", " ")


@pytest.mark.parametrize("name", ["dev", "kkp-aws"])
def test_round_trip_every_enforced_requirement_is_found_and_allowed_by_a_rule(name):
    """For every requirement a target enforces, explaining its destination on its first port finds the requirement
    and a rule of that target allowing it (the evaluators' verdict, read rule by rule)."""
    catalog, profile, reqs, artefacts = stack(name)
    enforced = {t: TARGETS[t].enforced(catalog, profile, reqs) for t in artefacts}
    asked = {(r.destination, r.ports[0].start, r.role) for found in enforced.values() for r in found}
    explained = {key: explain(name, key[0], key[1], key[2]) for key in sorted(asked)}
    checked = 0
    for target, found in enforced.items():
        for req in found:
            e = explained[(req.destination, req.ports[0].start, req.role)]
            assert any(n.role == req.role and n.destination == req.destination and n.protocol == req.protocol for n in e.requirements), req.key
            allowing = [d for d in e.decisions if d.target == target and d.role == req.role and d.protocol == req.protocol and d.outcome == ALLOWED]
            assert allowing and allowing[0].rules and allowing[0].required, (target, req.key, e.decisions)
            checked += 1
    assert checked == sum(len(found) for found in enforced.values()) > 70
