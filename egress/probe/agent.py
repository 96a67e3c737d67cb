"""egress probe agent: check a role's egress from where the role runs (Python standard library only).

Run as ``python3 agent.py plan.json [--format table|json] [--resolve host=ip ...] [--timeout s] [--total-timeout s]``
inside a minimal Python image (the Kubernetes Job ``egress render`` writes), or imported by ``egress probe``. One file on
purpose: the Job mounts it alone next to its plan. The plan (egress/probe/plan.py writes it) lists checks; each says
where to connect, how (direct, or through the proxy with CONNECT) and what must happen: ``allow`` (a requirement, by
its matrix entry ids) or ``deny`` (a near miss: if it gets through, the firewall is not enforcing).

Steps per check: dns (unless through the proxy, which resolves), tcp, proxy (CONNECT, or the proxy's answer to a plain
HTTP request), tls (SNI = the host; verified against the system CAs plus the plan's CA bundle), http (where the
requirement is HTTP or names a path, and inside a TLS-inspecting proxy's tunnel always), ntp (a real NTP client
request, RFC 5905 §7.3). A name with several addresses is tried address by address, in the resolver's order with the
families interleaved (RFC 8305 §4; at most ``MAX_ADDRESSES``): a dual-stack node without IPv6 egress still reaches the
IPv4 address, and the step says which answered. A requirement stops at the first address that accepts; a near miss goes
on while addresses are cut off, so any address getting through is seen.
Proxy credentials come from the environment variable the plan names, as typed (``user:password``, not percent-encoded:
they become an RFC 7617 Basic Proxy-Authorization), and are never printed.

Judging (the point of the near misses is to prove the firewall enforces, so a near miss counts as denied only on positive
evidence of a policy decision):
- through a proxy: its own refusal (a 403 to CONNECT; Squid's ``X-Squid-Error: ERR_ACCESS_DENIED``; an RFC 9209
  ``Proxy-Status`` naming ``http_request_denied`` or ``destination_ip_prohibited``; Azure Firewall's HTTP 470). An
  answer to an absolute-form GET or inside an inspecting tunnel that is a 403, a 5xx or a redirect to another host with
  no such marker may be the proxy's (Envoy's 502, a block page, a redirect to one) or the server's: it is judged against
  the proxy's answer to a near miss it refused in the same run (status, Server, the header names HTTP does not define):
  the same answer is a refusal; otherwise a requirement so answered is "blocked?" (failed) and a near miss inconclusive.
- direct (no proxy in the path): Azure Firewall's 470 (it answers in the firewall's place); Squid's or RFC 9209's
  headers are the server's own there, no evidence. Or every address of the name refused, reset, timed out or cut in the
  handshake, while for each a requirement on the same port and IP family got through directly in the same run to an
  address outside the cluster's own ranges (the plan's ``internal``: node, pod, service CIDRs, noProxy ranges): the
  control, named with its address; without it a refusal is just as likely a host that does not listen. A local routing
  error (ENETUNREACH, EHOSTUNREACH, EADDRNOTAVAIL) never left the node: it proves nothing.
407, a proxy's 5xx (it could not reach the host: ERR_CONNECT_FAIL, ERR_DNS_FAIL), a name that does not resolve:
inconclusive. The report's ``enforcement`` is ``proven`` when at least one near miss other than an allowed host on another
port was denied (a generic port rule, Debian's ``http_access deny CONNECT !SSL_ports``, refuses that one whatever the
allowlist) and none got through, ``not proven`` when none was, ``failed`` when one got through. A requirement's detail
always shows the HTTP status it got.

Exit: 0 every requirement reachable and enforcement proven, 1 a check failed or enforcement not proven, 2 the plan or
the arguments are wrong.
"""
from __future__ import annotations

import argparse
import base64
import errno
import ipaddress
import json
import os
import queue
import secrets
import socket
import ssl
import struct
import sys
import threading
import time
from urllib.parse import urlsplit

