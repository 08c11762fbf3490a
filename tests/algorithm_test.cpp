/* The six algorithms of the core on a fake clock: window edges, refill,
 * TAT with burst, costs above 1 and above the capacity, the extreme
 * rates (1r/d, 1000000r/s), a clock going backwards, delay figures,
 * refunds and when a state is idle. differential_test.cpp holds the
 * Lua scripts to the same figures. */

#include "core/algorithm.hpp"

#include <gtest/gtest.h>

#include "fake_clock.hpp"

#include <algorithm>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using rl::Algorithm;
using rl::Check;
using rl::Params;
using rl::State;

using namespace rltest::clock;

const Algorithm kAll[] = {Algorithm::FixedWindow, Algorithm::SlidingWindow,
                          Algorithm::SlidingLog,  Algorithm::TokenBucket,
                          Algorithm::LeakyBucket, Algorithm::Gcra};

/* One rule's state and its ring, driven as the script drives it. */
struct Limiter {
    Params p;
    State s{};
    std::vector<int64_t> log;

    Limiter(Algorithm a, uint64_t limit, uint64_t windowUs)
        : Limiter(a, limit, windowUs, rl::defaultBurst(a, limit)) {}

    /* delay defaults to burst: nodelay */
    Limiter(Algorithm a, uint64_t limit, uint64_t windowUs, uint64_t burst)
        : Limiter(a, limit, windowUs, burst,
                  rl::takesDelay(a) ? burst : 0) {}

    Limiter(Algorithm a, uint64_t limit, uint64_t windowUs, uint64_t burst,
            uint64_t delay)
        : p{a, limit, windowUs, burst, delay}, log(rl::logSlots(p)) {}

    Check check(int64_t now, uint64_t cost = 1) const {
        return rl::check(p, s, log.data(), cost, now);
    }

    /* check, then commit if admitted */
    Check take(int64_t now, uint64_t cost = 1) {
        Check c = check(now, cost);
        if (c.ok) {
            rl::commit(p, s, log.data(), cost, now);
        }
        return c;
    }

    bool admits(int64_t now, uint64_t cost = 1) { return take(now, cost).ok; }

    /* how many of `tries` requests at `now` pass */
    int64_t burst(int64_t now, int64_t tries = 1000000, uint64_t cost = 1) {
        int64_t n = 0;
        while (n < tries && admits(now, cost)) {
            n++;
        }
        return n;
    }

    void refund(int64_t then, uint64_t cost = 1) {
        rl::refund(p, s, log.data(), cost, then);
    }

    int64_t idleAt(int64_t now) const {
        return rl::idleAtUs(p, s, log.data(), now);
    }
};

std::string describe(const Check& c) {
    std::ostringstream s;
    s << (c.ok ? "ok" : "rejected") << " left " << c.left << " reset "
      << c.resetUs << " retry " << c.retryUs << " delay " << c.delayUs;
    return s.str();
}

void expectFigures(const Check& c, bool ok, int64_t left, int64_t reset,
                   int64_t retry, int64_t delay = 0) {
    EXPECT_EQ(c.ok, ok) << describe(c);
    EXPECT_EQ(c.left, left) << describe(c);
    EXPECT_EQ(c.resetUs, reset) << describe(c);
    EXPECT_EQ(c.retryUs, retry) << describe(c);
    EXPECT_EQ(c.delayUs, delay) << describe(c);
}

/* ------------------------------------------------------------------ */
/* Names, parameters, arithmetic bounds                               */

TEST(Algorithm, NamesRoundTrip) {
    for (Algorithm a : kAll) {
        auto back = rl::algorithmFromName(rl::algorithmName(a));
        ASSERT_TRUE(back.has_value()) << rl::algorithmName(a);
        EXPECT_EQ(*back, a);
    }
    EXPECT_EQ(rl::algorithmName(Algorithm::Gcra), "gcra");
    EXPECT_EQ(rl::algorithmName(Algorithm::SlidingLog), "sliding_log");
    EXPECT_FALSE(rl::algorithmFromName("").has_value());
    EXPECT_FALSE(rl::algorithmFromName("GCRA").has_value());
    EXPECT_FALSE(rl::algorithmFromName("gcra ").has_value());
    EXPECT_FALSE(rl::algorithmFromName("token").has_value());
    EXPECT_EQ(rl::algorithmName(static_cast<Algorithm>(77)), "");
}

TEST(Algorithm, WhichTakeBurstAndDelay) {
    EXPECT_FALSE(rl::takesBurst(Algorithm::FixedWindow));
    EXPECT_FALSE(rl::takesBurst(Algorithm::SlidingWindow));
    EXPECT_FALSE(rl::takesBurst(Algorithm::SlidingLog));
    EXPECT_TRUE(rl::takesBurst(Algorithm::TokenBucket));
    EXPECT_TRUE(rl::takesBurst(Algorithm::LeakyBucket));
    EXPECT_TRUE(rl::takesBurst(Algorithm::Gcra));
    EXPECT_FALSE(rl::takesDelay(Algorithm::TokenBucket));
    EXPECT_TRUE(rl::takesDelay(Algorithm::LeakyBucket));
    EXPECT_TRUE(rl::takesDelay(Algorithm::Gcra));
    EXPECT_FALSE(rl::takesDelay(Algorithm::SlidingLog));
    EXPECT_EQ(rl::defaultBurst(Algorithm::TokenBucket, 100), 100u);
    EXPECT_EQ(rl::defaultBurst(Algorithm::LeakyBucket, 100), 0u);
    EXPECT_EQ(rl::defaultBurst(Algorithm::Gcra, 100), 0u);
    EXPECT_EQ(rl::defaultBurst(Algorithm::FixedWindow, 100), 0u);
}

/* What nginx -t holds a constant cost to (and exactArithmetic() counts
 * with): N, the bucket, or 1 + burst; never wrapping. */
TEST(Algorithm, Capacity) {
    auto cap = [](Algorithm a, uint64_t n, uint64_t b) {
        return rl::capacity(Params{a, n, kSec, b, 0});
    };
    EXPECT_EQ(cap(Algorithm::FixedWindow, 3, 0), 3u);
    EXPECT_EQ(cap(Algorithm::SlidingWindow, 3, 0), 3u);
    EXPECT_EQ(cap(Algorithm::SlidingLog, 3, 0), 3u);
    EXPECT_EQ(cap(Algorithm::TokenBucket, 10, 4), 4u);
    EXPECT_EQ(cap(Algorithm::LeakyBucket, 1, 9), 10u);
    EXPECT_EQ(cap(Algorithm::Gcra, 1, 0), 1u);
    EXPECT_EQ(cap(Algorithm::Gcra, 1, UINT64_MAX), UINT64_MAX);
}

/* The longest delay a reply may ask of a rule (src/core/reply.cpp
 * refuses longer): 0 for a rule that never delays; else at least every
 * delay the algorithm gives, whatever the cost and the key value's
 * override of N (N down to 1), for a bucket filled at once. */
