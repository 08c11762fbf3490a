/* Blocks and overrides of the embedded store (the operator API's, SPEC
 * section 8): what Redis keeps in the string PREFIX{VALUE} (lua/rl.lua
 * blocked(), lua/override.lua), an embedded zone keeps in its own shared
 * memory, beside its states: a mark per key value, keyed by the value's
 * hash tag ("{VALUE}", or its digest), holding a block (until when, its
 * reason) and an override ("limit NAME=N ...", until when), each ending
 * by itself. A mark holds for every rule of its zone.
 *
 * The marks are an index of their own (never evicted to make room for
 * states: a block must not end because of a flood); a decision reads
 * them only while the zone has any (one number). Everything here runs
 * under the zone's lock, which the caller holds. */
#pragma once

#include "ngx.hpp"

#include <string_view>

#include "lru.hpp"

namespace rl::marks {

/* in the zone's shared header */
struct Table {
    LruIndex        index;
    ngx_uint_t      count;

    void init() {
        index.init();
        count = 0;
    }
};

/* What a key value's mark does to a rule now. */
struct Effect {
    int64_t blockedUs = 0;  /* > 0: blocked, for as long */
    uint64_t limit = 0;     /* its override's N for the rule, 0: none */
};

Effect effect(Table &t, ngx_slab_pool_t *pool, std::string_view value,
              std::string_view rule, int64_t nowUs);

/* The operator API's view of a mark. */
struct View {
    int kind = 0;           /* 0: none, 1: blocked, 2: an override only */
    std::string_view reason;    /* valid until the lock is let go */
    int64_t ttlMs = -2;     /* the block's (or the override's): -1 none */
    uint64_t limit = 0;     /* the override's N for the rule */
};

View read(Table &t, ngx_slab_pool_t *pool, std::string_view value,
          std::string_view rule, int64_t nowUs);

enum class Op : uint8_t { Block, Unblock, Override, Unoverride };

/* A write: `ttlUs` 0 for none (an override without one keeps the
 * expiry it had); `old` gets what the mark said before, as the Redis
 * string would (at most oldCap bytes; *oldLen 0: nothing). False when
 * the zone has no room. */
bool write(Table &t, ngx_slab_pool_t *pool, std::string_view value, Op op,
           std::string_view rule, uint64_t n, int64_t ttlUs,
           std::string_view reason, int64_t nowUs, char *old, size_t oldCap,
           size_t *oldLen);

/* An embedded zone's (shm/store.cpp: its table, lock and clock), for
 * the operator API: the view's reason copied to `reason` (cap bytes at
 * most, *reasonLen), times in ms. */
View zoneRead(ngx_http_rl_zone_t *z, std::string_view value,
              std::string_view rule, char *reason, size_t cap,
              size_t *reasonLen);
bool zoneWrite(ngx_http_rl_zone_t *z, std::string_view value, Op op,
               std::string_view rule, uint64_t n, int64_t ttlMs,
               std::string_view reason, char *old, size_t oldCap,
               size_t *oldLen);

}  // namespace rl::marks
