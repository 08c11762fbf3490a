/* Leases (SPEC section 6): capacity Redis has counted, spent by this
 * instance's workers from shared memory.
 *
 * The lease table (lease.cpp) is one shared-memory zone of the instance,
 * in stripes, each its own lock, LRU index (shm/lru.hpp) and queue of
 * live leases: two workers on two keys rarely meet on a lock. An entry
 * per group (the rules of one request on one zone, with their key
 * values) counts its arrivals, to tell a hot group from a cold one and
 * size what it asks; once asked, it keeps its lease: per rule the units
 * held, what Redis had left after the grant, and the keys and specs a
 * refund needs, so any worker, of this configuration or the next, can
 * give the units back.
 *
 * A lease's own calls (lease_calls.cpp) are groups of their own, owned
 * by the worker, not by a request: a grant (a record of cost 0 asking
 * for k units, sent in the same batch behind the request that found the
 * group hot, or on its own to renew a lease before it runs out) and a
 * return (a refund at the grant's time of what was not spent).
 */
#pragma once

#include "ngx.hpp"
#include "lru.hpp"

namespace rl {
namespace lease {

inline constexpr ngx_uint_t kStripes = 16;

/* One rule's part of a lease. */
struct RuleLease {
    int64_t     units;      /* held, not spent yet */
    int64_t     left;       /* what Redis had left after the grant */
    int64_t     resetAt;    /* monotonic us: the rule whole again */
    int64_t     limit;      /* a key value's override of N, or 0 */
    int64_t     windowUs;   /* fixed_window: its window, else 0 */
    uint16_t    keyLen;
    uint16_t    specLen;
};

/* A group's lease: rules[nrules], then each rule's state key and spec. */
struct Lease {
    ngx_queue_t     live;       /* in its stripe's, while it holds units */
    int64_t         expiresAt;  /* monotonic us; 0: no grant held */
    int64_t         validUs;    /* the grant's lifetime */
    int64_t         grantedAt;  /* Redis us: the grant's time */
    int64_t         granted;    /* its units (rule 0's) */
    ngx_uint_t      generation; /* of the worker that installed it */
    uint32_t        zoneCrc;
    uint16_t        nrules;
    uint16_t        slot;
    RuleLease       rules[1];
};

/* Bytes of a lease of n rules, before its keys and specs; where they
 * start (each rule's key, in order, then each rule's spec). */
constexpr size_t leaseBytes(size_t n) {
    return sizeof(Lease) + (n - 1) * sizeof(RuleLease);
}
inline const u_char *textOf(const Lease *l) {
    return reinterpret_cast<const u_char *>(l) + leaseBytes(l->nrules);
}

struct Entry {
    LruNode         lru;
    int64_t         period;         /* its zone's lease=, us */
    int64_t         periodStart;    /* monotonic us */
    int64_t         periodUnits;    /* arrived since */
    int64_t         lastUnits;      /* in the period before */
    int64_t         askUntil;       /* a grant is out until then */
    Lease          *lease;          /* NULL until first asked */
};

/* A cold group's arrivals in its first period, kept where its hash
 * says, until they make it hot (then it gets an entry): a flood of new
 * keys, none ever hot, makes no entry, allocates nothing and frees
 * nothing. A slot taken by another group in its period sends the
 * newcomer to an entry, as before slots. */
struct Slot {
    uint32_t        hash;           /* the group's; 0 with endsAt 0: free */
    uint32_t        units;          /* arrived since endsAt - period */
    int64_t         endsAt;         /* monotonic us: its period's end */
};

inline constexpr ngx_uint_t kSlots = 1024;     /* a stripe's */

struct Stripe {
    ngx_shmtx_sh_t  lock;
    ngx_shmtx_t     mutex;
    LruIndex        index;
    ngx_queue_t     live;           /* leases held, soonest to end last */
    Slot            slots[kSlots];
};

struct Shared {
    ngx_atomic_t    generation;     /* one more per configuration */
    ngx_atomic_t    full;           /* logged: no room for an entry,
                                       none made since */
    Stripe          stripes[kStripes];
};

enum class Kind : uint8_t { Grant, Return };

/* A lease's own call: a group the worker owns (group.ctx is NULL),
 * with its keys, specs, costs (a return's units), each rule's fixed
 * window and its entry's key in the same block; a return gives back at
 * the grant's time, its group's now_us. */
struct Call {
    ngx_http_rl_group_t     group;
    ngx_queue_t             queue;      /* the worker's calls, or its
                                           spare blocks */
    size_t                  bytes;      /* the block's */
    Kind                    kind;
    ngx_http_rl_zone_t     *zone;
    ngx_str_t               id;         /* its entry's key */
    uint32_t                hash;
    int64_t                *windowUs;   /* per rule, as RuleLease's */
    bool                    counted;    /* a return counted as written */
};

/* What a worker sends once it let go of a stripe's lock. */
struct Outbox {
    static constexpr ngx_uint_t kSize = 16;
    Call       *calls[kSize];
    ngx_uint_t  n = 0;

