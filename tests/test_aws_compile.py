"""AWS plan (first slice of issue 8): exact Suricata forms, domain lists and their broadening, stable SIDs, security
groups within AWS's limits, request bodies against botocore's model, and every rules file loaded by Suricata 7."""
from __future__ import annotations

import hashlib
import ipaddress
import re

import botocore.session
import botocore.validate
import pytest

from egress.targets.aws.compile import compile_aws
from egress.targets.aws.plan import AwsCompileError
from egress.targets.aws.render import render, rule_group_body, security_group_document

from aws_stacks import FORMS, dev, req, stack
from suricata_engine import check_rules, needs_suricata



def test_suricata_form_is_exact():
    catalog, profile, _ = dev("suricata")
    plan = compile_aws(catalog, profile, [req("mcr.microsoft.com", "fqdn", "https"), req("*.data.mcr.microsoft.com", "wildcard", "https", (443, 6443)),
                                          req("archive.ubuntu.com", "fqdn", "http", (80,)), req("203.0.113.0/24", "cidr", "udp", (123,))])
    (group,) = plan.rule_groups
    assert (group.name, group.form, group.home_net, group.used, group.capacity) == ("egress-dev-nodes-rules", "suricata", ("10.0.0.0/16",), 4, 10)
    texts = {rule.key: rule.text.split(" sid:")[0] for rule in group.rules}
    assert texts == {
        "kkp-core-https|mcr.microsoft.com|443": 'pass tls $HOME_NET any -> any 443 (tls.sni; content:"mcr.microsoft.com"; startswith; nocase; '
                                                'endswith; msg:"kkp-core-https mcr.microsoft.com"; flow:to_server; metadata:egress_entry kkp-crictl;',
        "kkp-core-https|*.data.mcr.microsoft.com|443,6443": 'pass tls $HOME_NET any -> any [443,6443] (tls.sni; content:".data.mcr.microsoft.com"; '
                                                            'nocase; endswith; msg:"kkp-core-https *.data.mcr.microsoft.com"; flow:to_server; '
                                                            'metadata:egress_entry kkp-crictl;',
        "kkp-core-http|archive.ubuntu.com|80": 'pass http $HOME_NET any -> any 80 (http.host; content:"archive.ubuntu.com"; startswith; endswith; '
                                               'msg:"kkp-core-http archive.ubuntu.com"; flow:to_server; metadata:egress_entry kkp-crictl;',
        "kkp-core-udp-123|203.0.113.0/24": 'pass udp $HOME_NET any -> 203.0.113.0/24 123 (msg:"kkp-core-udp-123"; flow:to_server; '
                                           'metadata:egress_entry kkp-crictl;',
    }
    assert "dotprefix" not in group.rules_string  # '*.x' is subdomains only; dotprefix would also open the apex
    assert plan.broadening == ()
    sg = {(r.cidr, r.protocol, r.from_port) for g in plan.security_groups for r in g.rules}
    assert sg == {("0.0.0.0/0", "tcp", 443), ("0.0.0.0/0", "tcp", 6443), ("0.0.0.0/0", "tcp", 80), ("203.0.113.0/24", "udp", 123)}


