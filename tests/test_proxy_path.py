"""The path each requirement takes through a corporate proxy (egress/proxy_path.py), and what egress explain says of it."""
from __future__ import annotations

from pathlib import Path

import pytest

from egress.models import Citation, NoTlsInspection
from egress.project import open_project
from egress.proxy_path import DIRECT, PROXY, UNREACHABLE, ProxyPathError, Setup, judge, requirement_paths, setups
from egress.resolve import resolve

ROOT = Path(__file__).resolve().parents[1]
UDP = "UDP cannot traverse a forward proxy: HTTP CONNECT carries TCP only"


def stack(name: str, **overrides):
    catalog, profile, _ = open_project(ROOT).requirements(name)
    profile = profile.model_copy(update=overrides)
    return catalog, profile, resolve(catalog, profile)


def routes(name: str, **overrides) -> dict:
    catalog, profile, reqs = stack(name, **overrides)
    return {(p.role, p.destination, p.protocol): (p.route, p.entry, p.reason) for p in requirement_paths(catalog, profile, reqs)}


def test_openshift_sends_ntp_and_vcenter_direct_and_everything_else_through_the_proxy():
    found = routes("openshift")
    direct = {key: value for key, value in found.items() if value[0] != PROXY}
    assert direct == {
        ("nodes", "1.rhel.pool.ntp.org", "udp"): (DIRECT, "", UDP),
        ("nodes", "2.rhel.pool.ntp.org", "udp"): (DIRECT, "", UDP),
        ("nodes", "3.rhel.pool.ntp.org", "udp"): (DIRECT, "", UDP),
        ("control-plane", "vcenter.example.com", "https"): (DIRECT, "vcenter.example.com", "vcenter.example.com is noProxy domain vcenter.example.com"),
    }
    assert found[("nodes", "quay.io", "https")] == (PROXY, "", "")
    assert len(found) == 27


def test_a_stack_no_proxy_entry_sends_its_domain_direct():
    found = routes("openshift", no_proxy=(".corp.example.com", ".quay.io"))
    assert found[("nodes", "cdn.quay.io", "https")] == (DIRECT, ".quay.io", "cdn.quay.io is under noProxy domain .quay.io")
    assert found[("nodes", "quay.io", "https")] == (PROXY, "", "")  # '.quay.io' is subdomains only


def test_kkp_only_the_worker_nodes_use_the_proxy():
    found = routes("kkp")
    assert found[("nodes", "quay.io", "https")] == (PROXY, "", "")
    assert found[("seed", "quay.io", "https")] == (DIRECT, "", "role seed does not use the cluster proxy (clusterProxy kkp (nodes))")
    assert found[("bastion", "github.com", "https")][0] == DIRECT
    # KKP's node noProxy (as cluster_proxy.py builds it) does not name vCenter: the nodes' vSphere calls go to the proxy
    assert found[("nodes", "vcenter.example.com", "https")] == (PROXY, "", "")


def test_aks_adds_its_api_server_host_so_the_tunnel_goes_direct():
    found = routes("aks-proxy")
    assert found[("nodes", "*.hcp.westeurope.azmk8s.io", "https")] == (
        DIRECT, "*.hcp.westeurope.azmk8s.io",
        "AKS adds the cluster's API server host, <its name>.hcp.westeurope.azmk8s.io, which *.hcp.westeurope.azmk8s.io stands for")
    assert found[("nodes", "ntp.ubuntu.com", "udp")] == (DIRECT, "", UDP)
    assert found[("nodes", "security.ubuntu.com", "http")] == (PROXY, "", "")
    catalog, profile, _ = stack("aks-proxy")
    (aks,) = setups(catalog, profile)
    assert aks.no_proxy == (".corp.example.com", "10.50.0.0/16", "localhost", "127.0.0.1", "konnectivity", "169.254.169.254", "168.63.129.16",
                            "10.244.0.0/16", "10.0.0.0/16", "10.50.0.0/22", "*.hcp.westeurope.azmk8s.io")


SETUP = Setup("kubeadm", ("nodes",), "http://proxy.example.com:3128", "http://proxy.example.com:3128",
              ("localhost", "10.0.0.0/8", ".internal.example.com", "git.example.com", "*.svc.example.com"), {}, False)
PINNED = NoTlsInspection(reason="the client trusts only its own CA", citation=Citation(source="aks-http-proxy", section="x"))


