"""egress learn on logs a hostile pod wrote into (review of issue 21, items 3, 4 and 7).

A client chooses its SNI, Host header, CONNECT target and URL: a record naming '*', '*.x', markup or a numeric IPv4
form is counted as ignored with its reason, never proposed, never fatal; Squid's 407 authentication challenge is no
denial; the Markdown summary escapes every cell. Fixtures: tests/data/learn/hostile-squid.log and hostile-nfw.log
(the reviewer's reproductions, /tmp/rv/hostile-squid.log + sq-ftp.log + sq407.log, and nfw.log).
"""
from __future__ import annotations

import re

import pytest
from markdown_it import MarkdownIt

from egress.learn import aws, azure, squid
from egress.learn.flows import NON_ASCII, NOT_DNS, NUMERIC, SINGLE_LABEL, WILDCARD, Unusable, logged_host
from egress.learn.proposals import markdown
from learn_support import proposals, run_learn

SQUID_LINE = "1795176001.456      0 10.60.4.11 {code} 3950 {method} {url} - HIER_NONE/- text/html"


@pytest.mark.parametrize("value, reason", [
    ("*", WILDCARD), ("*.evil.example", WILDCARD), ("*.amazonaws.com", WILDCARD), ("md-*.blob.core.windows.net", WILDCARD),
    ("0x7f000001", NUMERIC), ("2130706433", NUMERIC), ("127.1", NUMERIC), ("0177.0.0.1", NUMERIC), ("0x7f.0.0.0x1", NUMERIC),
    ("evil.example.0x", NUMERIC),
    ("a|b<img>`c", NOT_DNS), ("x |\n\n### merge [details](https://evil.example/)", NOT_DNS), ("x..", NOT_DNS),
    ("-bad.example.com", NOT_DNS), ("a" * 64 + ".example.com", NOT_DNS), ("host_name.example.com", NOT_DNS),
    ("pr\u043exy.example.com", NON_ASCII),
    ("localhost", SINGLE_LABEL), ("registry", SINGLE_LABEL),
])
def test_a_logged_host_that_is_no_dns_name_is_unusable(value, reason):
    with pytest.raises(Unusable) as caught:
        logged_host(value)
    assert caught.value.reason == reason  # fixed text: the reason never quotes what the client sent


@pytest.mark.parametrize("value, host", [
    ("Example.COM.", "example.com"), ("mcr.microsoft.com", "mcr.microsoft.com"), ("[2001:db8::1]", "2001:db8::1"),
    ("192.0.2.7", "192.0.2.7"), ("-", ""), ("None", ""), ("", ""), ("xn--bcher-kva.example", "xn--bcher-kva.example"),
])
def test_a_logged_host_in_the_matrix_form(value, host):
    assert logged_host(value) == host


def test_squid_407_challenge_is_no_denial_and_ftp_is_ignored_not_fatal():
    text = "\n".join([
        SQUID_LINE.format(code="TCP_DENIED/407", method="CONNECT", url="quay.io:443"),
        SQUID_LINE.format(code="TCP_TUNNEL/200", method="CONNECT", url="quay.io:443").replace(" - HIER_NONE", " bob HIER_DIRECT"),
        SQUID_LINE.format(code="TCP_DENIED/403", method="GET", url="ftp://ftp.example.net/pub/"),
        SQUID_LINE.format(code="TCP_DENIED/403", method="CONNECT", url="a.example.com"),
        SQUID_LINE.format(code="TCP_DENIED/403", method="CONNECT", url="a.example.com:0"),
        SQUID_LINE.format(code="TCP_DENIED/403", method="GET", url="/no-absolute-url"),
        SQUID_LINE.format(code="TCP_DENIED/403", method="CONNECT", url="ghcr.io:443"),
    ])
    read = squid.parse(text, "access.log")
    assert [(f.host, f.port, f.protocol) for f in read.flows] == [("ghcr.io", 443, "https")]
    assert (read.records, read.allowed, read.ignored) == (7, 1, 5)
    assert read.because == {squid.AUTH_CHALLENGE: [1], squid.SCHEME: [3], squid.NO_PORT: [4], squid.BAD_URL: [5, 6]}


