"""Issue 17, items 3 and 4: every target's compile refuses breadth beyond the stack's limits (destinations, ports,
role sources, noProxy) before anything is compiled or registered, unless a matrix entry or the stack says why; the
vendor matrix's genuinely broad rows say why; host-valued settings are validated as hosts."""
from __future__ import annotations

import runpy

import pulumi
import pytest
from pydantic import ValidationError

from aws_stacks import ROOT, req, stack
from egress.addresses import AddressError, parse_fqdn, parse_no_proxy_entry, parse_service_tag, parse_wildcard
from egress.profile import Profile
from egress.targets import TARGETS
from egress.targets.guard import BreadthError, check_breadth
from pulumi_harness import settle
from test_program import RecordingMocks, stack_config

STACK_TARGETS = {"kkp-aws": "aws", "aks-public": "azure", "proxy-only": "kubernetes"}


def refusal(name: str, **overrides) -> str:
    catalog, profile, requirements = stack(name, **overrides)
    with pytest.raises(BreadthError) as info:
        TARGETS[STACK_TARGETS.get(name, "kubernetes")].compile(catalog, profile, requirements, "the stack")
    return str(info.value)


# -- role sources ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(STACK_TARGETS))
@pytest.mark.parametrize("sources", [("0.0.0.0/0",), ("0.0.0.0/1", "128.0.0.0/1"), ("::/0",)])
def test_role_sources_that_are_the_internet_are_refused_on_every_target(name, sources):
    assert refusal(name, node_sources=sources).startswith(
        f"the stack: egress-matrix:nodeSources = {list(sources)} covers 100% of public IPv")
    assert "a source that is the internet makes every rule an open relay" in refusal(name, node_sources=sources)


def test_sources_within_the_limit_compile():
    catalog, profile, requirements = stack("kkp-aws", node_sources=("10.60.0.0/16", "198.51.100.0/24", "11.0.0.0/8"))
    TARGETS["aws"].compile(catalog, profile, requirements, "")


# -- noProxy ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("overrides, found", [
    ({"no_proxy": ("0.0.0.0/0",)}, "egress-matrix:noProxy '0.0.0.0/0' covers 100% of public IPv4"),
    ({"no_proxy": (".com",)}, "egress-matrix:noProxy '.com' is or covers the public suffix 'com'"),
    ({"no_proxy": (".co.uk",)}, "egress-matrix:noProxy '.co.uk' is or covers the public suffix 'co.uk'"),
    ({"no_proxy": ("co.uk:443",)}, "egress-matrix:noProxy 'co.uk:443' is or covers the public suffix 'co.uk'"),
    ({"no_proxy": ("*",)}, "egress-matrix:noProxy '*' sends every request around the proxy"),
    ({"pod_cidrs": ("0.0.0.0/1",), "service_cidrs": ("128.0.0.0/1",)},
     "egress-matrix:podCidrs '0.0.0.0/1', egress-matrix:serviceCidrs '128.0.0.0/1' cover 100% of public IPv4"),
    ({"kkp_domain": "co.uk"}, "egress-matrix:kkpDomain 'co.uk' is or covers the public suffix 'co.uk'"),
])
def test_a_noproxy_that_sends_the_internet_around_the_proxy_is_refused(overrides, found):
    message = refusal("proxy-only", **overrides)
    assert message.startswith(f"the stack: {found}") and "Fix: list only the cluster's own networks" in message


def test_the_stacks_own_noproxy_entries_compile():
    catalog, profile, requirements = stack("openshift")
    assert profile.no_proxy == (".corp.example.com", "192.168.0.0/16", "vcenter.example.com")
    TARGETS["kubernetes"].compile(catalog, profile, requirements, "")


# -- destinations ----------------------------------------------------------------------------------------------------------
def test_two_halves_on_all_ports_are_refused_whatever_the_target():
    catalog, profile, _ = stack("kkp-aws")
    halves = [req("0.0.0.0/1", "cidr", "tcp", entry="kkp-crictl", sources=("10.60.0.0/16",)),
              req("128.0.0.0/1", "cidr", "tcp", entry="kkp-cni-plugins", sources=("10.60.0.0/16",))]
    halves = [r.model_copy(update={"ports": ((r.ports[0].__class__(1, 65535)),)}) for r in halves]
    with pytest.raises(BreadthError) as info:
        check_breadth(catalog, profile, halves, "src")
    assert str(info.value).startswith(
        "src: the stack's requirements allow more than its limits: tcp/1-65535 reaches 100% of public IPv4 (more than maxPublicShare 1%) "
        "through entry kkp-cni-plugins (nodes -> 128.0.0.0/1 tcp/1-65535), entry kkp-crictl (nodes -> 0.0.0.0/1 tcp/1-65535) (and 1 more). Fix:")
    check_breadth(catalog, profile.model_copy(update={"allow_broad_egress": "lab cluster, ticket OPS-42"}), halves)
    check_breadth(catalog, profile.model_copy(update={"max_public_share": 100, "max_port_span": 65535}), halves)


