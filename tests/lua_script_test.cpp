/* The embedded script run by a real redis-server (tests/redis_fixture.hpp),
 * with requests at given times (t > 0, microseconds) so window edges are
 * exact: the protocol, each algorithm's figures at its edges,
 * stacked rules, refunds and TTLs. differential_test.cpp holds every
 * figure to the C++ core's. */

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/outcome.hpp"
#include "redis_fixture.hpp"

namespace {

using namespace std::string_literals;
using namespace rltest;

constexpr uint64_t kDay = 86400 * kSec;

using LuaScript = ScriptFixture;

/* ------------------------------------------------------------------ */
/* The script's name and the EVALSHA / EVAL protocol                   */

TEST_F(LuaScript, ScriptLoadAgreesWithScriptSha) {
    ReplyPtr r = command({"SCRIPT", "LOAD", std::string(rl::scriptText())});
    ASSERT_NE(r, nullptr);
    ASSERT_EQ(r->type, REDIS_REPLY_STRING)
        << std::string(r->str != nullptr ? r->str : "", r->len);
    EXPECT_EQ(std::string_view(r->str, r->len), rl::scriptSha());
}

/* The script with its flags (a Cluster node's calls across slots): the
 * same text after its shebang, another SHA, taken by the server. */
TEST_F(LuaScript, TheScriptWithItsFlagsLoadsUnderItsOwnSha) {
    std::string_view text = rl::crossSlotScriptText();
    std::string_view plain = rl::scriptText();
    ASSERT_EQ(text.substr(0, 34), "#!lua flags=allow-cross-slot-keys\n");
    EXPECT_EQ(text.substr(34), plain);
    EXPECT_NE(rl::crossSlotScriptSha(), rl::scriptSha());
    ReplyPtr r = command({"SCRIPT", "LOAD", std::string(text)});
    ASSERT_NE(r, nullptr);
    ASSERT_EQ(r->type, REDIS_REPLY_STRING)
        << std::string(r->str != nullptr ? r->str : "", r->len);
    EXPECT_EQ(std::string_view(r->str, r->len), rl::crossSlotScriptSha());
}

TEST_F(LuaScript, EvalshaBeforeLoadIsNoScriptThenWorksAfterEval) {
    command({"SCRIPT", "FLUSH"});
    Rule rule = fixed("10.0.0.1", 5, 10 * kSec);
    uint64_t t = windowStart(10 * kSec);

    Decision d = call({rule}, t, true);
    EXPECT_EQ(d.status, ReplyStatus::NoScript) << d.error;
    EXPECT_EQ(integerCommand({"EXISTS", rule.key}), 0);

    d = call({rule}, t, false);
    ASSERT_EQ(d.status, ReplyStatus::Ok) << d.error;
    EXPECT_TRUE(d.allowed);

    /* EVAL cached the script under scriptSha(). */
    d = call({rule}, t, true);
    ASSERT_EQ(d.status, ReplyStatus::Ok) << d.error;
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.out[0].remaining, 3);
}

TEST_F(LuaScript, UnknownAlgorithmIsAnErrorReply) {
    Rule rule = fixed("10.0.0.1", 5, 10 * kSec);
    rule.algorithm = "leaky_window";
    Decision d = call({rule}, windowStart(10 * kSec));
    EXPECT_EQ(d.status, ReplyStatus::Error);
    EXPECT_NE(d.error.find("unknown algorithm leaky_window"),
              std::string::npos)
        << d.error;
    EXPECT_EQ(integerCommand({"EXISTS", rule.key}), 0);
}

/* The module sends no `now`: the script reads Redis' TIME, and says
 * which time it used. */
TEST_F(LuaScript, EmptyNowUsesRedisTime) {
    Rule f = fixed("10.0.0.1", 2, 10 * kSec);
    Rule s = sliding("10.0.0.1", 2, 10 * kSec);
    int64_t before = redisTimeUs();
    Decision d = decide({f, s}, 0);
    int64_t after = redisTimeUs();
    ASSERT_TRUE(d.allowed) << describe(d);
    EXPECT_GE(d.nowUs, before);
    EXPECT_LE(d.nowUs, after);
    EXPECT_EQ(d.out[0].remaining, 1);
    EXPECT_GT(d.out[0].resetMs, 0);
    EXPECT_LE(d.out[0].resetMs, 10000);
    EXPECT_EQ(d.out[1].remaining, 1);
    EXPECT_GT(d.out[1].resetMs, 10000);
    EXPECT_LE(d.out[1].resetMs, 20000);
    EXPECT_GT(pttl(f.key), 0);
    EXPECT_GT(pttl(s.key), 0);
}

/* Keys built by the core, NUL bytes included, reach Redis intact. */
TEST_F(LuaScript, BinaryKeyValues) {
    Rule a = fixed("\x7f\0\0\x01"s, 1, 10 * kSec);
    Rule b = fixed("\x7f\0\0\x02"s, 1, 10 * kSec);
    uint64_t t = windowStart(10 * kSec);
    EXPECT_TRUE(admits(a, t));
    EXPECT_FALSE(admits(a, t));
    EXPECT_TRUE(admits(b, t));
    EXPECT_EQ(state(a).at("c"), "1");
}

/* ------------------------------------------------------------------ */
/* fixed_window                                                        */

TEST_F(LuaScript, FixedWindowAdmitsLimitThenRejectsUntilNextWindow) {
    const uint64_t w = 10 * kSec;
    Rule rule = fixed("10.0.0.1", 3, w);
    uint64_t w0 = windowStart(w);
    uint64_t t = w0 + 2 * kSec;

    for (int64_t i = 0; i < 3; i++) {
        Decision d = decide({rule}, t);
        ASSERT_TRUE(d.allowed) << "request " << i << ": " << describe(d);
        EXPECT_EQ(d.out[0].remaining, 2 - i);
        EXPECT_EQ(d.out[0].resetMs, 8000);
        EXPECT_EQ(d.out[0].retryMs, 0);
    }
    Decision d = decide({rule}, t);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.out[0].remaining, 0);
    EXPECT_EQ(d.out[0].resetMs, 8000);
    EXPECT_EQ(d.out[0].retryMs, 8000);

    /* The window's last microsecond still counts the three. */
    d = decide({rule}, w0 + w - 1);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.out[0].retryMs, 1);

    /* The next window starts from zero. */
    for (int64_t i = 0; i < 3; i++) {
        d = decide({rule}, w0 + w + i * kSec);
        ASSERT_TRUE(d.allowed) << "request " << i << ": " << describe(d);
        EXPECT_EQ(d.out[0].remaining, 2 - i);
        EXPECT_EQ(d.out[0].resetMs, 10000 - i * 1000);
    }
    EXPECT_FALSE(admits(rule, w0 + w + 9 * kSec));
    EXPECT_EQ(state(rule),
              (std::map<std::string, std::string>{
                  {"w", std::to_string(w0 / w + 1)}, {"c", "3"}}));
}

/* A window without requests does not carry anything over. */
TEST_F(LuaScript, FixedWindowSkippedWindows) {
    const uint64_t w = 10 * kSec;
    Rule rule = fixed("10.0.0.1", 2, w);
    uint64_t w0 = windowStart(w);
    EXPECT_TRUE(admits(rule, w0));
    EXPECT_TRUE(admits(rule, w0));
    EXPECT_FALSE(admits(rule, w0));
    EXPECT_TRUE(admits(rule, w0 + 3 * w + 5 * kSec));
    EXPECT_TRUE(admits(rule, w0 + 3 * w + 5 * kSec));
    EXPECT_FALSE(admits(rule, w0 + 3 * w + 5 * kSec));
}

TEST_F(LuaScript, FixedWindowRetryIsExact) {
    const uint64_t w = 10 * kSec;
    Rule rule = fixed("10.0.0.1", 1, w);
    uint64_t w0 = windowStart(w);
    uint64_t t = w0 + 2 * kSec + 500 * kMs + 500; /* 2.5005 s in */
    EXPECT_TRUE(admits(rule, t));
    Decision d = decide({rule}, t);
    ASSERT_FALSE(d.allowed);
    EXPECT_EQ(d.out[0].retryMs, 7500); /* 7.4995 s, rounded up */

    uint64_t retry = static_cast<uint64_t>(d.out[0].retryMs) * kMs;
    EXPECT_TRUE(probe({rule}, t + retry).allowed);
    EXPECT_FALSE(probe({rule}, t + retry - kMs).allowed);
}

TEST_F(LuaScript, FixedWindowTtlEndsWithTheWindow) {
    const uint64_t w = 10 * kSec;
    Rule rule = fixed("10.0.0.1", 5, w);
    uint64_t t = windowStart(w) + 2 * kSec;
    ASSERT_TRUE(admits(rule, t));
    long long ttl = pttl(rule.key);
    /* 8 s (plus 1 ms for Redis' clock) less the test's running time */
    EXPECT_GT(ttl, 7000);
    EXPECT_LE(ttl, 8001);

    /* A rejection writes nothing, the TTL included. */
    rule.limit = 1;
    ASSERT_FALSE(admits(rule, t + 5 * kSec));
    EXPECT_LE(pttl(rule.key), ttl);
}

/* ------------------------------------------------------------------ */
/* sliding_window: estimate = prev * (window - elapsed) / window + cur  */

