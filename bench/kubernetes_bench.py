"""Benchmark: the egress proxy's squid.conf (Kubernetes target) for 1,000 and 10,000 synthetic hosts; prints Markdown tables.

    python3 dev.py python bench/kubernetes_bench.py

Per size: requirements, ACLs, compile_acls, allowlist_text and EgressProxyPlan.squid_conf time (median of 5), the
squid.conf's bytes and lines, and ``squid -k parse -f <abs path>`` wall time (median of 3). Then the real Squid on
each allowlist (tests/squid_engine.py ``running_squid``): time from start to accepting on its port, and on 10,000
hosts 200 CONNECT probes with their expected verdicts. The synthetic hosts: ~80 % exact, ~15 % ``*.x`` only, ~5 %
both ``x`` and ``*.x`` (written ``.x``), over 3 platforms x 3 features x 2 roles x HTTP/HTTPS, one matrix entry
each. Needs squid, and root for the harness's upstreams on ports 443/80 (``.ci/run`` installs it; CI runs as root).
"""
from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from egress.addresses import PortRange  # noqa: E402
from egress.models import Entry, Requirement  # noqa: E402
from egress.targets.kubernetes.egress_proxy import EgressProxyPlan  # noqa: E402
from egress.targets.kubernetes.squid import allowlist_text, compile_acls  # noqa: E402
from squid_engine import SQUID, running_squid  # noqa: E402

SIZES = (1_000, 10_000)
PLATFORMS = ("kkp", "openshift", "aks")
FEATURES = (None, "monitoring", "registry")
ROLES = ("nodes", "seed")
SOURCES = {"nodes": ("10.0.0.0/16", "10.244.0.0/16"), "seed": ("10.1.0.0/16",)}
CLIENT_SOURCES = {"nodes": ("127.0.0.0/8",), "seed": ("10.1.0.0/16",)}  # the live run: 127.0.0.1 is a node
PROBES = 200


def req(destination: str, kind: str, protocol: str, ports=(443,), role="nodes", entry="kkp-crictl", sources=()) -> Requirement:
    """As tests/aws_stacks.py builds one."""
    return Requirement(role=role, destination=destination, kind=kind, protocol=protocol, ports=tuple(PortRange(p, p) for p in ports),
                       level="required", purposes=("x",), entry_ids=(entry,), citations=(), platforms=("kkp",), sources=tuple(sources))


