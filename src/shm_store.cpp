/*
 * shm_store.cpp: the embedded store. A zone without redis= keeps its
 * rules' state in nginx shared memory, shared by every worker of the
 * instance: a red-black tree of nodes keyed by the same text as the
 * Redis key (without the prefix), in a least-recently-used queue. Idle
 * nodes (whose state decides like a fresh one) are reclaimed as requests
 * pass; when memory runs out, the least recently used nodes go, as in
 * limit_req. The algorithms are the core's (src/core/algorithm.cpp), the
 * same ones the Lua scripts are tested against.
 */

#include "ngx.hpp"

#include <algorithm>

#include "clock.hpp"
#include "core/algorithm.hpp"
#include "core/reply.hpp"
#include "shm_lru.hpp"

namespace {

struct Shared {
    rl::LruIndex        index;
};

/* A node: the header, then `slots` int64 of sliding_log times, then the
 * key text. */
struct Node {
    rl::LruNode         lru;
    int64_t             idleAt;
    rl::State           state;
    uint32_t            slots;
};

constexpr ngx_uint_t kExpirePerRequest = 2;
/* When the zone is full: the least recently used nodes go, this many at
 * a time, until the new one fits (a sliding_log node of a large N takes
 * whole pages, which small nodes free only when all of a page's go), at
 * most kEvictMax in all */
constexpr ngx_uint_t kEvictOnFull = 8;
constexpr ngx_uint_t kEvictMax = 4096;

int64_t *logOf(Node *n) {
    return reinterpret_cast<int64_t *>(reinterpret_cast<u_char *>(n) +
                                       sizeof(Node));
}

rl::Params paramsOf(const ngx_http_rl_rule_t *rule) {
    return rl::Params{static_cast<rl::Algorithm>(rule->algorithm),
                      rule->limit, rule->window_us, rule->burst,
                      rule->delay};
}

Shared *sharedOf(ngx_http_rl_zone_t *z) {
    return static_cast<Shared *>(z->sh);
}

void freeNode(ngx_http_rl_zone_t *z, Node *n) {
    sharedOf(z)->index.remove(&n->lru);
    ngx_slab_free_locked(z->shpool, n);
}

/* Reclaims up to `max` nodes from the cold end: idle ones only, or any
 * (the least recently used) when `force`. Returns how many went. */
ngx_uint_t expire(ngx_http_rl_zone_t *z, int64_t now, ngx_uint_t max,
                  bool force, Node **keep, ngx_uint_t nkeep) {
    return sharedOf(z)->index.dropOldest(max, [&](rl::LruNode *o) {
        auto *n = reinterpret_cast<Node *>(o);
        for (ngx_uint_t k = 0; k < nkeep; k++) {
            if (keep[k] == n) {
                return false; /* in use by this request: older ones went */
            }
        }
        if (!force && n->idleAt > now) {
            return false;
        }
        freeNode(z, n);
        return true;
    });
}

/* `size` bytes of the zone, making room if it is full (see kEvictMax);
 * NULL when even that is not enough, logged once until it is again. */
Node *allocate(ngx_http_rl_zone_t *z, size_t size, int64_t now, Node **keep,
               ngx_uint_t nkeep) {
    ngx_uint_t gone = 0;
    auto *n = static_cast<Node *>(rl::allocate(
        z->shpool, size, true, kEvictMax, [&]() -> ngx_uint_t {
            if (gone >= kEvictMax) {
                return 0;
            }
            ngx_uint_t freed = expire(z, now, kEvictOnFull, true, keep,
                                      nkeep);
            gone += freed;
            return freed;
        }));
    if (n == nullptr && !z->full) {
        z->full = 1;
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "rl_zone \"%V\" is full: no room for a state of %uz "
                      "bytes, even after forgetting the least recently "
                      "used ones; its requests get the failure policy "
                      "(size= sets the zone's size)",
                      &z->name, size);
    } else if (n != nullptr) {
        z->full = 0;
    }
    return n;
}

/* A sliding_log node made for another N (a reload changed the rule's
 * rate, or locations whose rules differ in N alone share the state):
 * made again with this N's ring, keeping its newest times. NULL when the
 * zone has no room. */