PLAN_VERSION = 1
REPORT_VERSION = 1
PROTOCOLS = ("https", "http", "tcp", "ntp")
STATUSES = ("ok", "failed", "inconclusive", "not-probed")
USER_AGENT = "egress-matrix-probe/1"
MAX_ADDRESSES = 16  # addresses of one name tried in turn (bounded: each may cost a full timeout); a near miss with more is
# inconclusive, since it is denied only when every address was tried
# A connect that fails with these never left the host: no route, no usable source address (errno(3)). They say nothing
# about the firewall (a node without IPv6 egress routes gives ENETUNREACH at once), so they are never counted as a block.
LOCAL_ROUTING_ERRNOS = (errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EADDRNOTAVAIL)
# What a step's failure shows. network: refused, reset or timed out (a firewall's drop or reject, or nothing listening);
# policy: a proxy's or firewall's own refusal; answered: the flow got through (a server, or a proxy's tunnel, answered);
# unknown: proves nothing about the firewall (no DNS answer, no local route, the proxy unreachable, 407, a protocol error);
# suspect: through a proxy, an answer that may be the proxy's own refusal or the server's (a 403, a 5xx or a redirect to
# another host without a proxy's marker): judged with the proxy's answer to a near miss it denied in the same run.
KINDS = ("network", "policy", "answered", "unknown", "suspect")
# What a near miss is (plan.py picks them). other-port: an allowed host on a port the role lacks, which a generic port
# rule alone (Debian's squid.conf "http_access deny CONNECT !SSL_ports") refuses: never proof of enforcement on its own.
MISSES = ("unlisted", "sibling", "other-port")
# Header fields HTTP itself defines (RFC 9110, 9111, 9112; Set-Cookie RFC 6265): the rest of an answer's header names,
# with its status and Server, are the fingerprint that tells a proxy's refusal page from a server's answer.
STANDARD_FIELDS = frozenset((
    "accept-ranges", "age", "allow", "cache-control", "connection", "content-encoding", "content-language", "content-length",
    "content-location", "content-range", "content-type", "date", "etag", "expires", "keep-alive", "last-modified", "location",
    "pragma", "proxy-authenticate", "proxy-connection", "retry-after", "server", "set-cookie", "trailer", "transfer-encoding",
    "upgrade", "vary", "via", "warning", "www-authenticate"))
# RFC 9209 §2.3 (Proxy Error Types) names that say the proxy refused by policy (rfc-editor.org/info/rfc9209 and
# developers.cloudflare.com/privacy-proxy/reference/proxy-status, read 2026-11-24); the others are failures to reach the
# next hop (dns_error, connection_refused, ...), which prove nothing about the policy.
PROXY_STATUS_DENIALS = ("http_request_denied", "destination_ip_prohibited")
# Azure Firewall answers a plain-HTTP request its application rules deny with status 470 and a body "Action: Deny.
# Reason: No rule matched. Proceeding with default action." (http.dev/470, read 2026-11-24).
AZURE_FIREWALL_DENY = 470
NTP_EPOCH_OFFSET = 2208988800  # seconds from 1900-01-01 (NTP era 0) to 1970-01-01 (RFC 5905 §6)


class PlanError(ValueError):
    """The plan or an argument is wrong: one message naming the field, the value and the fix."""


class StepError(Exception):
    """A step that did not pass; ``kind`` (one of KINDS) says what that shows about the firewall."""

    def __init__(self, message: str, kind: str = "network", fingerprint: tuple | None = None):
        super().__init__(message)
        assert kind in KINDS, kind
        self.kind = kind
        self.fingerprint = fingerprint  # of the HTTP answer that failed the step (status, Server, other header names)
        self.attempts: list = []  # direct: (address, kind) per address tried
        self.complete = True  # direct: every address of the name was tried


# -- the plan -------------------------------------------------------------------------------------------------------------

def parse_resolve(values) -> dict:
    """``host=ip`` items (as curl's --resolve pins a name) -> {host: ip}."""
    out = {}
    for value in values or ():
        host, sep, address = str(value).partition("=")
        host = host.strip().lower().rstrip(".")
        try:
            ip = str(ipaddress.ip_address(address.strip()))
        except ValueError:
            ip = ""
        if not sep or not host or not ip:
            raise PlanError(f"--resolve '{value}': not host=ip. Fix: write e.g. --resolve registry.k8s.io=192.0.2.10")
        out[host] = ip
    return out


def check_plan(plan, source: str = "plan") -> dict:
    """The plan as the agent needs it, or PlanError naming the field."""
    def need(cond, field, value, fix):
        if not cond:
            raise PlanError(f"{source}: {field} = {value!r}: {fix}")

    need(isinstance(plan, dict), "(top)", type(plan).__name__, "the plan is a JSON object written by 'egress probe --plan-only'")
    need(plan.get("version") == PLAN_VERSION, "version", plan.get("version"), f"this agent reads plan version {PLAN_VERSION}; "
         "write the plan again with the same egress-matrix")
    checks = plan.get("checks")
    need(isinstance(checks, list), "checks", type(checks).__name__, "a list of checks")
    for n, check in enumerate(checks):
        need(isinstance(check, dict), f"checks[{n}]", check, "an object")
        need(check.get("protocol") in PROTOCOLS, f"checks[{n}].protocol", check.get("protocol"), f"one of {', '.join(PROTOCOLS)}")
        need(isinstance(check.get("host"), str) and check["host"], f"checks[{n}].host", check.get("host"), "a host name or address")
        need(isinstance(check.get("port"), int) and 0 < check["port"] < 65536, f"checks[{n}].port", check.get("port"), "a port 1-65535")
        need(check.get("via", "direct") in ("direct", "proxy"), f"checks[{n}].via", check.get("via"), "direct or proxy")
        need(check.get("expect", "allow") in ("allow", "deny"), f"checks[{n}].expect", check.get("expect"), "allow or deny")
        if check.get("via", "direct") == "proxy":
            url = urlsplit(str(check.get("proxy", "")))
            need(url.scheme in ("http", "https") and url.hostname and not url.username and not url.password, f"checks[{n}].proxy", "(not shown)",
                 "a proxy URL http(s)://host:port without credentials (they come from the environment variable proxy.credentials_env)")
    need(isinstance(plan.get("proxy") or {}, dict), "proxy", type(plan.get("proxy")).__name__, "an object or null")
    for field in ("timeout", "total_timeout"):
        value = plan.get(field)
        need(value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 3600), field, value,
             "seconds, more than 0 and at most 3600")
    need(isinstance(plan.get("hosts", {}), dict), "hosts", plan.get("hosts"), "an object host -> IP address")
    parse_resolve(f"{h}={ip}" for h, ip in plan.get("hosts", {}).items())
    internal = plan.get("internal", [])
    need(isinstance(internal, list), "internal", internal, "a list of the cluster's own address ranges (CIDRs)")
    for n, cidr in enumerate(internal):
        try:
            ipaddress.ip_network(str(cidr), strict=False)
        except ValueError:
            need(False, f"internal[{n}]", cidr, "a CIDR such as 10.0.0.0/16")
    for n, check in enumerate(checks):
        need(check.get("miss") in (None, *MISSES), f"checks[{n}].miss", check.get("miss"), f"one of {', '.join(MISSES)}")
    return plan


