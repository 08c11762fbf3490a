#!/usr/bin/python3
"""The dashboard's texts in a real browser (t/079-dashboard-texts.t).

Headless Chromium (t/lib/dashboard.py's driver and helpers) against an
nginx beside an instance t/079 made up whose name holds a bidi override
(U+202E): the page shows the instance's name with its control
characters escaped, not obeyed. Prints TAP lines for t/079.

    dashboard_texts.py --page URL --screenshot FILE
"""

import argparse
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dashboard  # noqa: E402
from dashboard import report, rows, severe, until  # noqa: E402

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

def run(driver, args):
    driver.get(args.page)

    # ------------------------------------------------- the fleet's view
    report(until(lambda: driver.find_element(By.ID, "viewfleet")
                 .is_selected()), "two instances: the fleet's view")
    names = until(lambda: len(rows(driver, "instances")) == 2
                  and sorted(r[0] for r in rows(driver, "instances")))
    report(names and "evil\\u202Egnp.exe" in names,
           "an instance's bidi override shown as \\u202E", names)
    body = driver.execute_script("return document.body.innerText")
    report("\u202e" not in body and "\u202e" not in
           driver.execute_script("return document.body.innerHTML"),
           "and nowhere obeyed on the page")

    driver.set_window_size(1400, 1100)
    driver.execute_script("window.scrollTo(0, 0)")
    driver.save_screenshot(args.screenshot)
    logs = severe(driver)
    report(not logs, "no error in the page's console", logs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--page", required=True)
    ap.add_argument("--screenshot", required=True)
    args = ap.parse_args()
    profile = tempfile.mkdtemp(prefix="rltest-chromium-")
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"),
                              options=dashboard.options(profile))
    driver.set_window_size(1400, 1000)
    try:
        run(driver, args)
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    print("1..%d" % dashboard.N)


if __name__ == "__main__":
    sys.exit(main())
