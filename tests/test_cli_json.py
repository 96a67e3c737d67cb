"""`--format json` wherever a person might script a command (issue 22 item 6): one JSON document on stdout with stable
keys, the messages on stderr, the same facts and exit status as the text form."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from egress_preview.policy_events import check_event_log

ROOT = Path(__file__).resolve().parents[1]
EVENT_LOG = ROOT / "tests" / "data" / "event_logs" / "preview-update-cant-run.jsonl"
PACK_CONFIG = ROOT / "policy" / "config" / "default.json"


def as_json(out: str):
    return json.loads(out)  # the whole of stdout: nothing else may be printed there


def test_render_json_lists_each_targets_files(run_cli, tmp_path):
    code, out, err = run_cli("render", "--stack", "dev", "--out", str(tmp_path / "out"), "--format", "json", "--project", str(ROOT))
    assert code == 0, err
    doc = as_json(out)
    assert set(doc) == {"stack", "out", "targets", "kept", "notes", "warnings"} and doc["stack"] == "dev"
    assert doc["notes"] == doc["warnings"] == []  # dev creates its policy: no hub facts to judge
    assert [t["target"] for t in doc["targets"]] == ["azure", "aws", "kubernetes"]
    for target in doc["targets"]:
        assert set(target) == {"target", "files", "summary"} and target["files"] == sorted(target["files"])
        for name in target["files"]:
            assert (tmp_path / "out" / name).is_file(), name
    assert "wrote " in err  # the messages stay on stderr


def test_render_json_carries_what_was_not_read_of_the_hub(run_cli, tmp_path):
    """aks-spoke attaches to a hub policy it declares nothing of: the JSON says what preview says, "not read offline"."""
    code, out, err = run_cli("render", "--stack", "aks-spoke", "--out", str(tmp_path / "out"), "--format", "json", "--project", str(ROOT))
    assert code == 0, err
    doc = as_json(out)
    assert doc["notes"] and all(isinstance(n, str) for n in doc["notes"])
    assert any("not read offline" in line for line in doc["notes"] + doc["warnings"]), doc


def test_render_text_prints_nothing_on_stdout(run_cli, tmp_path):
    code, out, err = run_cli("render", "--stack", "dev", "--out", str(tmp_path / "out"), "--project", str(ROOT))
    assert code == 0 and out == "" and "wrote " in err


def test_policy_events_json_is_the_gate(run_cli):
    code, out, err = run_cli("policy-events", str(EVENT_LOG), "--policy-pack-config", str(PACK_CONFIG), "--format", "json",
                             "--project", str(ROOT))
    gate = check_event_log(EVENT_LOG, PACK_CONFIG, ROOT / "policy")
    doc = as_json(out)
    assert code == 1 and "the policy gate failed" in err  # the same exit status and message as the text form
    assert set(doc) == {"ok", "blocking", "advisory", "results", "problems", "passed"}
    assert doc["ok"] is False and doc["blocking"] == len(gate.blocking) > 0
    assert [r["policy"] for r in doc["results"] if r["blocking"]] == [r.policy for r in gate.blocking]
    assert set(doc["results"][0]) == {"policy", "pack", "level", "cantRun", "resource", "message", "blocking"}


def test_noproxy_json_has_the_string_and_its_entries(run_cli):
    args = ("noproxy", "--platform", "aws", "--region", "eu-west-1", "--cluster-name", "c", "--base-domain", "example.com",
            "--http-proxy", "http://proxy:3128", "--service-network", "172.30.0.0/16", "--cluster-network", "10.128.0.0/14",
            "--project", str(ROOT))
    code, text, _ = run_cli(*args)
    assert code == 0
    code, out, _ = run_cli(*args, "--format", "json")
    doc = as_json(out)
    assert code == 0 and doc["noProxy"] == text.strip() and doc["entries"] == text.strip().split(",")
    assert "api-int.c.example.com" in doc["entries"]


def test_catalog_check_json(run_cli):
    code, out, err = run_cli("catalog", "check", "--format", "json", "--project", str(ROOT))
    assert code == 0 and err.startswith("ok: ")
    doc = as_json(out)
    assert set(doc) == {"ok", "entries", "platforms", "sources", "stacks"} and doc["ok"] is True and doc["entries"] > 300
    stacks = {s["stack"]: s for s in doc["stacks"]}
    assert "dev" in stacks and set(stacks["dev"]) == {"stack", "own", "resolved", "expired", "groups", "warnings"}


def test_stacks_check_json(run_cli):
    code, out, err = run_cli("stacks", "check", "--format", "json", "--project", str(ROOT))
    assert code == 0 and err.startswith("ok: ")
    doc = as_json(out)
    assert set(doc) == {"ok", "stacks", "sharedPolicies"} and "dev" in doc["stacks"]
    assert all(set(p) == {"lock", "stacks"} and len(p["stacks"]) > 1 for p in doc["sharedPolicies"])


def test_learn_summary_json_is_the_proposals_document(run_cli, project_copy):
    (project_copy / "logs").mkdir()
    shutil.copyfile(ROOT / "tests" / "data" / "learn" / "azure-deny.csv", project_copy / "logs" / "azure-deny.csv")
    code, out, err = run_cli("learn", "--stack", "aks-contoso", "logs/azure-deny.csv", "--out", "proposals.yaml", "--summary", "json",
                             "--project", str(project_copy), cwd=project_copy)
    assert code == 3, err  # proposals written: the same exit status as with the Markdown summary
    doc = as_json(out)
    assert set(doc) == {"stack", "out", "proposals", "document"} and doc["stack"] == "aks-contoso"
    assert doc["document"] == yaml.safe_load((project_copy / "proposals.yaml").read_text(encoding="utf-8"))
    assert doc["proposals"] == len(doc["document"]["proposals"]) > 0


def test_preview_json(run_cli, tmp_path):
    code, out, err = run_cli("preview", "--stack", "dev", "--out", str(tmp_path / "out"), "--format", "json", "--project", str(ROOT))
    assert code == 0, err
    doc = as_json(out)
    assert {"stack", "phase", "resources", "resourceTypes", "requirements", "coverage", "notes", "warnings", "mandatory",
            "advisory", "violations"} <= set(doc)
    assert doc["stack"] == "dev" and doc["phase"] == "up" and doc["mandatory"] == 0
    assert doc["resources"] == sum(doc["resourceTypes"].values()) == len(json.loads((tmp_path / "out" / "resources.json").read_text())["resources"])
    assert [c["target"] for c in doc["coverage"]] == ["azure", "aws", "kubernetes"]
    assert all(c["allowed"] == c["enforced"] for c in doc["coverage"])
    assert "wrote " in err


def test_a_failed_json_command_prints_nothing_on_stdout(run_cli, project_copy, tmp_path):
    # One contract for every --format json report (review of issue 22): a command that cannot make its report (bad input)
    # exits 1 with the one error on stderr and leaves stdout empty; a report with a verdict (policy-events, explain) is
    # still printed, its exit code saying the verdict. A script checks the exit code first, then parses stdout.
    stack = project_copy / "stacks" / "Pulumi.aks-public.yaml"
    stack.write_text(stack.read_text().replace("config:\n", "config:\n  egress-matrix:colour: red\n", 1))
    for command in (["render", "--stack", "aks-public", "--out", str(tmp_path / "out")], ["catalog", "check"], ["stacks", "check"],
                    ["matrix", "--stack", "aks-public"]):
        code, out, err = run_cli(*command, "--format", "json", "--project", str(project_copy))
        assert (code, out) == (1, ""), (command, out)
        assert "config.egress-matrix:colour" in err and "Traceback" not in err, command
