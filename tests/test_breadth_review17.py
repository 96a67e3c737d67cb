"""Review of issue 17, breadth: every command that hands a stack's egress on runs the one breadth check (Project.requirements);
noProxy names are judged in any case; IPv4-mapped IPv6 is refused where written and counted as the IPv4 Go reads; a
reason is words, not white space; a URL-valued setting's host is one host."""
from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
from pydantic import ValidationError

from egress.addresses import AddressError, parse_cidr, parse_destination, parse_ip, parse_no_proxy_entry
from egress.breadth import describe_share, public_addresses, public_share, public_suffix
from egress.flows import Allow, Limits, judge
from egress.guard import no_proxy_findings
from egress.own_settings import StackEntry
from egress.profile import Profile
from egress.reasons import check_reason
from egress.url_hosts import check_url_host

LIMITS = Limits(1.0, 1024)

EVIL = """schema: 1
kind: platform
platform: evil
defaults: {role: nodes, level: required, protocol: https}
entries:
  - id: uk
    destination: "*.co.uk"
    purpose: Everything in the UK
    approval: {owner: team-evil, reference: EV-1}
  - id: pages
    destination: "*.github.io"
    purpose: Every GitHub Pages site
    approval: {owner: team-evil, reference: EV-2}
"""

BASE = """config:
  egress-matrix:platforms: [kkp]
  egress-matrix:clusterProxy: [kubeadm]
  egress-matrix:httpProxy: http://proxy.corp.example.com:3128
"""


def _stack(project: Path, extra: str, name: str = "wide") -> str:
    (project / "stacks" / f"Pulumi.{name}.yaml").write_text(BASE + extra)
    return name


# -- C1: one choke point -------------------------------------------------------------------------------------------------
@pytest.fixture
def evil(project_copy: Path) -> Path:
    (project_copy / "teams" / "evil").mkdir(parents=True, exist_ok=True)
    (project_copy / "teams" / "evil" / "evil.yaml").write_text(EVIL)
    return project_copy


@pytest.mark.parametrize("fmt", ["squid", "pac", "csv", "json"])
def test_export_for_proxy_refuses_what_catalog_check_refuses(evil, run_cli, fmt):
    stack = _stack(evil, '  egress-matrix:nodeSources: ["0.0.0.0/0"]\n  egress-matrix:catalogs: [teams/evil]\n  egress-matrix:noProxy: [COM, .net]\n')
    code, out, err = run_cli("export", "--for", "proxy", "-f", fmt, "--stack", stack, "--project", str(evil))
    assert code == 1 and out == "", out
    assert "BreadthError" in err and "own entry evil/pages" in " ".join(err.split())
    code, _, check = run_cli("catalog", "check", "--stack", stack, "--project", str(evil))
    assert code == 1 and " ".join(check.split()) == " ".join(err.split())  # the same one check, the same words


@pytest.mark.parametrize("extra, found", [
    ('  egress-matrix:nodeSources: ["0.0.0.0/0"]\n', "egress-matrix:nodeSources = ['0.0.0.0/0'] covers 100% of public IPv4"),
    ("  egress-matrix:nodeSources: [10.0.0.0/16]\n  egress-matrix:noProxy: [COM]\n", "egress-matrix:noProxy 'COM' is or covers the public suffix 'com'"),
    ("  egress-matrix:nodeSources: [10.0.0.0/16]\n  egress-matrix:noProxy: [.github.io]\n", "egress-matrix:noProxy '.github.io' covers 'github.io'"),
])
@pytest.mark.parametrize("command", [("export", "--for", "proxy", "-f", "squid"), ("export", "--for", "allowlists"), ("matrix", "-f", "json"),
                                     ("probe", "--plan-only"), ("render", "--target", "kubernetes")])
def test_every_command_handing_egress_on_runs_the_check(project_copy, run_cli, tmp_path, extra, found, command):
    stack = _stack(project_copy, extra)
    out_dir = ("--out", str(tmp_path / "out")) if command[0] == "render" else ()
    code, out, err = run_cli(*command, *out_dir, "--stack", stack, "--project", str(project_copy))
    assert code == 1 and out == "", (command, out)
    assert found in " ".join(err.split()), err
    assert not (tmp_path / "out").exists()


