/*
 * lease.cpp: the lease table in shared memory (see lease.hpp) and the
 * request's side of it: spend from a lease, ask for one, give back what
 * a rejected request spent.
 *
 * Sizing: a group's arrivals are counted per period of the zone's
 * lease= (its units: the cost of its first rule); its demand is the
 * larger of the last period's and the current one's so far, taken over
 * at least a quarter of a period. A group is hot from kHot units a
 * period; it asks for a quarter more than its demand, and renews once a
 * rule holds a quarter of the grant or less, or a quarter of the
 * grant's life is left, so a steady hot group never waits on Redis.
 */

#include "lease.hpp"

#include "clock.hpp"
#include "core/algorithm.hpp"
#include "core/reply.hpp"
#include "core/script.hpp"
#include "core/state_key.hpp"

namespace rl {
namespace lease {
namespace {

constexpr int64_t kHot = 4;
constexpr int64_t kSweepEarly = 10000;     /* us */
constexpr ngx_uint_t kEvictPerRequest = 8;
/* idle entries reclaimed from a stripe's cold end as requests pass */
constexpr ngx_uint_t kExpirePerRequest = 2;
/* a group's key: the zone, then per rule its id, configuration and key
 * value (a digest when long, as the state key has it) */
constexpr size_t kRuleIdBytes = RL_RULE_ID_LEN + 4 + 1 + RL_STATE_KEY_MAX;
constexpr size_t kMaxId = 4 + RL_MAX_RULES * kRuleIdBytes;

ngx_http_rl_rule_t *ruleOf(const ngx_http_rl_group_t *g, ngx_uint_t k) {
    return static_cast<ngx_http_rl_rule_t *>(g->ctx->lcf->rules->elts) +
           g->rules[k];
}

size_t identity(const ngx_http_rl_group_t *g, u_char *out) {
    u_char *p = ngx_cpymem(out, &g->zone->lease_crc, 4);
    for (ngx_uint_t k = 0; k < g->nrules; k++) {
        const ngx_http_rl_rule_t *rule = ruleOf(g, k);
        const ngx_str_t &v = g->ctx->values[g->rules[k]];
        p = ngx_cpymem(p, rule->id, RL_RULE_ID_LEN);
        p = ngx_cpymem(p, &rule->config_crc, 4);
        if (v.len <= kMaxPlainValue) {
            *p++ = static_cast<u_char>(v.len);
            p = ngx_cpymem(p, v.data, v.len);
        } else {
            *p++ = 0xff;
            p = reinterpret_cast<u_char *>(rl_state_key_write(
                reinterpret_cast<char *>(p), "", 0,
                reinterpret_cast<const char *>(v.data), v.len, rule->id));
        }
    }
    return static_cast<size_t>(p - out);
}

Worker *workerFor(const ngx_http_rl_group_t *g) {
    auto *rmcf = static_cast<ngx_http_rl_main_conf_t *>(
        ngx_http_get_module_main_conf(g->ctx->r, ngx_http_rl_module));
    return workerOf(rmcf);
}

void arrive(Entry *e, int64_t units, int64_t period, int64_t now) {
    int64_t age = now - e->periodStart;
    if (age >= period) {
        e->lastUnits = age < 2 * period ? e->periodUnits : 0;
        e->periodStart = now;
        e->periodUnits = 0;
    }
    e->periodUnits += units;
}

/* Hot: as many units arrived in this period or the last. */
bool hot(const Entry *e) {
    return e->periodUnits >= kHot || e->lastUnits >= kHot;
}

/* units a period */
int64_t demand(const Entry *e, int64_t period, int64_t now) {
    int64_t over = now - e->periodStart;
    if (over < period / 4) {
        over = period / 4 > 0 ? period / 4 : 1;
    }
    int64_t now_rate = e->periodUnits * period / over;
    return now_rate > e->lastUnits ? now_rate : e->lastUnits;
}

uint64_t askFor(int64_t want) {
    auto k = static_cast<uint64_t>(want + (want + 3) / 4);
    return k < kMaxLeaseAsk ? k : kMaxLeaseAsk;
}

bool renewDue(const Lease *l, int64_t now) {
    int64_t least = l->rules[0].units;
    for (ngx_uint_t k = 1; k < l->nrules; k++) {
        least = l->rules[k].units < least ? l->rules[k].units : least;
    }
    return least * 4 <= l->granted || (l->expiresAt - now) * 4 <= l->validUs;
}

void freeEntry(Worker *w, Stripe &st, Entry *e, Outbox *out) {
    if (e->lease != nullptr) {
        end(w, e->lease, out);
        ngx_slab_free(w->pool, e->lease);
    }
    st.index.remove(&e->lru);
    ngx_slab_free(w->pool, e);
}

/* Frees the stripe's least recently used entry (giving back what its
 * lease holds); 0 when there is none. The first time in a worker, a
 * notice says the table is full (a flood of new keys within two lease
 * periods, or more hot groups than it holds). */
ngx_uint_t evictOne(Worker *w, Stripe &st, Outbox *out) {
    LruNode *old = st.index.oldest();
    if (old == nullptr || out->full()) {
        return 0;
    }
    if (!w->evicted) {
        w->evicted = true;
        ngx_log_error(NGX_LOG_NOTICE, w->log, 0,
                      "rl: the lease table is full: the least recently "
                      "used groups make room (what their leases hold goes "
                      "back to Redis)");
    }
    freeEntry(w, st, reinterpret_cast<Entry *>(old), out);
    return 1;
}

/* Frees up to `max` entries from the stripe's cold end that have seen
 * no request for two of their periods and hold no grant: a flood of
 * new keys (each its own group, none hot) leaves the table as it came,
 * and the room to hot groups. */
void expireIdle(Worker *w, Stripe &st, int64_t now, ngx_uint_t max) {
    st.index.dropOldest(max, [&](LruNode *n) {
        auto *e = reinterpret_cast<Entry *>(n);
        if (now - e->periodStart < 2 * e->period || e->askUntil > now ||
            (e->lease != nullptr && e->lease->expiresAt != 0)) {
            return false;
        }
        if (e->lease != nullptr) {
            ngx_slab_free(w->pool, e->lease);
        }
        st.index.remove(n);
        ngx_slab_free(w->pool, e);
        return true;
    });
}

/* A group with no entry arrives: counted in one of its two slots while
 * it stays cold (true: it needs no entry); false when it needs one,
 * *start and *before then its period's start and the units it counted
 * before. Where other groups hold both its slots in their periods, the
 * newcomer takes the one that counted fewer units (the older of two
 * alike): a flood of new keys, each one unit in a slot, makes no entry
 * and keeps no group that arrives again from its count (its second
 * unit outweighs a newcomer's one). Making such a newcomer an entry
 * cost a flood of new keys an entry for a third of them (16,384 slots
 * of 100 ms against 76k new keys a second: the index' look-ups,
 * inserts and deletes, 5% of the worker's time, perf); leaving it
 * uncounted left a group new after a flood cold for a period (lease=10s:
 * t/057 (c)). */
bool coldArrival(Stripe &st, uint32_t hash, int64_t units, int64_t period,
                 int64_t now, int64_t *start, int64_t *before) {
    Slot *two[2] = {&st.slots[(hash / kStripes) % kSlots],
                    &st.slots[(hash >> 16) % kSlots]};
    *start = now;
    *before = 0;
    for (Slot *s : two) {
        if (s->endsAt > now && s->hash == hash) {
            if (static_cast<int64_t>(s->units) + units < kHot) {
                s->units += static_cast<uint32_t>(units);
                return true;
            }
            *start = s->endsAt - period;
            *before = s->units;
            s->endsAt = 0;  /* hot: its entry counts from now on */
            return false;
        }
    }
    if (units >= kHot) {
        return false;       /* hot at once */
    }
    Slot *s = two[0];
    if (s->endsAt > now) {
        Slot *o = two[1];
        if (o->endsAt <= now || o->units < s->units ||
            (o->units == s->units && o->endsAt < s->endsAt)) {
            s = o;
        }
    }
    *s = {hash, static_cast<uint32_t>(units), now + period};
    return true;
}

/* The group's entry, made if new (the stripe's least recently used go
 * when the zone is full); NULL when there is no room (*full: the table
 * just became full, to be logged once the stripe is unlocked) or when
 * the group is cold and its slot counted this arrival. */
Entry *entryFor(Worker *w, Stripe &st, const ngx_str_t &id, uint32_t hash,
                int64_t units, int64_t period, int64_t now, Outbox *out,
                bool *full) {
    expireIdle(w, st, now, kExpirePerRequest);
    auto *e = reinterpret_cast<Entry *>(st.index.find(id, hash));
    if (e != nullptr) {
        return e;
    }
    int64_t start, before;
    if (coldArrival(st, hash, units, period, now, &start, &before)) {
        return nullptr;
    }
    e = static_cast<Entry *>(allocate(
        w->pool, sizeof(Entry) + id.len, false, kEvictPerRequest,
        [&]() { return evictOne(w, st, out); }));
    if (e == nullptr) {
        /* once until there is room again (any worker's) */
        *full = ngx_atomic_cmp_set(&w->sh->full, 0, 1) != 0;
        return nullptr;
    }
    if (w->sh->full) {
        w->sh->full = 0;
    }
    ngx_memzero(e, sizeof(Entry));
    e->period = period;
    e->periodStart = start;
    e->periodUnits = before;
    st.index.add(&e->lru, id, keyAfter(e, sizeof(Entry)), hash);
    return e;
}

/* The group's lease, made from what its request sent Redis (its keys,
 * and specs, as a refund needs them); room is made as for an entry, but
 * for the group's own entry (the most recently used: it goes last). */
Lease *makeLease(Worker *w, Stripe &st, const ngx_http_rl_group_t *g,
                 const Entry *own, Outbox *out) {
    size_t size = leaseBytes(g->nrules);
    for (ngx_uint_t k = 0; k < g->nrules; k++) {
        size += g->keys[k].len + g->specs[k]->len;
    }
    auto *l = static_cast<Lease *>(allocate(
        w->pool, size, false, kEvictPerRequest, [&]() -> ngx_uint_t {
            if (st.index.oldest() == &own->lru) {
                return 0;   /* nothing older than the group's own */
            }
            return evictOne(w, st, out);
        }));
    if (l == nullptr) {
        return nullptr;
    }
    ngx_memzero(l, leaseBytes(g->nrules));
    l->zoneCrc = g->zone->lease_crc;
    l->nrules = static_cast<uint16_t>(g->nrules);
    l->slot = static_cast<uint16_t>(g->slot);
    auto *p = const_cast<u_char *>(textOf(l));
    for (ngx_uint_t k = 0; k < g->nrules; k++) {
        const ngx_http_rl_rule_t *rule = ruleOf(g, k);
        l->rules[k].keyLen = static_cast<uint16_t>(g->keys[k].len);
        l->rules[k].specLen = static_cast<uint16_t>(g->specs[k]->len);
        if (static_cast<Algorithm>(rule->algorithm) ==
            Algorithm::FixedWindow) {
            l->rules[k].windowUs = static_cast<int64_t>(rule->window_us);
        }
        p = ngx_cpymem(p, g->keys[k].data, g->keys[k].len);
    }
    for (ngx_uint_t k = 0; k < g->nrules; k++) {
        p = ngx_cpymem(p, g->specs[k]->data, g->specs[k]->len);
    }
    return l;
}

Lease *leaseOf(ngx_queue_t *q) {
    return ngx_queue_data(q, Lease, live);
}

/* In its stripe's queue of live leases, by end, the soonest last. */
void enqueue(Stripe &st, Lease *l) {
    ngx_queue_t *q = ngx_queue_head(&st.live);
    while (q != ngx_queue_sentinel(&st.live) &&
           leaseOf(q)->expiresAt > l->expiresAt) {
        q = ngx_queue_next(q);
    }
    ngx_queue_t *before = ngx_queue_prev(q);   /* (a macro: once) */
    ngx_queue_insert_after(before, &l->live);
}

}  // namespace

Stripe &stripeOf(Shared *sh, uint32_t hash) {
    return sh->stripes[hash % kStripes];
}

void lock(Worker *w, Stripe &st) {
    reserve(w);
    w->locks++;
    if (!ngx_shmtx_trylock(&st.mutex)) {
        w->waits++;     /* another worker holds it: bench/lease-locks */
        ngx_shmtx_lock(&st.mutex);
    }
}

void end(Worker *w, Lease *l, Outbox *out) {
    if (l->expiresAt == 0) {
        return;
    }
    out->add(returnOf(w, l, nullptr, l->grantedAt));
    for (ngx_uint_t k = 0; k < l->nrules; k++) {
        l->rules[k].units = 0;
    }
    l->expiresAt = 0;
    ngx_queue_remove(&l->live);
}

bool install(Worker *w, Call *c, const rl_outcome_t *out, int64_t g,
             int64_t grantedAt) {
    ngx_http_rl_zone_t *zone = c->zone;
    ngx_uint_t n = c->group.nrules;
    int64_t now = monotonicUs();
    /* until the lease= after the grant, and a fixed window's end */
    int64_t valid = static_cast<int64_t>(zone->lease) * 1000;
    for (ngx_uint_t k = 0; k < n; k++) {
        int64_t win = c->windowUs[k];
        if (win > 0 && grantedAt >= 0) {
            int64_t left = (grantedAt / win + 1) * win - grantedAt;
            valid = left < valid ? left : valid;
        }
    }
    int64_t expiresAt = c->group.sent_us + valid;
    bool reused = false;
    Outbox box;
    Stripe &st = stripeOf(w->sh, c->hash);

    lock(w, st);
    auto *e = reinterpret_cast<Entry *>(st.index.find(c->id, c->hash, false));
    if (e != nullptr) {
        e->askUntil = 0;
    }
    if (g > 0 && out != nullptr) {
        (void) ngx_atomic_fetch_add(&zone->stats->lease_granted, g);
        Lease *l = e != nullptr ? e->lease : nullptr;
        if (l != nullptr && l->nrules == n && expiresAt > now) {
            /* what it held goes back at its time: Redis has that left
             * too once it lands */
            int64_t back[RL_MAX_RULES];
            for (ngx_uint_t k = 0; k < n; k++) {
                back[k] = l->expiresAt != 0 ? l->rules[k].units : 0;
            }
            end(w, l, &box);
            for (ngx_uint_t k = 0; k < n; k++) {
                RuleLease &r = l->rules[k];
                r.units = g;
                r.left = (out[k].remaining > g ? out[k].remaining - g : 0) +
                         back[k];
                r.resetAt = now + out[k].reset_ms * 1000;
                r.limit = out[k].limit;
            }
            l->grantedAt = grantedAt;
            l->expiresAt = expiresAt;
            l->validUs = valid;
            l->granted = g;
            l->generation = w->generation;
            enqueue(st, l);
        } else {
            /* nobody holds it: it goes back as it came */
            c->kind = Kind::Return;
            c->group.now_us = grantedAt;
            for (ngx_uint_t k = 0; k < n; k++) {
                c->group.costs[k] = static_cast<uint64_t>(g);
            }
            box.add(c);
            reused = true;
            expiresAt = 0;
        }
    } else {
        expiresAt = 0;
    }
    ngx_shmtx_unlock(&st.mutex);

    send(w, &box);
    if (expiresAt > 0) {
        sweepBy(w, expiresAt);
    }
    return reused;
}

int64_t sweep(Worker *w, int64_t now) {
    int64_t next = 0;
    for (ngx_uint_t i = 0; i < kStripes; i++) {
        Stripe &st = w->sh->stripes[i];
        Outbox box;
        int64_t soonest = 0;
        do {
            lock(w, st);
            while (!ngx_queue_empty(&st.live) && !box.full()) {
                Lease *l = leaseOf(ngx_queue_last(&st.live));
                /* those about to end go too, a little early: the
                 * returns of leases granted together leave together */
                int64_t early = l->validUs / 8 < kSweepEarly
                                    ? l->validUs / 8 : kSweepEarly;
                if (l->expiresAt - early > now) {
                    break;
                }
                end(w, l, &box);
            }
            soonest = ngx_queue_empty(&st.live)
                          ? 0
                          : leaseOf(ngx_queue_last(&st.live))->expiresAt;
            ngx_shmtx_unlock(&st.mutex);
            bool more = box.full();
            send(w, &box);
            if (!more) {
                break;
            }
        } while (true);
        if (soonest > 0 && (next == 0 || soonest < next)) {
            next = soonest;
        }
    }
    return next;
}

/* Ends every live lease for which which(lease) says so, what it holds
 * going back. */
template <typename F>
void endWhere(Worker *w, F which) {
    for (ngx_uint_t i = 0; i < kStripes; i++) {
        Stripe &st = w->sh->stripes[i];
        Outbox box;
        bool more;
        do {
            more = false;
            lock(w, st);
            ngx_queue_t *q = ngx_queue_head(&st.live);
            while (q != ngx_queue_sentinel(&st.live)) {
                ngx_queue_t *next = ngx_queue_next(q);
                Lease *l = leaseOf(q);
                if (which(l)) {
                    if (box.full()) {
                        more = true;
                        break;
                    }
                    end(w, l, &box);
                }
                q = next;
            }
            ngx_shmtx_unlock(&st.mutex);
            send(w, &box);
        } while (more);
    }
}

void returnGeneration(Worker *w) {
    endWhere(w, [&](const Lease *l) {
        return l->generation == w->generation;
    });
}

void endValue(Worker *w, const ngx_str_t &block) {
    endWhere(w, [&](const Lease *l) {
        const u_char *key = textOf(l);
        for (ngx_uint_t k = 0; k < l->nrules; k++) {
            /* its state key is the block's, then ':' and the rule's id */
            if (l->rules[k].keyLen == block.len + 1 + RL_RULE_ID_LEN &&
                ngx_memcmp(key, block.data, block.len) == 0) {
                return true;
            }
            key += l->rules[k].keyLen;
        }
        return false;
    });
}

}  // namespace lease

using lease::Entry;
using lease::Lease;
using lease::Outbox;
using lease::Stripe;
using lease::Worker;

bool leasable(const ngx_http_rl_group_t *g) {
    if (g->zone->lease == 0 || ngx_http_rl_embedded(g->zone) ||
        g->held != 0 || g->calendar != 0 || g->ntrials != 0) {
        /* (nor slots: SPEC section 9; nor calendar periods, whose
         * bounds a lease does not keep: SPEC section 12; a trial is a
         * dry run: SPEC section 11) */
        return false;
    }
    for (ngx_uint_t k = 0; k < g->nrules; k++) {
        const ngx_http_rl_rule_t *rule = lease::ruleOf(g, k);
        if (ngx_http_rl_dry_run(g->ctx, rule) ||
            (rl_algorithm_takes_delay(static_cast<int>(rule->algorithm)) &&
             rule->delay < rule->burst)) {
            return false;
        }
    }
    return true;
}

bool leaseSpend(ngx_http_rl_group_t *g) {
    Worker *w = lease::workerFor(g);
    if (w == nullptr) {
        return false;
    }
    ngx_http_rl_ctx_t *ctx = g->ctx;
    u_char text[lease::kMaxId];
    ngx_str_t id = {lease::identity(g, text), text};
    uint32_t hash = ngx_murmur_hash2(id.data, id.len);
    int64_t now = monotonicUs();
    int64_t period = static_cast<int64_t>(g->zone->lease) * 1000;
    int64_t units = static_cast<int64_t>(ctx->costs[g->rules[0]]);
    bool spent = false;
    bool full = false;
    Outbox box;
    Stripe &st = lease::stripeOf(w->sh, hash);

    lock(w, st);
    Entry *e = lease::entryFor(w, st, id, hash, units, period, now, &box,
                               &full);
    if (e != nullptr) {
        lease::arrive(e, units, period, now);
        bool ask = lease::hot(e) && e->askUntil <= now &&
                   !ngx_exiting && !ngx_quit && !ngx_terminate;
        Lease *l = e->lease;
        spent = l != nullptr && l->expiresAt > now && l->nrules == g->nrules;
        for (ngx_uint_t k = 0; spent && k < g->nrules; k++) {
            spent = l->rules[k].units >=
                    static_cast<int64_t>(ctx->costs[g->rules[k]]);
        }
        if (spent) {
            for (ngx_uint_t k = 0; k < g->nrules; k++) {
                ngx_uint_t i = g->rules[k];
                lease::RuleLease &r = l->rules[k];
                r.units -= static_cast<int64_t>(ctx->costs[i]);
                int64_t reset = r.resetAt > now ? r.resetAt - now : 0;
                ctx->outcomes[i] = {r.left + r.units, msCeil(reset), 0, 0, 0,
                                    r.limit};
                ctx->decided[i] = 1;
            }
            g->lease_grant = l->grantedAt;
            if (ask && lease::renewDue(l, now)) {
                e->askUntil = now + static_cast<int64_t>(g->zone->timeout) *
                                        1000;
                box.add(lease::grantOf(w, l, id, hash,
                                       lease::askFor(lease::demand(e, period,
                                                                   now))));
            }
        } else {
            if (l != nullptr && l->expiresAt != 0 && l->expiresAt <= now) {
                lease::end(w, l, &box);
            }
            if (ask) {
                e->askUntil = now + static_cast<int64_t>(g->zone->timeout) *
                                        1000;
                g->lease_want = lease::askFor(lease::demand(e, period, now));
            }
        }
    }
    ngx_shmtx_unlock(&st.mutex);

    if (full) {
        ngx_log_error(NGX_LOG_WARN, w->log, 0,
                      "rl: the lease table is full: new groups are "
                      "decided by Redis alone");
    }
    lease::send(w, &box);
    if (spent) {
        g->done = 1;
        g->allowed = 1;
        g->leased = 1;
    }
    return spent;
}

void leaseAsk(ngx_http_rl_group_t *g, ngx_http_rl_link_t *) {
    Worker *w = lease::workerFor(g);
    if (w == nullptr || g->lease_want == 0) {
        return;
    }
    u_char text[lease::kMaxId];
    ngx_str_t id = {lease::identity(g, text), text};
    uint32_t hash = ngx_murmur_hash2(id.data, id.len);
    Outbox box;
    Stripe &st = lease::stripeOf(w->sh, hash);

    lock(w, st);
    auto *e = reinterpret_cast<Entry *>(st.index.find(id, hash, false));
    if (e != nullptr) {
        if (e->lease == nullptr) {
            st.index.touch(&e->lru);    /* kept while room is made */
            e->lease = lease::makeLease(w, st, g, e, &box);
        }
        lease::Call *c = nullptr;
        if (e->lease != nullptr) {
            c = lease::grantOf(w, e->lease, id, hash, g->lease_want);
        }
        if (c != nullptr) {
            /* the request's time: it decides right after it */
            c->group.sent_us = g->sent_us;
            box.add(c);
        } else {
            e->askUntil = 0;
        }
    }
    ngx_shmtx_unlock(&st.mutex);
    lease::send(w, &box);
}

void leaseUnspend(ngx_http_rl_group_t *g) {
    Worker *w = lease::workerFor(g);
    if (w == nullptr) {
        return;
    }
    ngx_http_rl_ctx_t *ctx = g->ctx;
    u_char text[lease::kMaxId];
    ngx_str_t id = {lease::identity(g, text), text};
    uint32_t hash = ngx_murmur_hash2(id.data, id.len);
    int64_t costs[RL_MAX_RULES];
    for (ngx_uint_t k = 0; k < g->nrules; k++) {
        costs[k] = static_cast<int64_t>(ctx->costs[g->rules[k]]);
    }
    Outbox box;
    Stripe &st = lease::stripeOf(w->sh, hash);

    lock(w, st);
    auto *e = reinterpret_cast<Entry *>(st.index.find(id, hash, false));
    Lease *l = e != nullptr ? e->lease : nullptr;
    if (l != nullptr && l->nrules == g->nrules) {
        if (l->expiresAt > monotonicUs() && l->grantedAt == g->lease_grant) {
            for (ngx_uint_t k = 0; k < g->nrules; k++) {
                l->rules[k].units += costs[k];
            }
        } else {
            /* that grant is over: to Redis, at its time */
            box.add(lease::returnOf(w, l, costs, g->lease_grant));
        }
    }
    ngx_shmtx_unlock(&st.mutex);
    lease::send(w, &box);
}

}  // namespace rl