Node *resize(ngx_http_rl_zone_t *z, Node *old, size_t slots, int64_t now,
             Node **keep, ngx_uint_t nkeep) {
    rl::LruIndex &index = sharedOf(z)->index;
    ngx_str_t key = old->lru.sn.str;
    size_t size = sizeof(Node) + slots * sizeof(int64_t) + key.len;
    /* the old node is in use: the most recently used, and kept while
     * room is made (expire() stops at the first node it must keep) */
    index.touch(&old->lru);
    Node *hold[RL_MAX_RULES + 1];
    ngx_uint_t nhold = 0;
    for (; nhold < nkeep && nhold < RL_MAX_RULES; nhold++) {
        hold[nhold] = keep[nhold];
    }
    hold[nhold++] = old;
    Node *n = allocate(z, size, now, hold, nhold);
    if (n == nullptr) {
        return nullptr;
    }
    ngx_memzero(n, sizeof(Node));
    auto was = static_cast<int64_t>(old->slots);
    int64_t count = was > 0 ? std::clamp<int64_t>(old->state.a, 0, was) : 0;
    int64_t head = was > 0 ? std::clamp<int64_t>(old->state.b, 0, was - 1)
                           : 0;
    int64_t kept = std::min(count, static_cast<int64_t>(slots));
    for (int64_t i = 0; i < kept; i++) {
        logOf(n)[i] = logOf(old)[(head + count - kept + i) % was];
    }
    n->state = old->state;
    n->state.a = kept;
    n->state.b = 0;
    n->idleAt = old->idleAt;
    n->slots = static_cast<uint32_t>(slots);
    /* (ngx_rbtree_delete() zeroes the node's key: the hash first) */
    auto hash = static_cast<uint32_t>(old->lru.sn.node.key);
    index.remove(&old->lru);
    index.add(&n->lru, key, rl::keyAfter(n, sizeof(Node),
                                         slots * sizeof(int64_t)),
              hash);
    ngx_slab_free_locked(z->shpool, old);
    return n;
}

/* A state's key in the zone's tree: its Redis key without the prefix. */
struct NodeKey {
    u_char text[RL_STATE_KEY_MAX];
    ngx_str_t key;
    uint32_t hash;

    NodeKey(const ngx_http_rl_rule_t *rule, const ngx_str_t *value) {
        auto *end = reinterpret_cast<u_char *>(rl_state_key_write(
            reinterpret_cast<char *>(text), "", 0,
            reinterpret_cast<const char *>(value->data), value->len,
            rule->id));
        key = {static_cast<size_t>(end - text), text};
        hash = ngx_murmur_hash2(text, key.len);
    }
};

Node *findOrCreate(ngx_http_rl_zone_t *z, const ngx_http_rl_rule_t *rule,
                   const ngx_str_t *value, int64_t now, Node **keep,
                   ngx_uint_t nkeep) {
    rl::LruIndex &index = sharedOf(z)->index;
    NodeKey nk(rule, value);
    const ngx_str_t &key = nk.key;
    size_t len = key.len;
    uint32_t hash = nk.hash;

    size_t slots = rl::logSlots(paramsOf(rule));
    auto *found = reinterpret_cast<Node *>(index.find(key, hash, false));
    if (found != nullptr) {
        if (found->slots != slots) {
            for (ngx_uint_t k = 0; k < nkeep; k++) {
                if (keep[k] == found) {
                    return nullptr; /* two rules of this request */
                }
            }
            return resize(z, found, slots, now, keep, nkeep);
        }
        index.touch(&found->lru);
        return found;
    }

    size_t size = sizeof(Node) + slots * sizeof(int64_t) + len;
    auto *n = allocate(z, size, now, keep, nkeep);
    if (n == nullptr) {
        return nullptr;
    }
    ngx_memzero(n, sizeof(Node));
    n->slots = static_cast<uint32_t>(slots);
    n->idleAt = now;
    index.add(&n->lru, key, rl::keyAfter(n, sizeof(Node),
                                         slots * sizeof(int64_t)),
              hash);
    return n;
}

}  // namespace

