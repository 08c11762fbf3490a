/* Decoding the script's reply, one string of little-endian doubles:
 *   allowed, remaining_1, reset_us_1, retry_us_1, delay_us_1, ...,
 *     delay_us_n, now_us
 * from hiredis replies built by hand; times leave in milliseconds,
 * rounded up. */

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

    ReplyStatus decode(const redisReply* reply, size_t rules) {
        for (RuleOutcome& o : out_) {
            o = {-7, -7, -7, -7, -7};
        }
        nowUs_ = -7;
        return rl::decodeReply(reply, rules, &allowed_, out_, &nowUs_);
    }

    Replies r_;
    bool allowed_ = false;
    RuleOutcome out_[kMaxRules];
    int64_t nowUs_ = -7;
};

void expectOutcome(const RuleOutcome& o, int64_t remaining, int64_t reset,
                   int64_t retry, int64_t delay = 0) {
    EXPECT_EQ(o.remaining, remaining);
    EXPECT_EQ(o.resetMs, reset);
    EXPECT_EQ(o.retryMs, retry);
    EXPECT_EQ(o.delayMs, delay);
}

TEST_F(Reply, AllowedOneRule) {
    allowed_ = false;
    ASSERT_EQ(decode(r_.figures({1, 9, 1000000, 0, 0, kNow}), 1),
              ReplyStatus::Ok);
    EXPECT_TRUE(allowed_);
    expectOutcome(out_[0], 9, 1000, 0);
    EXPECT_EQ(nowUs_, kNow);
}

TEST_F(Reply, AllowedThreeRules) {
    allowed_ = false;
    ASSERT_EQ(decode(r_.figures({1, 9, 1000000, 0, 0, 0, 60000000, 0, 0,
                                  99, 1000, 0, 0, kNow}),
                     3),
              ReplyStatus::Ok);
    EXPECT_TRUE(allowed_);
    EXPECT_EQ(nowUs_, kNow);
    expectOutcome(out_[0], 9, 1000, 0);
    expectOutcome(out_[1], 0, 60000, 0);
    expectOutcome(out_[2], 99, 1, 0);
}

TEST_F(Reply, RejectedByOneOfTwoRules) {
    allowed_ = true;
    ASSERT_EQ(decode(r_.figures({0, 4, 700000, 0, 0, 0, 59000000, 1500000,
                                  0, kNow}),
                     2),
              ReplyStatus::Ok);
    EXPECT_FALSE(allowed_);
    EXPECT_EQ(nowUs_, kNow);
    expectOutcome(out_[0], 4, 700, 0);
    expectOutcome(out_[1], 0, 59000, 1500);
}

/* Microseconds become milliseconds rounded up: a retry of 1 us is 1 ms,
 * never 0 (which would read as "admitted"). */
TEST_F(Reply, MicrosecondsRoundUpToMilliseconds) {
    ASSERT_EQ(decode(r_.figures({0, 0, 1, 1, 0, kNow}), 1),
              ReplyStatus::Ok);
    expectOutcome(out_[0], 0, 1, 1);
    ASSERT_EQ(decode(r_.figures({0, 0, 999, 1000, 0, kNow}), 1),
              ReplyStatus::Ok);
    expectOutcome(out_[0], 0, 1, 1);
    ASSERT_EQ(decode(r_.figures({0, 0, 1001, 1999, 0, kNow}), 1),
              ReplyStatus::Ok);
    expectOutcome(out_[0], 0, 2, 2);
    ASSERT_EQ(decode(r_.figures({1, 3, 0, 0, 2000001, kNow}), 1),
              ReplyStatus::Ok);
    expectOutcome(out_[0], 3, 0, 0, 2001);
    EXPECT_EQ(rl::msCeil(0), 0);
    EXPECT_EQ(rl::msCeil(1), 1);
    EXPECT_EQ(rl::msCeil(1000), 1);
    EXPECT_EQ(rl::msCeil(1001), 2);
}

/* An admitted request may be delayed by the rules that shape it; the
 * module waits for the longest. */
TEST_F(Reply, AdmittedWithDelays) {
    ASSERT_EQ(decode(r_.figures({1, 2, 300000, 0, 100000, 7, 5000, 0, 0,
                                  kNow}),
                     2),
              ReplyStatus::Ok);
    EXPECT_TRUE(allowed_);
    expectOutcome(out_[0], 2, 300, 0, 100);
    expectOutcome(out_[1], 7, 5, 0, 0);
}

/* A rejected request waits for nothing: a delay on a rejection is not
 * a reply of this script. */
TEST_F(Reply, RejectionWithADelayIsMalformed) {
    EXPECT_EQ(decode(r_.figures({0, 0, 1000, 1000, 1, kNow}), 1),
              ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.figures({0, 2, 300, 0, 100, 0, 1000, 1000, 0,
                                  kNow}),
                     2),
              ReplyStatus::Malformed);
}

/* The largest figure a valid rule gives: twice a 366-day window. */
TEST_F(Reply, LargestLegitimateFiguresDecode) {
    const long long us = 2LL * 366 * 86400 * 1000000;
    ASSERT_EQ(decode(r_.figures({0, 1000000000, us, us, 0, kNow}), 1),
              ReplyStatus::Ok);
    EXPECT_FALSE(allowed_);
    expectOutcome(out_[0], 1000000000, us / 1000, us / 1000);
}