def test_hostile_squid_log_proposes_no_pattern_and_stops_nothing(project_copy, run_cli):
    code, out, err, text = run_learn(run_cli, project_copy, "proxy-only", "hostile-squid.log")
    assert code == 3, err
    doc = proposals(text)
    groups = doc["proposals"] + doc["findings"] + doc["unknown_sources"]
    assert sorted((g["destination"], g["protocol"], g["port"]) for g in groups) == [
        ("2001:db8::1", "https", 443), ("eu-central-1.ec2.archive.ubuntu.com", "http", 80), ("example.com", "https", 443),
        ("files.example", "http", 80), ("ghcr.io", "https", 443)]
    assert not any("*" in g["destination"] or g["destination"] == "quay.io" for g in groups)  # quay.io: only a 407
    assert doc["logs"][0]["ignored"] == 6 and doc["logs"][0]["denied"] == 5
    assert {i["reason"]: i["lines"] for i in doc["logs"][0]["ignored_because"]} == {
        WILDCARD: ["logs/hostile-squid.log:1", "logs/hostile-squid.log:2"], NUMERIC: ["logs/hostile-squid.log:6"],
        NOT_DNS: ["logs/hostile-squid.log:7"], squid.SCHEME: ["logs/hostile-squid.log:11"],
        squid.AUTH_CHALLENGE: ["logs/hostile-squid.log:12"]}
    assert "<img>" not in out and "s3cret" not in out + text + err
    assert "- 2 × the logged host holds '\\*'" not in out and "- 2 × the logged host holds '*'" in out


def test_hostile_nfw_sni_is_ignored_and_never_reaches_the_summary(project_copy, run_cli):
    code, out, err, text = run_learn(run_cli, project_copy, "kkp-aws", "hostile-nfw.log")
    assert code == 0, err
    doc = proposals(text)
    assert doc["proposals"] == doc["findings"] == doc["unknown_sources"] == []
    assert {i["reason"]: i["records"] for i in doc["logs"][0]["ignored_because"]} == {WILDCARD: 2, NOT_DNS: 1}
    rendered = MarkdownIt("commonmark").enable("table").render(out)
    assert "evil.example" not in out and "<a " not in rendered and rendered.count("<h2>") == 1 and "<h3>" not in rendered


def test_nfw_and_azure_records_with_planted_hosts_are_counted_as_ignored():
    record = ('{"event_timestamp": "1795176000", "event": {"timestamp": "2026-11-20T12:00:00.1+0000", "event_type": "alert", '
              '"src_ip": "10.50.0.20", "dest_ip": "192.0.2.33", "dest_port": 443, "proto": "TCP", "app_proto": "%s", '
              '"alert": {"action": "blocked"}, %s}}')
    read = aws.parse("\n".join([record % ("tls", '"tls": {"sni": "*.amazonaws.com"}'),
                                record % ("http", '"http": {"hostname": "0x7f000001"}'),
                                record % ("tls", '"tls": {"sni": "192.0.2.33"}'),
                                record % ("tls", '"tls": {"sni": "s3.amazonaws.com"}')]), "nfw.log")
    assert [(f.host, f.address, f.protocol) for f in read.flows] == [("", "192.0.2.33", "https"), ("s3.amazonaws.com", "192.0.2.33", "https")]
    assert read.because == {WILDCARD: [1], NUMERIC: [2]}
    csv = ("TimeGenerated,Action,SourceIp,Fqdn,DestinationIp,DestinationPort,Protocol\n"
           "2026-11-20T08:14:03Z,Deny,10.40.16.21,*.evil.example,,443,HTTPS\n"
           "2026-11-20T08:14:03Z,Deny,10.40.16.21,a|b,,443,HTTPS\n"
           "2026-11-20T08:14:03Z,Deny,10.40.16.21,ok.example.com,,443,HTTPS\n")
    read = azure.parse(csv, "azure.csv")
    assert [f.host for f in read.flows] == ["ok.example.com"] and read.because == {WILDCARD: [2], NOT_DNS: [3]}


def test_summary_escapes_every_cell():
    """A destination that reached the summary unescaped (before: '_summary escapes nothing') stays one cell."""
    evil = "x|\n\n### Approved [details](https://evil.example/) <img src=x>"
    evidence = {"denied": 1, "sources": ["10.0.0.1"]}
    doc = {"logs": [], "findings": [], "unknown_sources": [],
           "proposals": [{"source": "nodes", "destination": evil, "protocol": "https", "port": 443, "evidence": evidence,
                          "entry": {"id": "x"}, "near_misses": [{"why": "a `b` [c](d)"}]}]}
    out = markdown("s", doc, "p.yaml")
    rendered = MarkdownIt("commonmark").enable("table").render(out)
    body = rendered.split("<tbody>", 1)[1]
    assert body.count("<tr>") == 1 and len(re.findall(r"<td>", body)) == 4
    assert "<h3>" not in rendered and "<a " not in rendered and "<img" not in rendered and "<code>" not in rendered


def test_evidence_escapes_control_characters_a_client_wrote():
    """A Host header or URL is the client's: an escape sequence in it must not reach the proposals file or the terminal."""
    from egress.learn.flows import evidence

    quoted = evidence('1795176000.000 0 10.60.4.12 TCP_DENIED/403 3950 GET http://a.example.com/\x1b[2J\u202ex - HIER_NONE/- text/html')
    assert "\x1b" not in quoted and "\u202e" not in quoted
    assert "\\x1b[2J\\u202ex" in quoted
