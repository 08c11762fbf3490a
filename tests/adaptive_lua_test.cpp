/* concurrency=auto's law in Redis (lua/adaptive.lua) against the core's
 * (src/core/adaptive.hpp): the same samples, interval after interval,
 * give the same N and baseline, to the last bit; and what the script
 * keeps and answers (the fleet's samples summed, one step per interval
 * whoever calls, the history, N pinned, the slots' in-flight). */
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/adaptive.hpp"
#include "redis_fixture.hpp"

namespace rltest {
namespace {

using rl::adaptive::Params;
using rl::adaptive::Samples;
using rl::adaptive::State;

constexpr uint64_t kStart = 1700000000ULL * 1000000ULL;
const char* const kKey = "rl:{backend}:0123456789abcdef:a";
const char* const kSlots = "rl:{backend}:0123456789abcdef";

struct Answer {
    double n = -1, p50 = 0, p90 = 0, baseline = 0, inflight = 0, changed = 0;
    std::vector<std::array<double, 4>> points;
};

class AdaptiveLua : public ScriptFixture {
protected:
    std::string pack(const Samples& s) {
        std::string out;
        auto put = [&](double v) {
            unsigned char b[8];
            rl::putDouble(b, v);
            out.append(reinterpret_cast<char*>(b), 8);
        };
        put(static_cast<double>(s.count));
        put(static_cast<double>(s.overloaded));
        put(static_cast<double>(s.limited));
        for (size_t i = 0; i < rl::adaptive::kBuckets; i++) {
            if (s.hist[i] > 0) {
                put(static_cast<double>(i));
                put(s.hist[i]);
            }
        }
        return out;
    }

    /* one call of the script at time now (us) */
    Answer call(const Params& p, const Samples& s, uint64_t now,
                uint64_t pinned = 0, uint64_t since = 0) {
        std::vector<std::string> args = {
            "EVAL", std::string(rl::adaptiveScriptText()), "2", kKey, kSlots,
            std::to_string(p.min), std::to_string(p.max),
            std::to_string(p.targetUs), std::to_string(pinned),
            std::to_string(since), pack(s), std::to_string(now)};
        ReplyPtr r = command(args);
        Answer a;
        EXPECT_TRUE(r && r->type == REDIS_REPLY_STRING)
            << (r && r->str ? r->str : "no reply");
        if (!r || r->type != REDIS_REPLY_STRING || r->len < 48) {
            return a;
        }
        a.n = rl::doubleAt(r->str, 0);
        a.p50 = rl::doubleAt(r->str, 1);
        a.p90 = rl::doubleAt(r->str, 2);
        a.baseline = rl::doubleAt(r->str, 3);
        a.inflight = rl::doubleAt(r->str, 4);
        a.changed = rl::doubleAt(r->str, 5);
        for (size_t at = 48; at + 32 <= r->len; at += 32) {
            a.points.push_back({rl::doubleAt(r->str, at / 8),
                                rl::doubleAt(r->str, at / 8 + 1),
                                rl::doubleAt(r->str, at / 8 + 2),
                                rl::doubleAt(r->str, at / 8 + 3)});
        }
        return a;
    }

    /* From the first call (which starts the interval), an interval at
     * a time: its samples amid it, a call that closes it at its end;
     * the next one starts then, or, N cut, once the samples of the N
     * before are in (staleUs). */
    uint64_t start_ = kStart;
    double n_ = -1;
    Answer begin(const Params& p, uint64_t pinned = 0) {
        start_ = kStart;
        Answer a = call(p, Samples{}, start_, pinned);
        n_ = a.n;
        return a;
    }
    Answer step(const Params& p, const Samples& s, uint64_t pinned = 0) {
        call(p, s, start_ + rl::adaptive::kIntervalUs / 2, pinned);
        uint64_t end = start_ + rl::adaptive::kIntervalUs;
        Answer a = call(p, Samples{}, end, pinned);
        start_ = end + (a.n < n_ ? static_cast<uint64_t>(std::ceil(
                                        rl::adaptive::staleUs(a.p90, 1)))
                                  : 0);
        n_ = a.n;
        return a;
    }

