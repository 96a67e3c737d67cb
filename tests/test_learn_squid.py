"""egress learn on Squid's access.log (native format): exact proposals from the fixture, and from the log the real Squid
writes when it denies requests under the proxy-only stack's own allowlist."""
from __future__ import annotations

import pytest

from egress.learn.flows import LearnError
from egress.learn.squid import parse
from egress.project import open_project
from egress.targets.kubernetes.egress_proxy import compile_egress_proxy
from learn_support import expected, proposals, run_learn
from squid_engine import needs_squid, running_squid

STACK = "proxy-only"


def test_access_log_gives_exact_proposals(project_copy, run_cli):
    code, out, err, text = run_learn(run_cli, project_copy, STACK, "squid-access.log")
    assert code == 3, err
    assert text == expected("squid.yaml")
    assert out == expected("squid.md")
    doc = proposals(text)
    assert [(p["destination"], p["protocol"], p["port"], "turn_on" in p) for p in doc["proposals"]] == [
        ("192.0.2.50", "https", 443, False),  # CONNECT to an address
        ("acme-v02.api.letsencrypt.org", "https", 443, False),  # the seed's row; a pod asked
        ("eu-central-1.ec2.archive.ubuntu.com", "http", 80, False),  # a row the stack cannot resolve without runsOn
        ("ghcr.io", "https", 443, True),  # an optional KKP row: turn on the level
        ("hooks.slack.com", "https", 443, False),
        ("registry.k8s.io", "https", 8443, False),
    ]
    ec2 = doc["proposals"][2]["near_misses"]
    assert ec2 == [{"kind": "only when", "entry": "kkp-os-ubuntu-archive-ec2", "allows": "nodes -> {runs_on_region}.ec2.archive.ubuntu.com http",
                    "why": "the row names hosts like this one, with egress-matrix:runsOn.nodes.region set and only when runs on aws"}]
    assert doc["proposals"][4]["evidence"]["sources"] == ["10.244.9.9"]  # a pod address: the nodes' (podCidrs), as the proxy's ACL
    assert doc["unknown_sources"][0]["evidence"]["sources"] == ["172.16.0.5"]


def test_requests_and_tunnels():
    read = parse("\n".join([
        "1795176000.000      0 10.60.4.12 TCP_DENIED/403 3950 CONNECT [2001:db8::5]:443 - HIER_NONE/- text/html",
        "1795176000.000      0 10.60.4.12 TCP_DENIED/403 3950 GET http://Mirror.Example.com:8080/x - HIER_NONE/- text/html",
        "1795176000.000      0 10.60.4.12 TCP_DENIED_REPLY/403 3950 GET https://a.example.com/ - HIER_NONE/- text/html",
        "1795176000.000      0 10.60.4.12 TCP_MISS/200 3950 GET http://b.example.com/ - HIER_DIRECT/192.0.2.1 text/html",
    ]), "access.log")
    assert [(f.host, f.address, f.port, f.protocol) for f in read.flows] == [
        ("", "2001:db8::5", 443, "https"), ("mirror.example.com", "", 8080, "http"), ("a.example.com", "", 443, "https")]
    assert (read.records, read.allowed) == (4, 1)



def test_refusals_before_classification_are_learned_and_errors_are_not():
    """NONE_NONE/403 (Squid 5+) and TAG_NONE/403 are Squid's access-denied answer before it classified the transaction
    (an ssl_bump or http_access refusal at a bumping step); NONE_NONE/503 is an error, no access decision (as explain
    reads them: egress/learn/squid_codes.py)."""
    read = parse("\n".join([
        "1795176000.000      0 10.60.4.12 NONE_NONE/403 3950 CONNECT c.example.com:443 - HIER_NONE/- text/html",
        "1795176000.000      0 10.60.4.12 TAG_NONE/403 3950 CONNECT d.example.com:443 - HIER_NONE/- text/html",
        "1795176000.000      0 10.60.4.12 NONE_NONE/503 3950 CONNECT e.example.com:443 - HIER_NONE/- text/html",
        "1795176000.000      0 10.60.4.12 TCP_DENIED/407 3950 CONNECT f.example.com:443 - HIER_NONE/- text/html",
    ]), "access.log")
    assert [(f.host, f.port) for f in read.flows] == [("c.example.com", 443), ("d.example.com", 443)]
    assert (read.records, read.allowed) == (4, 1)

