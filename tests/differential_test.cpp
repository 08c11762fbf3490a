/* The C++ core (src/core/algorithm.cpp) and the Redis script (lua/) on
 * the same request traces: for every step, the same decision and the
 * same remaining, reset, retry and delay figures, to the microsecond;
 * the same TTL as idleAtUs() says; and a rule that does not count a
 * request leaves its key byte for byte as it was.
 *
 * Each step runs the embedded script inside a test-only wrapper script
 * that DUMPs every key before and after, and records the TTL the script
 * sets instead of setting it (so keys never expire on Redis' own clock
 * while the trace runs on its own).
 */

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/algorithm.hpp"
#include "core/calendar.hpp"
#include "core/time_zone.hpp"
#include "redis_fixture.hpp"

namespace {

using namespace rltest;
using rl::Algorithm;

constexpr uint64_t kDay = 86400 * kSec;

/* The production script, run as a function, with `redis` shadowed so
 * that a PEXPIRE, or a SET's PX, is recorded instead of applied (the trace's clock is
 * not Redis' clock: keys must not expire on their own), and each key's
 * state around it: { reply, then per key: DUMP before, the TTL the
 * script set (-1: none), DUMP after }. */
std::string wrapperText() {
    /* across slots (RL_TEST_ACROSS=1): the keys are ARGV's first (the
     * map last, a byte a key), and the wrapper is the script the call
     * names, with its flags */
    std::string keys =
        acrossSlots()
            ? "#!lua flags=allow-cross-slot-keys\n"
              "local KK = {}\n"
              "for i = 1, 2 * #ARGV[#ARGV] do\n"
              "    KK[i] = ARGV[i]\n"
              "end\n"
            : "local KK = KEYS\n";
    return keys +
           "local real = redis\n"
           "local ttl = {}\n"
           "local redis = setmetatable({\n"
           "    call = function(cmd, key, ...)\n"
           "        if key == nil then\n"
           "            return real.call(cmd)\n"
           "        end\n"
           "        if cmd == 'PEXPIRE' then\n"
           "            ttl[key] = select(1, ...)\n"
           "            return 1\n"
           "        end\n"
           "        local v, opt, ms = ...\n"
           "        if cmd == 'SET' and opt == 'PX' then\n"
           "            ttl[key] = tonumber(ms)\n"
           "            return real.call('SET', key, v)\n"
           "        end\n"
           "        if cmd == 'SET' and opt == 'KEEPTTL' then\n"
           "            ttl[key] = -2\n"
           "        end\n"
           "        return real.call(cmd, key, ...)\n"
           "    end }, { __index = real })\n"
           "local before = {}\n"
           "for i = 1, #KK / 2 do\n"
           "    before[i] = real.call('DUMP', KK[i])\n"
           "end\n"
           "local reply = (function()\n" +
           std::string(rl::scriptText()) +
           "end)()\n"
           "if type(reply) == 'table' and reply.err then\n"
           "    return reply\n"
           "end\n"
           "local out = { reply }\n"
           "for i = 1, #KK / 2 do\n"
           "    out[#out + 1] = before[i] or ''\n"
           "    out[#out + 1] = ttl[KK[i]] or -1\n"
           "    out[#out + 1] = real.call('DUMP', KK[i]) or ''\n"
           "end\n"
           "return out\n";
}

/* One rule on both sides. */
struct Twin {
    Rule rule;
    rl::Params p;
    rl::State s{};
    std::vector<int64_t> log;
    int64_t ttlIdle = 0;  /* where the TTL the script set last ends */
    /* a calendar rule: its bounds made at each call's time plus skewUs
     * (nginx's clock, where the script decides on Redis') */
    const rl::tz::TimeZone* zone = nullptr;
    rl::calendar::Unit unit = rl::calendar::Unit::Day;
    int anchor = 0;
    int64_t skewUs = 0;
    int64_t bounds[3] = {0, 0, 0};  /* what p.bounds points to */

    void at(int64_t now) {
        if (zone == nullptr) {
            return;
        }
        rl::calendar::Bounds b =
            rl::calendar::boundsAt(*zone, unit, anchor, now + skewUs);
        int64_t v[3] = {b.start, b.end, b.next};
        for (int i = 0; i < 3; i++) {
            bounds[i] = v[i];
            rule.bounds[i] = v[i];
        }
        p.bounds = bounds;  /* (a copied twin points to its own) */
    }
};

Twin twin(std::string_view value, Algorithm a, uint64_t limit,
          uint64_t windowUs, uint64_t burst = 0, uint64_t delay = 0) {
    if (a == Algorithm::Concurrency) {
        Twin t;
        t.rule = ScriptFixture::inflight(value, limit, windowUs, 0);
        t.p = {a, limit, windowUs, 0, 0};
        t.log.assign(rl::logSlots(t.p), 0);
        return t;
    }
    if (!rl::takesBurst(a)) {
        burst = 0;
    }
    if (!rl::takesDelay(a)) {
        delay = 0;
    }
    std::string name(rl::algorithmName(a));
    Twin t;
    t.rule = {ScriptFixture::stateKey(value, name + std::to_string(limit),
                                      name, windowUs),
              name, limit, windowUs, burst, 1, delay};
    t.p = {a, limit, windowUs, burst, delay};
    t.log.assign(rl::logSlots(t.p), 0);
    return t;
}

std::string name(const Twin& t) {
    std::ostringstream s;
    s << t.rule.algorithm << " " << t.p.limit << "/" << t.p.windowUs
      << "us burst " << t.p.burst << " delay " << t.p.delay;
    return s.str();
}

class Differential : public ScriptFixture {
protected:
    void SetUp() override {
        ScriptFixture::SetUp();
        if (IsSkipped() || HasFatalFailure()) {
            return;
        }
        ReplyPtr r = command({"SCRIPT", "LOAD", wrapperText()});
        ASSERT_NE(r, nullptr);
        ASSERT_EQ(r->type, REDIS_REPLY_STRING)
            << std::string(r->str != nullptr ? r->str : "", r->len);
        wrapperSha_.assign(r->str, r->len);
    }

