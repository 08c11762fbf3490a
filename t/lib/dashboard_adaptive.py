#!/usr/bin/python3
"""An adaptive rule on the operator dashboard (t/091-adaptive.t), in
headless Chromium through Selenium: the rule is listed as learnt, and
its box draws N, the requests in flight and the p90 over time, and what
each priority level lost, as /1/rules says. Prints TAP lines.

    dashboard_adaptive.py --page URL --rule NAME [--screenshot FILE]
"""

import argparse
import json
import os
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dashboard import click_row, drive, report, rows, severe, until  # noqa

from selenium.webdriver.common.by import By


def rule_of(page, name):
    with urllib.request.urlopen(page + "1/rules", timeout=10) as res:
        for r in json.load(res):
            if r["name"] == name:
                return r
    return None


def run(driver, args):
    driver.get(args.page)
    row = until(lambda: [r for r in rows(driver, "rules")
                         if r and r[0].split(" ")[0] == args.rule])
    report(bool(row), "the adaptive rule is listed", rows(driver, "rules"))
    if not row:
        return
    report("auto" in " ".join(row[0]),
           "its limit reads learnt (auto, min to max)", row[0])
    click_row(driver, "#rules tbody tr",
              lambda t: t.split(" ")[0].split("\n")[0] == args.rule)
    box = until(lambda: driver.find_element(By.ID, "rulestate").text
                if "learnt" in driver.find_element(By.ID, "rulestate").text
                else None)
    report(bool(box), "the rule's box says its N is learnt", box)
    lines = until(lambda: driver.execute_script(
        "var s = document.querySelector('#rulestate svg.chart');"
        "if (!s) { return null; }"
        "var out = {};"
        "['n', 'inflight', 'lat'].forEach(function (c) {"
        "  var p = s.querySelector('polyline.' + c);"
        "  out[c] = p ? p.getAttribute('points').split(' ').length : 0;"
        "});"
        "return out;"))
    api = rule_of(args.page, args.rule)
    history = len(api["adaptive"]["history"]) if api else 0
    report(bool(lines) and min(lines.values()) >= 2,
           "its chart draws N, in flight and the p90: %s points "
           "(the API has %d)" % (lines, history), lines)
    levels = driver.execute_script(
            "return Array.from(document.querySelectorAll("
            "'#rulestate table.levels tbody tr')).map(function (r) {"
            "  return Array.from(r.cells).map(function (c) {"
            "    return c.textContent; }); });")
    # the level that lost most, as the API says it
    want = max(api["priorities"], key=lambda p: p["rejected"]) if api \
        else {"level": -1, "rejected": 0}
    shown = [l for l in levels if l and l[0].split(" ")[0] ==
             str(want["level"])]
    report(len(levels) == 4 and bool(shown) and want["rejected"] > 0 and
           shown[0][2] != "0",
           "what each level lost: level %d shed %s (the API: %d)"
           % (want["level"], shown[0][2] if shown else "?",
              want["rejected"]), levels)
    report(not severe(driver), "no console errors", severe(driver))
    if args.screenshot:
        driver.find_element(By.ID, "rulebox").screenshot(args.screenshot)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--page", required=True)
    ap.add_argument("--rule", required=True)
    ap.add_argument("--screenshot")
    drive(run, ap.parse_args())


if __name__ == "__main__":
    main()
