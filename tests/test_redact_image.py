"""An OCI image reference pinned by tag and digest ('python:3.12-slim@sha256:<hex>') is no 'user:password@host': the
redaction shows it as written, and a setting holding one is not refused as carrying credentials; every credential form
(tests/test_secrets.py pins the rest) stays masked, including ones that look half like a digest."""
from __future__ import annotations

import pytest

from egress.errors import EgressError
from egress.profile import profile_from_config
from egress.redact import MASK, has_credentials, redact, redact_message, redact_url, redact_value

DIGEST = "sha256:" + "0123456789abcdef" * 4
IMAGES = [
    f"python:3.12-slim-bookworm@{DIGEST}",
    f"python:3.13.1-slim@{DIGEST}",
    f"squid:6.10_beta@{DIGEST}",
    f"my-image__x.y:v1@sha512:{'ab' * 64}",
]
CREDENTIALS = [
    ("alice:Sup3rS3cret@proxy.example.com:3128", f"{MASK}@proxy.example.com:3128"),
    ("alice:Sup3rS3cret@sha256:1234", f"{MASK}@sha256:1234"),  # a 'digest' too short for SHA-256: a host 'sha256', port 1234
    ("alice:Sup3rS3cret@proxy:" + "1" * 64, f"{MASK}@proxy:" + "1" * 64),  # a mistyped port, however long
    (f"alice:Sup3rS3cret@md5:{'a' * 64}", f"{MASK}@md5:{'a' * 64}"),  # no registered digest algorithm
    (f"alice:Sup3rS3cret@sha256:{'A' * 64}", f"{MASK}@sha256:{'A' * 64}"),  # a registered digest is lowercase hex
    (f"http://python:3.12@sha256:{'a' * 64}", f"http://{MASK}@sha256:{'a' * 64}"),  # a URL's user is a user, whatever follows
]


@pytest.mark.parametrize("image", IMAGES)
def test_an_image_reference_with_tag_and_digest_is_shown(image):
    assert redact_url(image) == image and not has_credentials(image)
    text = f"image {image}, pulled; ({image}) and '{image}'."
    assert redact(text) == text
    assert redact_value(image, "config.egress-matrix:probeImage") == image
    assert redact_message(f"bad image {image}", image) == f"bad image {image}"


@pytest.mark.parametrize("value, shown", CREDENTIALS)
def test_credentials_stay_masked(value, shown):
    assert redact_url(value) == shown and has_credentials(value)
    assert "Sup3r" not in redact(f"proxy {value}, then") and "Sup3r" not in redact(f"'{value}'")


def test_settings_take_an_image_with_tag_and_digest():
    image = IMAGES[0]
    profile = profile_from_config({"platforms": ["kkp"], "targets": ["kubernetes"], "probeJob": True, "probeImage": image, "egressProxy": True,
                                   "egressProxyImage": f"squid:6.10-24.10_beta@{DIGEST}"}, "stacks/Pulumi.t.yaml", "t")
    assert profile.probe_image == image and profile.egress_proxy_image.endswith(DIGEST)


def test_a_setting_with_credentials_before_a_digest_is_still_refused():
    with pytest.raises(EgressError) as info:
        profile_from_config({"platforms": ["kkp"], "targets": ["kubernetes"], "probeJob": True, "probeImage": "alice:Sup3rS3cret@sha256:1234"},
                            "stacks/Pulumi.t.yaml", "t")
    assert "carries credentials" in str(info.value) and "Sup3r" not in str(info.value)
