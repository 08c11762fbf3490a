  /* chart.js: an adaptive rule's box (concurrency=auto, SPEC section
   * 13): N, the requests in flight and the p90 latency over the last
   * minutes, drawn as inline SVG from the rule's "adaptive" history, and
   * what each priority level lost (part of index.html's script) */
  var SVG = "http://www.w3.org/2000/svg";

  function svg(tag, attrs, body) {
    var e = document.createElementNS(SVG, tag);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (body !== undefined) { e.textContent = body; }
    return e;
  }

  /* ms or s, as few digits as it takes */
  function fmtLatency(s) {
    if (s === null || s === undefined) { return "–"; }
    return s < 1 ? Math.round(s * 1000) + " ms" : num(s) + " s";
  }

  /* a line through the points [x, y], in the chart's frame */
  function polyline(points, cls) {
    return svg("polyline", {
      "class": cls, fill: "none",
      points: points.map(function (p) { return p[0] + "," + p[1]; })
                    .join(" ")});
  }

  /* N and in-flight on the left axis (requests), the p90 on the right
   * (ms), the last points of the history (each [t, N, p90, inflight]) */
  function adaptiveChart(a) {
    var W = 560, H = 170, L = 40, R = 52, T = 10, B = 22;
    var pts = a.history.slice(-300);
    var s = svg("svg", {"class": "chart", viewBox: "0 0 " + W + " " + H,
                        role: "img",
                        "aria-label": "N, in flight and p90 over time"});
    if (pts.length < 2) {
      s.appendChild(svg("text", {x: L, y: H / 2, "class": "axis"},
                        "no history yet: it grows a point a second"));
      return s;
    }
    var t0 = pts[0][0], t1 = pts[pts.length - 1][0];
    var top = 1, lat = a.target || 0;
    pts.forEach(function (p) {
      top = Math.max(top, p[1], p[3]);
      lat = Math.max(lat, p[2]);
    });
    top = Math.ceil(top * 1.1);
    lat = lat > 0 ? lat * 1.1 : 1;
    function x(t) { return L + (W - L - R) * (t - t0) / Math.max(1, t1 - t0); }
    function y(v) { return T + (H - T - B) * (1 - v / top); }
    function yl(v) { return T + (H - T - B) * (1 - v / lat); }
    s.appendChild(svg("rect", {x: L, y: T, width: W - L - R,
                               height: H - T - B, "class": "frame"}));
    [0, 0.5, 1].forEach(function (f) {
      var v = Math.round(top * f);
      s.appendChild(svg("text", {x: L - 4, y: y(v) + 4, "class": "axis",
                                 "text-anchor": "end"}, String(v)));
      s.appendChild(svg("text", {x: W - R + 4, y: yl(lat * f) + 4,
                                 "class": "axis lat"},
                        fmtLatency(lat * f)));
    });
    if (a.target) {
      s.appendChild(svg("line", {x1: L, x2: W - R, y1: yl(a.target),
                                 y2: yl(a.target), "class": "target"}));
    }
    s.appendChild(polyline(pts.map(function (p) { return [x(p[0]), yl(p[2])]; }),
                           "lat"));
    s.appendChild(polyline(pts.map(function (p) { return [x(p[0]), y(p[3])]; }),
                           "inflight"));
    s.appendChild(polyline(pts.map(function (p) { return [x(p[0]), y(p[1])]; }),
                           "n"));
    var span = t1 - t0;
    s.appendChild(svg("text", {x: L, y: H - 6, "class": "axis"},
                      "−" + (span >= 120 ? Math.round(span / 60) + " min"
                                         : span + " s")));
    s.appendChild(svg("text", {x: W - R, y: H - 6, "class": "axis",
                               "text-anchor": "end"}, "now"));
    return s;
  }

  function legend() {
    var d = el("div", "legend");
    [["n", "N"], ["inflight", "in flight"], ["lat", "p90 latency (right)"]]
      .forEach(function (k) {
        d.appendChild(el("span", "key " + k[0], "—"));
        d.appendChild(text(" " + k[1] + "  "));
      });
    return d;
  }

  /* what each level passed and lost, the worst first as levels go */
  function prioritiesTable(r) {
    var t = el("table", "levels");
    var head = el("tr");
    ["level", "passed", "shed", "shed %"].forEach(function (h, i) {
      head.appendChild(el("th", i ? "n" : "", h));
    });
    t.appendChild(el("thead")).appendChild(head);
    var body = el("tbody");
    (r.priorities || []).forEach(function (p) {
      var all = p.passed + p.rejected;
      var share = all ? p.rejected / all : 0;
      var tr = el("tr");
      tr.appendChild(td(p.level === 0 ? "0 (shed last)" :
                        p.level === 3 ? "3 (shed first)" : String(p.level)));
      tr.appendChild(td(fmtCount(p.passed), "n"));
      tr.appendChild(td(fmtCount(p.rejected), p.rejected ? "n bad" : "n"));
      tr.appendChild(td(all ? Math.round(share * 1000) / 10 + "%" : "–",
                        share > 0 ? "n bad" : "n"));
      body.appendChild(tr);
    });
    t.appendChild(body);
    return t;
  }

  /* the box's part for an adaptive rule */
  function adaptiveBox(r) {
    var a = r.adaptive, box = el("div", "adaptive");
    var dl = el("dl", "kv");
    kvRow(dl, "learns", "N from " + a.min + " to " + a.max +
          (a.target ? ", p90 objective " + fmtLatency(a.target)
                    : ", p90 within 1.25 \u00d7 its baseline") +
          (a.key !== null ? "; key " + a.key : ""));
    kvRow(dl, "now", "N " + r.limit + ", " + a.inflight + " in flight, " +
          "p50 " + fmtLatency(a.latency.p50) + ", p90 " +
          fmtLatency(a.latency.p90) + ", baseline " +
          fmtLatency(a.baseline) +
          (a.changed ? ", N changed " + fmtAgo(a.changed) : ""));
    box.appendChild(dl);
    box.appendChild(adaptiveChart(a));
    box.appendChild(legend());
    box.appendChild(prioritiesTable(r));
    return box;
  }

  /* "12 s ago", "3 min ago" */
  function fmtAgo(epoch) {
    var s = Math.max(0, Math.round(Date.now() / 1000 - epoch));
    return s < 120 ? s + " s ago" : Math.round(s / 60) + " min ago";
  }