def check_timeout(value, name: str = "--timeout") -> float:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = -1.0
    if not 0 < seconds <= 3600 or seconds != seconds:
        raise PlanError(f"{name} '{value}': not a number of seconds in (0, 3600]. Fix: e.g. {name} 5")
    return seconds


# -- the steps ------------------------------------------------------------------------------------------------------------

class Probe:
    def __init__(self, plan: dict, hosts: dict, timeout: float, deadline: float):
        self.plan, self.hosts, self.timeout, self.deadline = plan, hosts, timeout, deadline
        proxy = plan.get("proxy") or {}
        env = proxy.get("credentials_env")
        self._credentials = os.environ.get(env) if env else None  # never printed, never in a report
        self.ca_bundle = plan.get("ca_bundle") or None
        self.inspects_tls = bool(proxy.get("inspects_tls"))

    def _left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise StepError("the total time limit ran out", "unknown")
        return min(self.timeout, left)

    def resolve(self, host: str, port: int, steps: list) -> tuple[list, int]:
        """(the addresses to try, how many the name has): the resolver's order (RFC 6724's, as getaddrinfo sorts them)
        with the families interleaved as RFC 8305 §4 orders them (the first family, then the other, in turn), at most
        MAX_ADDRESSES."""
        name = host.lower().rstrip(".").strip("[]")
        try:
            return [str(ipaddress.ip_address(name))], 1
        except ValueError:
            pass
        if name in self.hosts:
            steps.append(_step("dns", True, f"{self.hosts[name]} (pinned)"))
            return [self.hosts[name]], 1
        start = time.monotonic()
        try:
            infos = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            steps.append(_step("dns", False, f"{name} does not resolve ({exc})", start))
            raise StepError(f"{name} does not resolve", "unknown") from None
        addresses = _interleave(list(dict.fromkeys(info[4][0] for info in infos)))
        steps.append(_step("dns", True, ", ".join(addresses), start))
        return addresses[:MAX_ADDRESSES], len(addresses)

    def connect(self, host: str, port: int, steps: list, step: str = "tcp", kind: str = "network",
                addresses: list | None = None, failed: list | None = None) -> socket.socket:
        """A TCP connection to the first of the host's addresses (or of ``addresses``) that accepts; the step names it
        and those that did not. ``failed`` collects (address, kind, why) of those that did not."""
        failed = [] if failed is None else failed
        if addresses is None:
            addresses, _ = self.resolve(host, port, steps)
        for address in addresses:
            start = time.monotonic()
            try:
                sock = socket.create_connection((address, port), timeout=self._left())
            except OSError as exc:
                local = getattr(exc, "errno", None) in LOCAL_ROUTING_ERRNOS
                failed.append((address, "unknown" if local or kind == "unknown" else kind, f"{_where(address, port)}: {_why(exc)}"))
                if self.deadline <= time.monotonic():
                    break
                continue
            tried = f" (after {'; '.join(f[2] for f in failed)})" if failed else ""
            steps.append({**_step(step, True, _where(address, port) + tried, start), "address": address})
            return sock
        why = "; ".join(f[2] for f in failed)
        steps.append(_step(step, False, why))
        worst = "unknown" if any(f[1] == "unknown" for f in failed) else kind
        error = StepError(f"TCP {why}" if why else "TCP: no address tried", worst)
        error.attempts = [(f[0], f[1]) for f in failed]
        raise error

    def context(self) -> ssl.SSLContext:
        context = ssl.create_default_context()  # the system CAs
        # Python 3.13+ adds OpenSSL's VERIFY_X509_STRICT to the default (What's New in 3.13, ssl); the cluster's clients
        # are Go (crypto/x509), which does not apply those extra RFC 5280 checks, so a corporate proxy CA the nodes accept
        # (no Authority Key Identifier, say) must not fail only here.
        context.verify_flags &= ~getattr(ssl, "VERIFY_X509_STRICT", 0)
        if self.ca_bundle:
            context.load_verify_locations(cadata=self.ca_bundle)  # plus the stack's (a TLS-inspecting proxy's CA)
        return context

    def tls(self, sock: socket.socket, host: str, steps: list, alpn: bool) -> ssl.SSLSocket:
        context = self.context()
        if alpn:
            context.set_alpn_protocols(["http/1.1"])
        start = time.monotonic()
        sock.settimeout(self._left())
        try:
            tls = context.wrap_socket(sock, server_hostname=host.strip("[]"))
        except ssl.SSLCertVerificationError as exc:
            sock.close()
            steps.append(_step("tls", False, f"SNI {host}: the certificate does not verify ({exc.verify_message})", start))
            raise StepError(f"TLS {host}: the certificate does not verify ({exc.verify_message})", "answered") from None
        except (OSError, ssl.SSLError) as exc:
            sock.close()
            steps.append(_step("tls", False, f"SNI {host}: {_why(exc)}", start))
            # A reset, a close or silence during the handshake is how a firewall that judges the SNI refuses; any other
            # TLS error means something answered that is not the server (or not TLS): it proves nothing either way.
            cut = isinstance(exc, (ConnectionError, TimeoutError, ssl.SSLEOFError, ssl.SSLZeroReturnError))
            raise StepError(f"TLS {host}: {_why(exc)}", "network" if cut else "unknown") from None
        steps.append(_step("tls", True, f"SNI {host}, {tls.version()}", start))
        return tls

    def via_proxy(self, url: str, steps: list) -> socket.socket:
        proxy = urlsplit(url)
        port = proxy.port or (443 if proxy.scheme == "https" else 80)
        sock = self.connect(proxy.hostname, port, steps, step="tcp", kind="unknown")  # the proxy unreachable proves nothing
        if proxy.scheme == "https":
            sock = self.tls(sock, proxy.hostname, steps, alpn=False)
        return sock

    def auth_header(self) -> str:
        if not self._credentials:
            return ""
        return f"Proxy-Authorization: Basic {base64.b64encode(self._credentials.encode()).decode()}\r\n"

    def connect_tunnel(self, url: str, host: str, port: int, steps: list) -> socket.socket:
        sock = self.via_proxy(url, steps)
        authority = _authority(host, port)
        start = time.monotonic()
        try:
            sock.settimeout(self._left())
            sock.sendall(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: {USER_AGENT}\r\n{self.auth_header()}\r\n".encode())
            status, headers = _read_head(sock)
        except (OSError, ValueError) as exc:
            sock.close()
            steps.append(_step("proxy", False, f"CONNECT {authority}: {_why(exc)}", start))
            raise StepError(f"proxy CONNECT {authority}: {_why(exc)}", "unknown") from None
        if not 200 <= status < 300:  # any 2xx to CONNECT opens the tunnel (RFC 9110 §9.3.6)
            sock.close()
            kind, why, fingerprint = _refusal(status, headers, connect=True)
            steps.append({**_step("proxy", False, f"CONNECT {authority}: {status}{why}", start), "status": status})
            raise StepError(f"proxy answered {status} to CONNECT {authority}{why}", kind, fingerprint)
        steps.append(_step("proxy", True, f"CONNECT {authority}: {status}", start))
        return sock

    def http(self, sock: socket.socket, host: str, port: int, path: str, steps: list, absolute: bool, tls: bool,
             proxy: bool = False) -> None:
        """GET ``path`` and judge the status: a proxy's or firewall's refusal fails the step (``proxy``: the answer may
        be a proxy's, an absolute-form request or one inside an inspecting proxy's tunnel), any other status is the
        server's answer (even 404 or 401: the flow reached it)."""
        authority = _authority(host, port) if port != (443 if tls else 80) else host
        target = f"http://{authority}{path}" if absolute else path
        start = time.monotonic()
        try:
            sock.settimeout(self._left())
            auth = self.auth_header() if absolute else ""
            sock.sendall(f"GET {target} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: {USER_AGENT}\r\n{auth}Connection: close\r\n\r\n".encode())
            status, headers = _read_head(sock)
        except (OSError, ValueError) as exc:
            steps.append(_step("http", False, f"GET {target}: {_why(exc)}", start))
            raise StepError(f"HTTP GET {target}: {_why(exc)}", "unknown") from None
        finally:
            sock.close()
        kind, why, fingerprint = _refusal(status, headers, connect=False, proxy=proxy or absolute, host=host)
        if kind:
            steps.append({**_step("proxy" if proxy or absolute else "http", False, f"GET {target}: {status}{why}", start), "status": status})
            raise StepError(f"{'the proxy answered' if absolute else 'answered'} {status} to GET {target}{why}", kind, fingerprint)
        steps.append({**_step("http", True, f"GET {target}: {status}", start), "status": status})

    def ntp(self, host: str, port: int, steps: list) -> None:
        nonce = secrets.token_bytes(8)  # the transmit timestamp the server must echo as origin (RFC 5905 §8)
        request = bytes([0x23]) + bytes(39) + nonce  # LI 0, version 4, mode 3 (client)
        failed = []
        for address in self.resolve(host, port, steps)[0]:  # as for TCP: the next address when one does not answer
            family = socket.AF_INET6 if ":" in address else socket.AF_INET
            start = time.monotonic()
            with socket.socket(family, socket.SOCK_DGRAM) as sock:
                sock.settimeout(self._left())
                try:
                    sock.sendto(request, (address, port))
                    data, _ = sock.recvfrom(512)
                except OSError as exc:
                    failed.append(f"{_where(address, port)}: {_why(exc)}")
                    continue
            where = _where(address, port) + (f" (after {'; '.join(failed)})" if failed else "")
            if len(data) < 48 or data[0] & 7 != 4 or data[24:32] != nonce:
                steps.append(_step("ntp", False, f"{where}: not an NTP server reply to this request", start))
                raise StepError(f"NTP {_where(address, port)}: not an NTP server reply to this request", "answered")
            if data[1] == 0:  # kiss-o'-death (RFC 5905 §7.4): the code is in the reference id
                code = data[12:16].decode("ascii", "replace")
                steps.append(_step("ntp", False, f"{where}: kiss-o'-death {code}", start))
                raise StepError(f"NTP {_where(address, port)}: the server refused (kiss-o'-death {code})", "answered")
            seconds = struct.unpack("!I", data[40:44])[0] - NTP_EPOCH_OFFSET
            steps.append(_step("ntp", True, f"{where}: stratum {data[1]}, offset {seconds - time.time():+.1f} s", start))
            return
        steps.append(_step("ntp", False, "; ".join(failed)))
        raise StepError(f"NTP {'; '.join(failed)}", "network")

    def after_connect(self, sock: socket.socket, check: dict, steps: list, tunnel: bool) -> None:
        """TLS and HTTP on a connection (direct, or a proxy's tunnel)."""
        host, port, protocol = check["host"], check["port"], check["protocol"]
        inspected = tunnel and self.inspects_tls  # inside an inspecting proxy's tunnel the answer may be the proxy's
        if protocol == "https":
            path = check.get("path")
            if path is None and inspected:
                path = "/"  # an inspecting proxy opens every tunnel and refuses inside it: only a request shows it
            sock = self.tls(sock, host, steps, alpn=path is not None)
            if path is not None:
                self.http(sock, host, port, path, steps, absolute=False, tls=True, proxy=inspected)
            else:
                sock.close()
        elif protocol == "http":
            self.http(sock, host, port, check.get("path") or "/", steps, absolute=False, tls=False, proxy=inspected)
        else:
            sock.close()

    def direct(self, check: dict, steps: list) -> None:
        """Address by address: a requirement stops at the first that accepts TCP; a near miss goes on while an address
        is cut off (refused, reset, timed out, the handshake cut), so it is denied only if every address was."""
        host, port = check["host"], check["port"]
        deny = check.get("expect", "allow") == "deny"
        left, total = self.resolve(host, port, steps)
        attempts: list = []
        while True:
            failed: list = []
            try:
                sock = self.connect(host, port, steps, addresses=left, failed=failed)
            except StepError as exc:
                exc.attempts = attempts + exc.attempts
                exc.complete = len(exc.attempts) >= total
                if any(kind == "unknown" for _, kind in exc.attempts) and exc.kind == "network":
                    exc.kind = "unknown"
                raise
            attempts += [(f[0], f[1]) for f in failed]
            address = steps[-1]["address"]
            left = left[left.index(address) + 1:]
            try:
                self.after_connect(sock, check, steps, tunnel=False)
                return
            except StepError as exc:
                attempts.append((address, exc.kind))
                if not deny or exc.kind != "network" or not left:
                    exc.attempts, exc.complete = attempts, len(attempts) >= total
                    if any(kind == "unknown" for _, kind in attempts) and exc.kind == "network":
                        exc.kind = "unknown"
                    raise

    def run(self, check: dict) -> list:
        steps: list = []
        tunnel = False
        host, port, protocol = check["host"], check["port"], check["protocol"]
        proxied = check.get("via") == "proxy"
        try:
            if protocol == "ntp":
                self.ntp(host, port, steps)
            elif protocol == "http" and proxied:
                self.http(self.via_proxy(check["proxy"], steps), host, port, check.get("path") or "/", steps, absolute=True, tls=False)
            elif proxied:
                sock = self.connect_tunnel(check["proxy"], host, port, steps)
                tunnel = True  # from here on the proxy has let the flow through, unless it refuses inside (inspecting)
                self.after_connect(sock, check, steps, tunnel=True)
            else:
                self.direct(check, steps)
        except StepError as exc:
            if tunnel and not self.inspects_tls and exc.kind != "policy":
                exc.kind = "answered"  # the proxy opened the tunnel: its policy let the flow through, whatever came next
            return [steps, exc]
        return [steps, None]


# -- running and judging ----------------------------------------------------------------------------------------------

def _step(name: str, ok: bool, detail: str, start: float | None = None) -> dict:
    return {"step": name, "ok": ok, "detail": detail, **({"ms": int((time.monotonic() - start) * 1000)} if start is not None else {})}


def _where(address: str, port: int) -> str:
    return _authority(address, port)


def _authority(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


def _why(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):  # socket.timeout is its alias since 3.10
        return "timed out"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, ConnectionResetError):
        return "connection reset"
    return str(exc) or type(exc).__name__


def _read_head(sock: socket.socket) -> tuple[int, dict]:
    """Status and headers of an HTTP response (read up to the blank line; a CONNECT's tunnel data is never read)."""
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(1)  # byte by byte: nothing past the header may be consumed before the TLS handshake
        if not chunk:
            if head.startswith(b"HTTP/") and b"\r\n" in head:
                break
            raise ValueError(f"no HTTP response (got {head[:40]!r})")
        head += chunk
        if len(head) > 65536:
            raise ValueError("response header larger than 64 KiB")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split()
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise ValueError(f"not an HTTP status line: {lines[0][:60]!r}")
    headers = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers


def _fingerprint(status: int, headers: dict) -> tuple:
    """What identifies who wrote an answer: its status, Server, the header names HTTP does not define, and for a
    redirect the host it points at (a proxy's refusal page looks the same for every host it refuses)."""
    location = (urlsplit(headers.get("location", "")).hostname or "") if 300 <= status < 400 else ""
    return (status, headers.get("server", ""), tuple(sorted(n for n in headers if n not in STANDARD_FIELDS)), location)


def _refusal(status: int, headers: dict, connect: bool, proxy: bool = True, host: str = "") -> tuple[str, str, tuple]:
    """(kind, why, fingerprint) of a response a proxy or firewall may have written: ("policy", ...) for its own refusal,
    ("unknown", ...) for its failure or a demand for credentials, ("suspect", ...) for a 403, a 5xx or a redirect to
    another host that carries no proxy's marker (judged against the proxy's refusal of a near miss), ("", "") for the
    server's own answer. A CONNECT's answer is always the proxy's. ``proxy`` False (no proxy in the path): only Azure
    Firewall's 470, which it writes in the firewall's place, is a refusal; Squid's or RFC 9209's headers there would be
    the server's own (anyone can send them), so they are no evidence."""
    fingerprint = _fingerprint(status, headers)
    if not proxy:
        if status == AZURE_FIREWALL_DENY:
            return "policy", " (Azure Firewall: no application rule allows it)", fingerprint
        return "", "", fingerprint
    squid = headers.get("x-squid-error", "")
    errors = [part.strip().split("=", 1)[1].strip().strip('"') for part in headers.get("proxy-status", "").split(";")
              if part.strip().startswith("error=")]
    if status == 407:  # the proxy wants credentials: that says nothing about the destination
        return ("unknown", (f" ({squid})" if squid else "") + " (the proxy wants credentials: set the environment variable "
                "proxy.credentials_env names)", fingerprint)
    if status == AZURE_FIREWALL_DENY:
        return "policy", " (Azure Firewall: no application rule allows it)", fingerprint
    if squid:  # Squid marks every page it writes itself (errorpage.cc)
        return ("policy" if squid.startswith("ERR_ACCESS_DENIED") else "unknown"), f" ({squid})", fingerprint
    if errors:
        return ("policy" if errors[0] in PROXY_STATUS_DENIALS else "unknown"), f" (Proxy-Status: {headers['proxy-status']})", fingerprint
    if connect:
        return ("policy", " (the proxy refused the tunnel)", fingerprint) if status == 403 else ("unknown", "", fingerprint)
    elsewhere = urlsplit(headers.get("location", "")).hostname
    if status == 403 or status >= 500 or (300 <= status < 400 and elsewhere and elsewhere.lower() != host.lower().strip("[]")):
        where = f" to {elsewhere}" if 300 <= status < 400 else ""
        return "suspect", f"{where} (no proxy's marker: its refusal or the server's answer)", fingerprint
    return "", "", fingerprint


def _interleave(addresses: list) -> list:
    """RFC 8305 §4: keep the resolver's order within a family, alternate the families, the first address's first."""
    if not addresses:
        return []
    first = [a for a in addresses if (":" in a) == (":" in addresses[0])]
    other = [a for a in addresses if (":" in a) != (":" in addresses[0])]
    out = []
    for index in range(max(len(first), len(other))):
        out += first[index:index + 1] + other[index:index + 1]
    return out


def _family(address: str) -> str:
    return "IPv6" if ":" in address else "IPv4"


def _status(steps: list) -> str:
    codes = [s["status"] for s in steps if "status" in s]
    return f" (HTTP {codes[-1]})" if codes else ""


def judge(check: dict, steps: list, error, controls: dict | None = None, denials: dict | None = None) -> tuple[str, str]:
    """(status, detail) of one check from its steps. ``controls``: (port, family) -> (requirement, address) that got
    through directly outside the cluster's own ranges; ``denials``: proxy URL -> {fingerprint: near miss} of the answers
    the proxy gave near misses it refused in this run."""
    refusals = (denials or {}).get(check.get("proxy"), {}) if error is not None else {}
    same = refusals.get(error.fingerprint) if error is not None and error.fingerprint else None
    if check.get("expect", "allow") == "allow":
        if error is None:
            return "ok", "reachable" + _status(steps)
        if error.kind != "suspect":
            return "failed", str(error)
        status = error.fingerprint[0]
        if same:
            return "failed", f"blocked: {error}: the same answer (status, Server, header names) the proxy gave the near miss {same} it refused"
        if refusals and status < 500:
            return "ok", f"reachable ({error}: unlike the proxy's refusal of a near miss in this run, so the server's)"
        if status >= 500:
            return "failed", f"blocked? {error}: through a proxy a 5xx is as often the proxy failing to reach the host or refusing it"
        return "failed", (f"blocked? {error}: a proxy's refusal looks like this, and no near miss the proxy refused in this run gives its "
                          "answer to compare")
    if error is None or error.kind == "answered":
        how = f"a server answered{_status(steps)}" if error is None else str(error)
        return "failed", f"got through, but must be denied ({how}): the firewall is not enforcing"
    if error.kind == "policy":
        return "ok", f"denied ({error})"
    if error.kind == "suspect":
        if same:
            return "ok", f"denied ({error}: the proxy's refusal, as it answered the near miss {same})"
        return "inconclusive", f"{error}: a proxy's refusal or the server's answer; this proves nothing about the firewall"
    if error.kind == "network" and check.get("via", "direct") == "direct":
        if not error.complete:
            return "inconclusive", f"{error}: not every address of {check['host']} was tried, so another may get through"
        found = {(check["port"], _family(a)): (controls or {}).get((check["port"], _family(a))) for a, _ in error.attempts}
        missing = sorted(family for (_, family), control in found.items() if not control)
        if missing or not found:
            return "inconclusive", (f"{error}: no requirement on port {check['port']} over {' or '.join(missing) or 'IP'} got through directly "
                                    "(to an address outside the cluster's own ranges) in this run, so this may be a host that does not "
                                    "listen rather than the firewall")
        shown = "; ".join(f"{name} ({address}) over {family}" for (_, family), (name, address) in sorted(found.items()))
        return "ok", f"denied ({error}), while {shown} got through on the same port in this run"
    return "inconclusive", f"{error}: this proves nothing about the firewall"


def _controls(checks: list, outcomes: dict, internal: list) -> dict:
    """(port, family) -> (requirement, address): the first requirement that got through directly on that port and IP
    family over TCP, to an address outside the cluster's own ranges (a node, pod or service address, a noProxy range:
    such a flow need not cross the firewall at all)."""
    ranges = [ipaddress.ip_network(c, strict=False) for c in internal]
    out: dict = {}
    for index, check in enumerate(checks):
        steps, error = outcomes.get(index, ([], True))
        if not (error is None and check.get("expect", "allow") == "allow" and check.get("via", "direct") == "direct"
                and check["protocol"] != "ntp"):
            continue
        address = next((s["address"] for s in steps if s.get("step") == "tcp" and s.get("ok") and "address" in s), None)
        if address is None:
            continue
        ip = ipaddress.ip_address(address)
        if any(ip.version == r.version and ip in r for r in ranges):
            continue
        out.setdefault((check["port"], _family(address)), (_name(check), address))
    return out


def _denials(checks: list, outcomes: dict) -> dict:
    """proxy URL -> {fingerprint: near miss} of the answers a proxy gave near misses it refused in this run."""
    out: dict = {}
    for index, check in enumerate(checks):
        steps, error = outcomes.get(index, ([], None))
        if check.get("expect") == "deny" and check.get("via") == "proxy" and error is not None and error.kind == "policy" and error.fingerprint:
            out.setdefault(check["proxy"], {}).setdefault(error.fingerprint, _name(check))
    return out


def enforcement(results: list) -> str:
    """proven: a near miss was denied and none got through; failed: one got through; not proven: none was denied (an
    allowed host on another port alone proves nothing: a generic port rule refuses it whatever the allowlist)."""
    misses = [r for r in results if r["expect"] == "deny"]
    if any(r["status"] == "failed" for r in misses):
        return "failed"
    return "proven" if any(r["status"] == "ok" and r.get("miss") != "other-port" for r in misses) else "not proven"


def run_plan(plan: dict, hosts: dict | None = None, timeout: float | None = None, total_timeout: float | None = None,
             concurrency: int | None = None) -> dict:
    """Run every check of ``plan`` (threads; each check bounded by ``timeout``, all by ``total_timeout``): the report."""
    check_plan(plan)
    timeout = timeout or float(plan.get("timeout") or 5)
    total = total_timeout or float(plan.get("total_timeout") or 300)
    pinned = {**parse_resolve(f"{h}={ip}" for h, ip in plan.get("hosts", {}).items()), **(hosts or {})}
    deadline = time.monotonic() + total
    probe = Probe(plan, pinned, timeout, deadline)
    checks = plan["checks"]
    results: dict = {}
    work: queue.Queue = queue.Queue()
    for index in range(len(checks)):
        work.put(index)
    done = threading.Condition()

    def worker():
        while True:
            try:
                index = work.get_nowait()
            except queue.Empty:
                return
            try:
                outcome = probe.run(checks[index])
            except Exception as exc:  # a bug must not hang the run until the total time limit: the check says it
                outcome = [[], StepError(f"the agent failed on this check ({type(exc).__name__}: {exc})", "unknown")]
            with done:
                results[index] = outcome
                done.notify_all()

    for _ in range(max(1, min(concurrency or int(plan.get("concurrency") or 16), len(checks) or 1))):
        threading.Thread(target=worker, daemon=True).start()  # daemon: a stuck DNS lookup cannot outlive the deadline
    with done:
        while len(results) < len(checks) and time.monotonic() < deadline:
            done.wait(timeout=max(0.0, deadline - time.monotonic()))
        finished = dict(results)
    rows = []
    controls = _controls(checks, finished, plan.get("internal", []))
    denials = _denials(checks, finished)
    for index, check in enumerate(checks):
        steps, error = finished.get(index, ([], StepError(f"not finished within the total time limit ({total:g} s)", "unknown")))
        status, detail = judge(check, steps, error, controls, denials)
        rows.append({"check": _name(check), "entries": list(check.get("entries", [])), "host": check["host"], "port": check["port"],
                     "protocol": check["protocol"], "via": check.get("via", "direct"), "expect": check.get("expect", "allow"),
                     "why": check.get("why", ""), "status": status, "detail": detail, "steps": steps,
                     **({"miss": check["miss"]} if check.get("miss") else {})})
    for skipped in plan.get("not_probed", []):
        rows.append({"check": skipped.get("check", skipped.get("destination", "")), "entries": list(skipped.get("entries", [])),
                     "host": skipped.get("destination", ""), "port": skipped.get("port"), "protocol": skipped.get("protocol", ""),
                     "via": "", "expect": "allow", "why": "", "status": "not-probed", "detail": skipped.get("reason", ""), "steps": []})
    counts = {status: sum(1 for r in rows if r["status"] == status) for status in STATUSES}
    enforced = enforcement(rows)
    return {"version": REPORT_VERSION, "stack": plan.get("stack", ""), "role": plan.get("role", ""),
            "ok": counts["failed"] == 0 and enforced == "proven", "enforcement": enforced, "counts": counts, "results": rows}


def _name(check: dict) -> str:
    return f"{check['protocol']} {_authority(check['host'], check['port'])}" + (check["path"] if check.get("path") else "")


def failed_entries(report: dict) -> list:
    """The matrix entry ids of the requirements that failed (what a test blocked)."""
    return sorted({e for r in report["results"] if r["status"] == "failed" and r["expect"] == "allow" for e in r["entries"]})


ENFORCEMENT_LINE = {
    "proven": "enforcement proven (a near miss was denied)",
    "not proven": "enforcement NOT proven (no near miss was conclusively denied: the firewall may let anything through)",
    "failed": "enforcement FAILED (a near miss got through)",
}


def table(report: dict) -> str:
    """Plain text: one line per check, then the counts."""
    rows = [("STATUS", "CHECK", "VIA", "ENTRIES", "DETAIL")]
    for r in report["results"]:
        label = r["check"] + (" (must be denied)" if r["expect"] == "deny" else "")
        rows.append((r["status"], label, r["via"] or "-", ",".join(r["entries"]) or "-", r["detail"]))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row[:4], widths)) + "  " + row[4] for row in rows]
    c = report["counts"]
    lines.append(f"egress probe of stack '{report['stack']}' role '{report['role']}': {'PASS' if report['ok'] else 'FAIL'} "
                 f"({c['ok']} ok, {c['failed']} failed, {c['inconclusive']} inconclusive, {c['not-probed']} not probed); "
                 f"{ENFORCEMENT_LINE[report['enforcement']]}")
    return "\n".join(line.rstrip() for line in lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="agent.py", description="Check a role's egress against an egress-matrix probe plan.")
    parser.add_argument("plan", help="plan.json written by 'egress probe --plan-only' (or the Job's ConfigMap)")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("--resolve", action="append", default=[], metavar="HOST=IP", help="pin a name to an address (repeatable)")
    parser.add_argument("--timeout", help="seconds per check (default: the plan's)")
    parser.add_argument("--total-timeout", help="seconds for all checks (default: the plan's)")
    args = parser.parse_args(argv)
    try:
        try:
            with open(args.plan, encoding="utf-8") as handle:
                plan = check_plan(json.load(handle), args.plan)
        except (OSError, json.JSONDecodeError) as exc:
            raise PlanError(f"{args.plan}: cannot read the plan ({exc}). Fix: pass the plan.json 'egress probe --plan-only' wrote") from None
        report = run_plan(plan, parse_resolve(args.resolve),
                          check_timeout(args.timeout) if args.timeout is not None else None,
                          check_timeout(args.total_timeout, "--total-timeout") if args.total_timeout is not None else None)
    except PlanError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(json.dumps(report, indent=2) + "\n" if args.format == "json" else table(report))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
