"""A probe report as Markdown for one pull-request or ticket comment, in the shape of ``egress diff``'s (pure).

Every text from outside goes through egress/markdown_cells.py, so a hostile proxy page cannot inject markup, links or
HTML into the comment: a check's detail (it quotes what the network answered: a proxy's status and headers, an error)
as a code span (``code_cell``), our own words as literal text (``cell``).
"""
from __future__ import annotations

from ..markdown_cells import cell, code_cell


def _line(r: dict) -> str:
    entries = ", ".join(r["entries"]) or "-"
    return f"| {code_cell(r['check'])} | {cell(r['via'] or '-')} | {cell(entries)} | {code_cell(r['detail'])} |"


def _enforcement(report: dict) -> list[str]:
    misses = [r for r in report["results"] if r["expect"] == "deny"]
    denied = sum(1 for r in misses if r["status"] == "ok")
    unsure = sum(1 for r in misses if r["status"] == "inconclusive")
    if report["enforcement"] == "not proven":
        return ["", "#### :warning: Enforcement NOT proven", "",
                f"No near miss was conclusively denied ({unsure} of {len(misses)} inconclusive): nothing here shows that the "
                "firewall refuses anything. A near miss counts as denied only on the proxy's or firewall's own refusal, or, "
                "direct, when every address of its name was refused while a requirement on the same port and IP family got "
                "through to an address outside the cluster's own ranges; an allowed host refused on another port alone "
                "proves nothing (a generic port rule refuses it)."]
    if report["enforcement"] == "proven":
        return [f"Enforcement proven: {denied} of {len(misses)} near misses denied" + (f", {unsure} inconclusive." if unsure else ".")]
    return []


def markdown(report: dict) -> str:
    c = report["counts"]
    failed = [r for r in report["results"] if r["status"] == "failed"]
    lines = [f"### egress probe: {code_cell(report['stack'])} role {code_cell(report['role'])}: {'pass' if report['ok'] else 'FAIL'}", "",
             f"**Checks** {c['ok']} ok · {c['failed']} failed · {c['inconclusive']} inconclusive · {c['not-probed']} not probed"]
    required = [r for r in failed if r["expect"] == "allow"]
    leaked = [r for r in failed if r["expect"] == "deny"]
    if leaked:
        lines += ["", "#### :x: Near misses that got through (the firewall is not enforcing)", "",
                  *(f"- {code_cell(r['check'])} via {cell(r['via'])}: {cell(r['why'])}; {code_cell(r['detail'])}" for r in leaked)]
    if required:
        lines += ["", "#### :x: Requirements not reachable", "", "| Check | Via | Entries | What failed |", "|---|---|---|---|",
                  *(_line(r) for r in required)]
    enforcement = _enforcement(report)
    if enforcement and enforcement[0] == "":
        lines += enforcement
    elif enforcement:
        lines += ["", ("" if failed else "Every probed requirement is reachable. ") + enforcement[0]]
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
