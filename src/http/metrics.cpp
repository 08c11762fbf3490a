/*
 * metrics.cpp: the counters behind rl_metrics and the endpoint itself.
 *
 * The counters live in one shared memory zone, "rl_metrics", so they are
 * the whole instance's (every worker adds to the same atomics) and they
 * outlive `nginx -s reload`: nginx hands the zone to the new cycle, whose
 * init finds every zone's and rule's entry again by its labels, or adds
 * it. The endpoint prints the Prometheus text exposition format 0.0.4
 * for the zones and rules of the running configuration.
 */

#include "ngx.hpp"

#include "core/usage.hpp"
#include "shm/adaptive.hpp"

namespace {

constexpr size_t kLabel = NGX_HTTP_RL_MAX_NAME;

enum Kind : uint8_t { kFree = 0, kZone = 1, kRule = 2 };

struct Entry {
    uint8_t kind;
    uint8_t zoneLen;
    uint8_t ruleLen;
    char zone[kLabel];
    char rule[kLabel];
    union {
        ngx_http_rl_zone_stats_t zone;
        ngx_http_rl_rule_stats_t rule;
    } stats;
};

/* Entry 0 (kind kFree) catches what does not fit: counted, never
 * shown (the table keeps every name it ever saw, across reloads, so
 * renames can fill it; its init logs the first that does not fit). */
struct Table {
    ngx_uint_t used;
    ngx_uint_t capacity;
    Entry entries[1];
};

/* Upper bounds of the latency buckets, in microseconds and as text. */
constexpr int64_t kBucketUs[NGX_HTTP_RL_LATENCY_BUCKETS] = {
    500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 1000000};
const char *const kBucketText[NGX_HTTP_RL_LATENCY_BUCKETS] = {
    "0.0005", "0.001", "0.0025", "0.005", "0.01",
    "0.025",  "0.05",  "0.1",    "0.25",  "1"};
const char *const kOutcome[NGX_HTTP_RL_OUTCOMES] = {
    "passed", "rejected", "rejected_dry_run", "delayed", "error"};

size_t clip(size_t len) { return len < kLabel ? len : kLabel; }

Entry *find(Table *t, Kind kind, const ngx_str_t *zone,
            const ngx_str_t *rule) {
    size_t zl = clip(zone->len);
    size_t rl = rule != nullptr ? clip(rule->len) : 0;
    for (ngx_uint_t i = 1; i < t->used; i++) {
        Entry *e = &t->entries[i];
        if (e->kind == kind && e->zoneLen == zl && e->ruleLen == rl &&
            ngx_memcmp(e->zone, zone->data, zl) == 0 &&
            (rl == 0 || ngx_memcmp(e->rule, rule->data, rl) == 0)) {
            return e;
        }
    }
    if (t->used == t->capacity) {
        return &t->entries[0];
    }
    Entry *e = &t->entries[t->used++];
    ngx_memzero(e, sizeof(Entry));
    e->kind = kind;
    e->zoneLen = static_cast<uint8_t>(zl);
    e->ruleLen = static_cast<uint8_t>(rl);
    ngx_memcpy(e->zone, zone->data, zl);
    if (rl) {
        ngx_memcpy(e->rule, rule->data, rl);
    }
    return e;
}

/* Label values escape backslash, double quote and newline. */
u_char *label(u_char *p, const char *s, size_t len) {
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '\\' || c == '"') {
            *p++ = '\\';
            *p++ = static_cast<u_char>(c);
        } else if (c == '\n') {
            *p++ = '\\';
            *p++ = 'n';
        } else {
            *p++ = static_cast<u_char>(c);
        }
    }
    return p;
}

Entry *entryOf(const void *stats) {
    return reinterpret_cast<Entry *>(
        const_cast<u_char *>(static_cast<const u_char *>(stats)) -
        offsetof(Entry, stats));
}

u_char *zoneLabel(u_char *p, const ngx_http_rl_zone_t *z) {
    Entry *e = entryOf(z->stats);
    p = ngx_cpymem(p, "{zone=\"", 7);
    return label(p, e->zone, e->zoneLen);
}

