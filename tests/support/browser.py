"""Debian's chromium driven by Playwright, for the console's browser tests.

Playwright's own browser download is not used (not reachable here): the tests launch the
system's `/usr/bin/chromium` (`make test` installs it; `$CEPHEUS_CHROMIUM` overrides the path).
`Shots` saves a screenshot of every page a journey visits under `var/artifacts/screenshots/`
(`$CEPHEUS_ARTIFACTS` overrides it): test artifacts, never committed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import Browser, Page, sync_playwright

from tests.support.nodes import REPO

CHROMIUM = os.environ.get("CEPHEUS_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(os.environ.get("CEPHEUS_ARTIFACTS", REPO / "var" / "artifacts")) / "screenshots"


@contextmanager
def chromium() -> Iterator[Browser]:
    if not Path(CHROMIUM).is_file():
        msg = f"{CHROMIUM} is missing: run scripts/setup_browser.sh (make test does)"
        raise AssertionError(msg)
    args = ["--no-sandbox"] if os.geteuid() == 0 else []  # chromium refuses root without it
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)
        try:
            yield browser
        finally:
            browser.close()


class Shots:
    """Numbered full-page screenshots of a journey, in a folder of its own."""

    def __init__(self, journey: str) -> None:
        self.folder = ARTIFACTS / journey
        self.folder.mkdir(parents=True, exist_ok=True)
        for old in self.folder.glob("*.png"):
            old.unlink()
        self.count = 0

    def take(self, page: Page, name: str) -> Path:
        self.count += 1
        path = self.folder / f"{self.count:02d}-{re.sub(r'[^a-z0-9]+', '-', name.lower()).strip('-')}.png"
        page.screenshot(path=str(path), full_page=True)
        return path
