"""Issue 17 review: the Pulumi program runs the stack-wide breadth check (egress/guard.py) before it registers or exports
anything, as ``Project.requirements`` does for every command. Its ``requirements`` and ``allowlistExports`` outputs
hand on what the stack allows whatever its targets enforce: a cluster-proxy-only stack enforces no destination, so no
target's compile judges its own entries."""
from __future__ import annotations

import json
import runpy

import pulumi
import pytest

from pulumi_harness import settle
from test_program import ROOT, RecordingMocks, stack_config

BROAD = {"id": "everything", "destination": "0.0.0.0/0", "protocol": "tcp", "ports": [443], "purpose": "Anything",
         "owner": "team-x", "reference": "OPS-1"}


@pytest.mark.parametrize("stack", ["openshift", "proxy-only"])
def test_a_broad_own_entry_registers_and_exports_nothing(stack, loop, monkeypatch):  # noqa: F811 - the fixture
    monkeypatch.chdir(ROOT)
    mocks = RecordingMocks()
    pulumi.runtime.set_mocks(mocks, project="egress-matrix", stack=stack, preview=False)
    config = stack_config(stack)
    config["egress-matrix:entries"] = json.dumps([BROAD])
    pulumi.runtime.set_all_config(config)
    exported = []
    monkeypatch.setattr(pulumi, "export", lambda name, value: exported.append(name))
    with pytest.raises(pulumi.RunError) as info:
        runpy.run_path(str(ROOT / "__main__.py"))
    settle(loop)
    assert str(info.value).startswith(f"BreadthError: Pulumi config of stack '{stack}': config.egress-matrix:entries[0] 'everything' "
                                      "(own entry stack/everything): field 'destination' = '0.0.0.0/0' (tcp/443) covers 100% of public IPv4")
    assert mocks.registered == [] and exported == []


def test_a_narrow_own_entry_is_exported(loop, monkeypatch):  # noqa: F811 - the fixture
    """The check does not refuse what is within the limits: the same stack with the entry narrowed runs."""
    monkeypatch.chdir(ROOT)
    pulumi.runtime.set_mocks(RecordingMocks(), project="egress-matrix", stack="openshift", preview=False)
    config = stack_config("openshift")
    config["egress-matrix:entries"] = json.dumps([{**BROAD, "destination": "198.51.100.0/24"}])
    pulumi.runtime.set_all_config(config)
    outputs = {}
    monkeypatch.setattr(pulumi, "export", lambda name, value: outputs.__setitem__(name, value))
    runpy.run_path(str(ROOT / "__main__.py"))
    settle(loop)
    assert any(r["destination"] == "198.51.100.0/24" for r in outputs["requirements"])
