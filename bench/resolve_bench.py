"""Benchmark: load + resolve synthetic matrices of N endpoints; prints one Markdown table row per size.

    python3 dev.py python bench/resolve_bench.py 1000 10000 20000

Each size runs in its own process so peak RSS is that size's alone. The synthetic matrix mixes the real
shapes (exact FQDNs, wildcards, URLs, CIDRs with port ranges, placeholders, alternatives, conditions,
features, duplicates that must merge) and is generated deterministically.
"""
from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def synthetic_matrix(directory: Path, size: int) -> None:
    for name in ("sources.yaml", "expansions.yaml", "azure-locations.yaml"):
        (directory / name).write_text((ROOT / "matrix" / name).read_text())
    entries = []
    for i in range(size):
        shape = i % 5
        entry = {"id": f"bench-{i:06d}", "purpose": f"synthetic endpoint {i}",
                 "citation": {"source": "aks-outbound", "section": f"Synthetic table {i % 17}"}}
        if shape == 0:
            entry.update(destination=f"svc{i}.example{i % 97}.com")
        elif shape == 1:
            entry.update(destination=f"*.r{i}.{{location}}.example.net", feature="bench-feature")
        elif shape == 2:
            entry.update(destination=f"https://dl{i % 400}.example.org/path/{i}")  # many share a host: merges
        elif shape == 3:
            net = i % 65536
            entry.update(destination=f"10.{net // 256}.{net % 256}.0/24", protocol="tcp", ports=[443, "30000-32767"])
        else:
            entry.update(destination="*", protocol="udp", ports=[1000 + i % 5000],
                         alternatives=[{"destination": "AzureCloud.{service_tag_region}"}, {"destination": "{api_server_ip}"}],
                         when={"konnectivity": False})
        entries.append(entry)
    platform = {"schema": 1, "kind": "platform", "platform": "bench", "title": "Synthetic", "features": {"bench-feature": "on"},
                "defaults": {"role": "nodes", "level": "required", "protocol": "https", "variant": "azure-public"}, "entries": entries}
    (directory / "bench.yaml").write_text(yaml.safe_dump(platform, sort_keys=False))


def measure(size: int) -> dict[str, float]:
    from egress.catalog import load_catalog
    from egress.profile import Profile
    from egress.resolve import resolve

    with tempfile.TemporaryDirectory() as tmp:
        synthetic_matrix(Path(tmp), size)
        start = time.perf_counter()
        catalog = load_catalog(Path(tmp))
        loaded = time.perf_counter()
        profile = Profile.model_validate({"platforms": ["bench"], "cloud": "azure-public", "location": "francecentral",
                                          "features": ["bench-feature"], "konnectivity": False, "apiServerIp": "20.1.2.3"})
        reqs = resolve(catalog, profile)
        done = time.perf_counter()
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"size": size, "load_s": loaded - start, "resolve_s": done - loaded, "requirements": len(reqs), "peak_mib": peak_mib}


def main(sizes: list[int]) -> None:
    if len(sizes) == 1 and sys.argv[1:2] == ["--one"]:
        return
    print("| endpoints | load + validate (s) | resolve (s) | resolved requirements | peak RSS (MiB) |")
    print("|---:|---:|---:|---:|---:|")
    for size in sizes:
        out = subprocess.run([sys.executable, __file__, "--one", str(size)], capture_output=True, text=True, check=True).stdout
        r = json.loads(out)
        print(f"| {r['size']:,} | {r['load_s']:.3f} | {r['resolve_s']:.3f} | {r['requirements']:,} | {r['peak_mib']:.0f} |")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        print(json.dumps(measure(int(sys.argv[2]))))
    else:
        main([int(a) for a in sys.argv[1:]] or [1000, 10000])