u_char *header(u_char *p, const char *name, const char *type,
               const char *help) {
    return ngx_sprintf(p, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
                       type);
}

bool anyRule(const ngx_http_rl_rule_t *) { return true; }

/* f(p, entry, stats) for each zone and name's counters once (its rules
 * share them), those shown, of the names with a rule for which
 * want(rule) holds */
template <typename F, typename Want = decltype(&anyRule)>
u_char *eachRule(u_char *p, ngx_http_rl_main_conf_t *rmcf, F f,
                 Want want = anyRule) {
    auto *names = static_cast<ngx_http_rl_name_t *>(rmcf->names.elts);
    for (ngx_uint_t i = 0; i < rmcf->names.nelts; i++) {
        const ngx_http_rl_name_t &n = names[i];
        ngx_http_rl_rule_stats_t *s = n.first->stats;
        bool wanted = false;
        for (ngx_uint_t k = 0; k < n.nrules && !wanted; k++) {
            wanted = want(n.rules[k]);
        }
        if (s != nullptr && wanted && entryOf(s)->kind != kFree) {
            p = f(p, entryOf(s), s);
        }
    }
    return p;
}

/* NAME{zone="Z",rule="R" */
u_char *ruleSeries(u_char *p, const char *name, size_t len, const Entry *e) {
    p = ngx_cpymem(p, name, len);
    p = ngx_cpymem(p, "{zone=\"", 7);
    p = label(p, e->zone, e->zoneLen);
    p = ngx_cpymem(p, "\",rule=\"", 8);
    return label(p, e->rule, e->ruleLen);
}

u_char *requests(u_char *p, ngx_http_rl_main_conf_t *rmcf) {
    p = header(p, "rl_requests_total", "counter",
               "Requests decided by a rule, by outcome for that rule.");
    return eachRule(p, rmcf, [](u_char *p, Entry *e,
                                ngx_http_rl_rule_stats_t *s) {
        for (int o = 0; o < NGX_HTTP_RL_OUTCOMES; o++) {
            p = ruleSeries(p, "rl_requests_total", 17, e);
            p = ngx_sprintf(p, "\",outcome=\"%s\"} %uA\n", kOutcome[o],
                            s->outcomes[o]);
        }
        return p;
    });
}

/* rl_usage_ratio: its sum counts a rejection as 1 */
u_char *usage(u_char *p, ngx_http_rl_main_conf_t *rmcf) {
    p = header(p, "rl_usage_ratio", "histogram",
               "The share of its limit a rule had used after each "
               "decision; a rejected request counts in +Inf only.");
    return eachRule(p, rmcf, [](u_char *p, Entry *e,
                                ngx_http_rl_rule_stats_t *s) {
        ngx_atomic_uint_t total = 0;
        for (size_t b = 0; b < rl::usage::kBuckets; b++) {
            total += s->usage[b];
            p = ruleSeries(p, "rl_usage_ratio_bucket", 21, e);
            p = ngx_sprintf(p, "\",le=\"%s\"} %uA\n",
                            rl::usage::kBoundText[b], total);
        }
        ngx_atomic_uint_t milli = s->usage_sum;
        p = ruleSeries(p, "rl_usage_ratio_sum", 18, e);
        p = ngx_sprintf(p, "\"} %uA.%03uA\n", milli / 1000, milli % 1000);
        p = ruleSeries(p, "rl_usage_ratio_count", 20, e);
        return ngx_sprintf(p, "\"} %uA\n", total);
    });
}

