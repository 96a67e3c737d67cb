"""egress diff shows old -> new values (issue 22, item 6): scalars inline, lists as items added and removed, long values
shortened, PEM as certificates, secrets never; OpenShift's resulting status.noProxy; no "kubernetes 0/0" for a stack
whose cluster uses a corporate proxy; a JSON form."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from egress_preview.diff import compare, markdown
from egress_preview.diff_json import diff_json
from egress_preview.diff_values import SHOWN, changes, code, field_lines, shorten

from project_tree import git_repository
from test_pem_block import ca_pem

PROXY = "kubernetes:config.openshift.io/v1:ProxyPatch"
PASSWORD = "s3cr3t-Pa55"


def snap(resources, outputs=None, **extra) -> dict:
    return {"stack": "openshift", "cluster": "ocp", "allowFirewallReplacement": False, "requirements": [], "violations": [],
            "coverage": [], "resources": resources, "outputs": outputs or {}, **extra}


def proxy(no_proxy: str, **spec) -> dict:
    return {"type": PROXY, "name": "cluster-proxy-proxy-cluster", "urn": "u",
            "props": {"apiVersion": "config.openshift.io/v1", "kind": "Proxy", "metadata": {"name": "cluster"},
                      "spec": {"httpProxy": "http://proxy.corp.example.com:3128", "noProxy": no_proxy, **spec}}}


def resource_lines(text: str) -> list[str]:
    return [line.strip()[3:-1] for line in text.split("#### Resources")[1].split("####")[0].splitlines() if line.startswith("  - `")]


def test_a_no_proxy_change_shows_its_entries_and_the_operators_resulting_status():
    base = snap([proxy(".corp.example.com,vcenter.example.com")], {"openshiftStatusNoProxy": ".cluster.local,.corp.example.com,.svc,vcenter.example.com"})
    head = snap([proxy(".corp.example.com,.internal.example.com")],
                {"openshiftStatusNoProxy": ".cluster.local,.corp.example.com,.internal.example.com,.svc"})
    lines = resource_lines(markdown("openshift", "main", compare(base, head)))
    assert lines == ["~ spec.noProxy: +.internal.example.com; -vcenter.example.com",
                     "~ status.noProxy (the operator computes it from spec.noProxy and the cluster's networks): "
                     "+.internal.example.com; -vcenter.example.com"]


def test_an_entry_the_operator_already_adds_changes_no_status():
    status = {"openshiftStatusNoProxy": ".cluster.local,.svc,10.0.0.0/16"}
    lines = resource_lines(markdown("openshift", "main", compare(snap([proxy("")], status), snap([proxy(".svc")], status))))
    assert lines[0] == "~ spec.noProxy: +.svc"
    assert lines[1].startswith("= status.noProxy (") and lines[1].endswith("unchanged, every entry added or removed is already implied")


def test_a_network_change_shows_the_status_the_operator_writes_though_the_proxy_is_unchanged():
    base = snap([proxy("")], {"openshiftStatusNoProxy": ".svc,10.0.0.0/16"})
    head = snap([proxy("")], {"openshiftStatusNoProxy": ".svc,10.0.0.0/16,10.1.0.0/16"})
    text = markdown("openshift", "main", compare(base, head))
    section = text.split("#### What the platform computes")[1]
    assert "`~ status.noProxy (the operator computes it from spec.noProxy and the cluster's networks): +10.1.0.0/16`" in section


def test_scalars_inline_lists_as_items_named_lists_by_name_long_values_shortened():
    old = {"spec": {"replicas": 2, "ports": [443, 80], "description": "x" * 300,
                    "containers": [{"name": "squid", "image": "squid:6.1", "args": ["-N"]}, {"name": "side", "image": "a"}]}}
    new = {"spec": {"replicas": 3, "ports": [443, 8443], "description": "x" * 299 + "y",
                    "containers": [{"name": "squid", "image": "squid:6.2", "args": ["-N"]}, {"name": "side", "image": "a"}]}}
    lines = field_lines(changes(old, new))
    assert lines[0] == '~ spec.containers[squid].image: "squid:6.1" -> "squid:6.2"'
    assert lines[1] == "~ spec.ports: +8443; -80"
    assert lines[2] == "~ spec.replicas: 2 -> 3"
    note = lines[3]  # a description is harmless: after every other field
    assert note.startswith('~ spec.description: "xxx') and "more)..." in note and note.endswith('xxy"') and len(note) < 2 * SHOWN + 50
    assert shorten("a" * 10) == "a" * 10


def test_secrets_never_appear():
    """A masked side shows the mask; a credential the base's code left unmasked is redacted all the same."""
    base = snap([proxy("", httpsProxy=f"http://alice:{PASSWORD}@proxy.corp.example.com:3128")])
    head = snap([proxy("", httpsProxy="[secret]")])
    result = compare(base, head)
    text = markdown("openshift", "main", result)
    assert "~ spec.httpsProxy: \"http://(credentials hidden)@proxy.corp.example.com:3128\" -> [secret]" in text
    both = compare(snap([proxy("", httpsProxy="[secret]")]), snap([proxy("", httpsProxy="[secret]")]))
    assert both["resources_changed"] == {}  # equal masks: nothing to show (the engine's own diff shows a secret as changed or not)
    assert PASSWORD not in text and PASSWORD not in json.dumps(diff_json("openshift", "main", result))


