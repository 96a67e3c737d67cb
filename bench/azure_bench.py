"""Benchmark: Azure Firewall compile for the full AKS profile on each cloud; prints Markdown table rows.

    python3 dev.py python bench/azure_bench.py

'Minimum rules' is computed from the rendered bodies, independently of the compiler: the number of distinct
(platform, feature, collection type, source, protocol/port set, destination family) keys, the (platform, feature)
read from the matrix entries each rule's description names (explainable rules: one rule per feature and
protocol/ports). A rule split that could have been merged shows as a ratio above 1.0. 'Bands' is the number of
platforms with rules.
"""
from __future__ import annotations

import statistics
import time
from pathlib import Path

from egress.targets.azure.compile import compile_azure
from egress.targets.azure.render import plan_bodies
from egress.project import open_project
from egress.resolve import resolve

ROOT = Path(__file__).resolve().parents[1]
CLOUDS = {"azure-public": "westeurope", "azure-usgov": "usgovvirginia", "azure-china": "chinaeast2"}


def full_profile(catalog, profile, cloud):
    features = sorted({e.feature for e in catalog.entries if e.platform == "aks" and e.feature and e.variant in (None, cloud)})
    return profile.model_copy(update={
        "platforms": ("aks",), "cloud": cloud, "location": CLOUDS[cloud], "features": tuple(features),
        "node_os": ("ubuntu", "windows"), "konnectivity": False, "custom_dns_ips": ("10.0.0.4",), "api_server_ip": None, "pods_use_api_server_fqdn": True,
        "node_sources": ("10.1.0.0/16",), "levels": ("required", "recommended"),
    })


def minimum_rules(bodies, catalog) -> int:
    entries = {e.id: e for e in catalog.entries}
    keys = set()
    for body in bodies:
        for collection in body["properties"]["ruleCollections"]:
            for rule in collection["rules"]:
                ids = rule["description"].split(": ", 1)[1].split(", ")
                features = frozenset((entries[i].platform, entries[i].feature) for i in ids)
                sources = tuple(rule.get("sourceIpGroups", rule.get("sourceAddresses", [])))
                if rule["ruleType"] == "ApplicationRule":
                    kind = "tag" if rule.get("fqdnTags") else "fqdns"
                    keys.add((features, "app", sources, tuple(sorted((p["protocolType"], p["port"]) for p in rule["protocols"])), kind))
                else:
                    family = "fqdns" if rule.get("destinationFqdns") else "addresses"
                    keys.add((features, "net", sources, tuple(rule["ipProtocols"]), tuple(rule["destinationPorts"]), family))
    return len(keys)


def main() -> None:
    project = open_project(ROOT)
    catalog, base, _ = project.requirements("aks-public")
    print("| cloud | FQDN tag | requirements | RCGs (bands) | rules | minimum rules | ratio | compile ms (median of 20) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for cloud in CLOUDS:
        for tag in (False, True):
            profile = full_profile(catalog, base, cloud).model_copy(update={"azure_fqdn_tag": tag, "azure_ip_groups": False})
            reqs = resolve(catalog, profile)
            times = []
            for _ in range(20):
                start = time.perf_counter()
                plan = compile_azure(catalog, profile, reqs)
                times.append((time.perf_counter() - start) * 1000)
            bodies = plan_bodies(plan, {})
            rules = sum(g.rule_count for g in plan.groups)
            minimum = minimum_rules(bodies, catalog)
            bands = len({g.platform for g in plan.groups})
            print(f"| {cloud} | {'on' if tag else 'off'} | {len(reqs)} | {len(plan.groups)} ({bands}) | {rules} | {minimum} | "
                  f"{rules / minimum:.2f} | {statistics.median(times):.1f} |")


if __name__ == "__main__":
    main()
