"""egress diff hides no new order of rules and ranks unknown fields dangerous (second review of issue 22): the rules
both sides have are compared in order whatever else was added, removed or edited (squid's http_access lines, a
STRICT_ORDER Suricata group, squid's ssl_bump lines), named as moved, listed with the dangers and in JSON; past the
30-field limit every field but the known harmless ones comes first; a rule name twice is each copy compared."""
from __future__ import annotations

import copy

from egress_preview.diff import compare, markdown, resource_changes
from egress_preview.diff_delta import dangerous_path
from egress_preview.diff_json import diff_json
from egress_preview.diff_values import FIELDS

NFW = "aws:networkfirewall/ruleGroup:RuleGroup"
RCG = "azure-native:network:FirewallPolicyRuleCollectionGroup"
OLD = ("acl allow_nodes dstdomain .mcr.microsoft.com\nacl blocked dstdomain .evil.example\nhttp_access deny blocked\n"
       "http_access allow allow_nodes\nhttp_access deny all")


def squid(conf: str) -> dict:
    return {"type": "kubernetes:core/v1:ConfigMap", "name": "squid", "urn": "s", "props": {"data": {"squid.conf": conf}}}


def group(rules: str, order: str = "STRICT_ORDER") -> dict:
    return {"type": NFW, "name": "g", "urn": "g", "props": {"ruleGroup": {"rulesSource": {"rulesString": rules},
                                                                          "statefulRuleOptions": {"ruleOrder": order}}}}


def snap(resources: list) -> dict:
    return {"stack": "s", "cluster": "c", "allowFirewallReplacement": False, "requirements": [], "violations": [], "coverage": [],
            "resources": resources, "outputs": {}}


def test_a_swap_of_access_lines_with_an_acl_edit_is_shown():
    new = OLD.replace(".mcr.microsoft.com\n", ".mcr.microsoft.com .good.example\n", 1).replace(
        "http_access deny blocked\nhttp_access allow allow_nodes", "http_access allow allow_nodes\nhttp_access deny blocked")
    lines, _ = resource_changes(squid(OLD), squid(new))
    assert lines[0].startswith("~ order of http_access lines (the first match decides): http_access allow allow_nodes now before "
                               "http_access deny blocked")
    assert lines[1] == "~ acl allow_nodes dstdomain: +.good.example"


def test_deny_all_moved_to_the_top_with_a_new_acl_is_shown():
    new = ("acl allow_nodes dstdomain .mcr.microsoft.com\nacl blocked dstdomain .evil.example\nacl x dstdomain .x.example\n"
           "http_access deny all\nhttp_access deny blocked\nhttp_access allow allow_nodes")
    lines, _ = resource_changes(squid(OLD), squid(new))
    assert "http_access deny all now before http_access deny blocked" in lines[0] and lines[1] == "+ acl x dstdomain .x.example"


def test_a_tab_separated_access_line_is_an_access_line():
    lines, _ = resource_changes(squid(OLD), squid(OLD.replace("http_access deny blocked", "http_access\tallow all")))
    assert lines == ["+ http_access\tallow all", "- http_access deny blocked"]


def test_a_strict_order_drop_moved_ahead_with_a_new_rule_is_shown_dangerous_in_markdown_and_json():
    old = ('pass tls $HOME_NET any -> any 443 (tls.sni; content:"a.example"; sid:1;)\ndrop tls $HOME_NET any -> any any (msg:"deny"; sid:2;)\n'
           'pass tls $HOME_NET any -> any 443 (tls.sni; content:"b.example"; sid:3;)')
    lines = old.splitlines()
    new = "\n".join([lines[1], lines[0], lines[2], 'pass tls $HOME_NET any -> any 443 (tls.sni; content:"c.example"; sid:4;)'])
    found, _ = resource_changes(group(old), group(new))
    assert found == ["~ rule order (STRICT_ORDER: the first match decides): sid 2 now before sid 1 (first difference at position 1 "
                     "among those both sides have: was sid 1, is sid 2)", "+ sid 4"]
    result = compare(snap([group(old)]), snap([group(new)]))
    text = markdown("s", "main", result)
    assert "#### :warning: Rules in a new order" in text and text.index("Rules in a new order") < text.index("#### Resources")
    [order] = diff_json("s", "main", result)["ruleOrder"]
    assert order["dangerous"] is True and order["moved"] == [{"rule": "sid 2", "now": "before sid 1"}] and order["name"] == "g"
    # in action order the action decides first: said, not ranked dangerous
    result = compare(snap([group(old, "DEFAULT_ACTION_ORDER")]), snap([group(new, "DEFAULT_ACTION_ORDER")]))
    assert diff_json("s", "main", result)["ruleOrder"][0]["dangerous"] is False
    assert "Rules in a new order" not in markdown("s", "main", result)


