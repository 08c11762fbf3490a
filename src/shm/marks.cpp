/*
 * shm/marks.cpp: blocks and overrides of the embedded store (see
 * shm/marks.hpp). A mark is one slab block: its header, the block's
 * reason, the override's text ("limit NAME=N ..."), then its key
 * ("{VALUE}", as the Redis string's braces). A write makes a new block
 * and frees the old one; a mark whose block and override have both
 * ended goes when it is next looked at.
 */

#include "marks.hpp"

#include <cstring>

#include "core/override_text.hpp"
#include "core/state_key.hpp"

namespace rl::marks {
namespace {

constexpr int64_t kForever = INT64_MAX;
constexpr size_t kMaxOverride = 4000;

struct Mark {
    LruNode     lru;
    int64_t     blockUntil;     /* the zone's clock, us; 0: none */
    int64_t     overrideUntil;  /* 0: none */
    uint16_t    reasonLen;
    uint16_t    overrideLen;
};

u_char *reasonOf(Mark *m) { return reinterpret_cast<u_char *>(m + 1); }
u_char *overrideOf(Mark *m) { return reasonOf(m) + m->reasonLen; }

std::string_view reason(Mark *m) {
    return {reinterpret_cast<char *>(reasonOf(m)), m->reasonLen};
}

std::string_view overrideText(Mark *m) {
    return {reinterpret_cast<char *>(overrideOf(m)), m->overrideLen};
}

bool blocked(const Mark *m, int64_t now) { return m->blockUntil > now; }

bool overriding(const Mark *m, int64_t now) {
    return m->overrideLen > 0 && m->overrideUntil > now;
}

/* "{VALUE}": the Redis string's name less its prefix */
struct Key {
    u_char text[2 + kMaxValueTag];
    ngx_str_t str;
    uint32_t hash;