TEST(Algorithm, MaxDelayCoversEveryDelay) {
    EXPECT_EQ(rl::maxDelayUs(Params{Algorithm::Gcra, 10, kSec, 5, 5}), 0);
    EXPECT_EQ(rl::maxDelayUs(Params{Algorithm::TokenBucket, 10, kSec, 5, 0}),
              0);
    EXPECT_EQ(rl::maxDelayUs(Params{Algorithm::FixedWindow, 10, kSec, 0, 0}),
              0);
    Params dry{Algorithm::Gcra, 10, kSec, 5, 2};
    dry.dryRun = true;
    EXPECT_EQ(rl::maxDelayUs(dry), 0);
    EXPECT_EQ(rl::maxDelayUs(Params{Algorithm::Gcra, 1, UINT64_MAX / 2,
                                    UINT64_MAX / 2, 0}),
              int64_t{1} << 53);
    for (Algorithm a : {Algorithm::LeakyBucket, Algorithm::Gcra}) {
        for (uint64_t n : {1u, 3u, 10u, 1000u}) {
            for (uint64_t cost : {1u, 2u, 6u}) {
                Params p{a, n, kSec, 5, 1};
                /* the rule's own figures, its max under N = 1 */
                int64_t bound = rl::maxDelayUs(Params{a, 10, kSec, 5, 1});
                State s{};
                int64_t worst = 0;
                for (int i = 0; i < 20; i++) {
                    Check c = rl::check(p, s, nullptr, cost, kT0);
                    if (!c.ok) {
                        break;
                    }
                    worst = std::max(worst, c.delayUs);
                    rl::commit(p, s, nullptr, cost, kT0);
                }
                EXPECT_GT(worst, 0) << "n " << n << " cost " << cost;
                EXPECT_LE(worst, bound) << "n " << n << " cost " << cost;
            }
        }
    }
}

/* The longest retry a reply may give (src/core/reply.cpp refuses
 * longer): at least every retry an algorithm gives a request of that
 * cost, whatever the key value's override of N (down to 1), and at
 * least a manual block's 60 s. */
TEST(Algorithm, MaxRetryCoversEveryRetry) {
    for (Algorithm a : kAll) {
        uint64_t burst = rl::takesBurst(a) ? 5 : 0;
        for (uint64_t cost : {1u, 2u, 6u}) {
            int64_t bound = rl::maxRetryUs(Params{a, 10, kSec, burst, burst},
                                           cost);
            EXPECT_GE(bound, 60 * kSec);
            for (uint64_t n : {1u, 3u, 10u, 1000u}) {
                Params p{a, n, kSec, burst, burst};
                if (a == Algorithm::TokenBucket) {
                    p.burst = n;    /* burst follows an override of N */
                }
                State s{};
                std::vector<int64_t> log(rl::logSlots(p));
                int64_t worst = 0;
                for (int i = 0; i < 2000; i++) {
                    Check c = rl::check(p, s, log.data(), cost, kT0);
                    if (!c.ok) {
                        worst = std::max(worst, c.retryUs);
                        break;
                    }
                    rl::commit(p, s, log.data(), cost, kT0);
                }
                EXPECT_GT(worst, 0) << "n " << n << " cost " << cost;
                EXPECT_LE(worst, bound) << rl::algorithmName(a) << " n " << n
                                        << " cost " << cost;
            }
        }
    }
    EXPECT_EQ(rl::maxRetryUs(Params{Algorithm::Gcra, 1, UINT64_MAX / 2,
                                    UINT64_MAX / 2, 0}, 1),
              int64_t{1} << 53);
}

TEST(Algorithm, LogSlotsAreTheLimitForTheLogOnly) {
    for (Algorithm a : kAll) {
        Params p{a, 250, kSec, 0, 0};
        EXPECT_EQ(rl::logSlots(p), a == Algorithm::SlidingLog ? 250u : 0u);
    }
}

TEST(Algorithm, ExactArithmetic) {
    /* windows and the log need nothing but N, W > 0 */
    EXPECT_TRUE(rl::exactArithmetic({Algorithm::SlidingLog, 1000000000,
                                     366 * uint64_t(kDay), 0, 0},
                                    1000000000));
    EXPECT_FALSE(rl::exactArithmetic({Algorithm::FixedWindow, 0, 1, 0, 0}, 1));
    EXPECT_FALSE(rl::exactArithmetic({Algorithm::Gcra, 10, 0, 0, 0}, 1));
    /* 1000000r/s: a request is 1 unit */
    EXPECT_TRUE(rl::exactArithmetic({Algorithm::Gcra, 1000000, kSec, 0, 0},
                                    1000));
    EXPECT_TRUE(rl::exactArithmetic(
        {Algorithm::TokenBucket, 1000000, kSec, 1000000, 0}, 1000000));
    /* 1r/d: a request is 86400e6 units, so (K + C) < 104249 */
    EXPECT_TRUE(rl::exactArithmetic(
        {Algorithm::TokenBucket, 1, uint64_t(kDay), 25000, 0}, 25000));
    EXPECT_FALSE(rl::exactArithmetic(
        {Algorithm::TokenBucket, 1, uint64_t(kDay), 100000, 0}, 10000));
    /* below 2^53 but draining for longer than 2^52 us */
    EXPECT_FALSE(rl::exactArithmetic(
        {Algorithm::TokenBucket, 1, uint64_t(kDay), 30000, 0}, 30000));
    /* but a meter that takes longer than 2^52 us to drain is refused */
    EXPECT_FALSE(rl::exactArithmetic(
        {Algorithm::Gcra, 1, 366 * uint64_t(kDay), 200, 0}, 1));
    /* 7r/13s: g = 1, a request is 13e6 units */
    EXPECT_TRUE(rl::exactArithmetic(
        {Algorithm::LeakyBucket, 7, 13 * uint64_t(kSec), 1000, 0}, 1000));
    EXPECT_FALSE(rl::exactArithmetic(
        {Algorithm::LeakyBucket, 7, 13 * uint64_t(kSec), 1000000000, 0}, 1));
    EXPECT_FALSE(rl::exactArithmetic(
        {Algorithm::LeakyBucket, 7, 13 * uint64_t(kSec), 0, 0},
        UINT64_MAX));
    EXPECT_FALSE(rl::exactArithmetic(
        {Algorithm::Gcra, 7, 13 * uint64_t(kSec), UINT64_MAX, 0}, 1));
}

/* ------------------------------------------------------------------ */
/* fixed_window                                                        */

TEST(FixedWindow, WindowEdges) {
    Limiter f(Algorithm::FixedWindow, 3, 10 * kSec);
    int64_t t = kT0 + 2 * kSec;
    expectFigures(f.take(t), true, 3, 8 * kSec, 0);
    expectFigures(f.take(t), true, 2, 8 * kSec, 0);
    expectFigures(f.take(t), true, 1, 8 * kSec, 0);
    expectFigures(f.take(t), false, 0, 8 * kSec, 8 * kSec);
    /* the window's last microsecond still counts them */
    expectFigures(f.take(kT0 + 10 * kSec - 1), false, 0, 1, 1);
    /* the next window starts from zero */
    expectFigures(f.take(kT0 + 10 * kSec), true, 3, 10 * kSec, 0);
    EXPECT_EQ(f.burst(kT0 + 19 * kSec), 2);
    /* a window without requests carries nothing */
    EXPECT_EQ(f.burst(kT0 + 55 * kSec), 3);
}

TEST(FixedWindow, Costs) {
    Limiter f(Algorithm::FixedWindow, 10, kSec);
    expectFigures(f.take(kT0, 4), true, 10, kSec, 0);
    expectFigures(f.take(kT0, 6), true, 6, kSec, 0);
    expectFigures(f.take(kT0, 1), false, 0, kSec, kSec);
    /* more than the limit: never; the retry names the window's end */
    Limiter g(Algorithm::FixedWindow, 10, kSec);
    expectFigures(g.take(kT0 + 1, 11), false, 10, kSec - 1, kSec - 1);
    /* cost 0 passes and changes nothing */
    expectFigures(g.take(kT0 + 1, 0), true, 10, kSec - 1, 0);
    EXPECT_EQ(g.s.b, 0);
}

