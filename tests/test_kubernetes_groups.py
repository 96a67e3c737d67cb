"""Source groups on the Kubernetes egress proxy (issue 19, items 3 and 6): a ``src`` ACL per group, the group's entries
allowed from its CIDRs only, the group's CIDRs clients of the proxy, the evaluator and the pack telling a group's egress
given to anyone else, and the real Squid 5 answering per client address.

The stacks are the proxy-only stack (kkp on kubeadm, nodes 10.60.0.0/16, pods 10.244.0.0/16) with groups added: a
group inside the nodes' CIDRs (``payments``, a node pool's subnet) and one outside them (``billing``).
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from egress.errors import EgressError
from egress.models import Entry, Requirement
from egress.addresses import PortRange
from egress.project import open_project
from egress.targets.kubernetes import compile_kubernetes, enforced, evaluate, render
from egress.targets.kubernetes.cluster_proxy import compile_cluster_proxy
from egress.targets.kubernetes.egress_proxy import compile_egress_proxy
from egress.targets.kubernetes.squid import EgressProxyCompileError, compile_acls

from k8s_schemas import validate
from squid_engine import needs_squid, parse_config, running_squid

ROOT = Path(__file__).resolve().parents[1]
BASE = (ROOT / "stacks" / "Pulumi.proxy-only.yaml").read_text()
CONF = "kubernetes/squid.conf"

PAYMENTS = """\
  egress-matrix:sourceGroups:
    payments: [10.60.17.0/24]
  egress-matrix:entries:
    - {id: stripe, destination: api.stripe.com, role: payments, purpose: Payments API, owner: team-payments, reference: PAY-123}
"""
BOTH = """\
  egress-matrix:sourceGroups:
    payments: [10.60.17.0/24]
    billing: [10.70.1.0/24, 10.70.2.0/24]
  egress-matrix:entries:
    - {id: stripe, destination: api.stripe.com, role: payments, purpose: Payments API, owner: team-payments, reference: PAY-123}
    - {id: invoices, destination: "*.invoices.example.com", role: billing, purpose: Invoices, owner: team-billing, reference: BIL-7}
    - {id: ledger, destination: ledger.example.com, protocol: http, ports: [8080], role: billing, purpose: Ledger, owner: team-billing, reference: BIL-8}
