"""Headless Chromium for the browser tests (Debian's chromium and chromium-driver; `make browser-deps`).

Every page a test visits is saved as a full-page screenshot under test-output/screenshots/ (git-ignored), to
look at: a test can assert the numbers, not that a page reads well.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
SCREENSHOTS = Path(__file__).resolve().parent.parent / "test-output" / "screenshots"
WIDTH, MIN_HEIGHT, MAX_HEIGHT = 1366, 900, 6000
CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def require_chromium() -> None:
    """Skip when chromium is missing, unless CI is set: there a missing browser is a failure, not a skip."""
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not os.access(path, os.X_OK)]
    if missing:
        reason = f"browser tests need {' and '.join(missing)} (apt-get install chromium chromium-driver, or make browser-deps)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)


class Browser:
    def __init__(self, base_url: str, profile_dir: Path):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in CHROMIUM_FLAGS:
            options.add_argument(flag)
        options.add_argument(f"--user-data-dir={profile_dir}")
        options.add_argument(f"--window-size={WIDTH},{MIN_HEIGHT}")
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        self.base_url = base_url

    def visit(self, path: str, screenshot: str) -> None:
        self.driver.get(self.base_url + path)
        self.screenshot(screenshot)

    def screenshot(self, name: str) -> Path:
        """The whole page: the window grows to the document's height (plus the window's own frame) first."""
        height, frame = self.driver.execute_script(
            "return [document.documentElement.scrollHeight, window.outerHeight - window.innerHeight]"
        )
        self.driver.set_window_size(WIDTH, max(MIN_HEIGHT, min(height, MAX_HEIGHT)) + frame)
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        self.driver.save_screenshot(str(path))
        self.driver.set_window_size(WIDTH, MIN_HEIGHT)
        return path

    def find(self, css: str):
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.CSS_SELECTOR, css)

    def click(self, css: str, screenshot: str) -> None:
        """Click, wait for the next page, and save it."""
        from selenium.webdriver.support.ui import WebDriverWait

        element = self.find(css)
        element.click()
        WebDriverWait(self.driver, 10).until(_left_the_page(element))
        self.screenshot(screenshot)

    def log_in(self, username: str, password: str, screenshot: str) -> None:
        """On the admin's login page (where /stats/ and the admin send anonymous visitors)."""
        self.find("#id_username").send_keys(username)
        self.find("#id_password").send_keys(password)
        self.click("#login-form [type=submit]", screenshot)

    def quit(self) -> None:
        self.driver.quit()


def _left_the_page(element):
    """Wait condition: `element` belongs to a page the browser has left. Selenium's staleness_of expects
    StaleElementReferenceException; chromedriver 156 may instead answer "Node with given id does not belong
    to the document" when asked while the next page loads (a test failed on it, in one run of seven)."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException

    def gone(_driver) -> bool:
        try:
            element.is_enabled()
        except StaleElementReferenceException:
            return True
        except WebDriverException as exc:
            if "does not belong to the document" in str(exc):
                return True
            raise
        return False

    return gone
