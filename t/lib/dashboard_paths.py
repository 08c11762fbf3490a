#!/usr/bin/python3
"""The dashboard's addresses in a real browser (t/071-dashboard-paths.t).

Headless Chromium (t/lib/dashboard.py's driver) against nginx and Redis
that t/071 started:
- the page opened at a crafted address, //HOST:PORT/..%2Frl/, which
  nginx serves as /rl/: the page reads its API from its own origin (the
  rules are listed) and never asks HOST (the listener t/071 watches);
- keys "." and ".." (a path cannot carry them) in the top list are looked
  up, blocked and unblocked from the page.
Prints TAP lines for t/071.

    dashboard_paths.py --crafted URL --page URL --limited URL --rule NAME
                       --dot KEY
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dashboard  # noqa: E402
from dashboard import (click_row, console_clean, report, rows,  # noqa: E402
                       status_of, until)

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402


def run(driver, args):
    # a crafted address: the API still comes from the page's origin
    driver.get(args.crafted)
    got = until(lambda: rows(driver, "rules"))
    report(got and any(r and r[0].split(" ")[0] == args.rule for r in got),
           "opened at %s, the page lists the rules" % args.crafted,
           got)
    console_clean(driver, "no error in the console (no fetch refused)")

    # the page's own address, then the top list's "." and ".."
    driver.get(args.page)
    for key in args.dot:
        top = until(lambda: [r for r in rows(driver, "top")
                             if r and r[0] == key])
        report(top, "the top list shows %r" % key, rows(driver, "top"))
        if not click_row(driver, "#top tbody tr", lambda text: text == key,
                         inner=".//button[text()='look up']"):
            continue
        state = until(lambda: driver.find_element(By.ID, "keystate").text)
        report(state and "remaining" in state and "0" in state,
               "%r looked up: its state" % key, state)
        msg = driver.find_element(By.ID, "keymsg").text
        report("error" not in driver.find_element(By.ID, "keymsg")
               .get_attribute("class"), "%r: no error" % key, msg)

    # a key of its own blocked, then unblocked, from the key panel
    Select(driver.find_element(By.ID, "keyrule")).select_by_value(
        json.dumps(["main", args.rule], separators=(",", ":")))
    box = driver.find_element(By.ID, "keyvalue")
    box.clear()
    box.send_keys(".")
    driver.find_element(By.ID, "reset").click()
    until(lambda: "usage reset" in driver.find_element(By.ID,
                                                        "keymsg").text)
    report(status_of(args.limited, ".") == 200, "'.' passes once reset")
    driver.find_element(By.ID, "block").click()
    report(until(lambda: "BLOCKED" in
                 driver.find_element(By.ID, "keystate").text),
           "'.' blocked from the page",
           driver.find_element(By.ID, "keymsg").text)
    report(status_of(args.limited, ".") == 429, "then '.' is a 429")
    driver.find_element(By.ID, "unblock").click()
    until(lambda: "unblocked" in driver.find_element(By.ID, "keymsg").text)
    report(status_of(args.limited, ".") == 200, "unblocked: '.' passes")
    console_clean(driver)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--crafted", required=True)
    ap.add_argument("--page", required=True)
    ap.add_argument("--limited", required=True)
    ap.add_argument("--rule", required=True)
    ap.add_argument("--dot", action="append", required=True)
    dashboard.drive(run, ap.parse_args())


if __name__ == "__main__":
    sys.exit(main())
