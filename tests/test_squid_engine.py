"""The Squid harness itself: a hand-written allowlist in our generator's form, exact decisions from the real Squid 5.7.

One Squid serves the whole module (start about 0.1 s, stop about 2 s); only the lifecycle test starts its own.
"""
from __future__ import annotations

import socket
import threading

import pytest

from squid_engine import needs_squid, parse_config, running_squid

# What the generator will emit: one commented acl per requirement set, ports apart, CONNECT only for HTTPS and plain
# HTTP only for HTTP hosts, deny last. ``-n``: never match a name found by reverse DNS (an IP literal stays an IP).
ALLOWLIST = """\
# REQ-MCR-1: mcr.microsoft.com
# REQ-MCR-2: *.data.mcr.microsoft.com
acl egress_https dstdomain -n mcr.microsoft.com .data.mcr.microsoft.com
acl egress_https_ports port 443
# REQ-APT-1: archive.ubuntu.com
acl egress_http dstdomain -n archive.ubuntu.com
acl egress_http_ports port 80
acl CONNECT method CONNECT
http_access allow CONNECT egress_https egress_https_ports
http_access allow !CONNECT egress_http egress_http_ports
http_access deny all
"""

HOSTS = ["mcr.microsoft.com", "xmcr.microsoft.com", "mcr.microsoft.com.evil.test", "other.mcr.microsoft.com",
         "data.mcr.microsoft.com", "x.data.mcr.microsoft.com", "archive.ubuntu.com", "evil.test"]


@pytest.fixture(scope="module")
def squid(tmp_path_factory):
    with running_squid(ALLOWLIST, HOSTS, tmp_path_factory.mktemp("squid")) as running:
        yield running


@pytest.mark.engine
@needs_squid
def test_parse_accepts_the_allowlist_and_rejects_overlaps_and_typos(tmp_path):
    assert parse_config(ALLOWLIST, tmp_path / "valid").returncode == 0

    overlap = parse_config(ALLOWLIST.replace("-n mcr.microsoft.com .data", "-n mcr.microsoft.com .mcr.microsoft.com .data"),
                           tmp_path / "overlap")
    assert overlap.returncode != 0
    assert "is a subdomain of 'mcr.microsoft.com'" in overlap.stderr and "FATAL" in overlap.stderr

    typo = parse_config(ALLOWLIST.replace("http_access deny all", "http_acces deny all"), tmp_path / "typo")
    assert typo.returncode != 0
    assert "unrecognized" in typo.stderr


@pytest.mark.engine
@needs_squid
def test_connect_is_allowed_exactly_for_the_https_names_on_443(squid):
    """A leading dot in Squid is the apex *and* its subdomains, so ``*.x`` cannot be emitted as ``.x`` unchanged."""
    expected = {
        ("mcr.microsoft.com", 443): 200,
        ("MCR.Microsoft.COM", 443): 200,  # case-insensitive
        ("xmcr.microsoft.com", 443): 403,  # not a suffix match
        ("mcr.microsoft.com.evil.test", 443): 403,
        ("other.mcr.microsoft.com", 443): 403,  # no leading dot: the exact name only
        ("x.data.mcr.microsoft.com", 443): 200,
        ("data.mcr.microsoft.com", 443): 200,  # the apex of .data.mcr.microsoft.com
        ("mcr.microsoft.com", 8443): 403,
        ("127.0.0.1", 443): 403,  # IP literal: -n stops the reverse lookup to mcr.microsoft.com via hosts_file
        ("archive.ubuntu.com", 443): 403,  # HTTP-only host
        ("evil.test", 443): 403,
    }
    assert {target: squid.connect(*target) for target in expected} == expected


@pytest.mark.engine
@needs_squid
def test_plain_http_is_allowed_exactly_for_the_http_names_on_80(squid):
    expected = {("archive.ubuntu.com", 80): 200, ("ARCHIVE.Ubuntu.com", 80): 200, ("evil.test", 80): 403,
                ("archive.ubuntu.com", 8080): 403, ("mcr.microsoft.com", 80): 403, ("127.0.0.1", 80): 403}
    assert {target: squid.get(*target) for target in expected} == expected


