"""Benchmark: the AWS target on the full kkp-aws and dev stacks in both forms, and Suricata on a 10,000-host list;
prints Markdown tables.

    python3 dev.py python bench/aws_bench.py

Per (stack, form): enforced requirements, rule groups, Suricata rules in the engine's file (domain lists expanded as
AWS generates them), capacity used/allocated, domain-list targets, targets broadened beyond the matrix, security
groups and rules, and compile + render time (median of 20). Then ``suricata -T`` (rules loaded, every rule parsed) on
synthetic lists of 10,000 hosts: one exact Suricata rule per host, and one domain list of 10,000 targets as AWS expands
it. Needs suricata (``.ci/run`` installs it).
"""
from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from egress.project import open_project  # noqa: E402
from egress.targets import TARGETS  # noqa: E402
from egress.targets.aws.render import domain_list_rules  # noqa: E402
from suricata_engine import CONFIG  # noqa: E402

SPEC = TARGETS["aws"]
HOSTS = 10_000


def stack_rows() -> list[str]:
    rows = []
    for name in ("kkp-aws", "dev"):
        catalog, profile, reqs = open_project(ROOT).requirements(name)
        for form in ("domain-list", "suricata"):
            variant = profile.model_copy(update={"aws_network_firewall_rules": form})
            times = []
            for _ in range(20):
                started = time.perf_counter()
                plan = SPEC.compile(catalog, variant, reqs, name)
                files = SPEC.render(plan)
                times.append((time.perf_counter() - started) * 1000)
            rules = [line for line in files["aws/rules.suricata"].splitlines() if line and not line.startswith("#")]
            targets = sum(len(g.targets) for g in plan.rule_groups)
            widened = sum(1 for b in plan.broadening if b.allows)
            sg_rules = sum(len(g.rules) for g in plan.security_groups)
            rows.append(f"| {name} | {form} | {len(SPEC.enforced(catalog, variant, reqs))} | {len(plan.rule_groups)} | {len(rules)} | "
                        f"{sum(g.used for g in plan.rule_groups)}/{sum(g.capacity for g in plan.rule_groups)} | {targets} | {widened} | "
                        f"{len(plan.security_groups)} ({sg_rules}) | {statistics.median(times):.1f} |")
    return rows


def suricata_seconds(rules: str) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        (work / "suricata.yaml").write_text(CONFIG.replace("LOGS", scratch))
        (work / "bench.rules").write_text(rules)
        started = time.perf_counter()
        result = subprocess.run([shutil.which("suricata") or "suricata", "-T", "-v", "-c", str(work / "suricata.yaml"), "-S",
                                 str(work / "bench.rules"), "-l", scratch], capture_output=True, text=True, timeout=600)
        elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"suricata -T failed:\n{result.stdout}{result.stderr}")
    return elapsed, rules.count("\n")


def synthetic_rows() -> list[str]:
    hosts = [f"host{i:05d}.svc{i % 97}.example.com" for i in range(HOSTS)]
    exact = "".join(f'pass tls 10.0.0.0/16 any -> any 443 (tls.sni; content:"{h}"; startswith; nocase; endswith; msg:"bench {h}"; '
                    f"flow:to_server; metadata:egress_entry bench; sid:{1_000_000 + i}; rev:1;)\n" for i, h in enumerate(hosts))
    listed = "".join(line.replace("$HOME_NET", "10.0.0.0/16") + "\n" for line in domain_list_rules(
        "bench", {"Targets": hosts, "TargetTypes": ["TLS_SNI"], "GeneratedRulesType": "ALLOWLIST"}))
    rows = []
    for form, rules in (("suricata (exact rules)", exact), ("domain list (AWS's expansion)", listed)):
        seconds, count = suricata_seconds(rules)
        rows.append(f"| {form} | {HOSTS:,} | {count:,} | {len(rules.encode()):,} | {seconds:.2f} |")
    return rows


def main() -> None:
    print("| stack | form | requirements | rule groups | engine rules | capacity used/allocated | domain-list targets | "
          "broadened targets | security groups (rules) | compile + render ms |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(stack_rows()))
    print()
    print("| form | hosts | rules | bytes | suricata -T s |")
    print("|---|---:|---:|---:|---:|")
    print("\n".join(synthetic_rows()))


if __name__ == "__main__":
    main()
