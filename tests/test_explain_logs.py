"""egress explain of log lines (issue 22, item 6): one line as the argument or many on stdin, from Azure Firewall (resource-
specific and legacy records), Network Firewall (alert records) and Squid (access.log); each line's source role, the
requirements and what the stack's rules do with that flow; exit 3 when something is denied. The fixtures and where
each shape is documented: tests/data/logs/README.md."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from egress.learn.lines import LineError, engine_of, parse_line

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "tests" / "data" / "logs"


def _lines(name: str) -> list[str]:
    return (LOGS / name).read_text().splitlines()


def _explain(run_cli, monkeypatch, stack: str, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    return run_cli("explain", *args, "--stack", stack, "--project", str(ROOT))


@pytest.mark.parametrize("name, number, expected", [
    ("azure-resource-specific.jsonl", 1, ("azure", "AZFWApplicationRule record", "deny", "", "10.40.16.21", "process.datadoghq.eu", 443, "https")),
    ("azure-resource-specific.jsonl", 2, ("azure", "AZFWApplicationRule record", "allow", "egress-contoso-aks/aks-application/aks-core-https",
                                          "10.40.17.8", "mcr.microsoft.com", 443, "https")),
    ("azure-resource-specific.jsonl", 3, ("azure", "AZFWNetworkRule record", "deny", "", "10.40.16.30", "192.0.2.10", 22, "tcp")),
    ("azure-legacy.log", 1, ("azure", "AzureFirewallApplicationRule record", "allow", "aks-application/aks-core-https", "10.40.16.5",
                             "mcr.microsoft.com", 443, "https")),
    ("azure-legacy.log", 2, ("azure", "legacy message", "deny", "", "10.40.16.5", "mcr.microsoft.com", 443, "https")),
    ("azure-legacy.log", 3, ("azure", "AzureDiagnostics row", "deny", "", "10.40.16.6", "192.0.2.77", 2323, "tcp")),
    ("azure-legacy.log", 4, ("azure", "legacy message", "deny", "", "10.40.16.7", "", None, "https")),
    ("nfw-alert.jsonl", 1, ("aws-nfw", "alert record", "deny", 'sid:999999 "default drop established"', "10.61.4.20", "ghcr.io", 443, "https")),
    ("nfw-alert.jsonl", 2, ("aws-nfw", "alert record", "allow", 'sid:1000021 "kkp-os-ubuntu-archive-ec2"', "10.60.3.7",
                            "eu-west-1.ec2.archive.ubuntu.com", 80, "http")),
    ("nfw-alert.jsonl", 4, ("aws-nfw", "alert record", "", "", "", "", None, "")),
    ("squid-access.log", 1, ("squid", "access.log", "allow", "", "10.60.4.11", "quay.io", 443, "https")),
    ("squid-access.log", 2, ("squid", "access.log", "deny", "", "10.244.3.17", "ghcr.io", 443, "https")),
    ("squid-access.log", 3, ("squid", "access.log", "", "", "10.60.4.12", "", None, "")),
    ("squid-access.log", 4, ("squid", "access.log", "allow", "", "10.60.4.11", "security.ubuntu.com", 80, "http")),
])
def test_each_engine_shape_is_read(name, number, expected):
    text = _lines(name)[number - 1]
    line = parse_line(text)
    assert engine_of(text) == expected[0]
    assert (line.engine, line.shape, line.action, line.rule, line.source, line.destination, line.port, line.protocol) == expected


def test_legacy_message_variants_of_the_sentinel_samples():
    # Azure/Azure-Sentinel Parsers/AzureFirewall/*_sample-dataset.kql: two spaces after HTTP, a Url part, an IDPS drop, ICMP
    http = parse_line("HTTP  request from 10.0.0.1:53717 to ocsp.usertrust.com:80. Url: ocsp.usertrust.com/MFEk=. Action: Deny. No rule "
                      "matched. Proceeding with default action")
    assert (http.host, http.port, http.protocol, http.action) == ("ocsp.usertrust.com", 80, "http", "deny")
    assert http.said == "Deny (No rule matched. Proceeding with default action)"
    drop = parse_line("TCP request from 10.0.0.4:51890 to 192.0.2.14:443. Action: drop. Signature: 2028816. IDS: JA3 Hash. Priority: 3")
    assert (drop.action, drop.rule, drop.address) == ("deny", "IDPS signature 2028816", "192.0.2.14")
    icmp = parse_line("ICMP Type=8 request from 10.0.0.4 to 192.0.2.14. Action: Deny.")
    assert icmp.action == "deny" and icmp.port is None and "ICMP" in icmp.ignored
    policy = parse_line("HTTPS request from 10.0.0.1:49553 to guestconfiguration.azure.com:443. Action: Allow. Policy: p1. Rule Collection "
                        "Group: g1. Rule Collection: c1. Rule: Allowed Business-Use Webcategories. Web Category: ComputersAndTechnology")
    assert policy.rule == "g1/c1/Allowed Business-Use Webcategories"


def test_a_destination_is_no_log_line():
    for destination in ("mcr.microsoft.com:443", "[2001:db8::1]:443", "https://quay.io/v2/", "10.0.0.0/8", "*.blob.core.windows.net"):
        assert engine_of(destination) is None
    with pytest.raises(LineError, match="is no log line of Azure Firewall, Network Firewall or Squid"):
        parse_line("hello world")


def test_one_denied_azure_record_exits_3(run_cli, monkeypatch):
    code, out, err = _explain(run_cli, monkeypatch, "aks-contoso", _lines("azure-resource-specific.jsonl")[0])
    assert code == 3, err
    assert "line 1: Azure Firewall AZFWApplicationRule record: 10.40.16.21 -> process.datadoghq.eu https/443: denied" in out
    assert "  log: Deny (Default Action)\n  source: 10.40.16.21 is nodes\n" in out
    assert "    azure nodes -> process.datadoghq.eu https/443: denied: no rule matches it: Azure Firewall's default deny" in out
    assert out.endswith("1 line(s): 0 allowed, 1 denied, 0 ignored, 0 skipped\n")


def test_one_allowed_record_exits_0_with_requirement_ids_and_the_most_specific_source(run_cli, monkeypatch):
    code, out, err = _explain(run_cli, monkeypatch, "aks-contoso", _lines("azure-resource-specific.jsonl")[1])
    assert code == 0, err
    assert "  source: 10.40.17.8 is in payments, nodes (most specific first); judged as nodes" in out
    assert "    nodes -> mcr.microsoft.com https/443, required\n      entries: aks-public-mcr\n" in out
    assert ("    azure nodes -> mcr.microsoft.com https/443: allowed by rule collection group egress-contoso-aks, collection aks-application, "
            "rule aks-core-https") in out


def test_log_deny_counts_even_where_the_stack_allows(run_cli, monkeypatch):
    code, out, err = _explain(run_cli, monkeypatch, "aks-contoso", "-", stdin=(LOGS / "azure-legacy.log").read_text())
    assert code == 3, err
    assert "line 2: Azure Firewall legacy message: 10.40.16.5 -> mcr.microsoft.com https/443: denied" in out
    assert "note: the log says it was denied, the stack's rules allow it" in out
    assert "line 4: Azure Firewall legacy message: from 10.40.16.7: denied\n  log: Deny (Reason: SNI TLS extension was missing)" in out
    assert out.endswith("4 line(s): 1 allowed, 3 denied, 0 ignored, 0 skipped\n")


def test_log_allow_the_stack_would_deny_is_denied(run_cli, monkeypatch):
    allowed_elsewhere = "1795176000.120    145 10.60.4.11 TCP_TUNNEL/200 6123 CONNECT ghcr.io:443 - HIER_DIRECT/198.51.100.10 -"
    code, out, err = _explain(run_cli, monkeypatch, "proxy-only", allowed_elsewhere)
    assert code == 3, err
    assert "kubernetes nodes -> ghcr.io https/443: denied by http_access deny all" in out
    assert "the log says it was allowed, the stack's rules deny it" in out


def test_network_firewall_lines_on_stdin_without_dash(run_cli, monkeypatch):
    code, out, err = _explain(run_cli, monkeypatch, "kkp-aws", stdin=(LOGS / "nfw-alert.jsonl").read_text())
    assert code == 3, err
    assert ("aws nodes -> api.github.com https/443: denied: no rule passes it: the firewall policy's default actions "
            "aws:drop_established, aws:alert_established drop it") in out
    assert "line 4: Network Firewall alert record: ignored\n  log: a netflow event, no decision" in out
    assert out.endswith("4 line(s): 1 allowed, 2 denied, 1 ignored, 0 skipped\n")


def test_squid_batch_with_garbage_lines_all_allowed_exits_0(run_cli, monkeypatch):
    squid = _lines("squid-access.log")
    stdin = "\n".join([squid[0], "not a log line at all", "", '{"category": "AZFWApplicationRule", "prop', squid[3]]) + "\n"
    code, out, err = _explain(run_cli, monkeypatch, "proxy-only", "-", stdin=stdin)
    assert code == 0, err
    assert "line 2: skipped: 'not a log line at all' is no log line of Azure Firewall, Network Firewall or Squid. Fix:" in out
    assert "line 4: skipped: the JSON record is not whole (Unterminated string" in out
    assert "kubernetes nodes -> security.ubuntu.com http/80: allowed by acl kkp-core-http" in out
    assert out.endswith("4 line(s): 2 allowed, 0 denied, 0 ignored, 2 skipped\n")


def test_stdin_with_nothing_readable_is_bad_input(run_cli, monkeypatch):
    code, out, err = _explain(run_cli, monkeypatch, "proxy-only", "-", stdin="garbage one\n\ngarbage two\n")
    assert code == 1 and out == ""
    assert "stdin: none of its 2 line(s) is a log line egress explain reads; line 1: 'garbage one' is no log line" in " ".join(err.split())
    code, out, err = _explain(run_cli, monkeypatch, "proxy-only", "-", stdin="\n  \n")
    assert code == 1 and out == "" and "stdin holds no log line" in err


def test_json_batch_one_object_per_line_with_stable_keys(run_cli, monkeypatch):
    squid = _lines("squid-access.log")
    code, out, err = _explain(run_cli, monkeypatch, "proxy-only", "-", "--format", "json", stdin="\n".join([*squid, "junk"]) + "\n")
    assert code == 3, err
    document = json.loads(out)
    assert isinstance(document, list) and len(document) == 5
    assert len({tuple(item) for item in document}) == 1  # the same keys, in the same order, whatever the status
    assert [(d["line"], d["status"]) for d in document] == [(1, "allowed"), (2, "denied"), (3, "ignored"), (4, "allowed"), (5, "skipped")]
    first = document[0]
    assert (first["engine"], first["source"], first["source_role"], first["destination"], first["port"], first["protocol"]) == \
        ("squid", "10.60.4.11", "nodes", "quay.io", 443, "https")
    assert first["log"] == {"action": "allow", "said": "TCP_TUNNEL/200", "rule": None, "time": "2026-11-20T12:00:00.120000Z", "ignored": None}
    assert "kkp-images-quay-io-kubermatic" in first["requirements"][0]["entry_ids"]
    assert first["decisions"][0]["outcome"] == "allowed" and first["decisions"][0]["rules"][0]["name"] == "kkp-core-https"
    assert document[4]["error"].startswith("'junk' is no log line") and document[4]["engine"] is None


def test_a_source_of_no_role_is_judged_by_its_address(run_cli, monkeypatch):
    line = "HTTPS request from 172.16.0.5:5000 to mcr.microsoft.com:443. Action: Allow. Rule Collection: aks-application. Rule: aks-core-https"
    code, out, err = _explain(run_cli, monkeypatch, "aks-contoso", line)
    assert code == 0, err  # the stack enforces no flow from an address in none of its roles (another stack's group may allow it)
    assert "  source: 172.16.0.5 is in no role or source group of stack aks-contoso" in out
    assert ("azure (no role) -> mcr.microsoft.com https/443: denied: no rule matches it: Azure Firewall's default deny (not counted: "
            "azure does not enforce this flow for the stack)") in out
    assert "a denial is shown, not counted" in out


def test_credentials_in_a_logged_url_are_not_printed(run_cli, monkeypatch):
    line = "1795176009.000 33 10.60.4.11 TCP_DENIED/403 1520 GET http://admin:hunter2@security.ubuntu.com/x - HIER_NONE/- text/html"
    code, out, err = _explain(run_cli, monkeypatch, "proxy-only", line, "--format", "json")
    assert code == 3, err
    assert "hunter2" not in out + err


def test_destinations_and_rules_are_unchanged(run_cli, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("1795176000.120 145 10.60.4.11 TCP_TUNNEL/200 6123 CONNECT quay.io:443 - HIER_DIRECT/- -\n"))
    code, out, err = run_cli("explain", "mcr.microsoft.com:443", "--stack", "dev", "--project", str(ROOT))  # stdin is not read
    assert code == 0 and out.startswith("mcr.microsoft.com:443 (stack dev)\n"), err
    code, out, err = run_cli("explain", "--rule", "aks-core-https", "--stack", "dev", "--project", str(ROOT))
    assert code == 0 and out.startswith("Rule 'aks-core-https' (stack dev)"), err


def test_an_azure_csv_export_on_stdin_is_read_with_its_header(run_cli, monkeypatch):
    # the portal's CSV export egress learn reads (tests/data/learn/README.md): the header row names the columns of the rows after it
    csv_text = (ROOT / "tests" / "data" / "learn" / "azure-deny.csv").read_text()
    code, out, err = _explain(run_cli, monkeypatch, "aks-contoso", "-", stdin=csv_text)
    assert code == 3, err
    assert "line 1:" not in out  # the header row is no log line
    assert "line 3: Azure Firewall CSV export row: 10.40.16.21 -> mcr.microsoft.com https/443: allowed" in out
    assert "line 6: Azure Firewall CSV export row: 10.40.17.8 -> api.stripe.com https/443: denied" in out
    assert out.endswith("13 line(s): 1 allowed, 12 denied, 0 ignored, 0 skipped\n")
    code, out, err = _explain(run_cli, monkeypatch, "aks-contoso", "-", stdin=csv_text.splitlines()[0] + "\n2026-11-20,Deny\n")
    assert code == 1 and "the CSV row has 2 fields where the header names 11 columns" in err