/* limit 10 per 60 s: 10 requests at 59 s into window 0; 30 s into
 * window 1 the estimate is 10 * 30 / 60 = 5, so 5 more fit. */
TEST_F(LuaScript, SlidingWindowWeightsThePreviousWindow) {
    const uint64_t w = 60 * kSec;
    Rule rule = sliding("10.0.0.1", 10, w);
    uint64_t w0 = windowStart(w);

    for (int64_t i = 0; i < 10; i++) {
        Decision d = decide({rule}, w0 + 59 * kSec);
        ASSERT_TRUE(d.allowed) << "request " << i << ": " << describe(d);
        EXPECT_EQ(d.out[0].remaining, 9 - i);
        /* when window 1 ends; nothing left: when one more fits, at
         * 10 * (60 - x) / 60 + 1 <= 10 from x = 6 s in window 1 */
        EXPECT_EQ(d.out[0].resetMs, i < 9 ? 61000 : 7000);
        EXPECT_EQ(d.out[0].retryMs, 0);
    }
    EXPECT_FALSE(admits(rule, w0 + 59 * kSec));

    /* Window 1, 0 s in: all 10 still weigh. */
    Decision d = probe({rule}, w0 + w);
    EXPECT_FALSE(d.allowed) << describe(d);
    EXPECT_EQ(d.out[0].retryMs, 6000); /* 10 * 54 / 60 = 9 */

    uint64_t t = w0 + w + 30 * kSec;
    for (int64_t i = 0; i < 5; i++) {
        d = decide({rule}, t);
        ASSERT_TRUE(d.allowed) << "request " << i << ": " << describe(d);
        EXPECT_EQ(d.out[0].remaining, 4 - i); /* 10 - (5 + i + 1) */
        /* when window 2 ends; nothing left: when one more fits */
        EXPECT_EQ(d.out[0].resetMs, i < 4 ? 90000 : 6000);
    }
    d = decide({rule}, t);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.out[0].remaining, 0);
    /* 10 * (60 - x) / 60 + 5 + 1 <= 10 from x = 36 s: 6 s from now */
    EXPECT_EQ(d.out[0].retryMs, 6000);
    EXPECT_FALSE(probe({rule}, t + 6 * kSec - 1).allowed);
    EXPECT_TRUE(probe({rule}, t + 6 * kSec).allowed);

    /* Window 2, 0 s in: window 1's 5 weigh fully, so 5 fit. */
    int admitted = 0;
    while (admits(rule, w0 + 2 * w) && admitted < 20) {
        admitted++;
    }
    EXPECT_EQ(admitted, 5);

    /* Window 4: nothing weighs any more. */
    admitted = 0;
    while (admits(rule, w0 + 4 * w) && admitted < 20) {
        admitted++;
    }
    EXPECT_EQ(admitted, 10);
}

/* How many fit at `elapsed` into window 1 after `limit` in window 0:
 * floor(limit * elapsed / window) (the 1 of the request itself). */
TEST_F(LuaScript, SlidingWindowEstimateAtExactPoints) {
    const uint64_t w = 10 * kSec;
    const uint64_t w0 = windowStart(w);
    struct Point {
        uint64_t elapsed;
        int admitted;
    };
    for (Point p : {Point{0, 0}, Point{1, 0}, Point{1 * kMs, 0},
                    Point{100 * kMs, 1}, Point{2500 * kMs, 25},
                    Point{5 * kSec, 50}, Point{7490 * kMs, 74},
                    Point{9999 * kMs, 99}, Point{w - 1, 99}}) {
        Rule rule = sliding("p" + std::to_string(p.elapsed), 100, w);
        for (int i = 0; i < 100; i++) {
            ASSERT_TRUE(admits(rule, w0 + 3 * kSec)) << i;
        }
        int admitted = 0;
        while (admits(rule, w0 + w + p.elapsed) && admitted < 200) {
            admitted++;
        }
        EXPECT_EQ(admitted, p.admitted) << "at " << p.elapsed << " us";
    }
}

/* Full at the start of a window: the next request fits when the
 * window's count, weighed in the next window, leaves room for it. */
TEST_F(LuaScript, SlidingWindowRetryLooksIntoTheNextWindow) {
    const uint64_t w = 60 * kSec;
    Rule rule = sliding("10.0.0.1", 10, w);
    uint64_t w0 = windowStart(w);
    for (int i = 0; i < 10; i++) {
        ASSERT_TRUE(admits(rule, w0));
    }
    Decision d = decide({rule}, w0);
    ASSERT_FALSE(d.allowed);
    EXPECT_EQ(d.out[0].retryMs, 66000); /* 60 s + 6 s: 10 * 54 / 60 = 9 */
    EXPECT_EQ(d.out[0].resetMs, 120000);
    EXPECT_FALSE(probe({rule}, w0 + 66 * kSec - 1).allowed);

    d = decide({rule}, w0 + 66 * kSec);
    ASSERT_TRUE(d.allowed) << describe(d);
    EXPECT_EQ(d.out[0].remaining, 0);
    EXPECT_FALSE(admits(rule, w0 + 66 * kSec));
}

TEST_F(LuaScript, SlidingWindowTtlLastsUntilTheCountStopsWeighing) {
    const uint64_t w = 60 * kSec;
    Rule rule = sliding("10.0.0.1", 10, w);
    ASSERT_TRUE(admits(rule, windowStart(w) + 59 * kSec));
    /* Counted in window 0, it weighs until window 1 ends: 61 s. */
    long long ttl = pttl(rule.key);
    EXPECT_GT(ttl, 60000);
    EXPECT_LE(ttl, 61001);
}

/* ------------------------------------------------------------------ */
/* sliding_log, token_bucket, leaky_bucket, gcra                       */

/* Times in us have 16 digits; tostring would keep 14. Every number
 * written is exact. */
TEST_F(LuaScript, LargeNumbersAreWrittenExactly) {
    const uint64_t t = 1700000000123457ULL;
    Rule b = token("10.0.0.1", 7, 13 * kSec, 3);
    Rule l = leaky("10.0.0.1", 7, 13 * kSec, 3, 3);
    Rule g = gcra("10.0.0.1", 7, 13 * kSec, 3, 3);
    Rule z = log("10.0.0.1", 3, 13 * kSec);
    Decision d = decide({b, l, g, z}, t);
    ASSERT_TRUE(d.allowed) << describe(d);
    /* one request is 13e6 units, one us 7 units */
    EXPECT_EQ(state(b), (std::map<std::string, std::string>{
                                  {"t", "1700000000123457"},
                                  {"x", "26000000"}, {"u", "13000000"}}));
    EXPECT_EQ(state(l), (std::map<std::string, std::string>{
                                  {"t", "1700000000123457"},
                                  {"x", "13000000"}, {"u", "13000000"}}));
    /* TAT = t + 13e6 / 7 us = t + 1857142 us + 6 units */
    EXPECT_EQ(state(g), (std::map<std::string, std::string>{
                                  {"t", "1700000001980599"}, {"f", "6"}}));
    ReplyPtr r = command({"ZRANGE", z.key, "0", "-1", "WITHSCORES"});
    ASSERT_NE(r, nullptr);
    ASSERT_EQ(r->elements, 2u);
    EXPECT_EQ(std::string(r->element[0]->str, r->element[0]->len),
              "1700000000123457:0000000001");
    EXPECT_EQ(std::string(r->element[1]->str, r->element[1]->len),
              "1700000000123457");
}

/* The log never holds more than N entries, whatever the traffic. */
TEST_F(LuaScript, SlidingLogMemoryIsBoundedByTheLimit) {
    Rule z = log("10.0.0.1", 5, kSec);
    uint64_t t = windowStart(kSec);
    int admitted = 0;
    for (int i = 0; i < 300; i++) {
        z.cost = 1 + i % 3;
        admitted += decide({z}, t + static_cast<uint64_t>(i) * 37 * kMs)
                        .allowed
                        ? 1
                        : 0;
        command({"PERSIST", z.key});
        ASSERT_LE(integerCommand({"ZCARD", z.key}), 5) << "step " << i;
    }
    EXPECT_GT(admitted, 25); /* at most 5 units a second over 11 s */
    /* more than the limit at once: refused, nothing stored */
    Rule big = log("10.0.0.2", 5, kSec);
    big.cost = 6;
    Decision d = decide({big}, t);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.out[0].retryMs, 1000);
    EXPECT_EQ(integerCommand({"EXISTS", big.key}), 0);
}

/* Several decisions in one microsecond, and refunds among them: every
 * entry has its own member. */
TEST_F(LuaScript, SlidingLogMembersNeverCollide) {
    Rule z = log("10.0.0.1", 10, 10 * kSec);
    uint64_t t = windowStart(10 * kSec) + 5;
    ASSERT_TRUE(admits(z, t - 1));
    ASSERT_TRUE(admits(z, t));
    z.cost = 2;
    ASSERT_TRUE(decide({z}, t).allowed);
    refund({z}, t - 1);            /* an earlier time's entry goes */
    refund({z}, t);                /* two of this time's newest go */
    EXPECT_EQ(integerCommand({"ZCARD", z.key}), 1);
    z.cost = 3;
    ASSERT_TRUE(decide({z}, t).allowed);
    EXPECT_EQ(integerCommand({"ZCARD", z.key}), 4);
    z.cost = 6;
    ASSERT_TRUE(decide({z}, t).allowed);
    EXPECT_EQ(integerCommand({"ZCARD", z.key}), 10);
    z.cost = 1;
    EXPECT_FALSE(admits(z, t + 10 * kSec - 1));
    EXPECT_TRUE(admits(z, t + 10 * kSec));
}

