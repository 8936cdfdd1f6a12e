"""Shared pieces of the browser tests: serve the app on a loopback port, launch Debian chromium, wait for Streamlit,
sign in through the form, and record every request that leaves 127.0.0.1 (blocked)."""

from __future__ import annotations

import os
import re
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
READY = "[data-testid=stApp][data-test-script-state=notRunning]"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Served:
    """A running app: its base URL and server process."""

    url: str
    process: subprocess.Popen


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    """A throwaway certificate and key for 127.0.0.1 (openssl), for serving the app over HTTPS in a test."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    return cert, key


@dataclass
class ServerOutput:
    """What a server process printed, and an event set once it prints the line naming its address (or exits)."""

    ready: threading.Event = field(default_factory=threading.Event)
    lines: list[str] = field(default_factory=list)


def listening(process: subprocess.Popen, marker: str) -> ServerOutput:
    """Read `process`'s output on a thread until it ends: set `ready` at the first line containing `marker`
    (Streamlit prints its URL once the server listens) or when the output ends (it exited)."""
    output = ServerOutput()

    def read() -> None:
        for line in process.stdout or ():
            output.lines.append(line)
            if marker in line:
                output.ready.set()
        output.ready.set()

    threading.Thread(target=read, daemon=True).start()
    return output


@contextmanager
def serve(database_url: str, tls: tuple[Path, Path] | None = None, **env: str) -> Iterator[Served]:
    """`python -m ui.serve` on a free loopback port against `database_url` (first start off unless `env` says);
    over HTTPS with `tls` (certificate, key)."""
    port = free_port()
    environment = {**os.environ, "GAUNTLET_DATABASE_URL": database_url, "GAUNTLET_FIRST_START": "0",
                   "GAUNTLET_VERIFY_OVERLAP": "0", **env}
    own_tls = ["--server.sslCertFile", str(tls[0]), "--server.sslKeyFile", str(tls[1])] if tls else []
    process = subprocess.Popen(
        [sys.executable, "-m", "ui.serve", "--server.port", str(port), "--server.address", "127.0.0.1",
         "--server.headless", "true", "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none",
         *own_tls],
        cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    url = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    output = listening(process, f":{port}")
    if not output.ready.wait(timeout=60) or process.poll() is not None:
        process.terminate()
        pytest.fail(f"streamlit did not start within 60 s: {''.join(output.lines[-20:])}")
    unverified = ssl._create_unverified_context()  # the throwaway certificate
    urllib.request.urlopen(f"{url}/_stcore/health", timeout=30, context=unverified)  # it says it listens: it answers
    try:
        yield Served(url, process)
    finally:
        process.terminate()
        process.wait(timeout=20)


def require_chromium() -> None:
    if not CHROMIUM.exists():
        pytest.fail("/usr/bin/chromium is missing: install it with `apt-get install -y chromium` (never "
                    "`playwright install`)")


@dataclass
class OffHost:
    """Requests to any host but 127.0.0.1, blocked before they leave."""

    blocked: list[str] = field(default_factory=list)

    def route(self, route) -> None:
        if urlsplit(route.request.url).scheme in ("data", "blob") or urlsplit(route.request.url).hostname == "127.0.0.1":
            route.continue_()
        else:
            self.blocked.append(route.request.url)
            route.abort()


def new_context(browser, off_host: OffHost | None = None, width: int = 1440, height: int = 1000,
                storage_state: dict | None = None):
    """A browser context at `width` px (with the cookies of `storage_state`, if given) that blocks (and records in
    `off_host`) every request off 127.0.0.1."""
    context = browser.new_context(viewport={"width": width, "height": height}, storage_state=storage_state)
    context.set_default_timeout(20_000)
    context.route("**/*", (off_host or OffHost()).route)
    return context


# Counts, in the page, the script runs the browser asks for (BackMsg rerun_script, field 11) and the runs the server
# says have ended (ForwardMsg script_finished, field 6), in the order they happen, from the first byte of the first
# WebSocket: `settle` waits until the last run asked for has ended, a condition and not a time.
RUN_WATCH = """(() => {
  if (window.__gauntletRuns) return;
  const runs = window.__gauntletRuns = {seq: 0, asked: 0, ended: 0};
  const bytes = (d) => d instanceof ArrayBuffer ? new Uint8Array(d)
    : ArrayBuffer.isView(d) ? new Uint8Array(d.buffer, d.byteOffset, d.byteLength) : null;
  const varint = (b, at) => { let v = 0, k = 1, x; do { x = b[at.i++]; v += (x & 0x7f) * k; k *= 128; } while (x & 0x80 && at.i < b.length); return v; };
  const has = (b, field) => {  // whether a top-level protobuf field `field` is present
    const at = {i: 0};
    while (b && at.i < b.length) {
      const tag = varint(b, at), wire = tag & 7;
      if (Math.floor(tag / 8) === field) return true;
      if (wire === 0) varint(b, at); else if (wire === 2) at.i += varint(b, at);
      else if (wire === 1) at.i += 8; else if (wire === 5) at.i += 4; else return false;
    }
    return false;
  };
  const Native = window.WebSocket;
  class Watched extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (event) => {
        const note = (d) => { if (has(bytes(d), 6)) runs.ended = ++runs.seq; };
        if (event.data instanceof Blob) event.data.arrayBuffer().then(note); else note(event.data);
      });
    }
    send(data) {
      if (has(bytes(data), 11)) runs.asked = ++runs.seq;
      return super.send(data);
    }
  }
  window.WebSocket = Watched;
})();"""
SETTLED = f"""() => {{
  const runs = window.__gauntletRuns;
  return document.querySelector({READY!r}) !== null && (!runs || runs.ended > runs.asked);
}}"""


def instrument(browser):
    """Give every context and page `browser` opens the run watch (RUN_WATCH) that `settle` reads; returns it."""
    if getattr(browser, "_gauntlet_watched", False):
        return browser
    new_context, new_page = browser.new_context, browser.new_page

    def watched_context(*args, **kwargs):
        context = new_context(*args, **kwargs)
        context.add_init_script(RUN_WATCH)
        return context

    def watched_page(*args, **kwargs):
        page = new_page(*args, **kwargs)
        page.add_init_script(RUN_WATCH)
        return page

    browser.new_context, browser.new_page = watched_context, watched_page
    browser._gauntlet_watched = True
    return browser


def launch(playwright, **options):
    """Headless Debian chromium whose pages carry the run watch."""
    require_chromium()
    args = [*CHROMIUM_ARGS, *options.pop("extra_args", [])]
    return instrument(playwright.chromium.launch(executable_path=str(CHROMIUM), args=args, **options))


_SHARED: dict[str, object] = {}  # this process's one Playwright driver and the module's one chromium


def shared_playwright():
    """This process's Playwright driver (sync API: one per thread), started on first use; `close_shared` stops it."""
    if "playwright" not in _SHARED:
        from playwright.sync_api import sync_playwright

        _SHARED["playwright"] = sync_playwright().start()
    return _SHARED["playwright"]