    bool full() const { return n == kSize; }
    /* (its users leave room: at most kEvictPerRequest returns, an end
     * and a grant from a request; the sweeps send when it is full) */
    void add(Call *c) {
        if (c != nullptr && n < kSize) {
            calls[n++] = c;
        }
    }
};

/* The worker's part (lease_calls.cpp). */
struct Worker {
    ngx_http_rl_main_conf_t *rmcf;
    Shared                  *sh;
    ngx_slab_pool_t         *pool;
    ngx_uint_t               generation;
    ngx_event_t              sweep;
    int64_t                  sweepAt;   /* monotonic us it is set for */
    ngx_queue_t              calls;     /* out, or waiting to go */
    /* blocks for calls, made before a stripe is locked (reserve()) so
     * that a call is made under the lock without allocating */
    ngx_queue_t              spare;
    ngx_uint_t               nspare;
    size_t                   blockBytes; /* of a spare block */
    bool                     grew;      /* blockBytes did: smaller go */
    /* while calls are out: a worker that exits waits for their replies
     * (a grant Redis counted is installed or given back, not lost), at
     * most its zones' longest timeout (a timer nginx waits for) */
    ngx_event_t              hold;
    ngx_msec_t               holdMs;
    bool                     exiting;   /* exit_process: no turn is left */
    bool                     evicted;   /* logged: the table was full */
    uint64_t                 locks;     /* stripe locks taken */
    uint64_t                 waits;     /* of them, held by another */
    ngx_log_t               *log;
};

Worker *workerOf(ngx_http_rl_main_conf_t *rmcf);

/* lease_calls.cpp */
/* A call of the lease's group: a return of costs[k] of rule k at thenUs
 * (costs NULL: what the lease holds, at its grant's time), or a grant
 * of up to `ask` units. NULL: no memory, or the zone is gone. */
Call *returnOf(Worker *w, const Lease *l, const int64_t *costs,
               int64_t thenUs);
Call *grantOf(Worker *w, const Lease *l, const ngx_str_t &id,
              uint32_t hash, uint64_t ask);
/* Before a stripe is locked: spare blocks for as many calls as an
 * outbox holds (allocated now, not under the lock). */
void reserve(Worker *w);
/* Sends the outbox's calls (each freed if it cannot go); empties it.
 * After the stripe's lock is let go: it sets timers. */
void send(Worker *w, Outbox *out);
/* The sweep runs at `at` (monotonic us) or sooner. */
void sweepBy(Worker *w, int64_t at);
/* The zone of this configuration a lease was made for, or NULL. */
ngx_http_rl_zone_t *zoneOf(Worker *w, uint32_t crc);
void freeCall(Worker *w, Call *c);

/* lease.cpp */
Stripe &stripeOf(Shared *sh, uint32_t hash);
/* Takes the stripe's lock (after reserve()), counting the times another
 * worker had it. */
void lock(Worker *w, Stripe &st);
/* Takes what a lease holds (its return into out) and ends it. */
void end(Worker *w, Lease *l, Outbox *out);
/* A grant's reply: g units at grantedAt (Redis us), the grant record's
 * figures in out (NULL: no reply), installed in the group's lease (what
 * it held before goes back), or given back at once (the entry is gone,
 * or the reply came too late). True when the call went on as that
 * return: the caller must not free it. */
bool install(Worker *w, Call *grant, const rl_outcome_t *out, int64_t g,
             int64_t grantedAt);
/* The sweep: leases past their end give back what they hold; returns
 * the soonest end left (0: none). */
int64_t sweep(Worker *w, int64_t now);
/* At worker exit: every lease this worker's generation installed. */
void returnGeneration(Worker *w);
/* Every lease of a key value (its block key PREFIX{VALUE}: the operator
 * API changed it). */
void endValue(Worker *w, const ngx_str_t &block);

}  // namespace lease
}  // namespace rl

/* request.cpp's side */
namespace rl {

/* Whether the group may be decided from a lease: its zone has lease=,
 * and none of its rules is a dry run, shapes (delay=) or holds a slot
 * (concurrency=). */
bool leasable(const ngx_http_rl_group_t *g);

/* The group's request spends from its lease: true and its outcomes
 * set, or false (it goes to Redis; g->lease_want the units to ask once
 * it left, see leaseAsk()). Renewals and returns go meanwhile. */
bool leaseSpend(ngx_http_rl_group_t *g);

/* The group's request left for Redis on `link`: the grant it wants
 * follows it, in the same batch. */
void leaseAsk(ngx_http_rl_group_t *g, ngx_http_rl_link_t *link);

/* Another zone rejected the request: what it spent goes back to its
 * lease, or to Redis if that grant is over. */
void leaseUnspend(ngx_http_rl_group_t *g);

/* A lease's own call was answered (lease_calls.cpp). */
void leaseCallDone(ngx_http_rl_group_t *g, const void *reply,
                   int64_t clockUs, const int64_t *limits, int64_t grant);
void leaseRefundDone(ngx_http_rl_group_t *g, int retry);
/* The worker's lease calls (grants, returns) are out. */
bool leasesOut(ngx_http_rl_main_conf_t *rmcf);

}  // namespace rl
