#!/usr/bin/python3
"""The dashboard's texts in a real browser (t/079-dashboard-texts.t).

Headless Chromium (t/lib/dashboard.py's driver and helpers) against an
nginx with calendar rules, beside an instance t/079 made up whose name
holds a bidi override (U+202E): the page shows a calendar rule's limit
per its period, with its time zone and anchor, in both views, and the
instance's name with its control characters escaped, not obeyed.
Prints TAP lines for t/079.

    dashboard_texts.py --page URL --screenshot FILE
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dashboard  # noqa: E402
from dashboard import (click_row, console_clean, report, rows,  # noqa: E402
                       until)

from selenium.webdriver.common.by import By  # noqa: E402

LIMIT = 4
# what the page must say of each calendar rule (its limit cell)
CALENDAR = {
    "monthly": ("1000/month", "Europe/Berlin, from the 15th"),
    "weekly": ("50/week", "UTC, from Tuesday"),
    "billing": ("20/month", "UTC, from each key's $arg_day"),
}


def limits(driver):
    """{rule: its limit cell's text} of the rules table."""
    return {r[0].split("\n")[0].split(" ")[0]: r[LIMIT]
            for r in rows(driver, "rules") if len(r) > LIMIT}


def calendar_shown(driver):
    got = limits(driver)
    return all(name in got and got[name].split("\n")[0] == limit
               and text in got[name]
               for name, (limit, text) in CALENDAR.items()) and got


def click_view(driver, which):
    driver.find_element(By.XPATH, "//input[@id='view%s']/../span"
                        % which).click()


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
    report(until(lambda: calendar_shown(driver)),
           "calendar rules per their period, with their time zone and "
           "anchor (the fleet's)", limits(driver))
    report(all("30d" not in v for v in limits(driver).values()),
           "no \"/30d\"", limits(driver))

    # ------------------------------------------------ this instance's
    click_view(driver, "instance")
    report(until(lambda: driver.find_element(By.ID, "viewinstance")
                 .is_selected() and calendar_shown(driver)),
           "the same in this instance's view", limits(driver))
    report(click_row(driver, "#rules tbody tr",
                     lambda t: t.split("\n")[0].split(" ")[0] == "monthly"),
           "the monthly rule picked")
    box = until(lambda: "period" in driver.find_element(By.ID, "rulestate")
                .text and driver.find_element(By.ID, "rulestate").text)
    report(box and "a calendar month in Europe/Berlin, from the 15th" in box
           and "1000/month as configured" in box,
           "its box says its period, time zone and anchor", box)

    click_view(driver, "fleet")
    until(lambda: len(rows(driver, "instances")) == 2)
    driver.set_window_size(1400, 1100)
    driver.execute_script("window.scrollTo(0, 0)")
    driver.save_screenshot(args.screenshot)
    console_clean(driver)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--page", required=True)
    ap.add_argument("--screenshot", required=True)
    dashboard.drive(run, ap.parse_args())


if __name__ == "__main__":
    sys.exit(main())
