/*
 * fleet/publish.cpp: an instance's record and identity (see
 * fleet/publish.hpp).
 */

#include "publish.hpp"

#include "core/fleet_record.hpp"
#include "core/usage.hpp"
#include "fleet.hpp"
#include "shm/live.hpp"
#include "shm/top_keys.hpp"

namespace rl::fleet::publish {
namespace {

/* Lines into a buffer that never grows past its bound: a line that
 * does not fit is not written (the caller counts it left out). */
class Writer {
public:
    Writer(u_char *buf, size_t cap) : start_(buf), p_(buf), end_(buf + cap) {}

    /* room for a line of at most n bytes */
    bool fits(size_t n) const { return static_cast<size_t>(end_ - p_) >= n; }

    Writer &raw(std::string_view s) {
        if (!s.empty()) {   /* an empty view may have no data */
            p_ = ngx_cpymem(p_, s.data(), s.size());
        }
        return *this;
    }
    Writer &field(std::string_view s) {
        *p_++ = '\t';
        p_ = reinterpret_cast<u_char *>(
            escape(reinterpret_cast<char *>(p_), s));
        return *this;
    }
    Writer &num(int64_t v) {
        *p_++ = '\t';
        p_ = ngx_http_rl_decimal(p_, v);
        return *this;
    }
    void end() { *p_++ = '\n'; }
    size_t length() const { return static_cast<size_t>(p_ - start_); }

private:
    u_char *start_;
    u_char *p_;
    u_char *end_;
};

/* A line's worst case: its escaped texts and its numbers. */
size_t lineMax(size_t text, size_t numbers) {
    return 16 + escapedMax(text) + numbers * (NGX_INT64_LEN + 1);
}

void ruleLine(Writer &w, const ngx_http_rl_name_t *name) {
    const ngx_http_rl_rule_t *r = name->first;
    char dig[12];
    definitionDigest(name, dig);
    size_t len;
    const char *alg = rl_algorithm_name(static_cast<int>(r->algorithm), &len);
    const ngx_http_rl_rule_stats_t *s = r->stats;
    w.raw("rule").field(viewOf(r->name)).field({dig, 12})
        .field({alg, len})
        .num(static_cast<int64_t>(r->limit));
    bool inflight = r->algorithm == RL_ALGORITHM_CONCURRENCY;
    w.num(inflight ? 0 : static_cast<int64_t>(r->window_us))
        .num(static_cast<int64_t>(r->burst))
        .num(r->cost_cv != nullptr ? 0 : static_cast<int64_t>(r->cost))
        .num(r->dry_run ? 1 : 0)
        .num(inflight ? static_cast<int64_t>(r->window_us) : 0)
        .num(r->charge_cv != nullptr ? 1 : 0)
        .field(viewOf(r->key.value));
    for (int o = 0; o < NGX_HTTP_RL_OUTCOMES; o++) {
        w.num(s != nullptr ? static_cast<int64_t>(s->outcomes[o]) : 0);
    }
    int64_t total = 0;
    for (size_t b = 0; b < usage::kBuckets; b++) {
        total += s != nullptr ? static_cast<int64_t>(s->usage[b]) : 0;
        w.num(total);
    }
    w.end();
}

/* A calendar rule's period, its time zone and anchor (as written), after
 * its rule line: /1/fleet/rules shows them as /1/rules does. */
void calendarLine(Writer &w, const ngx_http_rl_name_t *name) {
    const ngx_http_rl_rule_t *r = name->first;
    ngx_str_t unit, tz, anchor;
    if (r->calendar == nullptr) {
        return;
    }
    ngx_http_rl_calendar_describe(r, &unit, &tz, &anchor);
    if (w.fits(lineMax(r->name.len + unit.len + tz.len + anchor.len, 0))) {
        w.raw("calendar").field(viewOf(r->name)).field(viewOf(unit))
            .field(viewOf(tz)).field(viewOf(anchor)).end();
    }
}

/* An auto rule's outcomes by priority level (SPEC 13), after its rule
 * line: "auto NAME passed0 rejected0 ... passed3 rejected3". */
void adaptiveLine(Writer &w, const ngx_http_rl_name_t *name) {
    const ngx_http_rl_rule_t *r = name->first;
    if (r->adaptive == nullptr || r->stats == nullptr ||
        !w.fits(lineMax(r->name.len, 8))) {
        return;
    }
    w.raw("auto").field(viewOf(r->name));
    for (int l = 0; l < 8; l++) {
        w.num(static_cast<int64_t>(r->stats->priority[l / 2][l % 2]));
    }
    w.end();
}

/* The name's top keys (or its trial's): at most kTopPerRule; returns
 * how many were left out for room. */
size_t topLines(Writer &w, const ngx_http_rl_name_t *name, bool trial,
                top::Entry *entries) {
    size_t n = trial ? live::trialTop(name, entries)
                     : shm::topKeys(name->first, entries);
    size_t cut = 0;
    for (size_t i = 0; i < n && i < kTopPerRule; i++) {
        std::string_view key = entries[i].kept();
        if (!w.fits(lineMax(name->first->name.len + key.size(), 1))) {
            cut++;
            continue;
        }
        w.raw(trial ? "ttop" : "top").field(viewOf(name->first->name))
            .num(entries[i].rejected).field(key).end();
    }
    return cut;
}

}  // namespace

bool identity(ngx_pool_t *pool, ngx_http_rl_main_conf_t *rmcf,
              ngx_str_t *out) {
    std::string_view name = instanceName(rmcf);
    size_t cap = lineMax(name.size() + 64, 4);
    auto *p = static_cast<u_char *>(ngx_pnalloc(pool, cap));
    if (p == nullptr) {
        return false;
    }
    auto *ccf = reinterpret_cast<ngx_core_conf_t *>(
        ngx_get_conf(ngx_cycle->conf_ctx, ngx_core_module));
    Writer w(p, cap);
    w.raw(instanceId(rmcf)).field(name).field(NGX_HTTP_RL_VERSION)
        .field(NGINX_VERSION).num(startedMs(rmcf))
        .num(ccf != nullptr ? ccf->worker_processes : 1)
        .num(static_cast<int64_t>(rmcf->fleet_interval));
    *out = {w.length(), p};
    return true;
}

bool record(ngx_pool_t *pool, ngx_http_rl_main_conf_t *rmcf,
            const ngx_http_rl_zone_t *zone, ngx_str_t *out) {
    auto *p = static_cast<u_char *>(ngx_pnalloc(pool, kRecordMax));
    auto *entries = static_cast<top::Entry *>(
        ngx_palloc(pool, top::kListMax * sizeof(top::Entry)));
    if (p == nullptr || entries == nullptr) {
        return false;
    }
    /* a cut line's room is kept back */
    Writer w(p, kRecordMax - 64);
    w.raw(kRecordHead);
    w.raw("zone").field(viewOf(zone->name))
        .num(zone->stats != nullptr && zone->stats->up ? 1 : 0).end();
    auto *names = static_cast<ngx_http_rl_name_t *>(rmcf->names.elts);
    size_t cutRules = 0, cutTops = 0;
    /* the rules first (the sums need them), then what room is left */
    for (ngx_uint_t i = 0; i < rmcf->names.nelts; i++) {
        const ngx_http_rl_name_t *n = &names[i];
        if (n->first->zone != zone) {
            continue;
        }
        if (!w.fits(lineMax(n->first->name.len + n->first->key.value.len,
                            22))) {
            cutRules++;
            continue;
        }
        ruleLine(w, n);
        calendarLine(w, n);
        adaptiveLine(w, n);
        char by[live::kMaxBy], reason[live::kMaxReason];
        live::Setting t = live::read(n, live::Kind::Trial, by, reason);
        if (t.limit >= 0 && w.fits(lineMax(n->first->name.len, 5))) {
            int64_t passed, rejected;
            live::trialFigures(n, &passed, &rejected);
            w.raw("trial").field(viewOf(n->first->name)).num(t.limit)
                .num(t.untilMs).num(t.sinceMs).num(passed).num(rejected)
                .end();
        }
    }
    for (ngx_uint_t i = 0; i < rmcf->names.nelts; i++) {
        const ngx_http_rl_name_t *n = &names[i];
        if (n->first->zone == zone) {
            cutTops += topLines(w, n, false, entries);
            cutTops += topLines(w, n, true, entries);
        }
    }
    Writer last(p + w.length(), 64);
    if (cutRules > 0 || cutTops > 0) {
        last.raw("cut").num(static_cast<int64_t>(cutRules))
            .num(static_cast<int64_t>(cutTops)).end();
    }
    *out = {w.length() + last.length(), p};
    return true;
}

void definitionDigest(const ngx_http_rl_name_t *name, char out[12]) {
    /* each rule's definition, as written in its place: what an operator
     * changes in nginx.conf */
    u_char text[4096];
    u_char *p = text, *end = text + sizeof(text);
    for (ngx_uint_t i = 0; i < name->nrules; i++) {
        const ngx_http_rl_rule_t *r = name->rules[i];
        p = ngx_slprintf(p, end, "%ui %uL %uL %uL %uL %uL %ui %d %V;",
                         r->algorithm, r->limit, r->window_us, r->burst,
                         r->delay, r->cost_cv != nullptr ? 0 : r->cost,
                         r->dry_run, r->charge_cv != nullptr,
                         &r->key.value);
    }
    digest({reinterpret_cast<char *>(text),
            static_cast<size_t>(p - text)}, out);
}

}  // namespace rl::fleet::publish
