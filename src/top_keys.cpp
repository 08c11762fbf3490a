/*
 * top_keys.cpp: each rule's top limited keys (SPEC section 8) in the
 * shared memory zone the operator API reads ("rl_top_1", made when a
 * location has rl_api): a sketch (src/core/top_keys.hpp) per zone and
 * rule name, as the metrics have a counter per zone and rule name, found
 * again by its labels after a reload. Rejections count under the zone's
 * slab mutex (which nginx releases if a worker dies holding it); the
 * allow path reads one number while nothing was rejected lately.
 */

#include "ngx.hpp"

#include <algorithm>

#include "core/top_keys.hpp"

namespace {

constexpr size_t kLabel = NGX_HTTP_RL_MAX_NAME;

struct Labeled {
    ngx_slab_pool_t    *pool;
    ngx_uint_t          generation; /* the last configuration using it */
    uint8_t             zoneLen;
    uint8_t             ruleLen;
    u_char              zone[kLabel];
    u_char              rule[kLabel];
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

bool labelled(const Labeled &l, const ngx_http_rl_rule_t *rule) {
    return l.zoneLen == rule->zone->name.len &&
           l.ruleLen == rule->name.len &&
           ngx_memcmp(l.zone, rule->zone->name.data, l.zoneLen) == 0 &&
           ngx_memcmp(l.rule, rule->name.data, l.ruleLen) == 0;
}

/* Orders names by their zone's name, then their own (the labels). */
int compareLabels(const u_char *az, size_t azl, const u_char *ar, size_t arl,
                  const ngx_http_rl_rule_t *b) {
    auto cmp = [](const u_char *x, size_t xl, const ngx_str_t &y) {
        size_t n = xl < y.len ? xl : y.len;
        int c = n > 0 ? ngx_memcmp(x, y.data, n) : 0;
        return c != 0 ? c : xl < y.len ? -1 : xl > y.len ? 1 : 0;
    };
    int c = cmp(az, azl, b->zone->name);
    return c != 0 ? c : cmp(ar, arl, b->name);
}

/* Each name of the configuration takes its list: the one it had (a
 * reload: found by its labels), else one no name of this configuration
 * has, in time linear in the table and the names (names sorted once,
 * each list's labels looked up among them). */
bool claim(Table *t, ngx_uint_t gen, ngx_slab_pool_t *pool,
           ngx_http_rl_main_conf_t *rmcf, ngx_log_t *log) {
    auto *names = static_cast<ngx_http_rl_name_t *>(rmcf->names.elts);
    ngx_uint_t n = rmcf->names.nelts;
    auto **sorted = static_cast<ngx_http_rl_name_t **>(
        ngx_alloc((n + 1) * sizeof(ngx_http_rl_name_t *), log));
    if (sorted == nullptr) {
        return false;
    }
    for (ngx_uint_t i = 0; i < n; i++) {
        sorted[i] = &names[i];
    }
    std::sort(sorted, sorted + n,
              [](const ngx_http_rl_name_t *a, const ngx_http_rl_name_t *b) {
                  const ngx_http_rl_rule_t *r = a->first;
                  return compareLabels(r->zone->name.data, r->zone->name.len,
                                       r->name.data, r->name.len,
                                       b->first) < 0;
              });
    for (ngx_uint_t k = 0; k < t->capacity; k++) {
        Labeled &l = t->entries[k];
        if (l.generation == 0) {
            continue;
        }
        auto **at = std::lower_bound(
            sorted, sorted + n, &l,
            [](const ngx_http_rl_name_t *a, const Labeled *b) {
                const ngx_http_rl_rule_t *r = a->first;
                return compareLabels(b->zone, b->zoneLen, b->rule,
                                     b->ruleLen, r) > 0;
            });
        if (at != sorted + n && labelled(l, (*at)->first)) {
            l.generation = gen;
            (*at)->top = &l;
        }
    }
    ngx_free(sorted);
    ngx_uint_t next = 0;
    for (ngx_uint_t i = 0; i < n; i++) {
        ngx_http_rl_rule_t *rule = names[i].first;
        while (names[i].top == nullptr && next < t->capacity) {
            Labeled &l = t->entries[next++];
            if (l.generation < gen) {
                l.generation = gen;
                l.pool = pool;
                l.zoneLen = static_cast<uint8_t>(rule->zone->name.len);
                l.ruleLen = static_cast<uint8_t>(rule->name.len);
                ngx_memcpy(l.zone, rule->zone->name.data, l.zoneLen);
                ngx_memcpy(l.rule, rule->name.data, l.ruleLen);
                rl::top::init(&l.sketch);
                names[i].top = &l;
            }
        }
    }
    return true;
}

int64_t epochNow() {
    return static_cast<int64_t>(ngx_current_msec) / rl::top::kEpochMs;
}

std::string_view viewOf(const ngx_str_t *v) {
    return {reinterpret_cast<const char *>(v->data), v->len};
}

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
            t->entries[i].generation = 0;
            t->entries[i].zoneLen = 0;
            t->entries[i].ruleLen = 0;
        }
        pool->data = t;
    }

    /* Only the master (or a lone process) runs this, before the workers
     * exist: the lists of names kept find their sketch again, new names
     * take one no name of this configuration has. */
    ngx_uint_t gen = ++t->generation;
    if (!claim(t, gen, pool, rmcf, shm_zone->shm.log)) {
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
    rl::top::reject(&l->sketch, hash, viewOf(value), epochNow());
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
    rl::top::admit(&l->sketch, hash, viewOf(value), epoch);
    ngx_shmtx_unlock(&l->pool->mutex);
}

}  // extern "C"

namespace rl::api {

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

}  // namespace rl::api