/* rl_inflight (concurrency= rules) and rl_charges_total (charge=) */
u_char *gateway(u_char *p, ngx_http_rl_main_conf_t *rmcf) {
    ngx_uint_t after = ngx_http_rl_after_rules(rmcf);
    if (after & 1) {
        p = header(p, "rl_inflight", "gauge",
                   "Slots of concurrency= rules this instance's requests "
                   "hold now.");
        p = eachRule(
            p, rmcf,
            [](u_char *q, Entry *e, ngx_http_rl_rule_stats_t *s) {
                q = ruleSeries(q, "rl_inflight", 11, e);
                return ngx_sprintf(q, "\"} %uA\n", s->inflight);
            },
            [](const ngx_http_rl_rule_t *r) {
                return r->algorithm == RL_ALGORITHM_CONCURRENCY;
            });
    }
    if (after & 2) {
        p = header(p, "rl_charges_total", "counter",
                   "Charges of charge= rules as requests ended: sent to "
                   "the store, lost (not counted), invalid values.");
        p = eachRule(
            p, rmcf,
            [](u_char *q, Entry *e, ngx_http_rl_rule_stats_t *s) {
                static const char *const result[] = {"sent", "lost",
                                                     "invalid"};
                for (int k = 0; k < NGX_HTTP_RL_CHARGE_RESULTS; k++) {
                    q = ruleSeries(q, "rl_charges_total", 16, e);
                    q = ngx_sprintf(q, "\",result=\"%s\"} %uA\n", result[k],
                                    s->charges[k]);
                }
                return q;
            },
            [](const ngx_http_rl_rule_t *r) { return r->charge_cv != nullptr; });
    }
    return p;
}

/* concurrency=auto (SPEC 13): N, the last interval's latency (the
 * fleet's for a Redis zone) of each auto rule's busiest key value, and
 * its outcomes by priority level */
u_char *adaptive(u_char *p, ngx_http_rl_main_conf_t *rmcf,
                 rl::adaptive::View *v) {
    static const char *const kSeries[3] = {
        "rl_adaptive_limit", "rl_adaptive_latency_seconds",
        "rl_adaptive_requests_total"};
    static const char *const kHelp[3] = {
        "The in-flight limit N a concurrency=auto rule has learnt.",
        "The latency of its admitted requests in the last interval.",
        "Requests it decided, by priority level and outcome."};
    static const char *const kType[3] = {"gauge", "gauge", "counter"};
    auto *names = static_cast<ngx_http_rl_name_t *>(rmcf->names.elts);
    for (int k = 0; k < 3; k++) {
        p = header(p, kSeries[k], kType[k], kHelp[k]);
        for (ngx_uint_t i = 0; i < rmcf->names.nelts; i++) {
            const ngx_http_rl_rule_t *rule = names[i].first;
            ngx_http_rl_rule_stats_t *s = rule->stats;
            if (rule->adaptive == nullptr || s == nullptr ||
                entryOf(s)->kind == kFree) {
                continue;
            }
            const Entry *e = entryOf(s);
            size_t len = ngx_strlen(kSeries[k]);
            if (k == 2) {
                for (int l = 0; l < 8; l++) {
                    p = ruleSeries(p, kSeries[k], len, e);
                    p = ngx_sprintf(p, "\",priority=\"%d\",outcome=\"%s\"} "
                                       "%uA\n", l / 2,
                                    l % 2 ? "rejected" : "passed",
                                    s->priority[l / 2][l % 2]);
                }
                continue;
            }
            bool seen = rl::adaptive::busiest(rmcf, rule->id, v);
            const auto &params = rl::adaptive::ruleOf(rule)->params;
            if (k == 0) {
                p = ruleSeries(p, kSeries[k], len, e);
                p = ngx_sprintf(p, "\"} %uL\n",
                                seen && v->limit > 0 ? v->limit
                                                     : params.min);
                continue;
            }
            for (int q = 0; q < 2; q++) {
                auto us = static_cast<int64_t>(
                    seen ? (q ? v->p90Us : v->p50Us) : 0);
                p = ruleSeries(p, kSeries[k], len, e);
                p = ngx_sprintf(p, "\",quantile=\"%s\"} %L.%06L\n",
                                q ? "0.9" : "0.5", us / 1000000,
                                us % 1000000);
            }
        }
    }
    return p;
}

