"""Citations a reader can open (issue 20): every source has a public https address, every output cites that address
(never the file name of a transcribed seed copy, which exists only beside this repository), and no Markdown file of
the repository links outside it except to public https pages."""
from __future__ import annotations

import csv
import io
import json
import re
import subprocess
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from egress.catalog import load_catalog
from egress.citations import public_url_problem
from egress.docs import matrix_markdown
from egress.errors import CatalogError
from egress_preview.diff_own import requirement_source

ROOT = Path(__file__).resolve().parents[1]
SEED_FILE = re.compile(r"\b00[0-4]_[0-9a-f]{16}(\.txt)?\b")  # the five seed copies' names
STACKS = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
# What each seed is, at the commit its copy's text was read (matrix/sources.yaml).
SEED_PAGES = {
    "kkp-proxy-whitelisting": "https://github.com/kubermatic/docs/blob/816edf43c67ef910bfca1ffa97b5cbf5249c11d1/content/"
                              "kubermatic/v2.27/tutorials-howtos/networking/proxy-whitelisting/_index.en.md",
    "openshift-egress-proxy": "https://github.com/openshift/enhancements/blob/4938b44dc0373a032cae9a48dbe0f86e06f8a189/"
                              "enhancements/proxy/global-cluster-egress-proxy.md",
    "kkp-ip-allowlist": "https://github.com/kubermatic/kubermatic/issues/10407",
    "ibm-vpc-firewall": "https://github.com/ibm-cloud-docs/containers/blob/563a48fd862aaf3d563a1dcb4feeb6ba4d6a0c74/vpc-firewall.md",
    "aks-outbound": "https://github.com/MicrosoftDocs/azure-aks-docs/blob/f9be3faa3436b5bd5fb2cda4d33b5771538031f7/"
                    "articles/aks/outbound-rules-control-egress.md",
}


def _urls(catalog) -> set[str]:
    return {source.url for source in catalog.sources.values()}


# --- every source has a public address ------------------------------------------------------------------------------

def test_every_source_has_a_public_https_address(catalog):
    for source_id, source in catalog.sources.items():
        assert public_url_problem(source.url) is None, (source_id, source.url)
        assert source.cited == source.url and not SEED_FILE.search(source.url), source_id
        at = re.match(r"https://github\.com/[^/]+/[^/]+/(?:blob|tree|commits)/([^/]+)", source.url)
        if at and not re.fullmatch(r"[0-9a-f]{40}", at.group(1)):  # a branch moves: doc must say which commit or date was read
            assert re.search(r"\b[0-9a-f]{7,40}\b|\b20\d\d-\d\d-\d\d\b", source.doc), f"{source_id}: {source.url} is at a branch, doc names no commit or date"


def test_the_seeds_cite_their_public_pages_and_keep_the_transcribed_copy_as_the_record(catalog):
    assert {s: catalog.sources[s].url for s in SEED_PAGES} == SEED_PAGES
    for source_id in SEED_PAGES:
        assert SEED_FILE.search(catalog.sources[source_id].doc), source_id  # the record of what was transcribed


@pytest.mark.parametrize(("url", "problem"), [
    (None, "a source needs its public address"),
    ("", "a source needs its public address"),
    ("000_e208acb0bb847d0b.txt", "not an https address"),
    ("http://docs.example.com/page", "not an https address"),
    ("../shared/seeds/README.md", "not an https address"),
    ("https://localhost/x", "not a public web address"),
    ("https://user:pw@docs.example.com/x", "not a public web address"),
    ("https://docs.example.com:8443/x", "not a public web address"),
    ("https://docs.example.com/a page", "an address has no spaces"),
])
def test_an_address_a_reader_cannot_open_is_named(url, problem):
    assert problem in public_url_problem(url)


def test_the_loader_refuses_a_source_without_a_public_address(tmp_path):
    matrix = tmp_path / "matrix"
    matrix.mkdir()
    for path in (ROOT / "matrix").glob("*.yaml"):
        (matrix / path.name).write_text(path.read_text())
    text = (matrix / "sources.yaml").read_text()
    (matrix / "sources.yaml").write_text(text.replace(f"    url: {SEED_PAGES['kkp-ip-allowlist']}\n", "", 1))
    with pytest.raises(CatalogError, match=r"sources\.yaml: source 'kkp-ip-allowlist' \(line \d+\): field 'url' = None: "
                                           r"a source needs its public address\. Fix: write the https address"):
        load_catalog(matrix)
    (matrix / "sources.yaml").write_text(text.replace(SEED_PAGES["kkp-ip-allowlist"], "002_4dab210107f53815.txt", 1))
    with pytest.raises(CatalogError, match=r"field 'url' = '002_4dab210107f53815.txt': not an https address"):
        load_catalog(matrix)


