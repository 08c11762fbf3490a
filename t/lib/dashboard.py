#!/usr/bin/python3
"""The operator dashboard in a real browser (t/055-dashboard.t).

Headless Chromium driven by Selenium (Debian's chromium, chromium-driver
and python3-selenium) against the page rl_api serves, with a real nginx
and Redis behind it that t/055 started and loaded. It does what an
operator would, and checks what the page shows and what the server then
does; prints TAP lines ("ok N - ...", "not ok N - ...", "# ...") for
t/055 to pass on.

    dashboard.py --page URL --limited URL --screenshot FILE
                 --rule NAME --rejected KEY --client KEY
"""

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

N = 0
# the rules table's columns: rule, zone, key, algorithm, limit, passed/s,
# rejected/s, rejected, share rejected, what-if (, instances)
WHATIF = 9


def report(ok, what, detail=None):
    global N
    N += 1
    print(("ok" if ok else "not ok") + " %d - %s" % (N, what), flush=True)
    if not ok and detail is not None:
        for line in str(detail).splitlines():
            print("# " + line, flush=True)
    return ok


def until(fn, timeout=15.0, interval=0.1):
    """fn() until it is true (returns it) or the deadline passes (None)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            got = fn()
        except WebDriverException:
            got = None
        if got:
            return got
        if time.monotonic() >= deadline:
            return None
        time.sleep(interval)


def status_of(url, key):
    req = urllib.request.Request(url, headers={"X-Key": key})
    try:
        with urllib.request.urlopen(req, timeout=10) as res:
            return res.status
    except urllib.error.HTTPError as e:
        return e.code


def severe(driver):
    """The page's console errors."""
    return [e for e in driver.get_log("browser")
            if e.get("level") == "SEVERE"]


def console_clean(driver, what="no error in the page's console"):
    """A step: the page's console has no error."""
    logs = severe(driver)
    return report(not logs, what, logs)


def rows(driver, table):
    """The cells' text of a table's body, read at once (the page redraws
    it every two seconds: element by element, a read would go stale)."""
    return driver.execute_script(
        "return Array.from(document.querySelectorAll("
        "'#' + arguments[0] + ' tbody tr')).map(function (tr) {"
        "  return Array.from(tr.cells).map(function (td) {"
        "    return td.innerText; }); });", table)


def click_row(driver, rows_css, first, inner=None, timeout=15.0):
    """Clicks the first row of rows_css whose first cell's text passes
    first(text), or the element at XPath inner within it. The page
    redraws its tables every two seconds: a row replaced between its
    finding and its click is found again (until's retry on a stale
    element). True once clicked."""
    def attempt():
        for tr in driver.find_elements(By.CSS_SELECTOR, rows_css):
            tds = tr.find_elements(By.TAG_NAME, "td")
            if tds and first(tds[0].text):
                (tr.find_element(By.XPATH, inner) if inner else tr).click()
                return True
        return False
    return until(attempt, timeout=timeout)


def rule_cells(driver, name):
    for r in rows(driver, "rules"):
        if r and r[0].split(" ")[0] == name:
            return r
    return None


def options(profile):
    """Headless Chromium on this closed network, its profile apart."""
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for a in ("--headless", "--no-sandbox", "--disable-gpu",
              "--disable-quic", "--no-first-run",
              "--disable-background-networking",
              "--disable-component-update", "--disable-sync",
              "--disable-dev-shm-usage", "--window-size=1400,1000",
              "--user-data-dir=" + profile):
        opts.add_argument(a)
    return opts


def drive(run, args):
    """run(driver, args) in headless Chromium, its profile apart, then
    the plan of the TAP lines it printed (the drivers' main())."""
    profile = tempfile.mkdtemp(prefix="rltest-chromium-")
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"),
                              options=options(profile))
    try:
        run(driver, args)
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    print("1..%d" % N)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--page", required=True)
    ap.add_argument("--limited", required=True)
    ap.add_argument("--screenshot", required=True)
    ap.add_argument("--rule", required=True)
    ap.add_argument("--rejected", required=True)
    ap.add_argument("--client", required=True)
    ap.add_argument("--rules", type=int, required=True)
    drive(run, ap.parse_args())