def test_a_narrow_stack_still_exports(project_copy, run_cli):
    stack = _stack(project_copy, "  egress-matrix:nodeSources: [10.0.0.0/16]\n  egress-matrix:noProxy: [.corp.example.com]\n")
    code, out, err = run_cli("export", "--for", "proxy", "-f", "squid", "--stack", stack, "--project", str(project_copy))
    assert code == 0 and "acl egress-wide-role-nodes src 10.0.0.0/16" in out, err


# -- C2: names in any case ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("entry, suffix", [("COM", "com"), ("Com", "com"), ("Co.Uk", "co.uk"), ("XN--P1AI", "xn--p1ai"), ("COM:443", "com"),
                                           (".NET", "net"), ("*.CO.UK", "co.uk")])
def test_upper_case_public_suffixes_in_no_proxy_are_findings(entry, suffix):
    assert no_proxy_findings([("noProxy", entry)], LIMITS) == [
        f"noProxy '{entry}' is or covers the public suffix '{suffix}': every domain under it goes around the proxy"]


def test_service_tags_are_kept_apart_not_guessed_from_case():
    assert public_suffix("COM") == "com" and public_suffix("AzureCloud.westeurope") is None
    # a deployed squid dstdomain '.COM' is a name; an Azure service tag whose last word is a TLD is a tag
    assert judge([Allow("squid", "tcp", (), names=(".COM",))], LIMITS) == ["squid: '.COM' is every name under the public suffix 'com'"]
    assert judge([Allow("azure", "tcp", (), tags=("Storage.Global",))], LIMITS) == []


def test_init_refuses_an_upper_case_public_suffix_in_no_proxy(project_copy, run_cli):
    code, out, err = run_cli("init", "new-np", "-p", "aks", "--location", "westeurope", "--target", "kubernetes", "--http-proxy",
                             "http://proxy.corp.example.com:8080", "--set", "noProxy=[COM]", "--no-input", "--project", str(project_copy))
    assert code == 1 and "is or covers the public suffix 'com'" in " ".join(err.split()), err
    assert not (project_copy / "stacks" / "Pulumi.new-np.yaml").exists()


# -- M1: shared suffixes in noProxy, as own entries ------------------------------------------------------------------------
@pytest.mark.parametrize("entry, suffix", [(".github.io", "github.io"), ("github.io", "github.io"), (".blob.core.windows.net", "blob.core.windows.net"),
                                           ("*.GitHub.io", "github.io")])
def test_shared_suffixes_in_no_proxy_are_findings(entry, suffix):
    assert no_proxy_findings([("noProxy", entry)], LIMITS) == [
        f"noProxy '{entry}' covers '{suffix}', where anyone may register a name (the Public Suffix List's private domains: hosting, tunnels, "
        "storage accounts): every such site goes around the proxy"]
    assert no_proxy_findings([("noProxy", "me.github.io"), ("noProxy", ".corp.example.com")], LIMITS) == []


# -- C3: IPv4-mapped IPv6 ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("parse, text, fix", [
    (parse_cidr, "::ffff:0:0/96", "write the IPv4 CIDR '0.0.0.0/0'"),
    (parse_cidr, "::ffff:0:0/97", "write the IPv4 CIDR '0.0.0.0/1'"),
    (parse_cidr, "::ffff:8000:0/97", "write the IPv4 CIDR '128.0.0.0/1'"),
    (parse_cidr, "::ffff:10.0.0.0/104", "write the IPv4 CIDR '10.0.0.0/8'"),
    (parse_ip, "::ffff:192.0.2.7", "write the IPv4 address '192.0.2.7'"),
    (parse_no_proxy_entry, "::ffff:0:0/96", "write the IPv4 CIDR '0.0.0.0/0'"),
    (parse_no_proxy_entry, "[::ffff:192.0.2.7]", "write the IPv4 address '192.0.2.7'"),
    (parse_destination, "::ffff:0:0/96", "write the IPv4 CIDR '0.0.0.0/0'"),
])
def test_ipv4_mapped_notation_is_refused_where_written(parse, text, fix):
    with pytest.raises(AddressError) as info:
        parse(text)
    assert info.value.fix == fix and "Go programs (noProxy, Kubernetes) read as the IPv4" in info.value.problem