    explicit Key(std::string_view value) {
        text[0] = '{';
        auto *end = reinterpret_cast<u_char *>(
            writeValueTag(reinterpret_cast<char *>(text + 1), value));
        *end++ = '}';
        str = {static_cast<size_t>(end - text), text};
        hash = ngx_murmur_hash2(text, str.len);
    }
};

void drop(Table &t, ngx_slab_pool_t *pool, Mark *m) {
    t.index.remove(&m->lru);
    ngx_slab_free_locked(pool, m);
    t.count--;
}

/* The key value's mark, if any of it is in force. */
Mark *find(Table &t, ngx_slab_pool_t *pool, const Key &k, int64_t now) {
    if (t.count == 0) {
        return nullptr;
    }
    auto *m = reinterpret_cast<Mark *>(t.index.find(k.str, k.hash, false));
    if (m != nullptr && !blocked(m, now) && !overriding(m, now)) {
        drop(t, pool, m);
        return nullptr;
    }
    return m;
}

int64_t ttlMs(int64_t until, int64_t now) {
    return until == kForever ? -1 : (until - now + 999) / 1000;
}

/* What the Redis string would say of the mark (the operator's log). */
size_t describe(Mark *m, int64_t now, char *out, size_t cap) {
    size_t n = 0;
    auto put = [&](std::string_view s) {
        size_t k = s.size() < cap - n ? s.size() : cap - n;
        std::memcpy(out + n, s.data(), k);
        n += k;
    };
    if (m == nullptr) {
        return 0;
    }
    if (blocked(m, now)) {
        put(reason(m));
        if (overriding(m, now)) {
            put("\n(override kept) ");
            put(overrideText(m));
        }
    } else if (overriding(m, now)) {
        put(overrideText(m));
    }
    return n;
}

}  // namespace

Effect effect(Table &t, ngx_slab_pool_t *pool, std::string_view value,
              std::string_view rule, int64_t nowUs) {
    Effect e;
    if (t.count == 0) {
        return e;
    }
    Mark *m = find(t, pool, Key(value), nowUs);
    if (m == nullptr) {
        return e;
    }
    if (blocked(m, nowUs)) {
        e.blockedUs = m->blockUntil == kForever ? kForever
                                                : m->blockUntil - nowUs;
    }
    if (overriding(m, nowUs)) {
        e.limit = overrideLimit(overrideText(m), rule);
    }
    return e;
}

View read(Table &t, ngx_slab_pool_t *pool, std::string_view value,
          std::string_view rule, int64_t nowUs) {
    View v;
    Mark *m = find(t, pool, Key(value), nowUs);
    if (m == nullptr) {
        return v;
    }
    if (overriding(m, nowUs)) {
        v.limit = overrideLimit(overrideText(m), rule);
    }
    if (blocked(m, nowUs)) {
        v.kind = 1;
        v.reason = reason(m);
        v.ttlMs = ttlMs(m->blockUntil, nowUs);
    } else {
        v.kind = 2;
        v.ttlMs = ttlMs(m->overrideUntil, nowUs);
    }
    return v;
}

bool write(Table &t, ngx_slab_pool_t *pool, std::string_view value, Op op,
           std::string_view rule, uint64_t n, int64_t ttlUs,
           std::string_view why, int64_t nowUs, char *old, size_t oldCap,
           size_t *oldLen) {
    Key k(value);
    Mark *m = find(t, pool, k, nowUs);
    *oldLen = describe(m, nowUs, old, oldCap);

    /* the mark as it will be */
    int64_t blockUntil = m != nullptr && blocked(m, nowUs) ? m->blockUntil
                                                           : 0;
    std::string_view because = blockUntil > 0 ? reason(m)
                                              : std::string_view();
    bool had = m != nullptr && overriding(m, nowUs);
    int64_t overrideUntil = had ? m->overrideUntil : 0;
    std::string_view text = had ? overrideText(m) : std::string_view();
    char over[kMaxOverride + 160];
    switch (op) {
    case Op::Block:
        blockUntil = ttlUs > 0 ? nowUs + ttlUs : kForever;
        because = why;
        break;
    case Op::Unblock:
        blockUntil = 0;
        because = {};
        break;
    case Op::Override:
    case Op::Unoverride:
        if (text.size() + rule.size() + 32 > sizeof(over)) {
            return false;
        }
        text = {over, overrideWith(over, text, rule,
                                   op == Op::Override ? n : 0)};
        if (text.size() > kMaxOverride) {
            return false;
        }
        if (text.empty()) {
            overrideUntil = 0;
        } else if (op == Op::Override && (ttlUs > 0 || !had)) {
            overrideUntil = ttlUs > 0 ? nowUs + ttlUs : kForever;
        }
        break;
    }

    Mark *fresh = nullptr;
    if (blockUntil > 0 || !text.empty()) {
        size_t size = sizeof(Mark) + because.size() + text.size() +
                      k.str.len;
        fresh = static_cast<Mark *>(ngx_slab_alloc_locked(pool, size));
        if (fresh == nullptr) {
            return false;
        }
        fresh->blockUntil = blockUntil;
        fresh->overrideUntil = overrideUntil;
        fresh->reasonLen = static_cast<uint16_t>(because.size());
        fresh->overrideLen = static_cast<uint16_t>(text.size());
        if (!because.empty()) {
            ngx_memcpy(reasonOf(fresh), because.data(), because.size());
        }
        if (!text.empty()) {
            ngx_memcpy(overrideOf(fresh), text.data(), text.size());
        }
    }
    if (m != nullptr) {
        drop(t, pool, m);       /* (after its texts were copied) */
    }
    if (fresh != nullptr) {
        t.index.add(&fresh->lru, k.str,
                    keyAfter(fresh, sizeof(Mark),
                             fresh->reasonLen + fresh->overrideLen),
                    k.hash);
        t.count++;
    }
    return true;
}

}  // namespace rl::marks
