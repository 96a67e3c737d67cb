"""Run the real Squid 5 forward proxy on a generated allowlist and ask it for real decisions (reference/verification-engines.md §1).

``parse_config`` is ``squid -k parse``: does Squid accept this squid.conf at all (it is FATAL on overlapping dstdomain
entries, unknown directives and undefined ACLs)? ``running_squid`` starts Squid on the caller's access-control lines
and answers per request: ``connect(host, port)`` is the status of ``CONNECT host:port`` (200 tunnel, 403 denied) and
``get(host, port, path)`` the status of a plain-HTTP proxy request.

Nothing leaves the machine:

- Every name the caller lists is mapped to one loopback address in Squid's own ``hosts_file``, and
  ``dns_nameservers 127.0.0.1`` points at nothing, so any other name fails to resolve (Squid answers 503/500 for an
  allowed but unresolvable name, and 403 before any lookup for a denied one).
- Squid listens on 127.0.0.1 on a free port. Its config, hosts file, pid file and logs are in a directory of its own,
  owned by Squid's ``proxy`` user (Squid drops to it when started as root), and copied to the caller's workdir at
  the end. ``pinger_enable off``: Squid's ICMP pinger helper would otherwise outlive Squid by several seconds.
- An allowed request must reach something, or Squid answers 503 instead of 200. The harness serves a TLS upstream (a
  self-signed certificate; any SNI is accepted and echoed) and a plain HTTP upstream on the loopback address.

Ports: the upstreams listen on the *real* ports, 443 (TLS) and 80 (HTTP) by default, or whatever ``tls_ports`` /
``http_ports`` say. The caller's config is used verbatim, so its port ACLs (``acl ... port 443``) are tested as they
will be deployed, and ``connect("x", 8443)`` is a real near miss, not a port the harness renamed. Binding ports below
1024 needs root (CI and the build containers run as root); without it ``running_squid`` raises. When another run
already serves 127.0.0.1:443, the upstreams and the hosts_file move to another address in 127.0.0.0/8 (still
loopback only); ``Squid.upstream`` says which one was used.
"""
from __future__ import annotations

import datetime
import http.server
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import pytest

SQUID = shutil.which("squid")
# Skipped in a quick local loop without the engine; .ci/run installs it and sets EGRESS_REQUIRE_ENGINES, so CI fails instead.
if SQUID is None and os.environ.get("EGRESS_REQUIRE_ENGINES"):
    raise RuntimeError("squid is required (EGRESS_REQUIRE_ENGINES is set) but not installed")
needs_squid = pytest.mark.skipif(SQUID is None, reason="squid is not installed (.ci/run installs Debian's squid)")

START_TIMEOUT = 60.0  # a hang guard only (Squid usually accepts within 0.15-0.5 s): a loaded machine must not fail a test
STOP_TIMEOUT = 8.0  # seconds after SIGTERM before SIGKILL; Squid 5.7 needs about 2 s even with shutdown_lifetime 0
REQUEST_TIMEOUT = 15.0  # per probe; an allowed name missing from hosts_file costs the DNS timeout (1 s here, times retries)

# The harness's part of squid.conf; the caller's access-control lines follow it unchanged.
RUNTIME = """\
# --- runtime directives of tests/squid_engine.py ---
http_port 127.0.0.1:{port}
pid_filename {dir}/squid.pid
access_log stdio:{dir}/access.log
cache_log {dir}/cache.log
cache_store_log none
cache deny all
cache_mem 8 MB
coredump_dir {dir}
hosts_file {dir}/hosts
dns_nameservers 127.0.0.1
dns_timeout 1 seconds
shutdown_lifetime 0 seconds
pinger_enable off
# --- the allowlist under test ---
"""


def parse_config(text: str, workdir: Path) -> subprocess.CompletedProcess:
    """``squid -k parse`` on ``text`` (written to ``workdir/squid.conf``): exit 0 when Squid accepts the whole file.

    The errors (``FATAL: Bungled ...``, ``unrecognized``) are on stderr. Squid needs an absolute ``-f`` path.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    conf = (workdir / "squid.conf").resolve()
    conf.write_text(text)
    return subprocess.run([SQUID or "squid", "-k", "parse", "-f", str(conf)], capture_output=True, text=True, timeout=60)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _certificate(workdir: Path) -> tuple[Path, Path]:
    """A throwaway self-signed certificate for the TLS upstream (clients are not expected to verify it)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "squid-engine-upstream.test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256()))
    cert_path, key_path = workdir / "upstream.crt", workdir / "upstream.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


class _Upstream(http.server.BaseHTTPRequestHandler):
    """Answers every request with 200 and a body naming what it saw: ``sni=<SNI> host=<Host header>``."""

    timeout = 5  # a client that connects and never speaks (Squid after a bare CONNECT probe) is dropped
    protocol_version = "HTTP/1.0"

    def do_GET(self):
        body = f"sni={getattr(self.request, 'sni', None)} host={self.headers.get('Host')}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):  # keep pytest output clean
        pass


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request, client_address):  # failed handshakes and dropped probes are normal here
        pass