@pytest.mark.parametrize("destination,kind,protocol,port,expected", [
    ("quay.io", "fqdn", "https", 443, (PROXY, "http://proxy.example.com:3128", "", "", "")),
    ("ntp.example.com", "fqdn", "tcp", 9000, (DIRECT, "", "", "tcp/9000 is not HTTP: clients connect themselves, a forward proxy carries only HTTP and HTTPS", "")),
    ("10.1.2.3", "ip", "https", 443, (DIRECT, "", "10.0.0.0/8", "10.1.2.3 is in noProxy CIDR 10.0.0.0/8", "")),
    ("10.2.0.0/16", "cidr", "https", 443, (DIRECT, "", "10.0.0.0/8", "10.2.0.0/16 is inside noProxy CIDR 10.0.0.0/8", "")),
    ("*.internal.example.com", "wildcard", "https", 443, (DIRECT, "", ".internal.example.com", "*.internal.example.com is under noProxy domain .internal.example.com", "")),
    # a wildcard some of whose hosts a narrower entry names: judged for the others, and said to be approximate
    ("*.example.com", "wildcard", "https", 443, (PROXY, "http://proxy.example.com:3128", "", "",
                                                 "judged for a host under example.com; the hosts noProxy entries '*.svc.example.com', "
                                                 "'.internal.example.com', 'git.example.com' name go direct")),
    ("AzureCloud", "service-tag", "https", 443, (PROXY, "http://proxy.example.com:3128", "", "",
                                                 "a service-tag destination stands for addresses; which the clients reach by name cannot be known offline")),
])
def test_judge(destination, kind, protocol, port, expected):
    assert judge(SETUP, destination, kind, protocol, port) == expected


def test_a_tls_inspecting_proxy_cannot_carry_a_host_that_must_not_be_inspected():
    inspecting = Setup(**{**SETUP.__dict__, "inspects_tls": True})
    route, url, entry, reason, _ = judge(inspecting, "api.example.net", "fqdn", "https", 443, PINNED)
    assert (route, url, entry) == (UNREACHABLE, "http://proxy.example.com:3128", "")
    assert reason == ("the proxy inspects TLS (proxyInspectsTls) and api.example.net must not be inspected: the client trusts only its own CA; "
                      "exempt it from inspection (egress export --for proxy lists it)")
    assert judge(SETUP, "api.example.net", "fqdn", "https", 443, PINNED)[0] == PROXY  # no inspection, no problem
    assert judge(inspecting, "api.example.net", "fqdn", "http", 80, PINNED)[0] == PROXY  # plain HTTP is not TLS


def test_plain_http_goes_direct_without_an_http_proxy():
    https_only = Setup(**{**SETUP.__dict__, "http_proxy": ""})
    assert judge(https_only, "archive.ubuntu.com", "fqdn", "http", 80) == (DIRECT, "", "", "no httpProxy is set, so plain HTTP goes direct", "")


def test_the_proxy_inside_no_proxy_changes_nothing():
    # Go matches NO_PROXY against the request's destination only; a client always connects to the proxy itself directly
    inside = Setup(**{**SETUP.__dict__, "no_proxy": ("proxy.example.com",)})
    assert judge(inside, "quay.io", "fqdn", "https", 443)[0] == PROXY


def test_no_corporate_proxy_is_an_error():
    catalog, profile, reqs = stack("kkp-aws")
    with pytest.raises(ProxyPathError, match="stack .kkp-aws.: egress-matrix:clusterProxy is not set, so there is no corporate proxy to route through"):
        requirement_paths(catalog, profile, reqs)


# -- egress explain: the key lines, exactly ------------------------------------------------------------------------------

@pytest.mark.parametrize("stack_name,destination,line", [
    ("openshift", "quay.io:443",
     "Note: OpenShift cluster Proxy: quay.io goes through http://proxy.corp.example.com:3128 (no entry of status.noProxy covers it): "
     "the proxy must allow it"),
    ("openshift", "vcenter.example.com",
     "Note: OpenShift cluster Proxy: vcenter.example.com goes direct, not through the proxy, because of status.noProxy entry 'vcenter.example.com' "
     "(vcenter.example.com is noProxy domain vcenter.example.com): the firewall must allow it"),
    ("openshift", "1.rhel.pool.ntp.org",
     f"Note: OpenShift cluster Proxy: 1.rhel.pool.ntp.org goes direct, not through the proxy ({UDP}): the firewall must allow it"),
    ("kkp", "quay.io:443",
     "Note: KKP node proxy: quay.io goes through http://proxy.corp.example.com:3128 (no entry of the datacenter's node.noProxy covers it): "
     "the proxy must allow it"),
    ("kkp", "quay.io:443", "Note: role seed does not use the cluster proxy (clusterProxy kkp): its quay.io goes direct, the firewall must allow it"),
    ("kkp", "kkp.example.com:443",
     "Note: KKP node proxy: kkp.example.com goes direct, not through the proxy, because of the datacenter's node.noProxy entry 'kkp.example.com' "
     "(kkp.example.com is noProxy domain kkp.example.com): the firewall must allow it"),
    ("aks-proxy", "mcr.microsoft.com",
     "Note: AKS HTTP proxy: mcr.microsoft.com goes through http://proxy.corp.example.com:8080 (no entry of effectiveNoProxy covers it): "
     "the proxy must allow it"),
    ("aks-proxy", "*.hcp.westeurope.azmk8s.io",
     "Note: AKS HTTP proxy: *.hcp.westeurope.azmk8s.io goes direct, not through the proxy, because of effectiveNoProxy entry "
     "'*.hcp.westeurope.azmk8s.io' (AKS adds the cluster's API server host, <its name>.hcp.westeurope.azmk8s.io, which "
     "*.hcp.westeurope.azmk8s.io stands for): the firewall must allow it"),
    ("aks-proxy", "10.0.0.10:443",
     "Note: AKS HTTP proxy: 10.0.0.10 goes direct, not through the proxy, because of effectiveNoProxy entry '10.0.0.0/16' "
     "(10.0.0.10 is in noProxy CIDR 10.0.0.0/16): the firewall must allow it"),
])
def test_explain_names_the_path(run_cli, stack_name, destination, line):
    code, out, err = run_cli("explain", destination, "--stack", stack_name)
    assert code == 0, err
    assert line in out.splitlines()


