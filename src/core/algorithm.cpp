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
 *                   the ring (logSlots() = N entries) holds admission
 *                   times, oldest first, never decreasing
 *   token_bucket    a = last update (us, 0: never: full), b = tokens,
 *                   c = the units b is in (w' when written)
 *   leaky_bucket    a = last update (us), b = level, c = as token_bucket
 *   gcra            a = theoretical arrival time (TAT), whole us,
 *                   b = its fraction, 0 <= b < n' (units)
 *   concurrency     a = entries of the log in use, two per slot held
 *                   (its expiry in us, its id), in no order; b = 0 (the
 *                   log's head, so that a ring copied for another N
 *                   keeps whole slots, src/shm_store.cpp)
 *
 * The meters count in units of g / N us (g = gcd(N, W)): a request is
 * w' = W / g units, a microsecond n' = N / g units, so every figure is
 * an integer and the Lua doubles stay exact below 2^53. A time that
 * multiplies n' is clamped first, so nothing overflows.
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
 * A meter's units depend on N: token_bucket and leaky_bucket keep the
 * units their state is in, and after N changed read it as whole
 * requests in the new units (inUnits()), so current usage is kept to
 * within a request. gcra keeps a time, and its fraction of a
 * microsecond is read in the new units. */
#include "algorithm.hpp"

#include <algorithm>
#include <cmath>

namespace rl {
namespace {

constexpr int64_t kExactLimit = int64_t(1) << 53;

/* Beyond what the script computes exactly, and far from overflowing:
 * a larger cost counts as this much, a larger product saturates. */
constexpr int64_t kMaxFigure = int64_t(1) << 60;

/* b > 0; exact for every int64 a. */
int64_t ceilDiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return a % b > 0 ? q + 1 : q;
}

int64_t floorDiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return a % b < 0 ? q - 1 : q;
}

uint64_t gcd(uint64_t a, uint64_t b) {
    while (b != 0) {
        uint64_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

int64_t i64(uint64_t v) {
    return v > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX
                                                : static_cast<int64_t>(v);
}

/* a * b for a, b >= 0, at most kMaxFigure (exact within the bounds
 * exactArithmetic() checks). */
int64_t mulSat(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r) || r > kMaxFigure) {
        return kMaxFigure;
    }
    return r;
}

int64_t costOf(uint64_t cost) {
    return std::min(i64(cost), kMaxFigure);
}

Check rejectAll(int64_t retryUs) {
    return {false, 0, retryUs, retryUs, 0};
}

/* ------------------------------------------------------------------ */
/* fixed_window                                                       */

/* The window (a calendar rule: its period's end) the state keeps
 * counting in at now: its own while it runs (the same window, or a later
 * one: the clock went back; a calendar period until it ends, whatever
 * the bounds say), else now's, fresh. */
struct Window {
    int64_t w;
    bool kept;
};

Window fixedWindow(const Params& p, const State& s, int64_t now) {
    if (p.calendar()) {
        return s.a > now ? Window{s.a, true} : Window{periodEnd(p, now), false};
    }
    int64_t w = now / i64(p.windowUs);
    return s.a >= w ? Window{s.a, true} : Window{w, false};
}

Check fixedCheck(const Params& p, const State& s, int64_t cost, int64_t now) {
    const int64_t limit = i64(p.limit);
    Window win = fixedWindow(p, s, now);
    int64_t used = win.kept ? s.b - s.c : 0;
    Check c{};
    c.ok = used + cost <= limit;
    c.left = std::max<int64_t>(limit - used, 0);
    c.resetUs = p.calendar() ? win.w - now
                             : (win.w + 1) * i64(p.windowUs) - now;
    c.retryUs = c.ok ? 0 : c.resetUs;
    return c;
}

void fixedCommit(const Params& p, State& s, int64_t cost, int64_t now) {
    Window win = fixedWindow(p, s, now);
    if (win.kept) {
        s.b += cost;
    } else {
        s = {win.w, cost, 0};
    }
}

void fixedRefund(const Params& p, State& s, int64_t cost, int64_t then) {
    int64_t w = p.calendar() ? periodEnd(p, then) : then / i64(p.windowUs);
    if (s.a == w) {
        s.b = std::max<int64_t>(s.b - cost, 0);
    }
}

void fixedCredit(const Params& p, State& s, int64_t units, int64_t now) {
    Window win = fixedWindow(p, s, now);
    if (win.kept) {
        s.c += units;
    } else {
        s = {win.w, 0, units};
    }
}

/* ------------------------------------------------------------------ */
/* sliding_window: the doubles below are the Lua script's, operation
 * for operation, so both round alike.                                */

struct Sliding {
    int64_t w;        /* window the time falls in */
    int64_t elapsed;  /* since that window began */
    int64_t back;     /* how far the clock went back (0 normally) */
    int64_t cur;
    int64_t prev;
};

Sliding slidingAt(const Params& p, const State& s, int64_t now) {
    const int64_t window = i64(p.windowUs);
    Sliding v{now / window, 0, 0, 0, 0};
    if (s.a > v.w) {
        v.back = s.a * window - now;
        v.w = s.a;
    } else {
        v.elapsed = now - v.w * window;
    }
    if (s.a == v.w) {
        v.cur = s.b;
        v.prev = s.c;
    } else if (s.a == v.w - 1) {
        v.prev = s.b;
    }
    return v;
}

int64_t slidingRetry(double prev, double cur, int64_t elapsed, int64_t window,
                     double limit, double cost) {
    const double wd = static_cast<double>(window);
    if (cost > limit) {
        return 2 * window - elapsed;
    }
    double room = limit - cur - cost;
    if (room >= 0 && prev > 0) {
        double t = wd - room * wd / prev;
        return std::max(static_cast<int64_t>(std::ceil(t)) - elapsed,
                        int64_t(1));
    }
    if (room >= 0) {
        return 1;
    }
    double t = wd - (limit - cost) * wd / cur;
    return window - elapsed +
           std::max(static_cast<int64_t>(std::ceil(t)), int64_t(0));
}

Check slidingCheck(const Params& p, const State& s, int64_t cost,
                   int64_t now) {
    const int64_t window = i64(p.windowUs);
    Sliding v = slidingAt(p, s, now);
    const double prev = static_cast<double>(v.prev);
    const double cur = static_cast<double>(v.cur);
    const double limit = static_cast<double>(p.limit);
    const double dc = static_cast<double>(cost);
    double est = prev * static_cast<double>(window - v.elapsed) /
                     static_cast<double>(window) +
                 cur;
    Check c{};
    c.ok = est + dc <= limit;
    c.left = std::max(static_cast<int64_t>(std::floor(limit - est)),
                      int64_t(0));
    int64_t after = v.cur;
    if (c.ok) {
        after += cost;
    } else {
        c.retryUs = slidingRetry(prev, cur, v.elapsed, window, limit, dc) +
                    v.back;
    }
    if (after > 0) {
        c.resetUs = 2 * window - v.elapsed + v.back;
    } else if (v.prev > 0) {
        c.resetUs = window - v.elapsed + v.back;
    }
    return c;
}

void slidingCommit(const Params& p, State& s, int64_t cost, int64_t now) {
    Sliding v = slidingAt(p, s, now);
    s.a = v.w;
    s.b = v.cur + cost;
    s.c = v.prev;
}

void slidingRefund(const Params& p, State& s, int64_t cost, int64_t then) {
    int64_t w = then / i64(p.windowUs);
    if (s.a == w) {
        s.b = std::max<int64_t>(s.b - cost, 0);
    } else if (s.a == w + 1) {
        s.c = std::max<int64_t>(s.c - cost, 0);
    }
}

/* ------------------------------------------------------------------ */
/* sliding_log: a ring of N admission times, oldest first             */

struct Ring {
    const int64_t* slots;
    int64_t size;   /* N */
    int64_t count;
    int64_t head;

    int64_t at(int64_t i) const {
        int64_t k = head + i;
        return slots[k >= size ? k - size : k];
    }

    /* First index in [0, count) whose time is > t (count if none). */
    int64_t firstAfter(int64_t t) const {
        int64_t lo = 0;
        int64_t hi = count;
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (at(mid) > t) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        return lo;
    }
};

Ring ringOf(const Params& p, const State& s, const int64_t* log) {
    int64_t n = i64(p.limit);
    int64_t count = std::clamp<int64_t>(s.a, 0, n);
    int64_t head = n > 0 ? std::clamp<int64_t>(s.b, 0, n - 1) : 0;
    return {log, n, log != nullptr ? count : 0, head};
}

/* The log's time: now, or its newest entry if the clock went back. */
int64_t logTime(const Ring& r, int64_t now) {
    return r.count > 0 ? std::max(now, r.at(r.count - 1)) : now;
}

Check logCheck(const Params& p, const State& s, const int64_t* log,
               int64_t cost, int64_t now) {
    const int64_t limit = i64(p.limit);
    const int64_t window = i64(p.windowUs);
    Ring r = ringOf(p, s, log);
    int64_t t = logTime(r, now);
    int64_t first = r.firstAfter(t - window);
    int64_t live = r.count - first;
    Check c{};
    c.ok = live + cost <= limit;
    c.left = std::max<int64_t>(limit - live, 0);
    if (c.ok) {
        if (cost > 0) {
            c.resetUs = t + window - now;
        } else if (live > 0) {
            c.resetUs = r.at(r.count - 1) + window - now;
        }
    } else {
        if (cost > limit) {
            c.retryUs = window;
        } else {
            /* the (live + cost - N)-th oldest entry must expire */
            c.retryUs = r.at(first + live + cost - limit - 1) + window - now;
        }
        c.resetUs = c.retryUs;
    }
    return c;
}

void logCommit(const Params& p, State& s, int64_t* log, int64_t cost,
               int64_t now) {
    Ring r = ringOf(p, s, log);
    if (log == nullptr || r.size <= 0) {
        return;
    }
    int64_t t = logTime(r, now);
    int64_t first = r.firstAfter(t - i64(p.windowUs));
    int64_t head = (r.head + first) % r.size;
    int64_t count = r.count - first;
    for (int64_t i = 0; i < cost && count < r.size; i++, count++) {
        log[(head + count) % r.size] = t;
    }
    s.a = count;
    s.b = head;
}

void logRefund(const Params& p, State& s, int64_t* log, int64_t cost,
               int64_t then) {
    Ring r = ringOf(p, s, log);
    int64_t lo = r.firstAfter(then - 1);
    int64_t hi = r.firstAfter(then);
    int64_t m = std::min(cost, hi - lo);
    if (m <= 0) {
        return;
    }
    /* the entries after the removed ones move down m places */
    for (int64_t i = hi; i < r.count; i++) {
        log[(r.head + i - m) % r.size] = r.at(i);
    }
    s.a = r.count - m;
    s.b = r.head;
}

int64_t logIdleAt(const Params& p, const State& s, const int64_t* log) {
    Ring r = ringOf(p, s, log);
    return r.count > 0 ? r.at(r.count - 1) + i64(p.windowUs) : 0;
}

/* ------------------------------------------------------------------ */
/* The meters                                                          */

struct Meter {
    int64_t w;     /* units per request: W / g */
    int64_t n;     /* units per microsecond: N / g */
    int64_t k;     /* capacity in requests */
    int64_t full;  /* capacity in units: k * w */
    int64_t cost;  /* C */
    int64_t need;  /* C * w */
};

Meter meterOf(const Params& p, int64_t cost) {
    uint64_t g = gcd(p.limit, p.windowUs);
    Meter m{};
    m.w = i64(p.windowUs / g);
    m.n = i64(p.limit / g);
    m.k = std::min(i64(p.burst), kMaxFigure) +
          (p.algorithm == Algorithm::TokenBucket ? 0 : 1);
    m.full = mulSat(m.k, m.w);
    m.cost = cost;
    m.need = mulSat(cost, m.w);
    return m;
}

/* A meter's stored tokens or level in this rule's units: the state
 * keeps the units it was written in (c = w' then; 0: written before
 * they were kept, taken as these). After N changed, the figure becomes
 * whole requests, rounded the safe way (tokens down, a level up), in
 * the new units: what is used is kept, in requests. */
int64_t inUnits(const Meter& m, const State& s, int64_t x, bool up) {
    if (s.c <= 0 || s.c == m.w || x <= 0) {
        return x;
    }
    int64_t q = x / s.c;
    if (up && q * s.c < x) {
        q++;
    }
    return mulSat(q, m.w);
}

/* Never admissible (C > capacity): the figure is the time C requests
 * take at the rate. */
Check meterNever(const Meter& m, int64_t left) {
    Check c = rejectAll(ceilDiv(m.need, m.n));
    c.left = left; /* nothing is taken: what the bucket still admits */
    return c;
}

/* leaky_bucket and gcra: `level` units are queued (0 <= level; above
 * the capacity only after a change of the rule or of the clock). */
Check levelCheck(const Params& p, const Meter& m, int64_t level) {
    int64_t left = level >= m.full ? 0 : (m.full - level) / m.w;
    if (m.cost > m.k) {
        return meterNever(m, left);
    }
    Check c{};
    c.ok = level + m.need <= m.full;
    c.left = left;
    if (c.ok) {
        int64_t after = level + m.need;
        c.resetUs = ceilDiv(after, m.n);
        if (p.delay < p.burst) {
            int64_t excess =
                after - mulSat(std::min(i64(p.delay), kMaxFigure) + 1, m.w);
            c.delayUs = excess > 0 ? ceilDiv(excess, m.n) : 0;
        }
    } else {
        c.retryUs = ceilDiv(level + m.need - m.full, m.n);
        c.resetUs = c.retryUs;
    }
    return c;
}

/* leaky_bucket: the level at now, drained since the last update. */
int64_t leakyLevel(const Meter& m, const State& s, int64_t now) {
    int64_t x = inUnits(m, s, s.b, true);
    int64_t elapsed = std::max<int64_t>(now - s.a, 0);
    if (x <= 0 || elapsed >= ceilDiv(x, m.n)) {
        return 0;
    }
    return x - elapsed * m.n;
}

Check leakyCheck(const Params& p, const State& s, int64_t cost,
                 int64_t now) {
    Meter m = meterOf(p, cost);
    return levelCheck(p, m, leakyLevel(m, s, now));
}

/* The meters' time never goes back: a request decided after a later
 * one (its batch waited longer, or another host's did) counts as of
 * that later time, so no interval drains or refills twice. */
void leakyCommit(const Params& p, State& s, int64_t cost, int64_t now) {
    Meter m = meterOf(p, cost);
    s.b = leakyLevel(m, s, now) + m.need;
    s.a = std::max(s.a, now);
    s.c = m.w;
}

void leakyRefund(const Params& p, State& s, int64_t cost) {
    Meter m = meterOf(p, cost);
    s.b = std::max<int64_t>(inUnits(m, s, s.b, true) - m.need, 0);
    s.c = m.w;
    if (s.b == 0) {
        s = State{}; /* empty: as fresh (the script deletes the key) */
    }
}

int64_t leakyIdleAt(const Params& p, const State& s) {
    Meter m = meterOf(p, 0);
    int64_t x = inUnits(m, s, s.b, true);
    return x > 0 ? s.a + ceilDiv(x, m.n) : 0;
}

/* gcra: the queue ahead of now, TAT - now, in units. Past the
 * capacity (the clock went back, the rule changed) only the rejection
 * figures are computed, without multiplying a long time. */
Check gcraCheck(const Params& p, const State& s, int64_t cost, int64_t now) {
    Meter m = meterOf(p, cost);
    int64_t dt = s.a - now;
    if (dt < 0) {
        return levelCheck(p, m, 0);
    }
    if (dt <= m.full / m.n) {
        return levelCheck(p, m, dt * m.n + s.b);
    }
    if (m.cost > m.k) {
        return meterNever(m, 0);
    }
    return rejectAll(dt + ceilDiv(s.b + m.need - m.full, m.n));
}

void gcraCommit(const Params& p, State& s, int64_t cost, int64_t now) {
    Meter m = meterOf(p, cost);
    int64_t t = s.a;
    int64_t f = s.b;
    if (t < now) {
        t = now;
        f = 0;
    }
    int64_t sum = f + m.need;
    s.a = t + sum / m.n;
    s.b = sum % m.n;
}

void gcraRefund(const Params& p, State& s, int64_t cost, int64_t then) {
    Meter m = meterOf(p, cost);
    if (s.a < then || (s.a == then && s.b == 0)) {
        return; /* TAT <= then: nothing of that request is left */
    }
    int64_t sum = s.b - m.need;
    int64_t t = s.a + floorDiv(sum, m.n);
    int64_t f = sum - floorDiv(sum, m.n) * m.n;
    if (t < then || (t == then && f == 0)) {
        s = State{}; /* TAT <= then: as fresh (the script deletes it) */
    } else {
        s.a = t;
        s.b = f;
    }
}

int64_t gcraIdleAt(const State& s) {
    return s.a + (s.b > 0 ? 1 : 0);
}

/* token_bucket: the tokens at now, refilled since the last update. */
int64_t tokensAt(const Meter& m, const State& s, int64_t now) {
    int64_t x = inUnits(m, s, s.b, false);
    if (s.a == 0 || x >= m.full) {
        return m.full;
    }
    int64_t elapsed = std::max<int64_t>(now - s.a, 0);
    if (elapsed >= ceilDiv(m.full - x, m.n)) {
        return m.full;
    }
    return x + elapsed * m.n;
}

Check tokenCheck(const Params& p, const State& s, int64_t cost,
                 int64_t now) {
    Meter m = meterOf(p, cost);
    int64_t tokens = tokensAt(m, s, now);
    int64_t left = std::max<int64_t>(tokens, 0) / m.w;
    if (m.cost > m.k) {
        return meterNever(m, left);
    }
    Check c{};
    c.ok = tokens >= m.need;
    c.left = left;
    if (c.ok) {
        c.resetUs = ceilDiv(m.full - (tokens - m.need), m.n);
    } else {
        c.retryUs = ceilDiv(m.need - tokens, m.n);
        c.resetUs = c.retryUs;
    }
    return c;
}

void tokenCommit(const Params& p, State& s, int64_t cost, int64_t now) {
    Meter m = meterOf(p, cost);
    s.b = tokensAt(m, s, now) - m.need;
    s.a = std::max(s.a, now); /* as leakyCommit */
    s.c = m.w;
}

void tokenRefund(const Params& p, State& s, int64_t cost) {
    if (s.a == 0) {
        return;
    }
    Meter m = meterOf(p, cost);
    s.b = std::min(inUnits(m, s, s.b, false) + m.need, m.full);
    s.c = m.w;
    if (s.b == m.full) {
        s = State{}; /* full: as fresh (the script deletes the key) */
    }
}

int64_t tokenIdleAt(const Params& p, const State& s) {
    if (s.a == 0) {
        return 0;
    }
    Meter m = meterOf(p, 0);
    int64_t x = inUnits(m, s, s.b, false);
    return x >= m.full ? s.a : s.a + ceilDiv(m.full - x, m.n);
}

/* ------------------------------------------------------------------ */
/* concurrency: slots as (expiry, id) pairs in the log                 */

struct Slots {
    int64_t* log;
    int64_t used;   /* entries: 2 per slot */

    int64_t expiry(int64_t i) const { return log[2 * i]; }
    int64_t slots() const { return used / 2; }
    int64_t find(uint64_t id) const {
        for (int64_t i = 0; i < slots(); i++) {
            if (static_cast<uint64_t>(log[2 * i + 1]) == id) {
                return i;
            }
        }
        return -1;
    }
    /* the last slot takes the place of slot i */
    void remove(int64_t i) {
        used -= 2;
        log[2 * i] = log[used];
        log[2 * i + 1] = log[used + 1];
    }
};

Slots slotsOf(const Params& p, const State& s, int64_t* log) {
    int64_t cap = 2 * std::min(i64(p.limit), kMaxFigure / 2);
    int64_t used = log != nullptr ? std::clamp<int64_t>(s.a, 0, cap) : 0;
    return {log, used - used % 2};
}

Check inflightCheck(const Params& p, const State& s, const int64_t* log,
                    int64_t cost, int64_t now) {
    const int64_t limit = i64(p.limit);
    Slots sl = slotsOf(p, s, const_cast<int64_t*>(log));
    int64_t live = 0;
    for (int64_t i = 0; i < sl.slots(); i++) {
        live += sl.expiry(i) > now ? 1 : 0;
    }
    Check c{};
    c.ok = live + cost <= limit;
    c.left = std::max<int64_t>(limit - live, 0);
    if (!c.ok) {
        c.retryUs = kInflightRetryUs;
        c.resetUs = kInflightRetryUs;
    }
    return c;
}

/* Expired slots go, then the request's is held for a hold. */
void inflightCommit(const Params& p, State& s, int64_t* log, int64_t now) {
    Slots sl = slotsOf(p, s, log);
    for (int64_t i = sl.slots() - 1; i >= 0; i--) {
        if (sl.expiry(i) <= now) {
            sl.remove(i);
        }
    }
    if (log != nullptr && sl.slots() < i64(p.limit)) {
        log[sl.used] = now + i64(p.windowUs);
        log[sl.used + 1] = static_cast<int64_t>(p.slotId);
        sl.used += 2;
    }
    s.a = sl.used;
    s.b = 0;
}

void inflightRelease(const Params& p, State& s, int64_t* log) {
    Slots sl = slotsOf(p, s, log);
    int64_t i = sl.find(p.slotId);
    if (i >= 0) {
        sl.remove(i);
        s.a = sl.used;
    }
}

int64_t inflightIdleAt(const Params& p, const State& s, const int64_t* log) {
    Slots sl = slotsOf(p, s, const_cast<int64_t*>(log));
    int64_t at = 0;
    for (int64_t i = 0; i < sl.slots(); i++) {
        at = std::max(at, sl.expiry(i));
    }
    return at;
}

/* N and W within what the script's doubles hold exactly. */
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
        return 2 * static_cast<size_t>(p.limit);
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
    Slots sl = slotsOf(p, s, log);
    int64_t i = sl.find(p.slotId);
    int64_t ends = std::max<int64_t>(nowUs, 0) + i64(p.windowUs);
    if (i >= 0) {   /* never sooner than it was (ZADD GT) */
        log[2 * i] = std::max(log[2 * i], ends);
    } else if (log != nullptr && sl.slots() < i64(p.limit)) {
        /* lost (expired and removed while its request ran): put back,
         * where the ring has room (Redis' set has no bound) */
        log[sl.used] = ends;
        log[sl.used + 1] = static_cast<int64_t>(p.slotId);
        s.a = sl.used + 2;
        s.b = 0;
    }
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
     * when its retry is positive. */
    bool allowed = true;
    for (size_t i = 0; i < n; i++) {
        Check c = check(p[i], *s[i], logs != nullptr ? logs[i] : nullptr,
                        cost[i], nowUs);
        out[i] = {c.left, c.resetUs, c.retryUs,
                  p[i].dryRun ? 0 : c.delayUs};
        allowed = allowed && (c.ok || p[i].dryRun);
    }
    for (size_t i = 0; i < n; i++) {
        if (allowed && out[i].retryUs == 0) {
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