def test_domain_list_form_separates_tls_and_http_and_lists_the_broadening():
    catalog, profile, _ = dev("domain-list")
    plan = compile_aws(catalog, profile, [req("mcr.microsoft.com", "fqdn", "https"), req("*.data.mcr.microsoft.com", "wildcard", "https"),
                                          req("archive.ubuntu.com", "fqdn", "http", (80,)), req("203.0.113.0/24", "cidr", "udp", (123,))])
    groups = {g.name: g for g in plan.rule_groups}
    assert sorted(groups) == ["egress-dev-nodes-addresses", "egress-dev-nodes-http-host", "egress-dev-nodes-tls-sni"]
    assert groups["egress-dev-nodes-addresses"].priority == 100  # before the domain lists' catch-all drops
    assert groups["egress-dev-nodes-tls-sni"].targets == (".data.mcr.microsoft.com", "mcr.microsoft.com")  # TLS-only hosts never in HTTP
    assert groups["egress-dev-nodes-http-host"].targets == ("archive.ubuntu.com",)
    assert (groups["egress-dev-nodes-tls-sni"].used, groups["egress-dev-nodes-tls-sni"].capacity) == (3, 10)  # targets + 1, up to the smallest capacity step
    assert [(b.target, b.allows) for b in plan.broadening] == [
        ("archive.ubuntu.com", "every port, not only 80"),
        (".data.mcr.microsoft.com", "the apex data.mcr.microsoft.com; every port, not only 443"),
        ("mcr.microsoft.com", "every port, not only 443")]
    files = render(plan)
    assert files["aws/domain-list-broadening.txt"].splitlines()[1] == "nodes TLS_SNI .data.mcr.microsoft.com: the apex data.mcr.microsoft.com; every port, not only 443"


def test_sids_are_unique_and_stay_put_when_another_endpoint_arrives():
    catalog, profile, reqs = dev("suricata")
    before = {r.key: r.sid for g in compile_aws(catalog, profile, reqs).rule_groups for r in g.rules}
    after = {r.key: r.sid for g in compile_aws(catalog, profile, [*reqs, req("extra.example.com", "fqdn", "https")]).rule_groups for r in g.rules}
    assert len(set(before.values())) == len(before) > 50
    assert set(after) - set(before) == {"kkp-core-https|extra.example.com|443"}
    assert {k: after[k] for k in before} == before


# Keywords Suricata accepts and Network Firewall refuses (reference/verification-engines.md §2, aws-egress.md §3.3).
NFW_REFUSED = re.compile(r"\b(dataset|datarep|iprep|lua|luajit|filestore|filemagic|filename|threshold|detection_filter|priority|classtype):")


