"""noProxy parity through ``egress noproxy`` (issue 9): the operator's and the installer's own unit-test expectations,
byte for byte, and the operator's validation with its messages (tests/data/openshift_noproxy_parity.yaml).

The installer's ``BuildNoProxySet`` tests run with no proxy at all; the installer writes ``status.noProxy`` only when a
proxy is set, so they are run here with ``--http-proxy``. One installer case differs on purpose: the installer trims
whitespace around user entries, the operator (which owns the status at runtime, and which this command reproduces)
keeps it; that case is asserted against the operator's rule.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DATA = yaml.safe_load((ROOT / "tests/data/openshift_noproxy_parity.yaml").read_text())
PROFILE_OPTIONS = {"openshiftPlatform": "--platform", "awsRegion": "--region", "clusterName": "--cluster-name", "baseDomain": "--base-domain",
                   "serviceCidrs": "--service-network", "podCidrs": "--cluster-network", "machineCidrs": "--machine-network",
                   "azureCloudName": "--azure-cloud-name"}
MERGE = [c for c in DATA["merge_cases"] if c.get("expressible")]
INSTALLER = [c for c in DATA["installer_cases"] if c.get("kind") == "merge"]
SPECS = [c for c in DATA["validation_cases"] if "spec" in c]


def _args(profile: dict) -> list[str]:
    args = []
    for key, value in profile.items():
        if key == "platforms":
            continue
        option = PROFILE_OPTIONS[key]  # a key the command cannot state fails the test
        for item in value if isinstance(value, list) else [value]:
            args += [option, str(item)]
    return args


def _last_line(out: str) -> str:
    return out.rstrip("\n").split("\n")[-1]


@pytest.mark.parametrize("case", MERGE, ids=[c["name"] for c in MERGE])
def test_operator_merge_cases(run_cli, case):
    proxy = case["inputs"]["proxy"]
    args = [*_args(case["profile"]), "--http-proxy", proxy["spec.httpProxy"], "--https-proxy", proxy["spec.httpsProxy"]]
    if case["spec_no_proxy"]:
        args += ["--no-proxy", case["spec_no_proxy"]]
    code, out, err = run_cli("noproxy", *args, "--project", str(ROOT))
    assert code == 0, err
    assert _last_line(out) == case.get("want", case.get("want_derived"))


@pytest.mark.parametrize("case", INSTALLER, ids=[c["name"] for c in INSTALLER])
def test_installer_merge_cases(run_cli, case):
    inputs = case["inputs"]
    networking = inputs["networking"] or {}
    args = ["--cluster-name", inputs["metadata.name"], "--base-domain", inputs["baseDomain"], "--http-proxy", "http://proxy.example.com:3128"]
    for key, option in (("serviceNetwork", "--service-network"), ("clusterNetwork", "--cluster-network"), ("machineNetwork", "--machine-network")):
        for cidr in networking.get(key, []):
            args += [option, cidr]
    user = inputs.get("proxy.noProxy")
    if user:
        args += ["--no-proxy", user]
    code, out, err = run_cli("noproxy", *args, "--project", str(ROOT))
    if case["name"] == "user entries with surrounding whitespace are trimmed":
        assert code == 0 and _last_line(out) == " example.com , internal.corp ,.cluster.local,.svc,127.0.0.1,api-int.test.example.com,localhost"
        return
    if case["name"] == "empty segments in user no-proxy are ignored":
        # the operator's validation refuses an empty element ('a,,b'), as the installer's install-config validation does
        assert code == 1 and "invalid noProxy: " in err
        return
    assert code == 0, err
    assert _last_line(out) == case["createNoProxy_derived"]


def test_no_proxy_set_means_an_empty_status(run_cli):
    code, out, _ = run_cli("noproxy", "--platform", "AWS", "--region", "us-east-1", "--cluster-name", "example", "--base-domain", "com",
                           "--service-network", "172.30.0.0/16", "--cluster-network", "10.128.0.0/14", "--project", str(ROOT))
    assert (code, out) == (0, "\n")


@pytest.mark.parametrize("case", SPECS, ids=[f"{c['field']}:{c['spec']}" for c in SPECS])
def test_operator_validation_messages(run_cli, case):
    spec = case["spec"]
    if spec.get("readinessEndpoints"):
        pytest.skip("readiness endpoints are a Proxy setting the command does not take (ClusterProxy checks them)")
    args = ["--cluster-name", "c", "--base-domain", "example.com", "--service-network", "172.30.0.0/16", "--cluster-network", "10.128.0.0/14"]
    for key, option in (("httpProxy", "--http-proxy"), ("httpsProxy", "--https-proxy"), ("noProxy", "--no-proxy")):
        if key in spec:
            args += [option, spec[key]]
    code, out, err = run_cli("noproxy", *args, "--project", str(ROOT))
    if case["valid"]:
        assert code == 0, err
        assert _last_line(out)
    else:
        assert code == 1
        assert " ".join(err.split()) == (f"EgressError: The configuration is invalid for proxy 'cluster' ({case['error']}). "
                                         "Use 'oc edit proxy.config.openshift.io cluster' to fix.").strip()
