"""egress probe, second review of issue 21: enforcement is proven only by a refusal that crosses the firewall, and a
non-Squid proxy's refusal is not "reachable".

- A local routing error (ENETUNREACH, EHOSTUNREACH, EADDRNOTAVAIL) never left the node: no block. A near miss is denied
  only when every address of its name was tried (families interleaved, RFC 8305 §4), and each was cut off while a
  requirement got through on the same port AND IP family to an address outside the cluster's own ranges.
- Through a proxy (absolute-form GET, or inside an inspecting tunnel) a 403, a 5xx or a redirect to another host without
  a proxy's marker is "blocked?" unless it differs from the proxy's answer to a near miss it refused in the same run.
- An allowed host on another port (refused by a generic port rule alone) never proves enforcement on its own.
- Direct (no proxy in the path) only Azure Firewall's 470 is a refusal: Squid's or RFC 9209's headers there are the
  server's own.
Every server here is a toy on loopback that stops by itself (tests/probe_servers.py)."""
from __future__ import annotations

import errno
import socket

from egress.probe.agent import failed_entries, run_plan

from probe_servers import DEAD, scripted_server, serving, toy_proxy


def _plan(checks, ca=None, inspects_tls=False, internal=None):
    proxied = any(c.get("via") == "proxy" for c in checks)
    return {"version": 1, "stack": "s", "role": "nodes", "hosts": {}, "ca_bundle": ca, "not_probed": [], "checks": checks,
            **({"internal": internal} if internal is not None else {}),
            "proxy": {"credentials_env": None, "inspects_tls": inspects_tls} if proxied else None}


def _rows(report):
    return {(r["host"], r["port"], r["expect"]): (r["status"], r["detail"]) for r in report["results"]}


