"""Issue 19's acceptance, on the example stack aks-contoso: a team's own egress (a team catalog folder, stack entries, a
source group, a private registry) beside the vendors' (AKS add-ons, Datadog, Flux), with no change to matrix/ or code.

The stack deploys to Azure; here the same stack is also compiled for AWS (Suricata form) and the egress proxy, so each
target's render is judged: by its own evaluator (nothing missing, nothing beyond), and by the real engines we run
(Suricata 7 replays, Squid answering per client address): Stripe from the payments pool only, never from other nodes.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from egress.project import open_project
from egress.targets import TARGETS
from squid_engine import needs_squid, running_squid
from suricata_engine import needs_suricata
from suricata_replay import Probe, replay

ROOT = Path(__file__).resolve().parents[1]
STACK = "aks-contoso"
EVERY_TARGET = """  egress-matrix:targets: [azure, aws, kubernetes]
  egress-matrix:awsRegion: eu-central-1
  egress-matrix:awsPlatforms: [datadog, flux]  # AKS rows name Azure service tags; the own catalogs stay enforced
  egress-matrix:awsNetworkFirewallRules: suricata
  egress-matrix:awsFirewallPolicy: true
  egress-matrix:awsVpcId: vpc-0123456789abcdef0
  egress-matrix:egressProxy: true
  egress-matrix:serviceCidrs: [10.0.0.0/16]