@pytest.mark.parametrize("key", ["noProxy", "machineCidrs", "apiServerAllowedCidrs", "nodeSources"])
def test_every_cidr_setting_refuses_ipv4_mapped(key):
    with pytest.raises(ValidationError, match="write the IPv4 CIDR '0.0.0.0/0'"):
        Profile.model_validate({"platforms": ["kkp"], key: ["::ffff:0:0/96"]})


def test_an_own_entry_refuses_ipv4_mapped(project_copy, run_cli):
    stack = _stack(project_copy, "  egress-matrix:nodeSources: [10.0.0.0/16]\n  egress-matrix:entries:\n    - {id: v4, destination: '::ffff:0:0/96', "
                                 "protocol: tcp, ports: [443], purpose: All of IPv4, owner: me, reference: T-1}\n")
    code, out, err = run_cli("matrix", "-f", "json", "--stack", stack, "--project", str(project_copy))
    assert code == 1 and out == "" and "write the IPv4 CIDR '0.0.0.0/0'" in " ".join(err.split()), err


@pytest.mark.parametrize("nets, v4", [(["::ffff:0:0/96"], 100.0), (["::ffff:0:0/97", "::ffff:8000:0/97"], 100.0), (["::ffff:10.0.0.0/104"], 0.0)])
def test_ipv4_mapped_networks_count_as_the_ipv4_go_reads(nets, v4):
    networks = [ipaddress.ip_network(n) for n in nets]
    assert public_share(networks) == v4
    if v4:
        assert describe_share(networks) == "100% of public IPv4 (some as IPv4-mapped IPv6 addresses in ::ffff:0:0/96)"
        assert no_proxy_findings([("noProxy", n) for n in nets], LIMITS)  # a deployed value the policy pack judges
    assert public_addresses([ipaddress.ip_network("::/64")])[4] == 0  # Go reads '::/64' as IPv6: only a mapped network number is IPv4


# -- C4: a reason is words ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("reason", ["          ", "\t" * 12, " " * 30 + "x", "- - - - - - - - - -", "good reason\twith a tab", "line one\nline two"])
def test_white_space_is_no_reason(reason):
    with pytest.raises(AddressError):
        check_reason(reason)
    with pytest.raises(ValidationError):
        StackEntry(id="x", destination="0.0.0.0/0", protocol="tcp", ports=["1-65535"], purpose="p", owner="o", reference="r", broad=reason)
    with pytest.raises(ValidationError):
        Profile.model_validate({"platforms": ["kkp"], "allowBroadEgress": reason})


def test_a_reason_in_words_is_kept_without_its_spaces():
    assert check_reason("  lab cluster without a firewall, OPS-42  ") == "lab cluster without a firewall, OPS-42"
    assert Profile.model_validate({"platforms": ["kkp"], "allowBroadEgress": "lab stack, OPS-42 "}).allow_broad_egress == "lab stack, OPS-42"


def test_a_white_space_broad_in_a_catalog_is_refused(evil, run_cli):
    (evil / "teams" / "evil" / "evil.yaml").write_text(EVIL.replace("    approval: {owner: team-evil, reference: EV-1}",
                                                                    "    broad: '            '\n    approval: {owner: team-evil, reference: EV-1}"))
    stack = _stack(evil, "  egress-matrix:nodeSources: [10.0.0.0/16]\n  egress-matrix:catalogs: [teams/evil]\n")
    code, out, err = run_cli("export", "--for", "proxy", "--stack", stack, "--project", str(evil))
    message = " ".join(err.split())
    assert code == 1 and "field 'broad'" in message and "is no reason" in message, err