/* Past 2^53 no script figure is exact: not a reply of this script
 * (2^53 + 1 is no double; 2^53 + 2 is the next one). */
TEST_F(Reply, FiguresBeyondTheScriptsDoublesAreMalformed) {
    const long long big = (1LL << 53) + 2;
    EXPECT_EQ(decode(r_.figures({0, 0, big, 1000, 0, kNow}), 1),
              ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.figures({0, 0, 1000, big, 0, kNow}), 1),
              ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.figures({1, big, 1000, 0, 0, kNow}), 1),
              ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.figures({1, 0, 1000, 0, LLONG_MAX, kNow}), 1),
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
    EXPECT_EQ(decode(r_.figures({1}), 1), ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.figures({1, kNow}), 1), ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.figures({1, 9, 1000, 0, kNow}), 1),
              ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.figures({1, 9, 1000, 0, 0, kNow, 5}), 1),
              ReplyStatus::Malformed);
    /* Without the time. */
    EXPECT_EQ(decode(r_.figures({1, 9, 1000, 0, 0}), 1),
              ReplyStatus::Malformed);
    /* One rule's worth for a two-rule call, and the reverse. */
    EXPECT_EQ(decode(r_.figures({1, 9, 1000, 0, 0, kNow}), 2),
              ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.figures({1, 9, 1000, 0, 0, 9, 1000, 0, 0, kNow}),
                     1),
              ReplyStatus::Malformed);
    /* The previous layout: three figures per rule. */
    EXPECT_EQ(decode(r_.figures({1, 9, 1000, 0, 9, 1000, 0, kNow}), 2),
              ReplyStatus::Malformed);
}

TEST_F(Reply, MissingBytesAreMalformed) {
    redisReply* a = r_.figures({1, 9, 1000, 0, 0, kNow});
    a->str = nullptr;
    EXPECT_EQ(decode(a, 1), ReplyStatus::Malformed);
}

/* The previous layout, an array of integers, is not this script's. */
TEST_F(Reply, ArraysAreMalformed) {
    EXPECT_EQ(decode(r_.integers({1, 9, 1000, 0, 0, kNow}), 1),
              ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.array({}), 1), ReplyStatus::Malformed);
}

TEST_F(Reply, FractionalOrNonFiniteFiguresAreMalformed) {
    for (size_t i = 0; i < 6; i++) {
        for (double bad : {0.5, 1e-9, double(NAN), double(INFINITY),
                           -double(INFINITY), -0.5}) {
            double e[] = {0, 0, 1000, 1000, 0, double(kNow)};
            e[i] = bad;
            EXPECT_EQ(decode(r_.doubles({e[0], e[1], e[2], e[3], e[4],
                                         e[5]}),
                             1),
                      ReplyStatus::Malformed)
                << "figure " << i << " = " << bad;
        }
    }
}

TEST_F(Reply, NegativeFiguresAreMalformed) {
    EXPECT_EQ(decode(r_.figures({1, -1, 1000, 0, 0, kNow}), 1),
              ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.figures({1, 9, -1, 0, 0, kNow}), 1),
              ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.figures({0, 0, 1000, -1000, 0, kNow}), 1),
              ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.figures({1, 9, 1000, 0, -1, kNow}), 1),
              ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.figures({1, 9, 1000, 0, 0, 9, 1000, -1, 0, kNow}),
                     2),
              ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.figures({1, LLONG_MIN, 1000, 0, 0, kNow}), 1),
              ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.figures({1, 9, 1000, 0, 0, -1}), 1),
              ReplyStatus::Malformed);
}

/* The time is microseconds since the epoch, sent back with a refund. */
TEST_F(Reply, TimeIsPassedThrough) {
    ASSERT_EQ(decode(r_.figures({1, 9, 1000, 0, 0, 0}), 1), ReplyStatus::Ok);
    EXPECT_EQ(nowUs_, 0);
    const long long later = 4102444800LL * 1000000; /* 2100-01-01 */
    ASSERT_EQ(decode(r_.figures({1, 9, 1000, 0, 0, later}), 1),
              ReplyStatus::Ok);
    EXPECT_EQ(nowUs_, later);
}

TEST_F(Reply, AllowedFlagMustBeZeroOrOne) {
    for (long long flag : {2LL, -1LL, 100LL, LLONG_MAX}) {
        EXPECT_EQ(decode(r_.figures({flag, 9, 1000, 0, 0, kNow}), 1),
                  ReplyStatus::Malformed)
            << "allowed " << flag;
    }
}

/* A rejection must name a rule that rejected (retry > 0). */
TEST_F(Reply, RejectionWithoutARetryIsMalformed) {
    EXPECT_EQ(decode(r_.figures({0, 0, 1000, 0, 0, kNow}), 1),
              ReplyStatus::Malformed);
    EXPECT_EQ(decode(r_.figures({0, 0, 1000, 0, 0, 3, 50, 0, 0, kNow}), 2),
              ReplyStatus::Malformed);
}

/* An admission may name a dry-run rule that would have rejected. */
TEST_F(Reply, AdmissionWithADryRunRejection) {
    EXPECT_EQ(decode(r_.figures({1, 0, 1000, 50, 0, kNow}), 1),
              ReplyStatus::Ok);
    EXPECT_TRUE(allowed_);
    EXPECT_EQ(out_[0].retryMs, 1);
}

}  // namespace
