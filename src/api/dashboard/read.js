  /* read.js: reading the API: this instance every refresh, the fleet
   * when due (part of index.html's script) */
  /* ------------------------------------------------------------- */
  /* reading                                                         */

  function fillRuleSelect() {
    var sel = $("keyrule"), keep = sel.value;
    var rules = state.local ? state.local.rules : [];
    var ids = rules.map(ruleId).join("\n");
    if (sel.dataset.ids === ids) { return; }
    sel.dataset.ids = ids;
    sel.textContent = "";
    rules.forEach(function (r) {
      var o = el("option", "", r.name + " (" + r.zone + ", " + r.key + ")");
      o.value = ruleId(r);
      sel.appendChild(o);
    });
    if (keep) { sel.value = keep; }
  }

  function pickSelected() {
    if (state.selected !== null && selectedRow()) { return; }
    /* the rule rejecting most, if any */
    var worst = null;
    shownRules().forEach(function (row) {
      var q = row.r.requests, n = q.rejected + q.rejected_dry_run;
      if (n > 0 && (!worst || n > worst.n)) { worst = { r: row.r, n: n }; }
    });
    state.selected = worst ? ruleId(worst.r) : null;
  }

  function refreshTop() {
    var row = selectedRow(), rule = row && row.r;
    if (!rule) { renderTop(null, null, false); return Promise.resolve(); }
    var trial = state.topKind === "trial" && rule.trial ? "&trial=1" : "";
    var url = (row.fleet ? api + "fleet/rules/" +
                           encodeURIComponent(rule.name) + "/top"
                         : api + "rules/" + encodeURIComponent(rule.name) +
                           "/top") +
              "?n=20&zone=" + encodeURIComponent(rule.zone) + trial;
    var id = ruleId(rule);
    return call("GET", url).then(function (res) {
      if (state.selected !== id) { return; }
      if (res.status === 200) {
        renderTop(rule, res.data, row.fleet);
      } else {
        renderTop(rule, null, row.fleet, errorText(res));
      }
    });
  }

  function refreshLocal() {
    return Promise.all([call("GET", api + "zones"), call("GET", api + "rules")])
      .then(function (res) {
        if (res[0].status !== 200 || res[1].status !== 200) {
          throw new Error("the API answered " + res[0].status + "/" +
                          res[1].status);
        }
        var snap = { t: Date.now(), zones: res[0].data, rules: res[1].data,
                     byId: {} };
        snap.rules.forEach(function (r) { snap.byId[ruleId(r)] = r; });
        state.localBase = state.local;
        state.local = snap;
        var redis = Object.keys(snap.zones).filter(function (z) {
          return snap.zones[z].store !== "embedded";
        });
        state.redisZones = redis;
        if (redis.indexOf(state.fleetZone) < 0) {
          state.fleetZone = redis.length ? redis[0] : null;
        }
        var sel = $("fleetzone");
        if (sel.dataset.zones !== redis.join("\n")) {
          sel.dataset.zones = redis.join("\n");
          sel.textContent = "";
          redis.forEach(function (z) { sel.appendChild(el("option", "", z)); });
        }
        sel.value = state.fleetZone || "";
        $("fleetzonebox").hidden = redis.length < 2;
      });
  }

  /* The fleet, read no more often than FLEET_MS: in its view, each
   * zone with Redis, its rules (summed by the API over the instances),
   * and the instances of the zone listed; in this instance's view, the
   * instances now and then only (to offer the fleet's view when there
   * is one); the audit of that zone in both, while it is open. */
  function refreshFleet() {
    var zones = state.redisZones;
    if (!zones.length) {
      state.hasFleet = false;
      state.fleet = null;
      state.audit = null;
      return Promise.resolve();
    }
    var fleetView = state.view === "fleet";
    var now = Date.now();
    var instancesDue = fleetView || now - state.instancesAt > 30000;
    var reads = [];
    zones.forEach(function (z) {
      var q = "?zone=" + encodeURIComponent(z);
      reads.push(z === state.fleetZone && instancesDue
                 ? call("GET", api + "fleet" + q) : null);
      reads.push(fleetView ? call("GET", api + "fleet/rules" + q) : null);
    });
    reads.push($("auditsec").open && state.fleetZone
               ? call("GET", api + "audit?n=" + AUDIT_N + "&zone=" +
                      encodeURIComponent(state.fleetZone))
               : null);
    return Promise.all(reads).then(function (res) {
      var old = state.fleet;
      var snap = { t: Date.now(), zones: {}, rules: fleetView };
      var failed = null;
      zones.forEach(function (z, i) {
        var f = res[2 * i], r = res[2 * i + 1];
        var was = old && old.zones[z];
        var entry = { instances: was ? was.instances : [],
                      interval: was ? was.interval : 5,
                      rules: null, byId: null };
        if (f && f.status === 200) {
          entry.instances = f.data.instances;
          entry.interval = f.data.interval;
          state.instancesAt = now;
        } else if (f) {
          failed = failed || "the fleet of " + z + ": " + errorText(f);
        }
        if (r && r.status === 200) {
          entry.rules = r.data;
          entry.byId = {};
          r.data.forEach(function (x) { entry.byId[ruleId(x)] = x; });
        } else if (r) {
          failed = failed || "the fleet's rules of " + z + ": " +
                             errorText(r);
          /* (the last ones read, if any: better than none) */
          entry.rules = was && was.rules;
          entry.byId = was && was.byId;
        }
        snap.zones[z] = entry;
      });
      var a = res[res.length - 1];
      if (a && a.status === 200) {
        state.audit = a.data.entries;
        state.auditError = null;
      } else if (a) {
        state.auditError = "the audit cannot be read: " + errorText(a);
      }
      state.fleetError = failed;
      if (!failed) { state.fleetOkAt = Date.now(); }
      /* rates: between two snapshots of the rules */
      state.fleetBase = fleetView && old && old.rules ? old : null;
      state.fleet = snap;
      state.fleetAt = Date.now();
      var fz = snap.zones[state.fleetZone];
      var live = 0;
      fz.instances.forEach(function (i) { if (!i.gone) { live++; } });
      if (fz.interval) { FLEET_MS = Math.max(4000, fz.interval * 1000); }
      var had = state.hasFleet;
      state.hasFleet = fz.instances.length > 0;
      /* the fleet's view by default when more than one instance is seen
       * (and nobody chose): read its rules now */
      if (!had && state.hasFleet && live > 1 && !state.viewChosen &&
          !fleetView) {
        state.view = "fleet";
        return refreshFleet();
      }
    });
  }

  function status(ok, t) {
    say($("status"), t);
    $("status").className = ok ? "" : "bad";
  }

  /* One refresh: this instance every time, the fleet when it is due
   * (force: now). */
  function refresh(force) {
    var now = Date.now();
    var fleetDue = force || now - state.fleetAt >= FLEET_MS - 100;
    return refreshLocal()
      .then(function () {
        return fleetDue && !document.hidden ? refreshFleet() : null;
      })
      .then(function () {
        pickSelected();
        renderAll();
        var t = new Date().toLocaleTimeString();
        if (state.fleetError && state.view === "fleet") {
          status(false, "updated " + t + " · " + state.fleetError);
        } else {
          status(true, "updated " + t);
        }
        /* the top keys of this instance every time, the fleet's when
         * the fleet was read */
        var row = selectedRow();
        if (!row || !row.fleet || fleetDue) { return refreshTop(); }
      })
      .catch(function (e) {
        status(false, "cannot read the API: " + e.message);
      });
  }

  function schedule() {
    clearTimeout(state.timer);
    if ($("live").checked) {
      state.timer = setTimeout(function () {
        refresh(false).then(schedule);
      }, REFRESH_MS);
    }
  }
