/*
 * shm/store.cpp: the embedded store. A zone without redis= keeps its
 * rules' state in nginx shared memory, shared by every worker of the
 * instance: a red-black tree of nodes keyed by the same text as the
 * Redis key (without the prefix), in a least-recently-used queue. The
 * algorithms are the core's (src/core/algorithm.cpp), the same ones the
 * Lua scripts are tested against.
 *
 * Memory: nodes are queued by the size of their slab block (nginx's
 * slab pool serves chunks of a power of two, or whole pages: a chunk
 * freed makes room for one of its size only). Nodes whose state is
 * whole again (it decides as a fresh one would: nothing to remember)
 * are reclaimed as requests pass, by a sweep that goes round the queues
 * a few nodes a request. When the zone is full, a new node takes, in
 * this order: the whole ones among the next kSweepOnFull the sweep
 * looks at in its own queue (and the pages' queue, for a chunk); the
 * whole ones among the kLookOnFull least recently used there whose
 * memory it can take; then the least recently used of those that still
 * limits a key: one at most (counted in rl_store_evictions_total,
 * logged at most once a minute). Failing that, the request gets the
 * zone's failure policy, and the states that limit keys stay. So a
 * sliding_log of a large N (whole pages) never makes thousands of small
 * states go, and a flood of new keys forgets at most one limited key
 * for each.
 *
 * A state that holds slots (concurrency=, SPEC section 9) is never
 * forgotten for room: while it holds any, its node is in a queue of its
 * own that making room never looks at (nor a flood of other keys frees
 * a running request's slot), and it goes back to its block's queue with
 * its last slot. One whose slots all expired unrenewed (their worker
 * died) is whole: the sweep frees it, as requests pass, and before a
 * zone with no room left gives a request the failure policy.
 *
 * A lower N (a live limit, a key value's override, a reload) never
 * shortens a sliding_log's or concurrency rule's log while it holds
 * more than that N: its times and slots stay counted, and stay when the
 * lower N ends (SPEC section 9); the log is made again for the lower N
 * once it holds no more than it.
 *
 * Time is CLOCK_MONOTONIC plus the wall clock's offset when the zone
 * was made: windows align to the epoch as the wall clock stood then,
 * and a step of the wall clock neither holds nor refills any key.
 */

#include "ngx.hpp"

#include <algorithm>

#include "clock.hpp"
#include "core/algorithm.hpp"
#include "core/override_text.hpp"
#include "core/reply.hpp"
#include "core/slab.hpp"
#include "adaptive.hpp"
#include "live.hpp"
#include "lru.hpp"
#include "marks.hpp"

