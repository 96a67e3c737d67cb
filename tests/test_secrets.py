"""Secrets (issue 17, items 5-7 and the opaque proxy URL of item 10): credentials in a URL or host setting and a private
key in proxyTrustedCa are refused at every entry point (CLI, the Pulumi program, the policy pack) before anything is
written or registered, and no message, file or output ever quotes them (egress/redact.py, egress/pem.py)."""
from __future__ import annotations

import datetime
import json
import runpy
import shutil
from pathlib import Path

import pulumi
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import NameOID
from hypothesis import example, given, settings
from hypothesis import strategies as st

from egress.errors import ProfileError
from egress.pem import check_certificates_only, foreign_blocks
from egress.profile import profile_from_config, profile_from_pulumi_config
from egress.redact import MASK, has_credentials, redact, redact_message, redact_url, redact_value, userinfo_span
from egress.targets.kubernetes.cluster_proxy import ClusterProxyCompileError, with_credentials
from egress.targets.kubernetes.openshift_checks import ProxyValidationError, validate_proxy_spec
from pulumi_harness import settle

ROOT = Path(__file__).resolve().parents[1]
CASES = [c for c in yaml.safe_load((ROOT / "tests" / "bad_inputs" / "cases.yaml").read_text()) if c["name"].startswith("h3-")]


def ca_pem() -> str:
    """A real self-signed CA certificate, byte-identical on every call (Ed25519 signatures are deterministic)."""
    key = ed25519.Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Corp Proxy CA")])
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key()).serial_number(1)
            .not_valid_before(start).not_valid_after(start + datetime.timedelta(days=3650)).sign(key, None))
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def key_pem(kind: str = "pkcs8") -> str:
    key = ec.derive_private_key(0xC0FFEE, ec.SECP256R1())
    formats = {"pkcs8": serialization.PrivateFormat.PKCS8, "ec": serialization.PrivateFormat.TraditionalOpenSSL,
               "openssh": serialization.PrivateFormat.OpenSSH}
    encryption = serialization.NoEncryption()
    if kind == "encrypted":
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.BestAvailableEncryption(b"pass")).decode()
    if kind == "rsa":
        rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=1024)
        return rsa_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, encryption).decode()
    return key.private_bytes(serialization.Encoding.PEM, formats[kind], encryption).decode()


def key_body(pem: str) -> str:
    """A line of the key's base64: what must never be shown."""
    return pem.splitlines()[1]


# -- 7. one redaction ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, shown", [
    ("http://alice:Sup3rS3cret@proxy%zz.example.com:3128", "http://(credentials hidden)@proxy%zz.example.com:3128"),
    ("http://alice:Sup3r S3cret@proxy.example.com:3128", "http://(credentials hidden)@proxy.example.com:3128"),
    ("http://alice:Sup3rS3cret@proxy.example.com:99999", "http://(credentials hidden)@proxy.example.com:99999"),
    ("http://alice:Sup3rS3cret@proxy.example.com:3x28", "http://(credentials hidden)@proxy.example.com:3x28"),
    ("alice:Sup3rS3cret@proxy.example.com:3128", "(credentials hidden)@proxy.example.com:3128"),
    ("http:alice:Sup3rS3cret@proxy:3128", "http:(credentials hidden)@proxy:3128"),
    ("mailto:alice:Sup3rS3cret@proxy", "mailto:(credentials hidden)@proxy"),
    ("//alice:Sup3rS3cret@proxy.example.com:3128", "//(credentials hidden)@proxy.example.com:3128"),
    ("http://alice:Sup3r/S3cret@proxy.example.com:3128", "http://(credentials hidden)@proxy.example.com:3128"),
    ("http://alice:p@ss@proxy.example.com:3128/a@b", "http://(credentials hidden)@b"),  # parsers disagree: up to the last "@"
    # no credentials: an '@' in a path, an image digest, a bare user name, no '@' at all
    ("https://example.com/@user", "https://example.com/@user"),
    ("ubuntu/squid@sha256:6a097f68", "ubuntu/squid@sha256:6a097f68"),
    ("busybox@sha256:6a097f68", "busybox@sha256:6a097f68"),
    ("registry.example.com:5000/squid@sha256:6a09", "registry.example.com:5000/squid@sha256:6a09"),
    ("admin@vcenter.example.com", "admin@vcenter.example.com"),
    ("http://proxy.example.com:3128", "http://proxy.example.com:3128"),
])
def test_redact_url(value, shown):
    assert redact_url(value) == shown
    assert has_credentials(value) is (shown != value)
    assert redact_url(shown) == shown  # idempotent


