  /* act.js: what an operator does: try or set a limit, a key's
   * writes, and the controls' handlers; then the first read (part of
   * index.html's script) */
  /* ------------------------------------------------------------- */
  /* the selected rule: try or set a limit                           */

  function ruleMessage(t, kind) {
    var m = $("rulemsg");
    say(m, t);
    m.className = "msg " + (kind || "");
  }
  function ruleWrite(method, suffix, body, done) {
    var r = selectedRule();
    if (!r) { ruleMessage("pick a rule", "error"); return; }
    call(method, rulePath(r, suffix), body).then(function (res) {
      if (res.status >= 300) { ruleMessage(errorText(res), "error"); return; }
      ruleMessage(done + " (" + r.name + ")", "done");
      /* at once, and again once every instance read it (a second) */
      return refresh(true).then(function () {
        setTimeout(function () { refresh(true); }, 1500);
      });
    }, function (e) { ruleMessage(e.message, "error"); });
  }
  function newLimit() {
    var v = $("newlimit").value;
    var n = Number(v);
    if (v === "" || !Number.isInteger(n) || n < 0 || n > 1e9) {
      ruleMessage("the limit is a whole number from 0 to 1e9", "error");
      return null;
    }
    return n;
  }
  function minutes(id, required) {
    var v = $(id).value;
    if (v === "") { return required ? null : undefined; }
    var n = Number(v);
    return n > 0 ? Math.round(n * 60) : null;
  }
  $("trystart").onclick = function () {
    var n = newLimit(), ttl = minutes("trialttl", true);
    if (n === null) { return; }
    if (!ttl || ttl > 86400) {
      ruleMessage("a trial runs 1 to 1440 minutes", "error");
      return;
    }
    ruleWrite("PUT", "/trial", { limit: n, ttl: ttl },
              "trial of " + n + " started for " + fmtSeconds(ttl));
  };
  $("trystop").onclick = function () {
    ruleWrite("DELETE", "/trial", undefined, "trial ended");
  };
  $("liveset").onclick = function () {
    var n = newLimit(), ttl = minutes("livettl", false);
    if (n === null) { return; }
    if (ttl === null) { ruleMessage("minutes: a positive number, or " +
                                    "empty for until removed", "error");
                        return; }
    var body = { limit: n };
    if (ttl) { body.ttl = ttl; }
    if ($("livereason").value) { body.reason = $("livereason").value; }
    ruleWrite("PUT", "/limit", body, "live limit of " + n + " set" +
              (ttl ? " for " + fmtSeconds(ttl) : ", until removed"));
  };
  $("liveclear").onclick = function () {
    ruleWrite("DELETE", "/limit", undefined, "live limit removed");
  };
  $("newlimit").oninput = function () {
    state.limitEdited = true;
    renderNewShare();
  };

  /* ------------------------------------------------------------- */
  /* the key panel                                                   */

  function keyRule() {
    var id = $("keyrule").value;
    var rules = state.local ? state.local.rules : [];
    for (var i = 0; i < rules.length; i++) {
      if (ruleId(rules[i]) === id) { return rules[i]; }
    }
    return null;
  }
  function message(t, kind) {
    var m = $("keymsg");
    say(m, t);
    m.className = "msg " + (kind || "");
  }
  function showError(res) { message(errorText(res), "error"); }
  function renderKey(data) {
    var box = $("keystate");
    box.textContent = "";
    var dl = el("dl", "kv");
    kvRow(dl, "key", data.key, "mono");
    kvRow(dl, "limit", String(data.limit) + (data.override !== null
        ? " (override)" : ""));
    kvRow(dl, "remaining", String(data.remaining),
        data.remaining === 0 ? "bad" : "");
    kvRow(dl, "reset", fmtSeconds(data.reset));
    if (data.blocked) {
      kvRow(dl, "blocked", [el("span", "pill down", "BLOCKED"), text(" " +
        fmtSeconds(data.blocked.ttl) + (data.blocked.reason
          ? " — " + data.blocked.reason : ""))]);
    } else {
      kvRow(dl, "blocked", "no");
    }
    kvRow(dl, "override",
          data.override === null ? "none" : String(data.override));
    box.appendChild(dl);
    $("writes").hidden = !state.write;
  }
  function lookUp() {
    var rule = keyRule(), t = $("keyvalue").value;
    if (!rule || !t) { message("pick a rule and type a key", "error");
                       return Promise.resolve(); }
    return call("GET", keyPath(rule, t)).then(function (res) {
      if (res.status !== 200) { $("keystate").textContent = "";
                                $("writes").hidden = true;
                                showError(res); return; }
      message("");
      renderKey(res.data);
    });
  }
  function blockBody() {
    var body = { reason: $("reason").value };
    var ttl = +$("blockttl").value;
    if (ttl > 0) { body.ttl = ttl; }
    return body;
  }
  function write(method, suffix, body, done) {
    var rule = keyRule(), t = $("keyvalue").value;
    if (!rule || !t) { message("pick a rule and type a key", "error");
                       return; }
    call(method, keyPath(rule, t, suffix), body).then(function (res) {
      if (res.status >= 300) { showError(res); return; }
      return lookUp().then(function () {
        message(done + " (" + rule.name + ", " + t + ")", "done");
        return refresh(true);
      });
    });
  }

  $("lookup").onclick = lookUp;
  $("keyvalue").onkeydown = function (e) { if (e.key === "Enter") { lookUp(); } };
  $("block").onclick = function () { write("POST", "/block", blockBody(),
                                           "blocked"); };
  $("unblock").onclick = function () { write("DELETE", "/block", undefined,
                                             "unblocked"); };
  $("override").onclick = function () {
    var body = { limit: +$("ovlimit").value };
    var ttl = +$("ovttl").value;
    if (ttl > 0) { body.ttl = ttl; }
    write("PUT", "/override", body, "limit set");
  };
  $("unoverride").onclick = function () { write("DELETE", "/override",
                                                undefined, "override removed"); };
  $("reset").onclick = function () { write("DELETE", "", undefined,
                                           "usage reset"); };
  $("whatif").onchange = function () {
    state.limitEdited = false;
    renderRules();
    renderRuleBox();
  };
  $("filter").oninput = renderRules;
  $("live").onchange = schedule;
  $("topkind").onchange = function () {
    state.topKind = $("topkind").value;
    refreshTop();
  };
  function choose(view) {
    state.view = view;
    state.viewChosen = true;
    state.fleetBase = null;
    refresh(true);
  }
  $("viewfleet").onchange = function () { choose("fleet"); };
  $("viewinstance").onchange = function () { choose("instance"); };
  $("fleetzone").onchange = function () {
    state.fleetZone = $("fleetzone").value;
    refresh(true);
  };
  $("auditsec").ontoggle = function () {
    if (this.open) { refresh(true); }
  };
  $("rules").tBodies[0].onclick = function (e) {
    var tr = e.target.closest("tr.rule");
    if (!tr) { return; }
    state.selected = tr.dataset.id;
    var rows = this.querySelectorAll("tr.rule");
    for (var i = 0; i < rows.length; i++) {
      rows[i].classList.toggle("selected", rows[i] === tr);
    }
    var opts = $("keyrule").options;
    for (var k = 0; k < opts.length; k++) {
      if (opts[k].value === state.selected) {
        $("keyrule").value = state.selected;
      }
    }
    state.limitEdited = false;
    state.topKind = "limit";
    $("topkind").value = "limit";
    ruleMessage("");
    renderRuleBox();
    refreshTop();
  };

  $("where").textContent = location.host +
    new URL(".", document.baseURI).pathname;
  call("GET", api).then(function (res) {
    state.write = !!(res.data && res.data.write);
  }).then(function () { return refresh(true); }).then(schedule);
