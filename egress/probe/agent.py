"""egress probe agent: check a role's egress from where the role runs (Python standard library only).

Run as ``python3 agent.py plan.json [--format table|json] [--resolve host=ip ...] [--timeout s] [--total-timeout s]``
inside a minimal Python image (the Kubernetes Job ``egress render`` writes), or imported by ``egress probe``. One file on
purpose: the Job mounts it alone next to its plan. The plan (egress/probe/plan.py writes it) lists checks; each says
where to connect, how (direct, or through the proxy with CONNECT) and what must happen: ``allow`` (a requirement, by
its matrix entry ids) or ``deny`` (a near miss: if it gets through, the firewall is not enforcing).

Steps per check: dns (unless through the proxy, which resolves), tcp, proxy (CONNECT, or the proxy's answer to a plain
HTTP request), tls (SNI = the host; verified against the system CAs plus the plan's CA bundle), http (where the
requirement is HTTP or names a path), ntp (a real NTP client request, RFC 5905 §7.3). Proxy credentials come from the
environment variable the plan names (``user:password``) and are never printed. Exit: 0 every check passed, 1 a check
failed, 2 the plan or the arguments are wrong.
"""
from __future__ import annotations

import argparse
import base64
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
NTP_EPOCH_OFFSET = 2208988800  # seconds from 1900-01-01 (NTP era 0) to 1970-01-01 (RFC 5905 §6)


class PlanError(ValueError):
    """The plan or an argument is wrong: one message naming the field, the value and the fix."""


class StepError(Exception):
    """A step that did not pass; ``denied`` says the network refused it (what a near miss expects)."""

    def __init__(self, message: str, denied: bool = True, answered: bool = False):
        super().__init__(message)
        self.denied = denied
        self.answered = answered  # a server answered (a TLS certificate that does not verify): the flow got through


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

    def _left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise StepError("the total time limit ran out", denied=False)
        return min(self.timeout, left)

    def resolve(self, host: str, port: int, steps: list) -> str:
        name = host.lower().rstrip(".").strip("[]")
        try:
            return str(ipaddress.ip_address(name))
        except ValueError:
            pass
        if name in self.hosts:
            steps.append(_step("dns", True, f"{self.hosts[name]} (pinned)"))
            return self.hosts[name]
        start = time.monotonic()
        try:
            infos = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            steps.append(_step("dns", False, f"{name} does not resolve ({exc})", start))
            raise StepError(f"{name} does not resolve", denied=False) from None
        address = infos[0][4][0]
        steps.append(_step("dns", True, address, start))
        return address

    def connect(self, host: str, port: int, steps: list, step: str = "tcp") -> socket.socket:
        address = self.resolve(host, port, steps)
        start = time.monotonic()
        try:
            sock = socket.create_connection((address, port), timeout=self._left())
        except OSError as exc:
            steps.append(_step(step, False, f"{_where(address, port)}: {_why(exc)}", start))
            raise StepError(f"TCP {_where(address, port)}: {_why(exc)}") from None
        steps.append(_step(step, True, _where(address, port), start))
        return sock

    def context(self) -> ssl.SSLContext:
        context = ssl.create_default_context()  # the system CAs
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
            raise StepError(f"TLS {host}: the certificate does not verify ({exc.verify_message})", denied=False, answered=True) from None
        except (OSError, ssl.SSLError) as exc:
            sock.close()
            steps.append(_step("tls", False, f"SNI {host}: {_why(exc)}", start))
            raise StepError(f"TLS {host}: {_why(exc)}") from None
        steps.append(_step("tls", True, f"SNI {host}, {tls.version()}", start))
        return tls

    def via_proxy(self, url: str, steps: list) -> socket.socket:
        proxy = urlsplit(url)
        port = proxy.port or (443 if proxy.scheme == "https" else 80)
        sock = self.connect(proxy.hostname, port, steps, step="tcp")
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
            raise StepError(f"proxy CONNECT {authority}: {_why(exc)}") from None
        if status != 200:
            sock.close()
            why = " (the proxy wants credentials: set proxy.credentials_env's variable)" if status == 407 else _proxy_error(headers)
            steps.append(_step("proxy", False, f"CONNECT {authority}: {status}{why}", start))
            raise StepError(f"proxy answered {status} to CONNECT {authority}{why}", denied=status != 407)
        steps.append(_step("proxy", True, f"CONNECT {authority}: 200", start))
        return sock

    def http(self, sock: socket.socket, host: str, port: int, path: str, steps: list, absolute: bool, tls: bool) -> None:
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
            raise StepError(f"HTTP GET {target}: {_why(exc)}") from None
        finally:
            sock.close()
        refused = _proxy_error(headers) if absolute else ""
        if absolute and (status == 407 or refused):
            steps.append(_step("proxy", False, f"GET {target}: {status}{refused}", start))
            raise StepError(f"proxy answered {status} to GET {target}{refused}", denied=status != 407)
        steps.append(_step("http", True, f"GET {target}: {status}", start))

    def ntp(self, host: str, port: int, steps: list) -> None:
        address = self.resolve(host, port, steps)
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        nonce = secrets.token_bytes(8)  # the transmit timestamp the server must echo as origin (RFC 5905 §8)
        request = bytes([0x23]) + bytes(39) + nonce  # LI 0, version 4, mode 3 (client)
        start = time.monotonic()
        with socket.socket(family, socket.SOCK_DGRAM) as sock:
            sock.settimeout(self._left())
            try:
                sock.sendto(request, (address, port))
                data, _ = sock.recvfrom(512)
            except OSError as exc:
                steps.append(_step("ntp", False, f"{_where(address, port)}: {_why(exc)}", start))
                raise StepError(f"NTP {_where(address, port)}: {_why(exc)}") from None
        if len(data) < 48 or data[0] & 7 != 4 or data[24:32] != nonce:
            steps.append(_step("ntp", False, f"{_where(address, port)}: not an NTP server reply to this request", start))
            raise StepError(f"NTP {_where(address, port)}: not an NTP server reply to this request", denied=False, answered=True)
        if data[1] == 0:  # kiss-o'-death (RFC 5905 §7.4): the code is in the reference id
            code = data[12:16].decode("ascii", "replace")
            steps.append(_step("ntp", False, f"{_where(address, port)}: kiss-o'-death {code}", start))
            raise StepError(f"NTP {_where(address, port)}: the server refused (kiss-o'-death {code})", denied=False, answered=True)
        seconds = struct.unpack("!I", data[40:44])[0] - NTP_EPOCH_OFFSET
        steps.append(_step("ntp", True, f"{_where(address, port)}: stratum {data[1]}, offset {seconds - time.time():+.1f} s", start))

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
            else:
                sock = self.connect_tunnel(check["proxy"], host, port, steps) if proxied else self.connect(host, port, steps)
                tunnel = proxied  # from here on the proxy has let the flow through, whatever the server does
                if protocol == "https":
                    path = check.get("path")
                    sock = self.tls(sock, host, steps, alpn=path is not None)
                    if path is not None:
                        self.http(sock, host, port, path, steps, absolute=False, tls=True)
                    else:
                        sock.close()
                elif protocol == "http":
                    self.http(sock, host, port, check.get("path") or "/", steps, absolute=False, tls=False)
                else:
                    sock.close()
        except StepError as exc:
            if tunnel:
                exc.answered = True
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
    if isinstance(exc, (socket.timeout, TimeoutError)):
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