@pytest.mark.parametrize("url, message", [
    ("http://alice:Sup3r/S3cret@proxy.example.com:3128",
     'invalid httpProxy URI: parse "http://(credentials hidden)@proxy.example.com:3128": invalid port "(credentials hidden)" after host'),
    ("http://alice:Sup3r%zzS3cret@proxy.example.com:3128",
     'invalid httpProxy URI: parse "http://(credentials hidden)@proxy.example.com:3128": invalid URL escape "(credentials hidden)"'),
    ("http://alice:Sup3r S3cret@proxy.example.com:3128",
     'invalid httpProxy URI: parse "http://(credentials hidden)@proxy.example.com:3128": net/url: invalid userinfo'),
    ("http://alice:Sup3rS3cret@proxy.example.com:99999",
     'invalid httpProxy URI: failed to validate port for URL "http://(credentials hidden)@proxy.example.com:99999": invalid port number: 99999'),
])
def test_operator_messages_mask_credentials_and_the_pieces_go_quotes(url, message):
    with pytest.raises(ProxyValidationError) as info:
        validate_proxy_spec(http_proxy=url)
    assert str(info.value) == message


def test_redact_free_text():
    text = ("parse 'http://a:b c@h' and http://x:y@z, image busybox@sha256:1, git@github.com:o/r, "
            "-----BEGIN PRIVATE KEY-----\nMC4CAQ\n-----END PRIVATE KEY----- and -----BEGIN CERTIFICATE-----\nMII\n-----END CERTIFICATE-----")
    assert redact(text) == ("parse 'http://(credentials hidden)@h' and http://(credentials hidden)@z, image busybox@sha256:1, git@github.com:o/r, "
                            "(PEM 'PRIVATE KEY' block, not shown) and -----BEGIN CERTIFICATE-----\nMII\n-----END CERTIFICATE-----")


def test_redact_value_hides_secrets_pem_and_credentials():
    assert redact_value("svc:Sup3rS3cret", "config.egress-matrix:ProxyCredentials") == "(hidden)"
    assert redact_value({"secure": "v1:abc"}, "config.egress_matrix:proxy-credentials") == "(hidden)"
    assert redact_value(ca_pem(), "config.egress-matrix:proxyTrustedCa") == "(PEM text, not shown)"
    assert redact_value(["http://a:Sup3r@h", "x"], "config.egress-matrix:proxyReadinessEndpoints") == ["http://(credentials hidden)@h", "x"]
    assert redact_value("atlantis", "config.egress-matrix:location") == "atlantis"


def test_profile_error_value_field_is_redacted():
    error = ProfileError("stacks/Pulumi.x.yaml", "stack 'x'", "config.egress-matrix:httpProxy", "http://u:Sup3rS3cret@p:1",
                         "parse \"http://u:Sup3rS3cret@p:1\": bad", "fix it")
    assert error.value == "http://(credentials hidden)@p:1" and "Sup3rS3cret" not in str(error)


_PASSWORD = st.text(alphabet="abcXYZ019 %/:@?#[]!$&'()*+,;=~-._\"\\", min_size=0, max_size=12).map(lambda s: f"Q{s}Q")


