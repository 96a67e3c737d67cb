"""egress diff hides no change to a firewall resource (review of issue 22, items 1 and 2): every changed path not shown
as a rule line appears as old -> new or as items added and removed, compared on the raw values (shortened only when
printed, never in JSON), a long squid line as its word-level delta, duplicates counted, and the dangerous fields first
when the per-resource limits cut the Markdown."""
from __future__ import annotations

import copy
import json

from egress_preview.diff import compare, markdown, resource_changes
from egress_preview.diff_json import diff_json
from egress_preview.diff_values import FIELDS, ITEMS, changes, field_lines

RCG = "azure-native:network:FirewallPolicyRuleCollectionGroup"
NFW = "aws:networkfirewall/ruleGroup:RuleGroup"
DOMAINS = " ".join(f".host{i}.mcr.microsoft.com" for i in range(12))


def snap(resources) -> dict:
    return {"stack": "s", "cluster": "c", "allowFirewallReplacement": False, "requirements": [], "violations": [], "coverage": [],
            "resources": resources, "outputs": {}}


def rcg() -> dict:
    return {"type": RCG, "name": "egress-dev-aks", "urn": "u", "props": {"ruleCollectionGroupName": "egress-dev-aks", "priority": 1000, "ruleCollections": [
        {"name": "aks-network", "priority": 100, "action": {"type": "Allow"}, "ruleCollectionType": "FirewallPolicyFilterRuleCollection",
         "rules": [{"name": "ntp", "ruleType": "NetworkRule", "sourceAddresses": ["10.0.0.0/16"], "destinationPorts": ["123"],
                    "ipProtocols": ["UDP"], "destinationFqdns": ["ntp.ubuntu.com"]}]},
        {"name": "deny-rest", "priority": 4000, "action": {"type": "Deny"}, "ruleCollectionType": "FirewallPolicyFilterRuleCollection",
         "rules": [{"name": "any", "ruleType": "NetworkRule", "sourceAddresses": ["10.0.0.0/16"], "destinationPorts": ["*"],
                    "ipProtocols": ["Any"], "destinationAddresses": ["*"]}]}]}}


def nfw() -> dict:
    return {"type": NFW, "name": "egress-dev-nodes-tls-sni", "urn": "g", "props": {"capacity": 100, "type": "STATEFUL", "ruleGroup": {
        "ruleVariables": {"ipSets": [{"key": "HOME_NET", "ipSet": {"definitions": ["10.0.0.0/16"]}}]},
        "rulesSource": {"rulesSourceList": {"generatedRulesType": "ALLOWLIST", "targetTypes": ["TLS_SNI"], "targets": [".example.com"]}}}}}


def squid(conf: str) -> dict:
    return {"type": "kubernetes:core/v1:ConfigMap", "name": "egress-proxy-config", "urn": "k", "props": {"data": {"squid.conf": conf}}}


CONF = (f"acl allow_nodes dstdomain {DOMAINS}\nhttp_access allow allow_nodes\nhttp_access deny all\n"
        "http_port 3128\n")


def test_an_aws_rule_groups_type_and_home_net_are_shown():
    old, new = nfw(), nfw()
    new["props"]["ruleGroup"]["rulesSource"]["rulesSourceList"]["generatedRulesType"] = "DENYLIST"
    new["props"]["ruleGroup"]["ruleVariables"]["ipSets"][0]["ipSet"]["definitions"] = ["0.0.0.0/0"]
    lines, _ = resource_changes(old, new)
    assert lines == ["~ ruleGroup.ruleVariables.ipSets[HOME_NET].ipSet.definitions: +0.0.0.0/0; -10.0.0.0/16",
                     '~ ruleGroup.rulesSource.rulesSourceList.generatedRulesType: "ALLOWLIST" -> "DENYLIST"']


def test_a_squid_cache_peer_and_never_direct_are_shown():
    old, new = squid(CONF), squid(CONF + "cache_peer proxy.evil.example parent 3128 0 no-query default\nnever_direct allow all\n")
    lines, _ = resource_changes(old, new)
    assert lines == ["~ data.squid.conf: +cache_peer proxy.evil.example parent 3128 0 no-query default, never_direct allow all"]


def test_a_collections_action_is_shown_in_markdown_and_json():
    old, new = rcg(), rcg()
    new["props"]["ruleCollections"][1]["action"]["type"] = "Allow"
    result = compare(snap([old]), snap([new]))
    text = markdown("dev", "main", result)
    assert '  - `~ ruleCollections[deny-rest].action.type: "Deny" -> "Allow"`' in text
    [changed] = diff_json("dev", "main", result)["resources"]["changed"]
    assert changed["fields"] == [{"path": "ruleCollections[deny-rest].action.type", "change": "value", "old": '"Deny"', "new": '"Allow"'}]


def test_a_rules_sources_and_ports_are_shown_beside_its_hosts():
    old, new = rcg(), rcg()
    rule = new["props"]["ruleCollections"][0]["rules"][0]
    rule.update(sourceAddresses=["*"], destinationPorts=["1-65535"], destinationFqdns=["ntp.ubuntu.com", "pool.ntp.org"])
    lines, _ = resource_changes(old, new)
    assert lines == ["~ aks-network/ntp (+pool.ntp.org)",
                     "~ ruleCollections[aks-network].rules[ntp].destinationPorts: +1-65535; -123",
                     "~ ruleCollections[aks-network].rules[ntp].sourceAddresses: +*; -10.0.0.0/16"]


