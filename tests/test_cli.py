"""The CLI: formats, project discovery, exit codes, the export contract."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_matrix_json_for_every_stack(run_cli):
    for stack in ("dev", "aks-public", "aks-usgov", "aks-china", "kkp", "ibm-vpc", "openshift"):
        code, out, err = run_cli("matrix", "--stack", stack, "--format", "json", "--project", str(ROOT))
        assert code == 0, err
        data = json.loads(out)
        assert data["stack"] == stack and data["count"] == len(data["requirements"]) > 0
        for req in data["requirements"]:
            assert req["citations"] and req["purpose"] and req["role"] and req["ports"]


def test_matrix_finds_the_project_from_a_subdirectory(run_cli):
    code, out, _ = run_cli("matrix", "--stack", "dev", "--format", "csv", cwd=ROOT / "egress")  # no default stack: egress/stack_choice.py
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert list(rows[0]) == ["role", "destination", "kind", "protocol", "ports", "level", "purpose", "citation", "choice"]
    seed_ec2 = [r for r in rows if (r["role"], r["destination"]) == ("seed", "ec2.eu-central-1.amazonaws.com")]
    assert [(r["protocol"], r["ports"]) for r in seed_ec2] == [("https", "443")]


def test_ibm_workstation_matrix_is_exact(run_cli):
    code, out, _ = run_cli("matrix", "--stack", "ibm-vpc", "--format", "csv", "--project", str(ROOT))
    assert code == 0
    rows = [(r["role"], r["destination"], r["protocol"], r["ports"]) for r in csv.DictReader(io.StringIO(out))]
    assert rows == [
        ("workstation", "*.us-south.containers.cloud.ibm.com", "https", "30000-32767"),
        ("workstation", "198.51.100.10", "tcp", "31250"),
        ("workstation", "cloud.ibm.com", "https", "443"),
        ("workstation", "containers.cloud.ibm.com", "https", "443"),
        ("workstation", "dd0.icr.io", "https", "443"),  # the registries' delivery hosts (ibm-registry-firewall)
        ("workstation", "dd0.us.icr.io", "https", "443"),
        ("workstation", "dd2.icr.io", "https", "443"),
        ("workstation", "icr.io", "https", "443"),
        ("workstation", "us.icr.io", "https", "443"),
    ]


def test_the_chosen_alternative_is_visible_in_csv(run_cli):
    code, out, _ = run_cli("matrix", "--stack", "aks-china", "--format", "csv", "--project", str(ROOT))
    tunnel = [r for r in csv.DictReader(io.StringIO(out)) if r["ports"] == "1194"]
    assert [r["destination"] for r in tunnel] == ["198.51.100.0/24", "203.0.113.0/24"]
    assert tunnel[0]["choice"] == ("narrowest of 3 resolvable options; also allowed: AzureCloud.chinaeast2 (service-tag); * (any); "
                                   "not resolvable here: {api_server_ip} (set egress-matrix:apiServerIp)")


def test_table_and_markdown_formats(run_cli):
    code, out, _ = run_cli("matrix", "--stack", "aks-china", "--project", str(ROOT))
    assert code == 0 and "mcr.microsoft.com" in out and "21Vianet" in out
    code, out, _ = run_cli("matrix", "--stack", "aks-china", "--format", "md", "--project", str(ROOT))
    assert code == 0 and out.startswith("# Egress requirements for stack `aks-china`")


def test_catalog_export_contract(run_cli, catalog):
    code, out, _ = run_cli("catalog", "export", "--format", "json", "--project", str(ROOT))
    assert code == 0
    entries = json.loads(out)
    assert len(entries) == len(catalog.entries)
    required = {"id", "platform", "variant", "feature", "level", "role", "destination", "kind", "protocol", "ports", "purpose", "citation"}
    for entry in entries:
        assert required <= set(entry), entry["id"]
        assert set(entry["citation"]) >= {"doc", "section"}
        assert all(isinstance(p, int) or "-" in p or p.startswith("{") for p in entry["ports"])
    by_id = {e["id"]: e for e in entries}
    assert by_id["ibm-kubectl-master"]["ports"] == ["30000-32767"]
    assert by_id["aks-public-hcp"]["destination"] == "*.hcp.{location}.azmk8s.io"
    assert by_id["kkp-images-docker-io-canal"]["images"] == ["docker.io/flannel/flannel"]
    assert [a["destination"] for a in by_id["aks-public-tunnel-udp-1194"]["alternatives"]] == [
        "AzureCloud.{service_tag_region}", "{region_cidrs}", "{api_server_ip}"]


def test_catalog_check_ok(run_cli):
    code, _, err = run_cli("catalog", "check", "--project", str(ROOT))
    assert code == 0 and err.startswith("ok: ")


def test_usage_errors_exit_2(run_cli):
    code, _, err = run_cli("matrix", "--format", "xml", "--project", str(ROOT))
    assert code == 2 and "xml" in err
    code, _, _ = run_cli("nonsense")
    assert code == 2


def test_no_project_is_a_user_error(run_cli, tmp_path):
    code, out, err = run_cli("matrix", cwd=tmp_path)
    assert code == 1 and out == "" and "no Pulumi.yaml" in err and "--project" in err


def test_docs_check_detects_drift(run_cli, project_copy):
    (project_copy / "docs").mkdir()
    code, _, err = run_cli("docs", "matrix", "--check", "--project", str(project_copy))
    assert code == 1 and "out of date" in err
    assert run_cli("docs", "matrix", "--project", str(project_copy))[0] == 0
    assert run_cli("docs", "matrix", "--check", "--project", str(project_copy))[0] == 0


def test_ibm_stack_exports_its_addresses_for_other_allowlists(run_cli):
    code, out, _ = run_cli("matrix", "--stack", "ibm-vpc", "--format", "json", "--project", str(ROOT))
    exports = {e["id"]: (e["direction"], e["values"]) for e in json.loads(out)["allowlistExports"]}
    assert exports == {
        "ibm-control-plane-for-iam": ("inbound", ["198.51.100.0/28", "198.51.100.64/28"]),
        "ibm-gateway-ips-for-iam": ("inbound", ["203.0.113.11", "203.0.113.12", "203.0.113.13"]),
        "ibm-gateway-ips-for-other-services": ("inbound", ["203.0.113.11", "203.0.113.12", "203.0.113.13"]),
        "ibm-worker-subnets-for-iam": ("inbound", ["10.240.0.0/24", "10.240.64.0/24", "10.240.128.0/24"]),
        "ibm-worker-subnets-for-other-services": ("outbound", ["10.240.0.0/24", "10.240.64.0/24", "10.240.128.0/24"]),
    }


def test_unset_export_says_which_key_to_set(run_cli, project_copy):
    stack = project_copy / "stacks" / "Pulumi.ibm-vpc.yaml"
    stack.write_text(stack.read_text().replace("  egress-matrix:ibmControlPlaneCidrs: [198.51.100.0/28, 198.51.100.64/28]\n", ""))
    code, out, _ = run_cli("matrix", "--stack", "ibm-vpc", "--format", "json", "--project", str(project_copy))
    export = next(e for e in json.loads(out)["allowlistExports"] if e["id"] == "ibm-control-plane-for-iam")
    assert code == 0 and export["values"] == [] and export["missing"] == "set egress-matrix:ibmControlPlaneCidrs"
