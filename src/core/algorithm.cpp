/* The six algorithms; the lua/ scripts are their Redis twins, figure for figure
 * (tests/differential_test.cpp holds them to it).
 *
 * State per algorithm (all zero: fresh):
 *   fixed_window    a = window index (a calendar rule: its period's
 *                   end, us), b = count in it, c = the credit it was
 *                   given in it (usage: b - c)
 *   sliding_window  a = current window index, b = its count,
 *                   c = count of window a - 1
 *   sliding_log     a = entries in the ring, b = index of the oldest;
 *                   the ring (logSlots() = N entries, or more under a
 *                   lower N: Params::logEntries) holds admission
 *                   times, oldest first, never decreasing
 *   token_bucket    a = last update (us, 0: never: full), b = tokens,
 *                   c = the units b is in (w' when written)
 *   leaky_bucket    a = last update (us), b = level, c = as token_bucket
 *   gcra            a = theoretical arrival time (TAT), whole us,
 *                   b = its fraction, 0 <= b < n' (units)
 *   concurrency     a = entries of the log in use, two per slot held
 *                   (its expiry in us, its id), in no order; b = 0 (the
 *                   log's head, so that a ring copied for another N
 *                   keeps whole slots, src/shm/store.cpp)
 *
 * A clock that goes backwards (now before the state's own time) counts
 * as no time passing: windows and the log decide as at their latest
 * time (and the log records admissions at it, keeping its order);
 * token_bucket and leaky_bucket refill or drain nothing and, admitting,
 * restart from the caller's clock. Figures are from the caller's now,
 * so they are never negative. gcra keeps no update time: a TAT ahead
 * of now is its queue, so a clock gone back looks like a longer queue
 * (rejected, retry until the clock is back past it) and it is identical
 * to leaky_bucket only for clocks that do not go back.
 *
 * Each family's steps are in a file of its own (algorithm_steps.hpp);
 * this file checks the parameters and dispatches. */
#include "algorithm.hpp"

#include "algorithm_steps.hpp"

#include <algorithm>

