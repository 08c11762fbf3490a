/* Decoding the script's reply, one string of little-endian doubles:
 *   clock_us, then per request, per rule: left, reset_us, verdict
 * from hiredis replies built by hand: a request's part, read with what
 * the module asked of each rule (its cost, whether it is a dry run);
 * times leave in milliseconds, rounded up. */

#include "core/reply.hpp"

#include <hiredis/hiredis.h>

#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace {

using rl::ReplyStatus;
using rl::RuleAsked;
using rl::RuleOutcome;

/* Owns every reply, string and element vector it hands out. */
class Replies {
public:
    redisReply* integer(long long value) {
        redisReply* r = make(REDIS_REPLY_INTEGER);
        r->integer = value;
        return r;
    }

    redisReply* text(int type, std::string_view s) {
        redisReply* r = make(type);
        strings_.emplace_back(s);
        r->str = strings_.back().data();
        r->len = strings_.back().size();
        return r;
    }

    redisReply* error(std::string_view s) {
        return text(REDIS_REPLY_ERROR, s);
    }

    redisReply* nil() { return make(REDIS_REPLY_NIL); }

    redisReply* array(std::vector<redisReply*> elements) {
        redisReply* r = make(REDIS_REPLY_ARRAY);
        arrays_.push_back(std::move(elements));
        r->elements = arrays_.back().size();
        r->element = arrays_.back().empty() ? nullptr : arrays_.back().data();
        return r;
    }

    /* The script's reply: the figures packed as little-endian doubles. */
    redisReply* figures(std::initializer_list<long long> values) {
        std::vector<double> d;
        for (long long v : values) {
            d.push_back(static_cast<double>(v));
        }
        return doubles(d);
    }

    redisReply* doubles(const std::vector<double>& values) {
        std::string bytes;
        for (double v : values) {
            uint64_t bits;
            std::memcpy(&bits, &v, sizeof bits);
            for (int k = 0; k < 8; k++) {
                bytes.push_back(static_cast<char>(bits >> (8 * k)));
            }
        }
        return text(REDIS_REPLY_STRING, bytes);
    }

    redisReply* integers(std::initializer_list<long long> values) {
        std::vector<redisReply*> elements;
        for (long long v : values) {
            elements.push_back(integer(v));
        }
        return array(std::move(elements));
    }

private:
    redisReply* make(int type) {
        replies_.emplace_back();
        replies_.back().type = type;
        return &replies_.back();
    }

    std::deque<redisReply> replies_;
    std::deque<std::string> strings_;
    std::deque<std::vector<redisReply*>> arrays_;
};

const char* name(ReplyStatus s) {
    switch (s) {
    case ReplyStatus::Ok:
        return "Ok";
    case ReplyStatus::NoScript:
        return "NoScript";
    case ReplyStatus::Error:
        return "Error";
    case ReplyStatus::Malformed:
        return "Malformed";
    }
    return "?";
}

}  // namespace

namespace rl {
void PrintTo(ReplyStatus s, std::ostream* os) { *os << name(s); }
}  // namespace rl

namespace {

constexpr long long kNow = 1700000000123456LL;

class Reply : public testing::Test {
protected:
    static constexpr size_t kMaxRules = 8;

    /* One request's part, its rules of cost 1 and enforced unless
     * `asked` says otherwise. */
    ReplyStatus decode(const redisReply* reply, size_t rules,
                       std::vector<RuleAsked> asked = {}) {
        for (RuleOutcome& o : out_) {
            o = {-7, -7, -7, -7, -7};
        }
        asked.resize(kMaxRules, RuleAsked{1, false});
        return rl::decodeReply(reply, rules, asked.data(), &allowed_, out_);
    }