def _dual_stack(monkeypatch, names: dict, v6_error: int | None):
    """``names``: host -> addresses the resolver returns; a connect to an IPv6 address fails with ``v6_error`` (errno)."""
    real_resolve, real_connect = socket.getaddrinfo, socket.create_connection

    def resolve(host, port, *args, **kwargs):
        if host in names:
            return [(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in names[host]]
        return real_resolve(host, port, *args, **kwargs)

    def connect(address, *args, **kwargs):
        if ":" in address[0]:
            raise OSError(v6_error, errno.errorcode[v6_error]) if v6_error != errno.ECONNREFUSED else ConnectionRefusedError(
                errno.ECONNREFUSED, "Connection refused")
        return real_connect(address, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    monkeypatch.setattr(socket, "create_connection", connect)


V6 = [f"2001:db8::{i}" for i in range(1, 7)]


def test_a_wide_open_dual_stack_node_without_ipv6_routes_is_not_enforcing(monkeypatch):
    """The reviewer's v6.py: example.com's six AAAA first (no IPv6 route: ENETUNREACH at once), its IPv4 answering.
    Before: the first four addresses unreachable counted as a block, 'Enforcement proven' and PASS."""
    with serving({"example.com", "req.example.org"}) as servers:
        _dual_stack(monkeypatch, {"example.com": [*V6, servers.address]}, errno.ENETUNREACH)
        report = run_plan(_plan([{"host": "req.example.org", "port": 443, "protocol": "https", "expect": "allow", "entries": ["e1"]},
                                 {"host": "example.com", "port": 443, "protocol": "https", "expect": "deny", "miss": "unlisted"}],
                                ca=servers.ca_pem), hosts={"req.example.org": servers.address}, timeout=3, total_timeout=30)
    assert (report["ok"], report["enforcement"]) == (False, "failed")
    status, detail = _rows(report)[("example.com", 443, "deny")]
    assert status == "failed" and detail.startswith("got through")
    miss = next(r for r in report["results"] if r["host"] == "example.com")
    # RFC 8305 order: the families alternate, so the IPv4 address is the second tried, not the seventh.
    assert miss["steps"][0]["detail"] == ", ".join([V6[0], servers.address, *V6[1:]])


def test_only_local_routing_errors_prove_nothing(monkeypatch):
    for code in (errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EADDRNOTAVAIL):
        with serving({"req.example.org"}) as servers:
            _dual_stack(monkeypatch, {"example.com": V6[:2]}, code)
            report = run_plan(_plan([{"host": "req.example.org", "port": 443, "protocol": "https", "expect": "allow", "entries": ["e1"]},
                                     {"host": "example.com", "port": 443, "protocol": "https", "expect": "deny"}], ca=servers.ca_pem),
                              hosts={"req.example.org": servers.address}, timeout=3, total_timeout=30)
        status, detail = _rows(report)[("example.com", 443, "deny")]
        assert status == "inconclusive" and detail.endswith("this proves nothing about the firewall"), (code, detail)
        assert report["enforcement"] == "not proven"
        monkeypatch.undo()


def test_a_control_must_be_of_the_same_family(monkeypatch):
    """A refusal over IPv6 while only an IPv4 requirement got through: the IPv6 path may just have nothing listening.
    Before: denied."""
    with serving({"req.example.org"}) as servers:
        _dual_stack(monkeypatch, {"example.com": V6[:1]}, errno.ECONNREFUSED)
        report = run_plan(_plan([{"host": "req.example.org", "port": 443, "protocol": "https", "expect": "allow", "entries": ["e1"]},
                                 {"host": "example.com", "port": 443, "protocol": "https", "expect": "deny"}], ca=servers.ca_pem),
                          hosts={"req.example.org": servers.address}, timeout=3, total_timeout=30)
    status, detail = _rows(report)[("example.com", 443, "deny")]
    assert status == "inconclusive" and "no requirement on port 443 over IPv6 got through directly" in detail
    assert report["enforcement"] == "not proven"


def test_a_control_inside_the_cluster_is_no_control():
    """A requirement that got through to an address in the cluster's own ranges (node, pod, service CIDRs, noProxy) need
    not have crossed the firewall. Before: any requirement on the port was the control. The control's address is named."""
    checks = [{"host": "req.example.org", "port": 443, "protocol": "https", "expect": "allow", "entries": ["e1"]},
              {"host": "example.com", "port": 443, "protocol": "https", "expect": "deny"}]
    with serving({"req.example.org"}) as servers:
        pins = {"req.example.org": servers.address, "example.com": DEAD}
        outside = run_plan(_plan(checks, ca=servers.ca_pem, internal=["10.0.0.0/8"]), hosts=pins, timeout=3, total_timeout=30)
        inside = run_plan(_plan(checks, ca=servers.ca_pem, internal=["10.0.0.0/8", "127.0.0.0/8"]), hosts=pins, timeout=3, total_timeout=30)
    assert _rows(outside)[("example.com", 443, "deny")] == (
        "ok", f"denied (TCP {DEAD}:443: connection refused), while https req.example.org:443 ({servers.address}) over IPv4 got through "
              "on the same port in this run")
    assert _rows(inside)[("example.com", 443, "deny")][0] == "inconclusive" and inside["enforcement"] == "not proven"


def test_a_near_miss_is_denied_only_when_every_address_was_tried(monkeypatch):
    """More addresses than the agent tries (16): one not tried may get through. Before: the first four decided."""
    many = [f"127.77.1.{i}" for i in range(1, 21)]  # nothing listens: refused at once
    with serving({"req.example.org"}) as servers:
        _dual_stack(monkeypatch, {"example.com": many}, None)
        report = run_plan(_plan([{"host": "req.example.org", "port": 443, "protocol": "https", "expect": "allow", "entries": ["e1"]},
                                 {"host": "example.com", "port": 443, "protocol": "https", "expect": "deny"}], ca=servers.ca_pem),
                          hosts={"req.example.org": servers.address}, timeout=3, total_timeout=30)
    status, detail = _rows(report)[("example.com", 443, "deny")]
    assert status == "inconclusive" and detail.endswith("not every address of example.com was tried, so another may get through")


def _non_squid(line: str) -> bytes:
    """/tmp/toy502.py: an Envoy that reaches nothing (502), a block page without Squid's marker (403), a redirect to a
    block page; an S3-like origin 403 for s3.example.net; a BlueCoat-like refusal of CONNECT to example.com."""
    if line.startswith("CONNECT example.com") or "blocked403" in line or "http://example.com/" in line:
        return b"HTTP/1.1 403 Forbidden\r\nServer: BlueCoat-Security-Appliance\r\nX-Blocked-By: corp\r\nContent-Length: 0\r\n\r\n"
    if "s3.example.net" in line:
        return b"HTTP/1.1 403 Forbidden\r\nServer: AmazonS3\r\nx-amz-request-id: 0\r\nContent-Length: 0\r\n\r\n"
    if "redirect" in line:
        return b"HTTP/1.1 302 Found\r\nLocation: https://blockpage.corp/denied\r\nContent-Length: 0\r\n\r\n"
    if "samehost" in line:
        return b"HTTP/1.1 301 Moved Permanently\r\nLocation: https://samehost.example.org/\r\nContent-Length: 0\r\n\r\n"
    return b"HTTP/1.1 502 Bad Gateway\r\nServer: envoy\r\nContent-Length: 0\r\n\r\n"


def _http(host, proxy, entry, path=None):
    return {"host": host, "port": 80, "protocol": "http", "via": "proxy", "proxy": proxy, "expect": "allow", "entries": [entry],
            **({"path": path} if path else {})}


def test_a_non_squid_proxy_s_refusal_is_not_reachable():
    """The reviewer's toy502.py: before, all three 'ok - reachable'. Without a near miss the proxy refused to compare
    with, a 403, 5xx or redirect elsewhere is 'blocked?'; the status is always in the detail."""
    with scripted_server(_non_squid) as proxy:
        report = run_plan(_plan([_http("unreachable.example.org", proxy.url, "e-502"), _http("blocked403.example.org", proxy.url, "e-403"),
                                 _http("redirect.example.org", proxy.url, "e-302", "/pub/"), _http("samehost.example.org", proxy.url, "e-301")]),
                          timeout=3, total_timeout=30)
    rows = _rows(report)
    assert failed_entries(report) == ["e-302", "e-403", "e-502"]
    assert rows[("unreachable.example.org", 80, "allow")][1].startswith("blocked? the proxy answered 502 to GET http://unreachable.example.org/ ")
    assert rows[("blocked403.example.org", 80, "allow")][1].startswith("blocked? the proxy answered 403 to GET http://blocked403.example.org/ ")
    assert rows[("redirect.example.org", 80, "allow")][1].startswith(
        "blocked? the proxy answered 302 to GET http://redirect.example.org/pub/ to blockpage.corp ")
    assert rows[("samehost.example.org", 80, "allow")] == ("ok", "reachable (HTTP 301)")


def test_the_proxy_s_refusal_of_a_near_miss_tells_its_block_page_from_the_server_s():
    """The same status, Server and header names as the proxy's refusal of a near miss: blocked; an origin's own 403
    (another Server, its own headers): reachable; the near miss on plain HTTP so answered: denied."""
    with scripted_server(_non_squid) as proxy:
        report = run_plan(_plan([_http("blocked403.example.org", proxy.url, "e-403"), _http("s3.example.net", proxy.url, "e-s3"),
                                 _http("unreachable.example.org", proxy.url, "e-502"),
                                 {"host": "example.com", "port": 443, "protocol": "https", "via": "proxy", "proxy": proxy.url, "expect": "deny",
                                  "miss": "unlisted"},
                                 {"host": "example.com", "port": 80, "protocol": "http", "via": "proxy", "proxy": proxy.url, "expect": "deny",
                                  "miss": "unlisted"}]), timeout=3, total_timeout=30)
    rows = _rows(report)
    assert failed_entries(report) == ["e-403", "e-502"]
    assert rows[("blocked403.example.org", 80, "allow")][1].startswith("blocked: the proxy answered 403 ")
    assert rows[("blocked403.example.org", 80, "allow")][1].endswith("the proxy gave the near miss https example.com:443 it refused")
    assert rows[("s3.example.net", 80, "allow")][0] == "ok" and "unlike the proxy's refusal" in rows[("s3.example.net", 80, "allow")][1]
    assert rows[("example.com", 80, "deny")][0] == "ok" and report["enforcement"] == "proven"


def _inspecting(line: str) -> bytes:
    """/tmp/bump_b.py: 200 to every CONNECT, the stack CA's certificate, then 403 with a non-Squid header to everything."""
    if line.startswith("CONNECT"):
        return b"TLS"
    return b"HTTP/1.1 403 Forbidden\r\nX-Blocked-By: corp-proxy\r\nContent-Length: 0\r\n\r\n"


def test_an_inspecting_proxy_s_unmarked_block_page_is_not_reachable():
    """Before: both requirements 'reachable' and the near miss 'got through'."""
    with scripted_server(_inspecting) as proxy:
        checks = [{"host": "blocked.example.org", "port": 443, "protocol": "https", "via": "proxy", "proxy": proxy.url, "expect": "allow", "entries": ["e1"]},
                  {"host": "blocked.example.org", "port": 443, "protocol": "https", "via": "proxy", "proxy": proxy.url, "expect": "allow",
                   "entries": ["e2"], "path": "/v2/"},
                  {"host": "example.com", "port": 443, "protocol": "https", "via": "proxy", "proxy": proxy.url, "expect": "deny"}]
        report = run_plan(_plan(checks, ca=proxy.ca_pem, inspects_tls=True), timeout=3, total_timeout=30)
    assert failed_entries(report) == ["e1", "e2"]
    assert _rows(report)[("example.com", 443, "deny")][0] == "inconclusive" and report["enforcement"] == "not proven"


def test_another_port_alone_never_proves_enforcement():
    """Debian's squid.conf refuses CONNECT to any port but 443 ('http_access deny CONNECT !SSL_ports') whatever the
    allowlist: the allowed host on 8443 refused proves nothing alone. Before: 'proven'."""
    refused = "403 Forbidden\r\nX-Squid-Error: ERR_ACCESS_DENIED 0"
    other = {"host": "quay.io", "port": 8443, "protocol": "https", "via": "proxy", "expect": "deny", "miss": "other-port"}
    with toy_proxy(connect_status=refused) as proxy:
        alone = run_plan(_plan([{**other, "proxy": proxy.url}]), timeout=3, total_timeout=20)
        both = run_plan(_plan([{**other, "proxy": proxy.url}, {"host": "example.com", "port": 443, "protocol": "https", "via": "proxy",
                                                               "proxy": proxy.url, "expect": "deny", "miss": "unlisted"}]), timeout=3, total_timeout=20)
    assert _rows(alone)[("quay.io", 8443, "deny")][0] == "ok"
    assert (alone["enforcement"], alone["ok"]) == ("not proven", False)
    assert (both["enforcement"], both["ok"]) == ("proven", True)


def test_direct_squid_and_proxy_status_headers_are_the_server_s_own():
    """No proxy in the path: an origin sending X-Squid-Error or Proxy-Status is just answering (the near miss got
    through); Azure Firewall's 470, written in the firewall's place, is its refusal. Before: the first two 'denied'."""
    for header, expected in (("X-Squid-Error: ERR_ACCESS_DENIED 0", "failed"), ("Proxy-Status: corp; error=http_request_denied", "failed")):
        with scripted_server(lambda line, h=header: f"HTTP/1.1 403 Forbidden\r\n{h}\r\nContent-Length: 0\r\n\r\n".encode()) as origin:
            port = int(origin.url.rsplit(":", 1)[1])
            report = run_plan(_plan([{"host": "example.com", "port": port, "protocol": "http", "expect": "deny"}]),
                              hosts={"example.com": "127.0.0.1"}, timeout=3, total_timeout=20)
        status, detail = _rows(report)[("example.com", port, "deny")]
        assert status == expected and detail.startswith("got through, but must be denied (a server answered (HTTP 403))"), header
    with scripted_server(lambda line: b"HTTP/1.1 470 status code 470\r\nContent-Length: 0\r\n\r\n") as firewall:
        port = int(firewall.url.rsplit(":", 1)[1])
        report = run_plan(_plan([{"host": "example.com", "port": port, "protocol": "http", "expect": "deny"}]),
                          hosts={"example.com": "127.0.0.1"}, timeout=3, total_timeout=20)
    assert _rows(report)[("example.com", port, "deny")][0] == "ok"


def test_the_markdown_shows_what_the_network_said_as_code():
    """A detail quotes the proxy's answer: in the summary it is one code span, so a hostile block page's header cannot
    become a link or a heading. Before: escaped literal text."""
    from egress.probe.markdown import markdown

    def hostile(line):
        return b"HTTP/1.1 403 Forbidden\r\nX-Squid-Error: ERR_ACCESS_DENIED [x](https://evil.example/)\r\nContent-Length: 0\r\n\r\n"

    with scripted_server(hostile) as proxy:
        report = run_plan(_plan([_http("blocked.example.org", proxy.url, "e1")]), timeout=3, total_timeout=20)
    detail = report["results"][0]["detail"]
    assert "[x](https://evil.example/)" in detail
    assert f"| `{detail}` |" in markdown(report)


def test_the_plan_names_the_cluster_s_own_ranges_and_each_near_miss_s_kind():
    """The planner puts the node, pod and service CIDRs and the noProxy ranges in the plan (no control there), and says
    which near miss is which (an other-port one never proves enforcement alone)."""
    from egress.probe.plan import build_plan

    from aws_stacks import stack

    catalog, profile, reqs = stack("kkp", machine_cidrs=("10.20.0.0/16",), pod_cidrs=("172.25.0.0/16",), service_cidrs=("10.240.16.0/20",),
                                   no_proxy=(".corp.example", "192.168.7.0/24", "fd00::/8"))
    plan = build_plan(catalog, profile, reqs, "nodes")
    assert plan["internal"] == ["10.20.0.0/16", "10.240.16.0/20", "172.25.0.0/16", "192.168.7.0/24", "fd00::/8"]
    misses = {(c["host"].split(".", 1)[0], c["port"]): c["miss"] for c in plan["checks"] if c["expect"] == "deny"}
    assert set(misses.values()) == {"unlisted", "sibling", "other-port"} and misses[("example", 443)] == "unlisted"
