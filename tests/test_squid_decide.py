"""The squid.conf evaluator's first-match decision, indexed (issue 19: thousands of own entries over a hundred source
groups made every probe read every line and every name), gives the decisions and notes of the line-by-line reading
it replaced (``line_by_line`` below, as it was), on generated configurations built to collide: exact and ``.x``
names (any case), generated and other regexes, negations, undefined ACLs, types the evaluator does not read, ``all``.
"""
from __future__ import annotations

import importlib

from hypothesis import given
from hypothesis import strategies as st

from egress.targets.kubernetes.evaluate import _matches, _parse

kubernetes_evaluate = importlib.import_module("egress.targets.kubernetes.evaluate")  # the package exports a function so named


def line_by_line(acls, access, request: dict, assumed: set[str]) -> tuple[bool, str]:
    """kubernetes/evaluate.py ``_decide`` before the index: every ACL of every line read, in order."""
    for action, names in access:
        verdicts = []
        for name in names:
            negate = name.startswith("!")
            key = name[1:] if negate else name
            if key == "all":
                verdicts.append(not negate)
                continue
            if key not in acls:
                assumed.add(f"http_access uses an undefined ACL '{key}' (Squid refuses the file)")
                verdicts.append(False)
                continue
            matched = _matches(acls[key], request)
            if matched is None:
                assumed.add(f"ACL '{key}' of type {acls[key][0]} is not judged offline: its lines match nothing here")
                matched = False
            verdicts.append(matched != negate)
        if all(verdicts):
            return action == "allow", f"http_access {action} {' '.join(names)}"
    return False, "no http_access line matched"


LABELS = ["x", "y", "Ex", "com"]
NAMES = st.lists(st.sampled_from(LABELS), min_size=1, max_size=3).map(".".join)
VALUES = {
    "src": st.lists(st.sampled_from(["10.0.0.0/24", "10.0.0.5", "10.1.0.0/16", "all"]), min_size=1, max_size=2),
    "port": st.lists(st.sampled_from(["443", "80", "8000-8100"]), min_size=1, max_size=2),
    "method": st.just(["CONNECT"]),
    "proto": st.just(["HTTP"]),
    "dstdomain": st.lists(st.one_of(NAMES, NAMES.map(lambda n: "." + n)), min_size=1, max_size=3),
    "dstdom_regex": st.lists(st.one_of(NAMES.map(lambda n: "\\." + n.replace(".", "\\.") + "$"), st.sampled_from(["^x\\.", "com$", "E"])),
                             min_size=1, max_size=2),
    "time": st.just(["MTWHF"]),
}


@st.composite
def configurations(draw):
    lines = []
    for number in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(sorted(VALUES)))
        flags = " -n -i" if kind == "dstdom_regex" and draw(st.booleans()) else " -n" if kind == "dstdomain" else ""
        lines.append(f"acl a{number} {kind}{flags} {' '.join(draw(VALUES[kind]))}")
    pool = [f"a{n}" for n in range(len(lines))] + ["undefined", "all"]
    for _ in range(draw(st.integers(1, 6))):
        names = [("!" if draw(st.booleans()) else "") + draw(st.sampled_from(pool)) for _ in range(draw(st.integers(1, 4)))]
        lines.append(f"http_access {draw(st.sampled_from(['allow', 'deny']))} {' '.join(names)}")
    if draw(st.booleans()):
        lines.append("http_access deny all")
    return "\n".join(lines) + "\n"


REQUESTS = st.fixed_dictionaries({
    "src": st.sampled_from(["10.0.0.5", "10.0.0.9", "10.1.2.3", "192.0.2.1"]), "port": st.sampled_from([443, 80, 8080]),
    "method": st.sampled_from(["CONNECT", "GET"]), "proto": st.just("HTTP"),
    "host": st.one_of(NAMES, NAMES.map(lambda n: n.upper()), NAMES.map(lambda n: n + ".")),
})


@given(configurations(), st.lists(REQUESTS, min_size=1, max_size=8))
def test_the_indexed_decision_is_the_line_by_line_one(text, requests):
    acls, access = _parse(text)
    plain = dict(acls)  # ACLs built by hand (no cached index) are decided the same way
    for request in requests:
        want_notes, got_notes, plain_notes = set(), set(), set()
        want = line_by_line(acls, access, request, want_notes)
        assert kubernetes_evaluate._decide(acls, access, request, got_notes) == want, (text, request)
        assert kubernetes_evaluate._decide(plain, access, request, plain_notes) == want, (text, request)
        assert got_notes == plain_notes == want_notes, (text, request)


def test_a_conf_is_indexed_once_for_all_its_requests(monkeypatch):
    acls, access = _parse("acl a dstdomain -n x.com .y.com\nacl b dstdom_regex -n -i \\.z\\.com$\nhttp_access allow a\nhttp_access allow b\n"
                          "http_access deny all\n")
    built = []
    original = kubernetes_evaluate._Index.__init__

    def counting(self, *args):
        built.append(1)
        original(self, *args)

    monkeypatch.setattr(kubernetes_evaluate._Index, "__init__", counting)
    decisions = [kubernetes_evaluate._decide(acls, access, {"host": host, "src": "10.0.0.1"}, set())[0]
                 for host in ("x.com", "a.x.com", "y.com", "a.y.com", "z.com", "a.z.com", "A.Z.COM")]
    assert decisions == [True, False, True, True, False, True, True]
    assert built == [1]
