"""Local servers for the probe tests: HTTPS, HTTP and NTP on one loopback address, with a test CA (cryptography).

``serving(names)`` issues one certificate for ``names`` from a fresh test CA, serves HTTPS on 443, HTTP on 80 and NTP on
UDP 123 of a free loopback address (127.77.0.x: not the Squid harness's addresses), and records what each request
named (SNI, Host, path). Everything stops when the ``with`` block ends, and by itself after ``LIFETIME`` seconds at most,
so a failing test never leaves a server behind. Ports below 1024 need root (CI and the build containers run as root).
"""
from __future__ import annotations

import datetime
import http.server
import ipaddress
import socket
import ssl
import struct
import tempfile
import threading
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

LIFETIME = 300.0
ADDRESSES = [f"127.77.0.{n}" for n in range(1, 60)]
DEAD = "127.77.1.254"  # nothing listens here: a connection is refused at once (a blocked requirement)


@dataclass
class Servers:
    address: str
    ca_pem: str
    seen: list = field(default_factory=list)  # (scheme, sni, host header, path)
    ntp_seen: list = field(default_factory=list)


def issue_certificates(names: Iterable[str]) -> tuple[str, bytes, bytes]:
    """(CA certificate PEM, server certificate PEM, server key PEM) for ``names``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "egress-probe test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False, key_agreement=False, encipher_only=False,
                                       decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    sans = []
    for name in sorted(set(names)):
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            sans.append(x509.DNSName(name))
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "egress-probe test server")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return (ca.public_bytes(serialization.Encoding.PEM).decode(), cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request, client_address):  # a probe that closes after the handshake is normal
        pass


def _handler(servers: Servers, scheme: str):
    class Handler(http.server.BaseHTTPRequestHandler):
        timeout = 5
        protocol_version = "HTTP/1.0"

        def do_GET(self):
            servers.seen.append((scheme, getattr(self.request, "sni", None), self.headers.get("Host"), self.path))
            body = b"egress probe test server\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format, *args):
            pass

    return Handler


def _ntp(sock: socket.socket, servers: Servers, stop: threading.Event) -> None:
    """Answer NTP client requests (RFC 5905 §7.3): mode 4, stratum 2, origin = the request's transmit timestamp."""
    sock.settimeout(0.2)
    while not stop.is_set():
        try:
            data, peer = sock.recvfrom(512)
        except (socket.timeout, OSError):
            continue
        if len(data) < 48:
            continue
        servers.ntp_seen.append(peer)
        now = time.time() + 2208988800
        stamp = struct.pack("!II", int(now), int((now % 1) * 2**32))
        reply = bytes([0x24, 2, 6, 0xEC]) + bytes(8) + b"TEST" + stamp + data[40:48] + stamp + stamp
        sock.sendto(reply, peer)


@contextmanager
def serving(names: Iterable[str], lifetime: float = LIFETIME) -> Iterator[Servers]:
    ca_pem, cert_pem, key_pem = issue_certificates(names)
    with tempfile.TemporaryDirectory(prefix="egress-probe-test-") as tmp, ExitStack() as stack:
        cert, key = Path(tmp) / "server.crt", Path(tmp) / "server.key"
        cert.write_bytes(cert_pem)
        key.write_bytes(key_pem)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)

        def remember_sni(sslsocket, server_name, _context):
            sslsocket.sni = server_name

        context.sni_callback = remember_sni
        for address in ADDRESSES:
            bound = []
            try:
                servers = Servers(address, ca_pem)
                bound.append(_Server((address, 443), _handler(servers, "https")))
                bound.append(_Server((address, 80), _handler(servers, "http")))
                udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                bound.append(udp)
                udp.bind((address, 123))
            except OSError:
                for b in bound:
                    (b.server_close if hasattr(b, "server_close") else b.close)()
                continue
            break
        else:
            raise RuntimeError("no free loopback address for the probe test servers")
        tls_server, http_server, udp = bound
        tls_server.socket = context.wrap_socket(tls_server.socket, server_side=True, do_handshake_on_connect=False)
        stop = threading.Event()
        threads = [threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True) for s in (tls_server, http_server)]
        threads.append(threading.Thread(target=_ntp, args=(udp, servers, stop), daemon=True))
        for thread in threads:
            thread.start()

        def shutdown():
            stop.set()
            for s in (tls_server, http_server):
                s.shutdown()
                s.server_close()
            udp.close()

        timer = threading.Timer(lifetime, shutdown)  # stops by itself, whatever the test does
        timer.daemon = True
        timer.start()
        stack.callback(timer.cancel)
        stack.callback(lambda: stop.is_set() or shutdown())
        yield servers


@dataclass
class ToyProxy:
    url: str
    ca_pem: str
    seen: list = field(default_factory=list)  # (method, target, Proxy-Authorization or None)


def _read_head(conn) -> bytes:
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = conn.recv(1)
        if not chunk:
            break
        head += chunk
    return head