u_char *latency(u_char *p, ngx_http_rl_zone_t **zones, ngx_uint_t n) {
    p = header(p, "rl_store_latency_seconds", "histogram",
               "Round trips to the zone's Redis.");
    for (ngx_uint_t i = 0; i < n; i++) {
        ngx_http_rl_zone_stats_t *s = zones[i]->stats;
        if (entryOf(s)->kind == kFree) {
            continue;
        }
        ngx_atomic_uint_t total = 0;
        for (int b = 0; b <= NGX_HTTP_RL_LATENCY_BUCKETS; b++) {
            total += s->latency[b];
            p = ngx_cpymem(p, "rl_store_latency_seconds_bucket", 31);
            p = zoneLabel(p, zones[i]);
            p = ngx_sprintf(p, "\",le=\"%s\"} %uA\n",
                            b < NGX_HTTP_RL_LATENCY_BUCKETS ? kBucketText[b]
                                                             : "+Inf",
                            total);
        }
        ngx_atomic_uint_t us = s->latency_sum_us;
        p = ngx_cpymem(p, "rl_store_latency_seconds_sum", 28);
        p = zoneLabel(p, zones[i]);
        p = ngx_sprintf(p, "\"} %uA.%06uA\n", us / 1000000, us % 1000000);
        p = ngx_cpymem(p, "rl_store_latency_seconds_count", 30);
        p = zoneLabel(p, zones[i]);
        p = ngx_sprintf(p, "\"} %uA\n", total);
    }
    return p;
}

u_char *perZone(u_char *p, ngx_http_rl_zone_t **zones, ngx_uint_t n,
                const char *name, const char *type, const char *help,
                size_t field) {
    p = header(p, name, type, help);
    for (ngx_uint_t i = 0; i < n; i++) {
        if (entryOf(zones[i]->stats)->kind == kFree) {
            continue;
        }
        auto *v = reinterpret_cast<ngx_atomic_t *>(
            reinterpret_cast<u_char *>(zones[i]->stats) + field);
        p = ngx_sprintf(p, "%s", name);
        p = zoneLabel(p, zones[i]);
        p = ngx_sprintf(p, "\"} %uA\n", *v);
    }
    return p;
}

/* rl_lease_units_total, for the zones with lease= */
u_char *leaseUnits(u_char *p, ngx_http_rl_zone_t **zones, ngx_uint_t n) {
    static const struct {
        const char *use;
        size_t field;
    } uses[] = {
        {"granted", offsetof(ngx_http_rl_zone_stats_t, lease_granted)},
        {"spent", offsetof(ngx_http_rl_zone_stats_t, lease_spent)},
        {"returned", offsetof(ngx_http_rl_zone_stats_t, lease_returned)},
    };
    bool any = false;
    for (ngx_uint_t i = 0; i < n; i++) {
        if (zones[i]->lease == 0 || entryOf(zones[i]->stats)->kind == kFree) {
            continue;
        }
        if (!any) {
            any = true;
            p = header(p, "rl_lease_units_total", "counter",
                       "Units of leases: granted by Redis, spent by "
                       "requests, returned unspent.");
        }
        for (const auto &u : uses) {
            auto *v = reinterpret_cast<ngx_atomic_t *>(
                reinterpret_cast<u_char *>(zones[i]->stats) + u.field);
            p = ngx_cpymem(p, "rl_lease_units_total", 20);
            p = zoneLabel(p, zones[i]);
            p = ngx_sprintf(p, "\",use=\"%s\"} %uA\n", u.use, *v);
        }
    }
    return p;
}

}  // namespace

