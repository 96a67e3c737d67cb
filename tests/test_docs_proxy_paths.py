"""docs/MATRIX.md lists every row a cluster proxy must leave alone (matrix fields `direct` and `no_tls_inspection`),
so a reviewer sees them in one place with their reasons and citations (issue 21)."""
from __future__ import annotations

from pathlib import Path

from egress.catalog import load_catalog
from egress.docs import matrix_markdown

ROOT = Path(__file__).resolve().parents[1]


def test_matrix_doc_lists_the_direct_and_no_inspection_rows():
    catalog = load_catalog(ROOT / "matrix")
    text = matrix_markdown(catalog)
    section = text[text.index("## Paths through a cluster proxy"):text.index("## Host expansions")]
    rows = [line.split(" | ")[0].lstrip("| ") + " " + line.split(" | ")[2] for line in section.splitlines() if line.startswith("| ") and "---" not in line][1:]
    expected = sorted([f"{e.id} direct (in noProxy)" for e in catalog.entries if e.direct]
                      + [f"{e.id} no TLS inspection" for e in catalog.entries if e.no_tls_inspection])
    assert sorted(rows) == expected
    assert {"openshift-vsphere-vcenter direct (in noProxy)", "openshift-bmc-redfish direct (in noProxy)",
            "aks-public-hcp no TLS inspection"} <= set(rows)