    Replies r_;
    bool allowed_ = false;
    RuleOutcome out_[kMaxRules];
};

constexpr RuleAsked kDry{1, true};

void expectOutcome(const RuleOutcome& o, int64_t remaining, int64_t reset,
                   int64_t retry, int64_t delay = 0) {
    EXPECT_EQ(o.remaining, remaining);
    EXPECT_EQ(o.resetMs, reset);
    EXPECT_EQ(o.retryMs, retry);
    EXPECT_EQ(o.delayMs, delay);
}

/* An admitted request is counted: what a rule leaves is what it had,
 * less the request's cost. */
TEST_F(Reply, AllowedOneRule) {
    allowed_ = false;
    ASSERT_EQ(decode(r_.figures({10, 1000000, 0}), 1), ReplyStatus::Ok);
    EXPECT_TRUE(allowed_);
    expectOutcome(out_[0], 9, 1000, 0);
}

TEST_F(Reply, AllowedThreeRules) {
    allowed_ = false;
    ASSERT_EQ(decode(r_.figures({10, 1000000, 0, 1, 60000000, 0, 100, 1000,
                                  0}),
                     3),
              ReplyStatus::Ok);
    EXPECT_TRUE(allowed_);
    expectOutcome(out_[0], 9, 1000, 0);
    expectOutcome(out_[1], 0, 60000, 0);
    expectOutcome(out_[2], 99, 1, 0);
}

/* The cost is the module's: taken from what is left, never below 0. */
TEST_F(Reply, CostIsTakenFromWhatIsLeft) {
    ASSERT_EQ(decode(r_.figures({10, 1000, 0}), 1, {{4, false}}),
              ReplyStatus::Ok);
    expectOutcome(out_[0], 6, 1, 0);
    ASSERT_EQ(decode(r_.figures({3, 1000, 0}), 1, {{5, false}}),
              ReplyStatus::Ok);
    expectOutcome(out_[0], 0, 1, 0);
    ASSERT_EQ(decode(r_.figures({3, 1000, 0}), 1, {{0, false}}),
              ReplyStatus::Ok);
    expectOutcome(out_[0], 3, 1, 0);
}

/* A rejected request counts nothing in any rule: each leaves what it
 * had. */
TEST_F(Reply, RejectedByOneOfTwoRules) {
    allowed_ = true;
    ASSERT_EQ(decode(r_.figures({4, 700000, 0, 0, 59000000, 1500000}), 2),
              ReplyStatus::Ok);
    EXPECT_FALSE(allowed_);
    expectOutcome(out_[0], 4, 700, 0);
    expectOutcome(out_[1], 0, 59000, 1500);
    EXPECT_EQ(out_[1].retryUs, 1500000);
}

/* Microseconds become milliseconds rounded up: a retry of 1 us is 1 ms,
 * never 0 (which would read as "admitted"). */
TEST_F(Reply, MicrosecondsRoundUpToMilliseconds) {
    ASSERT_EQ(decode(r_.figures({0, 1, 1}), 1), ReplyStatus::Ok);
    expectOutcome(out_[0], 0, 1, 1);
    ASSERT_EQ(decode(r_.figures({0, 999, 1000}), 1), ReplyStatus::Ok);
    expectOutcome(out_[0], 0, 1, 1);
    ASSERT_EQ(decode(r_.figures({0, 1001, 1999}), 1), ReplyStatus::Ok);
    expectOutcome(out_[0], 0, 2, 2);
    ASSERT_EQ(decode(r_.figures({4, 0, -2000001}), 1), ReplyStatus::Ok);
    expectOutcome(out_[0], 3, 0, 0, 2001);
    EXPECT_EQ(rl::msCeil(0), 0);
    EXPECT_EQ(rl::msCeil(1), 1);
    EXPECT_EQ(rl::msCeil(1000), 1);
    EXPECT_EQ(rl::msCeil(1001), 2);
}

/* An admitted request may be delayed by the rules that shape it (a
 * verdict below 0); the module waits for the longest. */
TEST_F(Reply, AdmittedWithDelays) {
    ASSERT_EQ(decode(r_.figures({3, 300000, -100000, 8, 5000, 0}), 2),
              ReplyStatus::Ok);
    EXPECT_TRUE(allowed_);
    expectOutcome(out_[0], 2, 300, 0, 100);
    expectOutcome(out_[1], 7, 5, 0, 0);
}

/* A rejected request waits for nothing, whatever a rule would have
 * delayed it by. */
TEST_F(Reply, RejectionDelaysNothing) {
    ASSERT_EQ(decode(r_.figures({3, 300000, -100000, 0, 1000, 1000}), 2),
              ReplyStatus::Ok);
    EXPECT_FALSE(allowed_);
    expectOutcome(out_[0], 3, 300, 0, 0);
    expectOutcome(out_[1], 0, 1, 1, 0);
}

/* A dry-run rule that would reject admits the request and counts it
 * not; one that would admit it counts it, and never delays it. */
TEST_F(Reply, DryRuns) {
    ASSERT_EQ(decode(r_.figures({0, 1000, 50}), 1, {kDry}), ReplyStatus::Ok);
    EXPECT_TRUE(allowed_);
    expectOutcome(out_[0], 0, 1, 1);
    ASSERT_EQ(decode(r_.figures({5, 1000, -5000}), 1, {kDry}),
              ReplyStatus::Ok);
    EXPECT_TRUE(allowed_);
    expectOutcome(out_[0], 4, 1, 0, 0);
    /* beside an enforced rule: the enforced one decides */
    ASSERT_EQ(decode(r_.figures({0, 1000, 50, 5, 1000, 0}), 2,
                     {kDry, {1, false}}),
              ReplyStatus::Ok);
    EXPECT_TRUE(allowed_);
    expectOutcome(out_[0], 0, 1, 1);
    expectOutcome(out_[1], 4, 1, 0);
    ASSERT_EQ(decode(r_.figures({5, 1000, 0, 0, 1000, 50}), 2,
                     {kDry, {1, false}}),
              ReplyStatus::Ok);
    EXPECT_FALSE(allowed_);
    expectOutcome(out_[0], 5, 1, 0);
    expectOutcome(out_[1], 0, 1, 1);
}

/* The largest figure a valid rule gives: twice a 366-day window. */
TEST_F(Reply, LargestLegitimateFiguresDecode) {
    const long long us = 2LL * 366 * 86400 * 1000000;
    ASSERT_EQ(decode(r_.figures({1000000000, us, us}), 1), ReplyStatus::Ok);
    EXPECT_FALSE(allowed_);
    expectOutcome(out_[0], 1000000000, us / 1000, us / 1000);
    ASSERT_EQ(decode(r_.figures({1000000000, us, -us}), 1), ReplyStatus::Ok);
    EXPECT_TRUE(allowed_);
    expectOutcome(out_[0], 999999999, us / 1000, 0, us / 1000);
}

/* Past 2^53 no script figure is exact: not a reply of this script
 * (2^53 + 1 is no double; 2^53 + 2 is the next one). */
TEST_F(Reply, FiguresBeyondTheScriptsDoublesAreMalformed) {
    const long long big = (1LL << 53) + 2;
    EXPECT_EQ(decode(r_.figures({big, 1000, 0}), 1), ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.figures({0, big, 1000}), 1), ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.figures({0, 1000, big}), 1), ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.figures({0, 1000, -big}), 1),
              ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.figures({0, 1000, LLONG_MAX}), 1),
              ReplyStatus::Malformed);
}

