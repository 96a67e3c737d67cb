"""egress explain's verdict (review of issue 22, items 4 and 5, and its suspicions on stdin and Squid codes): one rule for a
DESTINATION[:PORT] and for log lines (egress/explain/verdict.py): a denial counts only where the target enforces the
flow, a log line is judged by the target running the engine that wrote it; log-derived text never reaches the terminal
with its control characters; stdin is split at \\n only; Squid's result codes are read as Squid means them
(squid-cache/squid-cache.github.io SquidFaq/SquidLogs.md, "Squid result codes"; squid-cache/squid src/LogTags.cc)."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from egress.explain.log_input import split_lines
from egress.explain.model import ALLOWED, DENIED, NOT_ENFORCED, Decision
from egress.explain.verdict import allowed, counts, denied, judging
from egress.learn.lines import parse_line, printable

ROOT = Path(__file__).resolve().parents[1]
MCR_ALLOWED = json.dumps({"time": "2026-11-20T08:14:04.0000000Z", "category": "AZFWApplicationRule", "properties": {
    "Protocol": "HTTPS", "SourceIp": "10.0.0.5", "SourcePort": 50213, "DestinationPort": 443, "Fqdn": "mcr.microsoft.com", "Action": "Allow",
    "Policy": "hub", "RuleCollectionGroup": "egress-dev-aks", "RuleCollection": "aks-application", "Rule": "aks-core-https", "ActionReason": ""}})


def _explain(run_cli, monkeypatch, stack: str, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    return run_cli("explain", *args, "--stack", stack, "--project", str(ROOT))


def _d(target: str, outcome: str, enforced: bool = True) -> Decision:
    return Decision(target, "nodes", "x.example", "https", "443", outcome, True, enforced=enforced)


def test_a_denial_counts_only_where_the_target_enforces_the_flow():
    assert counts(_d("aws", DENIED)) and not counts(_d("aws", DENIED, enforced=False)) and not counts(_d("aws", ALLOWED))
    assert not denied([_d("azure", ALLOWED), _d("aws", DENIED, enforced=False)])
    assert allowed([_d("azure", ALLOWED), _d("aws", DENIED, enforced=False)])
    assert denied([_d("azure", ALLOWED), _d("kubernetes", DENIED)])


def test_a_log_line_is_judged_by_the_target_of_its_engine_when_the_stack_has_it():
    both = [_d("azure", ALLOWED), _d("kubernetes", DENIED)]
    assert not denied(both, "azure") and allowed(both, "azure")
    assert denied(both, "squid") and not allowed(both, "squid")
    assert [d.target for d in judging(both, "aws-nfw")] == ["azure", "kubernetes"]  # no aws target: every target judges
    assert denied(both, "aws-nfw")
    assert not allowed([_d("kubernetes", NOT_ENFORCED, enforced=False)], "squid")


def test_destination_a_target_leaving_the_requirement_out_is_shown_not_counted(run_cli):
    code, out, err = run_cli("explain", "mcr.microsoft.com:443", "--stack", "dev", "--project", str(ROOT), "--format", "json")
    assert code == 0, err
    aws = [d for d in json.loads(out)["decisions"] if d["target"] == "aws"]
    assert [(d["outcome"], d["enforced"]) for d in aws] == [("denied", False)]


def test_destination_nothing_requires_denied_by_a_target_enforcing_its_role_exits_3(run_cli):
    code, out, err = run_cli("explain", "example.org:443", "--stack", "dev", "--project", str(ROOT))
    assert code == 3, err
    assert "Not required: no requirement of stack dev needs example.org:443." in out
    assert "not counted" not in out


def test_an_allowed_azure_line_is_not_denied_by_a_target_that_does_not_enforce_it(run_cli, monkeypatch):
    code, out, err = _explain(run_cli, monkeypatch, "dev", MCR_ALLOWED)
    assert code == 0, err
    assert "line 1: Azure Firewall AZFWApplicationRule record: 10.0.0.5 -> mcr.microsoft.com https/443: allowed" in out
    assert "  targets (judged by azure: Azure Firewall wrote the line; the others for information):" in out
    assert "(not counted: aws does not enforce this flow for the stack)" in out
    assert "once this stack is deployed, this flow stops" not in out
    code, out, err = _explain(run_cli, monkeypatch, "dev", MCR_ALLOWED, "--format", "json")
    assert code == 0 and json.loads(out)[0]["judged_by"] == "azure", err


def test_log_fields_reach_the_terminal_with_their_control_characters_escaped(run_cli, monkeypatch):
    record = json.loads(MCR_ALLOWED)
    record["properties"].update(RuleCollectionGroup="\u001b[31mRED\u001b[0m\u001b]0;pwned\u0007", ActionReason="\u001b[2Jcleared\u202e")
    code, out, err = _explain(run_cli, monkeypatch, "dev", json.dumps(record))
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "  log: Allow (\\x1b[2Jcleared\\u202e), rule \\x1b[31mRED\\x1b[0m\\x1b]0;pwned\\x07/aks-application/aks-core-https" in out
    code, out, err = _explain(run_cli, monkeypatch, "dev", json.dumps(record), "--format", "json")
    assert "\x1b" not in out and json.loads(out)[0]["log"]["rule"].startswith("\x1b[31mRED")  # JSON escapes it itself
    assert "\x1b" not in json.loads(out)[0]["text"]  # the evidence is one printable line


def test_an_unreadable_line_is_reported_with_its_control_characters_escaped(run_cli, monkeypatch):
    bad = "HTTPS request from 10.0.0.5\x1b[2J:5000 to x.example:443. Action: Deny."
    code, out, err = _explain(run_cli, monkeypatch, "dev", "-", stdin=f"{bad}\n")
    assert code == 1 and "\x1b" not in err and "\\x1b[2J" in err, err
    code, out, err = _explain(run_cli, monkeypatch, "dev", "-", stdin=f"{bad}\n{MCR_ALLOWED}\n")
    assert code == 0 and "\x1b" not in out and "line 1: skipped: the source address '10.0.0.5\\x1b[2J' is not an IP address" in out, err


def test_printable_escapes_controls_and_keeps_text():
    assert printable("a\tb\x1b[0m\x85\u2028\u202ec é 日本") == "a\\tb\\x1b[0m\\x85\\u2028\\u202ec é 日本"


def test_stdin_is_split_at_newlines_only():
    record = json.loads(MCR_ALLOWED)
    record["properties"]["ActionReason"] = "a\u2028b\x85c\x1cd\x0be"
    line = json.dumps(record, ensure_ascii=False)
    assert split_lines(f"{line}\r\n{line}\n") == [line, line]
    assert split_lines("a\rb\n") == ["a\rb"] and split_lines("") == [] and split_lines("a") == ["a"]
    assert parse_line(split_lines(line + "\n")[0]).said == "Allow (a\u2028b\x85c\x1cd\x0be)"  # raw; escaped where it is printed


def test_a_record_holding_a_unicode_line_separator_is_one_line_on_stdin(run_cli, monkeypatch):
    record = json.loads(MCR_ALLOWED)
    record["properties"]["ActionReason"] = "a\u2028b\x85c"
    code, out, err = _explain(run_cli, monkeypatch, "dev", "-", stdin=json.dumps(record, ensure_ascii=False) + "\r\n")
    assert code == 0, err
    assert out.endswith("1 line(s): 1 allowed, 0 denied, 0 ignored, 0 skipped\n")


@pytest.mark.parametrize("code, action, meaning", [
    ("TCP_DENIED/403", "deny", ""),
    ("TCP_DENIED_REPLY/403", "deny", ""),
    ("TAG_NONE/403", "deny", "Squid refused it before classifying the transaction"),
    ("NONE_NONE/403", "deny", "Squid refused it before classifying the transaction"),
    ("NONE/403", "deny", "Squid refused it before classifying the transaction"),
    ("NONE_NONE/503", "", "no access decision"),
    ("NONE/503", "", "no access decision"),
    ("TAG_NONE/400", "", "no access decision"),
    ("NONE_NONE/000", "", "no access decision"),
    ("NONE/200", "allow", ""),
    ("TCP_TUNNEL/200", "allow", ""),
    ("TCP_MISS/503", "allow", ""),  # the server's own 503, passed on: the proxy let the request through
    ("ERR_ACCESS_DENIED/403", "deny", ""),
    ("ERR_FORWARDING_DENIED/403", "deny", ""),
    ("ERR_DNS_FAIL/503", "", "Squid's error page ERR_DNS_FAIL"),
    ("ERR_CONNECT_FAIL/503", "", "Squid's error page ERR_CONNECT_FAIL"),
])
def test_squid_result_codes_are_read_as_squid_means_them(code, action, meaning):
    line = parse_line(f"1795176001.456      0 10.60.4.11 {code} 3950 CONNECT ghcr.io:443 - HIER_NONE/- text/html")
    assert (line.action, line.ignored) == (action, "")
    assert line.said.startswith(code) and meaning in line.said


@pytest.mark.parametrize("code", ["TCP_DENIED/407", "NONE_NONE/407", "ERR_CACHE_ACCESS_DENIED/407"])
def test_squid_authentication_challenges_are_ignored(code):
    line = parse_line(f"1795176002.000      0 10.60.4.12 {code} 3950 CONNECT quay.io:443 - HIER_NONE/- text/html")
    assert line.action == "" and line.ignored.startswith("Squid's authentication challenge")


def test_squid_errors_are_explained_by_the_rules_and_a_none_403_is_denied(run_cli, monkeypatch):
    failed = "1795176001.456      0 10.60.4.11 NONE_NONE/503 0 CONNECT quay.io:443 - HIER_NONE/- -"
    code, out, err = _explain(run_cli, monkeypatch, "proxy-only", failed)
    assert code == 0, err  # quay.io is allowed by the rules; Squid could not reach it: no denial
    assert "log: NONE_NONE/503 (Squid answered with an error before classifying the transaction: no access decision)" in out
    assert "kubernetes nodes -> quay.io https/443: allowed by acl" in out
    refused = "1795176001.456      0 10.60.4.11 TAG_NONE/403 3950 CONNECT quay.io:443 - HIER_NONE/- text/html"
    code, out, err = _explain(run_cli, monkeypatch, "proxy-only", refused)
    assert code == 3 and ": denied\n" in out, err


def test_a_source_in_no_role_is_named_not_left_as_an_empty_role(run_cli, monkeypatch):
    """A Squid line from an address in none of kkp-aws's roles: the security groups' reason names the source, not 'role  '."""
    line = "1795176000.120 145 10.0.0.5 TCP_TUNNEL/200 6123 CONNECT evil.example.com:443 - HIER_DIRECT/- -"
    code, out, err = _explain(run_cli, monkeypatch, "kkp-aws", line)
    assert "of role  " not in out and "for source 10.0.0.5 (in none of the stack's roles)" in out, out