def close_shared() -> None:
    """Close the shared chromium and stop the driver (a running driver holds an asyncio loop on this thread)."""
    browser, playwright = _SHARED.pop("browser", None), _SHARED.pop("playwright", None)
    if browser is not None:
        browser.close()
    if playwright is not None:
        playwright.stop()


@pytest.fixture(scope="module", autouse=True)
def one_browser_per_module() -> Iterator[None]:
    """Every `chromium()` block of a module uses one browser, closed (with the driver) when the module ends."""
    yield
    close_shared()


@contextmanager
def chromium():
    """The module's headless Debian chromium (launched on first use) for the block; the contexts and pages the block
    opened are closed when it ends, so each block starts with no cookies, storage or tabs of another."""
    if "browser" not in _SHARED or not _SHARED["browser"].is_connected():
        _SHARED["browser"] = launch(shared_playwright())
    browser = _SHARED["browser"]
    before = set(browser.contexts)
    try:
        yield browser
    finally:
        for context in browser.contexts:
            if context not in before:
                context.close()


def settle(page, timeout: int = 30_000) -> None:
    """Wait until every script run the page has asked for has ended and the app shows it is not running (the run
    watch of `instrument`; on a page without it, the not-running state alone)."""
    page.wait_for_function(SETTLED, timeout=timeout)