def _tls_listener(names: Iterable[str]) -> tuple[str, ssl.SSLContext, socket.socket]:
    """A test CA's PEM, a server TLS context with a certificate for ``names`` signed by it, and a listening socket on
    127.0.0.1 (an ephemeral port) that the accept loop polls."""
    ca_pem, cert_pem, key_pem = issue_certificates(names)
    with tempfile.TemporaryDirectory(prefix="egress-probe-tls-") as tmp:
        (Path(tmp) / "c.pem").write_bytes(cert_pem)
        (Path(tmp) / "k.pem").write_bytes(key_pem)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(Path(tmp) / "c.pem", Path(tmp) / "k.pem")
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(32)
    server.settimeout(0.2)
    return ca_pem, context, server


@contextmanager
def _accepting(server: socket.socket, handle, lifetime: float) -> Iterator[None]:
    """Accept on ``server`` (a thread per connection, ``handle(conn)``) until the block ends or ``lifetime`` runs out."""
    stop = threading.Event()

    def loop():
        deadline = time.monotonic() + lifetime
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                conn, _ = server.accept()
            except (socket.timeout, OSError):
                continue
            threading.Thread(target=handle, args=(conn,), daemon=True).start()
        server.close()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=2)


@contextmanager
def toy_proxy(blocked: Iterable[str] = (), connect_status: str = "", lifetime: float = 60.0) -> Iterator[ToyProxy]:
    """A forward proxy on 127.0.0.1 that stops by itself (``lifetime``), written to test the agent's judging.

    ``connect_status`` (e.g. ``"503 Service Unavailable\\r\\nX-Squid-Error: ERR_DNS_FAIL 0"``): every CONNECT gets it.
    Without it the proxy inspects TLS as a TLS-inspecting proxy does: 200 to every CONNECT, a handshake with a certificate
    from its own test CA (``ca_pem``) for whatever SNI, then for a request to a host in ``blocked`` Squid's refusal (403,
    ``X-Squid-Error: ERR_ACCESS_DENIED 0``), for others 404 as an origin might answer. A plain-HTTP request (absolute URI)
    to a blocked host gets Azure Firewall's 470, others 200."""
    blocked = set(blocked)
    names = sorted(blocked | {"example.com", "allowed.test", "localhost"})
    ca_pem, context, server = _tls_listener(names)
    proxy = ToyProxy(f"http://127.0.0.1:{server.getsockname()[1]}", ca_pem)

    def handle(conn):
        conn.settimeout(5)
        try:
            lines = _read_head(conn).decode("latin-1").split("\r\n")
            method, target = lines[0].split()[:2]
            auth = next((line.split(":", 1)[1].strip() for line in lines[1:] if line.lower().startswith("proxy-authorization:")), None)
            proxy.seen.append((method, target, auth))
            if method != "CONNECT":
                host = target.split("/")[2].split(":")[0]
                conn.sendall(b"HTTP/1.1 470 status code 470\r\nContent-Length: 0\r\n\r\n" if host in blocked else
                             b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                return
            if connect_status:
                conn.sendall(f"HTTP/1.1 {connect_status}\r\nContent-Length: 0\r\n\r\n".encode())
                return
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            tls = context.wrap_socket(conn, server_side=True)
            _read_head(tls)
            host = target.rsplit(":", 1)[0]
            tls.sendall(b"HTTP/1.1 403 Forbidden\r\nX-Squid-Error: ERR_ACCESS_DENIED 0\r\nContent-Length: 0\r\n\r\n" if host in blocked else
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            tls.close()
        except (OSError, ValueError, IndexError):
            pass
        finally:
            conn.close()

    with _accepting(server, handle, lifetime):
        yield proxy


@contextmanager
def scripted_server(answer, lifetime: float = 30.0) -> Iterator[ToyProxy]:
    """A server on 127.0.0.1 (a proxy or an origin) that stops by itself, answering each request head with
    ``answer(request_line) -> bytes``; the answer ``b"TLS"`` to a CONNECT opens the tunnel, does a TLS handshake with a
    certificate from its own test CA (``ca_pem``, any of the names the tests use) and answers the request inside with
    ``answer("inside " + host + " " + request_line)``: a TLS-inspecting proxy."""
    ca_pem, context, server = _tls_listener(["example.com", "allowed.test", "blocked.example.org", "s3.example.net", "localhost"])
    proxy = ToyProxy(f"http://127.0.0.1:{server.getsockname()[1]}", ca_pem)

    def handle(conn):
        conn.settimeout(5)
        try:
            line = _read_head(conn).decode("latin-1").split("\r\n")[0]
            proxy.seen.append((line, None, None))
            reply = answer(line)
            if reply == b"TLS":
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                tls = context.wrap_socket(conn, server_side=True)
                inner = _read_head(tls).decode("latin-1").split("\r\n")[0]
                tls.sendall(answer(f"inside {line.split()[1].rsplit(':', 1)[0]} {inner}"))
                tls.close()
            else:
                conn.sendall(reply)
        except (OSError, ValueError, IndexError):
            pass
        finally:
            conn.close()

    with _accepting(server, handle, lifetime):
        yield proxy