namespace {

struct Shared {
    rl::LruQueues       lru;        /* by slab block size */
    rl::marks::Table    marks;      /* blocks and overrides (rl_api) */
    ngx_uint_t          sweepQueue; /* the next the requests sweep */
    int64_t             clockOffsetUs;  /* wall clock less monotonic */
    ngx_atomic_t        evictLoggedAt;  /* s, monotonic; 0: never */
    ngx_atomic_t        evictLogged;    /* the evictions then */
    ngx_atomic_t        fullLoggedAt;
};

/* A node: the header, then `slots` int64 of sliding_log times (or of
 * concurrency slots), then the key text. */
struct Node {
    rl::LruNode         lru;
    int64_t             idleAt;
    rl::State           state;
    uint32_t            slots;
    uint32_t            held;   /* holds slots: in kHeldQueue */
};

/* what a locked section leaves to count and log once unlocked */
struct Pressure {
    ngx_uint_t          evicted = 0;    /* states that still limited */
    size_t              noRoom = 0;     /* bytes of a state with none */
};

constexpr ngx_uint_t kQueues = rl::LruQueues::kQueues;
constexpr ngx_uint_t kPagesQueue = kQueues - 2;
constexpr ngx_uint_t kHeldQueue = kQueues - 1;
constexpr ngx_uint_t kSweepPerRequest = 2;
constexpr ngx_uint_t kSweepOnFull = 32;
constexpr ngx_uint_t kLookOnFull = 64;
constexpr int64_t kLogEverySeconds = 60;
/* for nginx -t's estimate: a key value of 16 bytes (an IPv6 address) in
 * the state key "{VALUE}:RULEID" */
constexpr size_t kTypicalKey = 2 + 16 + 1 + RL_RULE_ID_LEN;
constexpr size_t kFewStates = 1000;

int64_t *logOf(Node *n) {
    return reinterpret_cast<int64_t *>(reinterpret_cast<u_char *>(n) +
                                       sizeof(Node));
}

size_t nodeBytes(size_t slots, size_t keyLen) {
    return sizeof(Node) + slots * sizeof(int64_t) + keyLen;
}

/* The queue of a block: one per chunk size (8 bytes, 16, ... up to
 * half a page, the largest sharing the last), one for whole pages. (A
 * node that holds slots is in kHeldQueue, whatever its block.) */
ngx_uint_t queueOf(const rl::SlabBlock &b) {
    if (b.pages > 0) {
        return kPagesQueue;
    }
    ngx_uint_t q = 0;
    for (size_t c = 8; c < b.chunk && q < kPagesQueue - 1; c <<= 1) {
        q++;
    }
    return q;
}

rl::SlabBlock blockOf(const Node *n) {
    return rl::slabBlock(nodeBytes(n->slots, n->lru.sn.str.len),
                         ngx_pagesize);
}

/* The queue of a node of `bytes`: its block's, or the held one. */
ngx_uint_t queueOf(const Node *n, size_t bytes) {
    return n->held ? kHeldQueue
                   : queueOf(rl::slabBlock(bytes, ngx_pagesize));
}

ngx_uint_t queueOf(const Node *n) {
    return queueOf(n, nodeBytes(n->slots, n->lru.sn.str.len));
}

/* A rule's parameters now: at its live limit, if any (SPEC section
 * 11: a burst left to its default follows it); bounds: a calendar
 * rule's period (SPEC section 12), NULL for others. */
rl::Params paramsOf(const ngx_http_rl_rule_t *rule,
                    const int64_t *bounds = nullptr) {
    uint64_t n = rl::live::limitOf(rule);
    rl::Params p{static_cast<rl::Algorithm>(rule->algorithm), n,
                 rule->window_us, rule->burst_follows ? n : rule->burst,
                 rule->delay};
    p.bounds = bounds;
    return p;
}

/* Rule k of a group's period bounds, if it is a calendar rule. */
const int64_t *boundsOf(const ngx_http_rl_group_t *g, ngx_uint_t k) {
    return (g->calendar >> k) & 1 ? &g->bounds[3 * k] : nullptr;
}

/* A group's records: its rules, then the trials of them (dry runs at
 * a trial's N on states of their own: src/fleet/trials.hpp). */
struct Records {
    ngx_http_rl_group_t *g;
    ngx_http_rl_rule_t *rules;
    ngx_uint_t n;

    explicit Records(ngx_http_rl_group_t *group)
        : g(group),
          rules(static_cast<ngx_http_rl_rule_t *>(
              group->ctx->lcf->rules->elts)),
          n(ngx_http_rl_records(group)) {}

