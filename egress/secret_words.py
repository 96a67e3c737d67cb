"""What names a secret, in one place: the words a line of text uses for one (a CA bundle's comment, a stack file's comment
or value) and the names of query parameters and connection-string keys that hold one.

No other egress module is imported (egress/redact.py, which errors imports, imports this one).
"""
from __future__ import annotations

import re

# Words that say the text around them holds a secret: password (any spelling: 'passwd', 'DB_PASSWORD', German
# 'Passwort', 'Kennwort'), 'pw'/'pwd', passphrase, secret, token, credential(s), api key, login, bearer, authorization,
# and 'key: ...'/'key=...' (not openssl's 'Public-Key:', which `openssl x509 -text` pastes into bundles).
SECRET_WORD = re.compile(r"(?i)passw|kennwort|\bpass(?:phrase)?\b|passphrase|\bpwd?\b|secret|token|credential|api[ _-]?key|"
                         r"\blogin\b|\bbearer\b|authori[sz]ation|(?<!public-)(?<!public )(?<!public_)\bkey\s*[:=]")
_EDGE = "'\"()[]{}<>,.;:!?-"


def says_secret(text: str) -> bool:
    """Does ``text`` use a word for a secret (the rule a CA bundle's lines are refused by)? 'Login' alone is not one
    there: CAs are named after what they guard ('# Corp Login Proxy CA'); with a value it is (`shows_secret`)."""
    return any(found.group(0).lower() != "login" for found in SECRET_WORD.finditer(text)) or shows_secret(text)


def shows_secret(text: str) -> bool:
    """Does ``text`` (a comment or a value) name a secret and seem to give it: a secret word followed by 'word: value' /
    'word=value', or by a word holding a digit or a symbol ('the proxy password is Hunter2Hunter2', 'login: alice /
    S3cr3t-Lab!'). A word alone ('credentials: pulumi config set --secret ...', as the init template writes) shows none."""
    for found in SECRET_WORD.finditer(text):
        after = text[found.end():]
        label = re.match(r"\w*\s*[:=]\s*(?P<value>[^\s]+)", after) if not found.group(0).rstrip().endswith((":", "=")) else \
            re.match(r"\s*(?P<value>[^\s]+)", after)
        if label and len(label.group("value").strip(_EDGE)) >= 3 and label.group("value").strip(_EDGE).lower() != "pulumi":
            return True
        if any(re.search(r"[^A-Za-z]", word.strip(_EDGE)) for word in after.split()):
            return True
    return False


# Names of keys that are secrets ('AccountKey', 'SharedAccessKey', 'x-api-key', 'subscription-key'); any name ending in
# 'key' would hide 'monkey=1', 'sortkey=name' and 'hotkey=F5'.
_KEYS = ("accountkey", "accesskey", "apikey", "secretkey", "privatekey", "sharedaccesskey", "subscriptionkey", "primarykey",
         "secondarykey", "masterkey", "authkey", "signingkey", "clientkey", "encryptionkey", "sessionkey")


def secret_parameter(name: str, connection_string: bool = False) -> bool:
    """Is a query parameter (or, with ``connection_string``, a 'Key=Value;' connection-string key) named ``name`` a
    credential? Compared lower-cased without '-' and '_' ('private_token', 'client-secret', 'sessionToken', 'X-Amz-Signature',
    'AccountKey', 'SharedAccessSignature'). Short generic names ('code', 'auth', 'sig') count in a query only, so that
    'status;code=403' and 'tcp;auth=ok' in prose stay as written."""
    key = re.sub(r"[-_]", "", name.lower())
    if key.endswith(("token", "secret", "signature", "passphrase", "credential", "credentials", "password", "passwd", *_KEYS)) or \
            "passw" in key or key in ("key", "pwd", "sharedaccesssignature"):
        return True
    return not connection_string and (key.endswith("sig") or key in ("auth", "authorization", "code", "codeverifier"))