TEST_F(LuaScript, SlidingLogTtlIsTheWindowAfterTheNewest) {
    Rule z = log("10.0.0.1", 5, 30 * kSec);
    ASSERT_TRUE(admits(z, windowStart(kSec)));
    long long ttl = pttl(z.key);
    EXPECT_GT(ttl, 29000);
    EXPECT_LE(ttl, 30001);
}

/* The meters' keys live until the meter is back to fresh: the token
 * bucket full, the leaky bucket empty, gcra's TAT past. */
TEST_F(LuaScript, MeterTtlsLastUntilFresh) {
    uint64_t t = windowStart(kSec);
    Rule b = token("10.0.0.1", 10, 10 * kSec, 20); /* a token per s */
    b.cost = 5;
    Rule l = leaky("10.0.0.1", 10, 10 * kSec, 20, 20);
    l.cost = 4;
    Rule g = gcra("10.0.0.1", 10, 10 * kSec, 20, 20);
    g.cost = 3;
    ASSERT_TRUE(decide({b, l, g}, t).allowed);
    EXPECT_LE(pttl(b.key), 5001);
    EXPECT_GT(pttl(b.key), 4000);
    EXPECT_LE(pttl(l.key), 4001);
    EXPECT_GT(pttl(l.key), 3000);
    EXPECT_LE(pttl(g.key), 3001);
    EXPECT_GT(pttl(g.key), 2000);
}

/* A refund gives the meter back its cost and shortens the TTL by as
 * much; a meter back to fresh leaves no key. */
TEST_F(LuaScript, MeterRefundsShortenTheTtl) {
    uint64_t t = windowStart(kSec);
    Rule b = token("10.0.0.1", 10, 10 * kSec, 20);
    Rule l = leaky("10.0.0.1", 10, 10 * kSec, 20, 20);
    Rule g = gcra("10.0.0.1", 10, 10 * kSec, 20, 20);
    Rule z = log("10.0.0.1", 10, 10 * kSec);
    b.cost = l.cost = g.cost = 4;
    z.cost = 1;
    ASSERT_TRUE(decide({b, l, g, z}, t).allowed);
    z.cost = 2;
    ASSERT_TRUE(decide({z}, t + 3 * kSec).allowed);
    long long before = pttl(l.key);
    b.cost = l.cost = g.cost = 3;
    refund({b, l, g}, t);
    refund({z}, t + 3 * kSec); /* the newest entries: the log ends sooner */
    for (const Rule* r : {&b, &l, &g}) {
        long long ttl = pttl(r->key);
        EXPECT_LE(ttl, before - 3000 + 1) << r->algorithm;
        EXPECT_GT(ttl, before - 3000 - 1000) << r->algorithm;
    }
    EXPECT_LE(pttl(z.key), 7001);
    EXPECT_GT(pttl(z.key), 6000);
    /* a request is 1e6 units */
    EXPECT_EQ(state(l).at("x"), "1000000");
    EXPECT_EQ(state(b).at("x"), "19000000"); /* 20 - 4 + 3 tokens */
    /* the rest: fresh again, nothing left behind */
    b.cost = l.cost = g.cost = 1;
    refund({b, l, g}, t);
    EXPECT_EQ(integerCommand({"EXISTS", b.key, l.key, g.key}), 0);
    /* a refund creates nothing */
    refund({b, l, g}, t);
    EXPECT_EQ(integerCommand({"EXISTS", b.key, l.key, g.key}), 0);
}

/* gcra burst=5 delay=2 (T = 100 ms): 1..3 at once, 4..6 delayed T, 2T,
 * 3T, the 7th rejected; the reply's delay is in ms. */
TEST_F(LuaScript, DelayFiguresInTheReply) {
    uint64_t t = windowStart(kSec);
    for (Rule r : {gcra("10.0.0.1", 10, kSec, 5, 2),
                   leaky("10.0.0.1", 10, kSec, 5, 2)}) {
        for (int64_t i = 1; i <= 6; i++) {
            Decision d = decide({r}, t);
            ASSERT_TRUE(d.allowed) << r.algorithm << " " << i;
            EXPECT_EQ(d.out[0].delayMs, i <= 3 ? 0 : (i - 3) * 100)
                << r.algorithm << " request " << i;
            EXPECT_EQ(d.out[0].remaining, 6 - i);
        }
        Decision d = decide({r}, t);
        EXPECT_FALSE(d.allowed);
        EXPECT_EQ(d.out[0].delayMs, 0);
        EXPECT_EQ(d.out[0].retryMs, 100);
    }
    /* a shaping rule admits, another rejects: no delay */
    Rule g = gcra("10.0.0.2", 10, kSec, 5, 0);
    Rule f = fixed("10.0.0.2", 1, kSec);
    ASSERT_TRUE(decide({g, f}, t).allowed);
    Decision d = decide({g, f}, t);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.out[0].retryMs, 0);
    EXPECT_EQ(d.out[0].delayMs, 0);
}

/* The module sends no `now` to the meters either. */
TEST_F(LuaScript, MetersOnRedisTime) {
    Rule b = token("10.0.0.1", 1, kDay, 2);
    Rule g = gcra("10.0.0.1", 1, kDay, 1, 1);
    Decision d = decide({b, g}, 0);
    ASSERT_TRUE(d.allowed) << describe(d);
    ASSERT_TRUE(decide({b, g}, 0).allowed);
    d = decide({b, g}, 0);
    EXPECT_FALSE(d.allowed);
    EXPECT_GT(d.out[0].retryMs, 86000000);
    EXPECT_GT(d.out[1].retryMs, 86000000);
    EXPECT_EQ(state(b).at("t").size(), 16u);
}

TEST_F(LuaScript, CostZeroWritesNothing) {
    uint64_t t = windowStart(kSec);
    std::vector<Rule> rules = {fixed("z", 3, kSec), sliding("z", 3, kSec),
                               log("z", 3, kSec), token("z", 3, kSec, 3),
                               leaky("z", 3, kSec, 0, 0),
                               gcra("z", 3, kSec, 0, 0)};
    for (Rule& r : rules) {
        r.cost = 0;
    }
    Decision d = decide(rules, t);
    ASSERT_TRUE(d.allowed) << describe(d);
    for (size_t i = 0; i < rules.size(); i++) {
        EXPECT_EQ(integerCommand({"EXISTS", rules[i].key}), 0)
            << rules[i].algorithm;
        EXPECT_EQ(d.out[i].retryMs, 0);
    }
}

TEST_F(LuaScript, BadArgumentsAreAnErrorReply) {
    uint64_t t = windowStart(kSec);
    for (Rule r : {fixed("b", 5, 0), gcra("b", 5, 0, 0, 0)}) {
        Decision d = call({r}, t);
        EXPECT_EQ(d.status, ReplyStatus::Error) << r.algorithm;
        EXPECT_NE(d.error.find("bad arguments"), std::string::npos) << d.error;
        EXPECT_EQ(integerCommand({"EXISTS", r.key}), 0);
    }
}

/* A limit of 0 (a live limit, SPEC section 11): every request rejected,
 * nothing written, the retry the window, at most a minute. */
TEST_F(LuaScript, ALimitOfZeroRejectsAndWritesNothing) {
    uint64_t t = windowStart(kSec);
    for (Rule r : {fixed("z", 0, 10 * kSec), sliding("z", 0, 3600 * kSec),
                   gcra("z", 0, kSec, 2, 2)}) {
        Decision d = call({r}, t);
        ASSERT_EQ(d.status, ReplyStatus::Ok) << r.algorithm;
        EXPECT_FALSE(d.allowed) << r.algorithm;
        EXPECT_EQ(d.out[0].remaining, 0) << r.algorithm;
        int64_t want = r.windowUs < 60 * kSec
                           ? static_cast<int64_t>(r.windowUs / 1000) : 60000;
        EXPECT_EQ(d.out[0].retryMs, want) << r.algorithm;
        EXPECT_EQ(integerCommand({"EXISTS", r.key}), 0) << r.algorithm;
    }
}

/* ------------------------------------------------------------------ */
/* Several rules in one call                                          */

TEST_F(LuaScript, AdmissionCountsInEveryRule) {
    const uint64_t w = 10 * kSec;
    Rule a = fixed("10.0.0.1", 5, w);
    Rule b = sliding("10.0.0.1", 3, w);
    uint64_t t = windowStart(w) + kSec;
    Decision d = decide({a, b}, t);
    ASSERT_TRUE(d.allowed) << describe(d);
    EXPECT_EQ(d.out[0].remaining, 4);
    EXPECT_EQ(d.out[1].remaining, 2);
    EXPECT_EQ(state(a).at("c"), "1");
    EXPECT_EQ(state(b).at("c"), "1");
    EXPECT_EQ(rl::bindingRule(d.out.data(), 2, true), 1u);
}

/* One rule rejects: neither rule counts the request, and no key is
 * created or has its TTL refreshed. */
