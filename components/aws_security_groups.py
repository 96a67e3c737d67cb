"""AwsSecurityGroupEgress: the plan's egress security groups, one ``aws.vpc.SecurityGroupEgressRule`` per CIDR and
port range. A source group's groups are like a role's: tagged with its name (``egress-matrix:role``), which is how the
policy pack and ``egress explain`` tell whose egress they carry.

Never inline ``egress`` blocks: mixing them with rule resources makes the two fight over the group's rules (perpetual
diffs, rules revoked; terraform-provider-aws#32379, pulumi-aws#3729). A group created by pulumi-aws loses AWS's
default allow-all egress rule, so the rules below are all it allows. Each rule's logical name comes from its stable
key (protocol, ports, CIDR) inside its group: adding one CIDR adds one resource.
"""
from __future__ import annotations

from typing import Optional

import pulumi
import pulumi_aws as aws

from egress.models import ROLES
from egress.targets.aws.deployed import ROLE_TAG
from egress.targets.aws.plan import AwsPlan, SecurityGroupRule, rule_resource_name

TYPE_TOKEN = "egress:aws:SecurityGroupEgress"


def egress_rule_args(rule: SecurityGroupRule) -> dict[str, object]:
    family = "cidr_ipv6" if ":" in rule.cidr else "cidr_ipv4"
    return {"ip_protocol": rule.protocol, "from_port": rule.from_port, "to_port": rule.to_port, family: rule.cidr,
            "description": rule.description}


class AwsSecurityGroupEgress(pulumi.ComponentResource):
    """One security group per planned group in ``vpc_id``, with exactly the planned egress rules.

    ``protect``: the groups refuse replacement and deletion in the real engine (the stack's allowFirewallReplacement lifts
    it); rules are never protected (they come and go with the matrix) and say so, since a child inherits its parent's
    protect. Logical names carry the cluster's name on purpose: Pulumi auto-names the groups from them, and an account
    shared by clusters needs the cluster in each group's name (clusterName is required, so a stack rename changes nothing).
    """

    security_group_ids: pulumi.Output[dict]

    def __init__(self, name: str, plan: AwsPlan, vpc_id: str, protect: bool = True, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(TYPE_TOKEN, name, None, opts)
        ids = {}
        for group in plan.security_groups:
            what = f"the {group.role} role" if group.role in ROLES else f"the {group.role} source group"
            created = aws.ec2.SecurityGroup(group.name, vpc_id=vpc_id, tags={"Name": group.name, ROLE_TAG: group.role},
                                            description=f"egress-matrix {plan.cluster}: egress of {what}",
                                            opts=pulumi.ResourceOptions(parent=self, protect=protect))
            for rule in group.rules:
                aws.vpc.SecurityGroupEgressRule(rule_resource_name(group.name, rule), security_group_id=created.id, **egress_rule_args(rule),
                                                # Deleted with their group: when a group goes, its rules are not deleted first,
                                                # so a refused (protected) group delete cannot leave the nodes' group emptied.
                                                opts=pulumi.ResourceOptions(parent=created, protect=False, deleted_with=created))
            ids[group.name] = created.id
        self.security_group_ids = pulumi.Output.from_input(ids)
        self.register_outputs({"securityGroupIds": self.security_group_ids})