def test_other_squid_lines_say_which_moved_even_with_additions():
    old = "ssl_bump peek step1\nssl_bump splice allowed\nssl_bump terminate all\nvisible_hostname a"
    new = "ssl_bump terminate all\nssl_bump peek step1\nssl_bump splice allowed\nvisible_hostname b"
    result = compare(snap([squid(old)]), snap([squid(new)]))
    [change] = result["fields_changed"][("kubernetes:core/v1:ConfigMap", "squid")]
    assert change.line() == ("~ data.squid.conf: +visible_hostname b; -visible_hostname a; "
                             "moved: ssl_bump terminate all now before ssl_bump peek step1")
    assert change.json()["moved"] == ["ssl_bump terminate all now before ssl_bump peek step1"]
    assert "Rules in a new order" in markdown("s", "main", result)


def test_past_the_field_limit_widening_fields_come_before_labels_and_tags():
    np_old = {"type": "kubernetes:networking.k8s.io/v1:NetworkPolicy", "name": "np", "props": {
        "metadata": {"name": "np", "labels": {f"l{i}": "a" for i in range(35)}},
        "spec": {"podSelector": {"matchLabels": {"app": "x"}}, "policyTypes": ["Egress"], "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/16"}}]}]}}}
    np_new = copy.deepcopy(np_old)
    np_new["props"]["metadata"]["labels"] = {f"l{i}": "b" for i in range(35)}
    np_new["props"]["spec"].update(podSelector={}, policyTypes=["Ingress"])
    np_new["props"]["spec"]["egress"][0]["to"][0]["ipBlock"]["cidr"] = "0.0.0.0/0"
    lines, _ = resource_changes(np_old, np_new)
    assert lines[:3] == ['~ spec.egress[0].to[0].ipBlock.cidr: "10.0.0.0/16" -> "0.0.0.0/0"', '- spec.podSelector.matchLabels.app: "x"',
                         "~ spec.policyTypes: +Ingress; -Egress"]
    assert len(lines) == FIELDS + 1 and not any(line.startswith("~ metadata.labels.l34") for line in lines)
    pol_old = {"type": "azure-native:network:FirewallPolicy", "name": "p", "props": {
        "threatIntelMode": "Deny", "intrusionDetection": {"mode": "Deny"}, "basePolicy": {"id": "/a"}, "tags": {f"t{i}": "a" for i in range(40)}}}
    pol_new = copy.deepcopy(pol_old)
    pol_new["props"].update(threatIntelMode="Off", intrusionDetection={"mode": "Off"}, basePolicy={"id": "/evil"},
                            tags={f"t{i}": "b" for i in range(40)})
    lines, _ = resource_changes(pol_old, pol_new)
    assert lines[:3] == ['~ basePolicy.id: "/a" -> "/evil"', '~ intrusionDetection.mode: "Deny" -> "Off"', '~ threatIntelMode: "Deny" -> "Off"']


def test_the_harmless_allowlist():
    for path in ("egress[0].cidrIpv4", "cidrBlocks", "ruleGroup.statefulRuleOptions.ruleOrder", "spec.podSelector.matchLabels.description",
                 "spec.template.metadata.labels.app", "metadata.name", "ruleCollections[tags].action.type"):
        assert dangerous_path(path), path
    for path in ("tags.owner", "tagsAll.owner", "description", "egress[0].description", "ruleCollections[a].rules[b].description",
                 "metadata.labels.app", "metadata.annotations.note"):
        assert not dangerous_path(path), path
    assert dangerous_path("metadata.labels.team", "kubernetes:core/v1:Namespace")
    assert dangerous_path("metadata.annotations.service.beta.kubernetes.io/azure-load-balancer-internal", "kubernetes:core/v1:Service")


def test_a_second_copy_of_a_sid_or_an_azure_rule_name_is_compared():
    rule = 'pass tls $HOME_NET any -> any 443 (tls.sni; content:"a.example"; sid:1;)'
    wide = rule.replace("any 443", "any any")
    lines, _ = resource_changes(group(f"{rule}\n{rule}"), group(f"{rule}\n{wide}"))
    assert lines == ["~ sid 1 (copy 2) (443 -> any)"]

    def rcg(second_hosts):
        return {"type": RCG, "name": "r", "props": {"ruleCollections": [{"name": "c", "rules": [
            {"name": "web", "targetFqdns": ["a.example"]}, {"name": "web", "targetFqdns": second_hosts}]}]}}
    lines, _ = resource_changes(rcg(["b.example"]), rcg(["b.example", "evil.example"]))
    assert lines == ["~ c/web (copy 2) (+evil.example)"]
    lines, _ = resource_changes(rcg(["b.example"]), {"type": RCG, "name": "r", "props": {"ruleCollections": [
        {"name": "c", "rules": [{"name": "web", "targetFqdns": ["a.example"]}]}]}})
    assert lines == ["- c/web (copy 2)"]


def test_a_reversed_squid_conf_of_forty_thousand_lines_is_ordered_in_linear_log_time():
    import time

    lines = [f"http_access allow a{i}" for i in range(20_000)] + [f"ssl_bump splice s{i}" for i in range(20_000)]
    started = time.perf_counter()
    found, _ = resource_changes(squid("\n".join(lines)), squid("\n".join(reversed(lines))))
    assert time.perf_counter() - started < 5  # 0.3 s here; a search per moved line took minutes
    assert found[0].startswith("~ order of http_access lines") and "19987 more moved" in found[0]
    assert "moved: ssl_bump splice s19999 now before ssl_bump splice s0" in found[1]