def test_an_added_rules_sources_are_shown_and_a_removed_rule_only_once():
    old, new = rcg(), rcg()
    new["props"]["ruleCollections"][0]["rules"].append({"name": "dns", "ruleType": "NetworkRule", "sourceAddresses": ["*"],
                                                         "destinationPorts": ["53"], "ipProtocols": ["UDP"], "destinationAddresses": ["8.8.8.8"]})
    del new["props"]["ruleCollections"][1]["rules"][0]
    lines, _ = resource_changes(old, new)
    assert lines[:2] == ["+ aks-network/dns (1: 8.8.8.8)", "- deny-rest/any"]
    assert '+ ruleCollections[aks-network].rules[dns].sourceAddresses: ["*"]' in lines
    assert '+ ruleCollections[aks-network].rules[dns].destinationPorts: ["53"]' in lines
    assert not any("deny-rest" in line for line in lines[2:])


def test_long_items_differing_in_the_middle_are_not_the_same_items():
    long_a, long_b = "a" * 60 + "X" + "b" * 60, "a" * 60 + "Y" + "b" * 60
    [change] = changes({"x": [long_a]}, {"x": [long_b]})
    assert "new order" not in change.line() and "X -> Y" in change.line()
    assert change.json() == {"path": "x", "change": "items", "added": [long_b], "removed": [long_a]}


def test_a_long_acl_line_gaining_a_domain_shows_the_domain_and_json_keeps_the_lines_whole():
    old, new = squid(CONF), squid(CONF.replace(DOMAINS, DOMAINS + " .evil.example"))
    result = compare(snap([old]), snap([new]))
    lines, _ = result["resources_changed"][(old["type"], old["name"])]
    assert lines == ["~ acl allow_nodes dstdomain: +.evil.example"]
    [change] = changes(old["props"], new["props"])
    assert change.json()["added"] == [f"acl allow_nodes dstdomain {DOMAINS} .evil.example"]
    assert "+.evil.example" in change.line()
    document = diff_json("s", "main", result)
    assert "...(" not in json.dumps(document) and ".evil.example" in json.dumps(document)


def test_duplicates_count():
    [change] = changes({"x": ["x", "x", "y"]}, {"x": ["x", "y"]})
    assert change.line() == "~ x: -x"
    lines, _ = resource_changes(squid(CONF), squid(CONF + "http_access allow allow_nodes\n"))
    assert lines == ["+ http_access allow allow_nodes"]


def test_a_new_order_of_squid_access_lines_is_shown():
    swapped = CONF.replace("http_access allow allow_nodes\nhttp_access deny all\n", "http_access deny all\nhttp_access allow allow_nodes\n")
    lines, _ = resource_changes(squid(CONF), squid(swapped))
    assert lines and "order" in lines[0] and "http_access deny all" in lines[0]


def test_a_changed_suricata_rule_shows_its_words():
    rule = 'pass tls $HOME_NET any -> $EXTERNAL_NET 443 (tls.sni; content:"a.example.com"; endswith; sid:5; rev:1;)'
    wide = rule.replace("$EXTERNAL_NET 443", "any any")

    def group(text):
        return {"type": NFW, "name": "g", "urn": "g", "props": {"ruleGroup": {"rulesSource": {"rulesString": text}}}}
    lines, _ = resource_changes(group(rule), group(wide))
    assert lines == ["~ sid 5 ($EXTERNAL_NET 443 -> any any)"]


def test_the_limits_put_dangerous_fields_first_and_count_the_rest():
    old = {"tags": {f"label{i:02d}": "a" for i in range(FIELDS + 5)}, "zz": {"sourceAddresses": ["10.0.0.0/16"]}}
    new = {"tags": {f"label{i:02d}": "b" for i in range(FIELDS + 5)}, "zz": {"sourceAddresses": ["*"]}}
    lines = field_lines(changes(old, new))
    assert lines[0] == "~ zz.sourceAddresses: +*; -10.0.0.0/16"
    assert lines[-1].startswith("... 6 more changed field(s)") and len(lines) == FIELDS + 1
    conf_old = "\n".join(f"# comment {i}" for i in range(ITEMS + 3))
    conf_new = "\n".join(f"# other {i}" for i in range(ITEMS + 3)) + "\nnever_direct allow all"
    [change] = changes({"c": conf_old}, {"c": conf_new})
    assert change.line().startswith("~ c: +never_direct allow all, # other 0") and f"... {4} more" in change.line()
    assert len(change.json()["added"]) == ITEMS + 4


def test_a_change_only_redaction_hides_is_still_a_change_and_never_shows_the_secret():
    found = changes({"u": "http://alice:pw-one@proxy.example.com:3128", "l": ["http://alice:pw-one@h"]},
                    {"u": "http://alice:pw-two@proxy.example.com:3128", "l": ["http://alice:pw-two@h"]})
    lines = [c.line() for c in found]
    assert lines == ["~ l: +http://(credentials hidden)@h; -http://(credentials hidden)@h",
                     '~ u: "http://(credentials hidden)@proxy.example.com:3128": changed in a part not shown (redacted)']
    assert "pw-" not in json.dumps([c.json() for c in found])


def test_many_changed_acl_lines_pair_in_linear_time():
    import time
    old = "\n".join(f"acl a{i} dstdomain " + " ".join(f".h{j}.example.com" for j in range(20)) for i in range(20_000))
    started = time.monotonic()
    lines, _ = resource_changes(squid(old), squid(old.replace(".h7.example.com", ".h7.example.org")))
    assert time.monotonic() - started < 20  # was quadratic: minutes
    assert len(lines) == 20_000 and lines[0] == "~ acl a0 dstdomain: .h7.example.com -> .h7.example.org"