TEST_F(Reply, NoScript) {
    EXPECT_EQ(decode(r_.error("NOSCRIPT No matching script. Please use EVAL."),
                     1),
              ReplyStatus::NoScript);
    EXPECT_EQ(decode(r_.error("NOSCRIPT"), 2), ReplyStatus::NoScript);
}

TEST_F(Reply, OtherErrors) {
    for (const char* e :
         {"ERR rl: unknown algorithm token_bucket",
          "OOM command not allowed when used memory > 'maxmemory'.",
          "BUSY Redis is busy running a script.",
          "ERR Error running script (call to f_1234): @user_script:1",
          "NOSCRIP", "noscript No matching script", " NOSCRIPT", ""}) {
        EXPECT_EQ(decode(r_.error(e), 1), ReplyStatus::Error)
            << '"' << e << '"';
    }
}

TEST_F(Reply, ErrorWithoutText) {
    redisReply* e = r_.nil();
    e->type = REDIS_REPLY_ERROR;
    EXPECT_EQ(decode(e, 1), ReplyStatus::Error);
}

TEST_F(Reply, NullIsMalformed) {
    EXPECT_EQ(decode(nullptr, 1), ReplyStatus::Malformed);
}

TEST_F(Reply, WrongTypesAreMalformed) {
    EXPECT_EQ(decode(r_.text(REDIS_REPLY_STRING, "1"), 1),
              ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.nil(), 1), ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.text(REDIS_REPLY_STATUS, "OK"), 1),
              ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.integer(1), 1), ReplyStatus::Malformed);
}

