"""Every emitted rule collection group body passes the Azure REST model constraints, offline."""
from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from azure_rest_model import problems

ROOT = Path(__file__).resolve().parents[1]
AZURE_STACKS = ["dev", "aks-public", "aks-usgov", "aks-china"]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = {}  # rendered through the CLI, as users do
    for stack in AZURE_STACKS:
        directory = tmp_path_factory.mktemp(stack)
        result = subprocess.run([sys.executable, "-m", "egress.cli", "render", "--stack", stack, "--target", "azure", "--out", str(directory)],
                                cwd=ROOT, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        out[stack] = {p.stem: json.loads(p.read_text()) for p in sorted((directory / "azure").glob("*.json"))}
    return out


@pytest.mark.parametrize("stack", AZURE_STACKS)
def test_rendered_bodies_conform(rendered, stack):
    assert rendered[stack]
    for name, body in rendered[stack].items():
        assert body["name"] == name
        assert problems(body) == [], name


def _mutated(rendered, mutate):
    body = copy.deepcopy(rendered["aks-public"]["egress-aks-public-aks"])
    mutate(body)
    return problems(body)


def test_the_model_check_catches_what_it_should(rendered):
    def low_priority(b): b["properties"]["priority"] = 50
    def big_port(b): b["properties"]["ruleCollections"][1]["rules"][0]["protocols"][0]["port"] = 70000
    def typo(b): b["properties"]["ruleCollections"][1]["rules"][0]["targetFqdn"] = b["properties"]["ruleCollections"][1]["rules"][0].pop("targetFqdns")
    def bad_enum(b): b["properties"]["ruleCollections"][1]["rules"][0]["protocols"][0]["protocolType"] = "Htps"

    assert any("priority" in p and "100" in p for p in _mutated(rendered, low_priority))
    assert any("port" in p and "64000" in p for p in _mutated(rendered, big_port))
    assert any("targetFqdn: not in the REST model" in p for p in _mutated(rendered, typo))
    assert any("'Htps' is not one of" in p for p in _mutated(rendered, bad_enum))
