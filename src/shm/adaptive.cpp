/*
 * shm/adaptive.cpp: the adaptive limits' table (see shm/adaptive.hpp).
 */

#include "adaptive.hpp"

#include <new>

#include "clock.hpp"
#include "core/algorithm.hpp"
#include "live.hpp"
#include "lru.hpp"

namespace rl::adaptive {
namespace {

struct Entry {
    LruNode lru;
    uint64_t serial;        /* unique to it in the zone's life */
    uint32_t zone;
    uint32_t nameLen;
    char name[RL_STATE_KEY_MAX];    /* "{VALUE}:ID" */
    Samples pending;        /* since worker 0 last took them */
    State state;            /* the law's (embedded), or as Redis said */
    double p50Us, p90Us;
    int64_t inflight;       /* the fleet's (Redis), or this instance's */
    int64_t changedMs;
    int64_t lastMs;         /* its last request */
    int64_t recent;         /* samples of its last interval */
    uint32_t head;          /* the next point's place */
    uint32_t npoints;
    Point points[kHistory];
    /* its name after */
};

struct Shared {
    LruIndex index;
    uint64_t serials;       /* entries made */
};

/* An entry idle this long is forgotten: its history is over. */
constexpr int64_t kIdleMs = 10 * 60 * 1000;

ngx_slab_pool_t *poolOf(ngx_http_rl_main_conf_t *rmcf) {
    return rmcf->adaptive != nullptr
               ? reinterpret_cast<ngx_slab_pool_t *>(rmcf->adaptive->shm.addr)
               : nullptr;
}

Shared *sharedOf(ngx_slab_pool_t *pool) {
    return static_cast<Shared *>(pool->data);
}

uint32_t hashOf(const ngx_str_t &key) {
    ngx_uint_t h = 0;
    for (size_t i = 0; i < key.len; i++) {
        h = ngx_hash(h, key.data[i]);
    }
    return static_cast<uint32_t>(h);
}

Entry *entryOf(LruNode *n) { return reinterpret_cast<Entry *>(n); }

/* the time nginx cached this turn, ms of the epoch */
int64_t nowMs() {
    ngx_time_t *t = ngx_timeofday();
    return static_cast<int64_t>(t->sec) * 1000 +
           static_cast<int64_t>(t->msec);
}

void drop(ngx_slab_pool_t *pool, Shared *sh, Entry *e) {
    sh->index.remove(&e->lru);
    ngx_slab_free_locked(pool, e);
}

/* The lookup key of a rule and key value, at out (kMaxKey bytes): the
 * rule's id, then the value as is, or past 64 bytes its state key (a
 * digest); its length. */
size_t lookupKey(u_char *out, const ngx_http_rl_rule_t *rule,
                 const ngx_str_t *value) {
    u_char *p = ngx_cpymem(out, rule->id, RL_RULE_ID_LEN);
    if (value->len <= 64) {
        return static_cast<size_t>(ngx_cpymem(p, value->data, value->len) -
                                   out);
    }
    char *end = rl_state_key_write(reinterpret_cast<char *>(p), "", 0,
                                   reinterpret_cast<char *>(value->data),
                                   value->len, rule->id);
    return static_cast<size_t>(reinterpret_cast<u_char *>(end) - out);
}

/* The entry of the key, made if need be (the coldest forgotten while
 * the zone is full); NULL when out of room. Under the lock. */
Entry *findOrCreate(ngx_slab_pool_t *pool, const ngx_str_t &key,
                    const ngx_http_rl_rule_t *rule, const ngx_str_t *value) {
    Shared *sh = sharedOf(pool);
    uint32_t hash = hashOf(key);
    LruNode *n = sh->index.find(key, hash);
    if (n != nullptr) {
        return entryOf(n);
    }
    size_t size = sizeof(Entry) + key.len;
    auto *e = static_cast<Entry *>(allocate(pool, size, true, 4, [&]() {
        return sh->index.dropOldest(1, [&](LruNode *old) {
            drop(pool, sh, entryOf(old));
            return true;
        });
    }));
    if (e == nullptr) {
        return nullptr;
    }
    new (e) Entry{};
    e->serial = ++sh->serials;
    e->zone = static_cast<uint32_t>(rule->zone->index);
    e->nameLen = static_cast<uint32_t>(
        rl_state_key_write(e->name, "", 0,
                           reinterpret_cast<char *>(value->data), value->len,
                           rule->id) - e->name);
    e->lastMs = nowMs();
    sh->index.add(&e->lru, key, keyAfter(e, sizeof(Entry)), hash);
    return e;
}

Entry *findOnly(ngx_slab_pool_t *pool, const char *key, size_t len) {
    ngx_str_t k = {len, reinterpret_cast<u_char *>(const_cast<char *>(key))};
    LruNode *n = sharedOf(pool)->index.find(k, hashOf(k), false);
    return n != nullptr ? entryOf(n) : nullptr;
}

}  // namespace

size_t tableSize(ngx_http_rl_main_conf_t *rmcf) {
    auto **rules = static_cast<ngx_http_rl_rule_t **>(rmcf->rules.elts);
    size_t n = 0;
    for (ngx_uint_t i = 0; i < rmcf->rules.nelts; i++) {
        n += rules[i]->adaptive != nullptr ? 1 : 0;
    }
    if (n == 0) {
        return 0;
    }
    /* about 16 key values of each auto rule, and room for the pool */
    return 256 * 1024 + n * 16 * (sizeof(Entry) + kMaxKey + 64);
}

/* The entry the rule's worker told last, if it is this value's and
 * still that entry (its memory may have gone to another); under the
 * lock. */
Entry *toldBefore(Rule *a, const ngx_str_t *value) {
    auto *e = static_cast<Entry *>(a->told);
    return e != nullptr && a->toldLen == value->len &&
                   ngx_memcmp(a->toldValue, value->data, value->len) == 0 &&
                   e->serial == a->toldSerial
               ? e : nullptr;
}

void tellTo(Entry *e, const ngx_http_rl_rule_t *rule, const Told &told) {
    if (told.sampled) {
        e->pending.add(told.latencyUs, told.overloaded);
    }
    e->pending.limited += told.reached ? 1 : 0;
    e->lastMs = nowMs();
    if (told.limit > 0 && !ngx_http_rl_embedded(rule->zone)) {
        e->state.limit = told.limit;    /* as Redis decided it */
    }
}

void tell(ngx_http_rl_main_conf_t *rmcf, const ngx_http_rl_rule_t *rule,
          const ngx_str_t *value, const Told &told) {
    ngx_slab_pool_t *pool = poolOf(rmcf);
    if (pool == nullptr) {
        return;
    }
    Rule *a = ruleOf(rule);
    ngx_shmtx_lock(&pool->mutex);
    Entry *e = toldBefore(a, value);
    if (e != nullptr) {
        tellTo(e, rule, told);
        ngx_shmtx_unlock(&pool->mutex);
        return;
    }
    u_char text[kMaxKey];
    ngx_str_t key = {lookupKey(text, rule, value), text};
    e = findOrCreate(pool, key, rule, value);
    if (e != nullptr) {
        tellTo(e, rule, told);
        if (value->len <= sizeof(a->toldValue)) {
            a->told = e;
            a->toldSerial = e->serial;
            a->toldLen = value->len;
            ngx_memcpy(a->toldValue, value->data, value->len);
        }
    }
    ngx_shmtx_unlock(&pool->mutex);
}

void embedded(rl::Params *p, const ngx_http_rl_ctx_t *ctx, ngx_uint_t i) {
    auto *rule = &static_cast<ngx_http_rl_rule_t *>(
        ctx->lcf->rules->elts)[i];
    embeddedAt(p, static_cast<ngx_http_rl_main_conf_t *>(
                      ngx_http_get_module_main_conf(ctx->r,
                                                    ngx_http_rl_module)),
               rule, &ctx->values[i],
               ctx->levels != nullptr ? ctx->levels[i] : 0);
}

void embeddedAt(rl::Params *p, ngx_http_rl_main_conf_t *rmcf,
                const ngx_http_rl_rule_t *rule, const ngx_str_t *value,
                int level) {
    Rule *a = ruleOf(rule);
    p->delay = static_cast<uint64_t>(level);
    p->burst = a->params.max;
    if (live::specOf(rule, false) != &rule->spec) {
        return;     /* pinned: at the live limit */
    }
    ngx_slab_pool_t *pool = rmcf != nullptr ? poolOf(rmcf) : nullptr;
    State s;
    if (pool != nullptr) {
        u_char text[kMaxKey];
        size_t len = lookupKey(text, rule, value);
        ngx_shmtx_lock(&pool->mutex);
        Entry *e = findOnly(pool, reinterpret_cast<char *>(text), len);
        if (e != nullptr) {
            s = e->state;
        }
        ngx_shmtx_unlock(&pool->mutex);
    }
    p->limit = limitOf(a->params, s);
}

/* r into e, under the lock */
void applyTo(Entry *e, const Result &r) {
    e->state = r.state;
    e->p50Us = r.p50Us;
    e->p90Us = r.p90Us;
    e->inflight = r.inflight;
    e->changedMs = r.changedMs;
    for (size_t i = 0; i < r.npoints; i++) {
        uint32_t last = e->npoints > 0
            ? e->points[(e->head + kHistory - 1) % kHistory].t : 0;
        if (r.points[i].t <= last) {
            continue;   /* had it */
        }
        e->points[e->head] = r.points[i];
        e->head = static_cast<uint32_t>((e->head + 1) % kHistory);
        e->npoints += e->npoints < kHistory ? 1 : 0;
    }
}

void takeAllWith(ngx_http_rl_main_conf_t *rmcf,
                 Fate (*f)(Taken *t, Result *r, void *data), void *data) {
    ngx_slab_pool_t *pool = poolOf(rmcf);
    if (pool == nullptr) {
        return;
    }
    Shared *sh = sharedOf(pool);
    int64_t now = nowMs();
    Taken t;
    Result r{};
    ngx_shmtx_lock(&pool->mutex);
    LruNode *n = sh->index.oldest();
    while (n != nullptr) {
        LruNode *next = sh->index.newer(n);
        Entry *e = entryOf(n);
        if (now - e->lastMs > kIdleMs) {
            drop(pool, sh, e);
            n = next;
            continue;
        }
        t.keyLen = n->sn.str.len;
        ngx_memcpy(t.key, n->sn.str.data, t.keyLen);
        t.nameLen = e->nameLen;
        ngx_memcpy(t.name, e->name, t.nameLen);
        t.zone = e->zone;
        t.samples = e->pending;
        t.state = e->state;
        t.p50Us = e->p50Us;
        t.p90Us = e->p90Us;
        t.changedMs = e->changedMs;
        t.lastPoint = e->npoints > 0
            ? e->points[(e->head + kHistory - 1) % kHistory].t : 0;
        Fate fate = f(&t, &r, data);
        if (fate != kLeave) {
            e->recent = e->pending.count;
            e->pending = Samples();
        }
        if (fate == kMoved) {
            applyTo(e, r);
        }
        n = next;
    }
    ngx_shmtx_unlock(&pool->mutex);
}

void apply(ngx_http_rl_main_conf_t *rmcf, const char *key, size_t keyLen,
           const Result &r) {
    ngx_slab_pool_t *pool = poolOf(rmcf);
    if (pool == nullptr) {
        return;
    }
    ngx_shmtx_lock(&pool->mutex);
    Entry *e = findOnly(pool, key, keyLen);
    if (e != nullptr) {
        applyTo(e, r);
    }
    ngx_shmtx_unlock(&pool->mutex);
}

bool busiest(ngx_http_rl_main_conf_t *rmcf, const char *ruleId,
             View *out) {
    ngx_slab_pool_t *pool = poolOf(rmcf);
    if (pool == nullptr) {
        return false;
    }
    Shared *sh = sharedOf(pool);
    Entry *best = nullptr;
    ngx_shmtx_lock(&pool->mutex);
    for (LruNode *n = sh->index.oldest(); n != nullptr;
         n = sh->index.newer(n)) {
        const ngx_str_t &k = n->sn.str;
        /* its rule's id first */
        if (k.len < RL_RULE_ID_LEN ||
            ngx_memcmp(k.data, ruleId, RL_RULE_ID_LEN) != 0) {
            continue;
        }
        Entry *e = entryOf(n);
        if (best == nullptr || e->recent > best->recent ||
            (e->recent == best->recent && e->lastMs >= best->lastMs)) {
            best = e;
        }
    }
    if (best != nullptr) {
        out->keyLen = best->nameLen;
        ngx_memcpy(out->key, best->name, out->keyLen);
        out->zone = best->zone;
        out->limit = best->state.limit;
        out->p50Us = best->p50Us;
        out->p90Us = best->p90Us;
        out->baselineUs = best->state.baselineUs;
        out->inflight = best->inflight;
        out->changedMs = best->changedMs;
        out->lastMs = best->lastMs;
        out->recent = best->recent;
        out->npoints = best->npoints;
        uint32_t from = (best->head + kHistory - best->npoints) % kHistory;
        for (size_t i = 0; i < best->npoints; i++) {
            out->points[i] = best->points[(from + i) % kHistory];
        }
    }
    ngx_shmtx_unlock(&pool->mutex);
    return best != nullptr;
}

}  // namespace rl::adaptive

extern "C" {

size_t ngx_http_rl_adaptive_size(ngx_http_rl_main_conf_t *rmcf) noexcept {
    return rl::adaptive::tableSize(rmcf);
}

ngx_int_t ngx_http_rl_adaptive_init_zone(ngx_shm_zone_t *shm_zone,
                                         void *data) noexcept {
    auto *pool = reinterpret_cast<ngx_slab_pool_t *>(shm_zone->shm.addr);
    if (shm_zone->shm.exists || data != nullptr) {
        return NGX_OK;  /* (kept across a reload) */
    }
    auto *sh = static_cast<rl::adaptive::Shared *>(
        ngx_slab_alloc(pool, sizeof(rl::adaptive::Shared)));
    if (sh == nullptr) {
        return NGX_ERROR;
    }
    sh->index.init();
    pool->data = sh;
    pool->log_nomem = 0;
    return NGX_OK;
}

}  // extern "C"