extern "C" {

ngx_int_t ngx_http_rl_lease_init_zone(ngx_shm_zone_t *shm_zone,
                                      void *data) noexcept {
    auto *pool = reinterpret_cast<ngx_slab_pool_t *>(shm_zone->shm.addr);
    if (data != nullptr || shm_zone->shm.exists) {
        /* the leases go on; a new configuration's workers are another
         * generation (what the old ones hold, they give back as they
         * exit) */
        auto *sh = static_cast<rl::lease::Shared *>(pool->data);
        (void) ngx_atomic_fetch_add(&sh->generation, 1);
        return NGX_OK;
    }
    auto *sh = static_cast<rl::lease::Shared *>(
        ngx_slab_alloc(pool, sizeof(rl::lease::Shared)));
    if (sh == nullptr) {
        return NGX_ERROR;
    }
    ngx_memzero(sh, sizeof(rl::lease::Shared));
    sh->generation = 1;
    for (ngx_uint_t i = 0; i < rl::lease::kStripes; i++) {
        rl::lease::Stripe &st = sh->stripes[i];
        if (ngx_shmtx_create(&st.mutex, &st.lock, nullptr) != NGX_OK) {
            return NGX_ERROR;
        }
        st.index.init();
        ngx_queue_init(&st.live);
    }
    pool->data = sh;
    pool->log_nomem = 0;
    return NGX_OK;
}

void ngx_http_rl_lease_forget(ngx_http_rl_main_conf_t *rmcf,
                              const ngx_str_t *block) noexcept {
    rl::lease::Worker *w = rl::lease::workerOf(rmcf);
    if (w != nullptr && w->sh != nullptr) {
        rl::lease::endValue(w, *block);
    }
}

}  // extern "C"