TEST_F(Reply, WrongElementCountIsMalformed) {
    EXPECT_EQ(decode(r_.figures({}), 1), ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.figures({9}), 1), ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.figures({9, 1000}), 1), ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.figures({9, 1000, 0, 0}), 1),
              ReplyStatus::Malformed);
    /* One rule's worth for a two-rule call, and the reverse. */
    EXPECT_EQ(decode(r_.figures({9, 1000, 0}), 2), ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.figures({9, 1000, 0, 9, 1000, 0}), 1),
              ReplyStatus::Malformed);
    /* The previous layout: allowed, four figures per rule, the time. */
    EXPECT_EQ(decode(r_.figures({1, 9, 1000, 0, 0, kNow}), 1),
              ReplyStatus::Malformed);
}

TEST_F(Reply, MissingBytesAreMalformed) {
    redisReply* a = r_.figures({9, 1000, 0});
    a->str = nullptr;
    EXPECT_EQ(decode(a, 1), ReplyStatus::Malformed);
}

/* An array of integers is not this script's reply. */
TEST_F(Reply, ArraysAreMalformed) {
    EXPECT_EQ(decode(r_.integers({9, 1000, 0}), 1), ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.array({}), 1), ReplyStatus::Malformed);
}

TEST_F(Reply, FractionalOrNonFiniteFiguresAreMalformed) {
    for (size_t i = 0; i < 3; i++) {
        for (double bad : {0.5, 1e-9, double(NAN), double(INFINITY),
                           -double(INFINITY), -0.5}) {
            double e[] = {0, 1000, 1000};
            e[i] = bad;
            EXPECT_EQ(decode(r_.doubles({e[0], e[1], e[2]}), 1),
                      ReplyStatus::Malformed)
                << "figure " << i << " = " << bad;
        }
    }
}

/* What is left and the reset time are never negative (a verdict may
 * be: a delay). */
TEST_F(Reply, NegativeFiguresAreMalformed) {
    EXPECT_EQ(decode(r_.figures({-1, 1000, 0}), 1), ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.figures({9, -1, 0}), 1), ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.figures({9, 1000, 0, 9, -1000, 0}), 2),
              ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.figures({LLONG_MIN, 1000, 0}), 1),
              ReplyStatus::Malformed);
}

/* The same part in the C++ core's figures: microseconds, as decide()
 * gives them. */
TEST_F(Reply, FiguresInMicroseconds) {
    RuleAsked asked[] = {{2, false}, {1, false}};
    rl::Figures f[2];
    bool allowed = false;
    ASSERT_EQ(rl::decodeFigures(r_.figures({10, 1500, -2500, 7, 999, 0}), 2,
                                asked, &allowed, f),
              ReplyStatus::Ok);
    EXPECT_TRUE(allowed);
    EXPECT_EQ(f[0].remaining, 8);
    EXPECT_EQ(f[0].resetUs, 1500);
    EXPECT_EQ(f[0].retryUs, 0);
    EXPECT_EQ(f[0].delayUs, 2500);
    EXPECT_EQ(f[1].remaining, 6);
    EXPECT_EQ(f[1].resetUs, 999);
    EXPECT_EQ(f[1].delayUs, 0);
}