TEST_F(LuaScript, RejectionConsumesNothingInAnyRule) {
    const uint64_t w = 10 * kSec;
    uint64_t t = windowStart(w) + kSec;

    /* the second rule rejects */
    Rule a = fixed("10.0.0.1", 5, w);
    Rule b = sliding("10.0.0.1", 2, w);
    ASSERT_TRUE(decide({a, b}, t).allowed);
    ASSERT_TRUE(decide({a, b}, t).allowed);
    auto beforeA = state(a);
    auto beforeB = state(b);
    long long ttlA = pttl(a.key);
    Decision d = decide({a, b}, t + kMs);
    ASSERT_FALSE(d.allowed) << describe(d);
    EXPECT_EQ(d.out[0].retryMs, 0);
    EXPECT_GT(d.out[1].retryMs, 0);
    EXPECT_EQ(d.out[0].remaining, 3) << "not counted: 5 - 2 still admitted";
    EXPECT_EQ(state(a), beforeA);
    EXPECT_EQ(state(b), beforeB);
    EXPECT_LE(pttl(a.key), ttlA);
    EXPECT_EQ(beforeA.at("c"), "2");

    /* the first rule rejects */
    Rule c = fixed("10.0.0.2", 1, w);
    Rule e = sliding("10.0.0.2", 5, w);
    ASSERT_TRUE(decide({c, e}, t).allowed);
    auto beforeC = state(c);
    auto beforeE = state(e);
    d = decide({c, e}, t + kMs);
    ASSERT_FALSE(d.allowed) << describe(d);
    EXPECT_GT(d.out[0].retryMs, 0);
    EXPECT_EQ(d.out[1].retryMs, 0);
    EXPECT_EQ(d.out[1].remaining, 4) << "not counted: 5 - 1 still admitted";
    EXPECT_EQ(state(c), beforeC);
    EXPECT_EQ(state(e), beforeE);

    /* a rule without state yet stays without */
    Rule fresh = sliding("10.0.0.3", 5, w);
    d = decide({c, fresh}, t + 2 * kMs);
    ASSERT_FALSE(d.allowed) << describe(d);
    EXPECT_EQ(integerCommand({"EXISTS", fresh.key}), 0);
    d = decide({fresh, c}, t + 2 * kMs);
    ASSERT_FALSE(d.allowed) << describe(d);
    EXPECT_EQ(integerCommand({"EXISTS", fresh.key}), 0);
    EXPECT_EQ(rl::bindingRule(d.out.data(), 2, false), 1u);
}

/* A dry-run rule never rejects: what it would reject it does not count
 * (its key stays as it was), the enforced rule counts the request. */
TEST_F(LuaScript, DryRunRuleNeverRejectsAndTakesNothingWhenItWould) {
    const uint64_t w = 10 * kSec;
    uint64_t t = windowStart(w) + kSec;
    Rule real = fixed("10.9.0.1", 5, w);
    Rule dry = sliding("10.9.0.1", 2, w);
    dry.dryRun = true;
    ASSERT_TRUE(decide({real, dry}, t).allowed);
    ASSERT_TRUE(decide({real, dry}, t).allowed);
    auto before = state(dry);
    Decision d = decide({real, dry}, t + kMs);
    ASSERT_TRUE(d.allowed) << describe(d);
    EXPECT_GT(d.out[1].retryMs, 0) << "it would have rejected";
    EXPECT_EQ(d.out[0].remaining, 2) << "the enforced rule counted it";
    EXPECT_EQ(state(dry), before);
    EXPECT_EQ(state(real).at("c"), "3");
}

/* ------------------------------------------------------------------ */
/* Refunds: another zone rejected the request, give back what this
 * zone's decision counted, by the time that decision used.           */

TEST_F(LuaScript, RefundFixedWindowInTheSameWindow) {
    const uint64_t w = 10 * kSec;
    Rule rule = fixed("10.0.0.1", 2, w);
    uint64_t t = windowStart(w) + kSec;
    ASSERT_TRUE(admits(rule, t));
    ASSERT_TRUE(admits(rule, t));
    ASSERT_FALSE(admits(rule, t + kSec));
    long long ttl = pttl(rule.key);

    refund({rule}, t);
    EXPECT_EQ(state(rule).at("c"), "1");
    EXPECT_GT(pttl(rule.key), 0);
    EXPECT_LE(pttl(rule.key), ttl);
    EXPECT_TRUE(admits(rule, t + 2 * kSec));
    EXPECT_FALSE(admits(rule, t + 2 * kSec));
}

TEST_F(LuaScript, RefundFixedWindowAfterTheWindowEnded) {
    const uint64_t w = 10 * kSec;
    Rule rule = fixed("10.0.0.1", 2, w);
    uint64_t w0 = windowStart(w);
    ASSERT_TRUE(admits(rule, w0 + kSec));
    ASSERT_TRUE(admits(rule, w0 + w + kSec));
    auto before = state(rule);
    refund({rule}, w0 + kSec); /* window 0's count is gone already */
    EXPECT_EQ(state(rule), before);
    EXPECT_EQ(before.at("c"), "1");
}

TEST_F(LuaScript, RefundSlidingWindowInTheSameWindow) {
    const uint64_t w = 10 * kSec;
    Rule rule = sliding("10.0.0.1", 3, w);
    uint64_t t = windowStart(w) + kSec;
    for (int i = 0; i < 3; i++) {
        ASSERT_TRUE(admits(rule, t));
    }
    ASSERT_FALSE(admits(rule, t));
    refund({rule}, t);
    EXPECT_EQ(state(rule).at("c"), "2");
    EXPECT_TRUE(admits(rule, t + kMs));
    EXPECT_FALSE(admits(rule, t + kMs));
}

/* Counted in window 0, refunded once window 1 has begun: window 0's
 * count now weighs as the previous window's. */
TEST_F(LuaScript, RefundSlidingWindowFromThePreviousWindow) {
    const uint64_t w = 10 * kSec;
    Rule rule = sliding("10.0.0.1", 3, w);
    uint64_t w0 = windowStart(w);
    for (int i = 0; i < 3; i++) {
        ASSERT_TRUE(admits(rule, w0 + kSec));
    }
    /* 5 s into window 1: 3 * 0.5 + 0 + 1 <= 3 */
    ASSERT_TRUE(admits(rule, w0 + w + 5 * kSec));
    ASSERT_FALSE(admits(rule, w0 + w + 5 * kSec));
    refund({rule}, w0 + kSec);
    EXPECT_EQ(state(rule),
              (std::map<std::string, std::string>{
                  {"w", std::to_string(w0 / w + 1)}, {"c", "1"}, {"p", "2"}}));
    /* 2 * 0.5 + 1 + 1 <= 3 */
    EXPECT_TRUE(admits(rule, w0 + w + 5 * kSec));

    /* Two windows on, window 0 weighs nothing: nothing to refund. */
    ASSERT_TRUE(admits(rule, w0 + 2 * w + kSec));
    auto before = state(rule);
    refund({rule}, w0 + kSec);
    EXPECT_EQ(state(rule), before);
}

TEST_F(LuaScript, RefundNeverGoesBelowZeroNorCreatesState) {
    const uint64_t w = 10 * kSec;
    Rule f = fixed("10.0.0.1", 2, w);
    Rule s = sliding("10.0.0.1", 2, w);
    uint64_t t = windowStart(w) + kSec;
    ASSERT_TRUE(decide({f, s}, t).allowed);
    refund({f, s}, t);
    refund({f, s}, t);
    EXPECT_EQ(state(f).at("c"), "0");
    EXPECT_EQ(state(s).at("c"), "0");

    Rule freshF = fixed("10.0.0.9", 2, w);
    Rule freshS = sliding("10.0.0.9", 2, w);
    refund({freshF, freshS}, t);
    EXPECT_EQ(integerCommand({"EXISTS", freshF.key, freshS.key}), 0);
}

/* The module's sequence: decide on Redis' TIME, refund with the time
 * the reply gave, and every rule of the call is whole again. */
TEST_F(LuaScript, RefundWithTheDecisionsTime) {
    const uint64_t w = 30 * 86400 * kSec; /* no window ends meanwhile */
    Rule f = fixed("10.0.0.1", 1, w);
    Rule s = sliding("10.0.0.1", 1, w);
    Decision d = decide({f, s}, 0);
    ASSERT_TRUE(d.allowed) << describe(d);
    EXPECT_FALSE(decide({f, s}, 0).allowed);
    ASSERT_GT(d.nowUs, 0);
    refund({f, s}, static_cast<uint64_t>(d.nowUs));
    EXPECT_EQ(state(f).at("c"), "0");
    EXPECT_EQ(state(s).at("c"), "0");
    EXPECT_TRUE(decide({f, s}, 0).allowed);
}

/* ------------------------------------------------------------------ */
/* retry_ms, over a long deterministic walk                            */

/* Requests at pseudo-random times (sub-millisecond parts included) for
 * one fixed and one sliding rule, alone and together. Each rejection's
 * binding retry_ms is checked on copies of the state: a request that
 * much later is admitted, one millisecond earlier it is not. */