# -- C5: a URL's host is one host ----------------------------------------------------------------------------------------------
BAD_HOSTS = ["a.example.com,0.0.0.0/0", "a.example.com,.com", "a.example.com\n", "[::1%eth0]", "a.example.com#x", "a.exa mple.com",
             "[::ffff:192.0.2.7]", "a_b.example.com"]
URL_SETTINGS = {
    "httpProxy": lambda h: f"http://{h}:3128",
    "httpsProxy": lambda h: f"http://{h}:3128",
    "proxyReadinessEndpoints": lambda h: [f"https://{h}/"],
    "openstackAuthUrl": lambda h: f"https://{h}:5000/v3",
    "openstackEndpoints": lambda h: [f"https://{h}:13774"],
    "bmcAddresses": lambda h: [f"redfish-virtualmedia://{h}/redfish/v1/Systems/1"],
    "azureArmEndpoint": lambda h: f"https://{h}/",
}


@pytest.mark.parametrize("key", sorted(URL_SETTINGS))
@pytest.mark.parametrize("host", BAD_HOSTS)
def test_every_url_setting_checks_its_host(key, host):
    with pytest.raises(ValidationError):
        Profile.model_validate({"platforms": ["openshift"], key: URL_SETTINGS[key](host)})


@pytest.mark.parametrize("key", sorted(URL_SETTINGS))
@pytest.mark.parametrize("host", ["proxy.corp.example.com", "192.0.2.10", "[2001:db8::5]"])
def test_good_hosts_pass(key, host):
    Profile.model_validate({"platforms": ["openshift"], key: URL_SETTINGS[key](host)})


def test_the_messages_name_the_host_never_the_credentials():
    with pytest.raises(AddressError) as info:
        check_url_host("http://alice:hunter2@a.example.com,.com:3128")
    assert "hunter2" not in str(info.value) and "'a.example.com,.com' is not a host name" in str(info.value)
    assert check_url_host("192.0.2.11:623", bare=True) == "192.0.2.11" and check_url_host("http:proxy:3128") == ""  # left to its own check


def test_a_comma_in_the_proxy_host_never_reaches_http_proxy(project_copy, run_cli):
    stack = _stack(project_copy, "  egress-matrix:nodeSources: [10.0.0.0/16]\n")
    path = project_copy / "stacks" / f"Pulumi.{stack}.yaml"
    path.write_text(path.read_text().replace("http://proxy.corp.example.com:3128", "http://a.example.com,0.0.0.0/0:3128"))
    code, out, err = run_cli("export", "--for", "proxy", "--stack", stack, "--project", str(project_copy))
    assert code == 1 and out == "" and "'a.example.com,0.0.0.0' is not a host name or IP address" in " ".join(err.split()), err


# -- M2: addresses a setting gives are the setting's -------------------------------------------------------------------------
def test_aws_name_addresses_beyond_the_limits_name_the_setting(project_copy, run_cli, tmp_path):
    path = project_copy / "stacks" / "Pulumi.kkp-aws.yaml"
    path.write_text(path.read_text().replace("  egress-matrix:targets: [aws]\n", (
        "  egress-matrix:targets: [aws]\n  egress-matrix:awsNameAddresses: [\"db.example.com=0.0.0.0/1,128.0.0.0/1\"]\n  egress-matrix:entries:\n"
        "    - {id: db, destination: db.example.com, protocol: tcp, ports: [5432], purpose: Database, owner: team-db, reference: DB-1}\n")))
    code, out, err = run_cli("render", "--stack", "kkp-aws", "--out", str(tmp_path / "out"), "--project", str(project_copy))
    message = " ".join(err.split())
    assert code == 1 and "stack 'kkp-aws': config.egress-matrix:awsNameAddresses gives '0.0.0.0/1' for its host (tcp/5432), which covers" in message
    assert "(the host of config.egress-matrix:entries[0] 'db', own entry stack/db)" in message
    assert "Fix: list in egress-matrix:awsNameAddresses only the addresses the host resolves to" in message
