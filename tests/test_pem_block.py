"""Issue 22 item 6: the CA bundle (and every multi-line string) of a rendered manifest is a YAML literal block, byte
stable, and reads back as exactly the bundle given (final newline included)."""
from __future__ import annotations

import datetime
import functools

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from egress.targets.kubernetes import compile_kubernetes, render
from egress.targets.kubernetes.render_yaml import dump

from aws_stacks import stack

USER_CA_BUNDLE_FILE = "kubernetes/configmap-openshift-config.user-ca-bundle.yaml"


@functools.cache
def ca_pem(common_name: str) -> str:
    key = ec.derive_private_key(0xB10C + len(common_name), ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key()).serial_number(7)
            .not_valid_before(start).not_valid_after(start + datetime.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def _rendered(bundle: str) -> str:
    catalog, profile, reqs = stack("openshift", proxy_trusted_ca=bundle)
    return render(compile_kubernetes(catalog, profile, reqs))[USER_CA_BUNDLE_FILE]


@pytest.mark.parametrize("bundle", [
    ca_pem("Corp Proxy CA"),                                                  # one certificate, final newline
    ca_pem("Corp Proxy CA") + ca_pem("Corp Root CA"),                         # a bundle of two
    ca_pem("Corp Proxy CA").rstrip("\n"),                                     # no final newline
    "# Corp Proxy CA (Zürich)\n" + ca_pem("Corp Proxy CA") + "\n" + ca_pem("Corp Root CA"),  # a comment, a blank line
])
def test_the_user_ca_bundle_is_a_literal_block_that_reads_back_exactly(bundle):
    text = _rendered(bundle)
    assert yaml.safe_load(text)["data"]["ca-bundle.crt"] == bundle
    # a literal block: the header line, then every line of the bundle as written, indented; no quoted scalar, no doubled breaks
    assert "  ca-bundle.crt: |" in text and "'-----BEGIN" not in text and '"-----BEGIN' not in text
    body = text.split("  ca-bundle.crt: |", 1)[1].split("\n", 1)[1]
    assert [line.strip() for line in body.splitlines() if line.strip() and line.strip() != "..."] == \
        [line for line in bundle.splitlines() if line]
    assert _rendered(bundle) == text  # byte stable


def test_squid_conf_in_its_configmap_is_a_literal_block_too():
    catalog, profile, reqs = stack("proxy-only")
    files = render(compile_kubernetes(catalog, profile, reqs))
    text = files["kubernetes/configmap-egress-proxy.egress-proxy-config.yaml"]
    assert "  squid.conf: |" in text and "\n\n    http_port" not in text
    assert yaml.safe_load(text)["data"]["squid.conf"] == files["kubernetes/squid.conf"]


@pytest.mark.parametrize("value", ["a\nb\n", "a\nb", "a\nb\n\n", " indented\nfirst\n", "\nleading break\n", "trailing space \nx\n",
                                   "tab\there\n", "crlf\r\nline\r\n", "nel\x85line\n", "ls\u2028line\n", "ps\u2029x\n", "é\n", "\n",
                                   "# not a comment\n- not a list\nkey: not a map\n"])
def test_any_multi_line_string_reads_back_exactly(value):
    text = dump({"data": {"k": value}, "after": "x"})
    assert yaml.safe_load(text) == {"data": {"k": value}, "after": "x"}
