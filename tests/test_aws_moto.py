"""The security groups we render, created through boto3 against moto's EC2 the way the Pulumi component will create
them (reference/verification-engines.md section 5; facts: reference/aws-egress.md section 2.6), then read back.

Per group: a VPC security group named GroupName; AWS's default allow-all egress rule removed (pulumi-aws does that on
create); one AuthorizeSecurityGroupEgress per planned rule, one CIDR each (as ``aws.vpc.SecurityGroupEgressRule``
does); DescribeSecurityGroupRules must then return exactly the document's (protocol, from, to, cidr, description).

What moto checks and what it does not (moto 5.2.5):
- it refuses a 61st rule in a VPC security group (RulesPerSecurityGroupLimitExceeded), but counts IPv4 and IPv6
  together, where AWS counts each family separately: stricter than AWS for a group holding both families;
- it refuses malformed CIDRs and duplicate rules;
- it does NOT check a rule description's length or alphabet, so those are checked here against the reference.
Entry ids are catalog slugs (``^[a-z0-9]([a-z0-9-]*[a-z0-9])?$``) and the compiler looks each one up in the catalog,
so no requirement can carry characters outside AWS's alphabet into a description: that case is not constructed here.
"""
from __future__ import annotations

import ipaddress
import json
import re
from collections import Counter

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from egress.targets.aws.compile import compile_aws
from egress.targets.aws.render import render

from aws_stacks import FORMS, dev, req

REGION = "us-east-1"
MAX_RULES = 60  # outbound rules per security group and address family (reference 2.6); written out, not imported
# Rule descriptions, reference 2.6: at most 255 characters of a-zA-Z0-9, space and ._-:/()#,@[]+=;{}!$*
AWS_DESCRIPTION = re.compile(r"[a-zA-Z0-9 ._\-:/()#,@\[\]+=;{}!$*]{1,255}")
DEFAULT_EGRESS = {"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}
SYNTHETIC_CIDRS = [str(net) for net in list(ipaddress.ip_network("198.18.0.0/16").subnets(new_prefix=24))[:150]]
# One more CIDR: the existing test's, whose rule key sorts after all the others, and one whose key sorts before them
# (so a placement by position rather than by a hash of the key would move rules between groups).
EXTRA_CIDRS = ["198.19.7.0/24", "192.0.2.0/24"]


def synthetic(*extra: str):
    """The 150-CIDR stack of test_aws_compile.py (tcp/22 to 150 /24s, in four attached groups), plus ``extra`` CIDRs."""
    catalog, profile, _ = dev("suricata", aws_security_group_counts=("nodes=4",), aws_security_groups_attached=("nodes=4",))
    return compile_aws(catalog, profile, [req(cidr, "cidr", "tcp", (22,)) for cidr in [*SYNTHETIC_CIDRS, *extra]])


def document(plan) -> list[dict]:
    """The groups exactly as ``egress render`` writes them (aws/security-groups.json)."""
    return json.loads(render(plan)["aws/security-groups.json"])["SecurityGroups"]


def wanted(group: dict) -> Counter:
    rules: Counter = Counter()
    for perm in group["IpPermissionsEgress"]:
        for cidr_range in [*perm.get("IpRanges", []), *perm.get("Ipv6Ranges", [])]:
            cidr = cidr_range.get("CidrIp") or cidr_range["CidrIpv6"]
            rules[(perm["IpProtocol"], perm["FromPort"], perm["ToPort"], cidr, cidr_range.get("Description"))] += 1
    return rules


def per_family(group: dict) -> dict[str, int]:
    return {"4": sum(len(p.get("IpRanges", [])) for p in group["IpPermissionsEgress"]),
            "6": sum(len(p.get("Ipv6Ranges", [])) for p in group["IpPermissionsEgress"])}


@pytest.fixture
def ec2(monkeypatch, tmp_path):
    """An EC2 client on moto; dummy credentials and no config file, so nothing real can be reached or used."""
    for var in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_EC2", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(var, raising=False)
    for var, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing",
                       "AWS_SECURITY_TOKEN": "testing", "AWS_DEFAULT_REGION": REGION, "AWS_CONFIG_FILE": str(tmp_path / "no-config"),
                       "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-credentials"), "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"}.items():
        monkeypatch.setenv(var, value)
    with mock_aws():
        yield boto3.client("ec2", region_name=REGION)