    bool trial(ngx_uint_t k) const { return k >= g->nrules; }
    /* the rule's index in the request's arrays (a trial's rule's) */
    ngx_uint_t index(ngx_uint_t k) const {
        return trial(k) ? g->trials[k - g->nrules].of : g->rules[k];
    }
    const ngx_http_rl_rule_t *rule(ngx_uint_t k) const {
        return trial(k) ? g->trials[k - g->nrules].shadow
                        : &rules[g->rules[k]];
    }
    bool dry(ngx_uint_t k) const {
        return trial(k) || ngx_http_rl_dry_run(g->ctx, rule(k)) != 0;
    }
    /* a calendar rule's period (a trial is never of one) */
    const int64_t *bounds(ngx_uint_t k) const {
        return trial(k) ? nullptr : boundsOf(g, k);
    }
    const ngx_str_t *value(ngx_uint_t k) const {
        return &g->ctx->values[index(k)];
    }
    void decided(ngx_uint_t k, const rl_outcome_t &o) const {
        if (trial(k)) {
            g->trials[k - g->nrules].outcome = o;
            g->trials[k - g->nrules].decided = 1;
        } else {
            g->ctx->outcomes[g->rules[k]] = o;
            g->ctx->decided[g->rules[k]] = 1;
        }
    }
    /* a trial's place: its rule's record */
    ngx_uint_t place(ngx_uint_t k) const {
        return g->trials[k - g->nrules].place;
    }
};

/* The trials among the n records decided (at[j]: record j's place in
 * the group) take the place of their rules there (SPEC section 11). */
void placeTrials(const Records &rec, const ngx_uint_t *at, rl::Params *dp,
                 ngx_uint_t n) {
    for (ngx_uint_t j = 0; j < n; j++) {
        if (!rec.trial(at[j])) {
            continue;
        }
        for (ngx_uint_t i = 0; i < n; i++) {
            if (at[i] == rec.place(at[j])) {
                dp[j].place = static_cast<uint32_t>(i + 1);
            }
        }
    }
}

Shared *sharedOf(ngx_http_rl_zone_t *z) {
    return static_cast<Shared *>(z->sh);
}

int64_t nowUs(ngx_http_rl_zone_t *z) {
    return rl::monotonicUs() + sharedOf(z)->clockOffsetUs;
}

void freeNode(ngx_http_rl_zone_t *z, Node *n) {
    sharedOf(z)->lru.remove(&n->lru, queueOf(n));
    ngx_slab_free_locked(z->shpool, n);
}

bool kept(const Node *n, Node *const *keep, ngx_uint_t nkeep) {
    for (ngx_uint_t k = 0; k < nkeep; k++) {
        if (keep[k] == n) {
            return true;
        }
    }
    return false;
}

/* Looks at up to `max` nodes of queue q where its sweep is (going round
 * from the least recently used) and frees those whole again, but the
 * ones this request uses. Returns how many went. */
ngx_uint_t sweep(ngx_http_rl_zone_t *z, ngx_uint_t q, int64_t now,
                 ngx_uint_t max, Node *const *keep, ngx_uint_t nkeep) {
    rl::LruQueues &lru = sharedOf(z)->lru;
    ngx_uint_t freed = 0;
    for (ngx_uint_t i = 0; i < max; i++) {
        auto *n = reinterpret_cast<Node *>(lru.sweepNext(q));
        if (n == nullptr) {
            break;
        }
        if (n->idleAt <= now && !kept(n, keep, nkeep)) {
            freeNode(z, n);
            freed++;
        }
    }
    return freed;
}

/* As requests pass: a few nodes of the next queue that has any. */
void sweepSome(ngx_http_rl_zone_t *z, int64_t now) {
    Shared *sh = sharedOf(z);
    for (ngx_uint_t i = 0; i < kQueues; i++) {
        ngx_uint_t q = sh->sweepQueue;
        sh->sweepQueue = (q + 1) % kQueues;
        if (!sh->lru.empty(q)) {
            sweep(z, q, now, kSweepPerRequest, nullptr, 0);
            return;
        }
    }
}

/* From the cold end of queue q, the nodes whose memory makes room for
 * `want`: the whole ones go, until the block fits; then, failing that,
 * the least recently used that still limits a key. */
void *evict(ngx_http_rl_zone_t *z, ngx_uint_t q, size_t size,
            const rl::SlabBlock &want, int64_t now, Node *const *keep,
            ngx_uint_t nkeep, Pressure *pr) {
    rl::LruQueues &lru = sharedOf(z)->lru;
    Node *live = nullptr;
    rl::LruNode *o = lru.oldest(q);
    for (ngx_uint_t i = 0; o != nullptr && i < kLookOnFull; i++) {
        auto *n = reinterpret_cast<Node *>(o);
        o = lru.newer(o, q);
        if (kept(n, keep, nkeep) || !rl::makesRoomFor(blockOf(n), want)) {
            continue;
        }
        if (n->idleAt > now) {
            live = live != nullptr ? live : n;
            continue;
        }
        freeNode(z, n);
        if (void *p = ngx_slab_alloc_locked(z->shpool, size)) {
            return p;
        }
    }
    if (live == nullptr) {
        return nullptr;
    }
    freeNode(z, live);
    pr->evicted++;
    return ngx_slab_alloc_locked(z->shpool, size);
}

/* `size` bytes of the zone, making room if it is full (see the top of
 * the file): the whole nodes the sweep finds next in the block's queue
 * (and in the pages', for a chunk), then those of the queues' cold
 * ends that make room, and at most one that still limits a key; last,
 * the held nodes whose slots all expired. Never one that holds slots.
 * NULL when that is not enough. */
Node *allocate(ngx_http_rl_zone_t *z, size_t size, int64_t now,
               Node *const *keep, ngx_uint_t nkeep, Pressure *pr) {
    void *p = ngx_slab_alloc_locked(z->shpool, size);
    if (p != nullptr) {
        return static_cast<Node *>(p);
    }
    rl::SlabBlock want = rl::slabBlock(size, ngx_pagesize);
    ngx_uint_t queues[2] = {queueOf(want), kPagesQueue};
    ngx_uint_t nqueues = queues[0] == kPagesQueue ? 1 : 2;
    for (ngx_uint_t i = 0; i < nqueues && p == nullptr; i++) {
        if (sweep(z, queues[i], now, kSweepOnFull, keep, nkeep) > 0) {
            p = ngx_slab_alloc_locked(z->shpool, size);
        }
    }
    for (ngx_uint_t i = 0; i < nqueues && p == nullptr; i++) {
        p = evict(z, queues[i], size, want, now, keep, nkeep, pr);
        if (pr->evicted > 0) {
            break;      /* one at most */
        }
    }
    if (p == nullptr &&
        sweep(z, kHeldQueue, now, kSweepOnFull, keep, nkeep) > 0) {
        p = ngx_slab_alloc_locked(z->shpool, size);
    }
    if (p == nullptr) {
        pr->noRoom = size;
    }
    return static_cast<Node *>(p);
}

/* The node's state changed (a decision, a refund, a slot renewed or
 * released): when it is whole again, and whether it holds slots. While
 * it holds any it is in kHeldQueue, which making room never looks at;
 * with its last it goes back to its block's queue. (A limit of 0, a
 * live one, counts nothing: the state keeps the time it had.) */
void settle(ngx_http_rl_zone_t *z, Node *n, const rl::Params &p,
            int64_t now) {
    if (p.limit > 0) {
        n->idleAt = rl::idleAtUs(p, n->state, logOf(n), now);
    }
    uint32_t held = p.algorithm == rl::Algorithm::Concurrency &&
                    n->state.a > 0;
    if (held != n->held) {
        ngx_uint_t from = queueOf(n);
        n->held = held;
        sharedOf(z)->lru.move(&n->lru, from, queueOf(n));
    }
}

/* Whether a line logged at most once a minute is due (and claimed by
 * this worker). */
bool logDue(ngx_atomic_t *at) {
    auto now = static_cast<ngx_atomic_uint_t>(
        rl::monotonicUs() / 1000000 + 1);
    ngx_atomic_uint_t last = *at;
    return (last == 0 ||
            now - last >= static_cast<ngx_atomic_uint_t>(kLogEverySeconds))
           && ngx_atomic_cmp_set(at, last, now);
}

/* Counts and logs, once the zone is unlocked, what making room did. */
void report(ngx_http_rl_zone_t *z, const Pressure &pr) {
    Shared *sh = sharedOf(z);
    if (pr.evicted > 0 && z->stats != nullptr) {
        ngx_atomic_uint_t all = ngx_atomic_fetch_add(&z->stats->evictions,
                                                     pr.evicted) +
                                pr.evicted;
        if (logDue(&sh->evictLoggedAt)) {
            ngx_atomic_uint_t since = all - sh->evictLogged;
            sh->evictLogged = all;
            ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                          "rl_zone \"%V\" is full: %uA states that still "
                          "limited a key were forgotten to make room for "
                          "new keys (%uA since nginx started; size= sets "
                          "the zone's size)", &z->name, since, all);
        }
    }
    if (pr.noRoom > 0 && logDue(&sh->fullLoggedAt)) {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "rl_zone \"%V\" is full: no room for a state of %uz "
                      "bytes without forgetting more than one that still "
                      "limits a key, or one that holds slots; requests "
                      "that need a new state get the failure policy "
                      "(size= sets the zone's size)", &z->name, pr.noRoom);
    }
}

