"""The replay harness itself: hand-written rules in our forms, exact verdicts from the real Suricata (tests/suricata_replay.py)."""
from __future__ import annotations

import json
import subprocess

import pytest

from suricata_engine import needs_suricata
from suricata_replay import DEFAULT_DROP_SID, Probe, _check_order, replay

EXACT = ('pass tls 10.0.0.0/16 any -> any 443 (tls.sni; content:"mcr.microsoft.com"; startswith; nocase; endswith; msg:"x"; '
         "flow:to_server; sid:1000001; rev:1;)\n")
FIVE_TUPLE = 'pass tcp 10.0.0.0/16 any -> 203.0.113.10 443 (msg:"x"; flow:to_server; sid:1000005; rev:1;)\n'
# reference/aws-egress.md §3.1: what AWS generates from the TLS_SNI and HTTP_HOST allowlists [".amazon.com", "example.com"].
DOMAIN_LIST = """\
pass tls 10.0.0.0/16 any -> $EXTERNAL_NET any (ssl_state:client_hello; tls.sni; dotprefix; content:".amazon.com"; nocase; endswith; msg:"matching TLS allowlisted FQDNs"; priority:1; flow:to_server, established; sid:2000001; rev:1;)
pass tls 10.0.0.0/16 any -> $EXTERNAL_NET any (ssl_state:client_hello; tls.sni; content:"example.com"; startswith; nocase; endswith; msg:"matching TLS allowlisted FQDNs"; priority:1; flow:to_server, established; sid:2000002; rev:1;)
drop tls 10.0.0.0/16 any -> $EXTERNAL_NET any (msg:"not matching any TLS allowlisted FQDNs"; priority:1; ssl_state:client_hello; flow:to_server, established; sid:2000003; rev:1;)
pass http 10.0.0.0/16 any -> $EXTERNAL_NET any (http.host; dotprefix; content:".amazon.com"; endswith; msg:"matching HTTP allowlisted FQDNs"; priority:1; flow:to_server, established; sid:2000004; rev:1;)
pass http 10.0.0.0/16 any -> $EXTERNAL_NET any (http.host; content:"example.com"; startswith; endswith; msg:"matching HTTP allowlisted FQDNs"; priority:1; flow:to_server, established; sid:2000005; rev:1;)
drop http 10.0.0.0/16 any -> $EXTERNAL_NET any (http.header_names; content:"|0d 0a|"; startswith; msg:"not matching any HTTP allowlisted FQDNs"; priority:1; flow:to_server, established; sid:2000006; rev:1;)
"""


def events(workdir, kind):
    return [e for e in map(json.loads, (workdir / "eve.json").read_text().splitlines()) if e["event_type"] == kind]


@pytest.mark.engine
@needs_suricata
def test_exact_host_passes_only_itself_on_its_port(tmp_path):
    expected = {Probe("tls", "mcr.microsoft.com"): "pass", Probe("tls", "MCR.MICROSOFT.COM"): "pass",
                Probe("tls", "xmcr.microsoft.com"): "drop", Probe("tls", "mcr.microsoft.com.evil.test"): "drop",
                Probe("tls", "mcr.microsoft.com", 8443): "drop", Probe("tls", "evil.test"): "drop"}
    assert replay(EXACT, list(expected), tmp_path) == expected


@pytest.mark.engine
@needs_suricata
def test_subdomain_wildcard_without_dotprefix_leaves_out_the_apex(tmp_path):
    rules = ('pass tls 10.0.0.0/16 any -> any any (tls.sni; content:".data.mcr.microsoft.com"; nocase; endswith; msg:"x"; '
             "flow:to_server; sid:1000002; rev:1;)\n")
    expected = {Probe("tls", "a.data.mcr.microsoft.com"): "pass", Probe("tls", "a.b.data.mcr.microsoft.com"): "pass",
                Probe("tls", "A.Data.MCR.microsoft.com", 6443): "pass", Probe("tls", "data.mcr.microsoft.com"): "drop",
                Probe("tls", "xdata.mcr.microsoft.com"): "drop"}
    assert replay(rules, list(expected), tmp_path) == expected


@pytest.mark.engine
@needs_suricata
def test_domain_list_form_on_any_port_and_its_catch_all(tmp_path):
    """AWS's generated rules: '.amazon.com' is the apex and subdomains, on 443 and 8443 alike (no detection ports).

    Suricata lower-cases http.host, so an upper-case Host header passes the lower-case rule. Names not on the list are
    dropped by the list's own catch-all, not only by the default drop.
    """
    expected = {
        Probe("tls", "amazon.com"): "pass", Probe("tls", "www.amazon.com"): "pass", Probe("tls", "amazon.com", 8443): "pass",
        Probe("tls", "www.amazon.com", 8443): "pass", Probe("tls", "WWW.AMAZON.COM"): "pass", Probe("tls", "example.com"): "pass",
        Probe("tls", "fakeamazon.com"): "drop", Probe("tls", "www.example.com"): "drop", Probe("tls", "evil.test", 8443): "drop",
        Probe("http", "amazon.com", 80): "pass", Probe("http", "www.amazon.com", 8080): "pass", Probe("http", "WWW.AMAZON.COM", 80): "pass",
        Probe("http", "Example.COM", 8080): "pass", Probe("http", "fakeamazon.com", 80): "drop", Probe("http", "evil.test", 8080): "drop",
    }
    assert replay(DOMAIN_LIST, list(expected), tmp_path) == expected
    caught = {(e["alert"]["signature_id"], e["alert"]["action"], e["tls"]["sni"] if "tls" in e else e["http"]["hostname"])
              for e in events(tmp_path, "alert") if e["alert"]["signature_id"] in (2000003, 2000006)}
    assert caught == {(2000003, "blocked", "fakeamazon.com"), (2000003, "blocked", "www.example.com"), (2000003, "blocked", "evil.test"),
                      (2000006, "blocked", "fakeamazon.com"), (2000006, "blocked", "evil.test")}