"""
OWN = {  # destination -> (source role or group, entry ids)
    "api.stripe.com": ("payments", ("payments/stripe-api",)),
    "events.eu.pagerduty.com": ("nodes", ("stack/pagerduty-events",)),
    "contosoacr.azurecr.io": ("nodes", ("registries/acr-contosoacr-login",)),
    "contosoacr.westeurope.data.azurecr.io": ("nodes", ("registries/acr-contosoacr-data-westeurope",)),
    "contosoacr.northeurope.data.azurecr.io": ("nodes", ("registries/acr-contosoacr-data-northeurope",)),
    "azurecr.io": ("nodes", ("registries/acr-contosoacr-certificates",)),
}


def _variant(project_copy: Path, sources: dict[str, str] | None = None) -> Path:
    """aks-contoso with every target (and, for the real Squid, its sources moved onto loopback addresses)."""
    path = project_copy / "stacks" / f"Pulumi.{STACK}.yaml"
    text = path.read_text()
    text = re.sub(r"  egress-matrix:targets: \[azure\]\n", EVERY_TARGET, text)
    for old, new in (sources or {}).items():
        text = text.replace(old, new)
    path.write_text(text)
    return project_copy


def test_the_own_half_resolves_cited_owned_and_for_its_sources_only():
    catalog, profile, reqs = open_project(ROOT).requirements(STACK)
    own = {r.destination: (r.role, r.entry_ids) for r in reqs if r.approvals}
    assert own == OWN
    stripe = next(r for r in reqs if r.destination == "api.stripe.com")
    assert (stripe.sources, [(a.owner, a.reference) for a in stripe.approvals]) == (
        ("10.40.17.0/24",), [("team-payments", "https://tickets.contoso.example/SEC-4711")])
    assert not [r for r in reqs if r.destination == "api.stripe.com" and r.role != "payments"]
    vendor = {r.destination for r in reqs if not r.approvals}
    assert {"api.datadoghq.eu", "*.agent.datadoghq.eu", "github.com", "ghcr.io", "kv-contoso-payments.vault.azure.net"} <= vendor


def test_explain_names_the_owner_and_the_reference(run_cli):
    code, out, _ = run_cli("explain", "api.stripe.com:443", "--stack", STACK, "--project", str(ROOT))
    text = " ".join(out.split())
    assert code == 0
    assert "team-payments" in text and "https://tickets.contoso.example/SEC-4711" in text and "payments" in text


@pytest.mark.parametrize("name", ["azure", "aws", "kubernetes"])
def test_each_targets_render_allows_exactly_the_requirements_for_exactly_their_sources(project_copy, name):
    catalog, profile, reqs = open_project(_variant(project_copy)).requirements(STACK)
    spec = TARGETS[name]
    files = spec.render(spec.compile(catalog, profile, reqs, STACK))
    enforced = spec.enforced(catalog, profile, reqs)
    assert {r.destination for r in enforced if r.role == "payments"} == {"api.stripe.com"}
    verdict = spec.evaluate(files, enforced, catalog)
    assert (verdict.missing, verdict.extra) == ((), ()), name


@pytest.mark.engine
@needs_suricata
def test_suricata_passes_stripe_from_the_payments_pool_only(project_copy, tmp_path):
    catalog, profile, reqs = open_project(_variant(project_copy)).requirements(STACK)
    spec = TARGETS["aws"]
    rules = spec.render(spec.compile(catalog, profile, reqs, STACK))["aws/rules.suricata"]
    payments, node, outside = "10.40.17.9", "10.40.20.9", "10.99.0.9"
    want = {
        Probe("tls", "api.stripe.com", 443, payments): "pass",
        Probe("tls", "api.stripe.com", 443, node): "drop",  # a node outside the payments pool
        Probe("tls", "api.stripe.com", 443, outside): "drop",
        Probe("tls", "files.stripe.com", 443, payments): "drop",  # the catalog's feature is off
        Probe("tls", "contosoacr.westeurope.data.azurecr.io", 443, node): "pass",
        Probe("tls", "contosoacr.westeurope.data.azurecr.io", 443, payments): "pass",  # the pool's nodes are nodes
        Probe("tls", "other.westeurope.data.azurecr.io", 443, node): "drop",  # only this registry's endpoint
        Probe("tls", "events.eu.pagerduty.com", 443, node): "pass",
    }
    got = replay(rules, list(want), tmp_path)
    assert {p: got[p] for p in want} == want


@pytest.mark.engine
@needs_squid
def test_squid_serves_stripe_to_the_payments_pool_only(project_copy, tmp_path):
    from egress.targets.kubernetes.egress_proxy import compile_egress_proxy

    loopback = {"[10.40.16.0/20]": "[127.0.0.0/16]", "[10.40.17.0/24]": "[127.0.17.0/24]"}
    catalog, profile, reqs = open_project(_variant(project_copy, loopback)).requirements(STACK)
    plan = compile_egress_proxy(catalog, profile, reqs)
    payments, node, nobody = "127.0.17.5", "127.0.40.5", "127.2.0.1"
    want = {(payments, "api.stripe.com"): 200, (node, "api.stripe.com"): 403, (nobody, "api.stripe.com"): 403,
            (node, "contosoacr.northeurope.data.azurecr.io"): 200, (nobody, "contosoacr.northeurope.data.azurecr.io"): 403,
            (node, "events.eu.pagerduty.com"): 200}
    with running_squid(plan.allowlist, {host for _, host in want}, tmp_path / "squid") as squid:
        got = {(client, host): squid.connect(host, 443, source=client) for client, host in want}
    assert got == want


def test_a_catalog_whose_last_entry_expired_keeps_its_protected_group_empty(monkeypatch):
    """Deleting the group would be refused by protection and block every later update: it stays, with no rules."""
    monkeypatch.setenv("EGRESS_TODAY", "2027-07-01")  # stack/pagerduty-events, the stack catalog's only entry, expired
    catalog, profile, reqs = open_project(ROOT).requirements(STACK)
    assert catalog.expired == ("stack/pagerduty-events",)
    spec = TARGETS["azure"]
    groups = {g.name: g for g in spec.compile(catalog, profile, reqs, STACK).groups}
    assert (groups["egress-contoso-stack"].priority, groups["egress-contoso-stack"].collections) == (5000, ())
    monkeypatch.setenv("EGRESS_TODAY", "2027-06-01")
    catalog, profile, reqs = open_project(ROOT).requirements(STACK)
    assert groups.keys() == {g.name for g in spec.compile(catalog, profile, reqs, STACK).groups}