extern "C" {

ngx_int_t ngx_http_rl_metrics_init_zone(ngx_shm_zone_t *shm_zone,
                                        void *data) noexcept {
    auto *rmcf = static_cast<ngx_http_rl_main_conf_t *>(shm_zone->data);
    auto *pool = reinterpret_cast<ngx_slab_pool_t *>(shm_zone->shm.addr);
    Table *t;

    if (shm_zone->shm.exists || data != nullptr) {
        t = static_cast<Table *>(pool->data);
    } else {
        size_t size = shm_zone->shm.size / 2;
        t = static_cast<Table *>(ngx_slab_alloc(pool, size));
        if (t == nullptr) {
            return NGX_ERROR;
        }
        ngx_memzero(t, sizeof(Table));
        t->used = 1;
        t->capacity = (size - offsetof(Table, entries)) / sizeof(Entry);
        pool->data = t;
    }

    /* Only the master (or a lone process) runs this, before the workers
     * exist: nobody else touches the table meanwhile. */
    auto **zones = static_cast<ngx_http_rl_zone_t **>(rmcf->zones.elts);
    bool full = false;
    for (ngx_uint_t i = 0; i < rmcf->zones.nelts; i++) {
        Entry *e = find(t, kZone, &zones[i]->name, nullptr);
        zones[i]->stats = &e->stats.zone;
        if (ngx_http_rl_embedded(zones[i])) {
            zones[i]->stats->up = 1; /* the embedded store is always up */
        }
        if (e->kind == kFree && !full) {
            full = true;
            ngx_log_error(NGX_LOG_WARN, shm_zone->shm.log, 0,
                          "rl_metrics: no room for zone \"%V\" and other "
                          "new names: not shown (the table keeps every "
                          "name since nginx started)", &zones[i]->name);
        }
    }
    auto **rules = static_cast<ngx_http_rl_rule_t **>(rmcf->rules.elts);
    for (ngx_uint_t i = 0; i < rmcf->rules.nelts; i++) {
        Entry *e = find(t, kRule, &rules[i]->zone->name, &rules[i]->name);
        rules[i]->stats = &e->stats.rule;
        if (e->kind == kFree && !full) {
            full = true;
            ngx_log_error(NGX_LOG_WARN, shm_zone->shm.log, 0,
                          "rl_metrics: no room for rule \"%V\" of zone "
                          "\"%V\" and other new names: not shown (the "
                          "table keeps every name since nginx started)",
                          &rules[i]->name, &rules[i]->zone->name);
        }
    }
    return NGX_OK;
}

void ngx_http_rl_stats_rule(const ngx_http_rl_rule_t *rule,
                            ngx_uint_t outcome, const rl_outcome_t *o,
                            const ngx_str_t *value) noexcept {
    ngx_http_rl_rule_stats_t *s = rule->stats;
    if (s == nullptr) {
        return;
    }
    (void) ngx_atomic_fetch_add(&s->outcomes[outcome], 1);
    size_t b = rl::usage::kBuckets - 1;
    int64_t milli = 1000;
    if (outcome == NGX_HTTP_RL_REJECTED ||
        outcome == NGX_HTTP_RL_REJECTED_DRY_RUN) {
        ngx_http_rl_top_reject(rule, value);
    } else if (outcome != NGX_HTTP_RL_ERROR && o != nullptr) {
        int64_t limit = o->limit > 0 ? o->limit
                                     : static_cast<int64_t>(rule->limit);
        b = rl::usage::bucket(limit, o->remaining);
        milli = rl::usage::usedMilli(limit, o->remaining);
        ngx_http_rl_top_admit(rule, value);
    } else {
        return;     /* no figures: not in the histogram */
    }
    (void) ngx_atomic_fetch_add(&s->usage[b], 1);
    (void) ngx_atomic_fetch_add(&s->usage_sum,
                                static_cast<ngx_atomic_int_t>(milli));
}

void ngx_http_rl_stats_latency(ngx_http_rl_zone_t *zone,
                               ngx_msec_t us) noexcept {
    int b = 0;
    while (b < NGX_HTTP_RL_LATENCY_BUCKETS &&
           static_cast<int64_t>(us) > kBucketUs[b]) {
        b++;
    }
    (void) ngx_atomic_fetch_add(&zone->stats->latency[b], 1);
    (void) ngx_atomic_fetch_add(&zone->stats->latency_sum_us, us);
}

ngx_int_t ngx_http_rl_metrics_handler(ngx_http_request_t *r) noexcept {
    if (!(r->method & (NGX_HTTP_GET | NGX_HTTP_HEAD))) {
        return NGX_HTTP_NOT_ALLOWED;
    }
    ngx_int_t rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    auto *rmcf = static_cast<ngx_http_rl_main_conf_t *>(
        ngx_http_get_module_main_conf(r, ngx_http_rl_module));
    auto **zones = static_cast<ngx_http_rl_zone_t **>(rmcf->zones.elts);
    ngx_uint_t nz = rmcf->zones.nelts;
    if (rmcf->metrics == nullptr) {
        nz = 0;
    }

    /* every line is at most two labels of kLabel escaped bytes plus a
     * name, a value and punctuation */
    size_t line = 4 * kLabel + 128;
    /* per rule: its outcomes, usage buckets, sum and count, rl_inflight
     * and three rl_charges_total; an auto rule's N, two quantiles and
     * eight outcomes */
    size_t size = 4096 + line * ((NGX_HTTP_RL_OUTCOMES +
                                  NGX_HTTP_RL_USAGE_BUCKETS + 2 + 4 + 11) *
                                     rmcf->rules.nelts +
                                 (NGX_HTTP_RL_LATENCY_BUCKETS + 15) * nz);
    ngx_buf_t *b = ngx_create_temp_buf(r->pool, size);
    if (b == nullptr) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    u_char *p = b->last;
    if (rmcf->metrics != nullptr) {
        p = requests(p, rmcf);
        p = usage(p, rmcf);
        p = latency(p, zones, nz);
        p = perZone(p, zones, nz, "rl_store_timeouts_total", "counter",
                    "Requests that got no answer within the timeout.",
                    offsetof(ngx_http_rl_zone_stats_t, timeouts));
        p = perZone(p, zones, nz, "rl_store_reconnects_total", "counter",
                    "Connections to Redis made again after a failure.",
                    offsetof(ngx_http_rl_zone_stats_t, reconnects));
        p = perZone(p, zones, nz, "rl_store_up", "gauge",
                    "1 when the zone's store answers, else 0.",
                    offsetof(ngx_http_rl_zone_stats_t, up));
        p = perZone(p, zones, nz, "rl_deny_cache_hits_total", "counter",
                    "Rejections answered from the deny cache.",
                    offsetof(ngx_http_rl_zone_stats_t, deny_cache_hits));
        p = perZone(p, zones, nz, "rl_local_decisions_total", "counter",
                    "Requests decided in this instance's memory "
                    "(failure=local) while Redis could not answer.",
                    offsetof(ngx_http_rl_zone_stats_t, local));
        p = perZone(p, zones, nz, "rl_store_errors_total", "counter",
                    "Error replies from Redis to the zone's calls (but "
                    "NOSCRIPT, MOVED and ASK, which the module follows).",
                    offsetof(ngx_http_rl_zone_stats_t, errors));
        p = perZone(p, zones, nz, "rl_store_evictions_total", "counter",
                    "States that still limited a key, forgotten to make "
                    "room in the zone's shared memory.",
                    offsetof(ngx_http_rl_zone_stats_t, evictions));
        p = leaseUnits(p, zones, nz);
        p = gateway(p, rmcf);
        if (rmcf->adaptive != nullptr) {
            auto *v = static_cast<rl::adaptive::View *>(
                ngx_palloc(r->pool, sizeof(rl::adaptive::View)));
            if (v == nullptr) {
                return NGX_HTTP_INTERNAL_SERVER_ERROR;
            }
            p = adaptive(p, rmcf, v);
        }
    }
    b->last = p;
    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;
    if (b->last == b->pos) {
        b->temporary = 0; /* no zone: an empty page, a special buffer */
    }

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = b->last - b->pos;
    ngx_str_set(&r->headers_out.content_type,
                "text/plain; version=0.0.4; charset=utf-8");
    r->headers_out.content_type_len = r->headers_out.content_type.len;

    rc = ngx_http_send_header(r);
    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }
    ngx_chain_t out = {b, nullptr};
    return ngx_http_output_filter(r, &out);
}

}  // extern "C"