def test_every_option_counts_the_target_may_choose_any():
    """AWS cannot express a service tag and falls back to '*': an unmarked '*' alternative is refused even where the
    resolver picked the tag."""
    catalog, profile, requirements = stack("aks-usgov")
    unmarked = catalog.model_copy(update={"entries": tuple(e.model_copy(update={"broad": None}) for e in catalog.entries)})
    with pytest.raises(BreadthError) as info:
        check_breadth(unmarked, profile, requirements)
    assert "tcp/9000 reaches 100% of public IPv4 and 100% of public IPv6" in str(info.value)  # the first of three findings
    assert "entry aks-usgov-tunnel-tcp-9000 (nodes -> * tcp/9000)" in str(info.value) and "(and 2 more)" in str(info.value)
    check_breadth(catalog, profile, requirements)  # the vendor row says why it is broad


def test_the_vendor_rows_that_are_broad_say_why():
    """Decided per entry: the AKS rows whose document allows any destination ('*': the tunnel and NTP rows) and the IBM
    master's NodePort range; nothing else in the matrix is broad, and every stack compiles with them."""
    catalog, _, _ = stack("dev")
    assert sorted(e.id for e in catalog.entries if e.broad) == [
        "aks-china-ntp", "aks-china-tunnel-tcp-22", "aks-china-tunnel-tcp-9000", "aks-china-tunnel-udp-1194", "aks-public-ntp",
        "aks-public-tunnel-tcp-9000", "aks-public-tunnel-udp-1194", "aks-usgov-ntp", "aks-usgov-tunnel-tcp-9000", "aks-usgov-tunnel-udp-1194",
        "ibm-kubectl-master"]
    assert all(e.broad for e in catalog.entries if e.destination == "*" or any(a.destination == "*" for a in e.alternatives))
    for path in sorted((ROOT / "stacks").glob("Pulumi.*.yaml")):
        catalog, profile, requirements = stack(path.name.split(".")[1])
        for name in profile.targets:
            check_breadth(catalog, profile, TARGETS[name].enforced(catalog, profile, requirements))
        unmarked = catalog.model_copy(update={"entries": tuple(e.model_copy(update={"broad": None}) for e in catalog.entries)})
        if path.name in ("Pulumi.aks-china.yaml", "Pulumi.aks-usgov.yaml", "Pulumi.ibm-vpc.yaml"):
            with pytest.raises(BreadthError):
                check_breadth(unmarked, profile, requirements)


def test_a_broad_stack_registers_nothing(loop, monkeypatch):  # noqa: F811 - the fixture
    monkeypatch.chdir(ROOT)
    mocks = RecordingMocks()
    pulumi.runtime.set_mocks(mocks, project="egress-matrix", stack="kkp-aws", preview=False)
    config = stack_config("kkp-aws")
    config["egress-matrix:nodeSources"] = '["0.0.0.0/1", "128.0.0.0/1"]'
    pulumi.runtime.set_all_config(config)
    with pytest.raises(pulumi.RunError) as info:
        runpy.run_path(str(ROOT / "__main__.py"))
    settle(loop)  # what was queued before the error has reached the mocks: "nothing registered" is then the whole truth
    assert str(info.value).startswith("BreadthError: Pulumi config of stack 'kkp-aws': egress-matrix:nodeSources = ['0.0.0.0/1', '128.0.0.0/1']")
    assert mocks.registered == []


# -- item 4: host-valued settings ------------------------------------------------------------------------------------------
BASE = {"platforms": ["kkp"]}


