#!/usr/bin/python3
"""The dashboard's fleet view in a real browser (t/077-dashboard-fleet.t).

Headless Chromium (t/lib/dashboard.py's driver and helpers) against
three nginx instances on one Redis that t/077 started and loaded, the
page of the first. It does what an operator in an incident would: reads
the fleet, tries a limit, sets it live, checks that another instance
applies it, reads the recent changes, and ends both; prints TAP lines
for t/077.

    dashboard_fleet.py --page URL --instance URL (x3) --names A,B,C
                       --rule NAME --limit N --rejected KEY
                       --fleet-rejected N --own-rejected N
                       --screenshot FILE
"""

import argparse
import json
import os
import re
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dashboard  # noqa: E402
from dashboard import (click_row, console_clean, report, rows,  # noqa: E402
                       status_of, until)

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402

# the rules table's columns (t/lib/dashboard.py's), and the fleet's last
REJECTED, LIMIT, INSTANCES = 7, 4, 10

FRESH = [0]


def fresh(prefix):
    """A key no request used yet."""
    FRESH[0] += 1
    return "%s-%d-%d" % (prefix, os.getpid(), FRESH[0])


def statuses(url, key, n):
    return [status_of(url, key) for _ in range(n)]


def api_json(page, path):
    with urllib.request.urlopen(page + path, timeout=10) as res:
        return json.load(res)


def rule_cells(driver, name):
    for r in rows(driver, "rules"):
        if r and r[0].split(" ")[0].split("\n")[0] == name:
            return r
    return None


def top_rows(driver):
    return [r for r in rows(driver, "top") if len(r) >= 3]


def text_of(driver, elem_id):
    return driver.find_element(By.ID, elem_id).text


def click_view(driver, which):
    # the radio is drawn by its label's text
    driver.find_element(By.XPATH, "//input[@id='view%s']/../span"
                        % which).click()


def set_number(driver, elem_id, value):
    box = driver.find_element(By.ID, elem_id)
    box.clear()
    box.send_keys(str(value))


def trial_figures(driver, rule):
    """(would reject, of) from the rule's trial line, or None."""
    cells = rule_cells(driver, rule)
    m = cells and re.search(r"would reject (\d+) of (\d+)", cells[0])
    return (int(m.group(1)), int(m.group(2))) if m else None


