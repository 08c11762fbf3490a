  /* render.js: what the page shows, from the state (part of
   * index.html's script) */
  /* ------------------------------------------------------------- */
  /* what the page shows: this instance's or the fleet's rules       */

  function fleetOn() {
    return state.view === "fleet" && state.hasFleet && !!state.fleet &&
           state.fleet.rules;
  }

  /* The rules shown, each {r, base (the same rule a snapshot before),
   * dt, fleet}: in the fleet's view, the fleet's rules of each zone with
   * Redis and this instance's of the embedded zones. */
  function shownRules() {
    var out = [];
    var local = state.local, lb = state.localBase;
    var ldt = local && lb ? (local.t - lb.t) / 1000 : 0;
    var fleet = fleetOn() ? state.fleet : null;
    var fb = state.fleetBase;
    var fdt = fleet && fb ? (fleet.t - fb.t) / 1000 : 0;
    if (local) {
      local.rules.forEach(function (r) {
        if (fleet && fleet.zones[r.zone] && fleet.zones[r.zone].rules) {
          return;
        }
        out.push({ r: r, base: lb && lb.byId[ruleId(r)], dt: ldt,
                   fleet: false });
      });
    }
    if (fleet) {
      Object.keys(fleet.zones).forEach(function (z) {
        var rules = fleet.zones[z].rules || [];
        if (!local || !local.zones[z]) { return; }
        rules.forEach(function (r) {
          var bz = fb && fb.zones[z];
          out.push({ r: r, base: bz && bz.byId && bz.byId[ruleId(r)],
                     dt: fdt, fleet: true });
        });
      });
    }
    return out;
  }

  function selectedRow() {
    var rows = shownRules();
    for (var i = 0; i < rows.length; i++) {
      if (ruleId(rows[i].r) === state.selected) { return rows[i]; }
    }
    return null;
  }
  function selectedRule() {
    var row = selectedRow();
    return row ? row.r : null;
  }

  /* ------------------------------------------------------------- */
  /* rendering                                                       */

  function renderView() {
    if (!state.hasFleet) { state.view = "instance"; }
    $("view").hidden = !state.hasFleet;
    $("viewfleet").checked = state.view === "fleet";
    $("viewinstance").checked = state.view !== "fleet";
    var n = 0;
    var fz = state.fleet && state.fleet.zones[state.fleetZone];
    if (fz) {
      fz.instances.forEach(function (i) { if (!i.gone) { n++; } });
    }
    $("fleetlabel").textContent = fz ? "fleet of " + n : "fleet";
    $("fleetsec").hidden = state.view !== "fleet";
    $("auditsec").hidden = !(state.redisZones.length &&
                             (state.audit !== null || state.auditError));
    $("insthead").hidden = !fleetOn();
    $("zonesof").textContent = state.view === "fleet"
      ? "as this instance sees them" : "";
  }

  function renderInstances() {
    var tb = $("instances").tBodies[0];
    tb.textContent = "";
    var z = state.fleet && state.fleet.zones[state.fleetZone];
    if (!z) { return; }
    var list = z.instances.slice().sort(function (a, b) {
      return (a.gone - b.gone) ||
        a.name.localeCompare(b.name, undefined, { numeric: true });
    });
    var up = 0, gone = 0;
    var now = Date.now() / 1000;
    list.forEach(function (i) {
      if (i.gone) { gone++; } else if (i.up) { up++; }
      var tr = el("tr", i.gone ? "gone" : "");
      var name = td(i.name);
      tip(name, "id " + i.id);
      if (i.duplicate) {
        name.appendChild(text(" "));
        var d = el("span", "pill down", "same name twice");
        tip(d, "two instances publish under this name (ids apart): " +
               "reported, not merged");
        name.appendChild(d);
      }
      tr.appendChild(name);
      tr.appendChild(td(i.version));
      tr.appendChild(td(i.nginx));
      tr.appendChild(td(String(i.workers), "n"));
      tr.appendChild(cell(fmtSeconds(Math.max(0, now - i.started)), "n",
                          "started " + fmtTime(i.started)));
      tr.appendChild(td(fmtSeconds(i.seen) + " ago",
                        "n" + (i.seen > 2 * i.interval && !i.gone
                               ? " warn" : "")));
      var st = td("");
      st.appendChild(i.gone
        ? el("span", "pill gone", "gone")
        : el("span", "pill " + (i.up ? "up" : "down"),
             i.up ? "up" : "Redis DOWN"));
      if (i.gone) {
        tip(st, "not seen for 3 intervals: its figures are left out");
      }
      tr.appendChild(st);
      var dr = td("");
      if (i.drift && i.drift.length) {
        var p = el("span", "pill drift", i.drift.join(", "));
        tip(p, "defines these rules unlike most instances");
        dr.appendChild(p);
      } else {
        dr.appendChild(el("span", "zero", "none"));
      }
      tr.appendChild(dr);
      tb.appendChild(tr);
    });
    say($("fleetof"), (list.length - gone) + " in zone " +
      state.fleetZone + (gone ? ", " + gone + " gone" : "") +
      ", each publishing every " + fmtSeconds(z.interval));
    $("fleetof").appendChild(el("span", "bad", stale()));
  }

  /* the fleet's figures shown are older than the last read, which
   * failed: say so where they are */
  function stale() {
    if (!state.fleetError || state.view !== "fleet") { return ""; }
    return state.fleetOkAt
      ? " · as read at " + new Date(state.fleetOkAt).toLocaleTimeString() +
        ": the fleet cannot be read now"
      : " · the fleet cannot be read now";
  }

  function renderZones() {
    var local = state.local, lb = state.localBase;
    if (!local) { return; }
    var dt = lb ? (local.t - lb.t) / 1000 : 0;
    var zones = local.zones;
    var tb = $("zones").tBodies[0];
    tb.textContent = "";
    var fz = state.fleet && state.fleet.zones[state.fleetZone];
    Object.keys(zones).forEach(function (name) {
      var z = zones[name], q = z.requests;
      var p = lb && lb.zones[name];
      var pq = p && p.requests;
      var tr = el("tr");
      tr.appendChild(td(name));
      tr.appendChild(td(z.store));
      var st = td("");
      st.appendChild(el("span", "pill " + (z.up ? "up" : "down"),
                        z.up ? "up" : "DOWN"));
      if (state.view === "fleet" && fz && name === state.fleetZone) {
        /* how many of the fleet's instances reach it */
        var n = 0, ups = 0;
        fz.instances.forEach(function (i) {
          if (!i.gone) { n++; if (i.up) { ups++; } }
        });
        st.appendChild(el("span", ups < n ? "bad" : "unit",
                          " " + ups + " of " + n + " instances"));
        /* what the instances table below says at length */
        var gone = 0, drift = 0, dup = 0;
        fz.instances.forEach(function (i) {
          if (i.gone) { gone++; return; }
          if (i.drift && i.drift.length) { drift++; }
          if (i.duplicate) { dup++; }
        });
        if (drift) {
          st.appendChild(text(" "));
          st.appendChild(el("span", "pill drift", "drift"));
        }
        if (dup) {
          st.appendChild(text(" "));
          st.appendChild(el("span", "pill down", "same name twice"));
        }
        if (gone) {
          st.appendChild(text(" "));
          st.appendChild(el("span", "pill gone", gone + " gone"));
        }
      }
      tr.appendChild(st);
      var rej = rate(q.rejected, pq && pq.rejected, dt);
      tr.appendChild(td(fmtRate(rate(q.passed, pq && pq.passed, dt)), "n"));
      tr.appendChild(td(fmtRate(rej), "n" + (rej > 0 ? " bad" : "")));
      tr.appendChild(td(fmtRate(rate(q.rejected_dry_run,
                                     pq && pq.rejected_dry_run, dt)), "n"));
      var err = rate(q.error, pq && pq.error, dt);
      tr.appendChild(td(fmtRate(err), "n" + (err > 0 ? " bad" : "")));
      tr.appendChild(cell(fmtCount(q.rejected), "n" + (q.rejected ? "" : " zero"),
                          String(q.rejected)));
      tr.appendChild(td(z.lease ? fmtCount(z.lease.spent) : "–", "n"));
      /* shared memory (the embedded store, failure=local's) */
      tr.appendChild(z.memory
        ? cell(fmtShare(z.memory.used / z.memory.size), "n",
               fmtCount(z.memory.used) + " of " + fmtCount(z.memory.size) +
               " bytes")
        : td("–", "n"));
      tr.appendChild(td(z.memory ? fmtCount(z.evictions) : "–",
                        "n" + (z.evictions > 0 ? " bad" : "")));
      tb.appendChild(tr);
    });
  }

  /* the rule's cell: its name, what runs on it, and a trial's figures */
  function nameCell(row) {
    var r = row.r, q = r.requests;
    var c = td(r.name);
    function pill(cls, t, title) {
      c.appendChild(text(" "));
      var p = el("span", "pill " + cls, t);
      if (title) { tip(p, title); }
      c.appendChild(p);
    }
    if (q.rejected_dry_run > 0 && q.rejected === 0) {
      pill("dry", "dry run");
    }
    if (r.drift) {
      pill("drift", "drift", r.drift.map(function (d) {
        return d.limit + per(d) + " " + d.algorithm + ": " +
               d.instances.map(shown).join(", ");
      }).join("\n"));
    }
    if (r.trial) {
      var t = r.trial;
      var line = el("span", "line2");
      line.appendChild(el("span", "pill trial", "trial " + t.limit + per(r)));
      line.appendChild(text(" would reject " + fmtCount(t.rejected) +
        " of " + fmtCount(t.rejected + t.passed) + " · " +
        fmtLeft(t.until)));
      tip(line, "a trial at " + t.limit + per(r) + ", in dry run: " +
        t.rejected + " requests it would have rejected, " + t.passed +
        " it would have let in, " + fmtUntil(t.until) +
        (t.by ? ", started by " + t.by : ""));
      c.appendChild(line);
    }
    return c;
  }

  /* the limit's cell: in force, and "configured → live" with until and
   * by whom */
  function limitCell(r) {
    var c = td("", "n");
    if (r.live) {
      c.appendChild(el("span", "was", String(r.configured)));
      c.appendChild(text(" → "));
      c.appendChild(el("span", "livelimit", String(r.live.limit)));
      c.appendChild(el("span", "unit", per(r)));
      var line = el("span", "line2",
        "live · " + fmtLeft(r.live.until) +
        (r.live.by ? " · " + r.live.by : ""));
      c.appendChild(line);
      tip(c, "configured " + r.configured + per(r) + "; live " +
        r.live.limit + per(r) + " " + fmtUntil(r.live.until) +
        (r.live.by ? ", set by " + r.live.by : "") +
        (r.live.reason ? ": " + r.live.reason : ""));
    } else {
      c.appendChild(text(String(r.limit)));
      c.appendChild(el("span", "unit", per(r)));
      if (r.adaptive) {
        c.appendChild(el("span", "line2", "auto · " + r.adaptive.min +
                         " to " + r.adaptive.max));
      }
      tip(c, r.adaptive ? "concurrency=auto: learnt from the upstream"
                        : r.algorithm);
    }
    /* a calendar rule: its time zone and where its periods start */
    if (r.period) {
      c.appendChild(el("span", "line2 calendar", calendarText(r)));
    }
    return c;
  }

  function whatIfCell(r, b) {
    if (r.adaptive) {
      /* N moves with the upstream: a fraction of today's says nothing */
      var a = td("learnt", "n muted");
      tip(a, "concurrency=auto: its N follows the upstream's latency");
      return a;
    }
    var w = whatIf(r.usage, b), now = rejectedShare(r.usage);
    var c = td("", "n" + (w !== null && w > now ? " warn" : ""));
    var at = r.limit * BOUNDS[b];
    var wrap = el("span", "wi");
    wrap.appendChild(el("span", "unit mid", "at " + num(at) + per(r)));
    var track = el("span", "bartrack");
    if (w !== null) {
      var bar = el("span", "bar");
      bar.style.width = Math.round(Math.min(1, Math.max(0, w)) * 100) + "%";
      track.appendChild(bar);
    }
    wrap.appendChild(track);
    wrap.appendChild(el("span", "share", fmtShare(w)));
    c.appendChild(wrap);
    tip(c, "with a limit of " + num(at) + per(r) + ", " +
      (w === null ? "–" : fmtShare(w)) +
      " of the requests decided would have been rejected");
    return c;
  }

  function renderRules() {
    var tb = $("rules").tBodies[0];
    var b = +$("whatif").value;
    var filter = $("filter").value.toLowerCase();
    $("whatifhead").textContent = "at " + Math.round(BOUNDS[b] * 100) + "%";
    var all = shownRules();
    var rows = all.map(function (row) {
      var r = row.r, p = row.base;
      row.passed = rate(r.requests.passed, p && p.requests.passed, row.dt);
      row.rejected = rate(r.requests.rejected + r.requests.rejected_dry_run,
                          p && p.requests.rejected +
                               p.requests.rejected_dry_run, row.dt);
      return row;
    });
    /* the worst first: rejecting now, then rejected most */
    rows.sort(function (x, y) {
      return (y.rejected || 0) - (x.rejected || 0) ||
             (y.r.requests.rejected + y.r.requests.rejected_dry_run) -
             (x.r.requests.rejected + x.r.requests.rejected_dry_run) ||
             x.r.name.localeCompare(y.r.name, undefined, { numeric: true });
    });
    tb.textContent = "";
    var listed = 0;
    var fleet = fleetOn();
    rows.forEach(function (row) {
      var r = row.r, q = r.requests;
      if (filter && (r.name + " " + r.zone + " " + r.key).toLowerCase()
                        .indexOf(filter) < 0) { return; }
      listed++;
      var tr = el("tr", "rule" + (state.selected === ruleId(r)
                                   ? " selected" : ""));
      tr.dataset.id = ruleId(r);
      tr.appendChild(nameCell(row));
      tr.appendChild(td(r.zone));
      tr.appendChild(cell(r.key, "key", r.key));
      tr.appendChild(td(r.algorithm, "wide"));
      tr.appendChild(limitCell(r));
      tr.appendChild(td(fmtRate(row.passed), "n"));
      tr.appendChild(td(fmtRate(row.rejected),
                        "n" + (row.rejected > 0 ? " bad" : "")));
      var total = q.rejected + q.rejected_dry_run;
      tr.appendChild(cell(fmtCount(total), "n" + (total ? "" : " zero"),
                          String(total)));
      var share = rejectedShare(r.usage);
      tr.appendChild(td(fmtShare(share), "n" + (share > 0 ? " bad" : "")));
      tr.appendChild(whatIfCell(r, b));
      if (fleet) {
        tr.appendChild(row.fleet
          ? td(String(r.instances), "n mid" + (r.drift ? " warn" : ""))
          : cell("this one", "n mid zero",
                 "an embedded zone: its rules are this instance's"));
      }
      tb.appendChild(tr);
    });
    $("rulecount").textContent = (listed === all.length
      ? all.length + " rules" : listed + " of " + all.length + " rules") +
      (fleet ? " · the fleet's: summed over the instances" : "");
    $("rulecount").appendChild(el("span", "bad", stale()));
  }

  /* the selected rule's box: its limit, live limit and trial, and the
   * controls to try or set a limit */
  function renderRuleBox() {
    var row = selectedRow(), r = row && row.r;
    var box = $("rulestate");
    box.textContent = "";
    say($("ruleof"), r ? r.name + " (" + r.zone + ")" : "");
    $("ruleforms").hidden = !r || !state.write;
    if (!r) {
      box.className = "empty";
      box.textContent = "Click a rule above.";
      return;
    }
    box.className = "";
    var dl = el("dl", "kv");
    if (r.live) {
      kvRow(dl, "limit", [el("span", "was", String(r.configured)),
                          text(" → "),
                          el("span", "livelimit", r.live.limit + per(r)),
                          text(" live, " + fmtUntil(r.live.until) +
                               (r.live.by ? ", set by " + r.live.by : ""))]);
      if (r.live.reason) { kvRow(dl, "reason", r.live.reason); }
    } else if (r.adaptive) {
      kvRow(dl, "limit", r.limit + per(r) + " learnt (concurrency=auto)");
    } else {
      kvRow(dl, "limit", r.limit + per(r) + " as configured (" +
            r.algorithm + ")");
    }
    if (r.period) {
      kvRow(dl, "period", "a calendar " + r.period + " in " +
            calendarText(r));
    }
    if (r.trial) {
      var t = r.trial;
      kvRow(dl, "trial", [el("span", "pill trial", t.limit + per(r)),
                          text(" " + fmtUntil(t.until) +
                               (t.by ? ", started by " + t.by : ""))]);
      kvRow(dl, "its figures", [el("span", t.rejected ? "bad" : "",
                                   fmtCount(t.rejected)),
                                text(" would have been rejected, " +
                                     fmtCount(t.passed) + " let in")]);
    } else {
      kvRow(dl, "trial", "none");
    }
    if (row.fleet) {
      kvRow(dl, "instances", String(r.instances) + (r.drift
        ? " (defined " + r.drift.length + " ways: " +
          r.drift.map(function (d) {
            return d.limit + per(d) + " on " + d.instances.join(", ");
          }).join("; ") + ")" : ""));
    }
    box.appendChild(dl);
    if (r.adaptive) { box.appendChild(adaptiveBox(r)); }
    /* the what-if's N, unless typed */
    var input = $("newlimit");
    if (!state.limitEdited || input.dataset.rule !== ruleId(r)) {
      var b = +$("whatif").value;
      input.value = Math.max(1, Math.floor(r.limit * BOUNDS[b]));
      input.dataset.rule = ruleId(r);
      state.limitEdited = false;
    }
    $("newunit").textContent = per(r);
    renderNewShare();
    /* (no trial for a concurrency= or calendar rule: refused) */
    $("trialrow").hidden = r.window === null || !!r.period;
    $("trystop").disabled = !r.trial;
    $("liveclear").disabled = !r.live;
  }
  function renderNewShare() {
    var r = selectedRule(), n = +$("newlimit").value;
    var out = $("newshare");
    out.textContent = "";
    if (!r || !(n >= 0) || $("newlimit").value === "") { return; }
    if (r.adaptive) {
      out.appendChild(text("set live, it pins N there until it ends"));
      return;
    }
    var t = whatIfText(r.usage, r.limit ? n / r.limit : 2);
    out.appendChild(text("would have rejected "));
    out.appendChild(el("b", "", t));
    out.appendChild(text(" of its requests"));
  }

  function renderTop(rule, data, fleet, error) {
    var tb = $("top").tBodies[0];
    tb.textContent = "";
    var trial = state.topKind === "trial" && rule && rule.trial;
    say($("topof"), rule ? "of " + rule.name + " (" + rule.zone +
      ")" + (fleet ? ", every instance" : "") : "");
    $("topkindbox").hidden = !(rule && rule.trial);
    $("topcount").textContent = fleet ? "instances" : "admitted since listed";
    $("topcount").title = fleet
      ? "how many instances list the key"
      : "requests of the key the rule let in after the key entered the " +
        "list (the list only sees a key once it was rejected)";
    $("tophint").textContent = (fleet
      ? "The keys every instance rejected most over about the last two " +
        "minutes, their rejections summed."
      : "The keys this instance rejected most over about the last two " +
        "minutes.") + (trial ? " The trial's: what it would have rejected."
                            : "") + " Click a rule above to see its keys.";
    if (!data || !data.keys.length) {
      var tr = el("tr");
      var c = error ? td("cannot be read: " + error, "bad")
              : td(rule ? (trial ? "the trial would have rejected no key"
                                 : "no key rejected lately")
                        : "no rule rejects", "empty");
      c.colSpan = 4;
      tr.appendChild(c);
      tb.appendChild(tr);
      return;
    }
    data.keys.forEach(function (k) {
      var tr = el("tr");
      tr.appendChild(cell(k.key + (k.truncated ? "…" : ""), "key", k.key));
      tr.appendChild(td(fmtCount(k.rejected), "n bad"));
      if (fleet) {
        tr.appendChild(td(String(k.instances), "n"));
      } else {
        var admitted = Math.max(0, k.requests - k.rejected);
        tr.appendChild(td(fmtCount(admitted), "n" + (admitted ? ""
                                                              : " zero")));
      }
      var act = td("");
      var look = el("button", "small", "look up");
      look.disabled = !!k.truncated;
      look.title = k.truncated ? "this key is longer than the list keeps" : "";
      look.onclick = function () {
        $("keyrule").value = ruleId(rule);
        $("keyvalue").value = k.key;
        lookUp();
      };
      act.appendChild(look);
      if (state.write) {
        var blk = el("button", "small danger", "block");
        blk.disabled = !!k.truncated;
        blk.onclick = function () {
          $("keyrule").value = ruleId(rule);
          $("keyvalue").value = k.key;
          write("POST", "/block", blockBody(), "blocked");
        };
        act.appendChild(text(" "));
        act.appendChild(blk);
      }
      tr.appendChild(act);
      tb.appendChild(tr);
    });
  }

  var ACTIONS = {
    block: "blocked", unblock: "unblocked", override: "override set",
    unoverride: "override removed", reset: "usage reset",
    limit: "live limit set", unlimit: "live limit removed",
    trial: "trial started", untrial: "trial ended"
  };
  function detailText(d) {
    var parts = [];
    if (!d || typeof d !== "object") { return ""; }
    if ("limit" in d) { parts.push("limit " + d.limit); }
    if ("ttl" in d) {
      parts.push(d.ttl === null ? "no expiry" : "for " + fmtSeconds(d.ttl));
    }
    if ("states" in d) { parts.push(d.states + " states forgotten"); }
    Object.keys(d).forEach(function (k) {
      if (k !== "limit" && k !== "ttl" && k !== "states" && k !== "reason") {
        parts.push(k + " " + JSON.stringify(d[k]));
      }
    });
    if (d.reason) { parts.push("“" + d.reason + "”"); }
    return parts.join(", ");
  }
  function renderAudit() {
    var tb = $("audit").tBodies[0];
    tb.textContent = "";
    say($("auditof"), state.fleetZone
      ? "every write of the API, on any instance, newest first (zone " +
        state.fleetZone + ")" : "");
    if (state.auditError) {
      var er = el("tr");
      var ec = td(state.auditError, "bad");
      ec.colSpan = 7;
      er.appendChild(ec);
      tb.appendChild(er);
      return;
    }
    var entries = state.audit || [];
    if (!entries.length) {
      var tr0 = el("tr");
      var c0 = td("no change made through the API", "empty");
      c0.colSpan = 7;
      tr0.appendChild(c0);
      tb.appendChild(tr0);
      return;
    }
    entries.forEach(function (e) {
      var tr = el("tr");
      tr.appendChild(cell(fmtTime(e.time), "",
                          new Date(e.time * 1000).toISOString()));
      tr.appendChild(td(e.instance));
      tr.appendChild(td(e.client + (e.user ? " (" + e.user + ")" : "")));
      tr.appendChild(td(ACTIONS[e.action] || e.action));
      tr.appendChild(td(e.rule));
      tr.appendChild(cell(e.key || "–", "key", e.key));
      var d = detailText(e.detail);
      tr.appendChild(cell(d, "", d));
      tb.appendChild(tr);
    });
  }

  function renderAll() {
    renderView();
    renderInstances();
    renderZones();
    renderRules();
    renderRuleBox();
    renderAudit();
    fillRuleSelect();
  }