TEST_F(LuaScript, RetryAdmitsAndIsTight) {
    const uint64_t wf = 3 * kSec;
    const uint64_t ws = 10 * kSec;
    const std::vector<std::vector<Rule>> calls = {
        {fixed("walk", 5, wf)},
        {sliding("walk", 7, ws)},
        {fixed("both", 5, wf), sliding("both", 7, ws)},
        {log("walk", 4, wf)},
        {token("walk", 3, wf, 4)},
        {leaky("walk", 5, ws, 2, 2)},
        {gcra("walk", 5, ws, 3, 1), log("all", 6, ws)}};

    int rejections = 0;
    for (const std::vector<Rule>& rules : calls) {
        uint64_t t = windowStart(30 * kSec);
        uint32_t seed = 12345;
        for (int step = 0; step < 150; step++) {
            seed = seed * 1103515245u + 12345u;
            /* mostly bursts, now and then a long gap */
            uint64_t gap = (seed >> 8) % (step % 10 == 9 ? 4000000 : 700000);
            t += gap;
            Decision d = decide(rules, t);
            /* Fake time runs ahead of Redis' clock: keep the state. */
            for (const Rule& r : rules) {
                command({"PERSIST", r.key});
            }
            for (size_t i = 0; i < rules.size(); i++) {
                EXPECT_LE(d.out[i].remaining,
                          static_cast<int64_t>(rules[i].limit));
                if (d.allowed) {
                    EXPECT_EQ(d.out[i].retryMs, 0);
                }
            }
            if (d.allowed) {
                continue;
            }
            rejections++;
            size_t b = rl::bindingRule(d.out.data(), d.out.size(), false);
            uint64_t retry = static_cast<uint64_t>(d.out[b].retryMs) * kMs;
            ASSERT_GT(retry, 0u);
            Decision later = probe(rules, t + retry);
            EXPECT_TRUE(later.allowed)
                << "step " << step << " at " << t << ": " << describe(d)
                << "; at +retry " << describe(later);
            if (retry > kMs) {
                Decision early = probe(rules, t + retry - kMs);
                EXPECT_FALSE(early.allowed)
                    << "step " << step << " at " << t << ": " << describe(d)
                    << "; 1 ms before retry " << describe(early);
            }
        }
    }
    EXPECT_GT(rejections, 150); /* the walk does reach the limits */
}

/* ------------------------------------------------------------------ */
/* Batches: several requests in one call                               */

/* Requests are decided in order, each on its own time, each atomically:
 * a later one sees what an earlier one counted, a rejected one counts
 * nothing; keys expire on Redis' clock. */
TEST_F(LuaScript, BatchDecidesInOrderEachOnItsOwnTime) {
    command({"SCRIPT", "LOAD", scriptOf(false)});
    Rule g = gcra("10.0.0.9", 1, kSec, 0, 0); /* one per second */
    Rule f = fixed("10.0.0.9", 5, kDay);
    int64_t before = redisTimeUs();
    std::vector<Request> calls{{{g}, -500000},  /* 0.5 s ago */
                               {{g, f}, -1000}, /* 1 ms ago */
                               {{f}, 0}};       /* now */
    ReplyPtr r = batch(calls);
    int64_t after = redisTimeUs();
    ASSERT_NE(r, nullptr);
    ASSERT_EQ(r->type, REDIS_REPLY_STRING)
        << std::string(r->str != nullptr ? r->str : "", r->len);
    ASSERT_EQ(r->len, rl::kClockBytes + rl::replyBytes(1) +
                          rl::replyBytes(2) + rl::replyBytes(1));

    Decision a = part(r.get(), 0, calls[0]);
    Decision b = part(r.get(), rl::replyBytes(1), calls[1]);
    Decision c = part(r.get(), rl::replyBytes(1) + rl::replyBytes(2),
                      calls[2]);
    for (const Decision* d : {&a, &b, &c}) {
        ASSERT_EQ(d->status, ReplyStatus::Ok);
    }
    EXPECT_TRUE(a.allowed) << describe(a);
    EXPECT_FALSE(b.allowed) << describe(b); /* gcra: 0.5 s too early */
    EXPECT_TRUE(c.allowed) << describe(c);

    /* times: Redis' TIME of the call minus each request's age */
    int64_t now = c.nowUs;
    EXPECT_GE(now, before);
    EXPECT_LE(now, after);
    EXPECT_EQ(a.nowUs, now - 500000);
    EXPECT_EQ(b.nowUs, now - 1000);
    /* TAT = a's time + 1 s: b waits until then */
    EXPECT_EQ(b.out[0].retryUs, 501000);
    /* b counted nothing in f: c is f's first */
    EXPECT_EQ(b.out[1].remaining, 5);
    EXPECT_EQ(c.out[0].remaining, 4);
    EXPECT_EQ(state(f).at("c"), "1");
    /* g's key lives until the TAT on Redis' clock: 0.5 s, not 1 s */
    long long ttl = pttl(g.key);
    EXPECT_GT(ttl, 400);
    EXPECT_LE(ttl, 501);
}

/* A bad request fails the whole call with an error reply, before any
 * write: one cut short, or naming a key or spec the call does not have. */
TEST_F(LuaScript, BatchWithABadRequestIsAnErrorReply) {
    command({"SCRIPT", "LOAD", scriptOf(false)});
    Rule f = fixed("10.0.0.9", 5, kDay);
    std::vector<std::string> good =
        callArgv({{{f}, 0}, {{f}, 0}}, true, false);
    /* EVALSHA sha 2 key block-key head spec (across slots: 0 for 2,
     * and the map last) */
    const size_t head = headArg(1);
    ASSERT_EQ(good.size(), head + (acrossSlots() ? 3 : 2));

    std::vector<std::string> cut = good;
    cut[head].resize(cut[head].size() - 8);
    std::vector<std::string> noKey = good;
    unsigned char* p = reinterpret_cast<unsigned char*>(noKey[head].data());
    /* KEYS[2], the block key of KEYS[1]: no state key */
    rl::ruleRecord(p + rl::requestBytes(0), 2, 1, 1);
    std::vector<std::string> noSpec = good;
    p = reinterpret_cast<unsigned char*>(noSpec[head].data());
    rl::ruleRecord(p + rl::requestBytes(0), 1, 2, 1); /* spec 2 */
    for (const auto& argv : {cut, noKey, noSpec}) {
        ReplyPtr r = command(argv);
        ASSERT_NE(r, nullptr);
        EXPECT_EQ(r->type, REDIS_REPLY_ERROR);
        EXPECT_NE(std::string(r->str != nullptr ? r->str : "", r->len)
                      .find("bad arguments"),
                  std::string::npos);
    }
    EXPECT_EQ(integerCommand({"EXISTS", f.key}), 0);
}

/* The requests of a call on one key share one GET and one SET (the
 * hot-key case: a global limit, a busy client), and decide exactly as
 * if each had read and written the key itself: the fourth of four on a
 * limit of three is rejected, the key holds three, and it lives as long
 * as the last TTL set says. */
TEST_F(LuaScript, BatchOnOneKeyReadsAndWritesItOnce) {
    command({"SCRIPT", "LOAD", scriptOf(false)});
    Rule s = sliding("10.0.0.7", 3, 10 * kSec);
    Rule f = fixed("10.0.0.8", 5, 10 * kSec);
    command({"CONFIG", "RESETSTAT"});
    std::vector<Request> calls{{{s}, -40}, {{s, f}, -30}, {{s}, -20},
                               {{s}, -10}, {{f}, 0}};
    std::vector<Decision> d;
    ASSERT_NO_FATAL_FAILURE(decideBatch(calls, &d));
    EXPECT_TRUE(d[0].allowed && d[1].allowed && d[2].allowed);
    EXPECT_FALSE(d[3].allowed) << describe(d[3]);
    EXPECT_TRUE(d[4].allowed);
    EXPECT_EQ(d[2].out[0].remaining, 0);
    EXPECT_EQ(d[4].out[0].remaining, 3); /* f: d[1] and d[4] */
    /* two keys: read with their blocks (one MGET for the call; across
     * slots, one a slot: theirs are two) and each written once,
     * whatever the number of requests */
    EXPECT_EQ(commandCalls("mget"), acrossSlots() ? 2 : 1);
    EXPECT_EQ(commandCalls("get"), 0);
    EXPECT_EQ(commandCalls("set"), 2);
    EXPECT_EQ(state(s).at("c"), "3");
    EXPECT_EQ(state(f).at("c"), "2");
    long long ttl = pttl(s.key);
    EXPECT_GT(ttl, 10000); /* until the next window ends */
    EXPECT_LE(ttl, 20001);
}

/* From its third request in a call on one key, a request updates the
 * key's numbers in place (lua/rl.lua): the key still ends where the
 * last request's write says. gcra sets a TTL on every write: after four
 * requests 10 us apart at 10 r/s, the TAT is 0.4 s after the first. */
TEST_F(LuaScript, BatchOnOneKeyKeepsTheLastWritesTtl) {
    command({"SCRIPT", "LOAD", scriptOf(false)});
    Rule g = gcra("10.0.0.6", 10, kSec, 5, 5);
    std::vector<Request> calls{{{g}, -40}, {{g}, -30}, {{g}, -20},
                               {{g}, -10}};
    std::vector<Decision> d;
    auto before = std::chrono::steady_clock::now();
    ASSERT_NO_FATAL_FAILURE(decideBatch(calls, &d));
    for (const Decision& one : d) {
        EXPECT_TRUE(one.allowed) << describe(one);
    }
    /* the last write: TAT - its time = 0.4 s - 30 us, in ms rounded up,
     * plus 1 ms */
    long long ttl = pttl(g.key);
    /* 400 ms when written, less what passed until the read (a loaded
     * host's, the sanitizers': 15 ms and more) */
    auto passed = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - before)
                      .count();
    EXPECT_GE(ttl, 400 - passed - 1) << passed << " ms passed";
    EXPECT_LE(ttl, 401);
}

