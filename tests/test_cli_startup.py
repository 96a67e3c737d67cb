"""Start-up (issue 22 item 6): `egress --help` and `egress matrix` import only what they use.

Each command runs in a fresh interpreter, which then lists the modules it loaded; the test names what must not be
among them. No timing is asserted (bench/startup_bench.py measures that): a module list is what a change breaks.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Run `egress ARGS` as the console script does, then print the loaded modules' names as JSON on the last line.
PROBE = """
import json, sys
sys.argv = ["egress", *json.loads(sys.argv[1])]
from egress.cli import main
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""

PULUMI = ("pulumi", "pulumi_policy", "grpc", "google.protobuf")
TARGET_CODE = ("egress.targets", "egress_preview", "components")  # compile/render/evaluate: pydantic-heavy, and not needed
RICH_HEAVY = ("rich.markdown", "rich.syntax", "rich.traceback", "rich.pretty", "pygments", "markdown_it")
MODELS = ("pydantic", "egress.models", "egress.profile", "egress.catalog", "yaml")


def loaded(*args: str, env: dict | None = None) -> set[str]:
    result = subprocess.run([sys.executable, "-c", PROBE, json.dumps(list(args))], cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, "COLUMNS": "100", "EGRESS_NO_CACHE": "1", **(env or {})}, timeout=120)
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.strip().splitlines()[-1]))


def under(modules: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes))


@pytest.mark.parametrize("args", [("--help",), ("matrix", "--help"), ("catalog", "--help"), ("stacks", "--help")])
def test_help_imports_no_pulumi_models_targets_or_rich(args):
    modules = loaded(*args)
    assert "typer" in modules  # the probe did run the CLI
    assert under(modules, PULUMI) == []
    assert under(modules, TARGET_CODE) == []
    assert under(modules, MODELS[1:]) == []  # help needs no catalog, stack file or model of ours
    if args == ("--help",):
        assert "pydantic" not in modules  # typer itself builds a pydantic TypeAdapter per option of a command's help
    assert under(modules, ("rich",)) == []  # click's plain help; typer's rich help imports Markdown, Syntax, Traceback
    assert under(modules, ("botocore", "cryptography", "jsonschema")) == []


def test_matrix_imports_no_pulumi_targets_or_rich():
    modules = loaded("matrix", "--stack", "dev")
    assert "egress.resolve" in modules  # it did resolve the stack
    assert under(modules, PULUMI) == []
    assert under(modules, TARGET_CODE) == []
    assert under(modules, RICH_HEAVY) == []
    assert under(modules, ("rich.table", "rich.console")) == []  # the table is egress/tables.py's plain text
    # The AWS regions come from botocore's bundled endpoints.json, not a botocore session (about 100 ms of imports).
    assert under(modules, ("botocore.session", "botocore.client")) == []


def test_matrix_json_imports_no_table_code():
    modules = loaded("matrix", "--stack", "dev", "--format", "json")
    assert under(modules, ("egress.tables", "egress.matrix_table")) == []
    assert under(modules, PULUMI + TARGET_CODE) == []


def test_the_target_names_of_the_cli_are_the_registrys():
    """`egress render --target` offers the targets without importing them: the names must be TARGETS' keys."""
    from egress.cli import TARGET_NAMES
    from egress.targets import TARGETS

    assert TARGET_NAMES == tuple(TARGETS)


def test_known_regions_read_from_the_bundled_file_equal_a_sessions(monkeypatch):
    """egress/aws_regions.py reads botocore's endpoints.json itself; a botocore session must answer the same."""
    import botocore.session

    from egress import aws_regions

    fast = aws_regions._regions(aws_regions._bundled_endpoints() or pytest.fail("botocore's endpoints.json not found"))
    session = botocore.session.get_session()
    slow = {region: partition for partition in aws_regions.PARTITIONS
            for region in session.get_available_regions("network-firewall", partition_name=partition)}
    assert fast == slow and list(fast) == list(slow) and len(fast) > 20


def test_known_regions_ask_a_session_where_other_data_may_apply(monkeypatch, tmp_path):
    """AWS_DATA_PATH (or ~/.aws/models) can hold endpoint data a session would read first: then ask the session."""
    from egress import aws_regions

    monkeypatch.setenv("AWS_DATA_PATH", str(tmp_path))
    assert aws_regions._bundled_endpoints() is None
    monkeypatch.delenv("AWS_DATA_PATH")
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".aws" / "models").mkdir(parents=True)
    assert aws_regions._bundled_endpoints() is None


def test_a_cached_matrix_imports_no_models(tmp_path):
    """A repeat served by egress/matrix_cache.py loads neither pydantic's models nor the catalog (tests/test_cli_startup_cache.py
    shows it prints the same)."""
    env = {"EGRESS_NO_CACHE": "", "XDG_CACHE_HOME": str(tmp_path)}
    assert "egress.models" in loaded("matrix", "--stack", "dev", env=env)
    modules = loaded("matrix", "--stack", "dev", env=env)
    assert under(modules, ("egress.models", "egress.profile", "egress.catalog", "egress.resolve", "egress.matrix_table", "rich")) == []