extern "C" {

ngx_int_t ngx_http_rl_shm_init_zone(ngx_shm_zone_t *shm_zone,
                                    void *data) noexcept {
    auto *z = static_cast<ngx_http_rl_zone_t *>(shm_zone->data);
    auto *old = static_cast<ngx_http_rl_zone_t *>(data);

    if (old != nullptr) {
        z->sh = old->sh;
        z->shpool = old->shpool;
        return NGX_OK;
    }

    z->shpool = reinterpret_cast<ngx_slab_pool_t *>(shm_zone->shm.addr);
    if (shm_zone->shm.exists) {
        z->sh = z->shpool->data;
        return NGX_OK;
    }

    auto *sh = static_cast<Shared *>(
        ngx_slab_alloc(z->shpool, sizeof(Shared)));
    if (sh == nullptr) {
        return NGX_ERROR;
    }
    z->sh = sh;
    z->shpool->data = sh;
    sh->index.init();

    size_t len = sizeof(" in rl_zone \"\"") + shm_zone->shm.name.len;
    z->shpool->log_ctx = static_cast<u_char *>(
        ngx_slab_alloc(z->shpool, len));
    if (z->shpool->log_ctx == nullptr) {
        return NGX_ERROR;
    }
    ngx_sprintf(z->shpool->log_ctx, " in rl_zone \"%V\"%Z", &z->name);
    z->shpool->log_nomem = 0;
    return NGX_OK;
}

ngx_int_t ngx_http_rl_shm_decide(ngx_http_rl_group_t *g) noexcept {
    ngx_http_rl_ctx_t *ctx = g->ctx;
    auto *rules = static_cast<ngx_http_rl_rule_t *>(ctx->lcf->rules->elts);
    ngx_http_rl_zone_t *z = g->zone;
    Node *nodes[RL_MAX_RULES];
    rl::Params params[RL_MAX_RULES];
    rl::State *states[RL_MAX_RULES];
    int64_t *logs[RL_MAX_RULES];
    uint64_t costs[RL_MAX_RULES];
    rl::Figures figures[RL_MAX_RULES];
    int64_t now = rl::realtimeUs();

    for (ngx_uint_t k = 0; k < g->nrules; k++) {
        ngx_uint_t i = g->rules[k];
        params[k] = paramsOf(&rules[i]);
        params[k].dryRun = ngx_http_rl_dry_run(ctx, &rules[i]) != 0;
        params[k].slotId = g->slot_id;
        costs[k] = ctx->costs[i];
    }

    ngx_shmtx_lock(&z->shpool->mutex);
    expire(z, now, kExpirePerRequest, false, nullptr, 0);

    for (ngx_uint_t k = 0; k < g->nrules; k++) {
        ngx_uint_t i = g->rules[k];
        nodes[k] = findOrCreate(z, &rules[i], &ctx->values[i], now, nodes,
                                k);
        if (nodes[k] == nullptr) {
            ngx_shmtx_unlock(&z->shpool->mutex);
            return NGX_ERROR;
        }
        states[k] = &nodes[k]->state;
        logs[k] = logOf(nodes[k]);
    }
    bool allowed = rl::decide(params, states, logs, costs, g->nrules, now,
                              figures);
    for (ngx_uint_t k = 0; k < g->nrules; k++) {
        nodes[k]->idleAt = rl::idleAtUs(params[k], *states[k], logs[k], now);
    }
    ngx_shmtx_unlock(&z->shpool->mutex);

    for (ngx_uint_t k = 0; k < g->nrules; k++) {
        ngx_uint_t i = g->rules[k];
        const rl::Figures &f = figures[k];
        ctx->outcomes[i] = {f.remaining, rl::msCeil(f.resetUs),
                            rl::msCeil(f.retryUs), rl::msCeil(f.delayUs),
                            f.retryUs, 0};
        ctx->decided[i] = 1;
    }
    g->allowed = allowed ? 1 : 0;
    g->now_us = now;
    g->done = 1;
    return NGX_OK;
}

void ngx_http_rl_shm_refund(ngx_http_rl_group_t *g) noexcept {
    ngx_http_rl_ctx_t *ctx = g->ctx;
    auto *rules = static_cast<ngx_http_rl_rule_t *>(ctx->lcf->rules->elts);
    ngx_http_rl_zone_t *z = g->zone;
    Node *nodes[RL_MAX_RULES];

    ngx_shmtx_lock(&z->shpool->mutex);
    for (ngx_uint_t k = 0; k < g->nrules; k++) {
        ngx_uint_t i = g->rules[k];
        if (ctx->outcomes[i].retry_ms > 0) {
            nodes[k] = nullptr; /* a dry-run rule that did not count it */
            continue;
        }
        nodes[k] = findOrCreate(z, &rules[i], &ctx->values[i], g->now_us,
                                nodes, k);
        if (nodes[k] != nullptr) {
            rl::Params p = paramsOf(&rules[i]);
            p.slotId = g->slot_id;  /* a concurrency rule's: released */
            rl::refund(p, nodes[k]->state, logOf(nodes[k]), ctx->costs[i],
                       g->now_us);
        }
    }
    ngx_shmtx_unlock(&z->shpool->mutex);
}

/* A key's state read as the next request would find it, counting
 * nothing (the operator API): what it has left and when it is whole
 * again (with nothing left, when it frees one request). A key the zone
 * does not hold reads as a fresh one. */
ngx_int_t ngx_http_rl_shm_peek(ngx_http_rl_zone_t *z,
                               const ngx_http_rl_rule_t *rule,
                               const ngx_str_t *value,
                               rl_outcome_t *out) noexcept {
    rl::Params params = paramsOf(rule);
    NodeKey nk(rule, value);
    int64_t now = rl::realtimeUs();
    rl::State fresh = {0, 0, 0};
    const int64_t *log = nullptr;

    ngx_shmtx_lock(&z->shpool->mutex);
    auto *n = reinterpret_cast<Node *>(
        sharedOf(z)->index.find(nk.key, nk.hash, false));
    if (n != nullptr && n->slots != rl::logSlots(params)) {
        /* a sliding_log of another N: made again as a decision would */
        n = resize(z, n, rl::logSlots(params), now, nullptr, 0);
    }
    const rl::State &state = n != nullptr ? n->state : fresh;
    if (n != nullptr) {
        log = logOf(n);
    }
    int64_t zeros[1] = {0};
    rl::Check c = rl::check(params, state, log != nullptr ? log : zeros, 0,
                            now);
    int64_t resetUs = c.left > 0 ? c.resetUs
                                 : rl::check(params, state,
                                             log != nullptr ? log : zeros, 1,
                                             now).retryUs;
    ngx_shmtx_unlock(&z->shpool->mutex);

    *out = {c.left, rl::msCeil(resetUs), 0, 0, 0, 0};
    return NGX_OK;
}

/* Forgets a key's state in a rule (the operator API's reset): 1 if it
 * was held, else 0. */
ngx_uint_t ngx_http_rl_shm_forget(ngx_http_rl_zone_t *z,
                                  const ngx_http_rl_rule_t *rule,
                                  const ngx_str_t *value) noexcept {
    NodeKey nk(rule, value);
    ngx_shmtx_lock(&z->shpool->mutex);
    auto *n = reinterpret_cast<Node *>(
        sharedOf(z)->index.find(nk.key, nk.hash, false));
    if (n != nullptr) {
        freeNode(z, n);
    }
    ngx_shmtx_unlock(&z->shpool->mutex);
    return n != nullptr ? 1 : 0;
}

void ngx_http_rl_shm_slot(ngx_http_rl_zone_t *z,
                          const ngx_http_rl_rule_t *rule, const ngx_str_t *key,
                          uint64_t slot, ngx_uint_t renew) noexcept {
    uint32_t hash = ngx_murmur_hash2(key->data, key->len);
    ngx_shmtx_lock(&z->shpool->mutex);
    auto *n = reinterpret_cast<Node *>(
        sharedOf(z)->index.find(*key, hash, false));
    if (n != nullptr && n->slots == rl::logSlots(paramsOf(rule))) {
        rl::Params p = paramsOf(rule);
        p.slotId = slot;
        int64_t now = rl::realtimeUs();
        if (renew) {
            rl::renew(p, n->state, logOf(n), now);
        } else {
            rl::refund(p, n->state, logOf(n), 1, now);
        }
        n->idleAt = rl::idleAtUs(p, n->state, logOf(n), now);
    }
    ngx_shmtx_unlock(&z->shpool->mutex);
}

ngx_int_t ngx_http_rl_shm_charge(ngx_http_rl_zone_t *z,
                                 const ngx_http_rl_rule_t *rule,
                                 const ngx_str_t *value,
                                 int64_t units) noexcept {
    int64_t now = rl::realtimeUs();
    ngx_shmtx_lock(&z->shpool->mutex);
    Node *n = findOrCreate(z, rule, value, now, nullptr, 0);
    if (n != nullptr) {
        rl::Params p = paramsOf(rule);
        rl::charge(p, n->state, units, now);
        n->idleAt = rl::idleAtUs(p, n->state, logOf(n), now);
    }
    ngx_shmtx_unlock(&z->shpool->mutex);
    return n != nullptr ? NGX_OK : NGX_ERROR;
}

}  // extern "C"
