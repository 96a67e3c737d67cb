"""egress learn on Azure Firewall deny logs (AZFWApplicationRule / AZFWNetworkRule exports): exact proposals, grouped,
citing the log lines; nothing changes in the project; a proposal pasted into the stack validates once owned."""
from __future__ import annotations

import datetime

import pytest
import yaml

from egress.learn import azure
from egress.learn.azure import parse
from egress.learn.flows import LearnError, parse_time
from learn_support import expected, proposals, run_learn

STACK = "aks-contoso"


def test_csv_export_gives_exact_proposals(project_copy, run_cli):
    code, out, err, text = run_learn(run_cli, project_copy, STACK, "azure-deny.csv")
    assert code == 3, err  # proposals to review
    assert text == expected("azure-csv.yaml")
    assert out == expected("azure-csv.md")
    doc = proposals(text)
    outcome = {(p["source"], p["destination"], p["port"]): "turn_on" if "turn_on" in p else "entry" for p in doc["proposals"]}
    assert outcome == {
        ("nodes", "process.datadoghq.eu", 443): "turn_on",  # datadog-process is off: one feature brings the row
        ("nodes", "westeurope.dp.kubernetesconfiguration.azure.com", 443): "turn_on",  # {location} filled from the stack
        ("nodes", "api.stripe.com", 443): "entry",  # the payments group's row, not the nodes'
        ("nodes", "contosoacr.francecentral.data.azurecr.io", 443): "entry",  # one label from the ACR's replicas
        ("nodes", "kv-contoso-shared.vault.azure.net", 443): "entry",  # a sibling of the stack's Key Vault
        ("nodes", "mcr.microsoft.com", 80): "entry",  # the right host on a port no row lists
        ("nodes", "203.0.113.4", 22): "entry",  # a network rule logs the address only
    }
    by_destination = {p["destination"]: p for p in doc["proposals"] if p["port"] != 80}
    assert by_destination["process.datadoghq.eu"]["turn_on"][0]["add"] == {"egress-matrix:features": ["datadog-process"]}
    assert by_destination["process.datadoghq.eu"]["evidence"]["denied"] == 2  # two lines, two clients, one group
    assert [line["at"] for line in by_destination["process.datadoghq.eu"]["evidence"]["lines"]] == ["logs/azure-deny.csv:2", "logs/azure-deny.csv:4"]
    assert [m["kind"] for m in by_destination["api.stripe.com"]["near_misses"]] == ["another source"]
    assert doc["findings"][0]["allowed_by"] == ["payments/stripe-api"]  # the payments pool may: the firewall lags the stack
    assert doc["unknown_sources"][0]["evidence"]["sources"] == ["192.168.7.7"]
    assert doc["logs"] == [{"file": "logs/azure-deny.csv", "format": "azure-csv", "records": 13, "denied": 10, "allowed": 2, "ignored": 1,
                            "ignored_because": [{"reason": azure.NO_ROW, "records": 1, "lines": ["logs/azure-deny.csv:13"]}]}]


def test_az_cli_json_gives_exact_proposals(project_copy, run_cli):
    code, out, err, text = run_learn(run_cli, project_copy, STACK, "azure-deny-az.json")
    assert code == 3, err
    assert text == expected("azure-json.yaml")
    assert out == expected("azure-json.md")
    entry = proposals(text)["proposals"][1]["entry"]
    assert (entry["role"], entry["destination"], entry["ports"]) == ("payments", "198.51.100.7", [5432])  # the group, not nodes


def test_nothing_denied_exits_0(project_copy, run_cli):
    (project_copy / "logs").mkdir()
    (project_copy / "logs" / "allowed.csv").write_text("TimeGenerated,Action,SourceIp,Fqdn,DestinationPort,Protocol\n"
                                                       "2026-11-20T08:14:04Z,Allow,10.40.16.21,mcr.microsoft.com,443,HTTPS\n")
    code, out, err = run_cli("learn", "--stack", STACK, "logs/allowed.csv", "--out", "proposals.yaml", "--project", str(project_copy),
                             cwd=project_copy)
    assert code == 0, err
    assert "1 records, 0 denied, 1 allowed (skipped)" in out and "Nothing to propose" in out
    assert yaml.safe_load((project_copy / "proposals.yaml").read_text())["proposals"] == []