def charts_drawn(page, timeout: int = 30_000) -> None:
    """Wait until every plotly chart on the page has drawn its traces (plotly's resolved data and its SVG layers)."""
    page.wait_for_function("""() => [...document.querySelectorAll('.js-plotly-plot')].every(
        c => c._fullData && c._fullLayout && c.querySelector('.main-svg') !== null)""", timeout=timeout)


def submit_sign_in(page, username: str, password: str) -> None:
    """Fill the sign-in form and submit it."""
    page.get_by_role("textbox", name="Username").fill(username)
    page.get_by_role("textbox", name="Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    settle(page)


def sign_in(page, url: str, username: str, password: str) -> None:
    """Open `url` and sign in through the form."""
    page.goto(url)
    settle(page)
    submit_sign_in(page, username, password)
    page.get_by_text(f"Signed in as {username}").wait_for(timeout=30_000)


def open_page(page, link: str) -> None:
    """Follow a sidebar link, wait until the address is the link's (the app has switched pages), then until the run
    has ended."""
    anchor = page.get_by_role("link", name=link, exact=True)
    target = urlsplit(urljoin(page.url, anchor.get_attribute("href") or "")).path.rstrip("/")
    anchor.click()
    page.wait_for_url(lambda address: urlsplit(address).path.rstrip("/") == target)
    settle(page)


def choose(page, label: str, option: str, scope=None) -> None:
    """Pick `option` in the Streamlit selectbox labelled `label`."""
    where = scope or page
    where.get_by_label(label, exact=True).click()
    page.get_by_role("option", name=option, exact=True).click()


def pick(page, label: str, option, timeout: float = 90) -> None:
    """Open the multiselect `label` and pick `option`, opening and clicking again until the pick shows as a chip in
    the box (under load the first click can come before the widget listens, or the list can re-render under it);
    fail naming the option when it never lands."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    box = page.get_by_label(label, exact=True)
    widget = page.get_by_test_id("stMultiSelect").filter(has=box)
    chip = widget.locator("[data-tag]").filter(has_text=option)
    deadline = time.time() + timeout
    while time.time() < deadline:
        settle(page, timeout=60_000)
        if chip.count():
            break
        box.click()
        try:
            page.get_by_role("option", name=option).first.click(timeout=5_000)
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
            continue
        page.keyboard.press("Escape")
        try:
            chip.first.wait_for(timeout=10_000)
            break
        except PlaywrightTimeout:
            continue
    else:
        pytest.fail(f"the option {option!r} of {label!r} never showed as picked within {timeout:.0f} s")
    settle(page)


def wait_until(check, what: str, timeout: float = 30) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if check():
            return
        time.sleep(0.25)
    pytest.fail(f"timed out waiting for {what}")


SHOT_TIMEOUT = 120_000  # ms: a screenshot of a large page at load 18 has taken more than the contexts' 20 s


def drawn(page) -> None:
    """Wait until the page's fonts are loaded and two animation frames have passed (what is laid out is painted)."""
    page.evaluate("() => document.fonts.ready.then(() => new Promise(done => "
                  "requestAnimationFrame(() => requestAnimationFrame(done))))")


def shot(page, folder: str, name: str) -> Path:
    """A full-page screenshot under test-artifacts/<folder>/<name>.png, once the page is drawn."""
    path = ARTIFACTS / folder / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    drawn(page)
    page.screenshot(path=str(path), full_page=True, timeout=SHOT_TIMEOUT)
    return path


def _current_test() -> str:
    """The running test's id as a file name (from PYTEST_CURRENT_TEST)."""
    test = os.environ.get("PYTEST_CURRENT_TEST", "test").split(" ")[0].split("::", 1)[-1]
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", test)


@contextmanager
def shot_on_failure(page, folder: str = "failures") -> Iterator[None]:
    """Save the screen of `page` (test-artifacts/<folder>/<test id>.png) if the block fails, then let the failure go
    on: a passing test takes no screenshot it does not assert on; a failing one leaves what the browser showed."""
    try:
        yield
    except BaseException:
        name = _current_test()
        path = ARTIFACTS / folder / f"{name}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            page.screenshot(path=str(path), timeout=SHOT_TIMEOUT)
        except Exception as error:  # noqa: BLE001 - the test's own failure is the one to report
            print(f"no failure screenshot of {name}: {error}")
        raise
