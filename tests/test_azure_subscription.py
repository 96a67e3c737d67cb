"""The program checks that the default azure-native provider deploys to the stack's azureSubscriptionId (one
getClientConfig invoke) before it registers anything: ids, and whether a policy is in another subscription, are
decided from that setting."""
from __future__ import annotations

import json
import runpy
from pathlib import Path

import pulumi
import pytest
import yaml
from pulumi.runtime.stack import wait_for_rpcs

from components.azure_subscription import INVOKE
from egress_preview.program import PreviewMocks

ROOT = Path(__file__).resolve().parents[1]
OWN = "00000000-0000-0000-0000-000000000000"  # the dev stack's azureSubscriptionId
OTHER = "11111111-1111-1111-1111-111111111111"


class Mocks(PreviewMocks):
    """Resources as the offline preview creates them; getClientConfig answers ``answer``."""

    def __init__(self, config: dict[str, str], answer: dict):
        super().__init__(config)
        self.answer = answer
        self.registered: list[str] = []
        self.calls: list[str] = []

    def new_resource(self, args):
        self.registered.append(args.typ)
        return super().new_resource(args)

    def call(self, args):
        self.calls.append(args.token)
        return self.answer if args.token == INVOKE else {}


def stack_config(stack: str, **overrides: str) -> dict[str, str]:
    """What the CLI hands the program: every value a string, structured values as JSON."""
    config = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]
    config = {key: value if isinstance(value, str) else json.dumps(value) for key, value in config.items()}
    return {**config, **{f"egress-matrix:{key}": value for key, value in overrides.items()}}


def run(stack: str, mocks: Mocks, loop, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    pulumi.runtime.set_mocks(mocks, project="egress-matrix", stack=stack, preview=False)
    pulumi.runtime.set_all_config(mocks.config)
    monkeypatch.setattr(pulumi.log, "warn", lambda *args, **kwargs: None)
    try:
        runpy.run_path(str(ROOT / "__main__.py"))
    finally:
        loop.run_until_complete(wait_for_rpcs())  # what was queued has reached the mocks: "nothing registered" is the whole truth


def test_credentials_for_another_subscription_stop_the_program_before_anything_is_registered(loop, monkeypatch):
    mocks = Mocks(stack_config("dev"), {"clientId": "c", "objectId": "o", "subscriptionId": OTHER, "tenantId": "t"})
    with pytest.raises(pulumi.RunError) as info:
        run("dev", mocks, loop, monkeypatch)
    assert str(info.value) == (
        f"AzureSubscriptionError: Pulumi config of stack 'dev': the azure-native provider deploys to subscription {OTHER}, but "
        f"egress-matrix:azureSubscriptionId is {OWN}: the IP Groups would be created in {OTHER} while the rules name them in {OWN}, and "
        "whether an existing policy is in another subscription would be decided against the wrong one. Nothing was registered. Fix: point "
        f"the provider at {OWN} (az account set --subscription {OWN}, ARM_SUBSCRIPTION_ID={OWN}, or pulumi config set "
        f"azure-native:subscriptionId {OWN}), or set egress-matrix:azureSubscriptionId to {OTHER} if the stack belongs there")
    assert mocks.registered == [] and mocks.calls == [INVOKE]


def test_the_same_subscription_in_another_case_passes(loop, monkeypatch):
    own = "abcdef01-2345-6789-abcd-ef0123456789"
    mocks = Mocks(stack_config("dev", azureSubscriptionId=own), {"subscriptionId": own.upper()})
    run("dev", mocks, loop, monkeypatch)
    assert mocks.calls == [INVOKE]
    assert mocks.registered.count("azure-native:network:FirewallPolicyRuleCollectionGroup") == 3


def test_no_answer_cannot_be_checked_and_the_program_goes_on(loop, monkeypatch):
    """Offline nothing answers the invoke (the mocks return {}): the check is skipped, not failed."""
    mocks = Mocks(stack_config("dev"), {})
    run("dev", mocks, loop, monkeypatch)
    assert mocks.calls == [INVOKE]
    assert mocks.registered.count("azure-native:network:FirewallPolicyRuleCollectionGroup") == 3


def test_a_stack_without_a_subscription_makes_no_invoke(loop, monkeypatch):
    mocks = Mocks(stack_config("aks-china"), {"subscriptionId": OTHER})
    run("aks-china", mocks, loop, monkeypatch)
    assert INVOKE not in mocks.calls
    assert "azure-native:network:FirewallPolicyRuleCollectionGroup" in mocks.registered
