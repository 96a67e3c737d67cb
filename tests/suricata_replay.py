"""Would AWS Network Firewall pass or drop these connections? Replay them through the real Suricata 7 in IPS simulation.

``suricata -T`` only proves that rules load; a replay shows what they do (reference/verification-engines.md §2). One pcap
holds one full TCP flow per probe and one Suricata run judges them all. A probe's verdict is "drop" when Suricata dropped
any packet of its flow. ``eve.json`` stays in the workdir, so the alerts show which rule did it.

The policy being emulated is STRICT_ORDER with the default actions ``aws:drop_established`` + ``aws:alert_established``
(reference/aws-egress.md §2.4):

- ``DEFAULT_DROP`` is appended after the rules. AWS's Developer Guide (suricata-rule-evaluation-order, "Drop
  established") says it "drops only the packets that are in established connections from client to server". It lets the
  layer 3/4 connection-establishment packets through and passes server-to-client packets. In Suricata,
  ``flow:established`` starts after the handshake (the final ACK is never dropped), so the first packet it can drop is
  the first client payload, the one that carries the SNI or Host. The rule alerts, as ``aws:alert_established`` does on
  the packets that are dropped. A bidirectional version would be wrong: it drops the server's answers in flows that a
  packet-level pass lets through.
- Suricata orders by action: when a pass rule and a drop (a domain list's catch-all, or the default) match the same
  packet, the pass wins. The same happens in strict order, where a group's passes come before its catch-all and the
  default comes last. The default only adds drops, so it cannot pass anything the rules drop. An app-layer pass
  (``tls.sni``, ``http.host``) passes the whole flow. A packet-level one (a 5-tuple with ``flow:to_server``) passes each
  client packet it matches. The default never touches server packets, so both kinds pass the probe.
- Action order and strict order disagree only when a drop comes before a pass that can match the same traffic. For such
  a file ``replay`` raises instead of answering in Suricata's order.
- ``$EXTERNAL_NET`` is ``!$HOME_NET``, with the policy's HOME_NET set to RFC 1918, the best-practice policy value. Our
  rules file already expands each group's own HOME_NET.
"""
from __future__ import annotations

import ipaddress
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Sequence

from scapy.all import IP, TCP, Raw, wrpcap
from scapy.layers.tls.all import (TLS, ServerName, TLS_Ext_ServerName, TLS_Ext_SupportedVersion_CH, TLS_Ext_SupportedVersion_SH,
                                  TLSClientHello, TLSServerHello)

from suricata_engine import SURICATA, own_files

DEFAULT_DROP_SID = 99_999_999  # above the SIDs our compiler derives (plan.SID_BASE + SID_SPAN)
DEFAULT_DROP = (f'drop tcp any any -> any any (msg:"aws:drop_established"; flow:established, to_server; '
                f"sid:{DEFAULT_DROP_SID}; rev:1;)")

# - stream inline: the app-layer must parse the ClientHello/GET on its own packet. Otherwise the default drop hits that
#   packet before any tls.sni/http.host rule can see it, and every probe drops.
# - TLS and HTTP are recognised by their content on any port, as AWS applies domain lists on any port (aws-egress.md §2.5).
#   No detection-ports are set, although even `dp: 443` was checked not to stop tls.sni matching on 8443.
CONFIG = """%YAML 1.1
---
vars:
  address-groups: {HOME_NET: "[10.0.0.0/8,172.16.0.0/12,192.168.0.0/16]", EXTERNAL_NET: "!$HOME_NET"}
stream: {inline: yes}
outputs:
  - eve-log: {enabled: yes, filetype: regular, filename: eve.json, types: [alert, drop: {flows: all}, flow]}
app-layer:
  protocols:
    tls: {enabled: yes}
    http: {enabled: yes}
"""

_DROP_ACTIONS = {"drop", "reject", "rejectsrc", "rejectdst", "rejectboth"}
_RULE_DROPS = {"rules", "flow drop"}  # any other drop reason means the replayed traffic itself is broken


@dataclass(frozen=True)
class Probe:
    protocol: Literal["tls", "http"]
    host: str  # SNI or Host header, sent verbatim (case preserved)
    port: int = 443  # destination port
    source: str = "10.0.0.5"
    destination: str = "203.0.113.10"


def _sources(text: str):
    """A rule's source addresses as networks; None for anything that is not a literal CIDR list (any, $VAR, !x)."""
    try:
        return [ipaddress.ip_network(item, strict=False) for item in text.strip("[]").split(",")]
    except ValueError:
        return None


def _may_meet(first: str, second: str) -> bool:
    a, b = _sources(first), _sources(second)
    return a is None or b is None or any(x.overlaps(y) for x in a for y in b)


def _check_order(rules: str) -> None:
    """Refuse a file where Suricata's action order (pass first) could differ from AWS's strict order (first match wins).

    That can only happen when a drop comes before a pass that sees the same packets: sources that overlap (or are not
    literal CIDRs), and the same protocol or either one ``ip``/``tcp``. Conservative: a ``tls`` drop never meets an
    ``http`` pass, and one role's catch-all never meets another role's pass when their CIDRs are disjoint.
    """
    drops: list[tuple[str, str, str]] = []
    for line in rules.splitlines():
        words = line.split(maxsplit=3)
        if len(words) < 3 or words[0].startswith("#"):
            continue
        action, protocol, source = words[:3]
        if action in _DROP_ACTIONS:
            drops.append((protocol, source, line))
        elif action == "pass":
            for dropped, dropped_source, drop_line in drops:
                if (dropped == protocol or {dropped, protocol} & {"ip", "tcp"}) and _may_meet(dropped_source, source):
                    raise ValueError(f"strict order would drop before this pass, Suricata would pass first:\n  {drop_line}\n  {line}")


