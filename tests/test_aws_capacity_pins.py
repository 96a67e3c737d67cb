"""awsRuleGroupCapacities: a rule group keeps its deployed capacity when its rules shrink below a 1-2-5 step (capacity is
fixed at creation, so the step the rules now fit would replace the group for nothing), and egress diff says how."""
from __future__ import annotations

from pathlib import Path

import pytest

from egress.project import open_project
from egress.targets.aws.compile import compile_aws
from egress.targets.aws.plan import AwsCompileError
from egress_preview.dangers import RULE_GROUP, _shrunk

ROOT = Path(__file__).resolve().parents[1]


def _plan(**overrides):
    catalog, profile, requirements = open_project(ROOT).requirements("kkp-aws")
    return compile_aws(catalog, profile.model_copy(update=overrides), requirements)


def _capacities(plan) -> dict[str, tuple[int, int]]:
    return {g.name: (g.used, g.capacity) for g in plan.rule_groups}


def test_a_pinned_group_keeps_its_capacity_and_the_others_their_step():
    free = _capacities(_plan())
    used, step = free["egress-kkp-eu-west-1-nodes-rules"]
    assert step < 100 and used <= step  # the nodes' rules fit a smaller step than the 100 a stack may have deployed
    pinned = _capacities(_plan(aws_rule_group_capacities=("egress-kkp-eu-west-1-nodes-rules=100",)))
    assert pinned["egress-kkp-eu-west-1-nodes-rules"] == (used, 100)
    assert {k: v for k, v in pinned.items() if k != "egress-kkp-eu-west-1-nodes-rules"} == \
        {k: v for k, v in free.items() if k != "egress-kkp-eu-west-1-nodes-rules"}


def test_a_pin_below_what_the_rules_use_is_refused():
    with pytest.raises(AwsCompileError, match=r"keeps rule group 'egress-kkp-eu-west-1-seed-rules' at capacity 10, less than the \d+ its "
                                              r"rules use\. Fix: remove the pin"):
        _plan(aws_rule_group_capacities=("egress-kkp-eu-west-1-seed-rules=10",))


def test_a_pin_naming_no_group_of_the_stack_is_refused():
    with pytest.raises(AwsCompileError, match=r"names rule group 'egress-kkp-nodes-rules', which this stack does not create\. "
                                              r"Fix: use one of: .*egress-kkp-eu-west-1-nodes-rules"):
        _plan(aws_rule_group_capacities=("egress-kkp-nodes-rules=100",))


def test_egress_diff_names_the_pin_when_a_group_only_shrinks():
    def group(capacity):
        return {"type": RULE_GROUP, "name": "egress-kkp-eu-west-1-nodes-rules", "props": {"capacity": capacity}}
    head = {"resources": [group(50)]}
    assert _shrunk(group(100), head) == [
        "its rules fit the deployed capacity: keep it with egress-matrix:awsRuleGroupCapacities: "
        "['egress-kkp-eu-west-1-nodes-rules=100'] and the group is updated in place"]
    assert _shrunk(group(10), {"resources": [group(200)]}) == []  # growing: a replacement, nothing to keep
