/*
 * deny_cache.cpp: once Redis rejected a key, every worker of the instance
 * knows until when, and rejects it again without asking: a flood costs
 * Redis nothing.
 *
 * An entry names a rule's state for one key value (see keyOf) and the
 * rule's configuration (limit, window, burst, cost, and its live limit:
 * a reload or a live limit that changes them does not inherit old
 * entries); it holds the
 * time at which the rule frees capacity for that request. Only enforced
 * rules of constant cost are cached: a cheaper request might pass sooner,
 * a dry run never rejects. Capacity never frees before that time but by a
 * refund, so a cached rejection never admits less than Redis would, but
 * briefly after a refund. In a zone with lease=, another instance gives
 * back what its lease did not spend within lease= of the grant: there a
 * rejection is kept that long at most (its Retry-After stays Redis').
 */

#include "ngx.hpp"

#include "clock.hpp"
#include "core/algorithm.hpp"
#include "core/reply.hpp"
#include "core/state_key.hpp"
#include "live.hpp"
#include "lru.hpp"

namespace {

/* Lookups on the allow path take no lock while they can tell there is
 * nothing to find: past `latest` no entry lasts, and past until[b] no
 * entry whose hash falls in bucket b does. */
constexpr size_t kBuckets = 1024;

struct Shared {
    rl::LruIndex        index;
    int64_t             latest;     /* no entry lasts beyond, us */
    int64_t             until[kBuckets];
};

struct Entry {
    rl::LruNode         lru;
    int64_t             until;      /* CLOCK_MONOTONIC, us: kept until */
    int64_t             retryAt;    /* the rule frees capacity */
    int64_t             remaining;
    int64_t             limit;      /* a key value's override, or 0 */
};

/* An entry's name: the rule (its state's id, its configuration and its
 * zone), then the key value as is, or its state key when it is long (a
 * digest). A flag byte keeps the two forms apart. */
constexpr size_t kRuleBytes = RL_RULE_ID_LEN + 4 + 4;
constexpr size_t kMaxKey = kRuleBytes + 1 + RL_STATE_KEY_MAX;
constexpr ngx_uint_t kExpirePerInsert = 2;
constexpr ngx_uint_t kEvictOnFull = 8;

size_t keyOf(u_char *out, const ngx_http_rl_rule_t *rule,
             const ngx_str_t *value) {
    u_char *p = ngx_cpymem(out, rule->id, RL_RULE_ID_LEN);
    uint32_t crc = rl::live::configCrc(rule);   /* its live limit too */
    p = ngx_cpymem(p, &crc, 4);
    p = ngx_cpymem(p, &rule->zone->index, 4);
    if (value->len <= rl::kMaxPlainValue) {
        *p++ = 0;
        p = ngx_cpymem(p, value->data, value->len);
    } else {
        *p++ = 1;
        p = reinterpret_cast<u_char *>(rl_state_key_write(
            reinterpret_cast<char *>(p), "", 0,
            reinterpret_cast<const char *>(value->data), value->len,
            rule->id));
    }
    return static_cast<size_t>(p - out);
}

Shared *shared(ngx_shm_zone_t *zone) {
    auto *pool = reinterpret_cast<ngx_slab_pool_t *>(zone->shm.addr);
    return static_cast<Shared *>(pool->data);
}

ngx_slab_pool_t *poolOf(ngx_shm_zone_t *zone) {
    return reinterpret_cast<ngx_slab_pool_t *>(zone->shm.addr);
}

/* Up to `max` entries from the cold end: expired ones, or any when
 * `force`; returns how many went. */
ngx_uint_t expire(ngx_shm_zone_t *zone, int64_t now, ngx_uint_t max,
                  bool force) {
    Shared *sh = shared(zone);
    return sh->index.dropOldest(max, [&](rl::LruNode *n) {
        auto *e = reinterpret_cast<Entry *>(n);
        if (!force && e->until > now) {
            return false;
        }
        sh->index.remove(n);
        ngx_slab_free_locked(poolOf(zone), e);
        return true;
    });
}

/* The cache was full (its oldest entries went): said once per worker,
 * after the lock is let go. */
void logFull(bool full) {
    static bool logged = false;
    if (full && !logged) {
        logged = true;
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "rl: the deny cache is full: the oldest rejected "
                      "keys go to Redis again");
    }
}

}  // namespace

