"""Azure Firewall plan: exact layout, coverage judged from the emitted bodies, limits and errors, diff locality."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from egress.targets.azure.compile import compile_azure, fqdn_tag_members
from egress.targets.azure.evaluate import evaluate_bodies as evaluate
from egress.targets.azure.plan import AzureCompileError
from egress.targets.azure.render import offline_ip_group_ids, plan_bodies
from egress.models import Requirement
from egress.addresses import PortRange
from egress.errors import ResolveError
from egress.project import open_project
from egress.resolve import resolve

ROOT = Path(__file__).resolve().parents[1]
ADDONS = ["pod-api-access", "defender", "csi-secret-store", "azure-monitor", "azure-policy", "cost-analysis", "cluster-extensions", "gpu"]


def stack(name: str, **overrides):
    catalog, profile, _ = open_project(ROOT).requirements(name)
    profile = profile.model_copy(update=overrides)
    return catalog, profile, resolve(catalog, profile)


def judge(catalog, profile, reqs):
    plan = compile_azure(catalog, profile, reqs)
    ids = {role: f"/ipGroups/egress-{role}" for role in plan.ip_groups}
    enforced = [r for r in reqs if r.role in profile.azure_roles]
    result = evaluate(plan_bodies(plan, ids), enforced, plan.role_sources, {ids[r]: c for r, c in plan.ip_groups.items()},
                      fqdn_tag_members(catalog, enforced))
    return plan, result


def _rules(plan):
    return {r.name: r for g in plan.groups for c in g.collections for r in c.rules}


def test_aks_public_plan_is_exact():
    catalog, profile, reqs = stack("aks-public")
    plan = compile_azure(catalog, profile, reqs)
    assert [(g.name, g.priority, [(c.name, c.priority, c.rule_type) for c in g.collections]) for g in plan.groups] == [
        ("egress-aks-public-aks", 1000, [("aks-network", 100, "NetworkRule"), ("aks-application", 200, "ApplicationRule")])]
    network, application = plan.groups[0].collections
    # One rule per (platform, feature, role, protocol/ports), named after them, entry ids in the description.
    assert [(r.name, r.ip_protocols, r.destination_ports, r.destination_addresses, r.description) for r in network.rules] == [
        ("aks-azure-monitor-tcp-443", ("TCP",), ("443",), ("AzureMonitor",), "egress-matrix entries: aks-monitor-service-tag"),
        ("aks-core-udp-53", ("UDP",), ("53",), ("10.10.0.4", "10.10.0.5"), "egress-matrix entries: aks-public-custom-dns"),
        ("aks-pod-api-access-tcp-443", ("TCP",), ("443",), ("203.0.113.20",), "egress-matrix entries: aks-public-api-server-ip"),
    ]
    assert [(r.name, r.protocols) for r in application.rules] == [
        ("aks-azure-monitor-https", (("Https", 443),)), ("aks-azure-policy-https", (("Https", 443),)),
        ("aks-cluster-extensions-https", (("Https", 443),)), ("aks-core-http", (("Http", 80),)), ("aks-core-https", (("Https", 443),)),
        ("aks-cost-analysis-https", (("Https", 443),)), ("aks-csi-secret-store-https", (("Https", 443),)),
        ("aks-defender-https", (("Https", 443),)), ("aks-gpu-https", (("Https", 443),))]
    rules = _rules(plan)
    assert rules["aks-core-http"].target_fqdns == ("*.mp.microsoft.com", "azure.archive.ubuntu.com", "changelogs.ubuntu.com",
                                                   "ctldl.windowsupdate.com", "security.ubuntu.com", "www.msftconnecttest.com")
    assert "*.hcp.francecentral.azmk8s.io" in rules["aks-core-https"].target_fqdns
    assert rules["aks-core-https"].target_fqdns[:2] == ("*.data.mcr.microsoft.com", "*.hcp.francecentral.azmk8s.io")
    assert "francecentral.dp.kubernetesconfiguration.azure.com" in rules["aks-cluster-extensions-https"].target_fqdns
    assert rules["aks-csi-secret-store-https"].target_fqdns == ("kv-egress-demo.vault.azure.net",)  # azureKeyVaultNames: only that vault
    monitor = rules["aks-azure-monitor-https"].target_fqdns
    assert "msprom-francecentral-demo-a1b2.francecentral-1.metrics.ingest.monitor.azure.com" in monitor
    assert not [h for h in monitor if h.startswith("*.") and "ingest.monitor" in h]  # the DCE's hosts, not every DCE
    # A host two features need sits in each feature's rule: login is core, Defender's and cost analysis' own.
    assert all("login.microsoftonline.com" in rules[n].target_fqdns for n in ("aks-core-https", "aks-defender-https", "aks-cost-analysis-https"))
    assert rules["aks-defender-https"].description == ("egress-matrix entries: aks-defender-cloud-public, aks-defender-login-public, "
                                                       "aks-defender-ods-public, aks-defender-oms-public")
    assert all(r.target_fqdns == tuple(sorted(set(r.target_fqdns))) for r in application.rules)
    assert plan.ip_groups == {"nodes": ("10.10.16.0/20",)} and plan.minimum_rules == 12 and plan.ip_group_name("nodes") == "egress-aks-public-nodes"


def test_fqdn_tag_covers_core_https_only():
    """The tag opens its members on HTTPS 443 only; the Ubuntu/Windows HTTP 80 hosts stay explicit, add-ons stay explicit."""
    catalog, profile, reqs = stack("aks-public", azure_fqdn_tag=True)
    rules = _rules(compile_azure(catalog, profile, reqs))
    assert "aks-core-https" not in rules
    tag = rules["aks-core-https-fqdn-tag"]
    assert (tag.protocols, tag.fqdn_tags, tag.target_fqdns) == ((("Https", 443),), ("AzureKubernetesService",), ())
    assert rules["aks-core-http"].protocols == (("Http", 80),) and "security.ubuntu.com" in rules["aks-core-http"].target_fqdns
    assert "login.microsoftonline.com" in rules["aks-defender-https"].target_fqdns


@pytest.mark.parametrize("name", ["aks-public", "aks-usgov", "aks-china"])
@pytest.mark.parametrize("addons", [False, True])
@pytest.mark.parametrize("fqdn_tag", [False, True])
@pytest.mark.parametrize("konnectivity", [True, False])
def test_every_requirement_allowed_and_nothing_else(name, addons, fqdn_tag, konnectivity):
    catalog, profile, _ = stack(name)
    features = [f for f in ADDONS if any(e.feature == f and e.variant in (None, profile.cloud) for e in catalog.entries)] if addons else []
    profile = profile.model_copy(update={"features": tuple(features), "azure_fqdn_tag": fqdn_tag, "konnectivity": konnectivity,
                                         "node_os": ("ubuntu", "windows")})
    reqs = resolve(catalog, profile)
    plan, result = judge(catalog, profile, reqs)
    assert result.missing == () and result.extra == (), (result.missing, result.extra)
    assert len(plan.groups) == 1 and plan.groups[0].rule_count == plan.minimum_rules  # ratio 1.0, one RCG per band


def test_dev_stack_has_one_group_per_platform_band():
    catalog, profile, reqs = stack("dev")
    plan, result = judge(catalog, profile, reqs)
    assert [(g.name, g.priority) for g in plan.groups] == [("egress-dev-aks", 1000), ("egress-dev-kkp", 1100), ("egress-dev-openshift", 1200)]
    assert result.ok


def _body(plan):
    return plan_bodies(plan, {role: f"/ipGroups/egress-{role}" for role in plan.ip_groups})


def test_evaluator_catches_a_missing_fqdn_a_stray_fqdn_a_wider_port_and_a_wrong_source():
    catalog, profile, reqs = stack("aks-public")
    plan = compile_azure(catalog, profile, reqs)
    ip_groups = {"/ipGroups/egress-nodes": ["10.10.16.0/20"]}
    enforced = [r for r in reqs if r.role == "nodes"]

    def run(mutate):
        bodies = json.loads(json.dumps(_body(plan)))
        mutate(bodies[0]["properties"]["ruleCollections"])
        return evaluate(bodies, enforced, plan.role_sources, ip_groups)

    def rule(collections, name):
        return next(r for c in collections for r in c["rules"] if r["name"] == name)

    def drop_mcr(collections):
        for name in ("aks-core-https", "aks-cluster-extensions-https"):
            rule(collections, name)["targetFqdns"].remove("mcr.microsoft.com")

    def add_stray(collections):
        rule(collections, "aks-core-https")["targetFqdns"].append("evil.example.com")

    def widen_port(collections):
        rule(collections, "aks-core-udp-53")["destinationPorts"] = ["1-65535"]

    def wrong_source(collections):
        rule(collections, "aks-core-udp-53")["sourceIpGroups"] = []
        rule(collections, "aks-core-udp-53")["sourceAddresses"] = ["10.99.0.0/16"]

    missing = run(drop_mcr)
    assert [m.split(" (")[0] for m in missing.missing] == ["nodes -> mcr.microsoft.com https/443"] and missing.extra == ()
    stray = run(add_stray)
    assert stray.missing == () and stray.extra == ("egress-aks-public-aks/aks-application/aks-core-https allows evil.example.com https/443, which no requirement asks for",)
    wide = run(widen_port)
    assert wide.missing == () and wide.extra == ("egress-aks-public-aks/aks-network/aks-core-udp-53 allows 10.10.0.4 udp/1-65535, which no requirement asks for",
                                                 "egress-aks-public-aks/aks-network/aks-core-udp-53 allows 10.10.0.5 udp/1-65535, which no requirement asks for")
    source = run(wrong_source)
    assert [m.split(" (")[0] for m in source.missing] == ["nodes -> 10.10.0.4 udp/53", "nodes -> 10.10.0.5 udp/53"]
    assert len(source.extra) == 2


def test_wildcard_semantics_apex_is_not_covered():
    catalog, profile, reqs = stack("aks-public")
    plan = compile_azure(catalog, profile, reqs)
    bodies = _body(plan)
    apex = Requirement(role="nodes", destination="azmk8s.io", kind="fqdn", protocol="https", ports=(PortRange(443, 443),),
                       level="required", purposes=("x",), entry_ids=("x",), citations=(), platforms=("aks",))
    assert evaluate(bodies, [apex], plan.role_sources, {"/ipGroups/egress-nodes": ["10.10.16.0/20"]}).missing


def test_choices_without_dns_proxy_and_with_it():
    catalog, profile, _ = stack("aks-china")
    plan = compile_azure(catalog, profile, resolve(catalog, profile))
    assert [(c.used, c.reason) for c in plan.choices] == [("*", "Azure cannot express ntp.ubuntu.com (fqdn) as configured")]
    proxied = profile.model_copy(update={"azure_dns_proxy": True})
    plan = compile_azure(catalog, proxied, resolve(catalog, proxied))
    assert plan.choices == ()
    fqdn_rules = [r for r in plan.groups[0].collections[0].rules if r.destination_fqdns]
    assert [(r.name, r.destination_fqdns) for r in fqdn_rules] == [("aks-core-udp-123-fqdns", ("ntp.ubuntu.com",))]


def test_fqdn_network_rule_without_dns_proxy_is_an_error():
    catalog, profile, _ = stack("dev")
    profile = profile.model_copy(update={"offline_registry": "registry.internal.example.com:5000"})
    with pytest.raises(AzureCompileError) as info:
        compile_azure(catalog, profile, resolve(catalog, profile))
    message = str(info.value)
    assert "nodes -> registry.internal.example.com tcp/5000 (entries: kkp-offline-registry)" in message
    assert "egress-matrix:azureDnsProxy: true" in message and "IP/CIDR" in message


def test_unsupported_wildcard_is_left_out_and_never_falls_back_to_all_of_storage():
    # optional rows Azure cannot express are left out with a note (tests/test_matrix_audit2_aks.py); a required one stops
    catalog, profile, _ = stack("aks-public", levels=("required", "recommended", "optional"))
    reqs = resolve(catalog, profile)
    plan = compile_azure(catalog, profile, reqs)
    assert [n.requirement.split(" ")[2] for n in plan.left_out] == ["md-*.blob.storage.azure.net", "umsa*.blob.core.windows.net"]
    body = json.dumps(_body(plan))
    assert "md-*" not in body and "umsa" not in body and "\"Storage\"" not in body and [c.used for c in plan.choices] == ["*"]  # only the NTP fallback
    with pytest.raises(AzureCompileError, match=r"umsa\*\.blob\.core\.windows\.net.*left-most label"):
        compile_azure(catalog, profile, [r.model_copy(update={"level": "required"}) if r.destination.startswith("umsa") else r for r in reqs])


def test_priority_clash_and_range_errors():
    catalog, profile, reqs = stack("aks-public", azure_existing_priorities=(200, 1000))
    with pytest.raises(AzureCompileError, match="priority 1000 clashes with a group already on the policy"):
        compile_azure(catalog, profile, reqs)
    catalog, profile, reqs = stack("dev", azure_priority_base=64000)
    assert [g.priority for g in compile_azure(catalog, profile, reqs).groups] == [64000, 64100, 64200]


def test_rule_collection_group_over_two_megabytes_is_an_error():
    catalog, profile, reqs = stack("aks-public")
    big = [Requirement(role="nodes", destination=f"host-{i:06d}.{'x' * 40}.example.com", kind="fqdn", protocol="https",
                       ports=(PortRange(443, 443),), level="required", purposes=("synthetic",), entry_ids=("aks-public-mcr",),
                       citations=(), platforms=("aks",)) for i in range(40000)]
    with pytest.raises(AzureCompileError, match=r"rule collection group egress-aks-public-aks is [\d,]+ bytes, over Azure's 2 MB limit"):
        compile_azure(catalog, profile, [*reqs, *big])


def test_role_without_sources_is_an_error():
    catalog, profile, reqs = stack("aks-public", node_sources=())
    with pytest.raises(AzureCompileError, match="role 'nodes' has rules but no source CIDRs. Fix: set egress-matrix:nodeSources"):
        compile_azure(catalog, profile, reqs)


def test_offline_ip_group_ids_need_subscription_and_group():
    catalog, profile, reqs = stack("aks-public", azure_subscription_id=None)
    plan = compile_azure(catalog, profile, reqs)
    with pytest.raises(AzureCompileError, match="needs egress-matrix:azureSubscriptionId"):
        offline_ip_group_ids(plan)


# ------------------------------------------------------------------------------------------- diff locality
def _render(run_cli, project: Path, stack_name: str, out: Path) -> dict[str, str]:
    code, _, err = run_cli("render", "--stack", stack_name, "--target", "azure", "--out", str(out), "--project", str(project))
    assert code == 0, err
    return {p.name: p.read_text() for p in sorted((out / "azure").glob("*.json"))}


def _rule_list(text: str) -> list[dict]:
    return [rule for c in json.loads(text)["properties"]["ruleCollections"] for rule in c["rules"]]


def test_adding_one_endpoint_changes_exactly_one_group(run_cli, project_copy, tmp_path):
    before = _render(run_cli, project_copy, "dev", tmp_path / "a")
    kkp = project_copy / "matrix" / "kkp.yaml"
    kkp.write_text(kkp.read_text() + """  - {id: kkp-extra-endpoint, destination: extra.example.com, purpose: one more endpoint,
     citation: {source: kkp-proxy-whitelisting, section: kubelet - Binary}}
