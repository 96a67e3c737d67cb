"""egress learn on AWS Network Firewall alert logs (JSON lines as S3 and CloudWatch Logs hold them, gzip too)."""
from __future__ import annotations

import gzip
import json

import pytest

from egress.learn import aws
from egress.learn.aws import parse
from egress.learn.flows import LearnError
from learn_support import DATA, expected, proposals, run_learn

STACK = "kkp-aws"


def test_alert_log_gives_exact_proposals(project_copy, run_cli):
    code, out, err, text = run_learn(run_cli, project_copy, STACK, "nfw-alert.log")
    assert code == 3, err
    assert text == expected("nfw.yaml")
    assert out == expected("nfw.md")
    doc = proposals(text)
    assert [(p["source"], p["destination"], p["port"], "turn_on" in p) for p in doc["proposals"]] == [
        ("nodes", "api.github.com", 443, False),  # no KKP row: a stack entry; Flux's and Argo CD's rows are cited
        ("seed", "anx-cr.io", 443, True),  # the Anexia provider's images: turn on kkp-anexia
        ("seed", "quay.io", 8443, False),  # the seed's quay.io rows are for 443
        ("bastion", "169.254.169.123", 123, False),  # UDP with no application protocol: the address only
    ]
    github = doc["proposals"][0]
    assert {row["platform"] for row in github["listed_by_other_platforms"]} == {"argocd", "flux"}
    assert github["evidence"]["addresses"] == ["192.0.2.6"]  # the SNI names the host, dest_ip is kept as evidence
    assert doc["proposals"][1]["turn_on"][0]["add"] == {"egress-matrix:features": ["kkp-anexia"]}
    assert [f["destination"] for f in doc["findings"]] == ["security.ubuntu.com", "ghcr.io"]  # http.hostname and tls.sni
    assert doc["logs"][0] == {"file": "logs/nfw-alert.log", "format": "aws-nfw", "records": 8, "denied": 6, "allowed": 1, "ignored": 1,
                              "ignored_because": [{"reason": aws.NOT_ALERT, "records": 1, "lines": ["logs/nfw-alert.log:4"]}]}


def test_gzip_objects_from_s3_are_read_as_they_are(project_copy, run_cli):
    (project_copy / "logs").mkdir()
    (project_copy / "logs" / "part.log.gz").write_bytes(gzip.compress((DATA / "nfw-alert.log").read_bytes()))
    code, out, err = run_cli("learn", "--stack", STACK, "logs/part.log.gz", "--out", "p.yaml", "--project", str(project_copy), cwd=project_copy)
    assert code == 3, err
    assert (project_copy / "p.yaml").read_text() == expected("nfw.yaml").replace("logs/nfw-alert.log", "logs/part.log.gz")


def _record(**event) -> str:
    base = {"timestamp": "2026-11-20T12:00:00.000000+0000", "flow_id": 1, "event_type": "alert", "src_ip": "10.60.3.8", "src_port": 40000,
            "dest_ip": "192.0.2.6", "dest_port": 443, "proto": "TCP", "alert": {"action": "blocked", "signature_id": 1, "rev": 1,
                                                                                 "signature": "", "category": "", "severity": 3}}
    base.update(event)
    return json.dumps({"firewall_name": "fw", "availability_zone": "eu-west-1a", "event_timestamp": "1795176000", "event": base})


def test_protocol_and_host_come_from_the_eve_sections():
    read = parse("\n".join([
        _record(app_proto="tls", tls={"sni": "Registry.Example.COM."}),
        _record(app_proto="http", dest_port=80, http={"hostname": "mirror.example.com", "url": "/"}),
        _record(proto="UDP", dest_port=123),
        _record(proto="ICMP", dest_port=0),
    ]), "a.log")
    assert [(f.host, f.address, f.port, f.protocol) for f in read.flows] == [
        ("registry.example.com", "192.0.2.6", 443, "https"), ("mirror.example.com", "192.0.2.6", 80, "http"), ("", "192.0.2.6", 123, "udp")]
    assert read.ignored == 1  # ICMP: no matrix row is about it


@pytest.mark.parametrize("line, message", [
    (_record()[:80], "line 1: is not a whole JSON record"),
    (json.dumps({"firewall_name": "fw"}), "line 1: is not a Network Firewall log record (no 'event' object)"),
    (_record(alert={"action": "dropped"}), "event.alert.action is 'dropped', not 'allowed' or 'blocked'"),
    (_record(dest_port="https"), "event.dest_port 'https' is not a port 1-65535"),
])
def test_bad_records_name_file_line_and_fix(line, message):
    with pytest.raises(LearnError) as caught:
        parse(line + "\n", "a.log")
    assert message in str(caught.value) and "give the alert log as Network Firewall writes it" in str(caught.value)