    /* One request through both: 1 admitted, 0 rejected, -1 once they
     * disagree. */
    int step(std::vector<Twin>& rules, const std::vector<uint64_t>& costs,
              int64_t now, const std::string& where) {
        const size_t n = rules.size();
        std::vector<rl::Params> p;
        std::vector<rl::State*> s;
        std::vector<int64_t*> logs;
        std::vector<Rule> lua;
        for (size_t i = 0; i < n; i++) {
            rules[i].at(now);
            p.push_back(rules[i].p);
            s.push_back(&rules[i].s);
            logs.push_back(rules[i].log.data());
            lua.push_back(rules[i].rule);
            lua.back().cost = costs[i];
        }
        std::vector<rl::Figures> want(n);
        bool allowed = rl::decide(p.data(), s.data(), logs.data(),
                                  costs.data(), n, now, want.data());

        std::vector<std::string> argv =
            argvOf(lua, static_cast<uint64_t>(now), true, false);
        argv[1] = wrapperSha_;
        ReplyPtr all = command(argv);
        if (all == nullptr || all->type != REDIS_REPLY_ARRAY ||
            all->elements != 1 + 3 * n) {
            ADD_FAILURE() << where << ": the script failed: "
                          << (all != nullptr && all->str != nullptr
                                  ? all->str
                                  : "?");
            return -1;
        }
        redisReply** e = all->element;
        const redisReply* reply = e[0];
        if (reply->type != REDIS_REPLY_STRING || reply->len % 8 != 0) {
            ADD_FAILURE() << where << ": script said "
                          << (reply->str != nullptr ? reply->str : "?");
            return -1;
        }

        /* The script's part of the reply (after its clock), decoded as
         * the module decodes it, in microseconds: the C++ core's
         * figures exactly. */
        std::vector<rl::RuleAsked> asked;
        for (size_t i = 0; i < n; i++) {
            asked.push_back({costs[i], rules[i].rule.dryRun});
        }
        redisReply part{};
        part.type = REDIS_REPLY_STRING;
        part.str = reply->str + rl::kClockBytes;
        part.len = reply->len > rl::kClockBytes
                       ? reply->len - rl::kClockBytes : 0;
        bool decoded = false;
        std::vector<rl::Figures> got(n);
        EXPECT_EQ(rl::decodeFigures(&part, n, asked.data(), &decoded,
                                    got.data()),
                  ReplyStatus::Ok)
            << where;
        std::ostringstream cpp, redis;
        cpp << (allowed ? 1 : 0);
        redis << (decoded ? 1 : 0);
        for (size_t i = 0; i < n; i++) {
            cpp << " | " << want[i].remaining << " " << want[i].resetUs
                << " " << want[i].retryUs << " " << want[i].delayUs;
            redis << " | " << got[i].remaining << " " << got[i].resetUs
                  << " " << got[i].retryUs << " " << got[i].delayUs;
        }
        EXPECT_EQ(cpp.str(), redis.str()) << where << " at " << now;
        bool same = cpp.str() == redis.str();

        for (size_t i = 0; i < n; i++) {
            const redisReply* before = e[1 + 3 * i];
            const redisReply* ttl = e[2 + 3 * i];
            const redisReply* after = e[3 + 3 * i];
            bool counted = costs[i] > 0 && want[i].retryUs == 0 &&
                           (allowed || worldAdmits(p, want, i));
            if (!counted) {
                /* untouched: same bytes, no TTL set */
                bool equal = before->type == after->type &&
                             before->len == after->len &&
                             std::string_view(before->str != nullptr
                                                  ? before->str
                                                  : "",
                                              before->len) ==
                                 std::string_view(after->str != nullptr
                                                      ? after->str
                                                      : "",
                                                  after->len);
                EXPECT_TRUE(equal) << where << ": " << name(rules[i])
                                   << " changed without counting";
                EXPECT_EQ(ttl->integer, -1) << where << ": " << name(rules[i]);
                same = same && equal;
                continue;
            }
            int64_t idle = rl::idleAtUs(rules[i].p, rules[i].s,
                                        rules[i].log.data(), now);
            /* until idle, in ms rounded up, plus 1 (see lua/rl.lua); or
             * the TTL set before (KEEPTTL, -2) if that ends there too */
            EXPECT_GT(idle, now) << where << ": " << name(rules[i]);
            if (ttl->integer == -2) {
                EXPECT_EQ(idle, rules[i].ttlIdle)
                    << where << ": " << name(rules[i]) << " kept a TTL";
            } else {
                EXPECT_EQ(ttl->integer, rl::msCeil(idle - now) + 1)
                    << where << ": " << name(rules[i]) << " idle at "
                    << idle;
                rules[i].ttlIdle = idle;
            }
            EXPECT_GT(after->len, 0u) << where << ": " << name(rules[i]);
        }
        if (!same || HasFailure()) {
            return -1;
        }
        for (const rl::Figures& f : want) {
            delayed_ += f.delayUs > 0 ? 1 : 0;
        }
        return allowed ? 1 : 0;
    }