"""


def project(tmp_path: Path, stacks: dict[str, str]) -> Path:
    """A project copy (the program and its data; the code is the test process's own) with these stack files."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "matrix", tmp_path / "matrix")
    shutil.copytree(ROOT / "stacks", tmp_path / "stacks")
    for name, text in stacks.items():
        (tmp_path / "stacks" / f"Pulumi.{name}.yaml").write_text(text)
    return tmp_path


def resolved(tmp_path: Path, extra: str, directory: str = "project"):
    """Stack 'groups': proxy-only with ``extra`` settings, in a project copy of its own (``directory``)."""
    root = project(tmp_path / directory, {"groups": BASE + extra})
    return open_project(root).requirements("groups")


def rendered(tmp_path: Path, extra: str, directory: str = "project") -> dict[str, str]:
    catalog, profile, requirements = resolved(tmp_path, extra, directory)
    return render(compile_kubernetes(catalog, profile, requirements))


# ------------------------------------------------------------------------------------------------------ compile, render

def test_a_group_gets_its_own_src_acl_and_its_entries_only_from_it(tmp_path):
    conf = rendered(tmp_path, PAYMENTS)[CONF]
    assert "acl role-nodes src 10.60.0.0/16 10.244.0.0/16\nacl group-payments src 10.60.17.0/24\nacl ports-80 port 80\n" in conf
    assert ("\n# stack-core-payments-https: payments -> HTTPS 443\n"
            "#   entries: stack/stripe\n"
            "acl stack-core-payments-https dstdomain -n api.stripe.com\n"
            "http_access allow CONNECT group-payments ports-443 stack-core-payments-https\n") in conf
    assert [l for l in conf.splitlines() if "stripe" in l] == ["#   entries: stack/stripe", "acl stack-core-payments-https dstdomain -n api.stripe.com"]


def test_enforced_takes_every_group_beside_egress_proxy_roles(tmp_path):
    catalog, profile, requirements = resolved(tmp_path, BOTH)
    assert profile.egress_proxy_roles == ("nodes",)
    got = enforced(catalog, profile, requirements)
    assert sorted(r.entry_ids[0] for r in got if r.role != "nodes") == ["stack/invoices", "stack/ledger", "stack/stripe"]
    assert {r.role for r in got} == {"nodes", "payments", "billing"}


def test_adding_a_group_adds_its_own_lines_and_leaves_the_rest_byte_identical(tmp_path):
    plain, one, two = rendered(tmp_path, "", "plain"), rendered(tmp_path, PAYMENTS, "one"), rendered(tmp_path, BOTH, "two")
    assert sorted(plain) == sorted(one) == sorted(two)

    # the existing text, with each group's src ACL, port ACL and allow blocks inserted: nothing else moves or changes
    assert one[CONF] == plain[CONF].replace("acl ports-80 port 80\n", "acl group-payments src 10.60.17.0/24\nacl ports-80 port 80\n").replace(
        "\n# everything else\n",
        "\n# stack-core-payments-https: payments -> HTTPS 443\n"
        "#   entries: stack/stripe\n"
        "acl stack-core-payments-https dstdomain -n api.stripe.com\n"
        "http_access allow CONNECT group-payments ports-443 stack-core-payments-https\n"
        "\n# everything else\n")
    billing = ("\n# stack-core-billing-http-8080: billing -> HTTP 8080\n"
               "#   entries: stack/ledger\n"
               "acl stack-core-billing-http-8080 dstdomain -n ledger.example.com\n"
               "http_access allow !CONNECT http-scheme group-billing ports-8080 stack-core-billing-http-8080\n"
               "\n# stack-core-billing-https: billing -> HTTPS 443\n"
               "#   entries: stack/invoices\n"
               "acl stack-core-billing-https-subdomains dstdom_regex -n -i \\.invoices\\.example\\.com$\n"
               "http_access allow CONNECT group-billing ports-443 stack-core-billing-https-subdomains\n")
    assert two[CONF] == one[CONF].replace("acl group-payments src", "acl group-billing src 10.70.1.0/24 10.70.2.0/24\nacl group-payments src").replace(
        "acl ports-443 port 443\n", "acl ports-443 port 443\nacl ports-8080 port 8080\n").replace(
        "\n# stack-core-payments-https:", billing + "\n# stack-core-payments-https:")
    for path in plain:
        if path in (CONF, "kubernetes/deployment-egress-proxy.egress-proxy.yaml", "kubernetes/configmap-egress-proxy.egress-proxy-config.yaml",
                    "kubernetes/networkpolicy-egress-proxy.egress-proxy.yaml"):
            continue
        assert plain[path] == one[path] == two[path], path
    deployments = [yaml.safe_load(files["kubernetes/deployment-egress-proxy.egress-proxy.yaml"]) for files in (plain, one, two)]
    for deployment in deployments:
        deployment["spec"]["template"]["metadata"]["annotations"].pop("egress-matrix/config-hash")  # a new squid.conf rolls the pods
    assert deployments[0] == deployments[1] == deployments[2]
    policies = [yaml.safe_load(files["kubernetes/networkpolicy-egress-proxy.egress-proxy.yaml"]) for files in (plain, one, two)]
    clients = [[peer["ipBlock"]["cidr"] for peer in p["spec"]["ingress"][0]["from"]] for p in policies]
    assert clients == [["10.60.0.0/16", "10.244.0.0/16"], ["10.60.0.0/16", "10.244.0.0/16", "10.60.17.0/24"],
                       ["10.60.0.0/16", "10.244.0.0/16", "10.70.1.0/24", "10.70.2.0/24", "10.60.17.0/24"]]
    assert [[p["port"] for p in policy["spec"]["egress"][1]["ports"]] for policy in policies] == [[80, 443], [80, 443], [80, 443, 8080]]
    for policy in policies:
        validate(policy)


def test_the_plan_is_the_same_whatever_the_order_of_groups_and_requirements(tmp_path):
    catalog, profile, requirements = resolved(tmp_path, BOTH)
    reordered = profile.model_copy(update={"source_groups": dict(reversed(list(profile.source_groups.items())))})
    assert list(reordered.source_groups) != list(profile.source_groups)
    first = compile_egress_proxy(catalog, profile, requirements)
    second = compile_egress_proxy(catalog, reordered, list(reversed(requirements)))
    assert first == second and first.squid_conf == second.squid_conf
    assert [role for role, _ in first.role_sources] == ["nodes", "billing", "payments"]


def test_a_group_name_too_long_for_squid_is_one_clear_error(tmp_path):
    group = "p" * 40  # the longest group name; its subdomain ACL is 68 characters
    extra = (f"  egress-matrix:sourceGroups:\n    {group}: [10.60.17.0/24]\n  egress-matrix:entries:\n"
             f"    - {{id: stripe, destination: '*.stripe.com', role: {group}, purpose: Stripe, owner: team-payments, reference: PAY-1}}\n")
    catalog, profile, requirements = resolved(tmp_path, extra)
    with pytest.raises(EgressProxyCompileError) as caught:
        compile_kubernetes(catalog, profile, requirements, "stacks/Pulumi.groups.yaml")
    assert str(caught.value) == (
        f"stacks/Pulumi.groups.yaml: the egress proxy's ACL 'stack-core-{group}-https-subdomains' (for entries stack/stripe, source group "
        f"'{group}') is 68 characters; Squid refuses ACL names over 62. Fix: shorten the group's name in egress-matrix:sourceGroups "
        f"('{group}') or the name of the catalog or feature behind those entries")


@needs_squid
@pytest.mark.engine
def test_squid_refuses_the_acl_name_the_compile_refuses(tmp_path):
    """The limit is Squid's own: an ACL of 62 characters is used; one of 63 is defined but http_access does not find it;
    64 is too long to define. Each refusal is FATAL."""
    for length, code, message in ((62, 0, ""), (63, 1, "ACL not found"), (64, 1, "too long, max 63 characters supported")):
        name = "a" * length
        result = parse_config(f"acl {name} dstdomain -n x.example.com\nhttp_access allow {name}\nhttp_access deny all\n", tmp_path / str(length))
        assert result.returncode == code and message in result.stderr, result.stderr[-500:]


def test_an_acl_name_two_things_would_share_is_one_clear_error():
    """A catalog named 'group' and a group named 'core-https': the catalog's nodes ACL and the group's src ACL collide."""
    entries = {"group/a": Entry(id="group/a", platform="group", role="nodes", level="required", destination="a.example.com", kind="fqdn",
                                protocol="https", ports=(443,), purpose="A"),
               "stack/b": Entry(id="stack/b", platform="stack", role="core-https", level="required", destination="b.example.com", kind="fqdn",
                                protocol="https", ports=(443,), purpose="B")}
    reqs = [Requirement(role=e.role, destination=e.destination, kind="fqdn", protocol="https", ports=(PortRange(443, 443),), level="required",
                        purposes=(e.purpose,), entry_ids=(e.id,), citations=(), platforms=(e.platform,)) for e in entries.values()]
    with pytest.raises(EgressProxyCompileError) as caught:
        compile_acls(reqs, ("nodes", "core-https"), entries)
    assert str(caught.value) == ("the egress proxy would define ACL 'group-core-https' twice: for entries group/a and for the sources of "
                                 "source group 'core-https'. Fix: rename the catalog, feature or source group behind one of them")


def test_a_feature_and_a_group_running_together_into_one_name_is_one_clear_error():
    """An own catalog's feature 'core-payments' for nodes and its unfeatured entries for the group 'payments' would both be
    team-core-payments-https: Squid would read the two as one ACL, allowing both names from both sources."""
    entries = {"team/fx": Entry(id="team/fx", platform="team", feature="core-payments", role="nodes", level="required",
                                destination="fx.example.com", kind="fqdn", protocol="https", ports=(443,), purpose="FX"),
               "team/pay": Entry(id="team/pay", platform="team", role="payments", level="required", destination="pay.example.com",
                                 kind="fqdn", protocol="https", ports=(443,), purpose="Pay")}
    reqs = [Requirement(role=e.role, destination=e.destination, kind="fqdn", protocol="https", ports=(PortRange(443, 443),), level="required",
                        purposes=(e.purpose,), entry_ids=(e.id,), citations=(), platforms=(e.platform,)) for e in entries.values()]
    with pytest.raises(EgressProxyCompileError) as caught:
        compile_acls(reqs, ("nodes", "payments"), entries)
    assert str(caught.value) == ("two ACLs of the egress proxy would be named 'team-core-payments-https': one for role 'nodes' (entries team/fx), "
                                 "one for source group 'payments' (entries team/pay). Fix: rename the feature or the source group so their "
                                 "names do not run together")


def test_the_summary_counts_groups(tmp_path):
    from egress.targets.kubernetes import summary
    catalog, profile, requirements = resolved(tmp_path, BOTH)
    assert summary(compile_kubernetes(catalog, profile, requirements)).startswith(
        "egress proxy: 6 ACLs for 1 role(s) and 2 source group(s), 0 requirement(s) not proxied")


def test_no_proxy_settings_ignore_groups_and_own_entries(tmp_path):
    """noProxy comes from the stack's networks and noProxy setting only: own entries and groups change none of it."""
    openshift = (ROOT / "stacks" / "Pulumi.openshift.yaml").read_text().replace("clusterProxy: [openshift]", "clusterProxy: [openshift, kubeadm]")
    root = project(tmp_path, {"ocp": openshift, "ocp-groups": openshift + PAYMENTS.replace("10.60.17.0/24", "10.0.17.0/24")})
    plans = []
    for name in ("ocp", "ocp-groups"):
        catalog, profile, requirements = open_project(root).requirements(name)
        plans.append(compile_cluster_proxy(catalog, profile, None, False))
    assert any(r.role == "payments" for r in open_project(root).requirements("ocp-groups")[2])
    assert plans[0] == plans[1]
    assert plans[0].openshift_status_no_proxy and plans[0].kubeadm_no_proxy and "stripe" not in plans[0].kubeadm_no_proxy


# ------------------------------------------------------------------------------------------------------ the evaluator

def _verdict(tmp_path, extra: str, edit=lambda conf: conf):
    catalog, profile, requirements = resolved(tmp_path, extra)
    files = render(compile_kubernetes(catalog, profile, requirements))
    return evaluate({**files, CONF: edit(files[CONF])}, enforced(catalog, profile, requirements), catalog)


def test_the_evaluator_passes_the_compiled_groups(tmp_path):
    verdict = _verdict(tmp_path, BOTH)
    assert (verdict.missing, verdict.extra, verdict.assumed) == ((), (), ())


def test_the_evaluator_tells_a_groups_entry_given_to_the_nodes(tmp_path):
    moved = _verdict(tmp_path, PAYMENTS, lambda conf: conf.replace("CONNECT group-payments ports-443", "CONNECT role-nodes ports-443"))
    assert moved.missing == ()
    assert moved.extra == ("nodes -> api.stripe.com https/443 from 10.60.0.0: allowed (http_access allow CONNECT role-nodes ports-443 "
                           "stack-core-payments-https), but only payments asks for it (entries stack/stripe)",)


def test_the_evaluator_tells_a_group_widened_to_the_nodes(tmp_path):
    widened = _verdict(tmp_path, BOTH, lambda conf: conf.replace("acl group-billing src 10.70.1.0/24 10.70.2.0/24",
                                                                 "acl group-billing src 10.70.1.0/24 10.70.2.0/24 10.60.0.0/16"))
    assert widened.missing == ()
    assert widened.extra == (
        "nodes -> *.invoices.example.com https/443 from 10.60.0.0: allowed (http_access allow CONNECT group-billing ports-443 "
        "stack-core-billing-https-subdomains), but only billing asks for it (entries stack/invoices)",
        "nodes -> ledger.example.com http/8080 from 10.60.0.0: allowed (http_access allow !CONNECT http-scheme group-billing ports-8080 "
        "stack-core-billing-http-8080), but only billing asks for it (entries stack/ledger)",
        "payments -> *.invoices.example.com https/443 from 10.60.17.0: allowed (http_access allow CONNECT group-billing ports-443 "
        "stack-core-billing-https-subdomains), but only billing asks for it (entries stack/invoices)",
        "payments -> ledger.example.com http/8080 from 10.60.17.0: allowed (http_access allow !CONNECT http-scheme group-billing ports-8080 "
        "stack-core-billing-http-8080), but only billing asks for it (entries stack/ledger)")


def test_the_evaluator_tells_a_groups_entry_missing(tmp_path):
    dropped = _verdict(tmp_path, PAYMENTS, lambda conf: conf.replace("http_access allow CONNECT group-payments ports-443 stack-core-payments-https\n", ""))
    assert dropped.missing == ("payments -> api.stripe.com https/443: denied (http_access deny all); entries stack/stripe",)


def test_names_a_role_asks_for_are_not_judged_by_source(tmp_path):
    """The proxy gives the nodes role's names to its pod CIDRs too, which requirements do not carry: a group of pods
    (inside podCidrs) reaching mcr.microsoft.com through the nodes' ACL is the stack's topology, not an extra. And a name
    the nodes and a group both ask for is the nodes' too."""
    pods = PAYMENTS.replace("10.60.17.0/24", "10.244.17.0/24") + (
        "    - {id: mcr, destination: mcr.microsoft.com, role: payments, purpose: Images, owner: team-payments, reference: PAY-9}\n")
    verdict = _verdict(tmp_path, pods)
    assert (verdict.missing, verdict.extra) == ((), ())


def test_explain_names_the_groups_acl_and_src(tmp_path, run_cli):
    root = project(tmp_path, {"groups": BASE + PAYMENTS})
    code, out, err = run_cli("explain", "api.stripe.com:443", "--stack", "groups", "--project", str(root))
    assert code == 0, err
    assert ("  kubernetes payments -> api.stripe.com https/443: allowed by acl stack-core-payments-https "
            "(http_access allow CONNECT group-payments ports-443 stack-core-payments-https)") in out.splitlines()
    code, out, err = run_cli("explain", "--rule", "stack-core-payments-https", "--stack", "groups", "--project", str(root))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1:3] == ["kubernetes squid acl (allow): acl stack-core-payments-https",
                          "  http_access allow CONNECT group-payments ports-443 stack-core-payments-https"]
    assert "    payments -> api.stripe.com https/443, required" in lines