def _payloads(probe: Probe) -> tuple[bytes, bytes, bytes]:
    """(request, server answer, next client data): a ClientHello with the SNI, or a GET with the Host header."""
    if probe.protocol == "tls":
        hello = TLSClientHello(gmt_unix_time=0, random_bytes=bytes(28), ciphers=[0x1301, 0xC02F], ext=[
            TLS_Ext_ServerName(servernames=[ServerName(servername=probe.host.encode())]),
            TLS_Ext_SupportedVersion_CH(versions=[0x0304, 0x0303])])
        answer = TLSServerHello(gmt_unix_time=0, random_bytes=bytes(28), cipher=0x1301, ext=[TLS_Ext_SupportedVersion_SH(version=0x0304)])
        return bytes(TLS(type=22, version=0x0301, msg=[hello])), bytes(TLS(type=22, version=0x0303, msg=[answer])), b"\x17\x03\x03\x00\x04data"
    request = f"GET / HTTP/1.1\r\nHost: {probe.host}\r\nUser-Agent: replay\r\nAccept: */*\r\n\r\n".encode()
    return request, b"HTTP/1.1 204 No Content\r\n\r\n", request.replace(b"GET / ", b"GET /again ")


def _flow(probe: Probe, client_port: int, start: float) -> list:
    """Handshake, request, the server's ACK and answer, then more client data: a drop shows beyond the first payload."""
    request, answer, more = _payloads(probe)

    def client(flags: str, seq: int, ack: int = 0, data: bytes = b""):
        packet = IP(src=probe.source, dst=probe.destination) / TCP(sport=client_port, dport=probe.port, flags=flags, seq=seq, ack=ack)
        return packet / Raw(data) if data else packet

    def server(flags: str, seq: int, ack: int, data: bytes = b""):
        packet = IP(src=probe.destination, dst=probe.source) / TCP(sport=probe.port, dport=client_port, flags=flags, seq=seq, ack=ack)
        return packet / Raw(data) if data else packet

    c, s = 1001, 5001  # sequence numbers after the SYNs (ISNs 1000 and 5000)
    packets = [client("S", c - 1), server("SA", s - 1, c), client("A", c, s), client("PA", c, s, request),
               server("A", s, c + len(request)), server("PA", s, c + len(request), answer),
               client("PA", c + len(request), s + len(answer), more), server("A", s + len(answer), c + len(request) + len(more))]
    for i, packet in enumerate(packets):
        packet.time = start + i / 1000
    return packets


def replay(rules: str, probes: Sequence[Probe], workdir: Path) -> dict[Probe, Literal["pass", "drop"]]:
    """Each probe's verdict under ``rules`` (a whole rules file, as ``egress render`` writes it) and AWS's default drop."""
    _check_order(rules)
    ports = {probe: 20000 + i for i, probe in enumerate(dict.fromkeys(probes))}  # a client port per probe names its flow
    workdir.mkdir(parents=True, exist_ok=True)
    wrpcap(str(workdir / "probes.pcap"), [packet for probe, port in ports.items() for packet in _flow(probe, port, 1_700_000_000 + port / 100)])
    (workdir / "replay.yaml").write_text(CONFIG + own_files(workdir))
    (workdir / "replay.rules").write_text(f"{rules.rstrip()}\n{DEFAULT_DROP}\n")
    (workdir / "eve.json").unlink(missing_ok=True)
    # --init-errors-fatal: without it a rule that fails to load is only logged, and the run exits 0 without that rule.
    result = subprocess.run([SURICATA or "suricata", "-c", str(workdir / "replay.yaml"), "-S", str(workdir / "replay.rules"),
                             "-r", str(workdir / "probes.pcap"), "-l", str(workdir), "--simulate-ips", "-k", "none", "--init-errors-fatal"],
                            capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise RuntimeError(f"suricata exited {result.returncode}:\n{result.stdout}{result.stderr}")
    flows, dropped = {}, set()
    for event in map(json.loads, (workdir / "eve.json").read_text().splitlines()):
        if event["event_type"] == "flow":
            flows[(event["src_ip"], event["src_port"], event["dest_ip"], event["dest_port"])] = event["flow_id"]
        elif event["event_type"] == "drop":
            if event["drop"]["reason"] not in _RULE_DROPS:
                raise RuntimeError(f"suricata dropped a replayed packet on its own, not by a rule: {event}")
            dropped.add(event["flow_id"])
    verdicts: dict[Probe, Literal["pass", "drop"]] = {}
    for probe, port in ports.items():
        flow_id = flows.get((probe.source, port, probe.destination, probe.port))
        if flow_id is None:
            raise RuntimeError(f"eve.json has no flow for {probe}:\n{result.stderr}")
        verdicts[probe] = "drop" if flow_id in dropped else "pass"
    return verdicts