def read_back(ec2, group_id: str) -> Counter:
    rules: Counter = Counter()
    for page in ec2.get_paginator("describe_security_group_rules").paginate(Filters=[{"Name": "group-id", "Values": [group_id]}]):
        for rule in page["SecurityGroupRules"]:
            assert rule["IsEgress"] and rule["GroupId"] == group_id, rule  # nothing inbound was asked for
            cidr = rule.get("CidrIpv4") or rule.get("CidrIpv6")
            rules[(rule["IpProtocol"], rule["FromPort"], rule["ToPort"], cidr, rule.get("Description"))] += 1
    return rules


def create_group(ec2, vpc_id: str, group: dict) -> str:
    """CreateSecurityGroup, then what pulumi-aws does on create: revoke AWS's default allow-all egress."""
    group_id = ec2.create_security_group(GroupName=group["GroupName"], Description=f"egress-matrix {group['Role']}", VpcId=vpc_id)["GroupId"]
    assert read_back(ec2, group_id) == Counter({("-1", -1, -1, "0.0.0.0/0", None): 1})  # the default is there to remove
    ec2.revoke_security_group_egress(GroupId=group_id, IpPermissions=[DEFAULT_EGRESS])
    assert read_back(ec2, group_id) == Counter()
    return group_id


def authorize(ec2, group_id: str, perm: dict) -> None:
    """One SecurityGroupEgressRule: one CIDR per call."""
    assert len(perm.get("IpRanges", [])) + len(perm.get("Ipv6Ranges", [])) == 1, perm
    ec2.authorize_security_group_egress(GroupId=group_id, IpPermissions=[perm])


def deploy(ec2, groups: list[dict]) -> dict[str, str]:
    """The document's groups in a new VPC: GroupName -> GroupId."""
    vpc_id = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    ids = {}
    for group in groups:
        ids[group["GroupName"]] = group_id = create_group(ec2, vpc_id, group)
        for perm in group["IpPermissionsEgress"]:
            authorize(ec2, group_id, perm)
    assert len(ids) == len(groups)  # names are unique within the VPC
    return ids


def assert_round_trip(ec2, groups: list[dict], ids: dict[str, str]) -> dict[str, Counter]:
    got = {}
    for group in groups:
        got[group["GroupName"]] = back = read_back(ec2, ids[group["GroupName"]])
        assert back == wanted(group), group["GroupName"]
        assert not any(protocol == "-1" for protocol, *_ in back)  # no allow-all left behind
    return got


@pytest.mark.engine
@pytest.mark.parametrize("form", FORMS)
def test_dev_security_groups_round_trip_through_ec2(ec2, form):
    catalog, profile, reqs = dev(form)
    groups = document(compile_aws(catalog, profile, reqs))
    assert {g["Role"] for g in groups} == {"nodes", "seed"} and all(g["IpPermissionsEgress"] for g in groups)
    assert_round_trip(ec2, groups, deploy(ec2, groups))