@pytest.mark.engine
@needs_squid
def test_squid_normalises_trailing_dots_and_denies_ip_literals(squid):
    """Observed in 5.7: trailing dots are stripped before matching; IPv6 and decimal IPv4 literals are not names."""
    expected = {("mcr.microsoft.com.", 443): 200, ("mcr.microsoft.com..", 443): 200, ("::1", 443): 403,
                ("2130706433", 443): 403, ("mcr.microsoft.com:443@evil.test", 443): 403}
    assert {target: squid.connect(*target) for target in expected} == expected


@pytest.mark.engine
@needs_squid
def test_a_200_is_a_tunnel_to_the_harness_upstream(squid):
    assert squid.tls_get("x.data.mcr.microsoft.com") == "sni=x.data.mcr.microsoft.com host=x.data.mcr.microsoft.com"
    assert "TCP_TUNNEL/200" in (squid.rundir / "access.log").read_text()


@pytest.mark.engine
@needs_squid
def test_squid_and_upstreams_are_stopped_even_when_the_block_fails(tmp_path):
    before = set(threading.enumerate())  # the module's Squid has upstream threads of its own
    with pytest.raises(ZeroDivisionError):
        with running_squid(ALLOWLIST, HOSTS, tmp_path) as running:
            process, port = running.process, running.port
            1 / 0
    assert process.poll() is not None
    # Squid's own word that it let go of its port (a connect to it could reach whatever process took it up since)
    assert f"Closing HTTP(S) port 127.0.0.1:{port}" in (tmp_path / "cache.log").read_text()
    assert not [thread for thread in set(threading.enumerate()) - before if thread.name.startswith("squid-engine-upstream")]
    assert "TCP_" not in (tmp_path / "access.log").read_text()  # logs kept for a post-mortem; no request was made
    assert "Exiting normally" in (tmp_path / "cache.log").read_text()


@pytest.mark.engine
@needs_squid
def test_a_proxy_port_taken_before_squid_binds_it_is_given_up_for_another(tmp_path, monkeypatch):
    """The free port is found, then bound by Squid: another process can take it in between. Squid is started again on
    another port, and it is only used once Squid itself says it accepts there (a connect would reach the other process)."""
    import squid_engine

    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        taken = other.getsockname()[1]
        ports = iter([taken, squid_engine._free_port()])
        monkeypatch.setattr(squid_engine, "_free_port", lambda: next(ports))
        with running_squid(ALLOWLIST, HOSTS, tmp_path) as running:
            assert running.port != taken
            assert running.get("archive.ubuntu.com") == 200
            assert running.connect("evil.test", 443) == 403


@pytest.mark.engine
@needs_squid
def test_a_config_squid_rejects_fails_fast_with_its_log(tmp_path):
    with pytest.raises(RuntimeError, match="(?s)squid exited with 1 before accepting.*unrecognized"):
        with running_squid("http_acces deny all\n", HOSTS, tmp_path):
            pass


@pytest.mark.engine
@needs_squid
def test_requests_come_from_the_source_asked_and_a_squid_gone_says_so(tmp_path):
    """``source`` is the client address Squid's src ACLs see (any of 127.0.0.0/8); a refused request says whether Squid
    still runs, with its log's end (a flake seen once under load, with nothing else to go by)."""
    allowlist = "acl pool src 127.0.17.0/24\nacl names dstdomain -n archive.ubuntu.com\nhttp_access allow pool names\nhttp_access deny all\n"
    with running_squid(allowlist, HOSTS, tmp_path, tls_ports=(), http_ports=(80,)) as running:
        assert [running.get("archive.ubuntu.com", source=s) for s in ("127.0.17.5", "127.0.0.1", "127.0.18.5")] == [200, 403, 403]
        assert " 127.0.17.5 " in (running.rundir / "access.log").read_text().replace("\t", " ")
        running.process.kill()
        running.process.wait(timeout=10)
        with pytest.raises(ConnectionRefusedError, match=r"(?s)refused a connection from 127\.0\.17\.5 \(exited with -9\); its cache\.log ends:\n.*Accepting"):
            running.get("archive.ubuntu.com", source="127.0.17.5")
