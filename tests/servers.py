"""Real local servers for tests, and the browser capabilities to drive them.

The process management lives in ``explorers.local_servers`` (the demo job and nightly runs use it too) and the
capability builders in ``explorers.capabilities``; both are re-exported here for the tests.
"""

from __future__ import annotations

from explorers.capabilities import (  # noqa: F401 - re-exported for tests
    CHROMEDRIVER_BINARY,
    CHROMIUM_BINARY,
    DEFAULT_WINDOW,
    appium_chromium_options,
    chrome_options,
    chromium_args,
    free_port,
)
from explorers.local_servers import (  # noqa: F401 - re-exported for tests
    APPIUM_BINARY,
    APPIUM_CHROMIUM_DRIVER_DIR,
    APPIUM_DIR,
    APPIUM_HOME,
    LOOPBACK,
    REPO_ROOT,
    ManagedProcess,
    http_get,
    start_appium,
    start_chromedriver,
    start_demo_app,
    start_process,
    wait_until_ready,
)