@pytest.mark.engine
@needs_suricata
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", ["dev", "kkp", "kkp-aws"])
def test_every_rules_file_loads_in_suricata(tmp_path, name, form):
    catalog, profile, reqs = stack(name, aws_network_firewall_rules=form)
    rules = render(compile_aws(catalog, profile, reqs))["aws/rules.suricata"]
    result = check_rules(rules, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert not NFW_REFUSED.search(rules)


@pytest.mark.engine
@needs_suricata
def test_suricata_rejects_what_aws_would(tmp_path):
    """The check can fail: an upper-case http.host content and a duplicate sid are refused by the engine."""
    assert check_rules('pass http any any -> any 80 (http.host; content:"Example.com"; sid:1; rev:1;)\n', tmp_path).returncode != 0
    duplicate = 'pass tls any any -> any 443 (tls.sni; content:"a.example"; sid:7; rev:1;)\n' * 2
    assert check_rules(duplicate, tmp_path).returncode != 0


@pytest.mark.parametrize("form", FORMS)
def test_request_bodies_match_botocores_model(form):
    model = botocore.session.get_session().get_service_model("network-firewall")
    shape = model.operation_model("CreateRuleGroup").input_shape
    catalog, profile, reqs = dev(form)
    plan = compile_aws(catalog, profile, reqs)
    assert plan.rule_groups
    for group in plan.rule_groups:
        body = rule_group_body(group)
        report = botocore.validate.ParamValidator().validate(body, shape)
        assert not report.has_errors(), report.generate_report()
        source = body["RuleGroup"]["RulesSource"]
        if "RulesSourceList" in source:  # the validator does not check enums
            assert set(source["RulesSourceList"]["TargetTypes"]) <= set(model.shape_for("TargetType").enum)
            assert source["RulesSourceList"]["GeneratedRulesType"] in model.shape_for("GeneratedRulesType").enum
        assert body["RuleGroup"]["StatefulRuleOptions"]["RuleOrder"] in model.shape_for("RuleOrder").enum
    ec2 = botocore.session.get_session().get_service_model("ec2").operation_model("AuthorizeSecurityGroupEgress").input_shape
    for group in security_group_document(plan.security_groups)["SecurityGroups"]:
        report = botocore.validate.ParamValidator().validate({"GroupId": "sg-0123456789abcdef0", "IpPermissions": group["IpPermissionsEgress"]}, ec2)
        assert not report.has_errors(), report.generate_report()


def _cidr_reqs(count: int, start: int = 0) -> list:
    cidrs = [str(net) for net in list(ipaddress.ip_network("198.18.0.0/15").subnets(new_prefix=24))[start:start + count]]
    return [req(cidr, "cidr", "tcp", (22,)) for cidr in cidrs]


def _placement(plan) -> dict[str, str]:
    return {rule.key: group.name for group in plan.security_groups for rule in group.rules}


def test_many_address_rules_spread_over_the_attached_groups_within_limits():
    catalog, profile, _ = dev("suricata", aws_security_group_counts=("nodes=4",), aws_security_groups_attached=("nodes=4",))
    reqs = _cidr_reqs(150)
    plan = compile_aws(catalog, profile, reqs)
    sizes = [len(g.rules) for g in plan.security_groups]
    assert len(sizes) == 4 and max(sizes) <= 60 and sum(sizes) == 150
    more = compile_aws(catalog, profile, [*reqs, req("198.19.7.0/24", "cidr", "tcp", (22,))])
    changed = [(a.name, len(a.rules), len(b.rules)) for a, b in zip(plan.security_groups, more.security_groups) if a != b]
    assert len(changed) == 1 and changed[0][2] == changed[0][1] + 1  # one new CIDR: one new rule in one group
    with pytest.raises(AwsCompileError, match=r"role 'nodes' has 4 security groups, more than the 2 a network interface may carry \(awsSecurityGroupsPerEni\). "
                                              r"Fix: raise egress-matrix:awsSecurityGroupsPerEni"):
        compile_aws(catalog, profile.model_copy(update={"aws_security_groups_per_eni": 2}), reqs)


def test_crossing_60_rules_fails_closed_instead_of_moving_rules_to_a_group_nothing_carries():
    # Earlier releases doubled the groups at 61 rules and re-bucketed: 23 rules left the group the nodes carry.
    catalog, profile, _ = dev("suricata")
    assert [len(g.rules) for g in compile_aws(catalog, profile, _cidr_reqs(60)).security_groups] == [60]
    with pytest.raises(AwsCompileError) as error:
        compile_aws(catalog, profile, _cidr_reqs(61))
    assert str(error.value) == (
        "role 'nodes' needs 61 security-group rules, and egress-dev-nodes-0 would hold 61 IPv4 rules, over the 60 a group allows per "
        "address family. A rule goes only to a group the role's network interfaces carry, so nothing is changed (fail closed). Fix: without "
        "the rules this change adds (deploy the stack as it was), set egress-matrix:awsSecurityGroupCounts to nodes=2 and deploy: "
        "egress-dev-nodes-1 is created empty; then attach egress-dev-nodes-1 to the nodes network interfaces, then set "
        "egress-matrix:awsSecurityGroupsAttached to nodes=2 with this change: rules then move only into egress-dev-nodes-1")
    # Step 1: the new group is created empty; every rule stays where it was.
    created = compile_aws(catalog, profile.model_copy(update={"aws_security_group_counts": ("nodes=2",)}), _cidr_reqs(60))
    assert [(g.name, len(g.rules), g.attached) for g in created.security_groups] == [("egress-dev-nodes-0", 60, True), ("egress-dev-nodes-1", 0, False)]
    with pytest.raises(AwsCompileError, match=r"Fix: attach egress-dev-nodes-1 to the nodes network interfaces, then set "
                                              r"egress-matrix:awsSecurityGroupsAttached to nodes=2 with this change"):  # created, not yet attached
        compile_aws(catalog, profile.model_copy(update={"aws_security_group_counts": ("nodes=2",)}), _cidr_reqs(61))


def test_the_fix_names_the_fewest_groups_whose_placement_holds_the_rules():
    # Keys that all fall in slot 1 of 2: going to 3 groups splits only group 0, so only 4 groups hold them.
    catalog, profile, _ = dev("suricata", aws_security_group_counts=("nodes=2",), aws_security_groups_attached=("nodes=2",))
    cidrs = [f"198.18.{i // 256}.{i % 256}/32" for i in range(4000)]
    slot_one = [c for c in cidrs if _slot_of(c, 2) == 1 and _slot_of(c, 3) == 1][:62]
    with pytest.raises(AwsCompileError) as error:
        compile_aws(catalog, profile, [req(c, "cidr", "tcp", (22,)) for c in slot_one])
    message = str(error.value)
    assert "egress-dev-nodes-1 would hold 62 IPv4 rules" in message and "awsSecurityGroupCounts to nodes=4" in message
    assert "attach egress-dev-nodes-2, egress-dev-nodes-3 to the nodes network interfaces" in message and "nodes=3" not in message
    placed = compile_aws(catalog, profile.model_copy(update={"aws_security_group_counts": ("nodes=4",), "aws_security_groups_attached": ("nodes=4",)}),
                         [req(c, "cidr", "tcp", (22,)) for c in slot_one])
    assert max(len(g.rules) for g in placed.security_groups) <= 60


def _slot_of(cidr: str, groups: int) -> int:
    from egress.targets.aws.compile import _slot
    return _slot(f"tcp:22:{cidr}", groups)  # the security-group rule's key: transport, port range, CIDR


def _keys(cidr: str):
    catalog, profile, _ = dev("suricata")
    plan = compile_aws(catalog, profile, [req(cidr, "cidr", "tcp", (22,))])
    return [rule.key for g in plan.security_groups for rule in g.rules if rule.cidr == cidr]


def test_attaching_a_group_moves_rules_only_into_it():
    catalog, profile, _ = dev("suricata", aws_security_group_counts=("nodes=8",), aws_security_groups_per_eni=16)
    reqs = _cidr_reqs(300)
    before = None
    for attached in range(1, 9):
        settings = {"aws_security_groups_attached": (f"nodes={attached}",)}
        plan = compile_aws(catalog, profile.model_copy(update=settings), reqs[:28 * attached])
        placement = _placement(plan)
        if before is not None:
            moved = {key: (before[key], placement[key]) for key in before if placement[key] != before[key]}
            assert moved and {new for _, new in moved.values()} == {f"egress-dev-nodes-{attached - 1}"}, moved
        before = placement
        assert all(not g.rules for g in plan.security_groups if not g.attached)


def test_a_power_of_two_of_groups_places_rules_as_earlier_releases_did():
    # Earlier releases placed by sha256(key) % buckets with buckets a power of two: upgrading moves nothing.
    catalog, profile, _ = dev("suricata", aws_security_group_counts=("nodes=4",), aws_security_groups_attached=("nodes=4",))
    plan = compile_aws(catalog, profile, _cidr_reqs(150))
    for key, name in _placement(plan).items():
        assert name == f"egress-dev-nodes-{int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % 4}"


def test_attached_groups_must_exist_first():
    catalog, profile, _ = dev("suricata", aws_security_groups_attached=("nodes=2",))
    with pytest.raises(AwsCompileError, match=r"the nodes role's interfaces carry 2 groups, but the stack creates 1 \(awsSecurityGroupCounts\), "
                                              r"so egress-dev-nodes-1 would get rules before it exists or is attached"):
        compile_aws(catalog, profile, _cidr_reqs(10))


def test_sg_rule_descriptions_carry_the_entry_ids_in_awss_alphabet():
    catalog, profile, reqs = dev("suricata")
    plan = compile_aws(catalog, profile, reqs)
    descriptions = [r.description for g in plan.security_groups for r in g.rules]
    assert descriptions and all(d.startswith("egress-matrix ") and len(d) <= 255 for d in descriptions)


@pytest.mark.parametrize("requirement, message", [
    (req("ntp.example.com", "fqdn", "udp", (123,)), r"nodes -> ntp.example.com udp/123 .* nothing on AWS matches a non-HTTP/TLS flow by name.*Fix: give "
                                                    r"the host's addresses in the stack"),
    (req("AzureCloud.westeurope", "service-tag", "udp", (1194,)), "an Azure service tag means nothing on AWS"),
    (req("md-*.blob.storage.azure.net", "wildcard", "https"), r"not '\*' inside a label"),
])
def test_what_aws_cannot_express_is_a_clear_error(requirement, message):
    catalog, profile, _ = dev("suricata")
    with pytest.raises(AwsCompileError, match=message):
        compile_aws(catalog, profile, [requirement], "stacks/Pulumi.dev.yaml: stack 'dev'")


def test_capacity_over_the_group_maximum_is_an_error():
    catalog, profile, _ = dev("domain-list")
    reqs = [req(f"host-{i}.example.com", "fqdn", "https") for i in range(30000)]
    with pytest.raises(AwsCompileError, match=r"egress-dev-nodes-tls-sni needs capacity 30001 for its 30001 rules, over the 30000"):
        compile_aws(catalog, profile, reqs)


def test_stack_addresses_stand_in_for_a_name_aws_cannot_match():
    ntp = {f"{i}.rhel.pool.ntp.org": f"203.0.113.{i}/32" for i in (1, 2, 3)}
    with pytest.raises(AwsCompileError, match=r"1\.rhel\.pool\.ntp\.org udp/123: nothing on AWS matches a non-HTTP/TLS flow by name .* "
                                              r"Fix: give the host's addresses in the stack \(egress-matrix:awsNameAddresses"):
        compile_aws(*stack("openshift"))
    catalog, profile, reqs = stack("openshift", aws_network_firewall_rules="suricata", aws_name_addresses=tuple(f"{h}={c}" for h, c in ntp.items()))
    plan = compile_aws(catalog, profile, reqs)
    (group,) = plan.rule_groups
    udp = sorted(rule.text.split(" (")[0] for rule in group.rules if rule.text.startswith("pass udp"))
    assert udp == [f"pass udp $HOME_NET any -> {cidr} 123" for cidr in sorted(ntp.values())]
    assert [c.used for c in plan.choices] == sorted(ntp.values())
    assert {(r.cidr, r.protocol, r.from_port) for g in plan.security_groups for r in g.rules if r.protocol == "udp"} == {
        (cidr, "udp", 123) for cidr in ntp.values()}


def test_capacity_stays_put_until_the_rules_no_longer_fit_and_warns_ahead():
    # Capacity is immutable (a change replaces the group, which a protected group refuses): adding an endpoint must not change it
    # while the rules still fit; a group with less spare than awsCapacityHeadroom warns that its replacement is coming.
    catalog, profile, _ = dev("suricata")
    plans = {count: compile_aws(catalog, profile, [req(f"host-{i}.example.com", "fqdn", "https") for i in range(count)]) for count in (51, 83, 84, 100, 101)}
    assert [plans[count].rule_groups[0].capacity for count in plans] == [100, 100, 100, 100, 200]
    assert plans[83].warnings == ()  # 83 rules plus 20% is 99.6: room enough
    assert plans[84].warnings == ("rule group egress-dev-nodes-rules uses 84 of its capacity 100 (less than the 20% spare of awsCapacityHeadroom): "
                                  "past 100 rules it becomes a new group of 200, a replacement its protection refuses. Plan it (README, "
                                  "'Protection and migrations')",)
