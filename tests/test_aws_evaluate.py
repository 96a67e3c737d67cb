"""The AWS evaluator: rendered artefacts judged with the engine's semantics (strict order, first match, default drop),
round trips on real stacks, and the near misses it must catch."""
from __future__ import annotations

import json

import pytest

from egress.models import Requirement
from egress.targets import TARGETS
from egress.targets.aws.evaluate import evaluate
from egress.targets.aws.rules import parse_rule

import aws_stacks

SPEC = TARGETS["aws"]
NODES = "10.0.0.0/16"


def compiled(name: str, form: str, **overrides):
    catalog, profile, reqs = aws_stacks.stack(name, aws_network_firewall_rules=form, **overrides)
    plan = SPEC.compile(catalog, profile, reqs, name)
    return plan, SPEC.render(plan), SPEC.enforced(catalog, profile, reqs)


CASES = [("dev", {"aws_roles": ("nodes", "seed"), "aws_platforms": ("kkp", "openshift")}), ("kkp", {})]


@pytest.mark.parametrize("form", ["domain-list", "suricata"])
@pytest.mark.parametrize("stack,overrides", CASES, ids=[c[0] for c in CASES])
def test_rendered_artefacts_allow_every_requirement_and_exactly_what_the_form_promises(stack, overrides, form):
    plan, files, enforced = compiled(stack, form, **overrides)
    verdict = evaluate(files, enforced)
    assert verdict.missing == ()
    widened = {(b.role, b.target_type, b.target): b.allows for b in plan.broadening if b.allows}
    if form == "suricata":
        assert verdict.extra == () and widened == {}
    else:  # the domain lists allow the requirements plus exactly the broadening the plan lists, one line per target
        assert len(verdict.extra) == len(widened) > 0
        for (role, target_type, target), allows in widened.items():
            buffer = "tls.sni" if target_type == "TLS_SNI" else "http.host"
            assert sum(line.startswith(f"egress-{plan.cluster}-{role}-") and f"({buffer} {target}): allows {allows}" in line
                       for line in verdict.extra) == 1, (role, target, allows)
    rules = [line for line in files["aws/rules.suricata"].splitlines() if line and not line.startswith("#")]
    assert verdict.rules_checked == len(rules) + sum(len(g.rules) for g in plan.security_groups)


def req(destination: str, kind: str, protocol: str, ports=(443,), sources=(NODES,)) -> Requirement:
    return aws_stacks.req(destination, kind, protocol, ports, sources=sources)


def sg(*rules: tuple[str, int, int, str], role: str = "nodes") -> str:
    permissions = [{"IpProtocol": proto, "FromPort": low, "ToPort": high, "IpRanges": [{"CidrIp": cidr, "Description": "d"}]}
                   for proto, low, high, cidr in rules]
    return json.dumps({"SecurityGroups": [{"GroupName": "g", "Role": role, "IpPermissionsEgress": permissions}]})


PATH_443 = sg(("tcp", 443, 443, "0.0.0.0/0"))


def artefacts(*rules: str, security_groups: str = PATH_443, policy: dict | None = None) -> dict[str, str]:
    files = {"aws/rules.suricata": "# grp (priority 100, suricata, capacity 9)\n" + "".join(
        f"{text} sid:{1000 + i}; rev:1;)\n" for i, text in enumerate(rules)), "aws/security-groups.json": security_groups}
    if policy is not None:
        files["aws/firewall-policy.json"] = json.dumps({"FirewallPolicy": policy})
    return files


EXACT = f'pass tls {NODES} any -> any 443 (tls.sni; content:"mcr.microsoft.com"; startswith; nocase; endswith; msg:"kkp-core-https mcr.microsoft.com"; flow:to_server;'
MCR = req("mcr.microsoft.com", "fqdn", "https")


def test_an_exact_rule_allows_its_host_and_nothing_else():
    verdict = evaluate(artefacts(EXACT), [MCR])
    assert (verdict.missing, verdict.extra) == ((), ())
    assert "default action aws:drop_established" in verdict.assumed[0]


def test_a_suffix_without_startswith_is_reported_as_opening_look_alikes():
    rule = EXACT.replace(" startswith;", "")
    verdict = evaluate(artefacts(rule), [MCR])
    assert verdict.missing == ()
    assert verdict.extra == ("grp sid 1000 (kkp-core-https mcr.microsoft.com) (tls.sni mcr.microsoft.com): allows every name ending with "
                             "'mcr.microsoft.com'",)


def test_a_port_the_rule_lacks_is_missing_and_the_default_drop_is_named():
    verdict = evaluate(artefacts(EXACT, security_groups=sg(("tcp", 443, 443, "0.0.0.0/0"), ("tcp", 6443, 6443, "0.0.0.0/0"))),
                       [req("mcr.microsoft.com", "fqdn", "https", (443, 6443))])
    assert verdict.missing == ("nodes -> mcr.microsoft.com https/443,6443 (entries: kkp-crictl): tls/6443 to mcr.microsoft.com: no rule passes "
                               "it (the policy's default action aws:drop_established)",)


def test_first_match_wins_a_drop_before_the_pass_denies():
    drop = f'drop tls {NODES} any -> any any (ssl_state:client_hello; msg:"drop all tls"; flow:to_server;'
    assert evaluate(artefacts(drop, EXACT), [MCR]).missing == (
        "nodes -> mcr.microsoft.com https/443 (entries: kkp-crictl): tls/443 to mcr.microsoft.com: denied by grp sid 1000 (drop all tls)",)
    assert evaluate(artefacts(EXACT, drop), [MCR]).missing == ()