TEST(FixedWindow, OnePerDay) {
    Limiter f(Algorithm::FixedWindow, 1, kDay);
    expectFigures(f.take(kT0 + kSec), true, 1, kDay - kSec, 0);
    expectFigures(f.take(kT0 + kDay - 1), false, 0, 1, 1);
    EXPECT_TRUE(f.admits(kT0 + kDay));
}

/* The clock goes back into an earlier window: the stored window stays
 * the current one, nothing is admitted twice, nothing is negative. */
TEST(FixedWindow, ClockGoingBackwards) {
    Limiter f(Algorithm::FixedWindow, 2, 10 * kSec);
    EXPECT_EQ(f.burst(kT0 + 15 * kSec), 2);
    Check c = f.take(kT0 + 5 * kSec);
    expectFigures(c, false, 0, 15 * kSec, 15 * kSec);
    EXPECT_EQ(f.idleAt(kT0), kT0 + 20 * kSec);
    EXPECT_FALSE(f.admits(kT0 + 19 * kSec));
    EXPECT_TRUE(f.admits(kT0 + 20 * kSec));
}

TEST(FixedWindow, Refund) {
    Limiter f(Algorithm::FixedWindow, 2, 10 * kSec);
    EXPECT_EQ(f.burst(kT0 + kSec), 2);
    f.refund(kT0 + kSec);
    EXPECT_EQ(f.burst(kT0 + 2 * kSec), 1);
    /* a refund for an earlier window gives nothing back */
    EXPECT_EQ(f.burst(kT0 + 12 * kSec), 2);
    f.refund(kT0 + kSec);
    EXPECT_EQ(f.burst(kT0 + 13 * kSec), 0);
    /* never below zero */
    f.refund(kT0 + 12 * kSec, 5);
    EXPECT_EQ(f.s.b, 0);
}

/* ------------------------------------------------------------------ */
/* sliding_window                                                      */

TEST(SlidingWindow, WeighsThePreviousWindow) {
    Limiter s(Algorithm::SlidingWindow, 10, 60 * kSec);
    for (int64_t i = 0; i < 10; i++) {
        expectFigures(s.take(kT0 + 59 * kSec), true, 10 - i, 61 * kSec, 0);
    }
    /* 0 s into the next window all ten still weigh: 10 * 54 / 60 = 9 */
    expectFigures(s.take(kT0 + 60 * kSec), false, 0, 60 * kSec, 6 * kSec);
    /* 30 s in, half of them: 5 fit */
    EXPECT_EQ(s.burst(kT0 + 90 * kSec), 5);
    Check c = s.take(kT0 + 90 * kSec);
    expectFigures(c, false, 0, 90 * kSec, 6 * kSec);
    EXPECT_FALSE(s.check(kT0 + 96 * kSec - 1).ok);
    EXPECT_TRUE(s.check(kT0 + 96 * kSec).ok);
    /* two windows on, nothing weighs */
    EXPECT_EQ(s.burst(kT0 + 240 * kSec), 10);
}

TEST(SlidingWindow, CostAboveTheLimit) {
    Limiter s(Algorithm::SlidingWindow, 5, 10 * kSec);
    expectFigures(s.take(kT0 + 3 * kSec, 6), false, 5, 0, 17 * kSec);
}

TEST(SlidingWindow, ClockGoingBackwards) {
    Limiter s(Algorithm::SlidingWindow, 4, 10 * kSec);
    EXPECT_EQ(s.burst(kT0 + 15 * kSec), 4);
    /* back into the previous window: as at the stored window's start,
     * figures from the caller's clock */
    Check c = s.take(kT0 + 5 * kSec);
    EXPECT_FALSE(c.ok) << describe(c);
    EXPECT_EQ(c.left, 0);
    EXPECT_EQ(c.resetUs, 25 * kSec);
    EXPECT_GT(c.retryUs, 5 * kSec);
    EXPECT_EQ(s.s.a, (kT0 + 15 * kSec) / (10 * kSec));
    EXPECT_FALSE(s.admits(kT0 + 19 * kSec));
}

TEST(SlidingWindow, Refund) {
    Limiter s(Algorithm::SlidingWindow, 3, 10 * kSec);
    EXPECT_EQ(s.burst(kT0 + kSec), 3);
    /* counted in window 0, refunded while window 1 runs */
    EXPECT_EQ(s.burst(kT0 + 15 * kSec), 1); /* 3 * 0.5 + 1 <= 3 */
    s.refund(kT0 + kSec);
    EXPECT_EQ(s.s.c, 2);
    EXPECT_EQ(s.burst(kT0 + 15 * kSec), 1);
}

/* ------------------------------------------------------------------ */
/* sliding_log                                                         */

TEST(SlidingLog, Edges) {
    Limiter l(Algorithm::SlidingLog, 3, 10 * kSec);
    expectFigures(l.take(kT0), true, 3, 10 * kSec, 0);
    expectFigures(l.take(kT0 + 2 * kSec), true, 2, 10 * kSec, 0);
    expectFigures(l.take(kT0 + 4 * kSec), true, 1, 10 * kSec, 0);
    /* full: the oldest frees its place 10 s after it came */
    expectFigures(l.take(kT0 + 5 * kSec), false, 0, 5 * kSec, 5 * kSec);
    expectFigures(l.take(kT0 + 10 * kSec - 1), false, 0, 1, 1);
    expectFigures(l.take(kT0 + 10 * kSec), true, 1, 10 * kSec, 0);
    /* cost 2 must wait for the two oldest now (2 s and 4 s) */
    expectFigures(l.take(kT0 + 10 * kSec, 2), false, 0, 4 * kSec, 4 * kSec);
    /* cost above the limit: never; the retry names a window */
    expectFigures(l.take(kT0 + 10 * kSec, 4), false, 0, 10 * kSec,
                  10 * kSec);
    expectFigures(l.take(kT0 + 14 * kSec, 2), true, 2, 10 * kSec, 0);
    EXPECT_EQ(l.s.a, 3);
    EXPECT_EQ(l.idleAt(0), kT0 + 24 * kSec);
}

/* Exact: a random trace never has more than N admitted in any W, and
 * every retry is tight (admits then, not 1 us before). */
TEST(SlidingLog, NeverMoreThanNInAnyWindow) {
    const int64_t w = 5 * kSec;
    const uint64_t n = 7;
    Limiter l(Algorithm::SlidingLog, n, w);
    std::mt19937_64 rng(42);
    std::vector<int64_t> admitted;
    int64_t t = kT0;
    int rejections = 0;
    for (int i = 0; i < 3000; i++) {
        t += static_cast<int64_t>(rng() % (i % 50 == 49 ? 4 * w : w / 4));
        uint64_t cost = 1 + rng() % 3;
        Check c = l.take(t, cost);
        if (c.ok) {
            admitted.insert(admitted.end(), cost, t);
        } else {
            rejections++;
            Limiter copy = l;
            EXPECT_TRUE(copy.check(t + c.retryUs, cost).ok) << i;
            EXPECT_FALSE(copy.check(t + c.retryUs - 1, cost).ok) << i;
        }
        ASSERT_LE(l.s.a, static_cast<int64_t>(n));
    }
    EXPECT_GT(rejections, 300);
    for (size_t i = 0; i < admitted.size(); i++) {
        /* admissions in (admitted[i] - w, admitted[i]] */
        auto lo = std::upper_bound(admitted.begin(), admitted.end(),
                                   admitted[i] - w);
        auto hi = std::upper_bound(admitted.begin(), admitted.end(),
                                   admitted[i]);
        ASSERT_LE(hi - lo, static_cast<int64_t>(n)) << "at " << admitted[i];
    }
}