""")
    after = _render(run_cli, project_copy, "dev", tmp_path / "b")
    assert sorted(before) == sorted(after) == ["egress-dev-aks.json", "egress-dev-kkp.json", "egress-dev-openshift.json"]
    assert [name for name in before if before[name] != after[name]] == ["egress-dev-kkp.json"]
    changed = [(a, b) for a, b in zip(_rule_list(before["egress-dev-kkp.json"]), _rule_list(after["egress-dev-kkp.json"])) if a != b]
    assert [a["name"] for a, _ in changed] == ["kkp-core-https"] and "extra.example.com" in changed[0][1]["targetFqdns"]


def test_reordering_matrix_files_changes_nothing(run_cli, project_copy, tmp_path):
    before = _render(run_cli, project_copy, "dev", tmp_path / "a")
    aks = project_copy / "matrix" / "aks.yaml"
    head, _, body = aks.read_text().partition("entries:\n")
    entries = ["  - " + chunk for chunk in body.split("\n  - ") if chunk.strip()]
    entries[0] = entries[0][4:]
    entries = [e.rstrip("\n") for e in entries]
    aks.write_text(head + "entries:\n" + "\n".join(reversed(entries)) + "\n")
    assert _render(run_cli, project_copy, "dev", tmp_path / "b") == before


def test_render_errors_name_the_stack(run_cli, project_copy, tmp_path):
    stack_file = project_copy / "stacks" / "Pulumi.aks-public.yaml"
    stack_file.write_text(stack_file.read_text().replace("location: francecentral", "location: moon-east"))
    code, out, err = run_cli("render", "--stack", "aks-public", "--out", str(tmp_path), "--project", str(project_copy))
    message = " ".join(err.split())
    assert code == 1 and "stacks/Pulumi.aks-public.yaml" in message and "'moon-east'" in message and "unknown location" in message


# ------------------------------------------------------------------------------------------- issue 7: correct compile
def test_pod_api_access_needs_the_ip_or_the_explicit_annotation_choice():
    catalog, profile, _ = stack("aks-public")
    without = profile.model_copy(update={"api_server_ip": None, "pods_use_api_server_fqdn": False})
    with pytest.raises(ResolveError) as caught:
        resolve(catalog, without)
    message = str(caught.value)
    assert "aks-public-api-server-ip" in message and "{api_server_ip} (set egress-matrix:apiServerIp)" in message
    assert "*.hcp.{location}.azmk8s.io (only when pods-use-api-server-fqdn=yes: set egress-matrix:podsUseApiServerFqdn: true)" in message
    by_ip = [r for r in resolve(catalog, profile) if "aks-public-api-server-ip" in r.entry_ids]
    assert [(r.destination, r.protocol, str(r.ports[0])) for r in by_ip] == [("203.0.113.20", "tcp", "443")]
    annotated = without.model_copy(update={"pods_use_api_server_fqdn": True})
    reqs = resolve(catalog, annotated)
    assert [r.destination for r in reqs if "aks-public-api-server-ip" in r.entry_ids] == ["*.hcp.francecentral.azmk8s.io"]
    assert not [r for r in reqs if r.kind == "ip" and r.protocol == "tcp"]  # no TCP 443 rule to an address is left behind


def test_https_port_range_is_never_cut_to_its_first_port():
    catalog, profile, reqs = stack("ibm-vpc", azure_roles=("workstation",), targets=("azure",))
    with pytest.raises(AzureCompileError, match=r"\*\.us-south\.containers\.cloud\.ibm\.com https/30000-32767: Azure application rules "
                                                r"take single ports \(up to 64000\), not 30000-32767"):
        compile_azure(catalog, profile, reqs)
    # The exact master host with the DNS proxy: a TCP network rule keeps the whole range.
    master = next(r for r in reqs if r.destination.startswith("*.us-south")).model_copy(
        update={"destination": "c100.us-south.containers.cloud.ibm.com", "kind": "fqdn", "alternatives": ()})
    plan = compile_azure(catalog, profile.model_copy(update={"azure_dns_proxy": True}), [master])
    rule = plan.groups[0].collections[0].rules[0]
    assert (rule.ip_protocols, rule.destination_ports, rule.destination_fqdns) == (
        ("TCP",), ("30000-32767",), ("c100.us-south.containers.cloud.ibm.com",))
    assert "Https:30000" not in json.dumps(_body(plan))


def test_ipv6_sources_and_destinations_are_clear_errors():
    catalog, profile, reqs = stack("aks-public", node_sources=("10.10.16.0/20", "2001:db8::/64"))
    with pytest.raises(AzureCompileError, match=r"role 'nodes' has IPv6 sources \(2001:db8::/64\).*IPv4 only.*egress-matrix:nodeSources"):
        compile_azure(catalog, profile, reqs)
    catalog, profile, reqs = stack("aks-public", custom_dns_ips=("2001:db8::53",))
    with pytest.raises(AzureCompileError, match=r"2001:db8::53 udp/53: this target emits IPv4 rules only"):
        compile_azure(catalog, profile, reqs)


def _rule_bodies(plan) -> dict[str, dict]:
    return {rule["name"]: rule for body in _body(plan) for c in body["properties"]["ruleCollections"] for rule in c["rules"]}


@pytest.mark.parametrize("name", ["aks-public", "aks-usgov", "aks-china", "dev"])
@pytest.mark.parametrize("fqdn_tag", [False, True])
def test_enabling_one_feature_adds_only_its_own_rules(catalog, name, fqdn_tag):
    """Diff locality per feature: every rule that existed before is byte-identical after, and every new rule is named
    after the feature turned on, so a pull request reads 'Defender added 1 rule with 4 hosts'."""
    _, profile, _ = stack(name, azure_fqdn_tag=fqdn_tag)
    available = sorted({e.feature for e in catalog.entries if e.feature and e.platform in profile.platforms
                        and e.variant in (None, profile.cloud)} - {"kkp-aws", "kkp-vsphere", "seed-on-azure"})  # these need further settings
    checked = 0
    for feature in available:
        without = profile.model_copy(update={"features": tuple(f for f in profile.features if f != feature)})
        with_it = without.model_copy(update={"features": (*without.features, feature)})
        before = _rule_bodies(compile_azure(catalog, without, resolve(catalog, without)))
        after = _rule_bodies(compile_azure(catalog, with_it, resolve(catalog, with_it)))
        assert {n: before[n] for n in before} == {n: after[n] for n in before}, feature
        added = sorted(set(after) - set(before))
        assert all(n.startswith(tuple(f"{p}-{feature.removeprefix(p + '-')}-" for p in profile.platforms)) for n in added), (feature, added)
        checked += bool(added)  # a feature whose roles this target does not enforce (e.g. the seed's) adds nothing
    assert checked >= 3