/* Stacked rules in a batch on one client: each rule's key is read and
 * written once, and from its third request a rule's numbers are
 * updated in place (lua/rl.lua), TTL included; a request one rule
 * rejects counts in none. gcra admits all five (10 r/s, burst 5), the
 * sliding window four: gcra's TAT is the fourth's, 0.4 s after the
 * first (0.5 s had the fifth counted, 0.2 s had the third and fourth
 * writes lost their TTL). */
TEST_F(LuaScript, BatchOfStackedRulesOnOneClient) {
    command({"SCRIPT", "LOAD", scriptOf(false)});
    Rule g = gcra("10.0.0.3", 10, kSec, 5, 5);
    Rule s = sliding("10.0.0.3", 4, 10 * kSec);
    command({"CONFIG", "RESETSTAT"});
    std::vector<Request> calls{{{g, s}, -50}, {{g, s}, -40}, {{g, s}, -30},
                               {{g, s}, -20}, {{g, s}, -10}};
    std::vector<Decision> d;
    auto before = std::chrono::steady_clock::now();
    ASSERT_NO_FATAL_FAILURE(decideBatch(calls, &d));
    for (size_t i = 0; i < 4; i++) {
        EXPECT_TRUE(d[i].allowed) << i << ": " << describe(d[i]);
    }
    EXPECT_FALSE(d[4].allowed) << describe(d[4]);
    EXPECT_EQ(d[4].out[0].retryMs, 0) << describe(d[4]); /* gcra: yes */
    EXPECT_GT(d[4].out[1].retryMs, 0) << describe(d[4]);
    EXPECT_EQ(commandCalls("mget"), 1);
    EXPECT_EQ(commandCalls("get"), 0);
    EXPECT_EQ(commandCalls("set"), 2);
    EXPECT_EQ(state(s).at("c"), "4");
    long long ttl = pttl(g.key);
    /* 400 ms when written, less what passed until the read (a loaded
     * host's, the sanitizers': 15 ms and more) */
    auto passed = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - before)
                      .count();
    EXPECT_GE(ttl, 400 - passed - 1) << passed << " ms passed";
    EXPECT_LE(ttl, 401);
}

/* SPEC: X-RateLimit-Reset is until the rule frees capacity when it has
 * none left: a request that leaves a bucket empty gets the time to its
 * next token, not to a full bucket, in a batch on one key (where the
 * state is the call's own table from the third request) and for stacked
 * rules (whose writes come after every check). */
TEST_F(LuaScript, ResetWhenAnAdmissionLeavesNothing) {
    command({"SCRIPT", "LOAD", scriptOf(false)});
    Rule b = token("10.0.0.6", 3, 60 * kSec, 3);
    std::vector<Request> one{{{b}, -40}, {{b}, -30}, {{b}, -20},
                             {{b}, -10}};
    std::vector<Decision> d;
    ASSERT_NO_FATAL_FAILURE(decideBatch(one, &d));
    std::vector<int64_t> reset, left;
    for (const Decision& x : d) {
        reset.push_back(x.out[0].resetMs);
        left.push_back(x.out[0].remaining);
    }
    EXPECT_EQ(left, (std::vector<int64_t>{2, 1, 0, 0}));
    EXPECT_EQ(reset, (std::vector<int64_t>{20000, 40000, 20000, 20000}));

    Rule w = sliding("10.0.0.7", 100, 60 * kSec);
    Rule b2 = token("10.0.0.7", 3, 60 * kSec, 3);
    std::vector<Request> stacked{{{w, b2}, -40}, {{w, b2}, -30},
                                 {{w, b2}, -20}, {{w, b2}, -10}};
    d.clear();
    ASSERT_NO_FATAL_FAILURE(decideBatch(stacked, &d));
    reset.clear();
    for (const Decision& x : d) {
        reset.push_back(x.out[1].resetMs);
    }
    EXPECT_EQ(reset, (std::vector<int64_t>{20000, 40000, 20000, 20000}));
    /* the window has plenty left: until whole, past this window */
    EXPECT_GT(d[2].out[0].resetMs, 60000) << describe(d[2]);
    EXPECT_FALSE(d[3].allowed);
}

/* A key holding what the script never writes is no state, whatever its
 * length: a value of 0 to 3 bytes once failed every call on the key (it
 * was taken for the call's own table of numbers). */
TEST_F(LuaScript, ForeignValuesAreNoState) {
    command({"SCRIPT", "LOAD", scriptOf(false)});
    Rule f = fixed("10.0.0.5", 2, kDay);
    for (const std::string& v :
         std::vector<std::string>{"", "x", "abc", "abcd", std::string(40, 'z')}) {
        command({"SET", f.key, v});
        SCOPED_TRACE("value of " + std::to_string(v.size()) + " bytes");
        std::vector<Request> calls{{{f}, -20}, {{f}, -10}, {{f}, 0}};
        std::vector<Decision> d;
        ASSERT_NO_FATAL_FAILURE(decideBatch(calls, &d));
        std::vector<bool> admitted;
        for (const Decision& one : d) {
            admitted.push_back(one.allowed);
        }
        EXPECT_EQ(admitted, (std::vector<bool>{true, true, false}));
    }
}

/* SPEC: changing N keeps current usage. A meter's tokens or level are
 * in units that depend on N; the state keeps them, and a rule of
 * another N reads them as whole requests (before, 100r/h -> 99r/h read
 * 50 tokens as 4). */
TEST_F(LuaScript, MetersKeepUsageWhenNChanges) {
    uint64_t t = windowStart(kDay) + 5;
    Rule b = token("10.0.0.4", 100, 3600 * kSec, 100);
    b.cost = 50;
    ASSERT_TRUE(decide({b}, t).allowed);
    b = token("10.0.0.4", 99, 3600 * kSec, 99);
    Decision d = decide({b}, t);
    ASSERT_TRUE(d.allowed) << describe(d);
    EXPECT_EQ(d.out[0].remaining, 49); /* 50 left, less this one's 1 */

    Rule l = leaky("10.0.0.4", 101, kSec, 10, 10);
    for (int i = 0; i < 5; i++) {
        ASSERT_TRUE(decide({l}, t).allowed);
    }
    l = leaky("10.0.0.4", 100, kSec, 10, 10);
    d = decide({l}, t);
    ASSERT_TRUE(d.allowed) << describe(d);
    EXPECT_EQ(d.out[0].remaining, 5);  /* 11 deep, 5 queued, then 1 */
}

/* A refund reads every request before it gives anything back: one bad
 * request and nothing is refunded. */
TEST_F(LuaScript, RefundWithABadRequestGivesNothingBack) {
    Rule f = fixed("10.0.0.9", 5, kDay);
    uint64_t t = windowStart(kDay);
    ASSERT_TRUE(admits(f, t));
    ASSERT_TRUE(admits(f, t));
    std::vector<std::string> argv = callArgv(
        {{{f}, static_cast<int64_t>(t)}, {{f}, static_cast<int64_t>(t)}},
        false, true);
    /* the second request cut short */
    argv[headArg(1)].resize(argv[headArg(1)].size() - 8);
    ReplyPtr r = command(argv);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->type, REDIS_REPLY_ERROR);
    EXPECT_EQ(state(f).at("c"), "2");
}

/* SPEC section 4: a manual block, the string PREFIX{VALUE}, rejects every rule
 * of that key value while it exists, counts nothing, and says to retry
 * when it ends (at most a minute: it is read again by then); other key
 * values, and a refund, are not concerned. */