    /* Gives back a decision at `then` on both sides. */
    void refundBoth(std::vector<Twin>& rules,
                    const std::vector<uint64_t>& costs, int64_t then) {
        std::vector<Rule> lua;
        for (size_t i = 0; i < rules.size(); i++) {
            rules[i].at(then);
            rl::refund(rules[i].p, rules[i].s, rules[i].log.data(),
                       costs[i], then);
            lua.push_back(rules[i].rule);
            lua.back().cost = costs[i];
        }
        refund(lua, static_cast<uint64_t>(then));
        for (const Rule& r : lua) {
            EXPECT_EQ(pttl(r.key) >= 0, false) << "no TTL: nothing expires";
        }
    }

    /* One of the module's own calls (a release, a renewal, a charge of
     * each rule's units) through both, at `then`: Redis' reply must be
     * 1; a charge above 0 sets the TTL idleAtUs() says. `ttls`: the TTL
     * the script set on each rule's key (-1: none). */
    void ownBoth(std::vector<Twin>& rules, rl::CallKind kind,
                 const std::vector<int64_t>& units, int64_t then,
                 const std::string& where,
                 std::vector<long long>* ttls = nullptr) {
        std::vector<Rule> lua;
        for (size_t i = 0; i < rules.size(); i++) {
            Twin& t = rules[i];
            t.at(then);
            if (kind == rl::CallKind::Refund) {
                rl::refund(t.p, t.s, t.log.data(), 1, then);
            } else if (kind == rl::CallKind::Renew) {
                rl::renew(t.p, t.s, t.log.data(), then);
            } else if (kind == rl::CallKind::Credit) {
                rl::credit(t.p, t.s, units[i], then);
            } else {
                rl::charge(t.p, t.s, units[i], then);
            }
            lua.push_back(t.rule);
            lua.back().charge = units.empty() ? 0 : units[i];
        }
        std::vector<std::string> argv =
            callArgv({{lua, then}}, true, false, {}, kind);
        argv[1] = wrapperSha_;
        ReplyPtr all = command(argv);
        ASSERT_TRUE(all != nullptr && all->type == REDIS_REPLY_ARRAY &&
                    all->elements == 1 + 3 * rules.size())
            << where << ": the script failed: "
            << (all != nullptr && all->str != nullptr ? all->str : "?");
        ASSERT_EQ(all->element[0]->type, REDIS_REPLY_INTEGER) << where;
        for (size_t i = 0; ttls != nullptr && i < rules.size(); i++) {
            ttls->push_back(all->element[2 + 3 * i]->integer);
        }
        for (size_t i = 0; (kind == rl::CallKind::Charge ||
                            kind == rl::CallKind::Credit) &&
                           i < rules.size(); i++) {
            if (units[i] <= 0 ||
                (kind == rl::CallKind::Credit &&
                 rules[i].p.algorithm != Algorithm::FixedWindow)) {
                continue;   /* given back: as a refund, no TTL of its own */
            }
            const redisReply* ttl = all->element[2 + 3 * i];
            int64_t idle = rl::idleAtUs(rules[i].p, rules[i].s,
                                        rules[i].log.data(), then);
            if (ttl->integer == -2) {
                EXPECT_EQ(idle, rules[i].ttlIdle) << where << " kept a TTL";
            } else {
                EXPECT_EQ(ttl->integer, rl::msCeil(idle - then) + 1)
                    << where << ": " << name(rules[i]) << " idle at "
                    << idle;
                rules[i].ttlIdle = idle;
            }
        }
    }

    /* A concurrency rule's slots, both sides: the sorted set's members
     * and scores are the log's ids and expiries. */
    void sameSlots(const Twin& t, const std::string& where) {
        std::map<uint64_t, long long> cpp;
        for (int64_t i = 0; i + 1 < t.s.a; i += 2) {
            cpp[static_cast<uint64_t>(t.log[i + 1])] = t.log[i];
        }
        EXPECT_EQ(cpp, slots(t.rule.key)) << where;
    }

    /* A trial's world (SPEC section 11): every enforced rule but the
     * one whose place rule i takes admits the request. */
    static bool worldAdmits(const std::vector<rl::Params>& p,
                            const std::vector<rl::Figures>& f, size_t i) {
        if (p[i].place == 0) {
            return false;
        }
        for (size_t j = 0; j < p.size(); j++) {
            if (j + 1 != p[i].place && !p[j].dryRun && f[j].retryUs > 0) {
                return false;
            }
        }
        return true;
    }

    std::string wrapperSha_;
    int delayed_ = 0; /* rules that delayed an admitted request */