namespace rl {

using namespace steps;

namespace {

bool valid(const Params& p) {
    return p.limit > 0 && p.windowUs > 0 &&
           p.limit <= static_cast<uint64_t>(kExactLimit) &&
           p.windowUs <= static_cast<uint64_t>(kExactLimit);
}

}  // namespace

std::optional<Algorithm> algorithmFromName(std::string_view name) {
    for (Algorithm a : {Algorithm::FixedWindow, Algorithm::SlidingWindow,
                        Algorithm::SlidingLog, Algorithm::TokenBucket,
                        Algorithm::LeakyBucket, Algorithm::Gcra}) {
        if (algorithmName(a) == name) {
            return a;
        }
    }
    return std::nullopt;
}

std::string_view algorithmName(Algorithm a) {
    switch (a) {
    case Algorithm::FixedWindow:
        return "fixed_window";
    case Algorithm::SlidingWindow:
        return "sliding_window";
    case Algorithm::SlidingLog:
        return "sliding_log";
    case Algorithm::TokenBucket:
        return "token_bucket";
    case Algorithm::LeakyBucket:
        return "leaky_bucket";
    case Algorithm::Gcra:
        return "gcra";
    case Algorithm::Concurrency:
        return "concurrency";
    }
    return {};
}

bool takesBurst(Algorithm a) {
    return a == Algorithm::TokenBucket || a == Algorithm::LeakyBucket ||
           a == Algorithm::Gcra;
}

bool takesDelay(Algorithm a) {
    return a == Algorithm::LeakyBucket || a == Algorithm::Gcra;
}

uint64_t defaultBurst(Algorithm a, uint64_t limit) {
    return a == Algorithm::TokenBucket ? limit : 0;
}

int64_t zeroRetryUs(const Params& p) {
    if (p.algorithm == Algorithm::Concurrency) {
        return kInflightRetryUs;
    }
    return std::min(i64(p.windowUs), kBlockRetryUs);
}

uint64_t capacity(const Params& p) {
    if (!takesBurst(p.algorithm)) {
        return p.limit;
    }
    if (p.algorithm == Algorithm::TokenBucket || p.burst == UINT64_MAX) {
        return p.burst;
    }
    return p.burst + 1;
}

int64_t maxDelayUs(const Params& p) {
    if (!takesDelay(p.algorithm) || p.delay >= p.burst || p.dryRun) {
        return 0;
    }
    constexpr uint64_t kMax = 1ULL << 53;
    uint64_t c = capacity(p);
    if (p.windowUs != 0 && c > (kMax - 1000) / p.windowUs) {
        return static_cast<int64_t>(kMax);
    }
    return static_cast<int64_t>(c * p.windowUs + 1000);
}

int64_t maxRetryUs(const Params& p, uint64_t cost) {
    constexpr uint64_t kMax = 1ULL << 53;
    if (p.algorithm == Algorithm::Concurrency) {
        return kBlockRetryUs + 1000; /* (a block's) */
    }
    uint64_t units = capacity(p);
    units = units > kMax - cost ? kMax : units + cost;
    uint64_t us = p.windowUs != 0 && units > (kMax - 1000) / p.windowUs
                      ? kMax
                      : units * p.windowUs;
    us = std::max({us, p.windowUs <= kMax / 2 ? 2 * p.windowUs : kMax,
                   static_cast<uint64_t>(kBlockRetryUs)});
    return static_cast<int64_t>(us > kMax - 1000 ? kMax : us + 1000);
}

bool exactArithmetic(const Params& p, uint64_t maxCost) {
    if (!valid(p)) {
        return false;
    }
    if (!takesBurst(p.algorithm)) {
        return true;
    }
    const uint64_t limit = uint64_t(kExactLimit);
    const uint64_t g = gcd(p.limit, p.windowUs);
    const uint64_t w = p.windowUs / g;
    const uint64_t n = p.limit / g;
    const uint64_t k = capacity(p);
    if (k >= limit || maxCost >= limit || n >= limit) {
        return false;
    }
    const uint64_t sum = k + maxCost;
    if (sum == 0) {
        return true;
    }
    /* (K + C) * w' + n' < 2^53: levels, tokens and their sums; and the
     * horizon (K + C) * w' / n' below 2^52 us, so a TAT (now + horizon)
     * stays below 2^53 until the year 2112. */
    if (w > (limit - 1 - n) / sum) {
        return false;
    }
    return sum * w / n < (limit >> 1);
}

size_t logSlots(const Params& p) {
    switch (p.algorithm) {
    case Algorithm::SlidingLog:
        return static_cast<size_t>(p.limit);
    case Algorithm::Concurrency:
        /* concurrency=auto: its max (burst), whatever N is now */
        return 2 * static_cast<size_t>(std::max(p.limit, p.burst));
    default:
        return 0;
    }
}

Check check(const Params& p, const State& s, const int64_t* log,
            uint64_t cost, int64_t nowUs) {
    if (p.limit == 0 && p.windowUs > 0) {
        return rejectAll(zeroRetryUs(p));
    }
    if (!valid(p)) {
        return rejectAll(1);
    }
    if (p.algorithm == Algorithm::SlidingLog && log == nullptr) {
        return rejectAll(i64(p.windowUs)); /* no ring: nothing to admit */
    }
    if (p.algorithm == Algorithm::Concurrency && log == nullptr) {
        return rejectAll(kInflightRetryUs); /* nowhere to hold a slot */
    }
    const int64_t c = costOf(cost);
    const int64_t now = std::max<int64_t>(nowUs, 0);
    switch (p.algorithm) {
    case Algorithm::FixedWindow:
        return fixedCheck(p, s, c, now);
    case Algorithm::SlidingWindow:
        return slidingCheck(p, s, c, now);
    case Algorithm::SlidingLog:
        return logCheck(p, s, log, c, now);
    case Algorithm::TokenBucket:
        return tokenCheck(p, s, c, now);
    case Algorithm::LeakyBucket:
        return leakyCheck(p, s, c, now);
    case Algorithm::Gcra:
        return gcraCheck(p, s, c, now);
    case Algorithm::Concurrency:
        return inflightCheck(p, s, log, c, now);
    }
    return rejectAll(1);
}

void commit(const Params& p, State& s, int64_t* log, uint64_t cost,
            int64_t nowUs) {
    /* A request that costs nothing changes nothing (the script does
     * not write either). */
    if (!valid(p) || cost == 0) {
        return;
    }
    const int64_t c = costOf(cost);
    const int64_t now = std::max<int64_t>(nowUs, 0);
    switch (p.algorithm) {
    case Algorithm::FixedWindow:
        fixedCommit(p, s, c, now);
        break;
    case Algorithm::SlidingWindow:
        slidingCommit(p, s, c, now);
        break;
    case Algorithm::SlidingLog:
        logCommit(p, s, log, c, now);
        break;
    case Algorithm::TokenBucket:
        tokenCommit(p, s, c, now);
        break;
    case Algorithm::LeakyBucket:
        leakyCommit(p, s, c, now);
        break;
    case Algorithm::Gcra:
        gcraCommit(p, s, c, now);
        break;
    case Algorithm::Concurrency:
        inflightCommit(p, s, log, now); /* one slot, whatever the cost */
        break;
    }
}

void refund(const Params& p, State& s, int64_t* log, uint64_t cost,
            int64_t thenUs) {
    if (!valid(p) || cost == 0) {
        return;
    }
    const int64_t c = costOf(cost);
    const int64_t then = std::max<int64_t>(thenUs, 0);
    switch (p.algorithm) {
    case Algorithm::FixedWindow:
        fixedRefund(p, s, c, then);
        break;
    case Algorithm::SlidingWindow:
        slidingRefund(p, s, c, then);
        break;
    case Algorithm::SlidingLog:
        if (log != nullptr) {
            logRefund(p, s, log, c, then);
        }
        break;
    case Algorithm::TokenBucket:
        tokenRefund(p, s, c);
        break;
    case Algorithm::LeakyBucket:
        leakyRefund(p, s, c);
        break;
    case Algorithm::Gcra:
        gcraRefund(p, s, c, then);
        break;
    case Algorithm::Concurrency:
        inflightRelease(p, s, log);
        break;
    }
}

void charge(const Params& p, State& s, int64_t units, int64_t nowUs) {
    if (p.algorithm == Algorithm::SlidingLog ||
        p.algorithm == Algorithm::Concurrency) {
        return;
    }
    /* every other commit counts without a limit, and a refund gives back
     * at its time: a charge is one or the other */
    if (units > 0) {
        commit(p, s, nullptr, static_cast<uint64_t>(units), nowUs);
    } else if (units < 0) {
        refund(p, s, nullptr, static_cast<uint64_t>(-units), nowUs);
    }
}

void renew(const Params& p, State& s, int64_t* log, int64_t nowUs) {
    if (p.algorithm != Algorithm::Concurrency || !valid(p)) {
        return;
    }
    inflightRenew(p, s, log, std::max<int64_t>(nowUs, 0));
}

int64_t periodEnd(const Params& p, int64_t nowUs) {
    const int64_t* b = p.bounds;
    for (int i = 0; i < 3; i++) {
        if (nowUs < b[i]) {
            return b[i];
        }
    }
    int64_t len = std::max<int64_t>(b[2] - b[1], 1);
    return b[2] + ((nowUs - b[2]) / len + 1) * len;
}

bool takesCredit(Algorithm a) {
    return a != Algorithm::SlidingLog && a != Algorithm::Concurrency;
}

void credit(const Params& p, State& s, int64_t units, int64_t nowUs) {
    if (!valid(p) || units <= 0 || !takesCredit(p.algorithm)) {
        return;
    }
    const int64_t now = std::max<int64_t>(nowUs, 0);
    if (p.algorithm == Algorithm::FixedWindow) {
        fixedCredit(p, s, std::min(units, kMaxFigure), now);
    } else {
        refund(p, s, nullptr, static_cast<uint64_t>(units), now);
    }
}

int64_t idleAtUs(const Params& p, const State& s, const int64_t* log,
                 int64_t nowUs) {
    if (!valid(p)) {
        return nowUs;
    }
    const int64_t window = i64(p.windowUs);
    int64_t at = 0;
    switch (p.algorithm) {
    case Algorithm::FixedWindow:
        if (s.b == 0 && s.c == 0) {
            at = 0;
        } else {
            at = p.calendar() ? s.a : (s.a + 1) * window;
        }
        break;
    case Algorithm::SlidingWindow:
        at = s.b > 0 ? (s.a + 2) * window
                     : (s.c > 0 ? (s.a + 1) * window : 0);
        break;
    case Algorithm::SlidingLog:
        at = logIdleAt(p, s, log);
        break;
    case Algorithm::TokenBucket:
        at = tokenIdleAt(p, s);
        break;
    case Algorithm::LeakyBucket:
        at = leakyIdleAt(p, s);
        break;
    case Algorithm::Gcra:
        at = gcraIdleAt(s);
        break;
    case Algorithm::Concurrency:
        at = inflightIdleAt(p, s, log);
        break;
    }
    (void)nowUs;
    return at;
}

bool decide(const Params* p, State* const* s, int64_t* const* logs,
            const uint64_t* cost, size_t n, int64_t nowUs, Figures* out) {
    /* Every rule is checked before any commits; a rule rejects exactly
     * when its retry is positive. refused: the enforced rules that
     * reject it, the last of them at `last` (a trial's world is the
     * request less its rule's verdict). */
    bool allowed = true;
    size_t refused = 0, last = 0;
    for (size_t i = 0; i < n; i++) {
        Check c = check(p[i], *s[i], logs != nullptr ? logs[i] : nullptr,
                        cost[i], nowUs);
        out[i] = {c.left, c.resetUs, c.retryUs,
                  p[i].dryRun ? 0 : c.delayUs};
        allowed = allowed && (c.ok || p[i].dryRun);
        if (!c.ok && !p[i].dryRun) {
            refused++;
            last = i + 1;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (!allowed && out[i].retryUs == 0 && p[i].place != 0 &&
            refused == 1 && last == p[i].place) {
            /* a trial whose rule alone rejects it: its world admits it */
            commit(p[i], *s[i], logs != nullptr ? logs[i] : nullptr,
                   cost[i], nowUs);
            out[i].delayUs = 0;
        } else if (allowed && out[i].retryUs == 0) {
            int64_t* log = logs != nullptr ? logs[i] : nullptr;
            commit(p[i], *s[i], log, cost[i], nowUs);
            out[i].remaining =
                std::max<int64_t>(out[i].remaining - i64(cost[i]), 0);
            if (out[i].remaining == 0) {
                /* nothing left: the reset is until it frees capacity
                 * (for one more request), not until it is whole */
                Check next = check(p[i], *s[i], log, 1, nowUs);
                if (!next.ok) {
                    out[i].resetUs = next.retryUs;
                }
            }
        } else {
            out[i].delayUs = 0;
        }
    }
    return allowed;
}

}  // namespace rl
