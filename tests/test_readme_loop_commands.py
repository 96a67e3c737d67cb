"""The README's commands for corporate proxies, live checks and deny logs run as written (issue 21): every
`python3 dev.py egress export|learn|explain|probe --plan-only` line of that section and of "Using it", with its documented exit code.
Probes without --plan-only reach the network, so they are left to tests/test_probe_*.py."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
SECTION = README[README.index("## Corporate proxies, live checks and deny logs"):README.index("## Protection and migrations")]
# The section's commands, and the export/learn/probe lines of "Using it".
LINES = re.findall(r"^python3 dev\.py egress (?:export|learn|explain|probe)[^\n]*", SECTION, re.M) + \
    re.findall(r"^python3 dev\.py egress (?:export|learn|probe)[^\n]*", README, re.M)
COMMANDS = sorted({line.split("  #")[0].strip() for line in LINES if " probe " not in line or "--plan-only" in line})
EXIT = {"learn": 3}  # proposals written (docs/LEARN.md)


def test_the_section_documents_each_command():
    for command in ("egress export --for proxy", "egress probe", "egress learn", "egress explain"):
        assert command in SECTION
    assert len(COMMANDS) >= 7


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command_runs(command, run_cli, tmp_path, monkeypatch):
    args = shlex.split(command)[3:]
    if "--out" in args:
        args[args.index("--out") + 1] = str(tmp_path / args[args.index("--out") + 1])
    elif args[0] == "learn":  # its default --out is learn-proposals.yaml in the working directory: not the repository's
        args += ["--out", str(tmp_path / "learn-proposals.yaml")]
    code, out, err = run_cli(*args, cwd=ROOT)
    assert code == EXIT.get(args[0], 0), (command, err)
    assert out.strip()


def test_learn_warns_about_an_expired_own_entry(run_cli, tmp_path, monkeypatch):
    """An own entry that expired is a likely reason a flow is denied now: learn says so, as the other commands do."""
    monkeypatch.setenv("EGRESS_TODAY", "2027-07-01")  # aks-contoso's stack/pagerduty-events expired on 2027-06-30
    code, out, err = run_cli("learn", "--stack", "aks-contoso", "tests/data/learn/azure-deny.csv", "--out", str(tmp_path / "p.yaml"), cwd=ROOT)
    assert code == 3, err
    assert "warning" in err and "stack/pagerduty-events" in err
