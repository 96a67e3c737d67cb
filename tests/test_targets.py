"""The target registry: every target has the shared shape, and render -> evaluate round-trips on what is written."""
from __future__ import annotations

import json
import typing
from pathlib import Path

import pytest

from egress.errors import EgressError
from egress.profile import Profile
from egress.project import open_project
from egress.targets import TARGETS, target

ROOT = Path(__file__).resolve().parents[1]


def test_registry_matches_the_stack_setting():
    declared = typing.get_args(typing.get_args(Profile.model_fields["targets"].annotation)[0])
    assert sorted(declared) == sorted(TARGETS)
    with pytest.raises(EgressError, match="unknown target 'gcp'. Fix: use one of: azure, aws, kubernetes$"):
        target("gcp")


@pytest.mark.parametrize("stack", ["dev", "aks-public", "aks-usgov", "aks-china"])
def test_rendered_artefacts_are_judged_complete_and_exact(stack):
    catalog, profile, reqs = open_project(ROOT).requirements(stack)
    spec = TARGETS["azure"]
    files = spec.render(spec.compile(catalog, profile, reqs, stack))
    enforced = spec.enforced(catalog, profile, reqs)
    verdict = spec.evaluate(files, enforced, catalog)
    assert verdict.ok, (verdict.missing, verdict.extra)
    assert verdict.rules_checked == sum(len(c["rules"]) for p, t in files.items() if "/ip-groups/" not in p
                                        for c in json.loads(t)["properties"]["ruleCollections"])


def test_evaluation_reads_ip_group_addresses_from_their_own_artefacts():
    catalog, profile, reqs = open_project(ROOT).requirements("aks-public")
    spec = TARGETS["azure"]
    files = spec.render(spec.compile(catalog, profile, reqs, "aks-public"))
    ip_group = "azure/ip-groups/egress-aks-public-nodes.json"
    assert json.loads(files[ip_group])["properties"]["ipAddresses"] == ["10.10.16.0/20"]
    narrowed = dict(files, **{ip_group: files[ip_group].replace("10.10.16.0/20", "10.10.16.0/24")})
    verdict = spec.evaluate(narrowed, [r for r in reqs if r.role == "nodes"], catalog)
    assert len(verdict.missing) == len([r for r in reqs if r.role == "nodes"])  # the nodes' CIDR is no longer inside the group
    without = {p: t for p, t in files.items() if p != ip_group}
    assert spec.evaluate(without, [r for r in reqs if r.role == "nodes"], catalog).missing  # unknown group contents allow nothing


def test_render_cli_writes_every_artefact_and_leaves_nothing_stale(run_cli, tmp_path):
    out = tmp_path / "out"
    code, _, err = run_cli("render", "--stack", "aks-public", "--target", "azure", "--out", str(out), "--project", str(ROOT))
    assert code == 0 and (out / "azure" / "ip-groups" / "egress-aks-public-nodes.json").exists(), err  # an earlier run's files
    code, _, err = run_cli("render", "--stack", "dev", "--out", str(out), "--project", str(ROOT))
    assert code == 0, err
    written = sorted(str(p.relative_to(out)) for p in out.rglob("*.json"))
    assert [p for p in written if p.startswith("azure/")] == [
        "azure/egress-dev-aks.json", "azure/egress-dev-kkp.json", "azure/egress-dev-openshift.json",
        "azure/ip-groups/egress-dev-nodes.json"]  # dev enforces the nodes role only (azureRoles)
    assert [p for p in written if p.startswith("aws/")] == [  # every target the stack lists
        "aws/firewall-policy.json", "aws/rule-groups/egress-dev-nodes-http-host.json", "aws/rule-groups/egress-dev-nodes-tls-sni.json",
        "aws/rule-groups/egress-dev-seed-http-host.json", "aws/rule-groups/egress-dev-seed-tls-sni.json", "aws/security-groups.json"]
    assert "3 rule collection group(s)" in " ".join(err.split()) and "1 IP Group(s)" in err


def test_render_aws_writes_the_rule_groups_the_engine_file_and_the_security_groups(run_cli, tmp_path):
    code, _, err = run_cli("render", "--stack", "kkp", "--target", "aws", "--out", str(tmp_path), "--project", str(ROOT))
    assert code == 0, err
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert written == [".egress-manifest.json", "aws/domain-list-broadening.txt", "aws/rule-groups/egress-kkp-nodes-http-host.json",
                       "aws/rule-groups/egress-kkp-nodes-tls-sni.json", "aws/rules.suricata", "aws/security-groups.json"]
    message = " ".join(err.split())
    assert "2 rule group(s) (domain-list)" in message and "The domain lists allow more than the matrix for 48 target(s)" in message


def test_render_all_needs_targets_in_the_stack(run_cli, tmp_path):
    code, _, err = run_cli("render", "--stack", "ibm-vpc", "--out", str(tmp_path), "--project", str(ROOT))
    assert code == 1
    assert "stack 'ibm-vpc' lists no targets (egress-matrix:targets). Fix: add them to the stack, or pass --target azure|aws|kubernetes" in " ".join(err.split())
