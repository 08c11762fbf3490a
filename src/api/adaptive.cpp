/*
 * api/adaptive.cpp: what /1/rules (and /1/fleet/rules) show of an auto
 * rule (concurrency=auto, SPEC section 13): "limit" the current N (the
 * fleet's for a Redis zone, as worker 0 last heard it; this instance's
 * for an embedded zone), and
 *
 *   "adaptive": {"min", "max", "target" (seconds or null), "key" (the
 *     key value shown: the busiest), "latency": {"p50", "p90"} (the last
 *     interval's, seconds), "baseline" (seconds), "inflight",
 *     "changed" (epoch), "history": [[EPOCH, N, P90, INFLIGHT], ...]},
 *   "priorities": [{"level", "passed", "rejected"}, ...]
 */

#include "api.hpp"

#include "shm/adaptive.hpp"

namespace rl::api {
namespace {

/* us as seconds, to the ms */
Json &secondsOf(Json &out, double us) {
    auto ms = static_cast<int64_t>(us / 1000 + 0.5);
    out.num(ms / 1000);
    if (ms % 1000 != 0) {
        char d[4] = {'.', static_cast<char>('0' + ms % 1000 / 100),
                     static_cast<char>('0' + ms % 100 / 10),
                     static_cast<char>('0' + ms % 10)};
        size_t n = 4;
        while (d[n - 1] == '0') {
            n--;
        }
        out.raw(d, n);
    }
    return out;
}

/* The key value of an entry's name "{VALUE}:ID" */
std::string_view valueOf(const adaptive::View &v) {
    std::string_view k(v.key, v.keyLen);
    size_t open = k.find('{');
    size_t close = k.rfind("}:");
    if (open == std::string_view::npos || close == std::string_view::npos ||
        close <= open) {
        return k;
    }
    return k.substr(open + 1, close - open - 1);
}

}  // namespace

int64_t adaptiveLimit(ngx_http_rl_main_conf_t *rmcf,
                      const ngx_http_rl_rule_t *rule) {
    adaptive::View v;   /* (10 KB: on the stack, nothing to throw) */
    const adaptive::Params &p = adaptive::ruleOf(rule)->params;
    if (!adaptive::busiest(rmcf, rule->id, &v) || v.limit == 0) {
        return static_cast<int64_t>(p.min);
    }
    return static_cast<int64_t>(v.limit);
}

Json &adaptiveJson(Json &out, ngx_http_rl_main_conf_t *rmcf,
                   const ngx_http_rl_rule_t *rule,
                   const int64_t priorities[4][2]) {
    const adaptive::Params &p = adaptive::ruleOf(rule)->params;
    adaptive::View view;
    adaptive::View *v = &view;
    bool seen = adaptive::busiest(rmcf, rule->id, v);
    out.raw(",\"adaptive\":{\"min\":").num(static_cast<int64_t>(p.min))
        .raw(",\"max\":").num(static_cast<int64_t>(p.max))
        .raw(",\"target\":");
    if (p.targetUs > 0) {
        secondsOf(out, static_cast<double>(p.targetUs));
    } else {
        out.raw("null");
    }
    out.raw(",\"key\":");
    if (seen) {
        char text[64 + 3];
        std::string_view value = valueOf(*v);
        size_t len = rl_printable(text, 64, value.data(), value.size());
        out.str({text, len});
    } else {
        out.raw("null");
    }
    out.raw(",\"latency\":{\"p50\":");
    secondsOf(out, seen ? v->p50Us : 0).raw(",\"p90\":");
    secondsOf(out, seen ? v->p90Us : 0).raw("},\"baseline\":");
    secondsOf(out, seen ? v->baselineUs : 0)
        .raw(",\"inflight\":").num(seen ? v->inflight : 0)
        .raw(",\"changed\":");
    if (seen && v->changedMs > 0) {
        out.num(v->changedMs / 1000);
    } else {
        out.raw("null");
    }
    out.raw(",\"history\":[");
    for (size_t i = 0; seen && i < v->npoints; i++) {
        const adaptive::Point &pt = v->points[i];
        out.raw(i ? ",[" : "[").num(pt.t).raw(",").num(pt.n).raw(",");
        secondsOf(out, pt.p90Us).raw(",").num(pt.inflight).raw("]");
    }
    out.raw("]},\"priorities\":[");
    for (int l = 0; l < 4; l++) {
        out.raw(l ? ",{\"level\":" : "{\"level\":").num(l)
            .raw(",\"passed\":").num(priorities[l][0])
            .raw(",\"rejected\":").num(priorities[l][1]).raw("}");
    }
    return out.raw("]");
}

}  // namespace rl::api
