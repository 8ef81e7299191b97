"""The README stays an operator's page (a size limit), and no relative link of README.md or docs/*.md is broken."""

import glob
import os
import re

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(REPO, "README.md")
README_MAX_BYTES = 15_500  # issue 21: "at most about 15 KB"; the design notes live in docs/
PAGES = [README] + sorted(glob.glob(os.path.join(REPO, "docs", "*.md")))

FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
CODE_SPAN = re.compile(r"(`+).+?\1", re.S)
COMMENT = re.compile(r"<!--.*?-->", re.S)
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # http:, https:, mailto:, file: ...


def _prose(text):
    """The text Markdown renders as links: without fenced blocks, code spans and HTML comments."""
    return CODE_SPAN.sub("", FENCE.sub("", COMMENT.sub("", text)))


def links(text):
    return LINK.findall(_prose(text))


def anchors(text):
    """GitHub's heading anchors: lowercased, punctuation but - and _ dropped, spaces to -, repeats numbered."""
    seen, out = {}, set()
    for line in FENCE.sub("", text).splitlines():
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        slug = re.sub(r"[^\w\- ]", "", match.group(1).replace("`", "").lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        out.add(slug if count == 0 else "%s-%d" % (slug, count))
    return out


def _read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def test_readme_is_at_most_the_limit():
    size = os.path.getsize(README)
    assert size <= README_MAX_BYTES, (
        "README.md is %d bytes, over %d: move detail into docs/ and link it" % (size, README_MAX_BYTES)
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda path: os.path.relpath(path, REPO))
def test_relative_links_point_at_files_and_headings_that_exist(page):
    broken = []
    for target in links(_read(page)):
        if EXTERNAL.match(target):
            continue
        path, _, fragment = target.partition("#")
        resolved = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        if not os.path.exists(resolved):
            broken.append("%s (no such file)" % target)
        elif fragment and resolved.endswith(".md") and fragment not in anchors(_read(resolved)):
            broken.append("%s (no such heading)" % target)
    assert not broken, "%s: broken links: %s" % (os.path.relpath(page, REPO), ", ".join(broken))


def test_the_link_reader_finds_and_skips_what_markdown_does():
    text = (
        "See [a](docs/a.md), ![pic](docs/p.png \"title\") and [b](https://x.org/b).\n"
        "`[not](code.md)` <!-- [hidden](c.md) -->\n"
        "```\n[fenced](d.md)\n```\n"
    )
    assert links(text) == ["docs/a.md", "docs/p.png", "https://x.org/b"]


def test_anchors_follow_githubs_rules():
    text = "# Title\n## When things go wrong\n## `sglang_router`\n## A, b: c!\n## Title\n```\n# not a heading\n```\n"
    assert anchors(text) == {"title", "when-things-go-wrong", "sglang_router", "a-b-c", "title-1"}
