"""An accessibility audit of a page as the browser shows it: axe-core, run inside chromium.

axe-core comes from the npm registry at the version and integrity hash pinned in
`tests/axe/package-lock.json` (`.ci/install-browser` installs it; the README's test command
runs that first). It is evaluated through the DevTools protocol, which the pages'
Content-Security-Policy does not govern, so the policy stays on while the audit runs.
A missing axe-core fails the tests that need it: it never skips them.
"""

from __future__ import annotations

from functools import cache

import pytest
from playwright.sync_api import Page

from tests.helpers.paths import REPO

AXE = REPO / "tests" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
_AUDITED = "__searchsvcAudited"  # marks a document audited at a width (gone with the document)

_RUN = """async () => {
  const result = await axe.run(document, {resultTypes: ["violations"]});
  return result.violations.map(v => ({
    rule: v.id,
    impact: v.impact,
    help: v.help,
    elements: v.nodes.map(n => n.target.join(" ")),
  }));
}"""


@cache
def _axe_source() -> str:
    if not AXE.exists():
        pytest.fail(f"no axe-core at {AXE}: run .ci/install-browser (the README's test command runs it first)")
    return AXE.read_text(encoding="utf-8")


def violations(page: Page) -> list[str]:
    """Each axe-core violation on the page as it is now: rule, impact, what it asks, which elements."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(_axe_source())
    found = page.evaluate(_RUN)
    return [f"{item['rule']} ({item['impact']}): {item['help']} — {', '.join(item['elements'][:5])}" for item in found]


def assert_accessible(page: Page, state: str) -> None:
    """No violation on the page as it is now; the message names the state, the width, the rules and elements."""
    found = violations(page)
    width = page.viewport_size["width"] if page.viewport_size else "?"
    assert not found, f"axe-core on {state} ({page.url}, {width} px wide):\n" + "\n".join(found)


def audit_once(page: Page, state: str) -> None:
    """`assert_accessible`, unless this document was already audited at this width."""
    width = page.viewport_size["width"] if page.viewport_size else 0
    if page.evaluate(f"() => window.{_AUDITED} === {width}"):
        return
    assert_accessible(page, state)
    page.evaluate(f"() => {{ window.{_AUDITED} = {width}; }}")