def _serve(server: "_Server", context: ssl.SSLContext | None, stack: ExitStack) -> None:
    """Serve ``_Upstream`` on the bound ``server`` in a daemon thread, stopped and closed by ``stack``.

    With ``context`` every accepted socket is wrapped without handshaking; the handshake runs on the request's own
    thread, so a stalled client cannot block the accept loop.
    """
    if context is not None:
        server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True,
                              name=f"squid-engine-upstream-{server.server_address[1]}")
    thread.start()

    def stop():
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

    stack.callback(stop)


def _tls_context(workdir: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*_certificate(workdir))

    def remember_sni(sslsocket, server_name, _context):
        sslsocket.sni = server_name

    context.sni_callback = remember_sni
    return context


# Where the upstreams may listen: 127.0.0.1, else the next loopback address (in this fixed order) where every port is
# free. A concurrent run (another test process) that took an address makes the bind fail, and the next one is tried.
UPSTREAM_ADDRESSES = ["127.0.0.1", *(f"127.0.{n // 250}.{n % 250 + 2}" for n in range(1, 64))]


def _serve_upstreams(tls_ports: Sequence[int], http_ports: Sequence[int], context: ssl.SSLContext, stack: ExitStack) -> str:
    """Bind the upstreams on the first address where all their ports bind, serve them; return that address.

    Bound, not probed: a port found free and bound later can be taken in between by another run."""
    for address in UPSTREAM_ADDRESSES:
        bound: list[tuple[_Server, ssl.SSLContext | None]] = []
        try:
            for port, port_context in [*((p, context) for p in tls_ports), *((p, None) for p in http_ports)]:
                bound.append((_Server((address, port), _Upstream), port_context))
        except PermissionError as exc:
            for server, _ in bound:
                server.server_close()
            raise RuntimeError(f"cannot bind the upstream ports {[*tls_ports, *http_ports]} ({exc}); serving real ports below "
                               "1024 needs root, which CI has") from exc
        except OSError:
            for server, _ in bound:
                server.server_close()
            continue
        for server, port_context in bound:
            _serve(server, port_context, stack)
        return address
    raise RuntimeError(f"no loopback address has all of the ports {[*tls_ports, *http_ports]} free")


def _request(port: int, request: str, source: str | None = None) -> tuple[int, socket.socket]:
    """Send ``request`` to the proxy (from the loopback address ``source``, default 127.0.0.1: Squid's ``src`` ACLs see
    it); return the response's status and the still-open socket."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=REQUEST_TIMEOUT, source_address=(source, 0) if source else None)
    try:
        sock.sendall(request.encode())
        head = b""
        while b"\r\n" not in head:
            chunk = sock.recv(4096)
            if not chunk:
                raise ConnectionError(f"squid closed the connection without a status line (got {head!r})")
            head += chunk
        status_line = head.split(b"\r\n", 1)[0].decode("latin-1")
        return int(status_line.split()[1]), sock
    except BaseException:
        sock.close()
        raise


def _authority(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


@dataclass
class Squid:
    """A running Squid: ``port`` is its proxy port on 127.0.0.1, ``upstream`` the loopback address the names map to."""

    port: int
    upstream: str
    rundir: Path  # Squid's own files while it runs (cache.log, access.log); copied to the caller's workdir on exit
    process: subprocess.Popen

    def connect(self, host: str, port: int, source: str | None = None) -> int:
        """Status of ``CONNECT host:port HTTP/1.1`` (an IPv6 literal is bracketed): 200 when tunnelled, 403 when denied.
        ``source``: the client's address, any of 127.0.0.0/8 (default 127.0.0.1)."""
        status, sock = self._request(f"CONNECT {_authority(host, port)} HTTP/1.1\r\nHost: {_authority(host, port)}\r\n\r\n", source)
        sock.close()
        return status

    def get(self, host: str, port: int = 80, path: str = "/", source: str | None = None) -> int:
        """Status of a plain-HTTP proxy request ``GET http://host[:port]/path`` (``:80`` left out, as clients do)."""
        authority = _authority(host, port)[:-3] if port == 80 else _authority(host, port)
        status, sock = self._request(f"GET http://{authority}{path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n", source)
        sock.close()
        return status

    def _request(self, request: str, source: str | None) -> tuple[int, socket.socket]:
        """``_request`` to this Squid; a refused connection says whether Squid still runs, and how its log ends."""
        try:
            return _request(self.port, request, source)
        except ConnectionRefusedError as exc:
            state = f"exited with {self.process.returncode}" if self.process.poll() is not None else "still running"
            raise ConnectionRefusedError(f"squid on 127.0.0.1:{self.port} refused a connection from {source or '127.0.0.1'} ({state}); "
                                         f"its cache.log ends:\n{self.cache_log()[-2000:]}") from exc

    def tls_get(self, host: str, port: int = 443, path: str = "/") -> str:
        """CONNECT, then TLS with SNI ``host`` and ``GET path`` through the tunnel; the upstream's body (``sni=... host=...``).

        Proves that a 200 is a tunnel to the harness's upstream and not something else answering. Raises when the
        CONNECT is not 200.
        """
        status, raw = _request(self.port, f"CONNECT {_authority(host, port)} HTTP/1.1\r\nHost: {_authority(host, port)}\r\n\r\n")
        with raw:
            if status != 200:
                raise ConnectionError(f"CONNECT {host}:{port} answered {status}")
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            with context.wrap_socket(raw, server_hostname=host) as tls:
                tls.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
                response = b""
                while chunk := tls.recv(4096):
                    response += chunk
        return response.split(b"\r\n\r\n", 1)[1].decode()

    def cache_log(self) -> str:
        path = self.rundir / "cache.log"
        return path.read_text(errors="replace") if path.exists() else ""


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL if Squid is still there after STOP_TIMEOUT; always reaps it."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=STOP_TIMEOUT)


