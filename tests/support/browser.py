"""Headless Chromium driven by selenium, for the view's browser test and its benchmark.

Chromium and chromedriver come from Debian's packages (``chromium``, ``chromium-driver``;
``.ci/ensure-chromium`` installs them where it may). selenium is told both paths, so its
Selenium Manager never runs and nothing is downloaded.

The flags matter on a closed network: without ``--disable-background-networking`` and
friends Chromium's own background requests are refused and slow every start.

``unavailable()`` says why a browser test cannot run here (the test then skips with that
reason); ``chromium()`` starts a browser with a fresh profile and always quits it;
``requested_urls()`` lists every URL the page asked for, from Chrome's performance log.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["CHROMEDRIVER", "CHROMIUM", "FLAGS", "chromium", "requested_urls", "unavailable"]

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage")


def unavailable() -> str | None:
    """Why no browser test can run here, or None when one can."""
    if importlib.util.find_spec("selenium") is None:
        return "selenium is not installed (it is in the 'test' extra: pip install -e '.[test]')"
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not os.access(path, os.X_OK):
            return (f"{path} is missing: install Debian's {package} package "
                    "(.ci/ensure-chromium does it when run as root with apt-get)")
    return None


@contextlib.contextmanager
def chromium(*, width: int = 1400, height: int = 900) -> Iterator[Any]:
    """A headless Chromium (a selenium ``WebDriver``) with a fresh profile and the performance log on."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="dsctl-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, f"--window-size={width},{height}", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def requested_urls(driver: Any, *, document: str = "") -> list[str]:
    """Every URL requested since the last call (the performance log is drained) by documents whose
    URL starts with ``document`` (all when empty). The filter leaves out Chromium's own pages
    (its new-tab page at start-up), whose requests never reach the network with the flags above."""
    urls: list[str] = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") != "Network.requestWillBeSent":
            continue
        params = message["params"]
        if str(params.get("documentURL") or "").startswith(document):
            urls.append(str(params["request"]["url"]))
    return urls