TEST(SlidingLog, ClockGoingBackwards) {
    Limiter l(Algorithm::SlidingLog, 2, 10 * kSec);
    EXPECT_EQ(l.burst(kT0 + 20 * kSec), 2);
    /* 15 s back: as at the newest entry; its place frees 10 s after it,
     * 25 s from the caller's clock */
    expectFigures(l.take(kT0 + 5 * kSec), false, 0, 25 * kSec, 25 * kSec);
    l.s = State{};
    std::fill(l.log.begin(), l.log.end(), 0);
    EXPECT_TRUE(l.admits(kT0 + 20 * kSec));
    /* admitted at the log's time, so its entries stay in order */
    expectFigures(l.take(kT0 + 5 * kSec), true, 1, 25 * kSec, 0);
    EXPECT_EQ(l.log[1], kT0 + 20 * kSec);
    EXPECT_FALSE(l.admits(kT0 + 29 * kSec));
    EXPECT_EQ(l.burst(kT0 + 30 * kSec), 2);
}

TEST(SlidingLog, RefundRemovesThatTimesEntries) {
    Limiter l(Algorithm::SlidingLog, 4, 10 * kSec);
    EXPECT_TRUE(l.admits(kT0));
    EXPECT_TRUE(l.admits(kT0 + kSec, 2));
    EXPECT_TRUE(l.admits(kT0 + 2 * kSec));
    l.refund(kT0 + kSec); /* one of the two at 1 s */
    EXPECT_EQ(l.s.a, 3);
    std::vector<int64_t> left;
    for (int64_t i = 0; i < l.s.a; i++) {
        left.push_back(l.log[(l.s.b + i) % 4]);
    }
    EXPECT_EQ(left, (std::vector<int64_t>{kT0, kT0 + kSec, kT0 + 2 * kSec}));
    l.refund(kT0 + 5 * kSec); /* nothing at that time */
    EXPECT_EQ(l.s.a, 3);
    l.refund(kT0 + 2 * kSec, 5);
    EXPECT_EQ(l.s.a, 2);
    EXPECT_EQ(l.idleAt(0), kT0 + 11 * kSec);
    EXPECT_EQ(l.burst(kT0 + 3 * kSec), 2);
}

/* Under a lower N the embedded store keeps the ring it has
 * (Params::logEntries): every time admitted stays counted, also once N
 * is back (before, the ring was cut to the lower N's newest times). */
TEST(SlidingLog, ALowerNOverALargerRingKeepsEveryTime) {
    Limiter l(Algorithm::SlidingLog, 6, 3600 * kSec);
    EXPECT_EQ(l.burst(kT0), 6);
    l.p.limit = 2;
    l.p.logEntries = l.log.size();
    expectFigures(l.take(kT0 + kSec), false, 0, 3599 * kSec, 3599 * kSec);
    EXPECT_EQ(l.s.a, 6);
    EXPECT_EQ(l.idleAt(0), kT0 + 3600 * kSec);
    l.p.limit = 6;  /* the lower N ended: the hour's 6 are there */
    EXPECT_EQ(l.burst(kT0 + 2 * kSec), 0);
    /* past the window, the lower N takes its own in the larger ring */
    l.p.limit = 2;
    EXPECT_EQ(l.burst(kT0 + 3600 * kSec), 2);
    EXPECT_EQ(l.s.a, 2);
}

/* The ring wraps around many times and stays exact. */
TEST(SlidingLog, RingWrapsAround) {
    Limiter l(Algorithm::SlidingLog, 5, 100);
    int64_t admitted = 0;
    for (int64_t t = kT0; t < kT0 + 10000; t += 7) {
        admitted += l.admits(t) ? 1 : 0;
    }
    /* 5 per 100 us at most; with a request every 7 us, the oldest
     * expires 105 us after it came */
    EXPECT_LE(admitted, 500);
    EXPECT_GE(admitted, 5 * (10000 / 105));
}

/* ------------------------------------------------------------------ */
/* token_bucket                                                        */

TEST(TokenBucket, StartsFullAndRefillsAtTheRate) {
    Limiter b(Algorithm::TokenBucket, 10, kSec, 5); /* 1 token per 100 ms */
    expectFigures(b.take(kT0), true, 5, 100 * kMs, 0);
    EXPECT_EQ(b.burst(kT0), 4);
    /* empty: the next token in 100 ms; full again in 500 ms */
    expectFigures(b.take(kT0), false, 0, 100 * kMs, 100 * kMs);
    expectFigures(b.take(kT0 + 50 * kMs), false, 0, 50 * kMs, 50 * kMs);
    EXPECT_FALSE(b.admits(kT0 + 100 * kMs - 1));
    expectFigures(b.take(kT0 + 100 * kMs), true, 1, 500 * kMs, 0);
    /* 250 ms later: 2.5 tokens */
    expectFigures(b.take(kT0 + 350 * kMs, 3), false, 2, 50 * kMs, 50 * kMs);
    expectFigures(b.take(kT0 + 350 * kMs, 2), true, 2, 450 * kMs, 0);
    /* never more than the capacity */
    expectFigures(b.take(kT0 + 100 * kSec, 0), true, 5, 0, 0);
    EXPECT_EQ(b.burst(kT0 + 100 * kSec), 5);
}

TEST(TokenBucket, CostAboveTheCapacity) {
    Limiter b(Algorithm::TokenBucket, 10, kSec, 5);
    expectFigures(b.take(kT0, 6), false, 5, 600 * kMs, 600 * kMs);
    EXPECT_EQ(b.s.a, 0);
}

TEST(TokenBucket, OnePerDay) {
    Limiter b(Algorithm::TokenBucket, 1, kDay, 1);
    expectFigures(b.take(kT0), true, 1, kDay, 0);
    expectFigures(b.take(kT0 + kSec), false, 0, kDay - kSec, kDay - kSec);
    EXPECT_FALSE(b.admits(kT0 + kDay - 1));
    EXPECT_TRUE(b.admits(kT0 + kDay));
}

TEST(TokenBucket, ClockGoingBackwardsRefillsNothing) {
    Limiter b(Algorithm::TokenBucket, 10, kSec, 2);
    EXPECT_EQ(b.burst(kT0 + kSec), 2);
    expectFigures(b.take(kT0), false, 0, 100 * kMs, 100 * kMs);
    Limiter c(Algorithm::TokenBucket, 10, kSec, 2);
    EXPECT_TRUE(c.admits(kT0 + kSec));
    /* one token left; going back 1 s neither adds nor breaks anything */
    expectFigures(c.take(kT0), true, 1, 200 * kMs, 0);
    EXPECT_FALSE(c.admits(kT0));
    /* and the bucket's time stays at the later one: nothing refills
     * until the clock is back there (a request decided late, in a batch
     * that waited, never refills an interval twice) */
    EXPECT_FALSE(c.admits(kT0 + 100 * kMs));
    EXPECT_FALSE(c.admits(kT0 + kSec + 99 * kMs));
    EXPECT_TRUE(c.admits(kT0 + kSec + 100 * kMs));
}

TEST(LeakyBucket, ClockGoingBackwardsDrainsNothingTwice) {
    Limiter b(Algorithm::LeakyBucket, 10, kSec, 1, 1);
    EXPECT_TRUE(b.admits(kT0 + kSec));
    EXPECT_TRUE(b.admits(kT0)); /* a late request: no drain, level 2 */
    EXPECT_EQ(b.s.a, kT0 + kSec);
    EXPECT_FALSE(b.admits(kT0 + 50 * kMs));
    EXPECT_FALSE(b.admits(kT0 + kSec + 99 * kMs));
    EXPECT_TRUE(b.admits(kT0 + kSec + 100 * kMs));
}