def test_credentials_in_a_logged_url_are_never_quoted(project_copy, run_cli):
    (project_copy / "logs").mkdir()
    (project_copy / "logs" / "access.log").write_text(
        "1795176000.000      0 10.60.4.12 TCP_DENIED/403 3950 GET http://deploy:s3cr3t-token@mirror.example.com/x - HIER_NONE/- text/html\n")
    code, out, err = run_cli("learn", "--stack", STACK, "logs/access.log", "--out", "p.yaml", "--project", str(project_copy), cwd=project_copy)
    assert code == 3, err
    written = (project_copy / "p.yaml").read_text()
    assert "s3cr3t-token" not in written + out + err
    assert proposals(written)["proposals"][0]["destination"] == "mirror.example.com"


@pytest.mark.parametrize("line, message", [
    ("1795176000.000 0 10.60.4.12 TCP_DENIED/403 3950 CONNECT", "line 1: has 6 fields, Squid's native format has 10"),
    ("10.60.4.12 - - [20/Nov/2026:12:00:00 +0000] \"CONNECT a:443 HTTP/1.1\" 403 3950 TCP_DENIED:HIER_NONE",
     "does not start like Squid's native format"),
])
def test_bad_lines_name_file_line_and_fix(line, message):
    with pytest.raises(LearnError) as caught:
        parse(line + "\n", "access.log")
    assert message in str(caught.value) and "Fix: give Squid's access.log in the native format" in str(caught.value)


@needs_squid
@pytest.mark.engine
def test_learns_from_the_log_the_real_squid_writes(project_copy, run_cli, tmp_path):
    """Squid 5 runs the proxy-only stack's allowlist (its nodes are the loopback clients here) and denies what the stack
    does not allow; egress learn reads the access.log Squid wrote, line for line."""
    stack_file = project_copy / "stacks" / f"Pulumi.{STACK}.yaml"
    stack_file.write_text(stack_file.read_text().replace("nodeSources: [10.60.0.0/16]", "nodeSources: [127.0.0.0/8]"))
    catalog, profile, requirements = open_project(project_copy).requirements(STACK)
    plan = compile_egress_proxy(catalog, profile, requirements)
    hosts = ["quay.io", "ghcr.io", "hooks.slack.com", "registry.k8s.io", "archive.ubuntu.com", "mirror.example.org"]
    with running_squid(plan.allowlist, hosts, tmp_path / "squid") as squid:
        got = [squid.connect("quay.io", 443), squid.connect("ghcr.io", 443), squid.connect("hooks.slack.com", 443),
               squid.connect("hooks.slack.com", 443, source="127.0.0.2"), squid.connect("registry.k8s.io", 8443),
               squid.get("mirror.example.org", 80, "/ubuntu/")]
    assert got == [200, 403, 403, 403, 403, 403]
    log = (tmp_path / "squid" / "access.log").read_text()
    (project_copy / "logs").mkdir()
    (project_copy / "logs" / "access.log").write_text(log)
    code, out, err = run_cli("learn", "--stack", STACK, "logs/access.log", "--out", "p.yaml", "--project", str(project_copy), cwd=project_copy)
    assert code == 3, err
    doc = proposals((project_copy / "p.yaml").read_text())
    assert doc["logs"] == [{"file": "logs/access.log", "format": "squid", "records": 6, "denied": 5, "allowed": 1, "ignored": 0}]
    assert [(p["source"], p["destination"], p["protocol"], p["port"], p["evidence"]["denied"]) for p in doc["proposals"]] == [
        ("nodes", "ghcr.io", "https", 443, 1), ("nodes", "hooks.slack.com", "https", 443, 2),
        ("nodes", "mirror.example.org", "http", 80, 1), ("nodes", "registry.k8s.io", "https", 8443, 1)]
    assert doc["proposals"][1]["evidence"]["sources"] == ["127.0.0.1", "127.0.0.2"]
    lines = log.splitlines()
    for proposal in doc["proposals"]:  # each cites Squid's own line, by number
        for cited in proposal["evidence"]["lines"]:
            number = int(cited["at"].rsplit(":", 1)[1])
            assert cited["text"] == " ".join(lines[number - 1].split())
            assert "TCP_DENIED/403" in cited["text"]