def run(driver, args):
    driver.get(args.page)

    # every rule, listed
    got = until(lambda: len(rows(driver, "rules")) >= args.rules
                and rows(driver, "rules"))
    report(got is not None and len(got) == args.rules,
           "the page lists the %d rules" % args.rules,
           got and len(got))
    report(rule_cells(driver, args.rule) is not None,
           "among them %s" % args.rule)
    names = [r[0] for r in rows(driver, "rules")]
    report(names and names[0].split(" ")[0] == args.rule,
           "the rule rejecting most comes first", names[:3])

    # its top keys: the key being rejected
    top = until(lambda: [r for r in rows(driver, "top")
                         if r and r[0] == args.rejected])
    report(top, "the top list shows %s, which is rejected" % args.rejected,
           rows(driver, "top"))
    if top:
        report(int(top[0][1]) > 0, "with its rejections (%s)" % top[0][1])
    report(until(lambda: "of " + args.rule in
                 driver.find_element(By.ID, "topof").text),
           "for the rule it names")

    # the what-if control changes its figure (its cell: "at N/m", the
    # bar, the share)
    def whatif():
        return rule_cells(driver, args.rule)[WHATIF]
    whatif_select = Select(driver.find_element(By.ID, "whatif"))
    whatif_select.select_by_visible_text("100%")
    at_full = until(whatif)
    whatif_select.select_by_visible_text("10%")
    at_tenth = until(lambda: whatif() != at_full and whatif())
    report(at_tenth is not None,
           "the what-if figure changes with the limit picked "
           "(100%%: %s, 10%%: %s)" % (at_full, at_tenth))
    share = lambda t: float(re.findall(r"([<\d.]+)%", t)[-1].lstrip("<"))
    if at_full and at_tenth:
        report(share(at_tenth) > share(at_full),
               "a lower limit rejects more")
    report(until(lambda: driver.find_element(By.ID, "whatifhead").text
                 == "AT 10%"), "and its column says which",
           driver.find_element(By.ID, "whatifhead").text)

    # a key looked up, then blocked and unblocked from the page
    report(status_of(args.limited, args.client) == 200,
           "%s passes before" % args.client)
    Select(driver.find_element(By.ID, "keyrule")).select_by_value(
        json.dumps(["main", args.rule], separators=(",", ":")))
    box = driver.find_element(By.ID, "keyvalue")
    box.clear()
    box.send_keys(args.client)
    driver.find_element(By.ID, "lookup").click()
    state = until(lambda: driver.find_element(By.ID, "keystate").text)
    report(state and "remaining" in state and args.client in state,
           "the key's state", state)
    driver.find_element(By.ID, "reason").send_keys("from the dashboard")
    driver.find_element(By.ID, "block").click()
    msg = until(lambda: "blocked" in driver.find_element(By.ID,
                                                          "keymsg").text)
    report(msg, "the page says it blocked the key",
           driver.find_element(By.ID, "keymsg").text)
    report(until(lambda: "BLOCKED" in
                 driver.find_element(By.ID, "keystate").text),
           "and shows it blocked")
    report(status_of(args.limited, args.client) == 429,
           "the next request of %s is a 429" % args.client)
    # the whole page, from its top, for docs/img
    driver.set_window_size(1400, 1420)
    driver.execute_script("window.scrollTo(0, 0)")
    driver.save_screenshot(args.screenshot)
    driver.find_element(By.ID, "unblock").click()
    msg = until(lambda: "unblocked" in driver.find_element(By.ID,
                                                            "keymsg").text)
    report(msg, "unblocked from the page")
    report(status_of(args.limited, args.client) == 200,
           "then %s passes" % args.client)
    console_clean(driver)


if __name__ == "__main__":
    sys.exit(main())