TEST(TokenBucket, Refund) {
    Limiter b(Algorithm::TokenBucket, 10, kSec, 3);
    EXPECT_EQ(b.burst(kT0), 3);
    b.refund(kT0, 2);
    EXPECT_EQ(b.burst(kT0), 2);
    b.refund(kT0, 10); /* up to the capacity: as fresh */
    EXPECT_EQ(b.s.a, 0);
    EXPECT_EQ(b.idleAt(kT0), 0);
    EXPECT_EQ(b.burst(kT0), 3);
    Limiter fresh(Algorithm::TokenBucket, 10, kSec, 3);
    fresh.refund(kT0);
    EXPECT_EQ(fresh.s.a, 0);
}

/* ------------------------------------------------------------------ */
/* leaky_bucket and gcra: one meter, two representations              */

class Meter : public testing::TestWithParam<Algorithm> {};

/* burst=5: 1 + 5 at once from idle, then one per emission interval. */
TEST_P(Meter, BurstThenTheRate) {
    Limiter m(GetParam(), 10, kSec, 5); /* T = 100 ms */
    expectFigures(m.take(kT0), true, 6, 100 * kMs, 0);
    EXPECT_EQ(m.burst(kT0), 5);
    expectFigures(m.take(kT0), false, 0, 100 * kMs, 100 * kMs);
    expectFigures(m.take(kT0 + 30 * kMs), false, 0, 70 * kMs, 70 * kMs);
    EXPECT_FALSE(m.admits(kT0 + 100 * kMs - 1));
    expectFigures(m.take(kT0 + 100 * kMs), true, 1, 600 * kMs, 0);
    EXPECT_FALSE(m.admits(kT0 + 100 * kMs));
    /* idle again 600 ms after the last */
    EXPECT_EQ(m.idleAt(0), kT0 + 700 * kMs);
    EXPECT_EQ(m.burst(kT0 + 700 * kMs), 6);
}

TEST_P(Meter, NoBurstIsOnePerInterval) {
    Limiter m(GetParam(), 3, kSec); /* T = 333333.3 us */
    EXPECT_TRUE(m.admits(kT0));
    expectFigures(m.take(kT0), false, 0, 333334, 333334);
    EXPECT_FALSE(m.admits(kT0 + 333333));
    EXPECT_TRUE(m.admits(kT0 + 333334));
    /* a late request starts the next interval late */
    EXPECT_FALSE(m.admits(kT0 + 666667));
    EXPECT_TRUE(m.admits(kT0 + 666668));
}

/* Thirds of a microsecond add up exactly: three at once take exactly
 * one second to drain. */
TEST_P(Meter, FractionsAddUp) {
    Limiter m(GetParam(), 3, kSec, 2);
    EXPECT_EQ(m.burst(kT0), 3);
    EXPECT_EQ(m.idleAt(0), kT0 + kSec);
    expectFigures(m.check(kT0 + 333333), false, 0, 1, 1);
    /* reset: until empty again with this request, in whole us */
    expectFigures(m.check(kT0 + 333334), true, 1, 1000000, 0);
    expectFigures(m.check(kT0 + kSec - 1), true, 2, 333335, 0);
    expectFigures(m.check(kT0 + kSec), true, 3, 333334, 0);
}

TEST_P(Meter, Costs) {
    Limiter m(GetParam(), 10, kSec, 4); /* capacity 5 */
    expectFigures(m.take(kT0, 3), true, 5, 300 * kMs, 0);
    expectFigures(m.take(kT0, 3), false, 2, 100 * kMs, 100 * kMs);
    expectFigures(m.take(kT0, 2), true, 2, 500 * kMs, 0);
    /* more than the capacity: never */
    Limiter n(GetParam(), 10, kSec, 4);
    expectFigures(n.take(kT0, 6), false, 5, 600 * kMs, 600 * kMs);
    expectFigures(n.take(kT0, 0), true, 5, 0, 0);
}

/* gcra burst=5 delay=2: at idle 1..3 pass at once, 4..6 wait T, 2T,
 * 3T, the 7th is rejected. */
TEST_P(Meter, DelayFigures) {
    const int64_t t = 100 * kMs;
    Limiter m(GetParam(), 10, kSec, 5, 2);
    for (int64_t i = 1; i <= 6; i++) {
        Check c = m.take(kT0);
        ASSERT_TRUE(c.ok) << i;
        EXPECT_EQ(c.delayUs, i <= 3 ? 0 : (i - 3) * t) << "request " << i;
        EXPECT_EQ(c.resetUs, i * t);
    }
    expectFigures(m.take(kT0), false, 0, t, t);
    /* after one interval the 7th fits, delayed 3T like the 6th */
    Check c = m.take(kT0 + t);
    EXPECT_TRUE(c.ok);
    EXPECT_EQ(c.delayUs, 3 * t);
    /* delay=0: only the first passes at once */
    Limiter z(GetParam(), 10, kSec, 2, 0);
    EXPECT_EQ(z.take(kT0).delayUs, 0);
    EXPECT_EQ(z.take(kT0).delayUs, t);
    EXPECT_EQ(z.take(kT0 + 50 * kMs).delayUs, 150 * kMs);
    /* nodelay (delay = burst): never */
    Limiter nd(GetParam(), 10, kSec, 5, 5);
    for (int i = 0; i < 6; i++) {
        EXPECT_EQ(nd.take(kT0).delayUs, 0);
    }
}

TEST_P(Meter, OnePerDay) {
    Limiter m(GetParam(), 1, kDay, 1);
    EXPECT_EQ(m.burst(kT0), 2);
    expectFigures(m.take(kT0 + kSec), false, 0, kDay - kSec, kDay - kSec);
    EXPECT_FALSE(m.admits(kT0 + kDay - 1));
    EXPECT_TRUE(m.admits(kT0 + kDay));
}

/* 1000000r/s: one unit per microsecond per request. */
TEST_P(Meter, AMillionPerSecond) {
    Limiter m(GetParam(), 1000000, kSec, 9);
    EXPECT_EQ(m.burst(kT0), 10); /* B + 1 at once */
    expectFigures(m.take(kT0), false, 0, 1, 1);
    EXPECT_TRUE(m.admits(kT0 + 1));
    EXPECT_FALSE(m.admits(kT0 + 1));
}

TEST_P(Meter, ClockGoingBackwardsIsNeverNegative) {
    Limiter m(GetParam(), 10, kSec, 2);
    EXPECT_EQ(m.burst(kT0 + 10 * kSec), 3);
    for (int64_t back : {int64_t(1), kSec, 10 * kSec, kDay, kT0 + 10 * kSec}) {
        Check c = m.check(kT0 + 10 * kSec - back);
        EXPECT_FALSE(c.ok);
        EXPECT_GE(c.left, 0);
        EXPECT_GT(c.retryUs, 0);
        EXPECT_GE(c.resetUs, 0);
        EXPECT_EQ(c.delayUs, 0);
    }
    /* and forward again, the meter drained as usual */
    EXPECT_TRUE(m.admits(kT0 + 10 * kSec + 100 * kMs));
}

