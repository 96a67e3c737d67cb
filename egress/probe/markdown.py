"""A probe report as Markdown for one pull-request or ticket comment, in the shape of ``egress diff``'s (pure)."""
from __future__ import annotations


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _line(r: dict) -> str:
    entries = ", ".join(r["entries"]) or "-"
    return f"| `{_cell(r['check'])}` | {r['via'] or '-'} | {_cell(entries)} | {_cell(r['detail'])} |"


def markdown(report: dict) -> str:
    c = report["counts"]
    failed = [r for r in report["results"] if r["status"] == "failed"]
    lines = [f"### egress probe: `{report['stack']}` role `{report['role']}`: {'pass' if report['ok'] else 'FAIL'}", "",
             f"**Checks** {c['ok']} ok · {c['failed']} failed · {c['inconclusive']} inconclusive · {c['not-probed']} not probed"]
    required = [r for r in failed if r["expect"] == "allow"]
    leaked = [r for r in failed if r["expect"] == "deny"]
    if leaked:
        lines += ["", "#### :x: Near misses that got through (the firewall is not enforcing)", "",
                  *(f"- `{_cell(r['check'])}` via {r['via']}: {_cell(r['why'])}; {_cell(r['detail'])}" for r in leaked)]
    if required:
        lines += ["", "#### :x: Requirements not reachable", "", "| Check | Via | Entries | What failed |", "|---|---|---|---|",
                  *(_line(r) for r in required)]
    if not failed:
        lines += ["", "Every probed requirement is reachable and every near miss is denied."]
    for status, title in (("inconclusive", "inconclusive"), ("not-probed", "not probed")):
        rows = [r for r in report["results"] if r["status"] == status]
        if rows:
            lines += ["", f"<details><summary>{len(rows)} {title}</summary>", "", "| Check | Via | Entries | Why |", "|---|---|---|---|",
                      *(_line(r) for r in rows), "", "</details>"]
    ok = [r for r in report["results"] if r["status"] == "ok"]
    if ok:
        lines += ["", f"<details><summary>{len(ok)} ok</summary>", "", "| Check | Via | Entries | Result |", "|---|---|---|---|",
                  *(_line(r) for r in ok), "", "</details>"]
    return "\n".join(lines) + "\n"