def _keep(rundir: Path, workdir: Path) -> None:
    """Copy Squid's config, hosts file and logs into the caller's workdir, for a failing test's post-mortem."""
    for name in ("squid.conf", "hosts", "cache.log", "access.log", "squid.out"):
        if (rundir / name).exists():
            shutil.copyfile(rundir / name, workdir / name)


BIND_ATTEMPTS = 5  # a free port taken by another process before Squid binds it: start again on another one


def _accepting(squid: Squid) -> bool:
    """Squid's own word that it listens on 127.0.0.1:port (a connect could reach another process on that port)."""
    return any(line.split("| ", 1)[-1].startswith("Accepting HTTP Socket connections at ") and f" local=127.0.0.1:{squid.port} " in line
               for line in squid.cache_log().splitlines())


def _start_squid(allowlist_conf: str, upstream: str, rundir: Path, stack: ExitStack) -> Squid:
    """Squid on a free port of 127.0.0.1, started again on another port when that one was taken before Squid bound it."""
    for _ in range(BIND_ATTEMPTS):
        proxy_port = _free_port()
        (rundir / "cache.log").unlink(missing_ok=True)
        conf = rundir / "squid.conf"
        conf.write_text(RUNTIME.format(port=proxy_port, dir=rundir) + allowlist_conf)
        if os.geteuid() == 0:  # Squid started as root drops to cache_effective_user (proxy) before it writes anything
            os.chmod(rundir, 0o755)
            for path in [rundir, *rundir.iterdir()]:
                shutil.chown(path, "proxy")
        with open(rundir / "squid.out", "wb") as out:
            process = subprocess.Popen([SQUID or "squid", "-N", "-f", str(conf)], stdout=out, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL)
        stack.callback(_stop, process)
        squid = Squid(proxy_port, upstream, rundir, process)
        deadline = time.monotonic() + START_TIMEOUT
        while not _accepting(squid):
            if process.poll() is not None:
                if f"to 127.0.0.1:{proxy_port}: (98) Address already in use" in squid.cache_log():
                    break  # the port went to someone else: another port
                raise RuntimeError(f"squid exited with {process.returncode} before accepting on 127.0.0.1:{proxy_port}\n"
                                   f"{(rundir / 'squid.out').read_text(errors='replace')}\n{squid.cache_log()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"squid did not accept on 127.0.0.1:{proxy_port} within {START_TIMEOUT} s\n{squid.cache_log()}")
            time.sleep(0.05)  # polling Squid's log for its own readiness line; the deadline is only a hang guard
        else:
            return squid
    raise RuntimeError(f"squid found its port taken {BIND_ATTEMPTS} times in a row\n{squid.cache_log()}")


@contextmanager
def running_squid(allowlist_conf: str, hosts: Iterable[str], workdir: Path, *,
                  tls_ports: Sequence[int] = (443,), http_ports: Sequence[int] = (80,)) -> Iterator[Squid]:
    """Squid on the caller's access-control lines, with upstreams, for the duration of the ``with`` block.

    ``allowlist_conf`` is the acl/http_access part of a squid.conf, used verbatim after the harness's runtime
    directives (``RUNTIME``). ``hosts`` are the names mapped to the upstream address; any other name does not resolve.
    The TLS upstream listens on ``tls_ports`` and the HTTP upstream on ``http_ports``. Squid is stopped and reaped and
    the upstreams are closed on exit, also when the block raises.
    """
    workdir = workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        # Squid reads hosts_file and writes its logs as ``proxy``, which cannot enter pytest's 0700 /tmp/pytest-of-root.
        # (An unreadable hosts_file is only a warning: every name would silently fail to resolve.) So Squid's files
        # live in a directory of their own under /tmp and are copied into ``workdir`` when Squid has stopped.
        rundir = Path(tempfile.mkdtemp(prefix="squid-engine-"))
        stack.callback(shutil.rmtree, rundir, ignore_errors=True)
        stack.callback(_keep, rundir, workdir)
        address = _serve_upstreams(tls_ports, http_ports, _tls_context(workdir), stack)

        # One name per line: Squid reads hosts_file lines into a fixed buffer, so a long line loses its tail silently.
        (rundir / "hosts").write_text("".join(f"{address} {host}\n" for host in sorted(set(hosts))))
        squid = _start_squid(allowlist_conf, address, rundir, stack)
        yield squid
