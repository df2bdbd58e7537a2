"""``make screenshots`` copies the pages the Chromium tests save into docs/img/web-<page>.png:
each page it names is one a test saves, and each image docs/web.md shows is one it refreshes
(so the command and the docs cannot drift apart)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def pages() -> list[str]:
    text = (ROOT / "Makefile").read_text()
    found = re.search(r"^SCREENSHOT_PAGES := (.+)$", text, re.M)
    assert found, "the Makefile names its SCREENSHOT_PAGES"
    return found.group(1).split()


def test_every_page_is_one_a_chromium_test_saves() -> None:
    saved: set[str] = set()
    for test in ("test_web.py", "test_web_banner.py"):
        source = (ROOT / "tests" / test).read_text()
        saved |= set(re.findall(r'shot\(browser, "([a-z-]+)"\)', source))
        saved |= set(re.findall(r'SCREENSHOTS / "([a-z-]+)\.png"', source))
    assert set(pages()) <= saved, set(pages()) - saved


def test_the_docs_show_only_refreshed_images_and_every_one_exists() -> None:
    shown = set(re.findall(r"img/web-([a-z-]+)\.png", (ROOT / "docs" / "web.md").read_text()))
    assert shown and shown <= set(pages()), shown - set(pages())
    for page in pages():
        assert (ROOT / "docs" / "img" / f"web-{page}.png").is_file(), page
