"""egress preview on a stack whose cluster uses a corporate proxy the stack does not deploy: the preview cannot see
that proxy's allowlist, so it says the path is not verified offline and counts what must traverse it and what goes
around it (issue 21), instead of "kubernetes: 0/0 enforced requirements"."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_openshift_preview_says_the_corporate_proxy_path_is_not_verified(run_cli, tmp_path):
    code, out, err = run_cli("preview", "--stack", "openshift", "--out", str(tmp_path))
    assert code == 0, err
    assert "0/0 enforced" not in out
    block = out[out.index("kubernetes: path through"):out.index("policy pack:")].splitlines()
    assert block == [
        "kubernetes: path through the corporate proxy not verified offline (OpenShift cluster Proxy -> http://proxy.corp.example.com:3128)",
        "  23 requirement path(s) of nodes/control-plane must traverse it: its allowlist is egress export --for proxy",
        # proxyReadinessEndpoints http and https www.redhat.com: the export's traverse list has these two more (25)
        "  2 readiness endpoint(s) the network operator probes through it whatever noProxy says",
        # three NTP pools (UDP: no forward proxy carries it) and vCenter (in noProxy, as the vSphere install docs require)
        "  4 go direct (status.noProxy, or not HTTP): the firewall must allow them",
        "  egress probe checks these paths from where each role runs",
    ]


def test_kkp_preview_counts_the_roles_that_do_not_use_the_node_proxy(run_cli, tmp_path):
    code, out, err = run_cli("preview", "--stack", "kkp", "--out", str(tmp_path))
    assert code == 0, err
    block = out[out.index("kubernetes: path through"):].splitlines()
    assert block[0] == "kubernetes: path through the corporate proxy not verified offline (KKP node proxy -> http://proxy.corp.example.com:3128)"
    assert block[3] == "  73 of role(s) bastion, seed, which do not use it: the firewall must allow them"


@pytest.mark.parametrize("stack", ["proxy-only", "dev"])
def test_a_stack_that_deploys_its_egress_proxy_keeps_its_coverage_line(stack, run_cli, tmp_path):
    code, out, err = run_cli("preview", "--stack", stack, "--out", str(tmp_path))
    assert code == 0, err
    assert "path through the corporate proxy" not in out
    line = next(l for l in out.splitlines() if l.startswith("kubernetes: "))
    assert line.split(" enforced")[0].split(": ")[1] in {"49/49", "151/151"}
