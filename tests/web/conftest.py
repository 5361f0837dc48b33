"""Fixtures for the web tests: the real service behind uvicorn on a free localhost port, and Debian's
Chromium driven by Playwright (which cannot download a browser of its own on these machines)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from grader.config import REPO_ROOT
from tests.served import free_port, serving

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = REPO_ROOT / "artifacts" / "screenshots"
_free_port = free_port  # tests/security/test_run_flood.py takes it from here


@pytest.fixture(scope="session")
def live_server(service: Any) -> Iterator[str]:
    """The app around the session's real service (Docker sandboxes, SQLite in a tmp dir), served by uvicorn."""
    from grader.app import create_app

    with serving(create_app(service.settings, components=service)) as url:
        yield url


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        raise AssertionError(f"{CHROMIUM} is missing: run scripts/ensure-chromium.sh (scripts/setup.sh does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@dataclass
class BrowserLog:
    """What a page reported that a test should never see: script errors, CSP violations, dialogs."""

    errors: list[str] = field(default_factory=list)
    csp_violations: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


@pytest.fixture
def browser_log() -> BrowserLog:
    return BrowserLog()


@pytest.fixture
def page(browser: Any, live_server: str, browser_log: BrowserLog) -> Iterator[Any]:
    """A fresh browser profile (empty localStorage) per test, at the live server's address."""
    context = browser.new_context(base_url=live_server, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(30_000)
    tab = context.new_page()
    tab.on("pageerror", lambda error: browser_log.errors.append(str(error)))

    def on_console(message: Any) -> None:
        if "Content Security Policy" in message.text:
            browser_log.csp_violations.append(message.text)
        elif message.type == "error" and "net::ERR_ABORTED" not in message.text:
            browser_log.errors.append(message.text)

    def on_dialog(dialog: Any) -> None:
        browser_log.dialogs.append(dialog.message)
        dialog.dismiss()

    tab.on("console", on_console)
    tab.on("dialog", on_dialog)
    yield tab
    context.close()
    assert not browser_log.errors, browser_log.errors
    assert not browser_log.csp_violations, browser_log.csp_violations


def screenshot(page: Any, name: str, *, full_page: bool = True) -> Path:
    """A screenshot kept as a test artifact (artifacts/ is gitignored)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


def editor_state(page: Any) -> dict[str, Any]:
    return page.evaluate(
        "() => { const t = document.getElementById('source');"
        " return {value: t.value, start: t.selectionStart, end: t.selectionEnd}; }"
    )


def current_indent(page: Any) -> int:
    state = editor_state(page)
    before = state["value"][: state["start"]]
    line = before[before.rfind("\n") + 1 :]
    return len(line) - len(line.lstrip(" "))


def type_code(page: Any, code: str) -> None:
    """Types `code` into the focused editor with the keyboard only, the way a person would: each line
    without its leading spaces, letting Enter's auto-indent do the work and pressing Tab or Shift+Tab
    where the wanted indentation differs."""
    lines = code.strip("\n").split("\n")
    for number, line in enumerate(lines):
        text = line.lstrip(" ")
        if text:
            want = len(line) - len(text)
            have = current_indent(page)
            while have < want:
                page.keyboard.press("Tab")
                have = current_indent(page)
            while have > want:
                page.keyboard.press("Shift+Tab")
                have = current_indent(page)
            page.keyboard.type(text)
        if number < len(lines) - 1:
            page.keyboard.press("Enter")


def clear_editor(page: Any) -> None:
    page.focus("#source")
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
