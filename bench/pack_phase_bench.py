"""Benchmark: the policy pack per stack, as the engine presents the stack at a first ``pulumi preview`` and after
``pulumi up``; prints a Markdown table.

    .venv/bin/python bench/pack_phase_bench.py [--repeat 5] [--stack dev ...]

For each stack the program runs once under the mocks per phase (``run_program(phase="up" | "preview")``: at a
preview every value a provider computes is the engine's unknown). Then ``run_pack`` (Configure, Analyze per resource,
AnalyzeStack, through the pack's own servicer and protobuf values, as over gRPC) is timed ``--repeat`` times per
phase with every pack cache cleared first (catalog, stack context, plans, verdicts): what one engine run pays in the
pack process after its imports. Medians, in milliseconds. Also: the resources with an unknown value at the preview, and
what would stop the real gate (mandatory violations and "can't run" answers) in each phase: 0 expected.
"""
from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "policy")]

from egress_preview.pack import run_pack  # noqa: E402
from egress_preview.program import run_program  # noqa: E402


def _clear_caches() -> None:
    from egress_policies import support

    support._catalog.cache_clear()
    support._context.cache_clear()
    support._VERDICTS.clear()
    support._PLANS.clear()


def _timed(recorded, repeat: int) -> tuple[float, list]:
    times, found = [], []
    for _ in range(repeat):
        _clear_caches()
        gc.collect()
        start = time.perf_counter()
        found = run_pack(recorded)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), found


def _stopping(violations) -> int:
    return sum(1 for v in violations if v.level == "mandatory" or "during preview:" in v.message)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--stack", action="append")
    args = parser.parse_args()
    stacks = args.stack or sorted(p.name[len("Pulumi."):-len(".yaml")] for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
    print("| stack | resources | pack after up (ms) | pack at a first preview (ms) | resources with unknowns at preview | "
          "stopping the gate (up / preview) |")
    print("|---|---:|---:|---:|---:|---|")
    for stack in stacks:
        up = run_program(ROOT, stack)
        first = run_program(ROOT, stack, phase="preview")
        up_ms, up_found = _timed(up, args.repeat)
        first_ms, first_found = _timed(first, args.repeat)
        unknown = sum(1 for r in first.resources if r.unknowns)
        print(f"| {stack} | {len(up.resources)} | {up_ms:.0f} | {first_ms:.0f} | {unknown} | {_stopping(up_found)} / {_stopping(first_found)} |")


if __name__ == "__main__":
    main()