TEST_F(LuaScript, BlockRejectsEveryRuleOfItsValueUntilItEnds) {
    uint64_t t = windowStart(kDay) + 5;
    Rule f = fixed("10.0.1.1", 100, kDay);
    Rule s = sliding("10.0.1.1", 100, 60 * kSec);
    Rule other = fixed("10.0.1.2", 100, kDay);
    const std::string block = "rl:{10.0.1.1}";
    command({"SET", block, "1", "PX", "5000"});

    Decision d = decide({f, s}, t);
    ASSERT_FALSE(d.allowed) << describe(d);
    for (const RuleOutcome& o : d.out) {
        EXPECT_EQ(o.remaining, 0) << describe(d);
        EXPECT_GT(o.retryMs, 3000) << describe(d);
        EXPECT_LE(o.retryMs, 5001) << describe(d);
        EXPECT_EQ(o.resetMs, o.retryMs) << describe(d);
    }
    d = decide({f}, t);
    EXPECT_FALSE(d.allowed) << describe(d);
    ReplyPtr got = command({"EXISTS", f.key, s.key});
    ASSERT_NE(got, nullptr);
    EXPECT_EQ(got->integer, 0) << "a blocked request counted";
    EXPECT_TRUE(admits(other, t));

    /* a dry-run rule reports the block and rejects nothing */
    Rule dry = fixed("10.0.1.1", 100, kDay);
    dry.dryRun = true;
    d = decide({dry}, t);
    EXPECT_TRUE(d.allowed) << describe(d);
    EXPECT_GT(d.out[0].retryMs, 0) << describe(d);

    /* no TTL, or a long one: read again within a minute */
    command({"PERSIST", block});
    d = decide({f}, t);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.out[0].retryMs, 60000) << describe(d);
    command({"EXPIRE", block, "86400"});
    d = decide({f}, t);
    EXPECT_EQ(d.out[0].retryMs, 60000) << describe(d);
    /* just under a minute: what it has left, not a minute */
    command({"PEXPIRE", block, "59500"});
    d = decide({f}, t);
    EXPECT_GT(d.out[0].retryMs, 58000) << describe(d);
    EXPECT_LE(d.out[0].retryMs, 59501) << describe(d);

    /* one blocked value in a batch rejects its requests alone */
    std::vector<Decision> b;
    ASSERT_NO_FATAL_FAILURE(decideBatch(
        {{{other}, -30}, {{f}, -20}, {{other, f}, -10}, {{other}, 0}}, &b));
    EXPECT_TRUE(b[0].allowed);
    EXPECT_FALSE(b[1].allowed);
    EXPECT_FALSE(b[2].allowed);
    EXPECT_EQ(b[2].out[0].retryMs, 0) << describe(b[2]);
    EXPECT_TRUE(b[3].allowed);

    /* sliding_log reads it too; a key of another type is no block */
    Rule l = log("10.0.1.1", 100, 60 * kSec);
    EXPECT_FALSE(decide({l}, t).allowed);
    command({"DEL", block});
    command({"HSET", block, "f", "1"});
    EXPECT_TRUE(admits(l, t));
    EXPECT_TRUE(admits(f, t));
    command({"DEL", block});
    EXPECT_TRUE(admits(f, t));
    EXPECT_TRUE(admits(s, t));
    EXPECT_EQ(state(f).at("c"), "2");

    /* a refund gives back what was counted, block or not */
    command({"SET", block, "1"});
    ReplyPtr r = command(callArgv({{{f}, static_cast<int64_t>(t)}}, false,
                                  true));
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->type, REDIS_REPLY_INTEGER);
    EXPECT_EQ(state(f).at("c"), "1");
}

/* "limit NAME=N ..." in PREFIX{VALUE}: the rules of that name decide
 * that key value with limit N, and the reply says so */
TEST_F(LuaScript, OverrideGivesTheNamedRulesAnotherLimitForItsValue) {
    uint64_t t = windowStart(kDay) + 5;
    Rule f = fixed("10.0.2.1", 2, kDay);
    f.name = "api";
    Rule s = sliding("10.0.2.1", 100, 60 * kSec);
    s.name = "api.v2%";  /* pattern characters, compared as they are */
    Rule other = fixed("10.0.2.2", 2, kDay);
    other.name = "api";
    const std::string ovr = "rl:{10.0.2.1}";
    command({"SET", ovr, "LIMIT\tx=1 api=5  api.v2%=7 api=9\n"});

    for (int64_t left = 5; left > 0; left--) {
        Decision d = decide({f, s}, t);
        ASSERT_TRUE(d.allowed) << describe(d);
        EXPECT_EQ(d.out[0].remaining, left - 1) << describe(d);
        EXPECT_EQ(d.out[0].limit, 5);
        EXPECT_EQ(d.out[1].limit, 7);
    }
    Decision d = decide({f}, t);
    EXPECT_FALSE(d.allowed) << describe(d);
    EXPECT_EQ(d.out[0].limit, 5);
    /* another value keeps the rule's own: limit 0 in the reply */
    d = decide({other}, t);
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.out[0].limit, 0);
    EXPECT_EQ(d.out[0].remaining, 1);

    /* in a batch, each rule's record says which rule it is */
    std::vector<Decision> b;
    ASSERT_NO_FATAL_FAILURE(decideBatch(
        {{{other}, static_cast<int64_t>(t)},
         {{s}, static_cast<int64_t>(t)},
         {{other, s}, static_cast<int64_t>(t)},
         {{f}, static_cast<int64_t>(t)}}, &b));
    EXPECT_EQ(b[0].out[0].limit, 0);
    EXPECT_EQ(b[1].out[0].limit, 7);
    EXPECT_EQ(b[2].out[0].limit, 0);
    EXPECT_EQ(b[2].out[1].limit, 7);
    EXPECT_EQ(b[3].out[0].limit, 5);
    EXPECT_FALSE(b[3].allowed);

    /* a name that only ends like the rule's, or an N that is no whole
     * number from 1 to 1e9: the rule's own limit; lifted: its own again,
     * with what was counted */
    for (const char* v : {"limit xapi=50", "limit api=0", "limit api=abc",
                          "limit api=5.5", "limit api=", "limit api=-3",
                          "limit api=2000000000", "limit API=50",
                          "limit my api x=api=50"}) {
        command({"SET", ovr, v});
        d = decide({f}, t);
        EXPECT_FALSE(d.allowed) << v << ": " << describe(d);
        EXPECT_EQ(d.out[0].limit, 0) << v;
    }
    command({"SET", ovr, "limit api=8"});
    EXPECT_TRUE(admits(f, t));
    command({"DEL", ovr});
    d = decide({f}, t);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(state(f).at("c"), "6");
}

/* token_bucket without burst=: its capacity follows the override; with
 * burst=, the rate alone; a refund gives back in the override's terms */
TEST_F(LuaScript, OverrideOfATokenBucketAndItsRefund) {
    uint64_t t = windowStart(kDay) + 5;
    Rule follows = token("10.0.2.3", 2, kSec, 2);
    follows.name = "tb";
    follows.burstFollows = true;
    Rule fixedBurst = token("10.0.2.3", 2, 2 * kSec, 2);
    fixedBurst.name = "tb2";
    command({"SET", "rl:{10.0.2.3}", "limit tb=10 tb2=10"});

    Decision d = decide({follows}, t);
    ASSERT_TRUE(d.allowed) << describe(d);
    EXPECT_EQ(d.out[0].remaining, 9);
    EXPECT_EQ(d.out[0].limit, 10);
    refund({follows}, t);
    d = decide({follows}, t);
    EXPECT_EQ(d.out[0].remaining, 9) << "the refund filled a bucket of 2";

    d = decide({fixedBurst}, t);
    EXPECT_EQ(d.out[0].remaining, 1) << describe(d);
    EXPECT_EQ(d.out[0].limit, 10);
    EXPECT_TRUE(admits(fixedBurst, t));
    EXPECT_FALSE(admits(fixedBurst, t));
    /* 10 per 2 s: one more after 200 ms */
    EXPECT_TRUE(admits(fixedBurst, t + 200 * kMs + 1));

    /* sliding_log: at most 1e5 */
    Rule l = log("10.0.2.4", 1, 60 * kSec);
    l.name = "log";
    command({"SET", "rl:{10.0.2.4}", "limit log=100001"});
    EXPECT_TRUE(admits(l, t));
    EXPECT_FALSE(admits(l, t));
    command({"SET", "rl:{10.0.2.4}", "limit log=3"});
    EXPECT_TRUE(admits(l, t));
    EXPECT_TRUE(admits(l, t));
    EXPECT_FALSE(admits(l, t));
}

/* Rules of one state key may come with several specs in one call (a
 * dry run by rl_dry_run, one name= in places of other limits): each is
 * decided with what the override gives its own spec */
TEST_F(LuaScript, OverrideIsReadForEachSpecOfAStateKey) {
    uint64_t t = windowStart(kDay) + 5;
    Rule api = fixed("10.0.2.5", 5, kDay);
    api.name = "api";
    Rule apiDry = api;
    apiDry.dryRun = true;
    Rule daily = fixed("10.0.2.5", 100, kDay);
    daily.name = "daily";
    daily.key = stateKey("10.0.2.5", "d", "fixed_window", kDay);
    command({"SET", "rl:{10.0.2.5}", "limit api=1"});
    const auto at = static_cast<int64_t>(t);

    std::vector<Decision> b;
    ASSERT_NO_FATAL_FAILURE(
        decideBatch({{{apiDry, daily}, at}, {{api, daily}, at}}, &b));
    EXPECT_TRUE(b[0].allowed) << describe(b[0]);
    EXPECT_FALSE(b[1].allowed) << describe(b[1]);
    EXPECT_EQ(b[1].out[0].limit, 1);
    EXPECT_EQ(state(daily).at("c"), "1") << "a rejected request counted";

    b.clear();
    ASSERT_NO_FATAL_FAILURE(
        decideBatch({{{api, daily}, at}, {{apiDry, daily}, at}}, &b));
    EXPECT_FALSE(b[0].allowed) << describe(b[0]);
    EXPECT_TRUE(b[1].allowed) << "a dry run rejects nothing";
    EXPECT_GT(b[1].out[0].retryMs, 0) << describe(b[1]);
    EXPECT_EQ(state(daily).at("c"), "2");

    /* one name, limits 5 and 2: "api=5" changes the second alone */
    Rule five = fixed("10.0.2.6", 5, kDay);
    five.name = "api";
    Rule two = five;
    two.limit = 2;
    command({"SET", "rl:{10.0.2.6}", "limit api=5"});
    b.clear();
    ASSERT_NO_FATAL_FAILURE(decideBatch(
        {{{five}, at}, {{two}, at}, {{two}, at}, {{two}, at}}, &b));
    for (size_t i = 0; i < b.size(); i++) {
        EXPECT_TRUE(b[i].allowed) << i << ": " << describe(b[i]);
        EXPECT_EQ(b[i].out[0].limit, i == 0 ? 0 : 5) << i;
    }
}

}  // namespace