def test_a_wildcard_needs_a_subdomain_rule_and_an_exact_rule_does_not_cover_it():
    wildcard = req("*.data.mcr.microsoft.com", "wildcard", "https")
    assert evaluate(artefacts(EXACT.replace('"mcr.microsoft.com"', '"data.mcr.microsoft.com"')), [wildcard]).missing
    subdomains = f'pass tls {NODES} any -> any 443 (tls.sni; content:".data.mcr.microsoft.com"; nocase; endswith; msg:"w"; flow:to_server;'
    verdict = evaluate(artefacts(subdomains), [wildcard])
    assert (verdict.missing, verdict.extra) == ((), ())
    dotprefix = subdomains.replace("tls.sni;", "tls.sni; dotprefix;")
    assert evaluate(artefacts(dotprefix), [wildcard]).extra == (
        "grp sid 1000 (w) (tls.sni .data.mcr.microsoft.com): allows the apex data.mcr.microsoft.com",)


def test_sources_outside_the_rule_are_not_allowed():
    other = req("mcr.microsoft.com", "fqdn", "https", sources=("10.9.0.0/16",))
    assert "no rule passes it" in evaluate(artefacts(EXACT), [other]).missing[0]


def test_security_groups_must_let_the_flow_out():
    verdict = evaluate(artefacts(EXACT, security_groups=sg(("tcp", 443, 443, "13.107.0.0/16"))), [MCR])
    assert verdict.missing == ("nodes -> mcr.microsoft.com https/443 (entries: kkp-crictl): no security-group egress rule of role nodes "
                               "allows tls/443 to mcr.microsoft.com",)
    assert verdict.extra == ("security group g: tcp/443 to 13.107.0.0/16 (d): no requirement of role nodes goes through it",)


def test_address_rules_need_both_layers_and_report_what_nobody_asks_for():
    ntp = req("203.0.113.0/24", "cidr", "udp", (123,))
    rule = f'pass udp {NODES} any -> [203.0.113.0/24,198.51.100.7] 123 (msg:"kkp-core-udp-123"; flow:to_server;'
    verdict = evaluate(artefacts(rule, security_groups=sg(("udp", 123, 123, "203.0.113.0/24"))), [ntp])
    assert verdict.missing == ()
    assert verdict.extra == ("grp sid 1000 (kkp-core-udp-123): allows udp/123 to 198.51.100.7/32, which no requirement asks for",)


def test_tls_to_an_address_is_stopped_by_a_domain_lists_catch_all_placed_first():
    api = req("198.51.100.10", "ip", "https")
    catch_all = f'drop tls {NODES} any -> $EXTERNAL_NET any (ssl_state:client_hello; msg:"not matching any TLS allowlisted FQDNs"; flow:to_server, established;'
    address = f'pass tcp {NODES} any -> 198.51.100.10 443 (msg:"api"; flow:to_server;'
    assert evaluate(artefacts(address, catch_all), [api]).missing == ()
    assert "denied by grp sid 1000" in evaluate(artefacts(catch_all, address), [api]).missing[0]


def test_a_policy_whose_defaults_do_not_drop_opens_everything():
    verdict = evaluate(artefacts(EXACT, policy={"StatefulDefaultActions": ["aws:alert_established"]}), [MCR])
    assert verdict.extra == ("the firewall policy's default actions ['aws:alert_established'] pass every flow no rule drops",)
    assert evaluate(artefacts(EXACT, policy={"StatefulDefaultActions": ["aws:drop_established"]}), [MCR]).assumed == ()


def test_rules_it_cannot_judge_allow_nothing_and_are_said():
    opaque = EXACT.replace("flow:to_server;", 'flow:to_server; dataset:isset,hosts,type string;')
    verdict = evaluate(artefacts(opaque), [MCR])
    assert "no rule passes it" in verdict.missing[0]
    assert verdict.assumed[0] == ("grp sid 1000 (kkp-core-https mcr.microsoft.com) is not judged (keyword 'dataset'): as a pass it allows "
                                  "nothing here, as a drop it stops all it could")


def test_without_a_firewall_the_security_groups_path_for_names_is_extra():
    verdict = evaluate({"aws/security-groups.json": PATH_443}, [MCR])
    assert verdict.missing == ()
    assert verdict.extra == ("security group g: tcp/443 to 0.0.0.0/0: every host on these ports, with no Network Firewall behind it to "
                             "filter by name",)


@pytest.mark.parametrize("text,name,matches", [
    ('tls.sni; content:"mcr.microsoft.com"; startswith; nocase; endswith;', "MCR.microsoft.com", True),
    ('tls.sni; content:"mcr.microsoft.com"; startswith; endswith;', "MCR.microsoft.com", False),
    ('tls.sni; content:"mcr.microsoft.com"; startswith; nocase; endswith;', "xmcr.microsoft.com", False),
    ('tls.sni; content:"mcr.microsoft.com"; startswith; nocase; endswith;', "mcr.microsoft.com.evil.test", False),
    ('tls.sni; dotprefix; content:".mcr.microsoft.com"; nocase; endswith;', "mcr.microsoft.com", True),
    ('tls.sni; content:".mcr.microsoft.com"; nocase; endswith;', "mcr.microsoft.com", False),
    ('tls.sni; content:".mcr.microsoft.com"; nocase; endswith;', "a.b.mcr.microsoft.com", True),
])
def test_name_matching_follows_suricata(text, name, matches):
    rule = parse_rule(f'pass tls any any -> any any ({text} sid:1; rev:1;)')
    assert rule.names[0].matches(name) is matches
