"""/docs and /redoc in a real browser with the network cut off: the API's documentation comes from this
service's own files (grader/web/static/vendor/), not from a CDN."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.web.conftest import BrowserLog, screenshot

pytestmark = pytest.mark.docker


def offline(page: Any, live_server: str) -> list[str]:
    """Every request to another host is refused; returns the URLs that were tried."""
    own = urlsplit(live_server).netloc
    tried: list[str] = []

    def route(request_route: Any) -> None:
        url = request_route.request.url
        if urlsplit(url).netloc == own or url.startswith(("data:", "blob:")):
            request_route.continue_()
        else:
            tried.append(url)
            request_route.abort()

    page.route("**/*", route)
    return tried


def test_swagger_ui_renders_every_route_without_a_network(page: Any, live_server: str, browser_log: BrowserLog) -> None:
    tried = offline(page, live_server)
    page.goto("/docs")
    page.wait_for_selector(".swagger-ui .info .title", timeout=30_000)
    assert "torchjudge" in page.locator(".swagger-ui .info .title").inner_text()
    page.wait_for_selector(".opblock-summary-path")
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert "/api/submissions" in [path.replace("\u200b", "") for path in paths]
    assert tried == [], f"the page reached out: {tried}"
    screenshot(page, "api-docs")


def test_redoc_renders_without_a_network(page: Any, live_server: str, browser_log: BrowserLog) -> None:
    tried = offline(page, live_server)
    page.goto("/redoc")
    page.wait_for_selector("h1:has-text('torchjudge')", timeout=30_000)
    assert page.get_by_text("/api/submissions", exact=False).count() > 0
    assert tried == [], f"the page reached out: {tried}"
    # ReDoc's footer shows its maker's logo from their CDN: the page's policy blocks it, nothing else.
    blocked = [v for v in browser_log.csp_violations if "https://cdn.redoc.ly/" not in v]
    assert blocked == [], blocked
    browser_log.csp_violations.clear()