# --- outputs cite the address ---------------------------------------------------------------------------------------

def _outside_sources(markdown: str) -> str:
    """MATRIX.md without its Sources table, which names each document's transcribed copy as its record."""
    head, marker, tail = markdown.partition("\n## Sources\n")
    assert marker
    return head


def test_matrix_md_cites_public_pages(catalog):
    text = matrix_markdown(catalog)
    assert not SEED_FILE.search(_outside_sources(text))
    cells = re.findall(r"\[`([a-z0-9-]+)`\]\(([^)]+)\) § ", text)
    assert cells and {url for _, url in cells} <= _urls(catalog)
    assert all(catalog.sources[source].url == url for source, url in cells)
    sources = text.partition("\n## Sources\n")[2]
    rows = [line for line in sources.splitlines() if line.startswith("| `")]
    assert len(rows) == len(catalog.sources)
    assert all(re.search(r"\| \[[^\]]+\]\(https://[^)]+\) \|", row) for row in rows)
    assert (ROOT / "docs" / "MATRIX.md").read_text() == text  # and the committed file is this one (no seed names)


@pytest.mark.parametrize("stack", STACKS)
def test_egress_matrix_csv_and_json_cite_public_pages(run_cli, catalog, stack):
    code, out, err = run_cli("matrix", "--stack", stack, "--format", "csv", "--project", str(ROOT))
    assert code == 0, err
    assert not SEED_FILE.search(out)
    rows = list(csv.DictReader(io.StringIO(out)))
    cited = [r for r in rows if "§" in r["citation"]]
    assert cited
    for row in cited:
        for part in row["citation"].split("; "):
            if " § " in part:
                assert part.split(" § ", 1)[0] in _urls(catalog), part
    code, out, err = run_cli("matrix", "--stack", stack, "--format", "json", "--project", str(ROOT))
    assert code == 0, err
    assert not SEED_FILE.search(out)
    for req in json.loads(out)["requirements"]:
        assert {c["url"] for c in req["citations"]} <= _urls(catalog)


def test_explain_cites_public_pages(run_cli, catalog):
    code, out, err = run_cli("explain", "mcr.microsoft.com:443", "--stack", "dev", "--project", str(ROOT))
    assert code == 0, err
    assert not SEED_FILE.search(out)
    assert f"cited: {SEED_PAGES['aks-outbound']} § Azure Global required FQDN / application rules" in out
    code, out, err = run_cli("explain", "quay.io:443", "--stack", "dev", "--project", str(ROOT))  # KKP pulls from MCR only for Azure
    assert code == 0, err
    assert f"cited: {SEED_PAGES['kkp-proxy-whitelisting']} § kubelet - Docker Images / quay.io" in out
    code, out, err = run_cli("explain", "mcr.microsoft.com:443", "--stack", "dev", "--format", "json", "--project", str(ROOT))
    assert code == 0, err
    assert not SEED_FILE.search(out)
    citations = [c for need in json.loads(out)["requirements"] for c in need["citations"]]
    assert citations and {c["url"] for c in citations} <= _urls(catalog)
    code, out, err = run_cli("explain", "--rule", "aks-core-https", "--stack", "dev", "--project", str(ROOT))
    assert code == 0, err
    assert not SEED_FILE.search(out) and SEED_PAGES["aks-outbound"] in out


def test_allowlist_exports_cite_public_pages(run_cli, catalog):
    code, out, err = run_cli("matrix", "--stack", "ibm-vpc", "--format", "json", "--project", str(ROOT))
    assert code == 0, err
    exports = json.loads(out)["allowlistExports"]
    assert exports and all(e["citation"]["url"] in _urls(catalog) for e in exports)


def test_catalog_export_gives_the_address_and_the_record(run_cli, catalog):
    code, out, err = run_cli("catalog", "export", "--project", str(ROOT))
    assert code == 0, err
    for entry in json.loads(out):
        source = next(s for s in catalog.sources.values() if s.url == entry["citation"]["url"])
        assert entry["citation"]["doc"] == source.doc