/* A sliding_log or concurrency node made for another N (a reload
 * changed the rule's rate, a live limit or an override, or locations
 * whose rules differ in N alone share the state): made again with this
 * N's log, keeping its entries (fit() shortens none that holds more).
 * NULL when the zone has no room. */
Node *resize(ngx_http_rl_zone_t *z, Node *old, size_t slots, int64_t now,
             Node **keep, ngx_uint_t nkeep, Pressure *pr) {
    rl::LruQueues &lru = sharedOf(z)->lru;
    ngx_str_t key = old->lru.sn.str;
    size_t size = nodeBytes(slots, key.len);
    /* the old node is in use: the most recently used, and kept while
     * room is made */
    lru.touch(&old->lru, queueOf(old));
    Node *hold[RL_MAX_RULES + 1];
    ngx_uint_t nhold = 0;
    for (; nhold < nkeep && nhold < RL_MAX_RULES; nhold++) {
        hold[nhold] = keep[nhold];
    }
    hold[nhold++] = old;
    Node *n = allocate(z, size, now, hold, nhold, pr);
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
    n->held = old->held != 0 && kept > 0;
    /* (ngx_rbtree_delete() zeroes the node's key: the hash first) */
    auto hash = static_cast<uint32_t>(old->lru.sn.node.key);
    lru.remove(&old->lru, queueOf(old));
    lru.add(&n->lru, key, rl::keyAfter(n, sizeof(Node),
                                       slots * sizeof(int64_t)),
            hash, queueOf(n, size));
    ngx_slab_free_locked(z->shpool, old);
    return n;
}

