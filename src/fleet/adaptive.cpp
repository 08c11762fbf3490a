/*
 * fleet/adaptive.cpp: worker 0's interval of concurrency=auto (see
 * adaptive.hpp).
 */

#include "adaptive.hpp"

#include <cstdlib>

#include "clock.hpp"
#include "core/cluster.hpp"
#include "core/reply.hpp"
#include "core/script.hpp"
#include "redis/link.hpp"
#include "shm/adaptive.hpp"
#include "shm/live.hpp"

namespace rl::adaptive {
namespace {

/* A Redis zone's samples go every quarter of an interval: the interval
 * that Redis closes then holds samples at most that old (sent once a
 * interval, half of them would be of the interval before, and each
 * step would answer to the N before the last). An embedded zone's law
 * runs every fourth turn. */
constexpr ngx_msec_t kTickMs = kTickUs / 1000;
constexpr ngx_uint_t kTurnsAnInterval = kIntervalUs / kTickUs;

struct Worker {
    ngx_http_rl_main_conf_t *rmcf;
    ngx_event_t tick;
    ngx_log_t *log;
    ngx_uint_t turn;
    bool eval;          /* Redis lost the script: its text next turn */
    bool exiting;
};

/* A call out: what its reply goes to (malloc'd, freed by the reply,
 * which a link going away gives as NULL): its entry's lookup key. */
struct Call {
    Worker *w;
    size_t keyLen;
    char key[kMaxKey];
};

/* A call to send once the table's lock is let go. */
struct Send {
    const ngx_http_rl_rule_t *rule;
    Taken taken;
    uint64_t pinned;
};

Worker *workerOf(ngx_http_rl_main_conf_t *rmcf) {
    return static_cast<Worker *>(rmcf->adaptive_worker);
}

/* The auto rule of the entry (its lookup key starts with its state's
 * id), NULL if the configuration has none (a reload took it away). */
const ngx_http_rl_rule_t *ruleOf(ngx_http_rl_main_conf_t *rmcf,
                                 const Taken &t) {
    if (t.keyLen < RL_RULE_ID_LEN) {
        return nullptr;
    }
    const char *id = t.key;
    auto **rules = static_cast<ngx_http_rl_rule_t **>(rmcf->rules.elts);
    for (ngx_uint_t i = 0; i < rmcf->rules.nelts; i++) {
        if (rules[i]->adaptive != nullptr &&
            ngx_memcmp(rules[i]->id, id, RL_RULE_ID_LEN) == 0) {
            return rules[i];
        }
    }
    return nullptr;
}

/* The live limit that pins the rule's N, 0 if none. */
uint64_t pinnedOf(const ngx_http_rl_rule_t *rule) {
    return live::specOf(rule, false) != &rule->spec ? live::limitOf(rule)
                                                    : 0;
}

/* An embedded zone's interval: the law here, on this instance's
 * samples. */
void local(const ngx_http_rl_rule_t *rule, const Taken &t, Result *r,
           Point *point) {
    const Params &p = adaptive::ruleOf(rule)->params;
    Reading read;
    State s = update(p, t.state, t.samples, &read);
    uint64_t pinned = pinnedOf(rule);
    if (pinned > 0) {
        s.limit = pinned;
        s.growing = false;
        s.streak = 0;
        s.settle = 0;
    }
    int64_t now = realtimeUs();
    /* this instance's in-flight: its slots held (rl_inflight) */
    auto held = rule->stats != nullptr
                    ? static_cast<int64_t>(rule->stats->inflight) : 0;
    r->state = s;
    r->p50Us = t.samples.count > 0 ? read.p50Us : t.p50Us;
    r->p90Us = t.samples.count > 0 ? read.p90Us : t.p90Us;
    r->inflight = held;
    r->changedMs = s.limit != t.state.limit || t.changedMs == 0
                       ? now / 1000 : t.changedMs;
    *point = {static_cast<uint32_t>(now / 1000000),
              static_cast<uint32_t>(s.limit),
              static_cast<uint32_t>(r->p90Us),
              static_cast<uint32_t>(held)};
    r->points = point;
    r->npoints = 1;
}

void replied(redisAsyncContext *ac, void *reply, void *data) noexcept {
    auto *c = static_cast<Call *>(data);
    auto *r = static_cast<const redisReply *>(reply);
    Worker *w = c->w;
    if (r != nullptr && !w->exiting) {
        Link::heardMoved(ac, r);
    }
    if (r != nullptr && r->type == REDIS_REPLY_STRING && r->len >= 48 &&
        !w->exiting) {
        Result res{};
        res.state.limit = static_cast<uint64_t>(doubleAt(r->str, 0));
        res.p50Us = doubleAt(r->str, 1);
        res.p90Us = doubleAt(r->str, 2);
        res.state.baselineUs = doubleAt(r->str, 3);
        res.inflight = static_cast<int64_t>(doubleAt(r->str, 4));
        res.changedMs = static_cast<int64_t>(doubleAt(r->str, 5));
        Point points[kHistory];
        size_t n = 0;
        for (size_t at = 48; at + 32 <= r->len && n < kHistory; at += 32) {
            size_t i = at / 8;
            points[n++] = {static_cast<uint32_t>(doubleAt(r->str, i)),
                           static_cast<uint32_t>(doubleAt(r->str, i + 1)),
                           static_cast<uint32_t>(doubleAt(r->str, i + 2)),
                           static_cast<uint32_t>(doubleAt(r->str, i + 3))};
        }
        res.points = points;
        res.npoints = n;
        apply(w->rmcf, c->key, c->keyLen, res);
    } else if (r != nullptr && r->type == REDIS_REPLY_ERROR &&
               std::string_view(r->str, r->len).substr(0, 8) == "NOSCRIPT") {
        w->eval = true;     /* (this turn's samples are lost) */
    } else if (r != nullptr && r->type == REDIS_REPLY_ERROR && !w->exiting) {
        ngx_log_error(NGX_LOG_WARN, w->log, 0,
                      "rl: concurrency=auto: Redis refused the interval "
                      "of rule \"%*s\": %*s", RL_RULE_ID_LEN, c->key, r->len, r->str);
    }
    std::free(c);
}

/* The EVAL of lua/adaptive.lua for one entry. */
void send(Worker *w, const Send &s) {
    const ngx_http_rl_zone_t *zone = s.rule->zone;
    const Taken &t = s.taken;
    const Params &p = adaptive::ruleOf(s.rule)->params;
    if (w->rmcf->stores == nullptr ||
        w->rmcf->stores[zone->index] == nullptr) {
        return;
    }
    char keys[2][NGX_HTTP_RL_MAX_PREFIX + RL_STATE_KEY_MAX + 2];
    size_t lens[2];
    for (int k = 0; k < 2; k++) {
        u_char *q = ngx_cpymem(keys[k], zone->prefix.data, zone->prefix.len);
        q = ngx_cpymem(q, t.name, t.nameLen);
        if (k == 0) {
            q = ngx_cpymem(q, ":a", 2);
        }
        lens[k] = static_cast<size_t>(q - reinterpret_cast<u_char *>(
                                              keys[k]));
    }
    ngx_uint_t slot = zone->nseeds > 0
        ? keySlot({keys[1], lens[1]}) : 0;
    auto *link = reinterpret_cast<Link *>(
        ngx_http_rl_store_route(w->rmcf->stores[zone->index], slot));
    if (link == nullptr || !link->usable()) {
        return;
    }
    /* the samples: count, overloaded, limited, then (bucket, count) */
    u_char samples[8 * (3 + 2 * kBuckets)];
    u_char *q = putDouble(samples, static_cast<double>(t.samples.count));
    q = putDouble(q, static_cast<double>(t.samples.overloaded));
    q = putDouble(q, static_cast<double>(t.samples.limited));
    for (size_t i = 0; i < kBuckets; i++) {
        if (t.samples.hist[i] > 0) {
            q = putDouble(q, static_cast<double>(i));
            q = putDouble(q, static_cast<double>(t.samples.hist[i]));
        }
    }
    u_char nums[5][NGX_INT64_LEN];
    int64_t values[5] = {static_cast<int64_t>(p.min),
                         static_cast<int64_t>(p.max), p.targetUs,
                         static_cast<int64_t>(s.pinned), t.lastPoint};
    const char *argv[11];
    size_t len[11];
    std::string_view text = w->eval ? adaptiveScriptText()
                                    : adaptiveScriptSha();
    argv[0] = w->eval ? "EVAL" : "EVALSHA";
    len[0] = w->eval ? 4 : 7;
    argv[1] = text.data();
    len[1] = text.size();
    argv[2] = "2";
    len[2] = 1;
    for (int k = 0; k < 2; k++) {
        argv[3 + k] = keys[k];
        len[3 + k] = lens[k];
    }
    for (int k = 0; k < 5; k++) {
        argv[5 + k] = reinterpret_cast<char *>(nums[k]);
        len[5 + k] = static_cast<size_t>(
            ngx_http_rl_decimal(nums[k], values[k]) - nums[k]);
    }
    argv[10] = reinterpret_cast<char *>(samples);
    len[10] = static_cast<size_t>(q - samples);
    auto *c = static_cast<Call *>(std::malloc(sizeof(Call)));
    if (c == nullptr) {
        return;
    }
    c->w = w;
    c->keyLen = t.keyLen;
    ngx_memcpy(c->key, t.key, t.keyLen);
    /* (hiredis copies the arguments) */
    if (!link->operatorCommand(replied, c, 11, argv, len)) {
        std::free(c);
    }
}

void onTick(ngx_event_t *ev) noexcept {
    auto *w = static_cast<Worker *>(ev->data);
    if (w->exiting || ngx_exiting) {
        return;
    }
    ngx_pool_t *pool = ngx_create_pool(16384, w->log);
    if (pool == nullptr) {
        ngx_add_timer(&w->tick, kTickMs);
        return;
    }
    ngx_array_t *sends = ngx_array_create(pool, 16, sizeof(Send));
    if (sends != nullptr) {
        bool interval = ++w->turn % kTurnsAnInterval == 0;
        takeAll(w->rmcf, [&](Taken *t, Result *r) {
            const ngx_http_rl_rule_t *rule = ruleOf(w->rmcf, *t);
            if (rule == nullptr) {
                return kTaken;  /* its rule is gone: it idles out */
            }
            static Point point;
            if (ngx_http_rl_embedded(rule->zone)) {
                /* the samples of requests admitted at the N before
                 * its last cut (the law's last run: settle just set):
                 * dropped (core/adaptive.hpp staleUs; this instance's
                 * workers knew it at once) */
                if (t->state.settle == kSettle &&
                    static_cast<double>(realtimeUs() -
                                        t->changedMs * 1000) <
                        staleUs(t->p90Us, 0)) {
                    return kTaken;
                }
                if (!interval) {
                    return kLeave;
                }
                local(rule, *t, r, &point);
                return kMoved;
            }
            auto *s = static_cast<Send *>(ngx_array_push(sends));
            if (s == nullptr) {
                return kLeave;
            }
            s->rule = rule;
            s->taken = *t;
            s->pinned = pinnedOf(rule);
            return kTaken;
        });
        auto *s = static_cast<Send *>(sends->elts);
        for (ngx_uint_t i = 0; i < sends->nelts; i++) {
            send(w, s[i]);
        }
        w->eval = w->eval && sends->nelts == 0;
    }
    ngx_destroy_pool(pool);
    ngx_add_timer(&w->tick, kTickMs);
}

}  // namespace
}  // namespace rl::adaptive

using rl::adaptive::Worker;

extern "C" {

ngx_int_t ngx_http_rl_adaptive_init(ngx_cycle_t *cycle,
                                    ngx_http_rl_main_conf_t *rmcf) noexcept {
    if (rmcf->adaptive == nullptr || ngx_worker != 0) {
        return NGX_OK;  /* one worker of the instance does it */
    }
    auto *w = static_cast<Worker *>(ngx_pcalloc(cycle->pool, sizeof(Worker)));
    if (w == nullptr) {
        return NGX_ERROR;
    }
    w->rmcf = rmcf;
    w->log = cycle->log;
    rl::initTimer(&w->tick, rl::adaptive::onTick, w, cycle->log);
    ngx_add_timer(&w->tick, rl::adaptive::kTickMs);
    rmcf->adaptive_worker = w;
    return NGX_OK;
}

void ngx_http_rl_adaptive_exit(ngx_http_rl_main_conf_t *rmcf) noexcept {
    Worker *w = rl::adaptive::workerOf(rmcf);
    if (w != nullptr) {
        w->exiting = true;
        rl::stopTimer(&w->tick);
    }
}

}  // extern "C"
