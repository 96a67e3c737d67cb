"""egress diff pairs a rule that changes firewall resource by what it allows, wherever its sources go (issue 17 review,
third pass): a Network Firewall rule or an Azure flow leaving a role for a source group inside it is a move (it blocked
only when the rule's text, source variable and msg included, stayed the same); a flow another group keeps allowing
throughout, or an unrelated entry of sources outside the old role's to the same destination, is none. Each builds the
base and the head stack as tests/test_dangers_review17.py does."""
from __future__ import annotations

from egress_preview.diff import compare, markdown
from egress_preview.diff_json import diff_json
from test_dangers_review17 import OTHER, PIN, TARGETS, _snap, project  # noqa: F401 - the module's fixture

RULE_GROUP = "aws:networkfirewall/ruleGroup:RuleGroup"
RCG = "azure-native:network:FirewallPolicyRuleCollectionGroup"
FQDN = "    - {id: stripe, destination: api.stripe.com, purpose: card payments api, owner: team-payments, reference: SEC-1ROLE}\n"
PAYMENTS = "  egress-matrix:sourceGroups: {payments: [10.60.17.0/24]}\n"
TEAM = "teams/payments/payments.yaml"
PAGERDUTY = ("  - id: pagerduty-events\n    destination: events.eu.pagerduty.com\n    role: nodes\n    purpose: Alertmanager pages the on-call "
             "engineer\n    approval: {owner: sre-team, reference: \"https://tickets.contoso.example/OPS-2210\"}\n")


def _entries(*lines: str, groups: str = "") -> tuple[str, str]:
    return TARGETS, PIN + groups + "  egress-matrix:entries:\n" + "".join(lines) + TARGETS


def _team(project, extra: str) -> dict[str, str]:
    return {TEAM: (project / TEAM).read_text().rstrip("\n") + "\n" + extra}


def _stack_pagerduty(project) -> str:
    stack = (project / "stacks" / "Pulumi.aks-contoso.yaml").read_text()
    return stack[stack.index("    - id: pagerduty-events"):stack.index("  egress-matrix:targets:")]


def test_a_network_firewall_rule_moving_from_a_role_into_a_new_source_groups_rule_group_blocks(project):
    base = _snap(project, "kkp-aws", _entries(FQDN.replace("ROLE", "")))
    head = _snap(project, "kkp-aws", _entries(FQDN.replace("ROLE", ", role: payments"), groups=PAYMENTS))
    result = compare(base, head)
    (danger,) = [d for d in result["blocking"] if d.type == RULE_GROUP]
    assert (danger.kind, danger.name) == ("move", "egress-kkp-eu-west-1-groups-rules")
    assert danger.detail.startswith("1 rule(s) from egress-kkp-eu-west-1-nodes-rules: sid 11419070 -> 59559336 (api.stripe.com")
    (move,) = result["rule_group_moves"]
    assert (move.old, move.new) == ("egress-kkp-eu-west-1-nodes-rules", "egress-kkp-eu-west-1-groups-rules")
    text = markdown("kkp-aws", "main", result)
    # the rule the nodes' group loses was the nodes' (the base's entry), not the payments group's
    assert "`- sid 11419070`" in text and "- sid 11419070 (for group payments)" not in text
    assert "`+ sid 59559336 (for group payments)`" in text


def test_an_unrelated_entry_to_the_same_address_from_sources_outside_the_old_role_is_no_move(project):
    seed = "    - {id: x, destination: 198.51.100.9, protocol: tcp, ports: [9443], purpose: seed pushes backups, owner: team-a, reference: SEC-2, role: seed}\n"
    payments = seed.replace("id: x", "id: y").replace("role: seed", "role: payments").replace("seed pushes backups", "payments pushes reports")
    base = _snap(project, "kkp-aws", _entries(seed))
    result = compare(base, _snap(project, "kkp-aws", _entries(payments, groups=PAYMENTS)))
    # the seed's 10.61.0.0/16 does not hold the payments group's 10.60.17.0/24: a decommissioned entry, not a move
    assert result["rule_moves"] == [] and result["rule_group_moves"] == []
    assert [d for d in result["dangers"] if d.kind == "move"] == []


def test_an_azure_flow_moving_from_a_role_into_a_later_source_groups_group_blocks(project):
    base = _snap(project, "aks-contoso", OTHER)
    # the payments team file's default role is the payments source group (10.40.17.0/24, inside the nodes' 10.40.16.0/20)
    head = _snap(project, "aks-contoso", OTHER, (_stack_pagerduty(project), ""), files=_team(project, PAGERDUTY.replace("    role: nodes\n", "")))
    result = compare(base, head)
    (danger,) = [d for d in result["blocking"] if d.kind == "move"]
    assert (danger.type, danger.name) == (RCG, "egress-payments")
    assert "1 flow(s) from egress-stack, written before it" in danger.detail and "events.eu.pagerduty.com" in danger.detail


def test_an_azure_application_rule_becoming_a_later_groups_network_rule_to_the_same_port_blocks(project):
    dns = (TARGETS, "  egress-matrix:azureDnsProxy: true\n" + TARGETS)
    base = _snap(project, "aks-contoso", OTHER, dns)
    tcp = PAGERDUTY.replace("    role: nodes\n", "    role: nodes\n    protocol: tcp\n    ports: [443]\n")
    result = compare(base, _snap(project, "aks-contoso", OTHER, dns, (_stack_pagerduty(project), ""), files=_team(project, tcp)))
    (danger,) = [d for d in result["blocking"] if d.kind == "move"]
    assert danger.name == "egress-payments" and "events.eu.pagerduty.com" in danger.detail