def _proxy_error(headers: dict) -> str:
    """The proxy's own refusal: Squid's X-Squid-Error header, or an RFC 9209 Proxy-Status naming an error."""
    if "x-squid-error" in headers:
        return f" ({headers['x-squid-error']})"
    if "error=" in headers.get("proxy-status", ""):
        return f" (Proxy-Status: {headers['proxy-status']})"
    return ""


def judge(check: dict, steps: list, error) -> tuple[str, str]:
    """(status, detail) of one check from its steps."""
    if check.get("expect", "allow") == "allow":
        return ("ok", "reachable") if error is None else ("failed", str(error))
    if error is None or error.answered:
        how = "a server answered" if error is None else str(error)
        return "failed", f"got through, but must be denied ({how}): the firewall is not enforcing"
    if not error.denied:
        return "inconclusive", f"{error}: this proves nothing about the firewall"
    return "ok", f"denied ({error})"


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
            outcome = probe.run(checks[index])
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
    for index, check in enumerate(checks):
        steps, error = finished.get(index, ([], StepError(f"not finished within the total time limit ({total:g} s)", denied=False)))
        status, detail = judge(check, steps, error)
        rows.append({"check": _name(check), "entries": list(check.get("entries", [])), "host": check["host"], "port": check["port"],
                     "protocol": check["protocol"], "via": check.get("via", "direct"), "expect": check.get("expect", "allow"),
                     "why": check.get("why", ""), "status": status, "detail": detail, "steps": steps})
    for skipped in plan.get("not_probed", []):
        rows.append({"check": skipped.get("check", skipped.get("destination", "")), "entries": list(skipped.get("entries", [])),
                     "host": skipped.get("destination", ""), "port": skipped.get("port"), "protocol": skipped.get("protocol", ""),
                     "via": "", "expect": "allow", "why": "", "status": "not-probed", "detail": skipped.get("reason", ""), "steps": []})
    counts = {status: sum(1 for r in rows if r["status"] == status) for status in STATUSES}
    return {"version": REPORT_VERSION, "stack": plan.get("stack", ""), "role": plan.get("role", ""), "ok": counts["failed"] == 0,
            "counts": counts, "results": rows}


def _name(check: dict) -> str:
    return f"{check['protocol']} {_authority(check['host'], check['port'])}" + (check["path"] if check.get("path") else "")


def failed_entries(report: dict) -> list:
    """The matrix entry ids of the requirements that failed (what a test blocked)."""
    return sorted({e for r in report["results"] if r["status"] == "failed" and r["expect"] == "allow" for e in r["entries"]})


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
                 f"({c['ok']} ok, {c['failed']} failed, {c['inconclusive']} inconclusive, {c['not-probed']} not probed)")
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