TEST_P(Meter, Refund) {
    Limiter m(GetParam(), 10, kSec, 2);
    EXPECT_EQ(m.burst(kT0), 3);
    m.refund(kT0);
    EXPECT_EQ(m.burst(kT0), 1);
    /* a refund after time passed never makes the meter below empty */
    m.refund(kT0, 3);
    EXPECT_EQ(m.burst(kT0 + 10 * kMs), 3);
    /* nothing to give back on a fresh state */
    Limiter f(GetParam(), 10, kSec, 2);
    f.refund(kT0);
    EXPECT_EQ(f.s.a, 0);
    EXPECT_EQ(f.s.b, 0);
}

INSTANTIATE_TEST_SUITE_P(Algorithms, Meter,
                         testing::Values(Algorithm::LeakyBucket,
                                         Algorithm::Gcra),
                         [](const testing::TestParamInfo<Algorithm>& i) {
                             return std::string(rl::algorithmName(i.param));
                         });

/* The same meter: leaky_bucket and gcra give the same figures for the
 * same requests, refunds included (monotonic clocks: gcra keeps no
 * update time, so a clock going back is not "no time" for it). */
TEST(LeakyBucketAndGcra, IdenticalOnRandomTraces) {
    struct Rate {
        uint64_t n, w, b, d;
    };
    for (Rate r : {Rate{10, uint64_t(kSec), 5, 2}, Rate{7, 13 * uint64_t(kSec), 3, 3},
                   Rate{1, uint64_t(kDay), 2, 0},
                   Rate{1000000, uint64_t(kSec), 20, 5},
                   Rate{100, 60 * uint64_t(kSec), 0, 0}}) {
        Limiter leaky(Algorithm::LeakyBucket, r.n, r.w, r.b, r.d);
        Limiter gcra(Algorithm::Gcra, r.n, r.w, r.b, r.d);
        std::mt19937_64 rng(r.n * 31 + r.b);
        const int64_t interval = static_cast<int64_t>(r.w / r.n);
        int64_t t = kT0;
        std::vector<std::pair<int64_t, uint64_t>> admitted;
        int rejected = 0;
        for (int i = 0; i < 4000; i++) {
            t += static_cast<int64_t>(rng() % static_cast<uint64_t>(
                                                  interval + 2));
            uint64_t cost = rng() % 4;
            if (!admitted.empty() && rng() % 10 == 0) {
                auto [then, c] = admitted.back();
                admitted.pop_back();
                leaky.refund(then, c);
                gcra.refund(then, c);
            }
            Check a = leaky.take(t, cost);
            Check b = gcra.take(t, cost);
            ASSERT_EQ(describe(a), describe(b))
                << "rate " << r.n << "/" << r.w << " burst " << r.b
                << " step " << i;
            if (a.ok) {
                admitted.emplace_back(t, cost);
            } else {
                rejected++;
            }
        }
        EXPECT_GT(rejected, 100) << r.n << "/" << r.w;
    }
}

/* ------------------------------------------------------------------ */
/* Every algorithm                                                     */

/* 1000000r/s, offered two requests every microsecond for one second:
 * exactly a million pass. */
TEST(EveryAlgorithm, AMillionPerSecondOverOneSecond) {
    for (Algorithm a : kAll) {
        /* token_bucket with 1 token: no burst on top of the rate */
        Limiter l(a, 1000000, kSec, a == Algorithm::TokenBucket ? 1 : 0);
        int64_t admitted = 0;
        for (int64_t t = kT0; t < kT0 + kSec; t++) {
            admitted += l.admits(t) ? 1 : 0;
            admitted += l.admits(t) ? 1 : 0;
        }
        EXPECT_EQ(admitted, 1000000) << rl::algorithmName(a);
    }
}

/* Figures are never negative, whatever the trace and however the clock
 * jumps; a rejection's retry is positive, an admission's 0; only the
 * meters with delay < burst delay. */
TEST(EveryAlgorithm, FiguresAreSaneOnWildTraces) {
    std::mt19937_64 rng(7);
    for (Algorithm a : kAll) {
        for (int variant = 0; variant < 4; variant++) {
            uint64_t n = 1 + rng() % 20;
            uint64_t w = 1 + rng() % (variant == 0 ? 1000 : 100 * kSec);
            uint64_t b = rl::takesBurst(a) ? rng() % 10 : 0;
            uint64_t d = rl::takesDelay(a) ? rng() % (b + 1) : 0;
            Limiter l(a, n, w, b, d);
            int64_t t = kT0;
            for (int i = 0; i < 2000; i++) {
                int64_t jump = static_cast<int64_t>(rng() % (2 * w + 1));
                t += rng() % 8 == 0 ? -jump : jump;
                uint64_t cost = rng() % 5;
                Check c = l.take(t, cost);
                ASSERT_GE(c.left, 0) << describe(c);
                ASSERT_GE(c.resetUs, 0) << describe(c);
                ASSERT_GE(c.delayUs, 0) << describe(c);
                ASSERT_EQ(c.ok, c.retryUs == 0) << describe(c);
                if (!c.ok || !rl::takesDelay(a) || d >= b) {
                    ASSERT_EQ(c.delayUs, 0) << describe(c);
                }
                ASSERT_LE(c.left, static_cast<int64_t>(std::max(n, b + 1)));
            }
        }
    }
}

/* A rejection's retry is exact: the request fits then, not 1 us before
 * (sliding_window's retry is its estimate's, checked only to fit). */
TEST(EveryAlgorithm, RetryIsTight) {
    std::mt19937_64 rng(11);
    for (Algorithm a : kAll) {
        Limiter l(a, 5, 3 * kSec, rl::takesBurst(a) ? 3 : 0, 1);
        int64_t t = kT0;
        int checked = 0;
        for (int i = 0; i < 3000; i++) {
            t += static_cast<int64_t>(rng() % (kSec / 2));
            uint64_t cost = 1 + rng() % 3;
            Check c = l.take(t, cost);
            if (c.ok) {
                continue;
            }
            checked++;
            Limiter copy = l;
            ASSERT_TRUE(copy.check(t + c.retryUs, cost).ok)
                << rl::algorithmName(a) << " step " << i << " "
                << describe(c);
            if (a != Algorithm::SlidingWindow) {
                ASSERT_FALSE(copy.check(t + c.retryUs - 1, cost).ok)
                    << rl::algorithmName(a) << " step " << i << " "
                    << describe(c);
            }
        }
        EXPECT_GT(checked, 100) << rl::algorithmName(a);
    }
}

/* idleAtUs: from then on the state decides as a fresh one would (and
 * for the meters and the log, not a microsecond earlier). */
TEST(EveryAlgorithm, IdleAtIsWhenTheStateIsAsFresh) {
    std::mt19937_64 rng(5);
    for (Algorithm a : kAll) {
        Limiter l(a, 4, 2 * kSec, rl::takesBurst(a) ? 2 : 0);
        Limiter fresh(a, 4, 2 * kSec, rl::takesBurst(a) ? 2 : 0);
        int64_t t = kT0;
        for (int i = 0; i < 500; i++) {
            t += static_cast<int64_t>(rng() % kSec);
            l.take(t, rng() % 3);
            int64_t idle = l.idleAt(t);
            ASSERT_GE(idle, 0);
            for (int64_t at : {std::max(idle, t), std::max(idle, t) + 1,
                               std::max(idle, t) + 3 * kSec}) {
                for (uint64_t cost : {1u, 2u, 4u}) {
                    ASSERT_EQ(describe(l.check(at, cost)),
                              describe(fresh.check(at, cost)))
                        << rl::algorithmName(a) << " step " << i;
                }
            }
            bool exact = a != Algorithm::FixedWindow &&
                         a != Algorithm::SlidingWindow;
            if (exact && idle > t) {
                bool differs = false;
                for (uint64_t cost : {1u, 2u, 3u, 4u}) {
                    differs = differs || describe(l.check(idle - 1, cost)) !=
                                             describe(fresh.check(idle - 1,
                                                                  cost));
                }
                ASSERT_TRUE(differs) << rl::algorithmName(a) << " step " << i;
            }
        }
    }
}

