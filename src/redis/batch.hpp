/* Batches: the requests a worker sends one zone's Redis during one turn
 * of the event loop leave as one script call (lua/rl.lua takes several
 * requests per call), so Redis runs EVALSHA, TIME and the script's
 * driver once per turn instead of once per request, and nginx formats
 * and parses one command.
 *
 * A request queued here keeps its own time: its record in the call says
 * how long it waited (t = -A: A us before Redis' TIME), so requests keep
 * the spacing they arrived with.
 */
#pragma once

#include "core/script.hpp"
#include "ngx.hpp"

namespace rl {

class Link;

/* One request's script call: a decision, queued or in flight, or a
 * refund. Owned by the link (a free list), so a reply arriving after
 * its request went away finds a live object whose group is NULL. */
struct Call {
    Link                 *link;
    ngx_http_rl_group_t  *group;
    Call                 *next;
    ngx_uint_t            rules;     /* its part of the reply: its rules, kept
                                      * once gone (0: gone before it left) */
    uint16_t              slot;      /* in a cluster: its group's */
    bool                  asking;    /* after ASKING (an ASK redirection) */
    bool                  single;    /* a call across slots did not do it
                                      * (its slot moves): on its own slot */
};

/* Calls sent as one script call, in order: decisions, or the worker's
 * own calls of one kind: refunds (a lease's returns, each call a record
 * at its own time; releases of slots), renewals of slots, charges. */
struct Batch {
    Link     *link;
    Call     *first;
    Batch    *next;                  /* free list */
    CallKind  kind;
    bool      across;                /* a call across slots (node_batch.cpp) */
};

/* At most this many requests, and about this many keys, per call (the
 * first request always goes, with up to kMaxRulesPerCall). */
inline constexpr ngx_uint_t kMaxBatchRequests = 128;
inline constexpr ngx_uint_t kMaxBatchKeys = 512;

class CallQueue {
public:
    bool empty() const { return head_ == nullptr; }
    void push(Call *call);
    /* The first calls, within the limits (at least one). */
    Call *take();
    /* Every call, in order (a list by next); the queue is empty after. */
    Call *takeAll();
    /* Every call of other after this one's; other is empty after. */
    void append(CallQueue *other);

private:
    Call *head_ = nullptr;
    Call *tail_ = nullptr;
};

/* A cluster's calls of one turn by slot (and ASKING or not, on their
 * own slot or not): a call of declared keys has one slot; a call across
 * slots (src/redis/node_batch.cpp) takes the slots' calls one slot after the
 * other. fill() puts each call in its slot's queue in one pass, through
 * a small table of the slots seen, cleared entry by entry after
 * (before, each batch scanned the queue again for its slot: with a key
 * per request, nearly every request its own slot, O(n^2) in the calls
 * of a turn). */
class SlotBuckets {
public:
    ~SlotBuckets();
    /* Every call of q into its slot's bucket, buckets in the order of
     * their slots' first call, calls in order; false when out of memory
     * (q is left as it was). */
    bool fill(CallQueue *q, ngx_log_t *log);
    /* The calls that may go across slots (neither ASKING nor single),
     * bucket after bucket, appended to *across: a slot's calls are
     * together there. */
    void gather(CallQueue *across);
    /* The next batch: the first calls of the first bucket left, within
     * the limits; NULL when every call went. */
    Call *next();

private:
    struct Bucket {
        CallQueue calls;
        uint32_t key;        /* slot * 4 + asking * 2 + single */
        size_t pos;          /* its entry in table_ */
    };

    Bucket *buckets_ = nullptr;
    size_t nbuckets_ = 0;
    size_t capBuckets_ = 0;
    size_t at_ = 0;
    uint32_t *table_ = nullptr;     /* bucket + 1; 0: free */
    size_t capTable_ = 0;           /* a power of two */
};

/* One batch's call as the bytes Redis reads (RESP), written straight
 * from the requests' keys, specs and costs into a buffer reused from
 * call to call (hiredis copies the command when it is queued), with no
 * printf. Keys and specs go once per call (src/core/script.hpp): the
 * requests of a hot key send it once. */
class BatchCommand {
public:
    ~BatchCommand();

    /* Builds the call for the calls from `first` whose request is still
     * there (the others' `rules` become 0: they have no part in the
     * reply), with EVAL (the script's text) or EVALSHA; `nowUs` is the
     * monotonic time it leaves at. A refund's records are at their
     * groups' now_us (the time the refund gives back at) and the call
     * ends with "refund"; a renewal's or a charge's are at the time they
     * leave, and end with "renew" or "charge". `across`: a call across
     * slots (the calls of a slot together): the script with its flags
     * (core/script.hpp crossSlotScriptText), no key declared, and the
     * map of the keys' slots last (lua/rl.lua). Returns its length, or
     * 0 when out of memory or when no request is left. */
    size_t build(Call *first, bool eval, int64_t nowUs, ngx_log_t *log,
                 CallKind kind = CallKind::Decide, bool across = false);

    const char *data() const { return reinterpret_cast<char *>(buf_); }

private:
    /* the call's keys and specs, each once, and each rule's indexes into
     * them (across: and how many keys each slot has, in groupKeys_);
     * false when out of memory */
    bool index(Call *first, size_t rules, bool across, ngx_log_t *log);
    size_t keyIndex(const ngx_str_t *key);
    size_t specIndex(const ngx_str_t *spec);

    u_char *buf_ = nullptr;          /* the command */
    size_t bufCap_ = 0;
    /* the entries of slots_ used by the last call, cleared by the next
     * (rather than the whole table) */
    uint16_t used_[kMaxBatchKeys + kMaxRulesPerCall] = {};  /* nkeys_ */
    const ngx_str_t **keys_ = nullptr;
    const ngx_str_t **specs_ = nullptr;
    uint32_t *ruleKey_ = nullptr;    /* per rule, 1-based */
    uint32_t *ruleSpec_ = nullptr;
    size_t cap_ = 0;                 /* of each of the four */
    size_t nkeys_ = 0;
    size_t nspecs_ = 0;
    /* a call across slots: each slot's keys, in order (a slot per call
     * at most) */
    uint16_t groupKeys_[kMaxBatchRequests] = {};
    size_t ngroups_ = 0;
    /* keys_ by hash: index + 1, 0 free (open addressing) */
    static constexpr size_t kSlots = 2048;
    uint16_t slots_[kSlots] = {};
};

/* A refund: give back costs[k] in each rule k of the group, counted at
 * thenUs, and release its slots (src/core/script.hpp: EVALSHA sha n
 * keys head specs refund; EVAL with the script's text when `eval`,
 * Redis having lost it), on its own (after ASKING when `asking`); or
 * another of the worker's own calls (a renewal of the group's slots, a
 * charge of costs[k] as signed units, at Redis' time). The group hears
 * of it through ngx_http_rl_refund_done(). NULL when it could not be
 * sent. */
Call *sendRefund(Link *link, ngx_http_rl_group_t *group, bool asking,
                 bool eval, int64_t thenUs, const uint64_t *costs,
                 CallKind kind = CallKind::Refund);

/* The part of a batch's reply for a call of `rules` rules starting at
 * byte *at (advanced past it; the first part starts at kClockBytes): a
 * view in *slice, or `reply` itself when it is no string (an error,
 * NULL) or too short. */
const redisReply *replyPart(const redisReply *reply, size_t *at,
                            ngx_uint_t rules, redisReply *slice);

}  // namespace rl
