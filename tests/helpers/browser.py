"""A real browser for the UI tests: Debian's chromium, driven by Playwright.

Playwright's own browser download cannot work here, so it launches the system chromium
(`.ci/install-browser` installs it; the README's test command runs that first). A missing
chromium fails the tests that need it: it never skips them.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, ConsoleMessage, Dialog, Page, Playwright

from tests.helpers.paths import REPO

CHROMIUM_ENV = "SEARCHSVC_TEST_CHROMIUM"
# Without the background-networking flags chromium keeps trying to reach Google's hosts, which
# this machine's closed network refuses; --no-sandbox because CI runs as root.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = REPO / "tests" / "screenshots"  # git-ignored; docs/screenshots holds the committed copies
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
TIMEOUT_MS = 15_000  # per action and expectation; the machine is small and shared


def chromium_executable() -> str:
    path = os.environ.get(CHROMIUM_ENV) or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        pytest.fail(f"no chromium at {path}: run .ci/install-browser (the README's test command runs it first)")
    return path


def launch(playwright: Playwright) -> Browser:
    return playwright.chromium.launch(executable_path=chromium_executable(), args=CHROMIUM_ARGS)


@dataclass
class WatchedPage:
    """A page, and what it did that no test may overlook: dialogs opened, script errors,
    console errors (chromium reports a Content-Security-Policy violation as one)."""

    page: Page
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def _dialog(self, dialog: Dialog) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.errors.append(f"console: {message.text}")


def watch(context: BrowserContext) -> WatchedPage:
    context.set_default_timeout(TIMEOUT_MS)
    watched = WatchedPage(context.new_page())
    watched.page.on("dialog", watched._dialog)
    watched.page.on("console", watched._console)
    watched.page.on("pageerror", lambda error: watched.errors.append(f"script: {error}"))
    return watched


def screenshot(page: Page, name: str, full_page: bool = True) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path