def test_out_replaces_only_an_earlier_proposals_file(project_copy, run_cli):
    (project_copy / "logs").mkdir()
    (project_copy / "logs" / "a.csv").write_text("TimeGenerated,Action,SourceIp,Fqdn,DestinationPort,Protocol\n"
                                                 "2026-11-20T08:14:04Z,Deny,10.40.16.21,process.datadoghq.eu,443,HTTPS\n")
    (project_copy / "notes.yaml").write_text("my: notes\n")
    code, out, err = run_cli("learn", "--stack", STACK, "logs/a.csv", "--out", "notes.yaml", "--project", str(project_copy), cwd=project_copy)
    assert code == 1 and out == ""
    assert "notes.yaml: exists and is not an earlier egress learn proposals file" in " ".join(err.split())
    assert (project_copy / "notes.yaml").read_text() == "my: notes\n"
    for _ in range(2):  # the second run replaces what the first wrote
        code, _, err = run_cli("learn", "--stack", STACK, "logs/a.csv", "--out", "p.yaml", "--project", str(project_copy), cwd=project_copy)
        assert code == 3, err


def test_times_in_every_form_the_exports_use():
    utc = datetime.timezone.utc
    assert parse_time("2026-11-20T08:14:03.1234567Z") == datetime.datetime(2026, 11, 20, 8, 14, 3, 123456, tzinfo=utc)  # Kusto tostring()
    assert parse_time("11/20/2026, 8:14:03.123 PM") == datetime.datetime(2026, 11, 20, 20, 14, 3, 123000, tzinfo=utc)  # the portal's
    assert parse_time("2020-10-13T22:10:01.006481+0000") == datetime.datetime(2020, 10, 13, 22, 10, 1, 6481, tzinfo=utc)  # Suricata's
    assert parse_time("yesterday") is None


def test_az_json_rows_are_cited_by_the_line_their_object_starts_on():
    text = '[\n  {\n    "TableName": "PrimaryResult", "TimeGenerated": "2026-11-21T07:00:00Z", "Action": "Deny",\n' \
           '    "SourceIp": "10.0.0.1", "Fqdn": "a.example.com", "DestinationPort": "443", "Protocol": "HTTPS"\n  },\n' \
           '  {"TableName": "PrimaryResult", "TimeGenerated": "2026-11-21T07:00:01Z", "Action": "Deny", "SourceIp": "10.0.0.1",' \
           ' "Fqdn": "None", "DestinationIp": "192.0.2.1", "DestinationPort": "None", "Protocol": "ICMP"}\n]\n'
    read = parse(text, "q.json")
    assert [(f.line, f.host, f.port) for f in read.flows] == [(2, "a.example.com", 443)]
    assert (read.records, read.ignored) == (2, 1)  # ICMP: no matrix row is about it


@pytest.mark.parametrize("text, message", [
    ("TimeGenerated,Action,SourceIp,DestinationPort,Protocol\n", "the CSV header has no column Fqdn or DestinationIp"),
    ("TimeGenerated,Action,SourceIp,Fqdn,DestinationPort,Protocol\nx,Deny,10.0.0.1,a.example.com,443\n", "line 2: has 5 fields"),
    ("TimeGenerated,Action,SourceIp,Fqdn,DestinationPort,Protocol\n2026-11-20T08:14:04Z,Deny,10.0.0.1,a.example.com,https,HTTPS\n",
     "line 2: DestinationPort 'https' is not a port 1-65535"),
    ("TimeGenerated,Action,SourceIp,Fqdn,DestinationPort,Protocol\n2026-11-20T08:14:04Z,Deny,node-1,a.example.com,443,HTTPS\n",
     "line 2: SourceIp 'node-1' is not an IP address"),
    ('[\n  {"TableName": "PrimaryResult", "Action": "Deny"', "line 2: is not the JSON 'az monitor log-analytics query' prints"),
])
def test_bad_rows_name_file_line_and_fix(text, message):
    with pytest.raises(LearnError) as caught:
        parse(text, "deny.csv")
    assert message in str(caught.value) and "Fix: " in str(caught.value) and str(caught.value).startswith("deny.csv")


def test_logs_of_several_exports_group_together(project_copy, run_cli):
    code, _, err, text = run_learn(run_cli, project_copy, STACK, "azure-deny.csv", "azure-deny-az.json")
    assert code == 3, err
    doc = proposals(text)
    assert [log["format"] for log in doc["logs"]] == ["azure-csv", "azure-json"]
    process = next(p for p in doc["proposals"] if p["destination"] == "process.datadoghq.eu")
    assert process["evidence"]["denied"] == 3  # two lines of the CSV, one of the JSON: one group
    assert [line["at"] for line in process["evidence"]["lines"]] == [
        "logs/azure-deny-az.json:2", "logs/azure-deny.csv:2", "logs/azure-deny.csv:4"]
    assert (process["evidence"]["first_seen"], process["evidence"]["last_seen"]) == ("2026-11-20T08:14:03.123456Z", "2026-11-21T07:00:00Z")
    assert len(doc["proposals"]) == 8  # the CSV's seven and the JSON's payments database