/* The node's log for `slots` entries (the N in force, or an
 * override's): made again when it needs more, or fewer and holds no
 * more than that; else as it is, so that a lower N forgets no slot held
 * and no time admitted (SPEC section 9). NULL when the zone has no room
 * to make it, or it must grow under another rule of this request. */
Node *fit(ngx_http_rl_zone_t *z, Node *n, size_t slots, int64_t now,
          Node **keep, ngx_uint_t nkeep, Pressure *pr) {
    auto held = static_cast<size_t>(std::clamp<int64_t>(n->state.a, 0,
                                                        n->slots));
    if (n->slots == slots || (n->slots > slots && held > slots)) {
        return n;
    }
    if (kept(n, keep, nkeep)) {
        /* two rules of this request: a larger log serves both */
        return n->slots > slots ? n : nullptr;
    }
    return resize(z, n, slots, now, keep, nkeep, pr);
}

/* The rule's parameters for the node's log as it is. */
rl::Params forLog(rl::Params p, const Node *n) {
    p.logEntries = n->slots;
    return p;
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

/* The node of the rule's state for the value, made if it is not there,
 * with a sliding_log's ring of `slots` (the rule's, or an override's). */
Node *findOrCreate(ngx_http_rl_zone_t *z, const ngx_http_rl_rule_t *rule,
                   const ngx_str_t *value, size_t slots, int64_t now,
                   Node **keep, ngx_uint_t nkeep, Pressure *pr) {
    rl::LruQueues &lru = sharedOf(z)->lru;
    NodeKey nk(rule, value);
    const ngx_str_t &key = nk.key;
    size_t len = key.len;
    uint32_t hash = nk.hash;

    auto *found = reinterpret_cast<Node *>(lru.find(key, hash));
    if (found != nullptr) {
        Node *n = fit(z, found, slots, now, keep, nkeep, pr);
        if (n == found) {
            lru.touch(&found->lru, queueOf(found));
        }
        return n;
    }

    size_t size = nodeBytes(slots, len);
    auto *n = allocate(z, size, now, keep, nkeep, pr);
    if (n == nullptr) {
        return nullptr;
    }
    ngx_memzero(n, sizeof(Node));
    n->slots = static_cast<uint32_t>(slots);
    n->idleAt = now;
    lru.add(&n->lru, key, rl::keyAfter(n, sizeof(Node),
                                       slots * sizeof(int64_t)),
            hash, queueOf(n, size));
    return n;
}

using rl::viewOf;

/* A key value's mark (the operator API's block or override) on a rule,
 * under the zone's lock: the rule's parameters under its override
 * (params changed), and how long its block has left (0: none). */
int64_t marked(ngx_http_rl_zone_t *z, const ngx_http_rl_rule_t *rule,
               const ngx_str_t *value, int64_t now, rl::Params *params) {
    rl::marks::Effect e = rl::marks::effect(sharedOf(z)->marks, z->shpool,
                                            viewOf(*value),
                                            viewOf(rule->name), now);
    rl::Params p;
    if (e.limit > 0 && rl::overridden(*params, e.limit,
                                      rule->burst_follows != 0, &p)) {
        p.dryRun = params->dryRun;
        *params = p;
    }
    return e.blockedUs;
}

/* A block's rejection: nothing left, retry in what it has left, at most
 * a minute (as lua/rl.lua says of a Redis block), in us. */
int64_t blockRetryUs(int64_t blockedUs) {
    return blockedUs < rl::kBlockRetryUs ? blockedUs : rl::kBlockRetryUs;
}


/* A charge, or a credit (units counted, or taken off), at now. */
ngx_int_t countAt(ngx_http_rl_zone_t *z, const ngx_http_rl_rule_t *rule,
                  const ngx_str_t *value, const int64_t *bounds,
                  int64_t units, bool credit) {
    int64_t now = nowUs(z);
    Pressure pr;
    ngx_shmtx_lock(&z->shpool->mutex);
    /* in a key value's override's terms, as its requests are counted */
    rl::Params p = paramsOf(rule, bounds);
    if (sharedOf(z)->marks.count > 0) {
        (void) marked(z, rule, value, now, &p);
    }
    Node *n = findOrCreate(z, rule, value, rl::logSlots(p), now, nullptr, 0,
                           &pr);
    if (n != nullptr) {
        p = forLog(p, n);
        if (credit) {
            rl::credit(p, n->state, units, now);
        } else {
            rl::charge(p, n->state, units, now);
        }
        settle(z, n, p, now);
    }
    ngx_shmtx_unlock(&z->shpool->mutex);
    report(z, pr);
    return n != nullptr ? NGX_OK : NGX_ERROR;
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
    ngx_memzero(sh, sizeof(Shared));
    z->sh = sh;
    z->shpool->data = sh;
    sh->lru.init();
    sh->marks.init();
    sh->clockOffsetUs = rl::realtimeUs() - rl::monotonicUs();

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
    Records rec(g);
    ngx_http_rl_zone_t *z = g->zone;
    rl::Params params[RL_MAX_RULES];
    uint64_t costs[RL_MAX_RULES];
    int64_t blockedUs[RL_MAX_RULES];
    /* the records decided (all but those a block answers for): their
     * place in the group, nodes, parameters, costs and figures */
    ngx_uint_t at[RL_MAX_RULES];
    Node *nodes[RL_MAX_RULES];
    rl::Params dp[RL_MAX_RULES];
    uint64_t dc[RL_MAX_RULES];
    rl::State *states[RL_MAX_RULES];
    int64_t *logs[RL_MAX_RULES];
    rl::Figures figures[RL_MAX_RULES];
    ngx_uint_t n = 0;
    bool blocked = false;   /* an enforced rule is blocked */
    bool allowed = false;
    int64_t now = nowUs(z);
    Pressure pr;

    for (ngx_uint_t k = 0; k < rec.n; k++) {
        params[k] = paramsOf(rec.rule(k), rec.bounds(k));
        if (rec.rule(k)->adaptive != nullptr) {
            /* concurrency=auto: this instance's N, the request's level */
            rl::adaptive::embedded(&params[k], ctx, rec.index(k));
        }
        params[k].dryRun = rec.dry(k);
        params[k].slotId = g->slot_id;
        costs[k] = ctx->costs[rec.index(k)];
        blockedUs[k] = 0;
    }

    ngx_shmtx_lock(&z->shpool->mutex);
    sweepSome(z, now);

    if (sharedOf(z)->marks.count > 0) {
        for (ngx_uint_t k = 0; k < rec.n; k++) {
            blockedUs[k] = marked(z, rec.rule(k), rec.value(k), now,
                                  &params[k]);
            blocked = blocked || (blockedUs[k] > 0 && !params[k].dryRun);
        }
    }
    for (ngx_uint_t k = 0; k < rec.n && !blocked; k++) {
        if (blockedUs[k] > 0) {
            continue;   /* a dry run: it reports the block, no more */
        }
        nodes[n] = findOrCreate(z, rec.rule(k), rec.value(k),
                                rl::logSlots(params[k]), now, nodes, n, &pr);
        if (nodes[n] == nullptr) {
            ngx_shmtx_unlock(&z->shpool->mutex);
            report(z, pr);
            return NGX_ERROR;
        }
        at[n] = k;
        dp[n] = forLog(params[k], nodes[n]);
        dc[n] = costs[k];
        states[n] = &nodes[n]->state;
        logs[n] = logOf(nodes[n]);
        n++;
    }
    if (!blocked) {
        placeTrials(rec, at, dp, n);
        allowed = rl::decide(dp, states, logs, dc, n, now, figures);
        for (ngx_uint_t j = 0; j < n; j++) {
            settle(z, nodes[j], dp[j], now);
        }
    }
    ngx_shmtx_unlock(&z->shpool->mutex);
    report(z, pr);

    for (ngx_uint_t k = 0; k < rec.n; k++) {
        if (blockedUs[k] > 0) {
            int64_t us = blockRetryUs(blockedUs[k]);
            int64_t ms = rl::msCeil(us);
            rec.decided(k, {0, ms, ms, 0, us, 0});
        }
    }
    for (ngx_uint_t j = 0; j < n; j++) {
        const rl::Figures &f = figures[j];
        /* an override's N, or the live limit's (the headers say it) */
        uint64_t limit = dp[j].limit != rec.rule(at[j])->limit ? dp[j].limit
                                                               : 0;
        rec.decided(at[j], {f.remaining, rl::msCeil(f.resetUs),
                            rl::msCeil(f.retryUs), rl::msCeil(f.delayUs),
                            f.retryUs, static_cast<int64_t>(limit)});
    }
    g->allowed = allowed ? 1 : 0;
    g->now_us = now;
    g->done = 1;
    return NGX_OK;
}

void ngx_http_rl_shm_refund(ngx_http_rl_group_t *g,
                            const uint64_t *costs) noexcept {
    Records rec(g);
    ngx_http_rl_zone_t *z = g->zone;
    Node *nodes[RL_MAX_RULES];
    Pressure pr;

    ngx_shmtx_lock(&z->shpool->mutex);
    for (ngx_uint_t k = 0; k < rec.n; k++) {
        if (costs[k] == 0) {
            nodes[k] = nullptr; /* a dry-run rule that did not count it */
            continue;
        }
        /* in the terms it was counted in: an override's */
        const ngx_http_rl_rule_t *rule = rec.rule(k);
        rl::Params p = paramsOf(rule, rec.bounds(k));
        if (sharedOf(z)->marks.count > 0) {
            (void) marked(z, rule, rec.value(k), g->now_us, &p);
        }
        nodes[k] = findOrCreate(z, rule, rec.value(k), rl::logSlots(p),
                                g->now_us, nodes, k, &pr);
        if (nodes[k] != nullptr) {
            p = forLog(p, nodes[k]);
            p.slotId = g->slot_id;  /* a concurrency rule's: released */
            rl::refund(p, nodes[k]->state, logOf(nodes[k]), costs[k],
                       g->now_us);
            settle(z, nodes[k], p, g->now_us);
        }
    }
    ngx_shmtx_unlock(&z->shpool->mutex);
    report(z, pr);
}

void ngx_http_rl_shm_usage(ngx_http_rl_zone_t *z, size_t *used,
                           size_t *size) noexcept {
    *used = 0;
    *size = 0;
    if (z->shm_zone == nullptr || z->shpool == nullptr) {
        return;
    }
    ngx_slab_pool_t *pool = z->shpool;
    *size = z->shm_zone->shm.size;
    ngx_shmtx_lock(&pool->mutex);
    size_t free = pool->pfree * ngx_pagesize;
    ngx_shmtx_unlock(&pool->mutex);
    *used = free < *size ? *size - free : 0;
}

void ngx_http_rl_shm_check(ngx_conf_t *cf,
                           ngx_http_rl_main_conf_t *rmcf) noexcept {
    /* each state once: a name's states are apart from every other's */
    auto *names = static_cast<ngx_http_rl_name_t *>(rmcf->names.elts);
    for (ngx_uint_t i = 0; i < rmcf->names.nelts; i++) {
        for (ngx_uint_t k = 0; k < names[i].nstates; k++) {
            ngx_http_rl_rule_t *rule = names[i].states[k];
            ngx_http_rl_zone_t *z = rule->zone;
            if (z->shm_zone == nullptr) {
                continue;
            }
            size_t bytes = nodeBytes(rl::logSlots(paramsOf(rule)),
                                     kTypicalKey);
            size_t states = rl::statesThatFit(z->size, bytes,
                                              ngx_pagesize);
            if (states >= kFewStates) {
                continue;
            }
            ngx_log_error(NGX_LOG_WARN, cf->log, 0,
                          "rl_zone \"%V\" size=%uz holds about %uz states "
                          "of rule \"%V\" (%uz bytes each): fewer than %uz "
                          "keys can be limited at once, a larger \"size\" "
                          "holds more, in %s:%ui", &z->name, z->size,
                          states, &rule->name, bytes, kFewStates,
                          rule->file, rule->line);
        }
    }
}

/* A key's state read as the next request would find it, counting
 * nothing (the operator API): what it has left and when it is whole
 * again (with nothing left, when it frees one request). A key the zone
 * does not hold reads as a fresh one. */
ngx_int_t ngx_http_rl_shm_peek(ngx_http_rl_zone_t *z,
                               const ngx_http_rl_rule_t *rule,
                               const ngx_str_t *value,
                               const int64_t *bounds,
                               rl_outcome_t *out) noexcept {
    rl::Params params = paramsOf(rule, bounds);
    if (rule->adaptive != nullptr) {
        /* concurrency=auto: at this instance's N */
        rl::adaptive::embeddedAt(
            &params, static_cast<ngx_http_rl_main_conf_t *>(
                         ngx_http_cycle_get_module_main_conf(
                             ngx_cycle, ngx_http_rl_module)),
            rule, value, 0);
    }
    NodeKey nk(rule, value);
    int64_t now = nowUs(z);
    rl::State fresh = {0, 0, 0};
    int64_t zeros[1] = {0};
    const int64_t *log = zeros;
    Pressure pr;

    ngx_shmtx_lock(&z->shpool->mutex);
    int64_t blockedUs = sharedOf(z)->marks.count > 0
                            ? marked(z, rule, value, now, &params) : 0;
    auto *n = reinterpret_cast<Node *>(sharedOf(z)->lru.find(nk.key,
                                                             nk.hash));
    if (n != nullptr) {
        /* a log of another N: as a decision would make it */
        n = fit(z, n, rl::logSlots(params), now, nullptr, 0, &pr);
    }
    const rl::State &state = n != nullptr ? n->state : fresh;
    if (n != nullptr) {
        log = logOf(n);
        params = forLog(params, n);
    }
    rl::Check c = rl::check(params, state, log, 0, now);
    int64_t resetUs = c.left > 0 ? c.resetUs
                                 : rl::check(params, state, log, 1, now)
                                       .retryUs;
    ngx_shmtx_unlock(&z->shpool->mutex);
    report(z, pr);

    auto limit = static_cast<int64_t>(
        params.limit != rule->limit ? params.limit : 0);
    if (blockedUs > 0) {
        int64_t ms = rl::msCeil(blockRetryUs(blockedUs));
        *out = {0, ms, ms, 0, 0, limit};
    } else {
        *out = {c.left, rl::msCeil(resetUs), 0, 0, 0, limit};
    }
    return NGX_OK;
}

/* Forgets a key's state in a rule (the operator API's reset): 1 if it
 * was held, else 0. */
ngx_uint_t ngx_http_rl_shm_forget(ngx_http_rl_zone_t *z,
                                  const ngx_http_rl_rule_t *rule,
                                  const ngx_str_t *value) noexcept {
    NodeKey nk(rule, value);
    ngx_shmtx_lock(&z->shpool->mutex);
    auto *n = reinterpret_cast<Node *>(sharedOf(z)->lru.find(nk.key,
                                                             nk.hash));
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
    auto *n = reinterpret_cast<Node *>(sharedOf(z)->lru.find(*key, hash));
    if (n != nullptr && n->slots >= 2) {
        /* the ring's own N: the rule's, or a key value's override's,
         * or more (fit()) */
        rl::Params p = forLog(paramsOf(rule), n);
        p.limit = n->slots / 2;
        p.slotId = slot;
        int64_t now = nowUs(z);
        if (renew) {
            rl::renew(p, n->state, logOf(n), now);
        } else {
            rl::refund(p, n->state, logOf(n), 1, now);
        }
        settle(z, n, p, now);
    }
    ngx_shmtx_unlock(&z->shpool->mutex);
}


ngx_int_t ngx_http_rl_shm_charge(ngx_http_rl_zone_t *z,
                                 const ngx_http_rl_rule_t *rule,
                                 const ngx_str_t *value,
                                 const int64_t *bounds,
                                 int64_t units) noexcept {
    return countAt(z, rule, value, bounds, units, false);
}

ngx_int_t ngx_http_rl_shm_credit(ngx_http_rl_zone_t *z,
                                 const ngx_http_rl_rule_t *rule,
                                 const ngx_str_t *value,
                                 const int64_t *bounds,
                                 int64_t units) noexcept {
    return countAt(z, rule, value, bounds, units, true);
}

int64_t ngx_http_rl_shm_now(ngx_http_rl_zone_t *z) noexcept {
    return nowUs(z);
}

}  // extern "C"

namespace rl::marks {

View zoneRead(ngx_http_rl_zone_t *z, std::string_view value,
              std::string_view rule, char *reason, size_t cap,
              size_t *reasonLen) {
    ngx_shmtx_lock(&z->shpool->mutex);
    View v = read(sharedOf(z)->marks, z->shpool, value, rule, nowUs(z));
    *reasonLen = v.reason.size() < cap ? v.reason.size() : cap;
    if (*reasonLen > 0) {
        ngx_memcpy(reason, v.reason.data(), *reasonLen);
    }
    ngx_shmtx_unlock(&z->shpool->mutex);
    v.reason = {reason, *reasonLen};
    return v;
}

bool zoneWrite(ngx_http_rl_zone_t *z, std::string_view value, Op op,
               std::string_view rule, uint64_t n, int64_t ttlMs,
               std::string_view reason, char *old, size_t oldCap,
               size_t *oldLen) {
    ngx_shmtx_lock(&z->shpool->mutex);
    bool ok = write(sharedOf(z)->marks, z->shpool, value, op, rule, n,
                    ttlMs * 1000, reason, nowUs(z), old, oldCap, oldLen);
    ngx_shmtx_unlock(&z->shpool->mutex);
    return ok;
}

}  // namespace rl::marks