# ------------------------------------------------------------------------------------------------------ the pack, read back

def test_the_pack_reads_a_groups_lines_back_and_judges_them(tmp_path, monkeypatch):
    from egress_preview.preview import preview
    from rule_breaks import edit_squid_conf

    root = project(tmp_path, {"groups": BASE + BOTH})
    clean = preview(open_project(root), "groups")
    assert [v.line() for v in clean.mandatory] == []
    assert [(c.target, c.allowed, c.enforced) for c in clean.coverage] == [("kubernetes", 52, 52)]
    assert [v for v in clean.violations if "stripe" in v.message or "invoices" in v.message] == []

    edit_squid_conf(monkeypatch, "http_access allow CONNECT group-payments ports-443 stack-core-payments-https\n", "")
    broken = preview(open_project(root), "groups")
    assert sorted({(v.policy, v.resource) for v in broken.mandatory}) == [
        ("required-egress-complete", "kubernetes:core/v1:ConfigMap 'egress-proxy-configmap-egress-proxy-egress-proxy-config'"),
        ("required-egress-complete-before-write", "kubernetes:core/v1:ConfigMap 'egress-proxy-configmap-egress-proxy-egress-proxy-config'")]
    assert all("payments -> api.stripe.com https/443" in v.message for v in broken.mandatory)

    monkeypatch.undo()
    edit_squid_conf(monkeypatch, "CONNECT group-payments ports-443", "CONNECT role-nodes ports-443")
    moved = preview(open_project(root), "groups")
    assert [v.line() for v in moved.mandatory] == []
    beyond = sorted({v.policy for v in moved.violations if "nodes -> api.stripe.com https/443 from 10.60.0.0" in v.message})
    assert beyond == ["egress-least-privilege", "egress-least-privilege-before-write"]