    /* A random trace: gaps around the rate's interval, now and then a
     * long pause or (if `back`) a step back; costs 0..3, now and then
     * more than any capacity; now and then a refund of the last
     * admitted request. Returns the rejections seen. */
    int randomTrace(std::vector<Twin>& rules, uint64_t seed, int steps,
                    int64_t interval, int64_t pause, bool back) {
        std::mt19937_64 rng(seed);
        int64_t t = static_cast<int64_t>(windowStart(kDay)) +
                    static_cast<int64_t>(rng() % kSec);
        std::vector<std::pair<int64_t, std::vector<uint64_t>>> admitted;
        int rejections = 0;
        for (int i = 0; i < steps; i++) {
            uint64_t r = rng() % 100;
            if (r < 4) {
                t += static_cast<int64_t>(rng() % static_cast<uint64_t>(pause));
            } else if (back && r < 8) {
                t -= static_cast<int64_t>(rng() % static_cast<uint64_t>(pause));
            } else {
                t += static_cast<int64_t>(rng() % static_cast<uint64_t>(
                                                      2 * interval + 2));
            }
            std::vector<uint64_t> costs;
            for (size_t k = 0; k < rules.size(); k++) {
                uint64_t c = rng() % 4;
                if (rng() % 50 == 0) {
                    c = rules[k].p.limit + rules[k].p.burst + 1;
                }
                costs.push_back(c);
            }
            if (!admitted.empty() && rng() % 12 == 0) {
                refundBoth(rules, admitted.back().second,
                           admitted.back().first);
                admitted.pop_back();
            }
            std::ostringstream where;
            where << "seed " << seed << " step " << i;
            int d = step(rules, costs, t, where.str());
            if (d < 0) {
                return -1;
            }
            if (d == 1) {
                admitted.emplace_back(t, costs);
            } else {
                rejections++;
            }
        }
        return rejections;
    }
};

/* ------------------------------------------------------------------ */

const Algorithm kAll[] = {Algorithm::FixedWindow, Algorithm::SlidingWindow,
                          Algorithm::SlidingLog,  Algorithm::TokenBucket,
                          Algorithm::LeakyBucket, Algorithm::Gcra};

class EveryAlgorithm : public Differential,
                       public testing::WithParamInterface<Algorithm> {};

/* Fixed timestamps around the edges of a 3r/10s rule (burst 2, delay
 * 1 where taken): the same instant many times, a window's last and
 * first microseconds, costs 0 to 6, a clock going back. */
TEST_P(EveryAlgorithm, FixedTrace) {
    const int64_t sec = static_cast<int64_t>(kSec);
    const int64_t w = 10 * sec;
    const int64_t t0 = static_cast<int64_t>(windowStart(w));
    std::vector<Twin> rules = {twin("fixed", GetParam(), 3, w, 2, 1)};
    struct Step {
        int64_t at;
        uint64_t cost;
    };
    const Step trace[] = {
        {t0, 1},          {t0, 1},           {t0, 0},
        {t0, 1},          {t0, 1},           {t0 + 1, 1},
        {t0 + 5 * sec, 2}, {t0 + w - 1, 1}, {t0 + w, 1},
        {t0 + w, 6},      {t0 + w + 1, 3},   {t0 + w + 3333333, 1},
        {t0 + w + 3333334, 1}, {t0 + 2 * w - 1, 2}, {t0 + 5 * sec, 1},
        {t0 + w, 1},      {t0 + 2 * w, 3},   {t0 + 2 * w, 1},
        {t0 + 4 * w + 7, 1}, {t0 + 4 * w + 7, 1}, {t0 + 4 * w + 8, 2},
        {t0 + 9 * w, 0},  {t0 + 9 * w, 4},   {t0 + 9 * w + 1, 1}};
    int i = 0;
    for (const Step& st : trace) {
        ASSERT_GE(step(rules, {st.cost}, st.at, "step " + std::to_string(i)),
                  0);
        i++;
    }
}

/* Random traces at 1r/d, 1000000r/s, 1000r/ms, 7r/13s and 3r/s, with
 * random bursts and delays, refunds, pauses and steps back. */
TEST_P(EveryAlgorithm, RandomTraces) {
    struct Rate {
        uint64_t n, w;
    };
    const Rate rates[] = {{1, kDay},        {1000000, kSec}, {1000, kMs},
                          {7, 13 * kSec},   {3, kSec}};
    std::mt19937_64 rng(1234 + static_cast<int>(GetParam()));
    int rejections = 0;
    int traces = 0;
    for (const Rate& r : rates) {
        for (int variant = 0; variant < 2; variant++) {
            uint64_t burst = rng() % 6;
            uint64_t delay = rng() % (burst + 2); /* burst + 1: none */
            if (GetParam() == Algorithm::TokenBucket && burst == 0) {
                burst = r.n; /* the default */
            }
            std::vector<Twin> rules = {
                twin("r" + std::to_string(traces), GetParam(), r.n, r.w,
                     burst, std::min(delay, burst))};
            int64_t interval = static_cast<int64_t>(r.w / r.n);
            int got = randomTrace(rules, rng(), 150, interval,
                                  static_cast<int64_t>(2 * r.w),
                                  variant == 1);
            ASSERT_GE(got, 0) << name(rules[0]);
            rejections += got;
            traces++;
        }
    }
    EXPECT_GT(rejections, 100); /* the traces do reach the limits */
    if (rl::takesDelay(GetParam())) {
        EXPECT_GT(delayed_, 20); /* and shape requests */
    }
}

INSTANTIATE_TEST_SUITE_P(Lua, EveryAlgorithm, testing::ValuesIn(kAll),
                         [](const testing::TestParamInfo<Algorithm>& i) {
                             return std::string(rl::algorithmName(i.param));
                         });

/* All six stacked in one call: a request counts in all or in none. */
TEST_F(Differential, SixAlgorithmsStacked) {
    std::vector<Twin> rules = {
        twin("stack", Algorithm::FixedWindow, 5, 2 * kSec),
        twin("stack", Algorithm::SlidingWindow, 6, 3 * kSec),
        twin("stack", Algorithm::SlidingLog, 4, kSec),
        twin("stack", Algorithm::TokenBucket, 3, kSec, 4),
        twin("stack", Algorithm::LeakyBucket, 4, kSec, 3, 1),
        twin("stack", Algorithm::Gcra, 5, kSec, 2, 0)};
    int got = randomTrace(rules, 99, 400, 150 * static_cast<int64_t>(kMs),
                          static_cast<int64_t>(4 * kSec), false);
    ASSERT_GE(got, 0);
    EXPECT_GT(got, 100);
    got = randomTrace(rules, 100, 200, 150 * static_cast<int64_t>(kMs),
                      static_cast<int64_t>(4 * kSec), true);
    ASSERT_GE(got, 0);
}

/* A trial of `of` (SPEC section 11) at N' in its place, the rule at
 * `place` (1-based) of its request: a dry run on a state of its own
 * (its key names N', which differs from its rule's). */
Twin trialOf(const Twin& of, std::string_view value, uint64_t limit,
             size_t place) {
    Twin t = twin(value, of.p.algorithm, limit, of.p.windowUs,
                  of.p.burst == of.p.limit ? limit : of.p.burst, of.p.delay);
    t.rule.dryRun = true;
    t.rule.place = place;
    t.p.dryRun = true;
    t.p.place = static_cast<uint32_t>(place);
    return t;
}

/* Trials beside their rules, one a raise and one a cut, with a third
 * rule of the request: each counts a request when it admits it and
 * every rule but its own does (the request its rule alone rejects is
 * counted in it; one the other rule rejects is not), both sides alike,
 * and a refund of their records reads their places. */
TEST_F(Differential, TrialsInTheirRulesPlace) {
    for (Algorithm a : kAll) {
        std::string tag(rl::algorithmName(a));
        std::string value = "trial-" + tag;
        Twin rule = twin(value, a, 4, 2 * kSec, rl::takesBurst(a) ? 2 : 0,
                         rl::takesDelay(a) ? 1 : 0);
        /* (one key value: across slots, the keys stay in rule order) */
        Twin other = twin(value, Algorithm::SlidingWindow, 9, 3 * kSec);
        std::vector<Twin> rules = {rule, other, trialOf(rule, value, 12, 1),
                                   trialOf(other, value, 3, 2)};
        int got = randomTrace(rules, 7 + static_cast<uint64_t>(a), 300,
                              120 * static_cast<int64_t>(kMs),
                              static_cast<int64_t>(3 * kSec), false);
        ASSERT_GE(got, 0) << tag;
        EXPECT_GT(got, 30) << tag;
    }
}

/* N changes (a reload), the state stays: the meters read it as whole
 * requests in the new units (src/core/meters.cpp inUnits), both
 * sides alike; gcra keeps a time. */
TEST_F(Differential, MetersWhenNChanges) {
    for (uint64_t from : {100u, 99u, 7u}) {
        for (uint64_t to : {99u, 100u, 1000u}) {
            if (from == to) {
                continue;
            }
            std::string tag = std::to_string(from) + "->" +
                              std::to_string(to) + " ";
            std::vector<Twin> rules = {
                twin("n" + std::to_string(from) + "-" + std::to_string(to),
                     Algorithm::TokenBucket, from, 3600 * kSec, 100),
                twin("n" + std::to_string(from) + "-" + std::to_string(to),
                     Algorithm::LeakyBucket, from, kSec, 10, 10),
                twin("n" + std::to_string(from) + "-" + std::to_string(to),
                     Algorithm::Gcra, from, kSec, 10, 10)};
            std::vector<uint64_t> costs = {3, 1, 1};
            int64_t t = static_cast<int64_t>(windowStart(kDay)) + 11;
            for (int i = 0; i < 8; i++) {
                ASSERT_GE(step(rules, costs, t + 997 * i,
                               tag + "before " + std::to_string(i)),
                          0);
            }
            for (Twin& r : rules) {
                r.rule.limit = to;
                r.p.limit = to;
            }
            for (int i = 8; i < 20; i++) {
                ASSERT_GE(step(rules, costs, t + 997 * i,
                               tag + "after " + std::to_string(i)),
                          0);
            }
        }
    }
}

/* A live limit of 0 (SPEC section 11) between two of N: every request
 * rejected, nothing counted, the retry the window (a minute at most),
 * both sides alike; then N again, on the state as it was. */
TEST_F(Differential, LiveLimitOfZero) {
    for (Algorithm a : kAll) {
        std::string tag(rl::algorithmName(a));
        std::vector<Twin> rules = {
            twin("zero-" + tag, a, 4, 10 * kSec,
                 rl::takesBurst(a) ? 2 : 0, rl::takesDelay(a) ? 2 : 0),
            twin("zero-" + tag + "-long", Algorithm::FixedWindow, 9,
                 600 * kSec)};
        std::vector<uint64_t> costs = {1, 1};
        int64_t t = static_cast<int64_t>(windowStart(kDay)) + 13;
        for (int i = 0; i < 3; i++) {
            ASSERT_GE(step(rules, costs, t + 1009 * i,
                           tag + " before " + std::to_string(i)), 0);
        }
        for (Twin& r : rules) {
            r.rule.limit = 0;
            r.p.limit = 0;
        }
        for (int i = 3; i < 6; i++) {
            ASSERT_EQ(step(rules, costs, t + 1009 * i,
                           tag + " at 0 " + std::to_string(i)), 0)
                << "a limit of 0 rejects";
        }
        for (Twin& r : rules) {
            r.rule.limit = 4;
            r.p.limit = 4;
        }
        for (int i = 6; i < 9; i++) {
            ASSERT_GE(step(rules, costs, t + 1009 * i,
                           tag + " after " + std::to_string(i)), 0);
        }
    }
}

/* 1r/d and 1000000r/s stacked on one key, with shaping. */
TEST_F(Differential, ExtremeRatesStacked) {
    std::vector<Twin> rules = {
        twin("x", Algorithm::Gcra, 1000000, kSec, 20, 5),
        twin("x", Algorithm::TokenBucket, 1, kDay, 1),
        twin("x", Algorithm::LeakyBucket, 1000000, kSec, 8, 2),
        twin("x", Algorithm::SlidingLog, 1, kDay)};
    std::vector<uint64_t> costs = {1, 0, 1, 0};
    int64_t t = static_cast<int64_t>(windowStart(kDay)) + 17;
    for (int i = 0; i < 60; i++) {
        ASSERT_GE(step(rules, costs, t + i / 3, "burst " + std::to_string(i)),
                  0);
    }
    costs = {1, 1, 1, 1};
    ASSERT_EQ(step(rules, costs, t + 100, "first of the day"), 1);
    ASSERT_EQ(step(rules, costs, t + 200, "second of the day"), 0);
    ASSERT_EQ(step(rules, costs, t + static_cast<int64_t>(kDay) + 99,
                   "a day less 1 us"),
              0);
    ASSERT_EQ(step(rules, costs, t + static_cast<int64_t>(kDay) + 100,
                   "a day later"),
              1);
}

}  // namespace