@pytest.mark.parametrize("key, value, problem", [
    ("kkpDomain", "kkp.example.com,0.0.0.0/0,.com", "holds ',' and '/', which no host name has"),
    ("kkpDomain", "kkp.example.com\n", "holds white space or a control character"),
    ("baseDomain", "example.com\n", "holds white space or a control character"),
    ("baseDomain", "example.com,.com", "holds ',', which no host name has"),
    ("appsDomain", "apps.example.com ", "holds white space or a control character"),
    ("noProxy", [".corp.example.com,exa mple.com"], "holds white space or a control character, which no noProxy reader takes as part of an entry"),  # split at ',' first
    ("noProxy", [".corp.example.com\n"], "holds white space or a control character, which no noProxy reader takes as part of an entry"),
    ("noProxy", ["exa mple.com"], "holds white space or a control character, which no noProxy reader takes as part of an entry"),
    ("noProxy", ["bad_name.example.com"], "is not a domain, IP or CIDR"),
    ("nodeLocalDnsIp", "fe80::1%x,.com", "has an IPv6 zone"),
    ("customDnsIps", ["fe80::1%eth0"], "has an IPv6 zone"),
    ("podCidrs", ["fe80::%x/64"], "has an IPv6 zone"),
    ("vsphereEndpoints", ["vcenter.example.com\n"], "holds white space or a control character"),
    ("offlineRegistry", "registry.example.com\n:5000", "holds white space or a control character"),
    ("httpProxy", "http://pr\u043exy.example.com:3128", "'pr\u043exy.example.com' has non-ASCII characters ('\u043e' (U+043E))"),
    ("httpsProxy", "http://proxy.\u0435xample.com:3128", "has non-ASCII characters ('\u0435' (U+0435))"),
    ("proxyReadinessEndpoints", ["https://www.r\u0435dhat.com"], "has non-ASCII characters"),
    ("azureArmEndpoint", "https://management.loc\u0430l.azurestack.external", "has non-ASCII characters"),
    ("azureArmEndpoint", "https://management.local.azurestack.external,.com", "holds a ',', which would start another noProxy entry"),
    ("azureArmEndpoint", "https://bad_host.example.com", "is not a host name or IP address"),
    ("vsphereEndpoints", ["vc\u0435nter.example.com"], "has non-ASCII characters"),
    ("azureIpGroupIds", ["nodes=/subscriptions/x/resourceGroups/rg/providers/Microsoft.Network/ipGroups/g\n"], "is not role=<IP Group resource id>"),
    ("azureKeyVaultNames", ["vault-one\n"], "is not a Key Vault name"),
    ("azureMonitorDataCollectionEndpoints", ["mydce-a1b2.westeurope-1\n"], "is not a data collection endpoint prefix"),
    ("allowBroadEgress", "yes", "at least 10 characters"),
])
def test_host_valued_settings_are_hosts(key, value, problem):
    with pytest.raises(ValidationError) as info:
        Profile.model_validate({**BASE, key: value})
    assert problem in str(info.value)


def test_a_look_alike_host_is_told_its_punycode():
    with pytest.raises(AddressError) as info:
        parse_fqdn("pr\u043exy.example.com")
    assert info.value.fix == "type the name in ASCII; if the internationalised name is really meant, write its punycode form 'xn--prxy-65d.example.com'"
    assert parse_fqdn("xn--prxy-65d.example.com") == "xn--prxy-65d.example.com"


@pytest.mark.parametrize("key, value", [
    ("awsRegion", "eu-west-1\n"), ("clusterName", "prod\n"), ("kkpSeed", "kubermatic\n"), ("kkpClusterId", "s8kkvfxhrn\n"),
    ("awsVpcId", "vpc-0a1b2c3d\n"), ("egressProxyNamespace", "egress-proxy\n"), ("azureResourceGroup", "rg\n"),
    ("azurePolicyId", "/subscriptions/x/resourceGroups/rg\nx/providers/Microsoft.Network/firewallPolicies/p"),
    ("azureLogAnalyticsWorkspaceId", "/subscriptions/x/resourceGroups/r g/providers/Microsoft.OperationalInsights/workspaces/w"),
])
def test_pattern_settings_refuse_a_trailing_newline(key, value):
    """pydantic's ``pattern`` is a Rust regex, where '$' is the end of the text (Python's also matches before a final
    newline); white space inside a resource id is refused too."""
    with pytest.raises(ValidationError):
        Profile.model_validate({**BASE, key: value})
    Profile.model_validate({**BASE, key: value.replace("\n", "").replace("r g", "rg")})


@pytest.mark.parametrize("parse, value", [(parse_fqdn, "example.com\n"), (parse_wildcard, "*.example.com\n"),
                                          (parse_service_tag, "AzureCloud.westeurope\n"), (parse_no_proxy_entry, ".example.com\n")])
def test_core_parsers_refuse_a_trailing_newline(parse, value):
    with pytest.raises(AddressError):
        parse(value)
    assert parse(value.rstrip("\n")) == value.rstrip("\n")


@pytest.mark.parametrize("entry", ["*", "10.0.0.0/8", "10.0.0.1", "::1", "[::1]", ".corp.example.com", "*.corp.example.com", "localhost",
                                   "registry.example.com:5000", "example.com.", "Example.COM"])
def test_noproxy_entries_every_consumer_reads(entry):
    assert parse_no_proxy_entry(entry) == entry
