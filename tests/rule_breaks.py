"""One required destination taken out of what the program registers, by patching the component's mapping: the
breakage tests (test_preview, test_engine_phases) judge what the pack then says."""
from __future__ import annotations

from typing import Optional

import components.aws_network_firewall
import components.azure_firewall
import components.kubernetes_egress


def drop_azure_fqdn(monkeypatch, fqdn: str) -> None:
    """``fqdn`` out of every application rule's targetFqdns."""
    original = components.azure_firewall.rcg_body

    def body(group, plan, ids):
        out = original(group, plan, ids)
        for collection in out["properties"]["ruleCollections"]:
            for rule in collection["rules"]:
                if "targetFqdns" in rule:
                    rule["targetFqdns"] = [f for f in rule["targetFqdns"] if f != fqdn]
        return out
    monkeypatch.setattr(components.azure_firewall, "rcg_body", body)


def drop_aws_target(monkeypatch, target: str, only: Optional[str] = None) -> None:
    """``target`` out of every domain list (``only``: of the rule groups whose name holds it)."""
    original = components.aws_network_firewall.rule_group_body

    def body(group):
        out = original(group)
        listed = out["RuleGroup"]["RulesSource"].get("RulesSourceList")
        if listed and (only is None or only in out["RuleGroupName"]):
            listed["Targets"] = [t for t in listed["Targets"] if t != target]
        return out
    monkeypatch.setattr(components.aws_network_firewall, "rule_group_body", body)


def edit_squid_conf(monkeypatch, old: str, new: str) -> None:
    """``old`` replaced by ``new`` in the egress proxy's squid.conf."""
    original = components.kubernetes_egress.egress_proxy_objects

    def objects(plan):
        out = original(plan)
        for obj in out:
            if obj["kind"] == "ConfigMap" and "squid.conf" in obj.get("data", {}):
                obj["data"]["squid.conf"] = obj["data"]["squid.conf"].replace(old, new)
        return out
    monkeypatch.setattr(components.kubernetes_egress, "egress_proxy_objects", objects)
