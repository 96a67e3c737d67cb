"""Strict-order priorities are fixed slots per (kind, role): a new group (the first address requirement, a new role)
moves no existing group's priority, so an existing policy's references stay valid and a created policy's are not
rewritten; every Suricata / 5-tuple group still runs before every domain list; the slots fit AWS's priority range."""
from __future__ import annotations

import itertools

import annotated_types
import botocore.session
import pytest

from egress.deployed import DeployedResource
from egress.profile import ROLE_SOURCE_KEYS, Profile
from egress.targets.aws.compile import compile_aws
from egress.targets.aws.deployed import RULE_GROUP_TYPE, artefacts
from egress.targets.aws.evaluate import RULES_FILE
from egress.targets.aws.policy import ExistingFirewallPolicy, check_existing_policy
from egress.targets.aws.priorities import GROUPS_OFFSET, GROUPS_SHARDS, KIND_BANDS, MAX_OFFSET, groups_kind, offset, offset_of_name
from egress.targets.aws.plan import AwsCompileError

from aws_stacks import stack, req

POLICY_ARN = "arn:aws:network-firewall:eu-central-1:123456789012:firewall-policy/hub"


def _arn(group: str) -> str:
    return f"arn:aws:network-firewall:eu-central-1:123456789012:stateful-rulegroup/{group}-abc1234"  # auto-named


def _plan(form: str, extra=(), roles=("nodes", "seed")):
    catalog, profile, reqs = stack("dev", aws_network_firewall_rules=form, aws_roles=roles, aws_platforms=("kkp", "openshift"),
                                   aws_firewall_policy=False, aws_firewall_policy_arn=POLICY_ARN, control_plane_sources=("10.3.0.0/16",))
    return compile_aws(catalog, profile, [*reqs, *extra])


def _existing(references) -> ExistingFirewallPolicy:
    return ExistingFirewallPolicy(arn=POLICY_ARN, rule_order="STRICT_ORDER", default_actions=("aws:drop_established",),
                                  references=tuple(references))


def test_every_kind_and_role_has_a_fixed_slot():
    # Pinned: a slot is part of every deployed policy reference, so changing one is an upgrade note, never a refactor.
    assert list(ROLE_SOURCE_KEYS) == ["nodes", "control-plane", "seed", "bastion", "workstation"]  # append new roles only
    assert {(kind, role): offset(kind, role) for kind in KIND_BANDS for role in ROLE_SOURCE_KEYS} == {
        (kind, role): 100 * (10 * band + index) for kind, band in [("rules", 0), ("addresses", 0), ("tls-sni", 1), ("http-host", 2)]
        for index, role in enumerate(ROLE_SOURCE_KEYS)}
    # Kind-major: every Suricata/5-tuple group of any role before every domain list of any role (a list ends with a drop of
    # all TLS/HTTP from its role's sources, which two roles may share).
    first = [offset(k, r) for k in ("rules", "addresses") for r in ROLE_SOURCE_KEYS]
    assert max(first) < min(offset(k, r) for k in ("tls-sni", "http-host") for r in ROLE_SOURCE_KEYS)
    assert offset("addresses", "workstation") < offset("tls-sni", "nodes") < offset("http-host", "nodes")
    assert offset_of_name("egress-x-nodes-control-plane-tls-sni") == offset("tls-sni", "control-plane")
    assert offset_of_name("egress-dev-seed-addresses") == 200 and offset_of_name("shared-threats") is None
    # The source groups' rule groups: the first band's last slot (roles may grow to 9), 10 apart when there are several.
    assert [offset_of_name(f"egress-x-{groups_kind(k)}") for k in range(GROUPS_SHARDS)] == [900 + 10 * k for k in range(GROUPS_SHARDS)]
    assert GROUPS_OFFSET == 900 and max(offset("rules", r) for r in ROLE_SOURCE_KEYS) + 400 < GROUPS_OFFSET < offset("tls-sni", "nodes")
    assert offset_of_name("egress-x-nodes-rules") == 0 and offset_of_name("egress-groups-nodes-rules") == 0


def test_every_allowed_base_keeps_every_slot_within_awss_priority_range():
    shape = botocore.session.get_session().get_service_model("network-firewall").shape_for("Priority")
    field = Profile.model_fields["aws_priority_base"]
    lowest = next(m.ge for m in field.metadata if isinstance(m, annotated_types.Ge))
    highest = next(m.le for m in field.metadata if isinstance(m, annotated_types.Le))
    assert shape.metadata["min"] <= lowest and highest + MAX_OFFSET <= shape.metadata["max"] == 65535
    assert MAX_OFFSET == max(offset(k, r) for k, r in itertools.product(KIND_BANDS, ROLE_SOURCE_KEYS)) + 500  # 5 free slots (4 in the first band)
    catalog, profile, reqs = stack("dev", aws_network_firewall_rules="domain-list", aws_roles=tuple(ROLE_SOURCE_KEYS),
                                   control_plane_sources=("10.3.0.0/16",), workstation_sources=("10.4.0.0/16",), aws_priority_base=highest)
    plan = compile_aws(catalog, profile, [*reqs, *(req("203.0.113.9/32", "cidr", "tcp", role=r) for r in ROLE_SOURCE_KEYS)])
    assert max(g.priority for g in plan.rule_groups) <= 65535