# ------------------------------------------------------------------------------------------------------ the real Squid

LOOPBACK = """\
config:
  egress-matrix:platforms: [kkp]
  egress-matrix:features: [kkp-aws]
  egress-matrix:nodeOs: [ubuntu]
  egress-matrix:awsRegion: eu-central-1
  egress-matrix:nodeSources: [127.0.0.0/16]
  egress-matrix:targets: [kubernetes]
  egress-matrix:egressProxy: true
  egress-matrix:sourceGroups:
    payments: [127.0.17.0/24]
    billing: [127.1.0.0/24]
  egress-matrix:entries:
    - {id: stripe, destination: api.stripe.com, role: payments, purpose: Payments API, owner: team-payments, reference: PAY-123}
    - {id: invoices, destination: "*.invoices.example.com", role: billing, purpose: Invoices, owner: team-billing, reference: BIL-7}
    - {id: ledger, destination: ledger.example.com, protocol: http, role: billing, purpose: Ledger, owner: team-billing, reference: BIL-8}
"""
NODES, PAYMENTS_POOL, BILLING, NOBODY = "127.0.0.1", "127.0.17.5", "127.1.0.5", "127.2.0.1"
# (client, protocol, host) -> status. payments lies inside the nodes' CIDRs (it gets what the nodes get, and Stripe);
# billing lies outside (its own names only); an address of no role or group gets nothing.
EXPECTED = {
    (PAYMENTS_POOL, "https", "api.stripe.com"): 200, (NODES, "https", "api.stripe.com"): 403, (BILLING, "https", "api.stripe.com"): 403,
    (NOBODY, "https", "api.stripe.com"): 403, (PAYMENTS_POOL, "http", "api.stripe.com"): 403, (PAYMENTS_POOL, "https", "x.api.stripe.com"): 403,
    (NODES, "https", "quay.io"): 200, (PAYMENTS_POOL, "https", "quay.io"): 200,  # (KKP's nodes pull no MCR image since issue 20)
    (BILLING, "https", "quay.io"): 403, (NOBODY, "https", "quay.io"): 403,
    (NODES, "http", "archive.ubuntu.com"): 200, (PAYMENTS_POOL, "http", "archive.ubuntu.com"): 200, (BILLING, "http", "archive.ubuntu.com"): 403,
    (BILLING, "https", "probe.invoices.example.com"): 200, (BILLING, "https", "a.b.invoices.example.com"): 200,
    (BILLING, "https", "invoices.example.com"): 403, (NODES, "https", "probe.invoices.example.com"): 403,
    (PAYMENTS_POOL, "https", "probe.invoices.example.com"): 403,
    (BILLING, "http", "ledger.example.com"): 200, (BILLING, "https", "ledger.example.com"): 403, (NODES, "http", "ledger.example.com"): 403,
    (PAYMENTS_POOL, "http", "ledger.example.com"): 403, (NOBODY, "http", "ledger.example.com"): 403,
}


@needs_squid
@pytest.mark.engine
def test_squid_allows_a_groups_entries_from_its_addresses_only(tmp_path):
    root = project(tmp_path / "project", {"loopback": LOOPBACK})
    catalog, profile, requirements = open_project(root).requirements("loopback")
    plan = compile_egress_proxy(catalog, profile, requirements)
    assert parse_config(plan.squid_conf, tmp_path / "parse").returncode == 0
    verdict = evaluate({CONF: plan.squid_conf}, enforced(catalog, profile, requirements), catalog)
    assert (verdict.missing, verdict.extra) == ((), ())
    got = {}
    with running_squid(plan.allowlist, {host for _, _, host in EXPECTED}, tmp_path / "squid") as squid:
        for client, protocol, host in EXPECTED:
            got[client, protocol, host] = squid.connect(host, 443, source=client) if protocol == "https" else squid.get(host, 80, source=client)
        log = squid.cache_log()
    assert got == EXPECTED
    assert "WARNING" not in log and "ERROR" not in log, log[-2000:]