@pytest.mark.parametrize("stack", ["dev", "kkp", "openshift", "proxy-only", "aks-public"])
def test_rendered_artefacts_name_no_seed_file(run_cli, tmp_path, stack):
    code, _, err = run_cli("render", "--stack", stack, "--out", str(tmp_path), "--project", str(ROOT))
    assert code == 0, err
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files and any(p.name == "squid.conf" for p in files) is (stack in ("dev", "proxy-only"))  # the egress proxy's
    assert not [p for p in files if SEED_FILE.search(p.read_text(errors="replace"))]


def test_the_pull_request_diff_cites_the_address_and_reads_an_older_base():
    url = SEED_PAGES["aks-outbound"]
    assert requirement_source({"citations": [{"url": url, "section": "S"}]}) == f"{url} § S"
    # a base previewed with its own code from before addresses names the document in "doc"
    assert requirement_source({"citations": [{"doc": "004_8f8a3784ff8fd43c.txt", "section": "S"}]}) == "004_8f8a3784ff8fd43c.txt § S"


# --- no Markdown link leaves the repository -------------------------------------------------------------------------

LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")  # [text](target "title"), images too
REFERENCE = re.compile(r"^\s{0,3}\[[^\]\n]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)  # [label]: target
AUTOLINK = re.compile(r"<([a-zA-Z][a-zA-Z0-9+.-]*:[^>\s]+)>")
UP_PATH = re.compile(r"(?<![\w./-])(?:\.\./)+[\w.-][\w./-]*")  # a relative path climbing out, written anywhere (`../x`)


def _markdown_files() -> list[Path]:
    """The repository's Markdown files (what git tracks or would add; outside a git checkout, every file but hidden
    folders, virtualenvs and render output)."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", "*.md"], cwd=ROOT,
                            capture_output=True, text=True)
    if listed.returncode == 0:
        return sorted(ROOT / name for name in listed.stdout.split("\0") if name and (ROOT / name).is_file())
    skip = {"out", "node_modules", "venv"}
    return sorted(p for p in ROOT.rglob("*.md")
                  if not any(part.startswith(".") or part in skip for part in p.relative_to(ROOT).parts[:-1]))


def link_problems(path: Path, text: str, root: Path) -> list[str]:
    """Every link (and every ``../`` path) of one Markdown file that leads outside ``root`` or to a non-https page."""
    problems = []
    prose = re.sub(r"^(```|~~~).*?^\1", "", text, flags=re.M | re.S)  # links inside fenced code are not links
    targets = LINK.findall(prose) + REFERENCE.findall(prose) + AUTOLINK.findall(prose)
    for target in targets:
        scheme = urlsplit(target).scheme
        if target.startswith("#"):
            continue
        if scheme or target.startswith("//"):
            if scheme == "mailto":
                continue
            if public_url_problem(target):
                problems.append(f"{target}: {public_url_problem(target)}")
            continue
        relative = unquote(target.split("#", 1)[0].split("?", 1)[0])
        resolved = (root / relative.lstrip("/")) if relative.startswith("/") else (path.parent / relative)
        if not resolved.resolve().is_relative_to(root.resolve()):
            problems.append(f"{target}: outside the repository")
        elif not resolved.exists():
            problems.append(f"{target}: no such file in the repository")
    for climbing in UP_PATH.findall(text):
        if not (path.parent / climbing).resolve().is_relative_to(root.resolve()):
            problems.append(f"{climbing}: outside the repository")
    return problems


def test_no_markdown_file_links_outside_the_repository():
    files = _markdown_files()
    assert ROOT / "README.md" in files and ROOT / "docs" / "MATRIX.md" in files
    problems = {str(p.relative_to(ROOT)): link_problems(p, p.read_text(), ROOT) for p in files}
    assert {name: found for name, found in problems.items() if found} == {}


def test_the_link_check_finds_what_leaves(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "here.md").write_text("x")
    page = tmp_path / "docs" / "page.md"
    text = ("[ok](here.md) [top](#a) [web](https://example.org/x) <https://example.org/y> [m](mailto:a@example.org)\n"
            "See `../../shared/DESIGN.md` and [up](../../shared/x.md) and [gone](missing.md) and [plain](http://example.org)\n"
            "[ref]: ../../elsewhere.md\n```\n[in code](../../code.md)\n```\n")
    assert link_problems(page, text, tmp_path) == [
        "../../shared/x.md: outside the repository", "missing.md: no such file in the repository",
        "http://example.org: not an https address", "../../elsewhere.md: outside the repository",
        "../../shared/DESIGN.md: outside the repository", "../../shared/x.md: outside the repository",
        "../../elsewhere.md: outside the repository", "../../code.md: outside the repository",
    ]