@settings(max_examples=300, deadline=None)
@given(password=_PASSWORD, port=st.sampled_from(["3128", "3x28", "99999", ""]), host=st.sampled_from(["proxy.example.com", "proxy%zz.example.com", "[::1]"]))
@example(password="Q@/%Q", port="3128", host="proxy.example.com")  # Go quotes the escape '%Q@' across the password's end
@example(password="Q@/%€Q", port="3128", host="proxy.example.com")  # Go quotes bytes: '%\xe2\x82', half of the '€'
def test_no_password_survives_any_message(password, port, host):
    """Whatever the password holds, and however the URL fails to parse, no message quotes it (nor a piece Go quotes)."""
    url = f"http://alice:{password}@{host}{':' + port if port else ''}"
    assert userinfo_span(url) is not None
    assert password not in redact_url(url)
    for spec in ({"http_proxy": url}, {"http_proxy": "http://p:3128", "readiness_endpoints": [url]}):
        try:
            validate_proxy_spec(**spec)
        except ProxyValidationError as exc:
            assert "Q" not in str(exc).replace("URI", ""), str(exc)  # no piece of the password either (it starts and ends with Q)
    with pytest.raises(ProfileError) as info:
        profile_from_config({"platforms": ["openshift"], "httpProxy": url}, "stacks/Pulumi.x.yaml", "x")
    assert password not in str(info.value) and password not in str(info.value.value)


# -- 5. a private key in proxyTrustedCa ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind, label", [("pkcs8", "PRIVATE KEY"), ("ec", "EC PRIVATE KEY"), ("rsa", "RSA PRIVATE KEY"),
                                          ("encrypted", "ENCRYPTED PRIVATE KEY"), ("openssh", "OPENSSH PRIVATE KEY")])
def test_every_kind_of_private_key_is_refused_without_quoting_it(kind, label):
    key = key_pem(kind)
    with pytest.raises(ValueError) as info:
        check_certificates_only(ca_pem() + key)
    line = len(ca_pem().splitlines()) + 1
    assert info.value.problem == (f"block 2 (line {line}) is a PEM '{label}' block (private key material): a CA bundle is public, and this "
                                  "text would be stored in plain text (the trusted-CA ConfigMap, AKS's trustedCa output, Pulumi's state, "
                                  "rendered files and CI artifacts)")
    assert "it has been in the stack file, so treat it as exposed" in info.value.fix and "rotate that key" in info.value.fix
    assert "may already be in version control" in info.value.fix and "remove it from the history" in info.value.fix
    assert key_body(key) not in str(info.value)


def test_key_material_outside_blocks_and_truncated_blocks_are_found():
    truncated = "\n".join(key_pem().splitlines()[:-1]) + "\n"  # no END line
    line = len(ca_pem().splitlines()) + 1
    assert [(f.number, f.line, f.label, f.private) for f in foreign_blocks(ca_pem() + truncated)] == [(2, line, "PRIVATE KEY", True)]
    assert [(f.number, f.line, f.private) for f in foreign_blocks("# the CA's private key follows\n" + ca_pem())] == [(0, 1, True)]
    assert foreign_blocks("# corporate CAs\n" + ca_pem() + "subject=CN=Corp Proxy CA\n" + ca_pem()) == []  # text the operator ignores
    assert [(f.label, f.private) for f in foreign_blocks("-----BEGIN X509 CRL-----\nMAA=\n-----END X509 CRL-----\n")] == [("X509 CRL", False)]
    assert [f.label for f in foreign_blocks("-----BEGIN sneaky-label with text-----\nx\n-----END sneaky-label with text-----\n")] == ["(unrecognised type)"]


def test_a_bundle_of_certificates_passes():
    check_certificates_only(ca_pem() + "\n" + ca_pem())


def _pulumi_config(**extra: str) -> dict[str, str]:
    config = yaml.safe_load((ROOT / "stacks" / "Pulumi.openshift.yaml").read_text())["config"]
    values = {key.split(":", 1)[1]: value if isinstance(value, str) else json.dumps(value) for key, value in config.items()}
    values.update(extra)
    return values


def test_the_program_path_refuses_a_key_and_credentials_the_same_way():
    """profile_from_pulumi_config (the program and the policy pack read the config through it) gives the same errors."""
    key = key_pem()
    with pytest.raises(ProfileError) as info:
        profile_from_pulumi_config(_pulumi_config(proxyTrustedCa=ca_pem() + key).get, "openshift")
    assert str(info.value).startswith("Pulumi config of stack 'openshift': stack 'openshift': field 'config.egress-matrix:proxyTrustedCa' = "
                                      f"'(PEM text, not shown)': block 2 (line {len(ca_pem().splitlines()) + 1}) is a PEM 'PRIVATE KEY' block (private key material)")
    assert key_body(key) not in str(info.value)
    with pytest.raises(ProfileError) as info:
        profile_from_pulumi_config(_pulumi_config(proxyReadinessEndpoints='["http://probe:Sup3rS3cret@www.redhat.com"]').get, "openshift")
    assert str(info.value) == (
        "Pulumi config of stack 'openshift': stack 'openshift': field 'config.egress-matrix:proxyReadinessEndpoints' = "
        "['http://(credentials hidden)@www.redhat.com']: item 0 carries credentials (a user and password before the host), which would be "
        "stored and shown in plain text. Fix: remove them: the operator fetches readiness endpoints without them, and the Proxy object would "
        "show them to anyone who can read it; and change that password: it has been in the stack file")


