/*
 * top_keys.cpp: each rule's top limited keys (SPEC section 8) in the
 * shared memory zone the operator API reads ("rl_top_2", made when a
 * location has rl_api): a sketch (src/core/top_keys.hpp) per zone and
 * rule name, as the metrics have a counter per zone and rule name, found
 * again by its labels after a reload. Rejections count under the zone's
 * slab mutex (which nginx releases if a worker dies holding it); the
 * allow path reads one number while nothing was rejected lately.
 */

#include "top_keys.hpp"

#include "labels.hpp"

namespace {

struct Labeled {
    rl::labels::Labels  labels;     /* first: its zone and rule name */
    ngx_slab_pool_t    *pool;
    rl::top::Sketch     sketch;
};

struct Table {
    ngx_uint_t          generation; /* one more per configuration */
    ngx_uint_t          capacity;
    Labeled             entries[1];
};

/* Sketches for this many names (rounded up, so that a reload adding a
 * rule or two finds the zone the same size and keeps the lists). */
ngx_uint_t capacityFor(ngx_uint_t names) {
    return (names + 16) / 16 * 16;
}

void bind(ngx_http_rl_name_t *name, rl::labels::Labels *entry, bool fresh,
          void *pool) {
    auto *l = reinterpret_cast<Labeled *>(entry);
    if (fresh) {
        l->pool = static_cast<ngx_slab_pool_t *>(pool);
        rl::top::init(&l->sketch);
    }
    name->top = l;
}

int64_t epochNow() {
    return static_cast<int64_t>(ngx_current_msec) / rl::top::kEpochMs;
}

using rl::viewOf;

}  // namespace

extern "C" {

size_t ngx_http_rl_top_size(ngx_http_rl_main_conf_t *rmcf) noexcept {
    size_t table = offsetof(Table, entries) +
                   capacityFor(rmcf->names.nelts) * sizeof(Labeled);
    /* the slab pool's own pages and descriptors */
    return table + table / 32 + 64 * 1024;
}

ngx_int_t ngx_http_rl_top_init_zone(ngx_shm_zone_t *shm_zone,
                                    void *data) noexcept {
    auto *rmcf = static_cast<ngx_http_rl_main_conf_t *>(shm_zone->data);
    auto *pool = reinterpret_cast<ngx_slab_pool_t *>(shm_zone->shm.addr);
    Table *t;

    if (shm_zone->shm.exists || data != nullptr) {
        t = static_cast<Table *>(pool->data);
    } else {
        ngx_uint_t cap = capacityFor(rmcf->names.nelts);
        t = static_cast<Table *>(ngx_slab_alloc(
            pool, offsetof(Table, entries) + cap * sizeof(Labeled)));
        if (t == nullptr) {
            return NGX_ERROR;
        }
        t->generation = 0;
        t->capacity = cap;
        for (ngx_uint_t i = 0; i < cap; i++) {
            t->entries[i].labels.generation = 0;
        }
        pool->data = t;
    }

    /* Only the master (or a lone process) runs this, before the workers
     * exist: the lists of names kept find their sketch again, new names
     * take one no name of this configuration has. */
    ngx_uint_t gen = ++t->generation;
    if (!rl::labels::claim(reinterpret_cast<u_char *>(t->entries),
                           sizeof(Labeled), t->capacity, gen, rmcf,
                           shm_zone->shm.log, bind, pool)) {
        return NGX_ERROR;
    }
    /* every rule of a name: its list */
    auto **rules = static_cast<ngx_http_rl_rule_t **>(rmcf->rules.elts);
    for (ngx_uint_t i = 0; i < rmcf->rules.nelts; i++) {
        rules[i]->top = rules[i]->named->top;
    }
    return NGX_OK;
}

void ngx_http_rl_top_reject(const ngx_http_rl_rule_t *rule,
                            const ngx_str_t *value) noexcept {
    auto *l = static_cast<Labeled *>(rule->top);
    if (l == nullptr) {
        return;
    }
    uint32_t hash = ngx_murmur_hash2(value->data, value->len);
    ngx_shmtx_lock(&l->pool->mutex);
    rl::top::reject(&l->sketch, hash, viewOf(*value), epochNow());
    ngx_shmtx_unlock(&l->pool->mutex);
}

void ngx_http_rl_top_admit(const ngx_http_rl_rule_t *rule,
                           const ngx_str_t *value) noexcept {
    auto *l = static_cast<Labeled *>(rule->top);
    int64_t epoch = epochNow();
    if (l == nullptr || !rl::top::active(&l->sketch, epoch)) {
        return;     /* nothing rejected lately: the allow path's cost */
    }
    uint32_t hash = ngx_murmur_hash2(value->data, value->len);
    if (!rl::top::mayTrack(&l->sketch, hash)) {
        return;
    }
    ngx_shmtx_lock(&l->pool->mutex);
    rl::top::admit(&l->sketch, hash, viewOf(*value), epoch);
    ngx_shmtx_unlock(&l->pool->mutex);
}

}  // extern "C"

namespace rl::shm {

size_t topKeys(const ngx_http_rl_rule_t *rule, rl::top::Entry *out) {
    auto *l = static_cast<Labeled *>(rule->top);
    if (l == nullptr) {
        return 0;
    }
    ngx_shmtx_lock(&l->pool->mutex);
    size_t n = rl::top::list(&l->sketch, epochNow(), out);
    ngx_shmtx_unlock(&l->pool->mutex);
    return n;
}

}  // namespace rl::shm