/* ------------------------------------------------------------------ */
/* concurrency= (lua/concurrency.lua) in batches                       */

/* Five requests of one key in one call, 3 slots: three admitted, each
 * seeing the ones before it, two rejected taking nothing; the key is
 * counted once (ZCOUNT), written once (ZADD of three members, one
 * PEXPIRE); the slots expire a hold after each request's time. */
TEST_F(LuaScript, ConcurrencyBatchOnOneKey) {
    command({"SCRIPT", "LOAD", scriptOf(false)});
    const uint64_t hold = 10 * kSec;
    std::vector<Request> calls;
    for (uint64_t slot = 1; slot <= 5; slot++) {
        calls.push_back({{inflight("conc", 3, hold, slot)},
                         -static_cast<int64_t>(50 - 10 * slot)});
    }
    command({"CONFIG", "RESETSTAT"});
    int64_t before = redisTimeUs();
    std::vector<Decision> d;
    ASSERT_NO_FATAL_FAILURE(decideBatch(calls, &d));
    int64_t after = redisTimeUs();
    std::string got;
    for (const Decision& one : d) {
        got += (one.allowed ? "ok " : "no ") +
               std::to_string(one.out[0].remaining) + " " +
               std::to_string(one.out[0].retryMs) + ", ";
    }
    EXPECT_EQ(got, "ok 2 0, ok 1 0, ok 0 0, no 0 100, no 0 100, ");
    EXPECT_EQ(d[2].out[0].resetMs, 100); /* nothing left: a slot's retry */
    EXPECT_EQ(commandCalls("zcount"), 1);
    EXPECT_EQ(commandCalls("zadd"), 1);
    EXPECT_EQ(commandCalls("pexpire"), 1);
    std::string key = calls[0].first[0].key;
    auto held = slots(key);
    ASSERT_EQ(held.size(), 3u);
    for (uint64_t slot = 1; slot <= 3; slot++) {
        ASSERT_EQ(held.count(slot), 1u) << slot;
        /* its time: Redis' clock less its wait (40, 30, 20 us) */
        long long at = held[slot] - static_cast<long long>(hold);
        EXPECT_GE(at, before - static_cast<int64_t>(50 - 10 * slot));
        EXPECT_LE(at, after);
    }
    long long ttl = pttl(key);
    EXPECT_GT(ttl, 9000);
    EXPECT_LE(ttl, 10001);

    /* one call releases two and renews the third: one ZREM, one ZADD */
    command({"CONFIG", "RESETSTAT"});
    refund({inflight("conc", 3, hold, 1), inflight("conc", 3, hold, 2)},
           static_cast<uint64_t>(redisTimeUs()));
    refund({inflight("conc", 3, hold, 3)}, 0, rl::CallKind::Renew);
    EXPECT_EQ(commandCalls("zrem"), 1);
    held = slots(key);
    ASSERT_EQ(held.size(), 1u);
    EXPECT_GE(held[3] - static_cast<long long>(hold), after);
}

/* Slots Redis lost while their requests run (the key gone: a restart
 * without persistence, FLUSHALL; one member gone): the renewal puts
 * them back, a hold from its time, and the key expires with them; a
 * slot held later than the renewal's time keeps its own. */
TEST_F(LuaScript, ConcurrencyRenewalPutsBackLostSlots) {
    command({"SCRIPT", "LOAD", scriptOf(false)});
    const uint64_t hold = 10 * kSec;
    uint64_t t = static_cast<uint64_t>(redisTimeUs());
    decide({inflight("lost", 3, hold, 1)}, t);
    decide({inflight("lost", 3, hold, 2)}, t);
    std::string key = inflight("lost", 3, hold, 1).key;
    command({"FLUSHALL"});
    refund({inflight("lost", 3, hold, 1), inflight("lost", 3, hold, 2)},
           t + kSec, rl::CallKind::Renew);
    auto held = slots(key);
    ASSERT_EQ(held.size(), 2u);
    EXPECT_EQ(held[1], static_cast<long long>(t + kSec + hold));
    EXPECT_EQ(held[2], static_cast<long long>(t + kSec + hold));
    long long ttl = pttl(key);
    EXPECT_GT(ttl, 0) << "the key made again expires";
    EXPECT_LE(ttl, 10001);

    /* one member lost, the other held until later: put back, and kept */
    command({"ZREM", key, std::string(8, '\0').replace(0, 1, "\x01")});
    decide({inflight("lost", 3, hold, 3)}, t + 5 * kSec);
    refund({inflight("lost", 3, hold, 1), inflight("lost", 3, hold, 3)},
           t + 2 * kSec, rl::CallKind::Renew);
    held = slots(key);
    ASSERT_EQ(held.size(), 3u);
    EXPECT_EQ(held[1], static_cast<long long>(t + 2 * kSec + hold));
    EXPECT_EQ(held[3], static_cast<long long>(t + 5 * kSec + hold));
}

/* Requests of one call on one key, their times out of order: the key is
 * counted again at an earlier time (where more slots were still held),
 * never later. A slot expired by one request's time and not by an
 * earlier one's counts for both. */
TEST_F(LuaScript, ConcurrencyBatchCountsAtItsEarliestTime) {
    command({"SCRIPT", "LOAD", scriptOf(false)});
    const uint64_t hold = kSec;
    int64_t t = static_cast<int64_t>(windowStart(kDay)) + 7;
    /* two slots held, one ending at t + 1 s, the other at t + 3 s */
    decide({inflight("order", 2, hold, 1)}, static_cast<uint64_t>(t));
    decide({inflight("order", 2, hold, 2)}, static_cast<uint64_t>(t) + 2 * kSec);
    command({"CONFIG", "RESETSTAT"});
    std::vector<Request> calls{
        {{inflight("order", 2, hold, 3)}, t + 1500 * 1000},  /* 1 expired */
        {{inflight("order", 2, hold, 4)}, t + 500 * 1000}};  /* both held */
    std::vector<Decision> d;
    ASSERT_NO_FATAL_FAILURE(decideBatch(calls, &d));
    EXPECT_TRUE(d[0].allowed) << describe(d[0]);
    EXPECT_FALSE(d[1].allowed) << describe(d[1]);
    EXPECT_EQ(commandCalls("zcount"), 2);
}

/* ------------------------------------------------------------------ */
/* charges (charge=) in batches                                        */

/* Charges of one call on one key add up, read and written once; a call
 * with one below 0 (given back, as a refund) reads and writes record by
 * record, and adds up the same. */
TEST_F(LuaScript, ChargesOfOneCallAddUp) {
    Rule f = fixed("charged", 100, kDay);
    Rule t = token("charged", 100, kDay, 100);
    int64_t now = redisTimeUs();
    decide({f, t}, static_cast<uint64_t>(now));
    std::vector<Request> calls;
    for (int64_t units : {30, 5, 12}) {
        Rule cf = f, ct = t;
        cf.charge = units;
        ct.charge = units;
        calls.push_back({{cf, ct}, 0});
    }
    command({"CONFIG", "RESETSTAT"});
    ReplyPtr r = command(callArgv(calls, false, false, {},
                                  rl::CallKind::Charge));
    ASSERT_EQ(r->type, REDIS_REPLY_INTEGER);
    /* each key once, with its override (across slots: each slot once,
     * before anything is written; theirs is one) */
    EXPECT_EQ(commandCalls("mget"),
              acrossSlots() && rl::keySlot(f.key) == rl::keySlot(t.key)
                  ? 1 : 2);
    EXPECT_EQ(commandCalls("set"), 2);      /* and written once */
    EXPECT_EQ(commandCalls("get"), 0);
    EXPECT_EQ(state(f).at("c"), "48");
    EXPECT_EQ(probe({t}, 0).out[0].remaining, 100 - 1 - 47 - 1);

    calls[1].first[0].charge = -20;
    calls[1].first[1].charge = -20;
    r = command(callArgv(calls, false, false, {}, rl::CallKind::Charge));
    ASSERT_EQ(r->type, REDIS_REPLY_INTEGER);
    EXPECT_EQ(state(f).at("c"), "70");      /* 48 + 30 - 20 + 12 */
    EXPECT_EQ(probe({t}, 0).out[0].remaining, 100 - 1 - 69 - 1);
}

/* A concurrency rule's record of slot 0 (a cost of 0: the operator
 * API's read) counts the slots and holds none. */
TEST_F(LuaScript, ConcurrencyReadHoldsNothing) {
    const uint64_t hold = 10 * kSec;
    Rule held = inflight("read", 3, hold, 7);
    decide({held}, 0);
    Rule read = inflight("read", 3, hold, 0);
    read.cost = 0;
    Decision d = decide({read}, 0);
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.out[0].remaining, 2);
    EXPECT_EQ(slots(held.key).size(), 1u);
}