# -- the program: nothing registered, one message --------------------------------------------------------------------------

class _Mocks(pulumi.runtime.Mocks):
    def __init__(self):
        self.registered: list[str] = []

    def new_resource(self, args):
        self.registered.append(args.typ)
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args):
        return {}




@pytest.mark.parametrize("extra, secret, message", [
    # item 10: an opaque URL passes the operator's check, then failed inside the secret Output with a traceback
    ({"httpProxy": "http:proxy.corp.example.com:3128"}, None,
     "ClusterProxyCompileError: Pulumi config of stack 'openshift': egress-matrix:httpProxy = 'http:proxy.corp.example.com:3128': not a proxy "
     "URL: it has no '//' and host after the scheme. Fix: write it as scheme://host:port, e.g. http://proxy.example.com:3128"),
    ({"httpProxy": "http:alice:Sup3rS3cret@proxy.corp.example.com:3128"}, "Sup3rS3cret",
     "ProfileError: Pulumi config of stack 'openshift': stack 'openshift': field 'config.egress-matrix:httpProxy' = "
     "'http:(credentials hidden)@proxy.corp.example.com:3128': the URL carries credentials, which would be stored in plain text. Fix: remove "
     "them from the URL and run: pulumi config set --secret egress-matrix:proxyCredentials 'user:password' (and change that password: it has "
     "been in the stack file)"),
    ({"proxyTrustedCa": "CA+KEY"}, "KEY", None),
])
def test_the_program_refuses_before_registering_anything(extra, secret, message, loop, monkeypatch):
    key = key_pem()
    extra = {k: v.replace("CA+KEY", ca_pem() + key) for k, v in extra.items()}
    monkeypatch.chdir(ROOT)
    mocks = _Mocks()
    pulumi.runtime.set_mocks(mocks, project="egress-matrix", stack="openshift", preview=False)
    config = {f"egress-matrix:{k}": v for k, v in _pulumi_config(**extra).items()}
    config["egress-matrix:proxyCredentials"] = "svc-ocp:Cr3dS3cret"
    pulumi.runtime.set_all_config(config, ["egress-matrix:proxyCredentials"])
    exported = []
    monkeypatch.setattr(pulumi, "export", lambda name, value: exported.append(name))
    with pytest.raises(pulumi.RunError) as info:
        runpy.run_path(str(ROOT / "__main__.py"))
    settle(loop)  # what was queued before the error has reached the mocks: "nothing registered" is then the whole truth
    if message is not None:
        assert str(info.value) == message
    else:
        assert f"block 2 (line {len(ca_pem().splitlines()) + 1}) is a PEM 'PRIVATE KEY' block (private key material)" in str(info.value)
    shown = str(info.value)
    assert "Cr3dS3cret" not in shown and (secret is None or (secret if secret != "KEY" else key_body(key)) not in shown)
    assert exported == [] and mocks.registered == []


def test_with_credentials_refuses_an_opaque_url_with_a_clear_error():
    with pytest.raises(ClusterProxyCompileError) as info:
        with_credentials("http:proxy.example.com:3128", "svc:Cr3dS3cret")
    assert str(info.value) == "proxy URL 'http:proxy.example.com:3128' is not scheme://host:port. Fix: write e.g. http://proxy.example.com:3128"


# -- the CLI: every bad input of the corpus, the secret nowhere ------------------------------------------------------------------

