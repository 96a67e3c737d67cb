"""Completeness: every destination/port a seed states is in the matrix (tables kept under seed_tables/)."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from egress.addresses import parse_port

TABLES = sorted((Path(__file__).parent / "seed_tables").glob("*.yaml"))


def _candidates(entry):
    """What an entry stands for: its destination, its alternatives, and the document's own text where the matrix
    deliberately writes something else (documented_as), so a corrected row still accounts for the seed's row."""
    yield entry.destination, entry.protocol, entry.ports
    for alt in (*entry.alternatives, *entry.documented_as):
        yield alt.destination, alt.protocol or entry.protocol, alt.ports or entry.ports


def _port_in(port, items) -> bool:
    if isinstance(port, str):
        return port in items
    return any(not (isinstance(i, str) and i.startswith("{")) and parse_port(i).contains(port) for i in items)


def _covered(row, catalog) -> bool:
    for entry in catalog.entries:
        if row.get("variant") and entry.variant not in (None, row["variant"]):
            continue
        for destination, protocol, ports in _candidates(entry):
            if destination == row["destination"] and protocol == row["protocol"] and _port_in(row["port"], ports):
                return True
    return False


@pytest.mark.parametrize("table", TABLES, ids=[t.stem for t in TABLES])
def test_every_seed_row_is_in_the_matrix(table, catalog):
    data = yaml.safe_load(table.read_text())
    missing = [row for row in data["rows"] if not _covered(row, catalog)]
    assert not missing, f"{data['seed']}: {len(missing)} stated destinations missing from the matrix: {missing}"
    images = {image for entry in catalog.entries for image in entry.images}
    missing_images = [image for image in data.get("images", []) if image not in images]
    assert not missing_images, f"{data['seed']}: images missing from the matrix: {missing_images}"
    rules = [*catalog.noproxy_rules, *catalog.noproxy_removed]
    known = {r.value for r in rules if r.value} | {f"from:{r.from_}" for r in rules if r.from_}
    missing_noproxy = [value for value in data.get("noproxy", []) if value not in known]
    assert not missing_noproxy, f"{data['seed']}: no-proxy entries missing from the matrix: {missing_noproxy}"


def test_the_check_fails_when_an_entry_is_dropped(catalog):
    table = yaml.safe_load((Path(__file__).parent / "seed_tables" / "004_aks.yaml").read_text())
    row = next(r for r in table["rows"] if r["destination"] == "mcr-0001.mcr-msedge.net")
    assert _covered(row, catalog)
    pruned = catalog.model_copy(update={"entries": tuple(e for e in catalog.entries if e.id != "aks-public-mcr-edge")})
    assert not _covered(row, pruned)


def test_every_entry_cites_a_known_document(catalog):
    for entry in catalog.entries:
        assert entry.citation.section.strip(), entry.id
        assert catalog.sources[entry.citation.source].doc, entry.id


def seed_counts() -> dict[str, int]:
    """Rows (+ images) checked per seed; printed by bench/seed_counts.py for the closing note."""
    counts = {}
    for table in TABLES:
        data = yaml.safe_load(table.read_text())
        counts[data["seed"]] = len(data["rows"]) + len(data.get("images", [])) + len(data.get("noproxy", []))
    return counts