@pytest.mark.parametrize("destination", ["203.0.113.9:8443", "unlisted.example.net:8443", "[2001:db8::9]:8443"])
def test_explain_reads_an_unlisted_port_alike_for_names_and_addresses(run_cli, destination):
    # review of issue 21, item 9: an address on 8443 was 'direct (not HTTP)' while a name on 8443 went 'through the proxy';
    # a Go HTTPS client sends either to the proxy, a client of another protocol connects to either itself
    host = destination.rsplit(":", 1)[0].strip("[]")
    code, out, err = run_cli("explain", destination, "--stack", "openshift")
    assert code == 0, err
    assert [line for line in out.splitlines() if line.startswith("Note: OpenShift cluster Proxy")] == [
        f"Note: OpenShift cluster Proxy: {host} as HTTPS on port 8443 goes through http://proxy.corp.example.com:3128 "
        "(no entry of status.noProxy covers it): the proxy must allow it",
        f"Note: OpenShift cluster Proxy: {host} as another TCP protocol on port 8443 goes direct, not through the proxy (tcp/8443 is not "
        "HTTP: clients connect themselves, a forward proxy carries only HTTP and HTTPS): the firewall must allow it"]


def test_explain_says_a_pinned_host_is_not_reachable_through_an_inspecting_proxy(run_cli, project_copy):
    # AKS keeps its own API server off the proxy; a kubeadm proxy environment behind the same inspecting proxy does not
    path = project_copy / "stacks" / "Pulumi.aks-proxy.yaml"
    text = path.read_text().replace("egress-matrix:clusterProxy: [aks]", "egress-matrix:clusterProxy: [kubeadm]")
    path.write_text(text)
    code, out, err = run_cli("explain", "*.hcp.westeurope.azmk8s.io", "--stack", "aks-proxy", "--project", str(project_copy))
    assert code == 0, err
    assert ("Note: kubeadm proxy environment: *.hcp.westeurope.azmk8s.io is not reachable: it goes through http://proxy.corp.example.com:8080, "
            "but the proxy inspects TLS (proxyInspectsTls) and *.hcp.westeurope.azmk8s.io must not be inspected: the API server tunnel "
            "(konnectivity): its clients trust only the cluster CA (AKS supports no custom CA for API server communication) and konnectivity "
            "needs its ALPN extension intact (the outbound rules page, this row); exempt it from inspection (egress export --for proxy lists it)"
            ) in out.splitlines()


def test_explain_says_nothing_of_a_proxy_the_stack_has_not(run_cli):
    code, out, err = run_cli("explain", "quay.io:443", "--stack", "kkp-aws")
    assert "cluster proxy" not in out.lower() and "through http" not in out


def test_a_kkp_stack_takes_a_name_and_port_no_proxy_entry_as_go_does(run_cli, project_copy):
    # review of issue 21, item 13: OpenShift's operator refuses host:port in noProxy, KKP's nodes hand it to Go clients,
    # which match that port only; the operator's check (and its error naming OpenShift) applies to clusterProxy openshift only
    path = project_copy / "stacks" / "Pulumi.kkp.yaml"
    text = path.read_text()
    old = "  egress-matrix:httpProxy: http://proxy.corp.example.com:3128\n"
    assert old in text
    path.write_text(text.replace(old, old + "  egress-matrix:noProxy: [git.corp.example.com:8443]\n"))
    lines = {}
    for port in (8443, 443):
        code, out, err = run_cli("explain", f"git.corp.example.com:{port}", "--stack", "kkp", "--project", str(project_copy))
        assert code == 0, err
        lines[port] = [line for line in out.splitlines() if line.startswith("Note: KKP node proxy")][0]
    assert lines[8443] == ("Note: KKP node proxy: git.corp.example.com as HTTPS on port 8443 goes direct, not through the proxy, because of "
                           "the datacenter's node.noProxy entry 'git.corp.example.com:8443' (git.corp.example.com is noProxy domain "
                           "git.corp.example.com:8443): the firewall must allow it")
    assert lines[443] == ("Note: KKP node proxy: git.corp.example.com goes through http://proxy.corp.example.com:3128 (no entry of the "
                          "datacenter's node.noProxy covers it): the proxy must allow it")