@pytest.fixture
def full_project(tmp_path: Path) -> Path:
    """A copy of the project with its program (preview runs it)."""
    project = tmp_path / "project"
    project.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(ROOT / name, project / name)
    for name in ("matrix", "stacks", "components"):
        shutil.copytree(ROOT / name, project / name, ignore=shutil.ignore_patterns("__pycache__"))
    return project


@pytest.mark.parametrize("case", [c for c in CASES if c.get("secret")], ids=[c["name"] for c in CASES if c.get("secret")])
def test_no_bad_input_leaks_its_secret_or_writes_a_file(case, full_project, run_cli, tmp_path):
    target = full_project / case["file"]
    target.write_text(target.read_text().replace(*case["replace"], 1))
    out_dir = tmp_path / "out"
    extra = ["--out", str(out_dir)] if case["command"][0] in ("render", "preview") else []
    runs = [case["command"]]
    if case["command"][0] == "render":  # the same stack through the program (preview) too
        runs.append(["preview", *case["command"][1:3]])
    for command in runs:
        code, out, err = run_cli(*command, *(extra or (["--out", str(out_dir)] if command[0] == "preview" else [])), "--project", str(full_project))
        assert code == 1 and "Traceback" not in err, (command, err)
        assert case["secret"] not in out + err, command
        assert not out_dir.exists() or not any(out_dir.rglob("*")), command


def test_the_secret_fixture_cases_are_in_the_corpus():
    assert len(CASES) >= 20 and all(c["secret"] for c in CASES if c["name"] != "h3-proxy-url-opaque")


def test_compile_refuses_too_when_a_profile_skipped_validation():
    """Defence in depth: a Profile built without validation (model_copy) still cannot carry them into a plan."""
    from egress.project import open_project
    from egress.targets.kubernetes.cluster_proxy import compile_cluster_proxy

    catalog, profile, _ = open_project(ROOT).requirements("openshift")
    key = key_pem()
    with pytest.raises(ClusterProxyCompileError) as info:
        compile_cluster_proxy(catalog, profile.model_copy(update={"proxy_trusted_ca": ca_pem() + key}), None, False)
    assert str(info.value).startswith(f"egress-matrix:proxyTrustedCa = '(PEM)': block 2 (line {len(ca_pem().splitlines()) + 1}) is a PEM "
                                      "'PRIVATE KEY' block (private key material)")
    assert key_body(key) not in str(info.value)
    endpoints = ("https://www.redhat.com", "http://probe:Sup3rS3cret@www.redhat.com")
    with pytest.raises(ClusterProxyCompileError) as info:
        compile_cluster_proxy(catalog, profile.model_copy(update={"proxy_readiness_endpoints": endpoints}), None, False)
    assert str(info.value) == ("egress-matrix:proxyReadinessEndpoints = ['https://www.redhat.com', 'http://(credentials hidden)@www.redhat.com']: "
                               "item 1 carries credentials, which the Proxy object would hold in plain text. Fix: remove them: the operator "
                               "fetches readiness endpoints through the proxy without credentials")
    with pytest.raises(ClusterProxyCompileError) as info:
        compile_cluster_proxy(catalog, profile.model_copy(update={"http_proxy": "http://alice:Sup3r/S3cret@proxy.example.com:3128"}), None, False)
    assert str(info.value) == ("egress-matrix:httpProxy = 'http://(credentials hidden)@proxy.example.com:3128': parse "
                               "\"http://(credentials hidden)@proxy.example.com:3128\": invalid port \"(credentials hidden)\" after host. "
                               "Fix: write e.g. http://proxy.example.com:3128")


def test_a_lone_surrogate_in_a_proxy_url_is_an_error_not_a_traceback():
    """A YAML escape can put a lone surrogate in a setting; the redaction of Go's quoted pieces works on bytes."""
    from egress.targets.kubernetes.openshift_checks import ProxyValidationError, validate_proxy_spec

    from egress.errors import ProfileError

    url = 'http://u:p@h"\\\udcff"'
    with pytest.raises(ProxyValidationError) as error:
        validate_proxy_spec(http_proxy=url)
    assert "(credentials hidden)" in str(error.value) and "u:p" not in str(error.value)
    shown = str(ProfileError("stacks/Pulumi.x.yaml", "config", "egress-matrix:httpProxy", url, "carries credentials", "remove them"))
    assert "u:p" not in shown
