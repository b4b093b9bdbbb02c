"""The documentation says what the code does: every relative link leads to a file (and heading) that exists, and the
settings table of docs/operating.md names every environment variable the code reads."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "clients" / "python" / "README.md",
    ROOT / "clients" / "typescript" / "README.md",
    *sorted((ROOT / "eval").rglob("README.md")),
]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
SETTING = re.compile(r"""["'](HAKI_[A-Z0-9_]+|DATABASE_URL[A-Z0-9_]*|DJANGO_SECRET_KEY)["']""")
CODE_FOLDERS = ("config", "hakimem", "facts", "traces", "context", "stats", "integrations")


def outside_code_blocks(text: str) -> list[str]:
    lines, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def anchors(page: Path) -> set[str]:
    """GitHub's heading ids: lower case, punctuation dropped, spaces as hyphens, repeats numbered."""
    seen: dict[str, int] = {}
    for line in outside_code_blocks(page.read_text()):
        if match := re.match(r"#{1,6} (.+)", line):
            slug = re.sub(r"[^\w\- ]", "", match.group(1).strip().lower()).replace(" ", "-")
            seen[slug] = seen.get(slug, -1) + 1
            if seen[slug]:
                seen[f"{slug}-{seen[slug]}"] = 0
    return set(seen)


def test_every_relative_link_leads_to_a_file_and_heading_that_exist():
    broken = []
    for page in PAGES:
        for line in outside_code_blocks(page.read_text()):
            for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
                if re.match(r"[a-z]+:", target):
                    continue  # https:, mailto:: not checked here (no network in tests)
                path, _, anchor = target.partition("#")
                linked = (page.parent / path).resolve() if path else page
                if not linked.exists():
                    broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
                elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                    broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_the_settings_table_names_every_variable_the_code_reads():
    read = set()
    for folder in CODE_FOLDERS:
        for source in (ROOT / folder).rglob("*.py"):
            if "migrations" not in source.parts:
                read |= set(SETTING.findall(source.read_text()))
    page = (ROOT / "docs" / "operating.md").read_text()
    table = page[page.index("## Settings") :]
    table = table[: table.index("\n## ", 1)]
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", table))
    assert read, "no setting found: the code folders moved?"
    assert sorted(read - documented) == []