/* decide(): every rule checked, all commit or none; the figures the
 * script replies. */
TEST(Decide, AllOrNothing) {
    Limiter a(Algorithm::FixedWindow, 5, 10 * kSec);
    Limiter b(Algorithm::Gcra, 10, kSec, 3, 1);
    Limiter c(Algorithm::SlidingLog, 3, 10 * kSec);
    Params p[] = {a.p, b.p, c.p};
    State* s[] = {&a.s, &b.s, &c.s};
    int64_t* logs[] = {nullptr, nullptr, c.log.data()};
    uint64_t cost[] = {1, 1, 1};
    rl::Figures out[3];

    ASSERT_TRUE(rl::decide(p, s, logs, cost, 3, kT0, out));
    EXPECT_EQ(out[0].remaining, 4);
    EXPECT_EQ(out[1].remaining, 3);
    EXPECT_EQ(out[2].remaining, 2);
    EXPECT_EQ(out[1].delayUs, 0);
    ASSERT_TRUE(rl::decide(p, s, logs, cost, 3, kT0, out));
    EXPECT_EQ(out[1].delayUs, 0); /* the one excess passed at once */
    ASSERT_TRUE(rl::decide(p, s, logs, cost, 3, kT0, out));
    EXPECT_EQ(out[1].delayUs, 100 * kMs); /* beyond delay=1 */
    EXPECT_EQ(out[1].remaining, 1);
    EXPECT_EQ(out[2].remaining, 0);

    /* the log is full: nobody counts, nobody is delayed */
    State before[] = {a.s, b.s, c.s};
    ASSERT_FALSE(rl::decide(p, s, logs, cost, 3, kT0, out));
    EXPECT_EQ(out[0].remaining, 2);
    EXPECT_EQ(out[0].retryUs, 0);
    EXPECT_EQ(out[1].retryUs, 0);
    EXPECT_EQ(out[1].delayUs, 0);
    EXPECT_EQ(out[2].retryUs, 10 * kSec);
    EXPECT_EQ(a.s.b, before[0].b);
    EXPECT_EQ(b.s.a, before[1].a);
    EXPECT_EQ(b.s.b, before[1].b);
    EXPECT_EQ(c.s.a, before[2].a);
}

/* A dry-run rule never rejects nor delays; what it would reject, it
 * does not count, while the enforced rules count the admitted request. */
TEST(Decide, DryRunRulesNeverRejectAndTakeNothingWhenTheyWould) {
    Limiter a(Algorithm::FixedWindow, 5, 10 * kSec);
    Limiter d(Algorithm::Gcra, 10, kSec, 2, 0); /* 3 at once, delays */
    d.p.dryRun = true;
    Params p[] = {a.p, d.p};
    State* s[] = {&a.s, &d.s};
    uint64_t cost[] = {1, 1};
    rl::Figures out[2];

    for (int i = 0; i < 3; i++) {
        ASSERT_TRUE(rl::decide(p, s, nullptr, cost, 2, kT0, out));
        EXPECT_EQ(out[1].retryUs, 0);
        EXPECT_EQ(out[1].delayUs, 0) << "a dry run never delays";
    }
    State full = d.s;
    ASSERT_TRUE(rl::decide(p, s, nullptr, cost, 2, kT0, out));
    EXPECT_GT(out[1].retryUs, 0) << "it would have rejected";
    EXPECT_EQ(out[1].remaining, 0);
    EXPECT_EQ(out[0].remaining, 1) << "the enforced rule counted it";
    EXPECT_EQ(d.s.a, full.a);
    EXPECT_EQ(d.s.b, full.b);

    /* an enforced rejection still counts nothing anywhere */
    ASSERT_TRUE(rl::decide(p, s, nullptr, cost, 2, kT0, out));
    State before[] = {a.s, d.s};
    ASSERT_FALSE(rl::decide(p, s, nullptr, cost, 2, kT0, out));
    EXPECT_EQ(a.s.b, before[0].b);
    EXPECT_EQ(d.s.a, before[1].a);
}

/* A trial (SPEC section 11) decides each request as its rule would at
 * N' in its place: a raise from 5 to 20 over 30 requests of a key
 * passes 20 and rejects 10 (the requests its rule alone rejects are
 * counted in it); a cut to 2 of a key whose real state is full passes
 * 2 of the next 10; a request another rule rejects counts nowhere. */
TEST(Decide, TrialCountsAsItsRuleWouldInItsPlace) {
    for (uint64_t trialN : {20u, 2u}) {
        Limiter rule(Algorithm::FixedWindow, 5, 60 * kSec);
        Limiter other(Algorithm::FixedWindow, 100, 60 * kSec);
        Limiter trial(Algorithm::FixedWindow, trialN, 60 * kSec);
        trial.p.dryRun = true;
        trial.p.place = 1;
        Params p[] = {rule.p, other.p, trial.p};
        State* s[] = {&rule.s, &other.s, &trial.s};
        uint64_t cost[] = {1, 1, 1};
        rl::Figures out[3];
        int requests = 30;
        if (trialN == 2) {
            /* the key's real state full before the trial began */
            for (int i = 0; i < 5; i++) {
                ASSERT_TRUE(rl::decide(p, s, nullptr, cost, 1, kT0, out));
            }
            requests = 10;
        }
        int passed = 0, rejected = 0, admitted = 0;
        for (int i = 0; i < requests; i++) {
            admitted += rl::decide(p, s, nullptr, cost, 3, kT0, out) ? 1 : 0;
            (out[2].retryUs == 0 ? passed : rejected)++;
            EXPECT_EQ(out[2].delayUs, 0);
        }
        EXPECT_EQ(admitted, trialN == 20 ? 5 : 0);
        EXPECT_EQ(passed, trialN == 20 ? 20 : 2) << trialN;
        EXPECT_EQ(rejected, trialN == 20 ? 10 : 8) << trialN;
        EXPECT_EQ(trial.check(kT0).left, 0) << "it counted what it passed";
        EXPECT_EQ(other.check(kT0).left, 100 - (trialN == 20 ? 5 : 0))
            << "the other rule counted the admitted requests alone";

        /* another rule rejects: the trial's world rejects it too */
        other.s = {};
        for (int i = 0; i < 100; i++) {
            ASSERT_TRUE(rl::decide(&p[1], &s[1], nullptr, cost, 1, kT0, out));
        }
        trial.s = {};
        rule.s = {};
        EXPECT_FALSE(rl::decide(p, s, nullptr, cost, 3, kT0, out));
        EXPECT_EQ(out[0].retryUs, 0) << "its rule admits it";
        EXPECT_EQ(out[2].retryUs, 0) << "it admits it";
        EXPECT_EQ(trial.check(kT0).left, static_cast<int64_t>(trialN))
            << "and counts nothing";
    }
}

/* Costs, bursts and delays far beyond any valid rule neither crash nor
 * overflow (the sanitizer build checks): they are never admitted. */
