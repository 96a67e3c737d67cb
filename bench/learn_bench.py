"""Benchmark: `egress learn` on a large Squid access.log for the proxy-only stack.

    .venv/bin/python bench/learn_bench.py [LINES ...] [--hosts 500]

Each size runs in a child process of its own (peak RSS is that process's maximum resident set). The log mixes, line
by line: allowed tunnels (skipped), denied CONNECTs to ``--hosts`` distinct unknown hosts (each a proposal), denied
CONNECTs to hosts the vendor matrix lists under features the stack has off (turn-on proposals), denied plain-HTTP
GETs, and 407 challenges (ignored), from 200 node and pod addresses. Timed: reading and parsing the log, and the
whole ``learn`` (parse, group, match against the whole matrix, write the proposals document).
"""
from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
KNOWN = ("ghcr.io", "registry.gitlab.com", "public.ecr.aws", "gcr.io", "quay.io")


def make_log(path: Path, lines: int, hosts: int) -> None:
    out = []
    t = 1795176000.0
    for i in range(lines):
        client = f"10.60.{i % 10}.{i % 20 + 1}" if i % 2 else f"10.244.{i % 10}.{i % 20 + 1}"
        kind = i % 5
        if kind == 0:
            line = f"{t + i:.3f}    120 {client} TCP_TUNNEL/200 5000 CONNECT quay.io:443 - HIER_DIRECT/198.51.100.10 -"
        elif kind == 1:
            line = f"{t + i:.3f}      0 {client} TCP_DENIED/403 3950 CONNECT svc-{i % hosts}.corp-bench.example.net:443 - HIER_NONE/- text/html"
        elif kind == 2:
            line = f"{t + i:.3f}      0 {client} TCP_DENIED/403 3950 CONNECT {KNOWN[i % len(KNOWN)]}:443 - HIER_NONE/- text/html"
        elif kind == 3:
            line = (f"{t + i:.3f}      1 {client} TCP_DENIED/403 4012 GET http://mirror-{i % hosts}.bench.example.org/pool/x.deb"
                    " - HIER_NONE/- text/html")
        else:
            line = f"{t + i:.3f}      0 {client} TCP_DENIED/407 3900 CONNECT api.github.com:443 - HIER_NONE/- text/html"
        out.append(line)
    path.write_text("\n".join(out) + "\n")


def child(lines: int, hosts: int) -> dict:
    from egress.learn import learn
    from egress.learn.formats import read_log
    from egress.project import open_project

    catalog, profile, _ = open_project(ROOT).requirements("proxy-only")
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "access.log"
        make_log(log, lines, hosts)
        start = time.perf_counter()
        read_log(log, "squid", "access.log")
        parse = time.perf_counter() - start
        start = time.perf_counter()
        learned = learn(catalog, profile, "proxy-only", [(log, "access.log")], "squid")
        whole = time.perf_counter() - start
    return {"lines": lines, "parse_s": round(parse, 3), "learn_s": round(whole, 3), "proposals": learned.proposals,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}


def main(argv: list[str]) -> None:
    hosts = 500
    if "--hosts" in argv:
        hosts = int(argv[argv.index("--hosts") + 1])
        del argv[argv.index("--hosts"):argv.index("--hosts") + 2]
    if argv and argv[0] == "--child":
        print(json.dumps(child(int(argv[1]), hosts)))
        return
    print(f"| log lines | parse (s) | learn, all phases (s) | proposals | peak RSS (MiB) |\n|---:|---:|---:|---:|---:|")
    for lines in [int(a) for a in argv] or [10_000, 100_000]:
        done = subprocess.run([sys.executable, __file__, "--child", str(lines), "--hosts", str(hosts)], capture_output=True, text=True, check=True)
        r = json.loads(done.stdout)
        print(f"| {r['lines']:,} | {r['parse_s']} | {r['learn_s']} | {r['proposals']} | {r['peak_rss_mib']} |")


if __name__ == "__main__":
    main(sys.argv[1:])
