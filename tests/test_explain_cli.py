"""egress explain on the command line: from a destination or a rule name to the requirements, on the stack's render or
on what a preview recorded."""
from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_destination_names_the_allowing_rule_on_every_target(run_cli):
    code, out, err = run_cli("explain", "mcr.microsoft.com:443", "--stack", "dev", "--project", str(ROOT))
    assert code == 0, err
    assert ("  azure nodes -> mcr.microsoft.com https/443: allowed by rule collection group egress-dev-aks, collection aks-application, "
            "rule aks-core-https") in out
    assert "  kubernetes nodes -> mcr.microsoft.com https/443: allowed by acl aks-core-https" in out
    assert "entries: aks-public-mcr\n" in out  # KKP pulls from MCR only for Azure clusters (issue 20)


def test_deployed_resources_of_a_preview_are_judged_and_must_be_of_the_stack(run_cli, tmp_path):
    assert run_cli("preview", "--stack", "kkp-aws", "--out", str(tmp_path), "--project", str(ROOT))[0] == 0
    code, out, err = run_cli("explain", "github.com:443", "--stack", "kkp-aws", "--deployed", str(tmp_path / "resources.json"),
                             "--format", "json", "--project", str(ROOT))
    assert code == 0, err
    document = json.loads(out)
    assert document["destination"] == "github.com" and {d["target"] for d in document["decisions"]} == {"aws"}
    code, out, err = run_cli("explain", "github.com:443", "--stack", "dev", "--deployed", str(tmp_path / "resources.json"), "--project", str(ROOT))
    assert code == 1 and "the preview of stack 'kkp-aws', not 'dev'. Fix: pass --stack kkp-aws" in err


def test_rule_name_to_requirements_and_unknown_rule(run_cli):
    code, out, err = run_cli("explain", "--rule", "aks-core-http", "--stack", "dev", "--project", str(ROOT))
    assert code == 0 and "aks-os-updates-changelogs (aks)" in out and "nodes -> security.ubuntu.com http/80, required" in out
    code, out, err = run_cli("explain", "--rule", "aks-core-htps", "--stack", "dev", "--project", str(ROOT))
    assert code == 1 and "aks-core-https" in out and "no rule of stack 'dev' is named 'aks-core-htps'" in err


def test_destination_or_rule_exactly_one(run_cli):
    code, out, err = run_cli("explain", "--stack", "dev", "--project", str(ROOT))
    assert code == 1 and "give a DESTINATION[:PORT] or --rule NAME" in err
