"""Benchmark: a stack with many own entries across many source groups loads, resolves and compiles for every target.

    .venv/bin/python bench/own_bench.py [--entries 10000] [--groups 100] [--catalogs 10] [--repeat 3] [--keep DIR]

Builds a temporary project (links to the checkout's code and matrix, a stack file of its own): an organisation's catalog
folder of ``--catalogs`` team files (platform ``team-<t>``), together ``--entries`` entries spread evenly over
``--groups`` source groups (``pool-<n>``, a /24 each; each team's file serves its own share of the groups), HTTPS to
distinct hosts ``svc-<i>.pool-<n>.example.com``; the stack runs kkp for the nodes and enforces on azure, aws (suricata
form) and kubernetes (the egress proxy). In one process, median of
``--repeat`` (the first run is a warm-up: imports, the vendor matrix's file cache), each phase timed on its own:
- load: the vendor matrix and the stack's own catalogs (``Project.stack_catalog``: every own file read and validated);
- resolve: ``resolve`` of the stack's requirements;
- compile <target>: each target's ``compile`` (every decision: rules, names, priorities, limits);
- render <target>: each target's ``render`` (the files the provider or engine gets).
Prints a Markdown table and each target's size (rules, resources) so a reader can see what was compiled.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
LINKED = ("matrix", "egress", "egress_preview", "components", "policy")
STACK = "own-bench"


def make_project(directory: Path, entries: int, groups: int, catalogs: int) -> Path:
    for name in LINKED:
        (directory / name).symlink_to(ROOT / name)
    shutil.copy(ROOT / "Pulumi.yaml", directory / "Pulumi.yaml")
    (directory / "stacks").mkdir()
    (directory / "teams").mkdir()
    per_group = entries // groups
    for t in range(catalogs):
        lines = ["schema: 1", "kind: platform", f"platform: team-{t}", "defaults: {level: required, protocol: https}", "entries:"]
        for g in range(t, groups, catalogs):
            for i in range(per_group):
                lines.append(f"  - {{id: pool-{g}-svc-{i}, role: pool-{g}, destination: svc-{i}.pool-{g}.example.com, purpose: Service {i} of pool {g}, "
                             f"approval: {{owner: team-{t}, reference: OPS-{g}-{i}}}}}")
        (directory / "teams" / f"team-{t}.yaml").write_text("\n".join(lines) + "\n")
    group_lines = "\n".join(f"    pool-{g}: [10.{100 + g // 256}.{g % 256}.0/24]" for g in range(groups))
    (directory / "stacks" / f"Pulumi.{STACK}.yaml").write_text(f"""config:
  egress-matrix:platforms: [kkp]
  egress-matrix:clusterName: bench
  egress-matrix:nodeSources: [10.0.0.0/16]
  egress-matrix:serviceCidrs: [172.30.0.0/16]
  egress-matrix:sourceGroups:
{group_lines}
  egress-matrix:catalogs: [teams]
  egress-matrix:targets: [azure, aws, kubernetes]
  egress-matrix:azureResourceGroup: rg-bench
  egress-matrix:azureSubscriptionId: 00000000-0000-0000-0000-000000000000
  egress-matrix:location: westeurope
  egress-matrix:awsNetworkFirewallRules: suricata
  egress-matrix:awsFirewallPolicy: true
  egress-matrix:awsVpcId: vpc-0123456789abcdef0
  egress-matrix:egressProxy: true
""")
    return directory


def measure(directory: Path, repeat: int) -> tuple[dict[str, list[float]], dict[str, str]]:
    from egress.project import Project
    from egress.resolve import resolve
    from egress.targets import target

    project = Project(directory)
    times: dict[str, list[float]] = {}
    sizes: dict[str, str] = {}

    def timed(label: str, call):
        start = time.perf_counter()
        value = call()
        times.setdefault(label, []).append(time.perf_counter() - start)
        return value

    for run in range(repeat + 1):
        if run == 1:
            times.clear()  # the first run was the warm-up
        profile = project.profile(STACK)
        catalog = timed("load (vendor matrix + own catalogs)", lambda: project.stack_catalog(STACK, profile))
        requirements = timed("resolve", lambda: resolve(catalog, profile, project.stack_file(STACK), STACK))
        sizes["requirements"] = f"{len(requirements):,}"
        for name in profile.targets:
            spec = target(name)
            plan = timed(f"compile {name}", lambda: spec.compile(catalog, profile, requirements, STACK))
            files = timed(f"render {name}", lambda: spec.render(plan))
            sizes[name] = f"{len(files)} files, {sum(len(text) for text in files.values()) / 1e6:.1f} MB"
    return times, sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--catalogs", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="build the project here and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        directory = args.keep or Path(scratch)
        directory.mkdir(parents=True, exist_ok=True)
        make_project(directory, args.entries, args.groups, args.catalogs)
        times, sizes = measure(directory, args.repeat)
    print(f"{args.entries:,} own entries in {args.catalogs} catalogs across {args.groups} source groups ({sizes.pop('requirements')} requirements), "
          f"median of {args.repeat} runs after a warm-up\n")
    print("| phase | median s | min s | max s |\n|---|---:|---:|---:|")
    for label, values in times.items():
        print(f"| {label} | {statistics.median(values):.2f} | {min(values):.2f} | {max(values):.2f} |")
    print("\n" + "\n".join(f"- {name}: {size}" for name, size in sizes.items()))


if __name__ == "__main__":
    main()