TEST(Decide, AbsurdFiguresDoNotOverflow) {
    for (Algorithm a : kAll) {
        for (uint64_t burst : {uint64_t(0), uint64_t(1) << 62, UINT64_MAX}) {
            /* (the log's ring holds N entries: a small N) */
            Limiter l(a, a == Algorithm::SlidingLog ? 3 : 1000000000,
                      366 * uint64_t(kDay), rl::takesBurst(a) ? burst : 0,
                      rl::takesDelay(a) ? UINT64_MAX - 1 : 0);
            for (uint64_t cost : {UINT64_MAX, uint64_t(1) << 61, uint64_t(1)}) {
                Check c = l.take(kT0, cost);
                EXPECT_GE(c.left, 0);
                EXPECT_GE(c.retryUs, 0);
                EXPECT_GE(c.resetUs, 0);
                EXPECT_GE(c.delayUs, 0);
                l.refund(kT0, cost);
            }
            EXPECT_GE(l.idleAt(kT0), 0);
        }
    }
    /* no ring for a sliding_log: nothing is admitted */
    Params p{Algorithm::SlidingLog, 3, kSec, 0, 0};
    State s{};
    EXPECT_FALSE(rl::check(p, s, nullptr, 1, kT0).ok);
}

/* A state built from zeros is fresh for every algorithm; invalid
 * parameters reject without dividing by zero. */
TEST(Decide, FreshAndInvalid) {
    for (Algorithm a : kAll) {
        uint64_t burst = a == Algorithm::TokenBucket ? 3
                         : rl::takesBurst(a)        ? 2
                                                    : 0;
        Limiter l(a, 3, kSec, burst);
        Check c = l.check(kT0);
        EXPECT_TRUE(c.ok) << rl::algorithmName(a);
        EXPECT_EQ(c.left, 3) << rl::algorithmName(a);
        EXPECT_EQ(l.idleAt(kT0), 0) << rl::algorithmName(a);
        Params zero{a, 0, kSec, 0, 0};
        State s{};
        EXPECT_FALSE(rl::check(zero, s, nullptr, 1, kT0).ok);
        Params none{a, 3, 0, 0, 0};
        EXPECT_FALSE(rl::check(none, s, nullptr, 1, kT0).ok);
        rl::commit(none, s, nullptr, 1, kT0);
        rl::refund(none, s, nullptr, 1, kT0);
    }
}

}  // namespace

namespace {

/* Calendar periods (SPEC section 12): a fixed_window given its period's
 * bounds; credits (the operator API's). */

using rl::Algorithm;

constexpr int64_t kS = 1000000;

/* A calendar day from 1000 s to 1000 s + a 23-hour day, the next of 25. */
constexpr int64_t kDayBounds[3] = {1000 * kS, 1000 * kS + 23 * 3600 * kS,
                                   1000 * kS + 48 * 3600 * kS};

rl::Params calendarDay(uint64_t limit) {
    rl::Params p{Algorithm::FixedWindow, limit, 86400ULL * 1000000, 0, 0};
    p.bounds = kDayBounds;
    return p;
}

TEST(Calendar, PeriodEndPicksAmongTheBoundsThenExtrapolates) {
    rl::Params p = calendarDay(3);
    EXPECT_EQ(rl::periodEnd(p, 0), p.bounds[0]) << "the period before";
    EXPECT_EQ(rl::periodEnd(p, p.bounds[0]), p.bounds[1]);
    EXPECT_EQ(rl::periodEnd(p, p.bounds[1] - 1), p.bounds[1]);
    EXPECT_EQ(rl::periodEnd(p, p.bounds[1]), p.bounds[2]);
    /* past the next: periods of its length (25 h) */
    EXPECT_EQ(rl::periodEnd(p, p.bounds[2]), p.bounds[2] + 25 * 3600 * kS);
    EXPECT_EQ(rl::periodEnd(p, p.bounds[2] + 60 * 3600 * kS),
              p.bounds[2] + 75 * 3600 * kS);
}

TEST(Calendar, CountsInThePeriodAndResetsAtItsEnd) {
    rl::Params p = calendarDay(2);
    rl::State s{};
    int64_t t = p.bounds[0] + 5 * kS;
    for (int i = 0; i < 2; i++) {
        rl::Check c = rl::check(p, s, nullptr, 1, t);
        ASSERT_TRUE(c.ok);
        EXPECT_EQ(c.resetUs, p.bounds[1] - t) << "until the 23-hour day ends";
        rl::commit(p, s, nullptr, 1, t);
    }
    rl::Check c = rl::check(p, s, nullptr, 1, p.bounds[1] - 1);
    EXPECT_FALSE(c.ok);
    EXPECT_EQ(c.retryUs, 1);
    EXPECT_EQ(rl::idleAtUs(p, s, nullptr, t), p.bounds[1]);
    EXPECT_TRUE(rl::check(p, s, nullptr, 1, p.bounds[1]).ok);
    /* a state whose period has not ended keeps counting, whatever the
     * bounds say (a key's billing day changed: its period runs out) */
    rl::Params later = p;
    const int64_t earlier[3] = {kDayBounds[0] - 3600 * kS,
                                kDayBounds[1] - 3600 * kS, kDayBounds[2]};
    later.bounds = earlier;
    EXPECT_FALSE(rl::check(later, s, nullptr, 1, p.bounds[1] - 7200 * kS)
                     .ok);
}

TEST(Credit, FixedWindowUsageGoesBelowZeroUntilTheWindowEnds) {
    for (bool calendar : {false, true}) {
        rl::Params p = calendar
                           ? calendarDay(2)
                           : rl::Params{Algorithm::FixedWindow, 2,
                                        100 * kS, 0, 0};
        int64_t t = calendar ? p.bounds[0] + kS : 1000 * kS;
        int64_t end = calendar ? p.bounds[1] : 1100 * kS;
        rl::State s{};
        rl::commit(p, s, nullptr, 2, t);
        EXPECT_FALSE(rl::check(p, s, nullptr, 1, t).ok);
        rl::credit(p, s, 3, t + 1);
        rl::Check c = rl::check(p, s, nullptr, 1, t + 2);
        EXPECT_TRUE(c.ok);
        EXPECT_EQ(c.left, 3) << "2 - 2 + 3";
        /* a refund never takes the credit */
        rl::refund(p, s, nullptr, 5, t + 3);
        EXPECT_EQ(rl::check(p, s, nullptr, 1, t + 4).left, 5);
        /* a credit to a key with no usage: below zero */
        rl::State fresh{};
        rl::credit(p, fresh, 4, t);
        EXPECT_EQ(rl::check(p, fresh, nullptr, 1, t).left, 6);
        EXPECT_EQ(rl::idleAtUs(p, fresh, nullptr, t), end);
        /* the window ends: so does the credit */
        EXPECT_EQ(rl::check(p, fresh, nullptr, 1, end).left, 2);
    }
}

TEST(Credit, OtherAlgorithmsGetUnitsBackAsARefund) {
    rl::Params tb{Algorithm::TokenBucket, 10, 10 * kS, 10, 0};
    rl::State s{};
    rl::commit(tb, s, nullptr, 8, 1000 * kS);
    rl::credit(tb, s, 5, 1000 * kS);
    EXPECT_EQ(rl::check(tb, s, nullptr, 1, 1000 * kS).left, 7);
    rl::credit(tb, s, 5, 1000 * kS);
    EXPECT_EQ(rl::check(tb, s, nullptr, 1, 1000 * kS).left, 10)
        << "a bucket holds no more than its burst";
    EXPECT_FALSE(rl::takesCredit(Algorithm::SlidingLog));
    EXPECT_FALSE(rl::takesCredit(Algorithm::Concurrency));
    EXPECT_TRUE(rl::takesCredit(Algorithm::Gcra));
}

}  // namespace
