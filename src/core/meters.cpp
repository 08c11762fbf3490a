/* token_bucket, leaky_bucket and gcra: the meters.
 *
 * They count in units of g / N us (g = gcd(N, W)): a request is
 * w' = W / g units, a microsecond n' = N / g units, so every figure is
 * an integer and the Lua doubles stay exact below 2^53. A time that
 * multiplies n' is clamped first, so nothing overflows.
 *
 * A meter's units depend on N: token_bucket and leaky_bucket keep the
 * units their state is in, and after N changed read it as whole
 * requests in the new units (inUnits()), so current usage is kept to
 * within a request. gcra keeps a time, and its fraction of a
 * microsecond is read in the new units. */
#include "algorithm_steps.hpp"

namespace rl::steps {

namespace {

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

}  // namespace

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

namespace {

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

}  // namespace

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

}  // namespace rl::steps
