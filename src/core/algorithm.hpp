/* The six algorithms, exact, on an injected clock, and the in-flight
 * limit (concurrency=, SPEC section 9). They are the embedded store's
 * implementation and the reference the Lua scripts (lua/) are tested
 * against: for the same parameters, state and time, a script and this
 * code give the same decision and the same figures.
 *
 * Every decision is two-phase, so several rules of one request are
 * all-or-nothing: check() every rule, then commit() every rule only if
 * all of them admit the request.
 *
 * Times are microseconds (int64); a clock that goes backwards counts as
 * no time passing. */
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace rl {

enum class Algorithm : uint8_t {
    FixedWindow = 0,
    SlidingWindow,
    SlidingLog,
    TokenBucket,
    LeakyBucket,
    Gcra,
    /* concurrency=N: slots held by requests in progress, each until its
     * request ends (released) or its hold passes unrenewed; windowUs is
     * the hold. Not a rate: no burst, no delay, no charge=. */
    Concurrency,
};

/* A rate algorithm by its name (algorithm=); not "concurrency". */
std::optional<Algorithm> algorithmFromName(std::string_view name);
std::string_view algorithmName(Algorithm a);

/* Which parameters an algorithm takes (others are a config error). */
bool takesBurst(Algorithm a);   /* token_bucket, leaky_bucket, gcra */
bool takesDelay(Algorithm a);   /* leaky_bucket, gcra */

struct Params {
    Algorithm algorithm;
    uint64_t limit;     /* N */
    uint64_t windowUs;  /* W: N requests per W */
    /* token_bucket: capacity (default N); leaky_bucket, gcra: excess
     * requests tolerated beyond the conforming one (default 0), so
     * burst=5 admits 1 + 5 at once from idle; others: 0 */
    uint64_t burst;
    /* leaky_bucket, gcra: excess requests that pass at once; the rest of
     * the burst is delayed until it conforms. nodelay: delay = burst.
     * others: 0 */
    uint64_t delay;
    /* dry run: evaluated and counted, never rejects nor delays; a
     * request it would reject takes nothing from it */
    bool dryRun = false;
    /* a trial (SPEC section 11, a dry run too): 1 + the index among the
     * request's rules of the rule whose place it takes; 0: none. It
     * counts the request when that world admits it: it admits it and
     * every other rule but that one does (decide()). */
    uint32_t place = 0;
    /* concurrency: the request's slot (its worker and a counter), what
     * commit() holds and refund() releases */
    uint64_t slotId = 0;
    /* fixed_window counting calendar periods (rate=Nr/month...,
     * src/core/calendar.hpp): 3 times in us, the start and end of the
     * period holding the time they were made at and the next period's
     * end (NULL: windows of windowUs from the epoch), kept by the caller
     * while it decides (a pointer: a request's arrays of Params are made
     * for every rule it could have). A request's time picks its period
     * among them (periodEnd()); windowUs is then only the unit's nominal
     * length, for the reply's bounds. */
    const int64_t* bounds = nullptr;
    /* sliding_log, concurrency: the entries of the log the caller
     * keeps beside the state, when not logSlots(): a state made for a
     * larger N keeps its log under a lower one (a live limit, an
     * override) while it holds more than that N (SPEC section 9), so
     * nothing it counted is forgotten. 0: logSlots(). */
    uint64_t logEntries = 0;

    bool calendar() const { return bounds != nullptr; }
};

/* A calendar rule's period that `nowUs` falls in, by its end: the first
 * of the bounds after it; past the last, periods of the next one's
 * length after it (a clock more than a period ahead of the one that
 * made the bounds). */
int64_t periodEnd(const Params& p, int64_t nowUs);

/* A concurrency rule's retry, and its figures' reset when nothing is
 * left: a slot frees as soon as any request of the key ends, so the
 * client is told to come back in a second (Retry-After: 1); the deny
 * cache never keeps such a rejection (a freed slot is used at once). */
inline constexpr int64_t kInflightRetryUs = 100000;

/* A manual block's retry: what it has left, at most a minute (lua/rl.lua
 * says so of a Redis block; the embedded store's marks alike). */
inline constexpr int64_t kBlockRetryUs = 60000000;

/* A limit of 0 (a live limit, SPEC section 11) rejects every request
 * and counts nothing: its retry is the window, at most a block's minute
 * (the limit may be lifted any time), a concurrency rule's its own. */
int64_t zeroRetryUs(const Params& p);

/* Default burst for an algorithm when the rule gives none. */
uint64_t defaultBurst(Algorithm a, uint64_t limit);

/* The most a rule ever holds, in requests (the largest cost it can
 * admit): N for the windows and the log, the bucket (burst) for
 * token_bucket, 1 + burst for leaky_bucket and gcra (saturating). */
uint64_t capacity(const Params& p);

/* The longest a rule's delay= makes a request wait, in us: its full
 * bucket draining (capacity x W / N, with N at least 1 under a key
 * value's override), plus a millisecond of rounding; 0 for a rule that
 * never delays (nodelay, a dry run, the other algorithms). Saturates at
 * 2^53. */
int64_t maxDelayUs(const Params& p);

/* The longest retry a rule's reply may give a request of this cost, in
 * us: freeing (capacity + cost) requests at one a window (N at least 1
 * under a key value's override), two windows (sliding_window), or a
 * manual block's 60 s, whichever is longest, plus a millisecond.
 * Saturates at 2^53. */
int64_t maxRetryUs(const Params& p, uint64_t cost);

/* The meters (token_bucket, leaky_bucket, gcra) count in units of
 * g / N microseconds, g = gcd(N, W), so that one request is exactly
 * W / g units; their arithmetic is exact while (capacity + cost) * W / g
 * (plus N / g) stays below 2^53 (doubles in Redis' Lua) and a full
 * meter drains within 2^52 us (142 years; a TAT stays below 2^53 until
 * 2112). False: the rule must be refused at configuration. Windows and
 * the log are always exact; any algorithm needs N > 0 and W > 0. */
bool exactArithmetic(const Params& p, uint64_t maxCost);

/* One rule's state for one key value; all zero is a fresh state. The
 * meaning of a, b, c depends on the algorithm (see algorithm.cpp). */
struct State {
    int64_t a;
    int64_t b;
    int64_t c;
};

/* sliding_log keeps admission times in a ring of logSlots() entries
 * beside the State; concurrency its slots there, two entries each (its
 * expiry and its id); other algorithms need none (0). */
size_t logSlots(const Params& p);

struct Check {
    bool ok;          /* the rule admits the request */
    int64_t left;     /* what it admits before this request */
    int64_t resetUs;  /* until whole again (ok) / until it frees capacity */
    int64_t retryUs;  /* 0 if ok, else until this request would fit */
    int64_t delayUs;  /* ok and shaped by delay=: wait before serving */
};

Check check(const Params& p, const State& s, const int64_t* log,
            uint64_t cost, int64_t nowUs);

/* Counts the request checked at nowUs (only after every rule's check
 * admitted it). */
void commit(const Params& p, State& s, int64_t* log, uint64_t cost,
            int64_t nowUs);

/* Gives back a request counted at thenUs (another zone rejected it);
 * concurrency: releases p.slotId (the request ended). */
void refund(const Params& p, State& s, int64_t* log, uint64_t cost,
            int64_t thenUs);

/* A charge (charge=, SPEC section 10): `units` more counted at nowUs,
 * whatever the limit (usage may exceed it: debt), as commit() counts an
 * admitted request; a negative charge gives -units back at nowUs, as
 * refund() does. Not for sliding_log nor concurrency. */
void charge(const Params& p, State& s, int64_t units, int64_t nowUs);

/* A credit (the operator API's, SPEC section 12): the key may use
 * `units` more now. fixed_window (and every calendar rule): its usage
 * goes down by units in its current window or period, below zero if need
 * be, until the window ends (the credit kept apart from the count, so a
 * refund never takes it); the state is made for now's window if it has
 * none. sliding_window and the meters: units given back at nowUs, as
 * refund() does (none goes below a fresh state). Not for sliding_log
 * nor concurrency (the API refuses them). */
void credit(const Params& p, State& s, int64_t units, int64_t nowUs);

/* Whether an algorithm takes a credit. */
bool takesCredit(Algorithm a);

/* concurrency: p.slotId expires a hold after nowUs, never sooner than
 * it did (its request still runs); a slot no longer held (expired and
 * removed) is put back, if fewer than N are held. */
void renew(const Params& p, State& s, int64_t* log, int64_t nowUs);

/* When the state is back to what a fresh one would decide: the Redis
 * TTL, and when the embedded store may forget the key. */
int64_t idleAtUs(const Params& p, const State& s, const int64_t* log,
                 int64_t nowUs);

/* One rule's figures in a decision, as the script replies them
 * (microseconds). */
struct Figures {
    int64_t remaining;  /* after this request if admitted, else before */
    /* until it frees capacity when nothing remains (rejected: until
     * this request fits; admitted leaving 0: until one more does), else
     * until it is whole again */
    int64_t resetUs;
    int64_t retryUs;    /* 0: this rule admits the request */
    int64_t delayUs;    /* 0 unless admitted and shaped */
};

/* What the script (lua/rl.lua) does for the n rules of one call: check
 * every rule; if every rule that is not a dry run admits the request,
 * commit every rule that admits it (a dry-run rule that would reject it
 * takes nothing), else commit none; but a trial (p.place) commits when
 * it admits the request and every rule that is not a dry run, but the
 * one whose place it takes, does: a request its rule rejects alone is
 * counted in it (its figures are still those of a request not
 * admitted). logs may be null when no rule is a sliding_log. Returns
 * whether the request is admitted; out[0..n) gets the figures. */
bool decide(const Params* p, State* const* s, int64_t* const* logs,
            const uint64_t* cost, size_t n, int64_t nowUs, Figures* out);

}  // namespace rl
