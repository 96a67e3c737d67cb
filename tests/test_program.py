"""The Pulumi program under the SDK's mocks: the dev stack's config in, the resolved matrix out."""
from __future__ import annotations

import asyncio
import json
import runpy
from pathlib import Path

import pulumi
import pytest
import yaml

from egress.exports import allowlist_exports
from egress.project import open_project
from egress.render import requirement_json

ROOT = Path(__file__).resolve().parents[1]


class Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args):
        return f"{args.name}-id", args.inputs

    def call(self, args):
        return {}


def stack_config(stack: str) -> dict[str, str]:
    """What the CLI would hand the program: every value a string, structured values as JSON."""
    config = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]
    return {key: value if isinstance(value, str) else json.dumps(value) for key, value in config.items()}


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    # A fresh root stack resource per test: one left by an earlier test belongs to a closed loop, and a resource
    # registered before a synchronous invoke (the explicit provider) would wait on it.
    pulumi.runtime.settings.ROOT.set(None)
    yield loop
    loop.close()
    asyncio.set_event_loop(None)


AZURE_GROUPS = {"dev": ["egress-dev-aks", "egress-dev-kkp", "egress-dev-openshift"], "aks-china": ["egress-aks-china-aks"], "aks-spoke": ["egress-payments-aks"],
                "ibm-vpc": None}


@pytest.mark.parametrize("stack", ["dev", "aks-china", "aks-spoke", "ibm-vpc"])
def test_program_exports_the_resolved_matrix(stack, loop, monkeypatch):
    monkeypatch.chdir(ROOT)
    pulumi.runtime.set_mocks(Mocks(), project="egress-matrix", stack=stack, preview=False)
    pulumi.runtime.set_all_config(stack_config(stack))
    outputs = {}
    original = pulumi.export
    monkeypatch.setattr(pulumi, "export", lambda name, value: (outputs.__setitem__(name, value), original(name, value)))
    runpy.run_path(str(ROOT / "__main__.py"))
    catalog, profile, expected = open_project(ROOT).requirements(stack)
    assert outputs["requirementCount"] == len(expected)
    assert outputs["requirements"] == [requirement_json(r) for r in expected]
    assert outputs["allowlistExports"] == allowlist_exports(catalog, profile)
    assert bool(outputs["allowlistExports"]) is (stack == "ibm-vpc")
    if AZURE_GROUPS[stack] is None:
        assert "azureRuleCollectionGroups" not in outputs
    else:
        groups = []
        outputs["azureRuleCollectionGroups"].apply(groups.extend)
        loop.run_until_complete(asyncio.sleep(0.05))
        assert groups == AZURE_GROUPS[stack]


class RecordingMocks(Mocks):
    def __init__(self):
        self.registered = []

    def new_resource(self, args):
        self.registered.append(args.typ)
        return super().new_resource(args)


def test_bad_stack_config_fails_with_one_message_and_registers_nothing(loop, monkeypatch):
    monkeypatch.chdir(ROOT)
    mocks = RecordingMocks()
    pulumi.runtime.set_mocks(mocks, project="egress-matrix", stack="dev", preview=False)
    config = stack_config("dev")
    config["egress-matrix:location"] = "atlantis"
    pulumi.runtime.set_all_config(config)
    exported = []
    monkeypatch.setattr(pulumi, "export", lambda name, value: exported.append(name))
    with pytest.raises(pulumi.RunError) as info:
        runpy.run_path(str(ROOT / "__main__.py"))
    message = str(info.value)
    assert message.startswith("ProfileError: Pulumi config of stack 'dev': stack 'dev': field 'config.egress-matrix:location' = 'atlantis'")
    assert "unknown location for cloud azure-public" in message
    assert exported == [] and mocks.registered == []