def unit(i: int) -> tuple[str, str, str, str, str]:
    """Host i's (shape, name, role, protocol, entry id): shape 'exact', 'wildcard' ('*.x' only) or 'both' ('x' and '*.x')."""
    shape = "both" if i % 20 == 0 else "wildcard" if i % 20 in (1, 2, 3) else "exact"
    name = {"exact": f"host{i:05d}.svc{i % 97}.example.com", "wildcard": f"zone{i:05d}.example.net",
            "both": f"apex{i:05d}.example.org"}[shape]
    role = "seed" if (i * 7) % 10 == 9 else "nodes"
    protocol = "http" if (i // 7) % 10 == 0 else "https"
    platform, feature = PLATFORMS[i % 3], FEATURES[(i // 3) % 3]
    return shape, name, role, protocol, f"{platform}-{feature or 'core'}-bench-{i:05d}"


def synthetic(hosts: int) -> tuple[list[Requirement], dict[str, Entry]]:
    requirements, entries = [], {}
    for i in range(hosts):
        shape, name, role, protocol, entry_id = unit(i)
        platform, feature = PLATFORMS[i % 3], FEATURES[(i // 3) % 3]
        entries[entry_id] = Entry.model_construct(id=entry_id, platform=platform, feature=feature and f"{platform}-{feature}")
        port = 443 if protocol == "https" else 80
        if shape in ("exact", "both"):
            requirements.append(req(name, "fqdn", protocol, (port,), role, entry_id, SOURCES[role]))
        if shape in ("wildcard", "both"):
            requirements.append(req(f"*.{name}", "wildcard", protocol, (port,), role, entry_id, SOURCES[role]))
    return requirements, entries


def plan(acls, sources: dict[str, tuple[str, ...]]) -> EgressProxyPlan:
    roles = sorted({a.role for a in acls})
    return EgressProxyPlan(namespace="egress-proxy", image="squid", replicas=2, port=3128, cluster_ip="10.96.0.10", node_port=None,
                           acls=acls, role_sources=tuple((r, sources[r]) for r in roles),
                           client_cidrs=tuple(dict.fromkeys(c for r in roles for c in sources[r])), egress_ports=("80", "443"),
                           not_proxied=(), stack="bench")


def median_ms(action, runs: int = 5):
    times, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = action()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), result


def parse_seconds(conf: str) -> float:
    with tempfile.TemporaryDirectory() as scratch:
        path = (Path(scratch) / "squid.conf").resolve()
        path.write_text(conf)
        times = []
        for _ in range(3):
            started = time.perf_counter()
            result = subprocess.run([SQUID or shutil.which("squid") or "squid", "-k", "parse", "-f", str(path)],
                                    capture_output=True, text=True, timeout=600)
            times.append(time.perf_counter() - started)
            if result.returncode != 0:
                raise SystemExit(f"squid -k parse failed:\n{result.stderr[-3000:]}")
    return statistics.median(times)


def probes(hosts: int) -> list[tuple[str, int, int]]:
    """200 CONNECTs (host, port, expected status) from 127.0.0.1, a node: required names and near misses."""
    kinds: dict[str, list[str]] = {"exact": [], "wildcard": [], "both": [], "seed": []}
    for i in range(hosts):
        shape, name, role, protocol, _ = unit(i)
        if protocol == "https":
            kinds[shape if role == "nodes" else "seed"].append(name if role == "nodes" or shape == "exact" else f"probe.{name}")
    step = lambda names, n: names[:: max(1, len(names) // n)][:n]  # spread over the whole list
    out = []
    out += [(h, 443, 200) for h in step(kinds["exact"], 50)]  # exact hosts
    out += [(f"probe.{h}", 443, 200) for h in step(kinds["wildcard"], 25)]  # under a '*.x'
    out += [(h, 443, 403) for h in step(kinds["wildcard"], 25)]  # the apex of a '*.x'
    out += [(h if n % 2 else f"a.b.{h}", 443, 200) for n, h in enumerate(step(kinds["both"], 25))]  # '.x': apex and below
    out += [(f"x{h}", 443, 403) for h in step(kinds["exact"][1::2], 25)]  # prefix attack
    out += [(h, 443, 403) for h in step(kinds["seed"], 25)]  # only the seed may
    out += [(h, 8443, 403) for h in step(kinds["exact"][1::3], 25)]  # a port the matrix does not give
    assert len(out) == PROBES, len(out)
    return out


def live_rows(allowlists: dict[int, str]) -> list[str]:
    rows = []
    for hosts, allowlist in allowlists.items():
        checks = probes(hosts) if hosts == max(SIZES) else []
        names = {h for h, _, _ in checks} or {"host00001.svc1.example.com"}
        with tempfile.TemporaryDirectory() as scratch, ExitStack() as stack:
            started = time.perf_counter()
            squid = stack.enter_context(running_squid(allowlist, names, Path(scratch)))
            startup = time.perf_counter() - started
            started = time.perf_counter()
            wrong = [f"{h}:{p} -> {got}, want {want}" for h, p, want in checks if (got := squid.connect(h, p)) != want]
            probing = time.perf_counter() - started
            if "ERROR" in squid.cache_log() or wrong:
                raise SystemExit(f"{len(wrong)} wrong of {len(checks)}: {wrong[:10]}\n{squid.cache_log()[-2000:]}")
        allowed = sum(want == 200 for _, _, want in checks)
        probe_cells = (f"{len(checks)} ({allowed} allowed, {len(checks) - allowed} denied), 0 wrong | {probing:.2f} | "
                       f"{probing / len(checks) * 1000:.1f}") if checks else "- | - | -"
        rows.append(f"| {hosts:,} | {startup:.2f} | {probe_cells} |")
    return rows


def main() -> None:
    print("| hosts | requirements | ACLs (dstdomain / dstdom_regex) | compile_acls ms | allowlist_text ms | squid_conf ms | "
          "bytes | lines | squid -k parse s |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    allowlists = {}
    for hosts in SIZES:
        requirements, entries = synthetic(hosts)
        compile_ms, (acls, _) = median_ms(lambda: compile_acls(requirements, ROLES, entries))
        text_ms, _ = median_ms(lambda: allowlist_text(acls, SOURCES))
        conf_ms, conf = median_ms(lambda: plan(acls, SOURCES).squid_conf)
        seconds = parse_seconds(conf)
        dstdomain, regex = sum(bool(a.domains) for a in acls), sum(bool(a.subdomains) for a in acls)
        print(f"| {hosts:,} | {len(requirements):,} | {len(acls)} ({dstdomain} / {regex}) | {compile_ms:.1f} | {text_ms:.1f} | "
              f"{conf_ms:.1f} | {len(conf.encode()):,} | {conf.count(chr(10)):,} | {seconds:.2f} |")
        allowlists[hosts] = plan(acls, CLIENT_SOURCES).allowlist
    print()
    print("| hosts | start to accepting s | CONNECT probes | probes s | ms per probe |")
    print("|---:|---:|---|---:|---:|")
    print("\n".join(live_rows(allowlists)))


if __name__ == "__main__":
    main()