def test_a_ca_bundle_change_shows_certificates_not_text_and_never_a_key():
    key = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n"
    cm = {"type": "kubernetes:core/v1:ConfigMapPatch", "name": "cluster-proxy-configmap-openshift-config-user-ca-bundle", "urn": "c"}
    old = {**cm, "props": {"data": {"ca-bundle.crt": ca_pem("Corp Proxy CA")}}}
    new = {**cm, "props": {"data": {"ca-bundle.crt": ca_pem("Corp Proxy CA") + ca_pem("Corp Root CA") + key}}}
    text = markdown("openshift", "main", compare(snap([old]), snap([new])))
    [line] = resource_lines(text)
    assert re.fullmatch(r"~ data\.ca-bundle\.crt: \+CN=Corp Root CA, sha256 [0-9a-f]{16}, "
                        r"1 PEM block\(s\) that are not certificates, not shown", line), line
    assert "MIGHAgEA" not in text and "BEGIN" not in text and "MII" not in text


def test_a_value_holding_backticks_stays_one_code_span():
    assert code("a `b` c") == "``a `b` c``"
    assert code("`x") == "`` `x ``"


def test_kubernetes_0_of_0_is_not_printed_for_a_corporate_proxy_stack():
    lines = ["path through the corporate proxy not verified offline (OpenShift cluster Proxy -> http://proxy.corp.example.com:3128)",
             "  23 requirement path(s) of nodes must traverse it: its allowlist is egress export --for proxy"]
    coverage = [{"target": "kubernetes", "enforced": 0, "allowed": 0, "extra": 0, "rules_checked": 0}]
    text = markdown("openshift", "main", compare(snap([], coverage=coverage), snap([], coverage=coverage, corporateProxy=lines)))
    assert "0/0" not in text
    assert "- kubernetes: path through the corporate proxy not verified offline (OpenShift cluster Proxy -> " in text
    assert "  - 23 requirement path(s) of nodes must traverse it" in text


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    return git_repository(tmp_path_factory.mktemp("repo"))


def test_egress_diff_of_the_openshift_stack_end_to_end(repo, run_cli):
    """The real previews: the snapshot carries what preview cannot verify, the Markdown shows values and the status, and
    --format json carries the same."""
    stack_file = repo / "stacks" / "Pulumi.openshift.yaml"
    original = stack_file.read_text()
    stack_file.write_text(original.replace("noProxy: [.corp.example.com,", "noProxy: [.corp.example.com, .internal.example.com,"))
    try:
        code_md, out, err = run_cli("diff", "--base", "HEAD", "--stack", "openshift", "--project", str(repo))
        code_json, out_json, err_json = run_cli("diff", "--base", "HEAD", "--stack", "openshift", "--project", str(repo), "--format", "json")
    finally:
        stack_file.write_text(original)
    assert code_md == 0 and code_json == 0, err + err_json
    assert "  - `~ spec.noProxy: +.internal.example.com`" in out
    assert "  - `~ status.noProxy (the operator computes it from spec.noProxy and the cluster's networks): +.internal.example.com`" in out
    assert "kubernetes 0/0" not in out and "- kubernetes: path through the corporate proxy not verified offline" in out
    document = json.loads(out_json)
    [changed] = document["resources"]["changed"]
    assert changed["fields"] == [{"path": "spec.noProxy", "change": "items", "added": [".internal.example.com"], "removed": []}]
    assert document["operator"]["statusNoProxy"]["added"] == [".internal.example.com"]
    assert document["notVerifiedOffline"][0].startswith("path through the corporate proxy not verified offline")
    assert document["summary"]["resourcesChanged"] == 1 and document["summary"]["blocking"] == 0


def test_the_json_form_carries_dangers_and_replacements():
    group = {"type": "aws:networkfirewall/ruleGroup:RuleGroup", "name": "egress-ocp-nodes-rules", "urn": "g", "protect": True,
             "props": {"capacity": 100, "ruleGroup": {}}}
    bigger = {**group, "props": {"capacity": 200, "ruleGroup": {}}}
    document = json.loads(json.dumps(diff_json("kkp-aws", "main", compare(snap([group]), snap([bigger])))))
    [changed] = document["resources"]["changed"]
    assert changed["replacement"] == ["capacity: 100 -> 200"]
    assert changed["fields"] == [{"path": "capacity", "change": "value", "old": "100", "new": "200"}]
    [danger] = document["dangers"]
    assert danger["kind"] == "replace" and danger["blocks"] is True and danger["message"].startswith("replaces the Network Firewall rule group")
    assert document["summary"]["replaced"] == 1 and document["summary"]["blocking"] == 1


def test_multi_line_text_shows_the_lines_added_and_removed_even_when_long():
    old = "\n".join(f"acl a{i} dstdomain h{i}.example.com" for i in range(20_000))
    [change] = changes({"data": {"squid.conf": old}}, {"data": {"squid.conf": old.replace("acl a7 ", "acl b7 ") + "\nacl z dstdomain z.example.com"}})
    assert change.line() == "~ data.squid.conf: +acl b7 dstdomain h7.example.com, acl z dstdomain z.example.com; -acl a7 dstdomain h7.example.com"