def test_a_flow_another_group_keeps_allowing_throughout_is_no_move(project):
    zzz = ("schema: 1\nkind: platform\nplatform: zzz\nazure_band: 60\ntitle: Z team\ndefaults: {role: nodes, level: required, protocol: https}\n"
           "entries:\n" + PAGERDUTY.replace("    role: nodes\n", ""))
    base = _snap(project, "aks-contoso", OTHER, files=_team(project, PAGERDUTY))
    head = _snap(project, "aks-contoso", OTHER, (_stack_pagerduty(project), ""), files={**_team(project, PAGERDUTY), "teams/payments/zzz.yaml": zzz})
    # egress-stack (5000) loses it and egress-zzz (6000) gains it, but egress-payments (5200) allows it on both sides
    assert compare(base, head)["dangers"] == []


def test_the_priority_danger_says_the_safe_path_of_its_case(project):
    team = (project / TEAM).read_text()
    aaa = team.replace("platform: payments", "platform: aaa").replace("stripe-files", "aaa-files").replace("stripe-api", "aaa-api") \
        .replace(".stripe.com", ".aaa.example")

    def bands(first: int, second: int) -> dict[str, str]:
        return {"teams/payments/aaa.yaml": aaa.replace("platform: aaa\n", f"platform: aaa\nazure_band: {first}\n"),
                TEAM: team.replace("platform: payments\n", f"platform: payments\nazure_band: {second}\n")}
    # two existing groups swap bands: nothing is new
    swap = compare(_snap(project, "aks-contoso", files=bands(60, 61)), _snap(project, "aks-contoso", files=bands(61, 60)))
    (danger,) = [d for d in swap["blocking"] if d.kind == "priority"]
    assert "new catalog" not in danger.line() and "move one of them to an unused band first" in danger.line()
    # a team file renamed: the old group is deleted at the end of the update
    base = _snap(project, "aks-contoso")
    (project / TEAM).unlink()
    try:
        renamed = compare(base, _snap(project, "aks-contoso", files={"teams/payments/billing.yaml": team.replace("platform: payments", "platform: billing")}))
    finally:
        (project / TEAM).write_text(team)
    (danger,) = [d for d in renamed["blocking"] if d.kind == "priority"]
    assert danger.name == "egress-billing" and "egress-payments holds until it is deleted at the end of the update" in danger.detail
    assert "written later" not in danger.line() and "azure_band" in danger.line()


def test_json_carries_the_new_role_and_the_rule_group_moves(project):
    base = _snap(project, "kkp-aws", _entries(FQDN.replace("ROLE", "")))
    result = compare(base, _snap(project, "kkp-aws", _entries(FQDN.replace("ROLE", ", role: payments"), groups=PAYMENTS)))
    document = diff_json("kkp-aws", "main", result)
    assert document["ruleGroupMoves"] == [{"from": "egress-kkp-eu-west-1-nodes-rules", "to": "egress-kkp-eu-west-1-groups-rules",
                                           "rules": ["sid 11419070 -> 59559336 (api.stripe.com)"]}]
    stripe = "    - {id: stripe, destination: 198.51.100.7, protocol: tcp, ports: [8443], purpose: card payments, owner: team-payments, reference: SEC-1ROLE}\n"
    base = _snap(project, "kkp-aws", _entries(stripe.replace("ROLE", "")))
    result = compare(base, _snap(project, "kkp-aws", _entries(stripe.replace("ROLE", ", role: payments"), groups=PAYMENTS)))
    assert {"role": "nodes", "newRole": "payments", "rule": "tcp-8443-198.51.100.7_32", "from": "egress-kkp-eu-west-1-nodes-0",
            "to": "egress-kkp-eu-west-1-payments-0"} in diff_json("kkp-aws", "main", result)["ruleMoves"]


def test_pairing_by_sources_is_a_move_only_where_some_sources_lose_every_copy_meanwhile():
    from egress_preview.diff_moves import Held, pairs

    def held(place: str, *sources: str) -> Held:
        return Held(place, "api.example.com TCP:443", frozenset(sources), place)
    nodes, payments, seed = ("10.60.0.0/16",), ("10.60.17.0/24",), ("10.61.0.0/16",)
    moved = pairs([held("stack", *nodes)], [held("payments", *payments)])
    assert [(old.place, new.place) for old, new in moved] == [("stack", "payments")]
    assert pairs([held("stack", *seed)], [held("payments", *payments)]) == []  # sources apart: unrelated
    assert pairs([held("stack", *nodes), held("aks", *nodes)], [held("aks", *nodes), held("payments", *payments)]) == []  # aks keeps it
    # a role's addresses change (a wider node subnet): every copy changes sources in its own resource, which is one write
    wider = ("10.60.0.0/15",)
    assert pairs([held("stack", *nodes), held("aks", *nodes)], [held("stack", *wider), held("aks", *wider)]) == []
    assert pairs([held("stack", *wider), held("aks", *wider)], [held("stack", *nodes), held("aks", *nodes)]) == []