    /* an interval in front of capacity c, N in flight */
    static Samples interval(uint64_t n, double c, int64_t s, int over = 0) {
        Samples out;
        double latency = static_cast<double>(s) *
                         std::max(1.0, static_cast<double>(n) / c);
        int64_t count = static_cast<int64_t>(
            std::min(static_cast<double>(n), c) * 1e6 /
            static_cast<double>(s));
        for (int64_t i = 0; i < count; i++) {
            double j = 0.93 + 0.14 * static_cast<double>(i % 13) / 12;
            out.add(static_cast<int64_t>(latency * j), i % 100 < over);
        }
        out.limited = 1;
        return out;
    }
};

TEST_F(AdaptiveLua, SameLawAsTheCore) {
    struct Case {
        Params p;
        std::vector<double> capacity;
        int overloaded;
    };
    Params target;
    target.targetUs = 80000;
    Params narrow;
    narrow.min = 2;
    narrow.max = 12;
    std::vector<Case> cases = {
        {Params{}, {8, 8, 8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 16, 16, 16, 16}, 0},
        {target, {8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 3, 3, 3, 3, 3}, 0},
        {narrow, {100, 100, 100, 100, 1, 1, 1, 1}, 0},
        {Params{}, {1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000}, 0},
        {Params{}, {8, 8, 8, 8, 8, 8}, 20},
    };
    for (size_t c = 0; c < cases.size(); c++) {
        command({"FLUSHALL"});
        const Case& k = cases[c];
        State core;
        Answer a = begin(k.p);
        ASSERT_EQ(a.n, static_cast<double>(k.p.min));
        for (size_t i = 0; i < k.capacity.size(); i++) {
            Samples s = interval(rl::adaptive::limitOf(k.p, core),
                                 k.capacity[i], 50000, k.overloaded);
            core = rl::adaptive::update(k.p, core, s);
            a = step(k.p, s);
            ASSERT_EQ(a.n, static_cast<double>(core.limit))
                << "case " << c << " interval " << i;
            ASSERT_EQ(a.baseline, core.baselineUs)
                << "case " << c << " interval " << i;
        }
    }
}

TEST_F(AdaptiveLua, OneStepAnIntervalWhoeverCalls) {
    Params p;
    uint64_t now = kStart;
    call(p, Samples{}, now);
    Samples s = interval(4, 100, 50000);
    /* three instances' samples of one interval, summed */
    for (int i = 0; i < 3; i++) {
        call(p, s, now + 100000 + i * 100000);
    }
    Answer a = call(p, Samples{}, now + 1000000);
    EXPECT_EQ(a.n, 8);      /* doubled once: 4 -> 8 */
    /* calls in the same interval after it: no second step (growth:
     * the next interval starts at once) */
    a = call(p, s, now + 1200000);
    EXPECT_EQ(a.n, 8);
    a = call(p, s, now + 1900000);
    EXPECT_EQ(a.n, 8);
    /* the next interval's end: the two calls' samples */
    a = call(p, Samples{}, now + 2000000);
    EXPECT_EQ(a.n, 16);
    ReplyPtr c = command({"HGET", kKey, "c"});
    EXPECT_TRUE(c->type == REDIS_REPLY_NIL ||
                std::string(c->str, c->len) == "0");
}

TEST_F(AdaptiveLua, TheNBeforeAMoveIsNotSteppedOnAgain) {
    /* N cut from 16 in front of C = 8 (p90 2 S): for two ticks and a
     * p90 the fleet's samples are still those of the 16 (the requests
     * it admitted end; instances hear of the cut at their next tick),
     * and are dropped; the next interval starts after them and steps
     * on the new N's alone. Before, they were in it: 16 -> 13 -> 11 ->
     * 9 -> 8, each step on the one before's latency. */
    Params p;
    State core;
    core.limit = 16;
    core.baselineUs = 50000;
    core.growing = false;
    command({"HSET", kKey, "n", "16", "b", "50000", "g", "0", "s", "0",
             "w", "0", "at", std::to_string(kStart), "ch", "1"});
    Samples at16 = interval(16, 8, 50000);
    call(p, at16, kStart + 500000);
    core = rl::adaptive::update(p, core, at16);
    Answer a = call(p, Samples{}, kStart + 1000000);
    ASSERT_EQ(a.n, static_cast<double>(core.limit));
    ASSERT_LT(a.n, 16);
    double stale = rl::adaptive::staleUs(a.p90, 1);
    EXPECT_GE(stale, 2 * rl::adaptive::kTickUs + 0.9 * 100000);
    /* the 16's, within it: dropped (settle holds N meanwhile) */
    uint64_t cut = kStart + 1000000;
    for (uint64_t t = 100000; static_cast<double>(t) < stale; t += 200000) {
        call(p, at16, cut + t);
    }
    /* the new N's, after it */
    uint64_t start = cut + static_cast<uint64_t>(std::ceil(stale));
    Samples now = interval(core.limit, 8, 50000);
    call(p, now, start + 300000);
    /* not closed an interval after the cut: it started later */
    a = call(p, Samples{}, cut + 1000000);
    EXPECT_EQ(a.n, static_cast<double>(core.limit));
    a = call(p, Samples{}, start + 1000000);
    State clean = rl::adaptive::update(p, core, now);
    EXPECT_EQ(a.n, static_cast<double>(clean.limit));
    /* its reading is the new N's: the p90 of the 13 */
    EXPECT_NEAR(a.p90, rl::adaptive::quantileUs(now, 0.9), 1);
    Samples mixed = now;
    for (int i = 0; i < 3; i++) {
        mixed.merge(at16);
    }
    EXPECT_GT(rl::adaptive::quantileUs(mixed, 0.9), a.p90 * 1.15);
}

TEST_F(AdaptiveLua, HistoryInFlightAndPin) {
    Params p;
    begin(p);
    /* three slots held until far away, one expired */
    uint64_t far = kStart + 60000000;
    command({"ZADD", kSlots, std::to_string(far), "a",
             std::to_string(far), "b", std::to_string(far), "c",
             std::to_string(kStart - 1), "d"});
    for (int i = 1; i <= 3; i++) {
        step(p, interval(4, 100, 50000));
    }
    Answer a = call(p, Samples{}, start_ + 1);
    EXPECT_EQ(a.inflight, 3);
    ASSERT_EQ(a.points.size(), 3u);
    EXPECT_EQ(a.points[0][1], 8);
    EXPECT_EQ(a.points[2][1], 32);
    EXPECT_EQ(a.points[2][3], 3);
    EXPECT_NEAR(a.points[2][2], 50000 * 1.07, 50000 * 0.1);  /* p90 */
    /* only the points after `since` */
    a = call(p, Samples{}, start_ + 2, 0,
             static_cast<uint64_t>(a.points[1][0]));
    EXPECT_EQ(a.points.size(), 1u);
    /* a live limit pins N: at its value whatever the samples */
    a = step(p, interval(32, 100, 50000), 7);
    EXPECT_EQ(a.n, 7);
    /* and the law resumes from there once it ends */
    a = step(p, interval(7, 100, 50000));
    EXPECT_EQ(a.n, 7 + 1);  /* half of sqrt(7), at least 1 */
    /* N is kept 10 minutes */
    ReplyPtr ttl = command({"PTTL", kKey});
    EXPECT_GT(ttl->integer, 590000);
}

}  // namespace
}  // namespace rltest