/* The call's clock: its reply's first figure, microseconds since the
 * epoch; -1 for anything that is not a reply of the script. */
TEST_F(Reply, Clock) {
    EXPECT_EQ(rl::replyClock(r_.figures({kNow, 9, 1000, 0})), kNow);
    EXPECT_EQ(rl::replyClock(r_.figures({kNow})), kNow);
    EXPECT_EQ(rl::replyClock(r_.figures({0})), 0);
    const long long later = 4102444800LL * 1000000; /* 2100-01-01 */
    EXPECT_EQ(rl::replyClock(r_.figures({later})), later);
    EXPECT_EQ(rl::replyClock(r_.figures({})), -1);
    EXPECT_EQ(rl::replyClock(r_.text(REDIS_REPLY_STRING, "1234567")), -1);
    EXPECT_EQ(rl::replyClock(r_.figures({-1})), -1);
    EXPECT_EQ(rl::replyClock(r_.doubles({0.5})), -1);
    EXPECT_EQ(rl::replyClock(r_.doubles({double(NAN)})), -1);
    EXPECT_EQ(rl::replyClock(r_.error("NOSCRIPT")), -1);
    EXPECT_EQ(rl::replyClock(r_.integer(kNow)), -1);
    EXPECT_EQ(rl::replyClock(nullptr), -1);
}

/* The trailer: (rule index, limit) records of overrides, indexes
 * increasing below the call's rules, limits those of a rate; and
 * (-1 - last rule of the request, units) records of leases granted. */
std::string packed(std::initializer_list<double> v) {
    std::string s;
    for (double d : v) {
        char b[8];
        std::memcpy(b, &d, 8);  /* little-endian hosts (the tests') */
        s.append(b, 8);
    }
    return s;
}

TEST(Trailer, ValidRecords) {
    EXPECT_TRUE(rl::validTrailer("", 0, 1));
    std::string t = packed({0, 50, 2, 1000000000});
    EXPECT_TRUE(rl::validTrailer(t.data(), t.size(), 3));
    EXPECT_FALSE(rl::validTrailer(t.data(), t.size(), 2)) << "rule 2 of 2";
    EXPECT_FALSE(rl::validTrailer(t.data(), t.size() - 8, 3)) << "half";
    for (const std::string& bad :
         {packed({0, 0}), packed({0, 1.5}), packed({0, 1e9 + 1}),
          packed({0.5, 5}), packed({1, 5, 1, 6}),
          packed({1, 5, 0, 6}), packed({0, double(NAN)})}) {
        EXPECT_FALSE(rl::validTrailer(bad.data(), bad.size(), 4));
    }
}

TEST(Trailer, GrantsFollowTheirRequestsOverrides) {
    /* a grant to the request ending at rule 1, an override of rule 2,
     * a grant to the request ending at rule 3 after its override */
    std::string t = packed({-2, 1e12, 2, 7, 3, 9, -4, 5});
    EXPECT_TRUE(rl::validTrailer(t.data(), t.size(), 4));
    EXPECT_FALSE(rl::validTrailer(t.data(), t.size(), 3)) << "rule 3 of 3";
    for (const std::string& bad :
         {packed({-1, 0}), packed({-1, 0.5}), packed({-1, 1e16}),
          packed({-2, 5, -2, 5}), packed({-3, 5, -2, 5}),
          packed({2, 5, -2, 5}) /* a grant before an override it follows */,
          packed({-2, 5, 1, 5}) /* an override after its request's grant */,
          packed({-1.5, 5})}) {
        EXPECT_FALSE(rl::validTrailer(bad.data(), bad.size(), 4));
    }
}

