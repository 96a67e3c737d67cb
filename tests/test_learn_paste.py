"""A proposal copied into the stack: refused while nobody owns it, and once owned it validates and `egress diff`'s
comparison shows exactly the requirements the proposals asked for (the review happens in the pull request)."""
from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from egress.project import open_project
from egress_preview.diff import compare, markdown
from egress_preview.preview import preview, snapshot
from learn_support import proposals, run_learn

ROOT = Path(__file__).resolve().parents[1]
STACK = "aks-contoso"
KEY = "egress-matrix"


def _paste(stack_file, doc: dict, owned: bool) -> None:
    """What a reviewer does: each entry under egress-matrix:entries (owner and reference filled in when ``owned``), each
    turn_on's first option's settings added to their lists."""
    stack = yaml.safe_load(stack_file.read_text())
    config = stack["config"]
    for proposal in doc["proposals"]:
        if "entry" in proposal:
            entry = dict(proposal["entry"])
            if owned:
                entry.update(owner="platform-team", reference="https://tickets.contoso.example/OPS-3001")
            config[f"{KEY}:entries"].append(entry)
        else:
            for setting, values in proposal["turn_on"][0]["add"].items():
                config[setting] = [*config.get(setting, []), *values]
    stack_file.write_text(yaml.safe_dump(stack, sort_keys=False))


def test_an_unowned_proposal_is_refused_naming_the_field(project_copy, run_cli):
    code, _, err, text = run_learn(run_cli, project_copy, STACK, "azure-deny.csv")
    assert code == 3, err
    _paste(project_copy / "stacks" / f"Pulumi.{STACK}.yaml", proposals(text), owned=False)
    code, out, err = run_cli("matrix", "--stack", STACK, "--project", str(project_copy))
    message = " ".join(err.split())
    assert code == 1 and out == ""
    assert f"field 'config.{KEY}:entries[1].owner'" in message, message  # entries[0] is the stack's own pagerduty-events
    assert "Fix: " in message


def test_owned_proposals_validate_and_the_diff_shows_what_they_ask_for(project_copy, run_cli):
    shutil.copy(ROOT / "__main__.py", project_copy / "__main__.py")  # the program and the pack, as egress diff previews them
    for folder in ("components", "policy"):
        shutil.copytree(ROOT / folder, project_copy / folder, ignore=shutil.ignore_patterns("__pycache__"))
    code, _, err, text = run_learn(run_cli, project_copy, STACK, "azure-deny.csv")
    assert code == 3, err
    doc = proposals(text)
    base = snapshot(preview(open_project(project_copy), STACK))
    _paste(project_copy / "stacks" / f"Pulumi.{STACK}.yaml", doc, owned=True)
    head = snapshot(preview(open_project(project_copy), STACK))
    result = compare(base, head)

    asked = {(p["entry"]["role"], p["destination"], p["protocol"], (p["port"],)) for p in doc["proposals"] if "entry" in p}
    asked |= {tuple(row["allows"].replace(" -> ", " ").replace("/", " ").split()[:3]) + ((443,),)
              for p in doc["proposals"] if "turn_on" in p for row in p["turn_on"][0]["rows"]}
    added = {(r["role"], r["destination"], r["protocol"], tuple(r["ports"])) for r in result["requirements_added"]}
    assert asked <= added  # every proposal is a new requirement
    learned = {(r["role"], r["destination"]) for r in result["requirements_added"] if any(e.startswith("stack/") for e in r["entries"])}
    assert learned == {(p["entry"]["role"], p["destination"]) for p in doc["proposals"] if "entry" in p}  # and no other own entry
    assert result["requirements_removed"] == []
    comment = markdown(STACK, "main", result)
    for proposal in doc["proposals"]:
        assert f"`{proposal['destination']}`" in comment
    assert not [v for v in result["new_violations"] if v["level"] == "mandatory"]
