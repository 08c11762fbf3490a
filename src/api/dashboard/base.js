  /* base.js: where the API is, the page's state, helpers to make
   * elements and format figures, the calls, the what-if's arithmetic
   * (part of index.html's script: embed.sh puts the parts in order,
   * inside one function) */
  /* the API is below this page's own address: resolved against the
   * document's, never made of its path, which a crafted address
   * ("//host/..%2F...") would turn into another host */
  var api = new URL("1/", document.baseURI).href;
  var REFRESH_MS = 2000;
  /* the fleet's reads cost Redis work (every instance's record): no
   * more often than this, nor than the instances publish */
  var FLEET_MS = 4000;
  var AUDIT_N = 20;
  var BOUNDS = [0.1, 0.25, 0.5, 0.75, 0.9, 1];

  var state = {
    write: false,
    view: "instance",       /* or "fleet" */
    redisZones: [],         /* names of the zones with Redis */
    fleetZone: null,        /* the zone whose instances are listed */
    hasFleet: false,        /* a zone with Redis whose fleet answers */
    /* this instance: its last two snapshots (rates) */
    local: null, localBase: null,
    /* the fleet: its last two snapshots, each {t, zones: {Z: {instances,
     * interval, rules}}} */
    fleet: null, fleetBase: null, fleetAt: 0, fleetError: null,
    instancesAt: 0, viewChosen: false,
    audit: null, auditError: null,
    selected: null, topKind: "limit", timer: null, limitEdited: false
  };

  function $(id) { return document.getElementById(id); }
  /* A text as the page shows it: control and format characters as
   * \uXXXX. A name is anything its instance or nginx.conf says: a bidi
   * override (U+202E) in it would reorder what follows on the page, a
   * zero-width one hide a difference. Every text the page writes goes
   * through it (el, text, kvRow, say, tip). */
  var CONTROLS = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;
  function shown(s) {
    return String(s).replace(CONTROLS, function (c) {
      var h = c.codePointAt(0).toString(16).toUpperCase();
      return "\\u" + (h.length > 4 ? "{" + h + "}" : ("000" + h).slice(-4));
    });
  }
  /* a node's text, its title (a title's lines kept apart) */
  function say(node, t) { node.textContent = shown(t); }
  function tip(node, t) {
    node.title = String(t).split("\n").map(shown).join("\n");
  }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined) { say(e, text); }
    return e;
  }
  function td(text, cls) { return el("td", cls, text); }
  function cell(text, cls, title) {
    var c = td(text, cls);
    if (title) { tip(c, title); }
    return c;
  }
  function text(s) { return document.createTextNode(shown(s)); }
  /* a row of a definition list: term k, its value a string, a node or
   * nodes */
  function kvRow(dl, k, v, cls) {
    dl.appendChild(el("dt", "", k));
    var dd = el("dd", cls || "");
    if (typeof v === "string") { say(dd, v); }
    else { [].concat(v).forEach(function (x) { dd.appendChild(x); }); }
    dl.appendChild(dd);
  }

  function fmtCount(n) {
    if (n >= 1e9) { return (n / 1e9).toFixed(n >= 1e10 ? 0 : 1) + "G"; }
    if (n >= 1e6) { return (n / 1e6).toFixed(n >= 1e7 ? 0 : 1) + "M"; }
    if (n >= 1e4) { return (n / 1e3).toFixed(n >= 1e5 ? 0 : 1) + "k"; }
    return String(n);
  }
  function fmtRate(r) {
    if (r === null || r === undefined) { return "–"; }
    if (r === 0) { return "0"; }
    if (r < 0.1) { return "<0.1"; }
    if (r < 10) { return r.toFixed(1); }
    return fmtCount(Math.round(r));
  }
  function fmtShare(x) {
    if (x === null || x === undefined || isNaN(x)) { return "–"; }
    if (x === 0) { return "0%"; }
    if (x < 0.001) { return "<0.1%"; }
    return (x * 100).toFixed(x < 0.1 ? 1 : 0) + "%";
  }
  function fmtWindow(s) {
    var units = [[86400, "d"], [3600, "h"], [60, "m"], [1, "s"]];
    for (var i = 0; i < units.length; i++) {
      if (s >= units[i][0] && s % units[i][0] === 0) {
        var n = s / units[i][0];
        return n === 1 ? units[i][1] : n + units[i][1];
      }
    }
    return s + "s";
  }
  function fmtSeconds(s) {
    if (s < 0) { return "no expiry"; }
    s = Math.round(s);
    if (s < 120) { return s + " s"; }
    if (s < 7200) { return Math.round(s / 60) + " min"; }
    if (s < 172800) { return Math.round(s / 3600) + " h"; }
    return Math.round(s / 86400) + " d";
  }
  function fmtTime(epoch) {
    var d = new Date(epoch * 1000);
    return d.toDateString() === new Date().toDateString()
      ? d.toLocaleTimeString() : d.toLocaleString();
  }
  /* "until 14:05:00 (9 min left)" of an epoch, or "until removed" */
  function fmtUntil(epoch) {
    if (epoch === null || epoch === undefined) { return "until removed"; }
    var left = epoch - Date.now() / 1000;
    return "until " + fmtTime(epoch) + " (" +
      (left > 0 ? fmtSeconds(left) + " left" : "ending") + ")";
  }
  /* "9 min left", of an epoch */
  function fmtLeft(epoch) {
    if (epoch === null || epoch === undefined) { return "until removed"; }
    var left = epoch - Date.now() / 1000;
    return left > 0 ? fmtSeconds(left) + " left" : "ending";
  }
  /* a rule's limit's unit: "/m", " in flight" */
  /* a rule's unit (or a drift's definition's): "/month" for a
   * calendar rule, whose "window" is only its period's nominal length */
  function per(r) {
    if (r.period) { return "/" + r.period; }
    return r.window === null ? " in flight" : "/" + fmtWindow(r.window);
  }
  var WEEKDAYS = { mon: "Monday", tue: "Tuesday", wed: "Wednesday",
                   thu: "Thursday", fri: "Friday", sat: "Saturday",
                   sun: "Sunday" };
  function ordinal(n) {
    var v = n % 100, th = ["th", "st", "nd", "rd"];
    return n + (th[(v - 20) % 10] || th[v] || th[0]);
  }
  /* where a calendar rule's periods start: its time zone and anchor
   * ("Europe/Berlin, from the 15th"); "" for another rule */
  function calendarText(r) {
    if (!r.period) { return ""; }
    var a = r.anchor, from = "";
    if (r.period === "month") {
      from = !a ? "from the 1st"
        : /^[0-9]+$/.test(a) ? "from the " + ordinal(+a)
        : "from each key's " + a;
    } else if (r.period === "week") {
      from = "from " + (WEEKDAYS[a || "mon"] || a);
    }
    return r.tz + (from ? ", " + from : "");
  }
  function num(n) {
    return Math.round(n * 100) / 100;
  }

  /* A key as the API shows it (printable, bytes as \xNN) to its bytes. */
  function textBytes(t) {
    var out = [];
    for (var i = 0; i < t.length; i++) {
      var m = /^\\x([0-9a-fA-F]{2})/.exec(t.slice(i, i + 4));
      if (m) { out.push(parseInt(m[1], 16)); i += 3; continue; }
      var c = t.codePointAt(i);
      if (c > 0xffff) { i++; }
      if (c < 0x80) { out.push(c); }
      else {
        var u = unescape(encodeURIComponent(String.fromCodePoint(c)));
        for (var j = 0; j < u.length; j++) { out.push(u.charCodeAt(j)); }
      }
    }
    return out;
  }
  function pctBytes(bytes) {
    var s = "";
    for (var i = 0; i < bytes.length; i++) {
      var b = bytes[i];
      var ch = String.fromCharCode(b);
      s += /[A-Za-z0-9._~-]/.test(ch) ? ch
           : "%" + (b < 16 ? "0" : "") + b.toString(16).toUpperCase();
    }
    return s;
  }
  function rulePath(rule, suffix) {
    return api + "rules/" + encodeURIComponent(rule.name) + suffix +
           "?zone=" + encodeURIComponent(rule.zone);
  }
  /* The address of a rule's key: the value in the query (value=), which
   * carries any value ("." and "..", which a path cannot: fetch resolves
   * them away, encoded or not; a NUL byte; any length); an address
   * rule takes the text as it is. */
  function keyPath(rule, t, suffix) {
    var value = rule.key === "$binary_remote_addr"
      ? encodeURIComponent(t) : pctBytes(textBytes(t));
    return rulePath(rule, "/key" + (suffix || "")) + "&value=" + value;
  }
  function ruleId(r) { return JSON.stringify([r.zone, r.name]); }

  function call(method, url, body) {
    var opts = { method: method, headers: {}, cache: "no-store" };
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    return fetch(url, opts).then(function (res) {
      if (res.status === 204) { return { status: 204, data: null }; }
      return res.json().then(function (data) {
        return { status: res.status, data: data };
      }, function () {
        return { status: res.status, data: { error: {
          status: res.status, text: res.statusText, code: "" } } };
      });
    });
  }
  function errorText(res) {
    var e = res.data && res.data.error;
    return e ? e.status + " " + e.code + ": " + e.text : "HTTP " + res.status;
  }

  /* per second, from the counters of two snapshots */
  function rate(now, before, dt) {
    if (before === undefined || before === null || dt <= 0) { return null; }
    var d = now - before;
    return d < 0 ? null : d / dt;
  }
  /* the share of requests a limit of BOUNDS[b] x N would have rejected */
  function whatIf(usage, b) {
    var total = usage[usage.length - 1].count;
    if (!total) { return null; }
    return 1 - usage[b].count / total;
  }
  function rejectedShare(usage) { return whatIf(usage, BOUNDS.length - 1); }
  /* What a limit of `ratio` x N would have rejected, as the histogram
   * can tell it: exact at its bounds, between two of them elsewhere. */
  function whatIfText(usage, ratio) {
    var total = usage[usage.length - 1].count;
    if (!total) { return "no request decided yet"; }
    var share = function (b) { return whatIf(usage, b); };
    var eps = 1e-9;
    for (var b = 0; b < BOUNDS.length; b++) {
      if (Math.abs(BOUNDS[b] - ratio) < eps) {
        return fmtShare(share(b));
      }
    }
    if (ratio > 1) { return "at most " + fmtShare(share(BOUNDS.length - 1)); }
    if (ratio < BOUNDS[0]) { return "at least " + fmtShare(share(0)); }
    for (b = 0; b + 1 < BOUNDS.length; b++) {
      if (ratio > BOUNDS[b] && ratio < BOUNDS[b + 1]) {
        var lo = fmtShare(share(b + 1)), hi = fmtShare(share(b));
        return lo === hi ? lo : lo.replace("%", "") + "–" + hi;
      }
    }
    return "–";
  }