def run(driver, args):
    page, rule = args.page, args.rule
    login = [u + "/" + rule for u in args.instance]
    names = args.names.split(",")
    driver.get(page)

    # --------------------------------------------------- the fleet's view
    report(until(lambda: driver.find_element(By.ID, "viewfleet")
                 .is_selected() and driver.find_element(By.ID, "view")
                 .is_displayed()),
           "more than one instance: the page opens on the fleet's view")
    report(until(lambda: text_of(driver, "fleetlabel") == "fleet of 3"),
           "its switch says how many", text_of(driver, "fleetlabel"))
    inst = until(lambda: len(rows(driver, "instances")) == 3
                 and rows(driver, "instances"))
    report(inst and sorted(r[0] for r in inst) == names,
           "the instances table lists the three", inst)
    report(inst and all(r[6] == "up" for r in inst),
           "each up", inst and [r[6] for r in inst])
    report(inst and all(r[3] == "2" for r in inst),
           "with its workers", inst and [r[3] for r in inst])

    cells = until(lambda: rule_cells(driver, rule)
                  and rule_cells(driver, rule)[REJECTED]
                  == str(args.fleet_rejected) and rule_cells(driver, rule))
    report(cells, "%s's rejections summed over the instances (%d)"
           % (rule, args.fleet_rejected), rule_cells(driver, rule))
    report(cells and cells[INSTANCES] == "3", "defined on three",
           cells and cells[INSTANCES])
    names_shown = [r[0].split("\n")[0].split(" ")[0]
                   for r in rows(driver, "rules")]
    report(names_shown and names_shown[0] == rule,
           "the rule rejecting most comes first", names_shown)

    # its top keys, merged: the key limited on every instance
    top = until(lambda: [r for r in top_rows(driver)
                         if r[0] == args.rejected and r[2] == "3"])
    report(top, "the top keys merged: %s, on the three instances"
           % args.rejected, top_rows(driver))
    report(until(lambda: text_of(driver, "topcount") == "INSTANCES"),
           "the top keys say on how many instances",
           text_of(driver, "topcount"))

    # ------------------------------------------------- this instance's
    click_view(driver, "instance")
    cells = until(lambda: rule_cells(driver, rule)
                  and rule_cells(driver, rule)[REJECTED]
                  == str(args.own_rejected) and rule_cells(driver, rule))
    report(cells, "this instance: its own rejections (%d)"
           % args.own_rejected, rule_cells(driver, rule))
    report(until(lambda: not driver.find_element(By.ID, "fleetsec")
                 .is_displayed()), "and no instances table")
    report(until(lambda: text_of(driver, "topcount")
                 == "ADMITTED SINCE LISTED"),
           "its top keys say what the sketch knows",
           text_of(driver, "topcount"))
    click_view(driver, "fleet")
    report(until(lambda: rule_cells(driver, rule)
                 and rule_cells(driver, rule)[REJECTED]
                 == str(args.fleet_rejected)), "back to the fleet's")

    # --------------------------------------- try the what-if's limit
    click_row(driver, "#rules tbody tr.rule",
              lambda text: text.split("\n")[0].split(" ")[0] == rule)
    report(until(lambda: text_of(driver, "ruleof").startswith(rule)),
           "the rule picked", text_of(driver, "ruleof"))
    Select(driver.find_element(By.ID, "whatif")).select_by_visible_text(
        "50%")
    half = args.limit // 2
    report(until(lambda: driver.find_element(By.ID, "newlimit")
                 .get_attribute("value") == str(half)),
           "the what-if's limit is offered: %d" % half,
           driver.find_element(By.ID, "newlimit").get_attribute("value"))
    report(until(lambda: "would have rejected" in text_of(driver,
                                                          "newshare")),
           "with what it would have rejected", text_of(driver, "newshare"))
    driver.find_element(By.ID, "trystart").click()
    report(until(lambda: "trial of %d started" % half
                 in text_of(driver, "rulemsg")),
           "a trial started from the page", text_of(driver, "rulemsg"))
    report(until(lambda: "trial %d/m" % half
                 in (rule_cells(driver, rule) or [""])[0], timeout=20),
           "the rule shows its trial", rule_cells(driver, rule))
    on_b = until(lambda: (next((x for x in api_json(
        args.instance[1] + "/rl/", "1/rules") if x["name"] == rule), {})
        .get("trial") or {}).get("limit") == half, timeout=5)
    report(on_b, "which the second instance runs too")

    # traffic on the other two: each key over the trial's limit
    keys = [fresh("t") for _ in range(3)]
    for k in keys:
        for i in range(half + 4):
            status_of(login[1 + i % 2], k)
    got = until(lambda: (trial_figures(driver, rule) or (0, 0))[0]
                >= 3 * 4 and trial_figures(driver, rule), timeout=20)
    report(got, "the trial's figures shown: it would reject %s" %
           (got and "%d of %d" % got), rule_cells(driver, rule))

    def api_trial():
        f = next(x for x in api_json(page, "1/fleet/rules")
                 if x["name"] == rule)
        return f.get("trial") or {}
    same = until(lambda: trial_figures(driver, rule) and
                 trial_figures(driver, rule)[0] == api_trial()
                 .get("rejected"), timeout=15)
    report(same, "as the fleet's API sums them",
           (trial_figures(driver, rule), api_trial()))
    report(until(lambda: "would have been rejected" in
                 text_of(driver, "rulestate")),
           "and in the rule's box", text_of(driver, "rulestate"))
    Select(driver.find_element(By.ID, "topkind")).select_by_value("trial")
    report(until(lambda: {r[0] for r in top_rows(driver)} >= set(keys)),
           "the keys the trial would reject", top_rows(driver))
    Select(driver.find_element(By.ID, "topkind")).select_by_value("limit")

    # ------------------------------------------ set it live, everywhere
    third = login[2]
    before = statuses(third, fresh("c"), half + 1)
    report(before == [200] * (half + 1),
           "before: the third instance admits %d of a key" % (half + 1),
           before)
    set_number(driver, "livettl", 10)
    driver.find_element(By.ID, "livereason").send_keys("incident 4711")
    driver.find_element(By.ID, "liveset").click()
    report(until(lambda: "live limit of %d set" % half
                 in text_of(driver, "rulemsg")),
           "a live limit set from the page", text_of(driver, "rulemsg"))
    t0 = time.monotonic()
    applied = until(lambda: statuses(third, fresh("c"), half + 1)[-1]
                    == 429, timeout=10, interval=0.05)
    report(applied, "the third instance rejects the key's request %d "
           "(after %.1f s)" % (half + 1, time.monotonic() - t0))
    arrow = "%d → %d" % (args.limit, half)
    report(until(lambda: arrow in (rule_cells(driver, rule)
                                   or [""] * 5)[LIMIT], timeout=20),
           "its rule shows %s" % arrow, rule_cells(driver, rule))
    report(until(lambda: "incident 4711" in text_of(driver, "rulestate")
                 and "127.0.0.1" in text_of(driver, "rulestate")),
           "why and by whom", text_of(driver, "rulestate"))

    # a trial lower still, for the picture and the audit: the what-if's
    # 50% is now of the live limit
    quarter = half // 2
    report(until(lambda: driver.find_element(By.ID, "newlimit")
                 .get_attribute("value") == str(quarter)),
           "the what-if's limit follows the limit in force: %d" % quarter,
           driver.find_element(By.ID, "newlimit").get_attribute("value"))
    driver.find_element(By.ID, "trystart").click()
    report(until(lambda: "trial %d/m" % quarter
                 in (rule_cells(driver, rule) or [""])[0], timeout=20),
           "a second trial replaces the first", rule_cells(driver, rule))
    for k in [fresh("s") for _ in range(4)]:
        for i in range(quarter + 3):
            status_of(login[i % 3], k)
    report(until(lambda: (trial_figures(driver, rule) or (0, 0))[0] > 0,
                 timeout=20),
           "its figures shown", rule_cells(driver, rule))

    # ------------------------------------------------- recent changes
    def audit():
        return [r for r in rows(driver, "audit") if len(r) >= 7]
    got = until(lambda: len(audit()) >= 3 and
                [r[3] for r in audit()[:3]] == [
                    "trial started", "live limit set", "trial started"]
                and audit())
    report(got, "the recent changes, newest first", audit()[:4])
    if got:
        lim = got[1]
        report(lim[1] == names[0] and lim[2] == "127.0.0.1" and
               lim[4] == rule,
               "each with its instance, client and rule", lim)
        report("limit %d" % half in lim[6] and "incident 4711" in lim[6]
               and "10 min" in lim[6], "and what changed", lim[6])
        report("limit %d" % quarter in got[0][6], "the last trial's",
               got[0][6])

    # the fleet's view for docs/img: a live limit and a trial running,
    # traffic on every instance until the page shows its rates (bounded:
    # at most 400 requests)
    stop = threading.Event()

    def traffic():
        for n in range(400):
            if stop.is_set():
                return
            status_of(login[n % 3], "mallory" if n % 2 else
                      "203.0.113.%d" % (n % 7))
            time.sleep(0.04)
    sender = threading.Thread(target=traffic, daemon=True)
    sender.start()
    report(until(lambda: (rule_cells(driver, rule) or [""] * 7)[6]
                 not in ("", "0", "–"), timeout=20),
           "with traffic: its rejections a second", rule_cells(driver, rule))
    # (the page's height follows the window's: the rules' box is a share
    # of it; measured again once resized)
    for _ in range(3):
        height = driver.execute_script(
            "return document.documentElement.scrollHeight + "
            "window.outerHeight - window.innerHeight")
        driver.set_window_size(1400, min(max(height + 10, 900), 2400))
    driver.execute_script("window.scrollTo(0, 0)")
    time.sleep(0.3)
    driver.save_screenshot(args.screenshot)
    stop.set()
    sender.join()
    driver.set_window_size(1400, 1000)

    # a reason is anybody's text: shown as text, never as markup
    reason = driver.find_element(By.ID, "livereason")
    reason.clear()
    reason.send_keys("<i>markup</i>")
    driver.find_element(By.ID, "liveset").click()
    report(until(lambda: "<i>markup</i>" in text_of(driver, "rulestate")
                 and audit() and "<i>markup</i>" in audit()[0][6]),
           "a reason's markup shown as text", text_of(driver, "rulestate"))
    report(not driver.find_elements(By.CSS_SELECTOR, "main i"),
           "never made an element")

    # ---------------------------------------------------- end them both
    driver.find_element(By.ID, "trystop").click()
    report(until(lambda: "trial ended" in text_of(driver, "rulemsg")),
           "the trial ended from the page", text_of(driver, "rulemsg"))
    driver.find_element(By.ID, "liveclear").click()
    report(until(lambda: "live limit removed" in text_of(driver,
                                                         "rulemsg")),
           "the live limit removed", text_of(driver, "rulemsg"))
    report(until(lambda: statuses(third, fresh("e"), half + 1)
                 == [200] * (half + 1), timeout=10, interval=0.05),
           "the third instance admits as configured again")
    report(until(lambda: (rule_cells(driver, rule) or [""] * 5)[LIMIT]
                 .startswith("%d/m" % args.limit)
                 and "trial" not in rule_cells(driver, rule)[0],
                 timeout=20),
           "its rule shows its own limit, no trial",
           rule_cells(driver, rule))
    report(until(lambda: [r[3] for r in audit()[:2]]
                 == ["live limit removed", "trial ended"]),
           "the recent changes say so", audit()[:2])
    console_clean(driver)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--page", required=True)
    ap.add_argument("--instance", action="append", required=True)
    ap.add_argument("--names", required=True)
    ap.add_argument("--rule", required=True)
    ap.add_argument("--limit", type=int, required=True)
    ap.add_argument("--rejected", required=True)
    ap.add_argument("--fleet-rejected", type=int, required=True)
    ap.add_argument("--own-rejected", type=int, required=True)
    ap.add_argument("--screenshot", required=True)
    dashboard.drive(run, ap.parse_args())


if __name__ == "__main__":
    sys.exit(main())