TEST(Trailer, LimitsOfEachCallInTurn) {
    /* three calls of 2, 1 and 3 rules; overrides of rules 1, 3 and 5 */
    std::string t = packed({1, 10, 3, 30, 5, 50});
    size_t next = 0;
    int64_t limits[3], grant = -1;
    ASSERT_TRUE(rl::validTrailer(t.data(), t.size(), 6));
    EXPECT_TRUE(rl::trailerFor(t.data(), t.size(), &next, 0, 2, limits,
                               &grant));
    EXPECT_EQ(limits[0], 0);
    EXPECT_EQ(limits[1], 10);
    EXPECT_EQ(grant, 0);
    EXPECT_FALSE(rl::trailerFor(t.data(), t.size(), &next, 2, 1, limits,
                                &grant));
    EXPECT_EQ(limits[0], 0);
    EXPECT_TRUE(rl::trailerFor(t.data(), t.size(), &next, 3, 3, limits,
                               &grant));
    EXPECT_EQ(limits[0], 30);
    EXPECT_EQ(limits[1], 0);
    EXPECT_EQ(limits[2], 50);
    EXPECT_EQ(next, 3u);
}

TEST(Trailer, GrantsOfEachCallInTurn) {
    /* calls of 1, 2 and 2 rules: a grant to the first, an override of
     * rule 2 and a grant to the second, nothing for the third */
    std::string t = packed({-1, 40, 2, 8, -3, 1000});
    size_t next = 0;
    int64_t limits[2], grant = -1;
    ASSERT_TRUE(rl::validTrailer(t.data(), t.size(), 5));
    EXPECT_FALSE(rl::trailerFor(t.data(), t.size(), &next, 0, 1, limits,
                                &grant));
    EXPECT_EQ(grant, 40);
    EXPECT_TRUE(rl::trailerFor(t.data(), t.size(), &next, 1, 2, limits,
                               &grant));
    EXPECT_EQ(limits[1], 8);
    EXPECT_EQ(grant, 1000);
    EXPECT_FALSE(rl::trailerFor(t.data(), t.size(), &next, 3, 2, limits,
                                &grant));
    EXPECT_EQ(grant, 0);
}

}  // namespace

/* A delay longer than the rule ever asks (a rule without delay= never
 * asks one) is no reply of the script's: a broken or hostile Redis must
 * not hold a request for years. Found by t/048-random-replies.t: a
 * verdict of -5 s held a request of a rule without delay= for 5 s. */
TEST_F(Reply, DelayBeyondTheRulesIsMalformed) {
    RuleAsked nodelay{1, false, 0};
    RuleAsked shapes{1, false, 300000};
    EXPECT_EQ(decode(r_.figures({5, 1000, -5000000}), 1, {nodelay}),
              ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.figures({5, 1000, -1}), 1, {nodelay}),
              ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.figures({5, 1000, -300001}), 1, {shapes}),
              ReplyStatus::Malformed);
    ASSERT_EQ(decode(r_.figures({5, 1000, -300000}), 1, {shapes}),
              ReplyStatus::Ok);
    expectOutcome(out_[0], 4, 1, 0, 300);
    /* a dry run's delay is never waited: any passes */
    RuleAsked dry{1, true, 0};
    EXPECT_EQ(decode(r_.figures({5, 1000, -5000000}), 1, {dry}),
              ReplyStatus::Ok);
    EXPECT_EQ(out_[0].delayMs, 0);
}

/* A retry longer than the rule ever gives is no reply of the script's
 * either: the deny cache would reject the key for as long (and the
 * cache outlives reloads), with a Retry-After of years. */
TEST_F(Reply, RetryBeyondTheRulesIsMalformed) {
    RuleAsked asked{1, false, 0, 61000000};
    EXPECT_EQ(decode(r_.figures({0, 1000, 61000001}), 1, {asked}),
              ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.figures({0, 1000, int64_t{1} << 53}), 1, {asked}),
              ReplyStatus::Malformed);
    ASSERT_EQ(decode(r_.figures({0, 1000, 61000000}), 1, {asked}),
              ReplyStatus::Ok);
    EXPECT_EQ(out_[0].retryMs, 61000);
    /* a dry run's too: it is logged and counted */
    RuleAsked dry{1, true, 0, 61000000};
    EXPECT_EQ(decode(r_.figures({0, 1000, 61000001}), 1, {dry}),
              ReplyStatus::Malformed);
}