namespace {

/* concurrency=3 hold=20 s, stacked with a fixed_window and alone: slots
 * taken, released, renewed and left to expire, the clock now and then
 * going back; the same decisions, figures and TTLs, and the same slots
 * (ids and expiries) on both sides after every step. A slot whose hold
 * passed unrenewed is left to expire (its worker died): renewed, it
 * would be put back, which the ring does only where it has room. */
TEST_F(Differential, ConcurrencySlots) {
    const int64_t sec = static_cast<int64_t>(kSec);
    const int64_t hold = 20 * sec;
    for (bool stacked : {false, true}) {
        std::vector<Twin> rules = {twin(stacked ? "in-s" : "in",
                                        Algorithm::Concurrency, 3,
                                        static_cast<uint64_t>(hold))};
        if (stacked) {
            rules.push_back(twin("in-s", Algorithm::FixedWindow, 5,
                                 30 * kSec));
        }
        std::mt19937_64 rng(stacked ? 77 : 76);
        int64_t t = static_cast<int64_t>(windowStart(kDay)) + 5;
        std::vector<uint64_t> held;
        std::map<uint64_t, int64_t> ends;   /* a held slot's expiry */
        uint64_t next = 0x1234567800000000ULL;
        int rejected = 0, expired = 0;
        int64_t latest = t;
        for (int i = 0; i < 300; i++) {
            std::string where = (stacked ? "stacked " : "") +
                                std::string("step ") + std::to_string(i);
            uint64_t r = rng() % 100;
            if (r < 3) {
                t += hold + static_cast<int64_t>(rng() % 5) * sec;
                expired += static_cast<int>(held.size());
                held.clear();   /* never renewed: they expire */
            } else if (r < 6) {
                t -= static_cast<int64_t>(rng() % 3) * sec;
            } else {
                t += static_cast<int64_t>(rng() % 4) * sec;
            }
            latest = std::max(latest, t);
            for (size_t k = held.size(); k-- > 0;) {
                if (ends[held[k]] <= latest) {  /* a decision may drop it */
                    expired++;
                    held.erase(held.begin() + static_cast<long>(k));
                }
            }
            if (!held.empty() && r % 4 == 0) {
                size_t k = rng() % held.size();
                rules[0].p.slotId = held[k];
                rules[0].rule.slot = held[k];
                ownBoth(rules, rl::CallKind::Renew, {}, t, where);
                /* release: a refund of the slot alone */
                std::vector<Twin> slot = {rules[0]};
                ownBoth(slot, rl::CallKind::Refund, {}, t, where);
                rules[0].s = slot[0].s;
                rules[0].log = slot[0].log;
                held.erase(held.begin() + static_cast<long>(k));
            } else if (!held.empty() && r % 4 == 1) {
                size_t k = rng() % held.size();
                rules[0].p.slotId = held[k];
                rules[0].rule.slot = held[k];
                std::vector<Twin> slot = {rules[0]};
                ownBoth(slot, rl::CallKind::Renew, {}, t, where);
                rules[0].s = slot[0].s;
                rules[0].log = slot[0].log;
                ends[held[k]] = std::max(ends[held[k]], t + hold);
            }
            ASSERT_FALSE(HasFatalFailure());
            next++;
            rules[0].p.slotId = next;
            rules[0].rule.slot = next;
            std::vector<uint64_t> costs(rules.size(), 1);
            int d = step(rules, costs, t, where);
            ASSERT_GE(d, 0);
            if (d == 1) {
                held.push_back(next);
                ends[next] = t + hold;
            } else {
                rejected++;
            }
            ASSERT_NO_FATAL_FAILURE(sameSlots(rules[0], where));
        }
        EXPECT_GT(rejected, 30);
        EXPECT_GT(expired, 3);
    }
}

/* Two slots of concurrency=3 lost while their requests run (the key gone
 * from Redis, the state from memory): their renewals put them back, a
 * hold from the renewal, the key expiring with them; the decisions after
 * count them. */
TEST_F(Differential, ConcurrencyPutBack) {
    const int64_t sec = static_cast<int64_t>(kSec);
    const int64_t hold = 20 * sec;
    std::vector<Twin> rules = {twin("lost", Algorithm::Concurrency, 3,
                                    static_cast<uint64_t>(hold))};
    int64_t t = static_cast<int64_t>(windowStart(kDay)) + 5;
    auto take = [&](uint64_t id, int64_t at) {
        rules[0].p.slotId = id;
        rules[0].rule.slot = id;
        return step(rules, {1}, at, "slot " + std::to_string(id));
    };
    ASSERT_EQ(take(1, t), 1);
    ASSERT_EQ(take(2, t + sec), 1);
    command({"DEL", rules[0].rule.key});
    rules[0].s = {};
    for (uint64_t id : {1, 2}) {
        rules[0].p.slotId = id;
        rules[0].rule.slot = id;
        std::vector<long long> ttl;
        ownBoth(rules, rl::CallKind::Renew, {}, t + 3 * sec, "put back",
                &ttl);
        /* the key made again expires when its slots do */
        int64_t idle = rl::idleAtUs(rules[0].p, rules[0].s,
                                    rules[0].log.data(), t + 3 * sec);
        EXPECT_EQ(idle, t + 3 * sec + hold);
        ASSERT_EQ(ttl.size(), 1u);
        EXPECT_EQ(ttl[0], rl::msCeil(hold) + 1) << id;
    }
    ASSERT_NO_FATAL_FAILURE(sameSlots(rules[0], "put back"));
    EXPECT_EQ(rules[0].s.a, 4);
    EXPECT_EQ(take(3, t + 4 * sec), 1);
    EXPECT_EQ(take(4, t + 4 * sec), 0) << "the 2 put back count";
    ASSERT_NO_FATAL_FAILURE(sameSlots(rules[0], "after"));
}

/* Charges (charge=) between decisions on every algorithm that takes
 * them: above the limit, below the cost (given back), zero; the next
 * decisions' figures and the TTLs agree. */
TEST_F(Differential, Charges) {
    const Algorithm charged[] = {Algorithm::FixedWindow,
                                 Algorithm::SlidingWindow,
                                 Algorithm::TokenBucket,
                                 Algorithm::LeakyBucket, Algorithm::Gcra};
    for (Algorithm a : charged) {
        uint64_t burst = a == Algorithm::TokenBucket ? 10 : 4;
        std::vector<Twin> rules = {twin("charge", a, 10, 10 * kSec, burst,
                                        burst)};
        std::mt19937_64 rng(5 + static_cast<int>(a));
        int64_t t = static_cast<int64_t>(windowStart(kDay)) + 3;
        int rejected = 0;
        for (int i = 0; i < 150; i++) {
            std::string where = name(rules[0]) + " step " +
                                std::to_string(i);
            t += static_cast<int64_t>(rng() % 1500) *
                 static_cast<int64_t>(kMs);
            int d = step(rules, {1}, t, where);
            ASSERT_GE(d, 0);
            rejected += d == 0 ? 1 : 0;
            if (d == 1 && rng() % 2 == 0) {
                /* its charge, at its end: 0 to 30 units, less its cost */
                int64_t units = static_cast<int64_t>(rng() % 31) - 1;
                t += static_cast<int64_t>(rng() % 900) *
                     static_cast<int64_t>(kMs);
                ASSERT_NO_FATAL_FAILURE(ownBoth(
                    rules, rl::CallKind::Charge, {units}, t, where));
            }
        }
        EXPECT_GT(rejected, 20) << name(rules[0]);
    }
}

}  // namespace