@pytest.mark.engine
def test_150_address_rules_fill_several_groups_that_ec2_accepts(ec2):
    groups = document(synthetic())
    assert len(groups) >= 3
    assert all(count <= MAX_RULES for g in groups for count in per_family(g).values())
    assert sum(len(g["IpPermissionsEgress"]) for g in groups) == 150
    ids = deploy(ec2, groups)  # moto refuses a 61st rule: an overfull planned group would fail here
    assert_round_trip(ec2, groups, ids)

    # ...which it does: fill the fullest group up to 60 rules, and the 61st is refused.
    fullest = max(groups, key=lambda g: len(g["IpPermissionsEgress"]))
    group_id = ids[fullest["GroupName"]]
    spare = (str(net) for net in ipaddress.ip_network("203.0.113.0/24").subnets(new_prefix=32))
    for _ in range(MAX_RULES - len(fullest["IpPermissionsEgress"])):
        authorize(ec2, group_id, {"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22, "IpRanges": [{"CidrIp": next(spare)}]})
    assert sum(read_back(ec2, group_id).values()) == MAX_RULES
    with pytest.raises(ClientError) as refused:
        authorize(ec2, group_id, {"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22, "IpRanges": [{"CidrIp": next(spare)}]})
    assert refused.value.response["Error"]["Code"] == "RulesPerSecurityGroupLimitExceeded"
    assert sum(read_back(ec2, group_id).values()) == MAX_RULES


@pytest.mark.engine
@pytest.mark.parametrize("extra", EXTRA_CIDRS)
def test_one_more_cidr_adds_one_rule_to_one_group_in_ec2(ec2, extra):
    before, after = document(synthetic()), document(synthetic(extra))
    assert [g["GroupName"] for g in before] == [g["GroupName"] for g in after]
    ids_before, ids_after = deploy(ec2, before), deploy(ec2, after)  # two VPCs, fresh deployments of each document
    got_before, got_after = assert_round_trip(ec2, before, ids_before), assert_round_trip(ec2, after, ids_after)
    changed = [name for name in got_before if got_before[name] != got_after[name]]
    assert len(changed) == 1
    (name,) = changed
    added, removed = got_after[name] - got_before[name], got_before[name] - got_after[name]
    assert not removed and sum(added.values()) == 1
    ((protocol, from_port, to_port, cidr, _),) = added
    assert (protocol, from_port, to_port, cidr) == ("tcp", 22, 22, extra)

    # An update in place (what Pulumi does: one new SecurityGroupEgressRule, nothing replaced) ends where the fresh one did.
    old, new = {g["GroupName"]: g for g in before}, {g["GroupName"]: g for g in after}
    creates = [(n, p) for n in new for p in new[n]["IpPermissionsEgress"] if p not in old[n]["IpPermissionsEgress"]]
    deletes = [(n, p) for n in old for p in old[n]["IpPermissionsEgress"] if p not in new[n]["IpPermissionsEgress"]]
    assert not deletes and len(creates) == 1 and creates[0][0] == name
    authorize(ec2, ids_before[name], creates[0][1])
    assert {n: read_back(ec2, ids_before[n]) for n in ids_before} == got_after


@pytest.mark.engine
def test_rule_descriptions_are_in_awss_alphabet_and_stored_verbatim(ec2):
    groups = [g for form in FORMS for g in document(compile_aws(*dev(form)))]
    descriptions = [d for g in groups for (*_, d) in wanted(g)]
    descriptions += [d for g in document(synthetic()) for (*_, d) in wanted(g)]
    assert descriptions and all(d.startswith("egress-matrix ") for d in descriptions)
    bad = [d for d in descriptions if not AWS_DESCRIPTION.fullmatch(d)]
    assert not bad, bad  # moto would take them anyway; AWS would not
    longest = max(descriptions, key=len)
    # The dev stack's nodes tcp/443 path to the firewall serves more entries than fit: cut at an id, the rest counted.
    assert len(longest) <= 255 and re.search(r"[a-z0-9], [a-z0-9-]+ \+\d+ more$", longest), longest

    catalog, profile, reqs = dev("suricata")
    dev_groups = document(compile_aws(catalog, profile, reqs))
    ids = deploy(ec2, dev_groups)
    stored = [d for gid in ids.values() for (*_, d) in read_back(ec2, gid)]
    assert longest in stored and sorted(stored) == sorted(d for g in dev_groups for (*_, d) in wanted(g))