extern "C" {

ngx_int_t ngx_http_rl_deny_init_zone(ngx_shm_zone_t *shm_zone,
                                     void *data) noexcept {
    ngx_slab_pool_t *pool = poolOf(shm_zone);
    if (data != nullptr || shm_zone->shm.exists) {
        return NGX_OK; /* the pool keeps the tree */
    }
    auto *sh = static_cast<Shared *>(ngx_slab_alloc(pool, sizeof(Shared)));
    if (sh == nullptr) {
        return NGX_ERROR;
    }
    ngx_memzero(sh, sizeof(Shared));
    sh->index.init();
    pool->data = sh;
    pool->log_nomem = 0;
    return NGX_OK;
}

/* A cached rejection of this rule for this key: 1 and the figures, or 0. */
ngx_int_t ngx_http_rl_deny_lookup(ngx_shm_zone_t *zone,
                                  const ngx_http_rl_rule_t *rule,
                                  const ngx_str_t *value,
                                  rl_outcome_t *out) noexcept {
    /* Nothing rejected lately (the allow path): no lock, no key; nothing
     * rejected lately with a hash like this key's: no lock. Read without
     * the lock, a value one insert old at worst sends a request to
     * Redis, which decides it. */
    Shared *sh = shared(zone);
    int64_t now = rl::monotonicUs();
    if (now >= *static_cast<volatile int64_t *>(&sh->latest)) {
        return 0;
    }
    u_char text[kMaxKey];
    size_t len = keyOf(text, rule, value);
    ngx_str_t key = {len, text};
    uint32_t hash = ngx_murmur_hash2(text, len);
    auto *bucket = static_cast<volatile int64_t *>(&sh->until[hash % kBuckets]);
    if (now >= *bucket) {
        return 0;
    }
    ngx_int_t found = 0;

    ngx_slab_pool_t *pool = poolOf(zone);
    ngx_shmtx_lock(&pool->mutex);
    auto *e = reinterpret_cast<Entry *>(sh->index.find(key, hash, false));
    if (e != nullptr && e->until > now) {
        int64_t us = e->retryAt > now ? e->retryAt - now : 1;
        int64_t ms = rl::msCeil(us);
        *out = {e->remaining, ms, ms, 0, us, e->limit};
        found = 1;
    }
    ngx_shmtx_unlock(&pool->mutex);
    return found;
}

void ngx_http_rl_deny_insert(ngx_shm_zone_t *zone,
                             const ngx_http_rl_rule_t *rule,
                             const ngx_str_t *value,
                             const rl_outcome_t *o,
                             int64_t decidedUs) noexcept {
    u_char text[kMaxKey];
    size_t len = keyOf(text, rule, value);
    int64_t now = rl::monotonicUs();
    /* The retry counts from the decision, not from the reply's arrival:
     * a reply that waited (Redis' queue, a busy worker) must not make
     * the cache reject longer than Redis would. In microseconds: a retry
     * of 10 us at a high rate is not 1 ms. */
    int64_t retryAt = decidedUs + o->retry_us;
    int64_t until = retryAt;
    if (rule->zone->lease > 0) {
        int64_t lease = static_cast<int64_t>(rule->zone->lease) * 1000;
        until = o->retry_us < lease ? retryAt : decidedUs + lease;
    }
    if (rule->calendar != nullptr && until > decidedUs + rl::kBlockRetryUs) {
        /* a calendar period's rejection may last weeks: kept a minute at
         * most, as a block's, so that a credit, a reset or an override
         * made through another instance applies here within a minute (a
         * flood of a key whose month is used up costs Redis a call a
         * minute) */
        until = decidedUs + rl::kBlockRetryUs;
    }
    if (o->retry_us <= 0 || until <= now) {
        return;
    }
    ngx_str_t key = {len, text};
    uint32_t hash = ngx_murmur_hash2(text, len);

    ngx_slab_pool_t *pool = poolOf(zone);
    Shared *sh = shared(zone);
    bool full = false;
    ngx_shmtx_lock(&pool->mutex);
    expire(zone, now, kExpirePerInsert, false);
    auto *e = reinterpret_cast<Entry *>(sh->index.find(key, hash));
    if (e == nullptr) {
        /* full of live entries: the oldest go (their keys are asked of
         * Redis again) */
        e = static_cast<Entry *>(rl::allocate(
            pool, sizeof(Entry) + len, true, 1, [&]() {
                full = true;
                return expire(zone, now, kEvictOnFull, true);
            }));
        if (e != nullptr) {
            sh->index.add(&e->lru, key, rl::keyAfter(e, sizeof(Entry)),
                          hash);
        }
    }
    if (e == nullptr) {
        ngx_shmtx_unlock(&pool->mutex);
        logFull(full);
        return;
    }
    e->until = until;
    e->retryAt = retryAt;
    e->remaining = o->remaining;
    e->limit = o->limit;
    if (until > sh->latest) {
        sh->latest = until;
    }
    if (until > sh->until[hash % kBuckets]) {
        sh->until[hash % kBuckets] = until;
    }
    ngx_shmtx_unlock(&pool->mutex);
    logFull(full);
}

void ngx_http_rl_deny_forget(ngx_shm_zone_t *zone,
                             const ngx_http_rl_rule_t *rule,
                             const ngx_str_t *value) noexcept {
    u_char text[kMaxKey];
    size_t len = keyOf(text, rule, value);
    ngx_str_t key = {len, text};
    uint32_t hash = ngx_murmur_hash2(text, len);

    ngx_slab_pool_t *pool = poolOf(zone);
    Shared *sh = shared(zone);
    ngx_shmtx_lock(&pool->mutex);
    rl::LruNode *n = sh->index.find(key, hash, false);
    if (n != nullptr) {
        sh->index.remove(n);
        ngx_slab_free_locked(pool, n);
    }
    ngx_shmtx_unlock(&pool->mutex);
}

}  // extern "C"