@pytest.mark.engine
@needs_suricata
def test_source_outside_the_rules_home_net_meets_the_default_drop(tmp_path):
    expected = {Probe("tls", "mcr.microsoft.com"): "pass", Probe("tls", "mcr.microsoft.com", source="10.1.0.5"): "drop",
                Probe("tls", "mcr.microsoft.com", source="192.168.7.5"): "drop"}
    assert replay(EXACT, list(expected), tmp_path) == expected


@pytest.mark.engine
@needs_suricata
def test_five_tuple_rule_passes_any_name_to_its_address_and_port(tmp_path):
    expected = {Probe("tls", "evil.test"): "pass", Probe("tls", "mcr.microsoft.com"): "pass", Probe("http", "evil.test"): "pass",
                Probe("tls", "evil.test", destination="203.0.113.11"): "drop", Probe("tls", "evil.test", 8443): "drop"}
    assert replay(FIVE_TUPLE, list(expected), tmp_path) == expected


@pytest.mark.engine
@needs_suricata
def test_default_drop_takes_established_client_packets_only(tmp_path):
    """AWS's 'Drop established': the handshake and the server's packets pass; both client payloads are dropped."""
    assert replay("", [Probe("tls", "evil.test")], tmp_path) == {Probe("tls", "evil.test"): "drop"}
    assert [(e["direction"], e["drop"]["psh"]) for e in events(tmp_path, "drop")] == [("to_server", True)] * 2
    assert {e["alert"]["signature_id"] for e in events(tmp_path, "alert")} == {DEFAULT_DROP_SID}


@pytest.mark.engine
@needs_suricata
@pytest.mark.parametrize("rules, error", [
    ('pass tls any any -> any any (tls.sni; contnt:"x"; sid:1; rev:1;)\n', "unknown rule keyword 'contnt'"),
    ('pass http any any -> any any (http.host; content:"Example.com"; sid:1; rev:1;)\n', "normalized to lowercase"),
])
def test_rules_suricata_rejects_raise(tmp_path, rules, error):
    with pytest.raises(RuntimeError, match=error):
        replay(rules, [Probe("tls", "x")], tmp_path)


def test_a_drop_before_a_pass_it_could_preempt_is_refused(tmp_path):
    """Suricata would pass first; AWS's strict order would drop first. No verdict is better than a wrong one."""
    catch_all = DOMAIN_LIST.splitlines()[2]
    with pytest.raises(ValueError, match="strict order would drop before this pass"):
        replay(f"{catch_all}\n{FIVE_TUPLE}", [Probe("tls", "evil.test")], tmp_path)


def test_order_check_lets_disjoint_roles_be_but_refuses_overlapping_ones():
    catch_all = 'drop http 10.0.0.0/16 any -> any any (http.header_names; content:"|0d 0a|"; startswith; msg:"c"; sid:1; rev:1;)'
    seed_pass = 'pass http 10.1.0.0/16 any -> any 80 (http.host; content:"a.test"; startswith; endswith; msg:"p"; sid:2; rev:1;)'
    _check_order(f"{catch_all}\n{seed_pass}")
    for source in ("10.0.0.0/15", "any"):
        with pytest.raises(ValueError, match="strict order would drop before this pass"):
            _check_order(f"{catch_all}\n{seed_pass.replace('10.1.0.0/16', source)}")


@pytest.mark.engine
@needs_suricata
@pytest.mark.parametrize("harness", ["replay", "check_rules"])
def test_suricata_reads_its_classification_reference_and_threshold_files_from_the_run_folder(harness, tmp_path):
    """Not from /etc/suricata: a machine without (or with another) Suricata install must give the same result."""
    from suricata_engine import SURICATA, check_rules

    if harness == "replay":
        replay(EXACT, [Probe("tls", "mcr.microsoft.com")], tmp_path)
        config = tmp_path / "replay.yaml"
    else:
        assert check_rules(EXACT, tmp_path).returncode == 0
        config = tmp_path / "suricata.yaml"
    dumped = subprocess.run([SURICATA, "--dump-config", "-c", str(config)], capture_output=True, text=True, timeout=60).stdout
    settings = dict(line.split(" = ", 1) for line in dumped.splitlines() if " = " in line)
    for key, name in (("classification-file", "classification.config"), ("reference-config-file", "reference.config"),
                      ("threshold-file", "threshold.config")):
        assert settings.get(key) == str(tmp_path / name), key
        assert (tmp_path / name).is_file()
