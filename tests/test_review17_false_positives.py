"""What the issue-17 tightening must still accept (a third review: real inputs it refused or mangled), each beside the
secret it must still refuse."""
from __future__ import annotations

from pathlib import Path

import pytest

from egress.addresses import AddressError, parse_no_proxy_entry
from egress.pem import bundle_as_deployed, check_certificates_only
from egress.reasons import check_reason
from egress.redact import redact

# `openssl x509 -text` of ACCV's RSA root from Debian's ca-certificates: 'Signature Algorithm: sha1WithRSAEncryption'
# was read as a key's base64 body, 'email:accv@accv.es' as a user and password before a host.
TEXT_DUMP = (Path(__file__).parent / "data" / "pem" / "openssl-x509-text-rsa.pem").read_text()
CERT = TEXT_DUMP[TEXT_DUMP.index("-----BEGIN CERTIFICATE-----"):]


@pytest.mark.parametrize("extra", [
    "",  # the dump as openssl writes it
    "        X509v3 Private Key Usage Period:\n            Not Before: Jan  1 00:00:00 2020 GMT",
    "        Serial Number:\n            4b:17:37:eb\nSerial Number: 4b1737eb0e56d3c84e6da3f2f5b1e6b7c8d9e0f1",  # certutil's hex
    "   a:PKEY: rsaEncryption, 2048 (bit); sigalg: RSA-SHA256",  # openssl s_client -showcerts (OpenSSL 3)
    "# Corp Login Proxy CA",
])
def test_openssl_text_and_titles_are_no_secret_and_deploy_the_block_only(extra):
    bundle = extra + "\n" + TEXT_DUMP
    check_certificates_only(bundle)
    assert bundle_as_deployed(bundle) == CERT.rstrip() + "\n"


@pytest.mark.parametrize("extra, problem", [
    ("Proxy login: http://svc:pw1SECRET@proxy.corp.example.com:8080", "with credentials"),
    ("see http://alice:pa ss@proxy.corp:3128 here", "with credentials"),
    ("login: alice / S3cr3t-Lab!", "names a password"),
    ("MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgXyZ2kP0vQ1w", "base64"),
    ("\ufeff", "byte-order mark"),
])
def test_secrets_beside_a_text_dump_are_still_refused_unquoted(extra, problem):
    bundle = extra + CERT if extra == "\ufeff" else extra + "\n" + TEXT_DUMP
    with pytest.raises(AddressError) as refused:
        check_certificates_only(bundle)
    assert problem in str(refused.value)
    assert "SECRET" not in str(refused.value) and "S3cr3t" not in str(refused.value)


@pytest.mark.parametrize("entry", ["10.0.0.5:3128", "192.168.1.10:8443"])
def test_a_noproxy_address_with_a_port_is_accepted(entry):
    assert parse_no_proxy_entry(entry) == entry  # Go's httpproxy matches it as host:port


@pytest.mark.parametrize("entry", ["010.0.0.1:80", "127.1:80"])
def test_a_numeric_name_with_a_port_is_still_refused(entry):
    with pytest.raises(AddressError):
        parse_no_proxy_entry(entry)


@pytest.mark.parametrize("reason", ["实验室集群没有防火墙", "ラボのクラスタにはファイアウォールがない", "Cisco TODO-list app vendor requires it",
                                    "temp: see ticket TBD-123", "the proxy at xxx.corp is broken"])
def test_reasons_in_any_script_and_names_that_hold_a_note_word_are_reasons(reason):
    assert check_reason(reason) == reason


@pytest.mark.parametrize("reason", ["実実実実実実実実実実", "aaaaaaaaaa", "TODO: later", "fix xxx later ok"])
def test_repeats_and_notes_are_still_no_reason(reason):
    with pytest.raises(AddressError):
        check_reason(reason)


@pytest.mark.parametrize("text", ["monkey=1; status=ok", "sortkey=name; hotkey=F5;", "status;code=403", "tcp;auth=ok"])
def test_names_ending_in_key_are_not_hidden(text):
    assert redact(text) == text


@pytest.mark.parametrize("text, secret", [
    ("DefaultEndpointsProtocol=https;AccountName=a;AccountKey=pwSECRET==;EndpointSuffix=core.windows.net", "pwSECRET"),
    ("Endpoint=sb://x/;SharedAccessKeyName=Root;SharedAccessKey=pwV=", "pwV"),
    ("https://h.example.com/x?key=pwS&api-key=pwT&subscription-key=pwU", "pw"),
])
def test_keys_that_are_secrets_are_still_hidden(text, secret):
    assert secret not in redact(text)