namespace {

/* ------------------------------------------------------------------ */
/* Calendar periods (SPEC section 12): a fixed_window whose records carry
 * their period's bounds, made at nginx's clock (here the step's time
 * plus a skew); the script and the core pick the period the step's time
 * falls in with them, alike. */

std::string zoneFile(const char* name) {
    std::ifstream in(std::string("/usr/share/zoneinfo/") + name,
                     std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

int64_t utcUs(int64_t y, int m, int d, int h = 0) {
    return (rl::tz::daysFromCivil(y, m, d) * 86400 + h * 3600) *
           static_cast<int64_t>(kSec);
}

Twin calendarTwin(const std::string& value, const rl::tz::TimeZone& z,
                  rl::calendar::Unit u, int anchor, uint64_t limit,
                  int64_t skewUs) {
    Twin t = twin(value, Algorithm::FixedWindow, limit,
                  rl::calendar::nominalUs(u));
    t.zone = &z;
    t.unit = u;
    t.anchor = anchor;
    t.skewUs = skewUs;
    return t;
}

/* Days in Europe/Berlin across both changes of 2025, nginx's clock
 * right, a minute and a half off either way, and more than a day off
 * (the script then extrapolates, or counts in the period before):
 * random gaps of up to 3 hours, costs 0 to 3, refunds, credits. */
TEST_F(Differential, CalendarDaysAcrossDaylightSaving) {
    std::string bytes = zoneFile("Europe/Berlin");
    if (bytes.empty()) {
        GTEST_SKIP() << "no zoneinfo (tzdata)";
    }
    const char* why = nullptr;
    auto berlin = rl::tz::parseTzif(bytes, &why);
    ASSERT_TRUE(berlin) << why;
    const int64_t hour = 3600 * static_cast<int64_t>(kSec);
    int rejected = 0;
    for (int64_t skew : {int64_t(0), 90 * static_cast<int64_t>(kSec),
                         -90 * static_cast<int64_t>(kSec), 30 * hour,
                         -30 * hour, 80 * hour}) {
        for (int64_t start : {utcUs(2025, 3, 28, 12),
                              utcUs(2025, 10, 24, 12)}) {
            std::vector<Twin> rules = {
                calendarTwin("day" + std::to_string(skew) + "-" +
                                 std::to_string(start),
                             *berlin, rl::calendar::Unit::Day, 0, 5, skew)};
            std::mt19937_64 rng(static_cast<uint64_t>(skew + start));
            int64_t t = start;
            std::vector<std::pair<int64_t, uint64_t>> admitted;
            for (int i = 0; i < 120; i++) {
                std::string where = "skew " + std::to_string(skew) +
                                    " step " + std::to_string(i);
                t += static_cast<int64_t>(rng() % 3) * hour +
                     static_cast<int64_t>(rng() % 3600) *
                         static_cast<int64_t>(kSec);
                if (!admitted.empty() && rng() % 10 == 0) {
                    refundBoth(rules, {admitted.back().second},
                               admitted.back().first);
                    admitted.pop_back();
                }
                if (rng() % 15 == 0) {
                    ASSERT_NO_FATAL_FAILURE(ownBoth(
                        rules, rl::CallKind::Credit,
                        {static_cast<int64_t>(1 + rng() % 4)}, t, where));
                }
                uint64_t cost = rng() % 4;
                int d = step(rules, {cost}, t, where);
                ASSERT_GE(d, 0);
                if (d == 1) {
                    admitted.emplace_back(t, cost);
                } else {
                    rejected++;
                }
            }
        }
    }
    EXPECT_GT(rejected, 100);
}

/* Months from an anchor day, and a key whose anchor changes (a billing
 * day from a variable): its period runs until it ends, then the new
 * day's; weeks from Monday and Sunday; hours in a zone off the whole
 * hour; stacked with a plain window. */
TEST_F(Differential, CalendarMonthsWeeksHoursAnchors) {
    std::string b1 = zoneFile("Europe/Berlin");
    std::string b2 = zoneFile("Asia/Kathmandu");
    if (b1.empty() || b2.empty()) {
        GTEST_SKIP() << "no zoneinfo (tzdata)";
    }
    const char* why = nullptr;
    auto berlin = rl::tz::parseTzif(b1, &why);
    auto kathmandu = rl::tz::parseTzif(b2, &why);
    ASSERT_TRUE(berlin && kathmandu);
    const int64_t hour = 3600 * static_cast<int64_t>(kSec);
    using rl::calendar::Unit;
    std::vector<Twin> rules = {
        calendarTwin("cal", *berlin, Unit::Month, 15, 40, 0),
        calendarTwin("cal", *berlin, Unit::Week, 0, 20, 0),
        calendarTwin("cal", *kathmandu, Unit::Hour, 0, 3, 0),
        twin("cal", Algorithm::FixedWindow, 4, 3600 * kSec)};
    rules[1].rule.name = "w";
    rules[2].rule.name = "h";
    std::mt19937_64 rng(2025);
    int64_t t = utcUs(2025, 1, 10);
    int rejected = 0;
    for (int i = 0; i < 600; i++) {
        std::string where = "step " + std::to_string(i);
        t += static_cast<int64_t>(rng() % 7) * hour / 2 +
             static_cast<int64_t>(rng() % 600) * static_cast<int64_t>(kSec);
        if (rng() % 40 == 0) {
            /* the billing day changes: 1 to 28 */
            rules[0].anchor = 1 + static_cast<int>(rng() % 28);
        }
        if (rng() % 30 == 0) {
            std::vector<Twin> one = {rules[0]};
            ASSERT_NO_FATAL_FAILURE(ownBoth(one, rl::CallKind::Credit,
                                            {7}, t, where));
            rules[0].s = one[0].s;
            rules[0].ttlIdle = one[0].ttlIdle;
        }
        std::vector<uint64_t> costs = {rng() % 3, rng() % 2, 1, rng() % 2};
        int d = step(rules, costs, t, where);
        ASSERT_GE(d, 0);
        rejected += d == 0 ? 1 : 0;
    }
    EXPECT_GT(rejected, 50);
}

/* Credits between decisions on every algorithm that takes them: a
 * fixed window's usage below zero, the others given back as a refund
 * at the credit's time; the decisions after agree. */
TEST_F(Differential, Credits) {
    for (Algorithm a : kAll) {
        if (!rl::takesCredit(a)) {
            continue;
        }
        uint64_t burst = a == Algorithm::TokenBucket ? 10 : 4;
        std::vector<Twin> rules = {twin("credit", a, 10, 10 * kSec, burst,
                                        burst)};
        std::mt19937_64 rng(50 + static_cast<int>(a));
        int64_t t = static_cast<int64_t>(windowStart(kDay)) + 3;
        int rejected = 0;
        for (int i = 0; i < 200; i++) {
            std::string where = name(rules[0]) + " step " +
                                std::to_string(i);
            t += static_cast<int64_t>(rng() % 800) *
                 static_cast<int64_t>(kMs);
            if (rng() % 8 == 0) {
                ASSERT_NO_FATAL_FAILURE(ownBoth(
                    rules, rl::CallKind::Credit,
                    {static_cast<int64_t>(1 + rng() % 12)}, t, where));
            }
            int d = step(rules, {1 + rng() % 2}, t, where);
            ASSERT_GE(d, 0);
            rejected += d == 0 ? 1 : 0;
        }
        EXPECT_GT(rejected, 20) << name(rules[0]);
    }
}

}  // namespace