ADDITIONS = {
    # (form, requirements added, roles added to awsRoles, the groups that appear). Under positional priorities each of these
    # sorts before an existing group and moved it.
    "domain-list, the first address requirement": ("domain-list", [req("203.0.113.0/24", "cidr", "udp", (123,))], (),
                                                   {"egress-dev-nodes-addresses": 100}),
    "domain-list, a new role": ("domain-list", [], ("bastion",), {"egress-dev-bastion-tls-sni": 1400}),
    "domain-list, a new role's addresses": ("domain-list", [req("203.0.113.0/24", "cidr", "udp", (123,), role="control-plane")],
                                            ("control-plane",), {"egress-dev-control-plane-addresses": 200}),
    "suricata, a new role": ("suricata", [], ("bastion",), {"egress-dev-bastion-rules": 400}),
    "suricata, a role first by name": ("suricata", [req("203.0.113.0/24", "cidr", "udp", (123,), role="control-plane")],
                                       ("control-plane",), {"egress-dev-control-plane-rules": 200}),
}


@pytest.mark.parametrize("case", ADDITIONS)
def test_a_new_group_moves_no_existing_priority_and_the_existing_policy_still_accepts_the_stack(case):
    form, extra, new_roles, added = ADDITIONS[case]
    before = {g.name: g.priority for g in _plan(form).rule_groups}
    plan = _plan(form, extra, roles=("nodes", "seed", *new_roles))
    after = {g.name: g.priority for g in plan.rule_groups}
    assert {name: after[name] for name in before} == before
    assert {name: after[name] for name in set(after) - set(before)} == added
    # The policy references the groups as they were deployed: the addition is accepted, the new reference only missing.
    warnings = check_existing_policy(plan, _existing((_arn(n), p) for n, p in before.items()))
    (name, priority), = added.items()
    assert warnings == [f"firewall policy {POLICY_ARN} does not reference {name} at priority {priority} yet: add the references exported "
                        "as awsRuleGroupReferences to it"]


def test_references_at_the_earlier_positional_priorities_are_ours_to_move_not_a_clash():
    # Before fixed slots: groups were numbered 100, 200, ... in order. Upgrading moves them once: the policy holds our own
    # groups at the new priorities, which is no clash; the warning names each reference to replace.
    plan = _plan("domain-list", [req("203.0.113.0/24", "cidr", "udp", (123,))])
    earlier = [(_arn(g.name), 100 * (i + 1)) for i, g in enumerate(plan.rule_groups)]
    assert [g.priority for g in plan.rule_groups] == [100, 1100, 1300, 2100, 2300]
    warnings = check_existing_policy(plan, _existing(earlier))
    assert warnings == [f"firewall policy {POLICY_ARN} references egress-dev-nodes-tls-sni at priority 200 (now 1100), egress-dev-seed-tls-sni "
                        "at priority 300 (now 1300), egress-dev-nodes-http-host at priority 400 (now 2100), egress-dev-seed-http-host at "
                        "priority 500 (now 2300): each group now has a fixed priority by its kind and role; replace the policy's references "
                        "to these groups with awsRuleGroupReferences"]
    # A group that is not the stack's still holds its priority against us.
    foreign = "arn:aws:network-firewall:eu-central-1:123456789012:stateful-rulegroup/shared-threats"
    with pytest.raises(AwsCompileError, match=f"already references {foreign} at priority 1100, which rule group egress-dev-nodes-tls-sni needs"):
        check_existing_policy(plan, _existing([*earlier, (foreign, 1100)]))


def _deployed(name: str, role_sources: str, rules_source: dict) -> DeployedResource:
    return DeployedResource(type=RULE_GROUP_TYPE, name=name, urn=f"urn:pulumi:dev::egress-matrix::{RULE_GROUP_TYPE}::{name}", props={
        "type": "STATEFUL", "capacity": 10, "description": "", "ruleGroup": {
            "rulesSource": rules_source, "ruleVariables": {"ipSets": [{"key": "HOME_NET", "ipSet": {"definitions": [role_sources]}}]},
            "statefulRuleOptions": {"ruleOrder": "STRICT_ORDER"}}})


def test_without_the_stacks_own_policy_the_evaluator_runs_the_groups_in_the_programs_order():
    # An existing policy references them (not visible to a pack): the fixed slots stand in, so control-plane's domain list
    # (and its drop of all TLS from sources nodes may share) runs after the nodes' address rules, as the program orders them.
    groups = [_deployed("egress-dev-control-plane-tls-sni", "10.0.0.0/16", {"rulesSourceList": {
                  "targets": ["a.example.com"], "targetTypes": ["TLS_SNI"], "generatedRulesType": "ALLOWLIST"}}),
              _deployed("egress-dev-nodes-addresses", "10.0.0.0/16", {"rulesString": 'pass tcp $HOME_NET any -> 203.0.113.9 443 (msg:"x"; sid:1000001; rev:1;)\n'}),
              _deployed("egress-dev-nodes-http-host", "10.0.0.0/16", {"rulesSourceList": {
                  "targets": ["b.example.com"], "targetTypes": ["HTTP_HOST"], "generatedRulesType": "ALLOWLIST"}})]
    headers = [line for line in artefacts(groups)[RULES_FILE].splitlines() if line.startswith("# egress-dev-")]
    assert headers == ["# egress-dev-nodes-addresses (priority 100, suricata, capacity 10)",
                       "# egress-dev-control-plane-tls-sni (priority 1200, domain-list, capacity 10)",
                       "# egress-dev-nodes-http-host (priority 2100, domain-list, capacity 10)"]
