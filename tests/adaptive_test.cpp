/* The law of concurrency=auto (src/core/adaptive.hpp), fed the latency
 * series of a simulated upstream: capacity C requests at once, S each,
 * the rest queued first come first served, so that N requests in
 * flight take S x max(1, N / C) each. */
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/adaptive.hpp"

namespace rl::adaptive {
namespace {

constexpr int64_t kS = 50000;   /* 50 ms */

/* One interval in front of capacity c with the limit n reached: the
 * upstream serves c / S a second, each after S x max(1, n / c), with a
 * spread of +-4% (the histogram's resolution) across samples. */
Samples interval(uint64_t n, double c, int64_t s = kS,
                 int64_t overloadedPercent = 0) {
    Samples out;
    double inflight = static_cast<double>(n);
    double latency = static_cast<double>(s) * std::max(1.0, inflight / c);
    int64_t count = static_cast<int64_t>(std::min(inflight, c) * 1e6 /
                                         static_cast<double>(s));
    for (int64_t i = 0; i < count; i++) {
        double jitter = 0.96 + 0.08 * static_cast<double>(i % 11) / 10;
        out.add(static_cast<int64_t>(latency * jitter),
                i * 100 < count * overloadedPercent);
    }
    out.limited = 1;
    return out;
}

/* the N after each of `intervals` intervals in front of c */
std::vector<uint64_t> run(const Params& p, State& s, double c,
                          int intervals) {
    std::vector<uint64_t> seen;
    for (int i = 0; i < intervals; i++) {
        s = update(p, s, interval(limitOf(p, s), c));
        seen.push_back(s.limit);
    }
    return seen;
}

double latencyAt(uint64_t n, double c) {
    return static_cast<double>(kS) * std::max(1.0, static_cast<double>(n) / c);
}

TEST(Adaptive, Buckets) {
    EXPECT_EQ(bucketOf(0), 0u);
    EXPECT_EQ(bucketOf(1), 0u);
    EXPECT_EQ(bucketOf(2), 16u);
    EXPECT_EQ(bucketOf(1024), 160u);
    EXPECT_EQ(bucketOf(INT64_MAX), kBuckets - 1);
    for (int64_t us : {7, 100, 999, 50000, 123456, 60000000}) {
        double mid = bucketUs(bucketOf(us));
        EXPECT_NEAR(mid / static_cast<double>(us), 1.0, 0.045) << us;
    }
}

TEST(Adaptive, Quantiles) {
    Samples s;
    EXPECT_EQ(quantileUs(s, 0.5), 0);
    for (int i = 0; i < 90; i++) {
        s.add(1000, false);
    }
    for (int i = 0; i < 10; i++) {
        s.add(100000, false);
    }
    EXPECT_NEAR(quantileUs(s, 0.5), 1000, 45);
    EXPECT_NEAR(quantileUs(s, 0.9), 1000, 45);
    EXPECT_NEAR(quantileUs(s, 0.91), 100000, 4500);
    Samples t;
    t.add(100000, true);
    t.limited = 2;
    s.merge(t);
    EXPECT_EQ(s.count, 101);
    EXPECT_EQ(s.overloaded, 1);
    EXPECT_EQ(s.limited, 2);
}

TEST(Adaptive, FindsTheCapacityFromMin) {
    Params p;
    State s;
    EXPECT_EQ(limitOf(p, s), 4u);
    auto seen = run(p, s, 8, 10);
    /* within 10 intervals: at C or a little above, never below it for
     * long, and the latency within 2 S */
    for (int i = 5; i < 10; i++) {
        EXPECT_GE(seen[i], 7u) << i;
        EXPECT_LE(seen[i], 12u) << i;
        EXPECT_LE(latencyAt(seen[i], 8), 2.0 * kS) << i;
    }
}

TEST(Adaptive, FollowsTheCapacityHalvedAndDoubled) {
    Params p;
    State s;
    run(p, s, 8, 10);
    auto halved = run(p, s, 4, 5);
    for (int i = 2; i < 5; i++) {
        EXPECT_GE(halved[i], 4u) << i;
        EXPECT_LE(latencyAt(halved[i], 4), 2.0 * kS) << i;
    }
    auto doubled = run(p, s, 16, 10);
    EXPECT_GE(doubled[7], 13u);     /* 0.8 x C in use within 8 */
    for (int i = 5; i < 10; i++) {
        EXPECT_LE(latencyAt(doubled[i], 16), 2.0 * kS) << i;
    }
}

TEST(Adaptive, AfterACutNFollowsADoubledCapacityWithin10) {
    /* a busy host's slow interval cut N to 5 just as the capacity
     * doubled to 16: N holds kSettle intervals, then its step doubles
     * each interval while no queue shows */
    Params p;
    State s;
    s.limit = 5;
    s.baselineUs = kS * 1.04;
    s.growing = false;
    s.settle = kSettle;
    auto seen = run(p, s, 16, 10);
    EXPECT_GE(seen[5], 13u) << ::testing::PrintToString(seen);
    for (int i = 6; i < 10; i++) {
        EXPECT_GE(seen[i], 13u) << i;
        EXPECT_LE(latencyAt(seen[i], 16), 2.0 * kS) << i;
    }
}

TEST(Adaptive, GrowsQuicklyToALargeCapacity) {
    Params p;
    State s;
    auto seen = run(p, s, 1000, 12);
    EXPECT_GE(seen[8], 800u);   /* 4 -> 1000 doubling */
    auto later = run(p, s, 1000, 10);
    EXPECT_LE(latencyAt(later.back(), 1000), 2.0 * kS);
}

TEST(Adaptive, ACapacityFarAboveIsReachedInAFewSteps) {
    Params p;
    p.max = 100000;
    State s;
    run(p, s, 100, 15);    /* settled: no longer doubling */
    EXPECT_FALSE(s.growing);
    /* capacity 100 times larger: steps of half sqrt(N), doubling every
     * kRestart intervals of growth in a row: a hundred times N in 24 */
    auto seen = run(p, s, 10000, 24);
    EXPECT_GE(seen.back(), 8000u);
}

TEST(Adaptive, OverloadHalves) {
    Params p;
    State s;
    s.limit = 40;
    s.baselineUs = kS;
    s.growing = false;
    s = update(p, s, interval(40, 100, kS, 20));
    EXPECT_EQ(s.limit, 20u);
    /* 10% is not more than 10% */
    State t;
    t.limit = 40;
    t.baselineUs = kS;
    t.growing = false;
    t = update(p, t, interval(40, 100, kS, 10));
    EXPECT_GT(t.limit, 40u);
}

TEST(Adaptive, AtMostHalving) {
    Params p;
    State s;
    s.limit = 100;
    s.baselineUs = kS;
    s = update(p, s, interval(100, 5));   /* 20 x slower */
    EXPECT_EQ(s.limit, 53u);    /* half the gradient's step, 47 */
    s = update(p, s, interval(53, 1));
    EXPECT_EQ(s.limit, 27u);    /* 53 - 26: the baseline stays S */
}

TEST(Adaptive, NoSamplesNoChange) {
    Params p;
    State s;
    s.limit = 17;
    s.baselineUs = 1234;
    State t = update(p, s, Samples{});
    EXPECT_EQ(t.limit, 17u);
    EXPECT_EQ(t.baselineUs, 1234);
}

TEST(Adaptive, GrowsOnlyWhileTheLimitIsReached) {
    Params p;
    State s;
    s.limit = 10;
    Samples in = interval(5, 100);
    in.limited = 0;
    s = update(p, s, in);
    EXPECT_EQ(s.limit, 10u);
    in.limited = 3;
    s = update(p, s, in);
    EXPECT_EQ(s.limit, 20u);    /* still doubling */
}

TEST(Adaptive, StaysWithinMinAndMax) {
    Params p;
    p.min = 6;
    p.max = 9;
    State s;
    for (uint64_t n : run(p, s, 1000, 10)) {
        EXPECT_GE(n, 6u);
        EXPECT_LE(n, 9u);
    }
    for (uint64_t n : run(p, s, 1, 10)) {
        EXPECT_GE(n, 6u);
    }
    State over;
    over.limit = 50;    /* a stored N outside new bounds */
    EXPECT_EQ(limitOf(p, over), 9u);
}

TEST(Adaptive, ATargetIsAP90Objective) {
    Params p;
    p.targetUs = 75000;     /* 1.5 S */
    State s;
    auto seen = run(p, s, 8, 15);
    for (int i = 8; i < 15; i++) {
        EXPECT_LE(latencyAt(seen[i], 8), 1.5 * 75000) << i;
        EXPECT_GE(seen[i], 8u) << i;    /* the objective lets N past C */
    }
}

TEST(Adaptive, ASlowerHealthyUpstreamIsLearnt) {
    Params p;
    State s;
    uint64_t before = run(p, s, 8, 10).back();
    /* the upstream now takes 3 S whatever N: N goes down to min at
     * first, then the baseline follows and N comes back, and stays
     * near C (its queues do not raise the baseline) */
    std::vector<uint64_t> seen;
    for (int i = 0; i < 240; i++) {
        s = update(p, s, interval(limitOf(p, s), 8, 3 * kS));
        seen.push_back(s.limit);
    }
    EXPECT_LT(seen[0], before);
    EXPECT_EQ(*std::min_element(seen.begin(), seen.end()), p.min);
    for (int i = 120; i < 240; i++) {
        EXPECT_GE(seen[i], 7u) << i;
        EXPECT_LE(seen[i], 12u) << i;
    }
    EXPECT_LE(s.baselineUs, 3.0 * kS * 1.25);
}

TEST(Adaptive, PriorityShares) {
    EXPECT_TRUE(admits(8, 7, 0));
    EXPECT_FALSE(admits(8, 8, 0));
    EXPECT_TRUE(admits(8, 7, 1));   /* 7 < 7.2 */
    EXPECT_FALSE(admits(8, 6, 2));  /* 6 < 6 no */
    EXPECT_TRUE(admits(8, 5, 2));
    EXPECT_TRUE(admits(8, 3, 3));
    EXPECT_FALSE(admits(8, 4, 3));
    EXPECT_FALSE(admits(8, 4, 7));  /* as 3 */
    EXPECT_TRUE(admits(1, 0, 3));
    EXPECT_EQ(levelOf("0", 1), 0);
    EXPECT_EQ(levelOf("2", 1), 2);
    EXPECT_EQ(levelOf("9", 1), 3);
    EXPECT_EQ(levelOf("", 0), 3);
    EXPECT_EQ(levelOf("01", 2), 3);
}

}  // namespace
}  // namespace rl::adaptive
