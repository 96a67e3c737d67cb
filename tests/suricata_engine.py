"""Run the real Suricata 7 (AWS Network Firewall's engine) on generated rules (reference/verification-engines.md §2)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

CONFIG = """%YAML 1.1
---
vars:
  address-groups: {HOME_NET: "[10.0.0.0/8]", EXTERNAL_NET: "!$HOME_NET"}
  port-groups: {HTTP_PORTS: "80"}
default-log-dir: LOGS
outputs:
  - eve-log: {enabled: yes, filetype: regular, filename: eve.json, types: [alert, drop, flow]}
app-layer:
  protocols:
    tls: {enabled: yes, detection-ports: {dp: 443}}
    http: {enabled: yes}
"""

SURICATA = shutil.which("suricata")
# Skipped in a quick local loop without the engine; .ci/run installs it and sets EGRESS_REQUIRE_ENGINES, so CI fails instead.
if SURICATA is None and os.environ.get("EGRESS_REQUIRE_ENGINES"):
    raise RuntimeError("suricata is required (EGRESS_REQUIRE_ENGINES is set) but not installed")
needs_suricata = pytest.mark.skipif(SURICATA is None, reason="suricata is not installed (.ci/run installs it from bookworm-backports)")


def own_files(workdir: Path) -> str:
    """Write the files Suricata otherwise reads from /etc/suricata into ``workdir``; return the config lines naming them.

    Without them a run depends on the machine's install: no /etc/suricata/classification.config and no rule loads.
    Our rules use no classtype, reference or threshold, so each file only has to exist."""
    lines = []
    for key, name in (("classification-file", "classification.config"), ("reference-config-file", "reference.config"),
                      ("threshold-file", "threshold.config")):
        (workdir / name).write_text("# empty: the rules under test use no classtype, reference or threshold\n")
        lines.append(f"{key}: {json.dumps(str(workdir / name))}\n")
    return "".join(lines)


def check_rules(rules: str, workdir: Path) -> subprocess.CompletedProcess:
    """``suricata -T`` on ``rules``: exit 0 when every rule loads."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "suricata.yaml").write_text(CONFIG.replace("LOGS", str(workdir)) + own_files(workdir))
    (workdir / "test.rules").write_text(rules)
    return subprocess.run([SURICATA or "suricata", "-T", "-c", str(workdir / "suricata.yaml"), "-S", str(workdir / "test.rules"),
                           "-l", str(workdir)], capture_output=True, text=True, timeout=120)
