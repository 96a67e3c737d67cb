"""Credentials without a scheme are masked whatever the password holds ('/' too), unless the value is an image
reference pinned by digest; a URL that white space split ('http://alice:pa ss@proxy') is masked in free text."""
from __future__ import annotations

import pytest

from egress.errors import EgressError
from egress.profile import profile_from_config
from egress.redact import MASK, has_credentials, redact, redact_url

DIGEST = "sha256:" + "0123456789abcdef" * 4


@pytest.mark.parametrize("value, shown", [
    ("alice:Pa/ss9word@proxy.corp.example.com:3128", f"{MASK}@proxy.corp.example.com:3128"),
    ("user:s3cret/x@proxy.corp:3128", f"{MASK}@proxy.corp:3128"),
    ("docker.io/alice:s3cret@proxy:3128", f"{MASK}@proxy:3128"),  # a reference's shape, but a host and port after the '@'
    (f"u:p@registry.corp/img:v1@{DIGEST}", f"{MASK}@{DIGEST}"),  # no image name holds an '@': the widest reading
    ("alice:s3cret/x@sha256:6a09", f"{MASK}@sha256:6a09"),  # 's3cret/x' is no tag and path: not a reference
])
def test_a_password_with_a_slash_is_masked(value, shown):
    assert redact_url(value) == shown and has_credentials(value)
    secret = value[:value.rfind("@")]
    assert secret not in redact(f"proxy {value}, then") and secret not in redact(f"'{value}'")


@pytest.mark.parametrize("image", [
    f"docker.io/library/python:3.12-slim@{DIGEST}",
    f"registry.example.com:5000/team/squid:6.10@{DIGEST}",
    f"[fd00::1]:5000/squid:6@{DIGEST}",
    "registry.example.com:5000/squid@sha256:6a09",  # abbreviated, as release notes quote it: a hex letter, never a port
])
def test_image_references_with_a_registry_are_shown(image):
    assert redact_url(image) == image and not has_credentials(image)
    assert redact(f"image {image}.") == f"image {image}."


@pytest.mark.parametrize("text, shown", [
    ("proxy http://alice:pa ss@proxy.corp:3128 refused", f"proxy http://{MASK}@proxy.corp:3128 refused"),
    ("http://alice:pa/ss x y@proxy", f"http://{MASK}@proxy"),
    ("http://alice: ss@proxy", f"http://{MASK}@proxy"),
    # a host and port, then other words: nothing to hide
    ("see http://proxy:3128 and bob@corp.example", "see http://proxy:3128 and bob@corp.example"),
    ("http://host:80/x failed; admin@corp", "http://host:80/x failed; admin@corp"),
])
def test_a_url_split_by_white_space_is_masked_in_free_text(text, shown):
    assert redact(text) == shown


def test_the_openshift_proxy_setting_with_a_slash_in_the_password_is_refused_without_showing_it():
    with pytest.raises(EgressError) as info:
        profile_from_config({"platforms": ["openshift"], "targets": ["kubernetes"], "clusterProxy": ["openshift"],
                             "httpProxy": "alice:Pa/ss9word@proxy.corp.example.com:3128"}, "stacks/Pulumi.t.yaml", "t")
    assert "carries credentials" in str(info.value) and "Pa/ss" not in str(info.value) and "alice" not in str(info.value)


LOG_LINE = "1700000000.000 5 10.0.0.5 TCP_DENIED/403 0 GET http://bob:hunter2@evil.example.com/x - HIER_NONE/- text/html"


@pytest.mark.parametrize("text", [f'"text": "{LOG_LINE}",', f"'{LOG_LINE}'", LOG_LINE])
def test_a_quoted_log_line_keeps_its_fields_and_loses_only_the_credentials(text):
    # egress explain --format json quotes a Squid line whole: only the URL's userinfo goes, not everything before its '@'
    shown = redact(text)
    assert "hunter2" not in shown and "bob" not in shown
    assert "1700000000.000 5 10.0.0.5 TCP_DENIED/403 0 GET http://(credentials hidden)@evil.example.com/x - HIER_NONE/-" in shown
    assert redact(shown) == shown  # a second pass (the CLI redacts what commands print) changes nothing


@pytest.mark.parametrize("quoted, secret", [("'alice:pa ss@proxy.example.com'", "pa ss"), ('"u:p w@h.example.com and more"', "p w"),
                                            ("'see http://x.example.com and user:pw1@host.example.com'", "pw1")])
def test_a_quoted_value_that_is_not_whole_urls_is_still_masked_to_its_last_at(quoted, secret):
    assert secret not in redact(quoted)


@pytest.mark.parametrize("text, secret", [
    ("https://acct.blob.core.windows.net/c?sv=2022-11-02&sig=pw1SECRET%2Bx&se=2026", "pw1SECRET"),  # an Azure SAS URL
    ("GET https://bucket.s3.amazonaws.com/k?X-Amz-Credential=AKIAEXAMPLE%2F2026&X-Amz-Signature=pw2SECRET HTTP/1.1", "pw2SECRET"),
    ("destination 'https://h.example.com/x?token=pw3SECRET#frag'", "pw3SECRET"),
    ("https://h.example.com/cb?state=1&code=pw4SECRET", "pw4SECRET"),
    ("https://h.example.com/x?a=1&API_KEY=pw5SECRET", "pw5SECRET"),
])
def test_query_parameters_that_are_credentials_are_hidden(text, secret):
    shown = redact(text)
    assert secret not in shown and "=(hidden)" in shown
    assert redact(shown) == shown


def test_other_query_parameters_are_shown():
    text = "https://h.example.com/x?sv=2022-11-02&se=2026&page=2&keys=a"
    assert redact(text) == text
