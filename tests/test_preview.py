"""egress preview end to end: every stack previews offline with no mandatory violation; a stack broken on purpose (in
the program, so the pack meets it as it would in a real preview) fails, naming the policy and the resource."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import components.azure_firewall
import components.kubernetes_egress
from egress.project import open_project
from egress_preview.preview import SECRET_MASK, mask, preview, snapshot
from rule_breaks import drop_aws_target, drop_azure_fqdn, edit_squid_conf

ROOT = Path(__file__).resolve().parents[1]
STACKS = sorted(p.name.split(".")[1] for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_previews_with_no_mandatory_violation(stack):
    result = preview(open_project(ROOT), stack)
    assert [v.line() for v in result.mandatory] == []
    assert all(c.allowed == c.enforced for c in result.coverage), result.coverage
    catalog, profile, _ = open_project(ROOT).requirements(stack)
    assert [c.target for c in result.coverage] == list(profile.targets)


def test_dev_preview_writes_resources_and_renders_and_exits_0(run_cli, tmp_path):
    code, out, err = run_cli("preview", "--stack", "dev", "--out", str(tmp_path))
    assert code == 0, err
    assert "azure: 98/98 enforced requirements allowed" in out and "policy pack: 0 mandatory, 128 advisory" in out
    assert "... 123 more advisory from egress-least-privilege (all in resources.json)" in out
    document = json.loads((tmp_path / "resources.json").read_text())
    assert len(document["resources"]) == 31 and len(document["violations"]) == 128
    assert [r["name"] for r in document["resources"]] == [r["name"] for r in sorted(document["resources"], key=lambda r: (r["type"], r["name"]))]
    assert (tmp_path / "azure" / "egress-dev-aks.json").exists() and (tmp_path / "aws" / "rules.suricata").exists()
    assert (tmp_path / "kubernetes" / "squid.conf").exists()


def test_snapshot_is_deterministic():
    project = open_project(ROOT)
    first, second = snapshot(preview(project, "openshift")), snapshot(preview(project, "openshift"))
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)


def test_secret_inputs_are_masked_in_resources_json(tmp_path, monkeypatch):
    """A stack with proxy credentials (a secure value: a stand-in offline): the recorded inputs mark them secret, and
    resources.json shows the mask, never the value."""
    from egress_preview import program

    stacks = tmp_path / "stacks"
    stacks.mkdir()
    text = (ROOT / "stacks" / "Pulumi.proxy-only.yaml").read_text() + "  egress-matrix:proxyCredentials:\n    secure: AAABAII+gDfUcpoMRLtxD5xT9Nj99gx5gycEreX7Kd0s+XQfUEk=\n"  # a real Pulumi Cloud ciphertext
    (stacks / "Pulumi.proxy-only.yaml").write_text(text)
    config, secret_keys = program.stack_config(stacks / "Pulumi.proxy-only.yaml")
    recorded = program.run_program(ROOT, "proxy-only", config, secret_keys)
    env = next(r for r in recorded.resources if r.name == "cluster-proxy-secret-kube-system-egress-proxy-env")
    assert env.secret_paths == ("stringData",) and "offline-preview" in env.props["stringData"]["HTTP_PROXY"]
    assert mask(env.props, env.secret_paths)["stringData"] == SECRET_MASK
    from egress_preview.pack import run_pack

    assert [v.line() for v in run_pack(recorded) if v.level == "mandatory"] == []


def _mandatory(result):
    return [(v.policy, v.resource) for v in result.mandatory]


def test_breaking_azure_rules_fails_naming_policy_and_group(monkeypatch):
    drop_azure_fqdn(monkeypatch, "changelogs.ubuntu.com")
    result = preview(open_project(ROOT), "dev")
    # Refused before the write (resource policy, at up too) and reported by the stack policy with its citation.
    assert _mandatory(result) == [("required-egress-complete", "azure-native:network:FirewallPolicyRuleCollectionGroup 'egress-aks'"),
                                  ("required-egress-complete-before-write", "azure-native:network:FirewallPolicyRuleCollectionGroup 'egress-aks'")]
    assert all("aks-os-updates-changelogs" in v.message for v in result.mandatory)
    # cited by the public page (the seed copy's file name is no address a reader can open)
    assert ("https://github.com/MicrosoftDocs/azure-aks-docs/blob/f9be3faa3436b5bd5fb2cda4d33b5771538031f7/articles/aks/"
            "outbound-rules-control-egress.md § " in result.mandatory[0].message)


def test_breaking_aws_domain_list_fails(monkeypatch):
    drop_aws_target(monkeypatch, "download.docker.com")
    result = preview(open_project(ROOT), "dev")
    assert sorted(set(_mandatory(result))) == [("required-egress-complete", "aws:networkfirewall/ruleGroup:RuleGroup 'egress-dev-nodes-tls-sni'"),
                                               ("required-egress-complete", "aws:networkfirewall/ruleGroup:RuleGroup 'egress-dev-seed-tls-sni'"),
                                               ("required-egress-complete-before-write", "aws:networkfirewall/ruleGroup:RuleGroup 'egress-dev-nodes-tls-sni'"),
                                               ("required-egress-complete-before-write", "aws:networkfirewall/ruleGroup:RuleGroup 'egress-dev-seed-tls-sni'")]


def test_breaking_the_egress_proxy_fails(monkeypatch):
    edit_squid_conf(monkeypatch, "dstdomain -n archive.ubuntu.com security.ubuntu.com", "dstdomain -n security.ubuntu.com")
    result = preview(open_project(ROOT), "proxy-only")
    assert _mandatory(result) == [("required-egress-complete", "kubernetes:core/v1:ConfigMap 'egress-proxy-configmap-egress-proxy-egress-proxy-config'"),
                                  ("required-egress-complete-before-write", "kubernetes:core/v1:ConfigMap 'egress-proxy-configmap-egress-proxy-egress-proxy-config'")]
    assert all("archive.ubuntu.com" in v.message for v in result.mandatory)


def test_api_allowlist_opened_to_the_world_fails_the_cli(monkeypatch, run_cli, tmp_path):
    original = components.kubernetes_egress.kkp_cluster_patch

    def opened(plan):
        patch = original(plan)
        patch["spec"]["apiServerAllowedIPRanges"]["cidrBlocks"] = ["0.0.0.0/0"]
        return patch

    monkeypatch.setattr(components.kubernetes_egress, "kkp_cluster_patch", opened)
    code, out, err = run_cli("preview", "--stack", "kkp", "--out", str(tmp_path))
    assert code == 1
    assert "[mandatory] api-allowlist-not-open: kubernetes:kubermatic.k8c.io/v1:ClusterPatch 'api-server-allowlist-cluster-" in out
    assert "mandatory policy violation(s)" in err


def test_proxy_credentials_in_plain_text_fail(monkeypatch):
    original = components.kubernetes_egress.kubeadm_proxy_env

    def leaky(plan, credentials=None):
        env = original(plan, credentials)
        env["data"]["HTTPS_PROXY"] = env["data"]["HTTPS_PROXY"].replace("http://", "http://node:s3cr3t@")
        return env

    monkeypatch.setattr(components.kubernetes_egress, "kubeadm_proxy_env", leaky)
    result = preview(open_project(ROOT), "proxy-only")
    assert _mandatory(result) == [("proxy-credentials-secret", "kubernetes:core/v1:ConfigMap 'cluster-proxy-configmap-kube-system-egress-proxy-env'")]
    assert "s3cr3t" not in " ".join(v.message for v in result.violations)


def test_broken_rcg_chain_fails(monkeypatch):
    network = components.azure_firewall.network
    original = network.FirewallPolicyRuleCollectionGroup

    def unchained(name, opts=None, **kwargs):
        return original(name, opts=components.azure_firewall.pulumi.ResourceOptions(parent=opts.parent, provider=opts.provider, protect=opts.protect), **kwargs)

    monkeypatch.setattr(network, "FirewallPolicyRuleCollectionGroup", unchained)
    result = preview(open_project(ROOT), "dev")
    assert _mandatory(result) == [("azure-rcg-writes-chained", "azure-native:network:FirewallPolicyRuleCollectionGroup 'egress-kkp'"),
                                  ("azure-rcg-writes-chained", "azure-native:network:FirewallPolicyRuleCollectionGroup 'egress-openshift'")]


def test_security_group_over_the_accounts_quota_fails_the_cli(run_cli, tmp_path):
    config = tmp_path / "pack.json"
    config.write_text(json.dumps({"aws-security-group-quotas": {"rulesPerFamily": 1}}))
    code, out, err = run_cli("preview", "--stack", "kkp-aws", "--out", str(tmp_path / "out"), "--policy-pack-config", str(config))
    assert code == 1
    assert ("[mandatory] aws-security-group-quotas: aws:ec2/securityGroup:SecurityGroup 'egress-kkp-eu-west-1-nodes-0': "
            "egress-kkp-eu-west-1-nodes-0: 2 IPv4 egress rules, over the 1 a security group may have") in out

