"""The platforms' own spellings of a stack value, read as ours (the Profile stores and the targets see ours).

- Azure location display names: ``West Europe`` is ``westeurope``. Azure Resource Manager compares locations
  without case or spaces; the rule is hashicorp/go-azure-helpers resourcemanager/location/normalize.go (``Normalize``:
  lower case, spaces removed; commit 65cddec5902c997e4521f75d9312bfc29c7308f7), which the azurerm provider applies to
  every ``location``. The result is still checked against matrix/azure-locations.yaml (egress/resolve.py).
- OpenShift platform names as install-config writes them (``platform: {vsphere: ...}``): openshift/installer
  pkg/types/installconfig.go (``Platform`` JSON keys alibabacloud, aws, azure, baremetal, gcp, ibmcloud, libvirt,
  none, openstack, powervs, vsphere, ovirt, nutanix; commit 0027e64d7598a6b92371e84ed74a0b25f4072a53) and
  pkg/types/vsphere/doc.go (``Name = "vsphere"``, commit 24a06e10850970962647ac7893400f2bb843e65c). Each is the
  Infrastructure object's platform type (ours: ``VSphere``, ``BareMetal``, ``oVirt``) in lower case.
- noProxy as OpenShift writes it: install-config ``proxy.noProxy`` and the Proxy's ``spec.noProxy`` are one
  comma-separated string (installconfig.go ``Proxy.NoProxy``: "a comma-separated list of domains and CIDRs"); an item
  ``a,b,c`` of our list is those three entries.
"""
from __future__ import annotations

from typing import Any, get_args

from .models import OpenShiftPlatform

_PLATFORMS = {name.lower(): name for name in get_args(OpenShiftPlatform)}


def azure_location(value: Any) -> Any:
    """An Azure location as its programmatic name (display names and any case accepted); other values unchanged."""
    if isinstance(value, str) and value.strip():
        return value.strip().lower().replace(" ", "")
    return value


def openshift_platform(value: Any) -> Any:
    """An OpenShift platform type in the Infrastructure API's spelling; install-config's lower-case names accepted."""
    if isinstance(value, str):
        return _PLATFORMS.get(value.strip().lower(), value)
    return value


def split_no_proxy(value: Any) -> Any:
    """A list of noProxy entries, an item holding ',' split there (OpenShift's own form: spaces around the commas and
    empty parts dropped); an item without ',' is unchanged, so its own white space is still refused."""
    if isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
        return tuple(part for item in value
                     for part in ([p.strip(" ") for p in item.split(",") if p.strip(" ")] if "," in item else [item]))
    return value
