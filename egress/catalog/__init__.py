"""Catalogs: the vendor matrix and a stack's own egress, validated the same way.

    yaml_lines.py   YAML with the line of every mapping (errors name it)
    checks.py       the checks every entry passes: fields, destinations, ports
    vendor.py       the vendor matrix (matrix/*.yaml) as one Catalog
    export.py       the JSON form of an unresolved entry
"""
from .checks import check_destination, check_ports
from .export import export_entry
from .vendor import FILE_KINDS, SCHEMA_VERSION, load_catalog
from .yaml_lines import read_yaml

__all__ = ["FILE_KINDS", "SCHEMA_VERSION", "check_destination", "check_ports", "export_entry", "load_catalog", "read_yaml"]
