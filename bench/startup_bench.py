"""Benchmark: cold start of the CLI against the floor ``python -c 'import pulumi'``, in the same run (issue 22 item 6).

    .venv/bin/python bench/startup_bench.py [--runs 7] [--stack dev]

Each command is a fresh process (``.venv/bin/egress ...``, output to /dev/null, COLUMNS=100), timed as a whole:
wall clock around the child, and its user + system CPU from ``os.wait4``'s resource usage. The floor and the command
alternate (floor, command, floor, command, ...) after one warm-up of each, so each ratio command/floor is taken over a
pair run seconds apart and holds when the machine's speed drifts; the medians of the pairs' ratios are printed with
their minimum and maximum. Machines shared with other work are noisy: read the CPU ratio first (it does not count time
spent waiting for a core), then the wall ratio.

Targets: ``egress --help`` and ``egress matrix --stack S`` under 1.5 x the floor. ``egress matrix`` is measured as a
repeat (its output from egress/matrix_cache.py, the warm-up having filled it) and uncached (EGRESS_NO_CACHE=1: the
first run after a change of the matrix, the stack or the code). ``egress preview`` is measured for the record (it
imports pulumi itself, so its floor is part of it).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall s, user + sys CPU s) of one fresh process."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode not in (0, 1):  # 1: a preview with a mandatory violation still measures start-up
        raise SystemExit(f"{' '.join(argv)} exited {child.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def paired(command: list[str], floor: list[str], runs: int, env: dict[str, str], command_env: dict[str, str]) -> dict[str, list[float]]:
    run_once(floor, env)
    run_once(command, command_env)  # the warm-up also fills egress matrix's cache for the counted runs
    out: dict[str, list[float]] = {"cmd wall": [], "cmd cpu": [], "floor wall": [], "floor cpu": [], "wall ratio": [], "cpu ratio": []}
    for _ in range(runs):
        floor_wall, floor_cpu = run_once(floor, env)
        wall, cpu = run_once(command, command_env)
        for key, value in (("cmd wall", wall), ("cmd cpu", cpu), ("floor wall", floor_wall), ("floor cpu", floor_cpu),
                           ("wall ratio", wall / floor_wall), ("cpu ratio", cpu / floor_cpu)):
            out[key].append(value)
    return out


def cell(values: list[float], digits: int) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="counted pairs per command (default 7)")
    parser.add_argument("--stack", default="dev")
    parser.add_argument("--no-preview", action="store_true", help="skip egress preview (the slowest)")
    args = parser.parse_args()
    env = {**os.environ, "COLUMNS": "100", "PULUMI_STACK": args.stack}
    egress = str(BIN / "egress")
    floor = [sys.executable, "-c", "import pulumi"]
    out_dir = ROOT / "out" / "startup-bench"
    matrix = [egress, "matrix", "--stack", args.stack]
    commands = {"egress --help": ([egress, "--help"], {}),
                f"egress matrix --stack {args.stack}": (matrix, {}),
                f"egress matrix --stack {args.stack}, uncached": (matrix, {"EGRESS_NO_CACHE": "1"})}
    if not args.no_preview:
        commands[f"egress preview --stack {args.stack}"] = ([egress, "preview", "--stack", args.stack, "--out", str(out_dir)], {})
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} cores; {args.runs} pairs per command after a warm-up; "
          "median (min-max)\n")
    print("| command | command wall s | floor wall s | wall ratio | command CPU s | floor CPU s | CPU ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, (argv, extra) in commands.items():
        r = paired(argv, floor, args.runs, env, {**env, **extra})
        print(f"| `{name}` | {cell(r['cmd wall'], 3)} | {cell(r['floor wall'], 3)} | {cell(r['wall ratio'], 2)} | "
              f"{cell(r['cmd cpu'], 3)} | {cell(r['floor cpu'], 3)} | {cell(r['cpu ratio'], 2)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
