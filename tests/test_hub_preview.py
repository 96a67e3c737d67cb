"""Offline, a stack on an existing (hub) policy is judged against what it declares of the hub, says where each fact came
from, and says "not read offline" for the rest: `egress preview` (the program under mocks) and `egress render` agree."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from project_tree import copy_project

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "hub"
HUB = "/subscriptions/11111111-1111-1111-1111-111111111111/resourceGroups/rg-hub/providers/Microsoft.Network/firewallPolicies/fwp-hub-westeurope"
BASE = "/subscriptions/11111111-1111-1111-1111-111111111111/resourceGroups/rg-hub/providers/Microsoft.Network/firewallPolicies/fwp-base"
STACK_FILE = "stacks/Pulumi.aks-spoke.yaml"
NTP = "  egress-matrix:levels: [required, recommended, optional]\n  egress-matrix:azureDnsProxy: true\n"  # an FQDN network rule (NTP)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    copy_project(tmp_path)
    shutil.copytree(DATA, tmp_path / "hub")
    return tmp_path


def spoke(project: Path, extra: str) -> None:
    with (project / STACK_FILE).open("a") as stack:
        stack.write(extra)


def both(project: Path, run_cli) -> tuple[tuple[int, str, str], tuple[int, str, str]]:
    """`egress preview` and `egress render` of aks-spoke in ``project``."""
    preview = run_cli("preview", "--stack", "aks-spoke", "--out", str(project / "out-preview"), "--project", str(project))
    render = run_cli("render", "--stack", "aks-spoke", "--out", str(project / "out-render"), "--project", str(project))
    return preview, render


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_nothing_declared_is_not_read_offline_and_no_fact_is_stated(project, run_cli):
    spoke(project, NTP)
    (pcode, pout, perr), (rcode, rout, rerr) = both(project, run_cli)
    assert pcode == 0 and rcode == 0, (perr, rerr)
    for text in (_flat(pout), _flat(rerr)):
        assert "proxy off" not in text and "is taken" not in text and "blocks" not in text
        for fact in ("DNS proxy", "base policy", "rule collection groups", "base policy's rules"):
            assert f"note: hub policy fwp-hub-westeurope: {fact}: not read offline" in text
        assert (f"warning: DNS proxy of Firewall Policy {HUB}: not read offline; the FQDN network rules aks-core-udp-123-fqdns need it on: "
                "declare egress-matrix:azureHubDnsProxy") in text
        assert f"warning: rule collection groups of Firewall Policy {HUB}: not read offline; this stack's priorities 2000 may be taken" in text
        assert f"warning: base policy of Firewall Policy {HUB}: not read offline" in text


@pytest.mark.parametrize("declared,expected", [
    ("  egress-matrix:azureHubDnsProxy: false\n",
     f"Firewall Policy {HUB} has its DNS proxy off, but rules aks-core-udp-123-fqdns use FQDNs in network rules"),
    ("  egress-matrix:azureHubGroups: [hub-platform=100, team-b=2000]\n",
     f"rule collection group egress-payments-aks: priority 2000 is taken on Firewall Policy {HUB} by team-b. Fix: move "
     f"egress-matrix:azurePriorityBase to a free band (each stack on a shared policy needs its own; the groups there: declared in "
     f"{STACK_FILE}: egress-matrix:azureHubGroups)"),
    ("  egress-matrix:azureHubExports: [hub/fwp-hub-westeurope.show.json, hub/fwp-hub-westeurope.rcgs.json, hub/fwp-base.rcgs.json]\n",
     f"the base policy {BASE} of {HUB} blocks 1 requirement(s) before this stack's rules are reached: nodes -> "
     "dc.services.visualstudio.com https/443"),
], ids=["dns-proxy-declared-off", "priority-clash-declared", "base-policy-deny-exported"])
def test_declared_facts_are_judged_offline_by_preview_and_render_alike(project, run_cli, declared, expected):
    spoke(project, NTP + declared)
    (pcode, pout, perr), (rcode, rout, rerr) = both(project, run_cli)
    assert pcode == 1 and rcode == 1
    assert expected in _flat(perr) and expected in _flat(rerr)
    assert not (project / "out-render").exists()  # refused before anything is written


def test_declared_facts_that_pass_say_where_each_came_from(project, run_cli):
    spoke(project, NTP + "  egress-matrix:azureHubDnsProxy: true\n  egress-matrix:azureHubBasePolicyId: none\n"
                         "  egress-matrix:azureHubExports: [hub/fwp-hub-westeurope.rcgs.json]\n")
    (pcode, pout, perr), (rcode, rout, rerr) = both(project, run_cli)
    assert pcode == 0 and rcode == 0, (perr, rerr)
    lines = [f"note: hub policy fwp-hub-westeurope: DNS proxy: on (declared in {STACK_FILE}: egress-matrix:azureHubDnsProxy)",
             f"note: hub policy fwp-hub-westeurope: base policy: none (declared in {STACK_FILE}: egress-matrix:azureHubBasePolicyId)",
             "note: hub policy fwp-hub-westeurope: rule collection groups: 2 (hub-platform 100, egress-contoso-aks 3000) "
             "(read from hub/fwp-hub-westeurope.rcgs.json)"]
    for text in (pout, rerr):
        assert [line for line in text.splitlines() if line.startswith("note: hub")] == lines
        assert "not read offline" not in text


def test_the_exported_policy_answers_every_fact(project, run_cli):
    allowing = (project / "hub" / "fwp-base.rcgs.json").read_text().replace('"type": "Deny"', '"type": "Allow"')
    (project / "hub" / "fwp-base.rcgs.json").write_text(allowing)
    spoke(project, NTP + "  egress-matrix:azureHubExports: [hub/fwp-hub-westeurope.show.json, hub/fwp-hub-westeurope.rcgs.json, "
                         "hub/fwp-base.rcgs.json]\n")
    (pcode, pout, _), (rcode, _, rerr) = both(project, run_cli)
    assert pcode == 0 and rcode == 0
    for text in (pout, rerr):
        assert "not read offline" not in text
        assert "note: hub policy fwp-hub-westeurope: DNS proxy: on (read from hub/fwp-hub-westeurope.show.json)" in text
        assert "note: hub policy fwp-hub-westeurope: base policy's rules: 1 group(s), 1 rule collection(s) (read from hub/fwp-base.rcgs.json)" in text


def test_an_aws_policy_not_read_offline_is_an_advisory_not_a_crash(project, run_cli):
    stack = project / "stacks" / "Pulumi.kkp-aws.yaml"
    stack.write_text(stack.read_text().replace("  egress-matrix:awsFirewallPolicy: true\n", "  egress-matrix:awsFirewallPolicyArn: "
                                                "arn:aws:network-firewall:eu-west-1:123456789012:firewall-policy/hub\n"))
    code, out, err = run_cli("preview", "--stack", "kkp-aws", "--out", str(project / "out"), "--project", str(project))
    assert code == 0, err
    assert ("warning: firewall policy arn:aws:network-firewall:eu-west-1:123456789012:firewall-policy/hub: not read offline; its rule order "
            "(it must be STRICT_ORDER), its default actions and whether priorities") in out
    assert "uses rule order" not in out and "does not reference" not in out
