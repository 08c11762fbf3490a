/* Leases in the script (SPEC section 6), run by a real redis-server
 * (tests/redis_fixture.hpp): a request that asks for k units is granted
 * the most up to k that each of its rules admits after it, counted as
 * that many requests of cost 1 at its time; a refund at that time gives
 * back what the instance did not spend. */

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "redis_fixture.hpp"

namespace {

using namespace rltest;

constexpr uint64_t kDay = 86400 * kSec;

class LuaLease : public ScriptFixture {
protected:
    /* One request asking for `ask` units at time t; its decision. */
    Decision asking(const std::vector<Rule>& rules, uint64_t t,
                    uint64_t ask) {
        std::vector<Decision> out;
        decideBatch({{rules, static_cast<int64_t>(t)}}, &out, {ask});
        return out.empty() ? Decision{} : out[0];
    }
};

TEST_F(LuaLease, GrantIsWhatEveryRuleAdmitsAfterTheRequest) {
    Rule f = fixed("10.0.0.1", 10, kDay);
    uint64_t t = windowStart(kDay) + kSec;

    Decision d = asking({f}, t, 5);
    ASSERT_EQ(d.status, ReplyStatus::Ok);
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.grant, 5);
    /* the request's own figures, as in exact mode */
    EXPECT_EQ(d.out[0].remaining, 9);
    EXPECT_EQ(state(f).at("c"), "6");

    /* 4 left: the request takes 1, the lease the other 3 */
    d = asking({f}, t, 100);
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.grant, 3);
    EXPECT_EQ(d.out[0].remaining, 3);
    EXPECT_EQ(state(f).at("c"), "10");

    /* nothing left: rejected, nothing granted, nothing written */
    d = asking({f}, t, 100);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.grant, 0);
    EXPECT_EQ(state(f).at("c"), "10");
}

/* The module asks on a record of cost 0 of its own behind a request:
 * it counts the grant alone. */
TEST_F(LuaLease, AskOfCostZeroCountsTheGrantAlone) {
    Rule f = fixed("10.0.0.2", 10, kDay);
    f.cost = 0;
    uint64_t t = windowStart(kDay) + kSec;
    Decision d = asking({f}, t, 4);
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.grant, 4);
    EXPECT_EQ(d.out[0].remaining, 10) << "what Redis had before the grant";
    EXPECT_EQ(state(f).at("c"), "4");
}

TEST_F(LuaLease, StackedRulesGrantWhatTheTightestAdmits) {
    Rule wide = fixed("10.0.0.3", 100, kDay);
    Rule tight = sliding("10.0.0.3", 3, kDay);
    uint64_t t = windowStart(kDay) + kSec;
    Decision d = asking({wide, tight}, t, 50);
    ASSERT_TRUE(d.allowed) << describe(d);
    EXPECT_EQ(d.grant, 2);
    EXPECT_EQ(state(wide).at("c"), "3");
    EXPECT_EQ(state(tight).at("c"), "3");
    EXPECT_FALSE(probe({tight}, t).allowed);
}

/* A grant counts in each algorithm as that many requests of cost 1 at
 * its time: a key granted 4 with its request decides later requests as
 * a key given 5 requests at that time does. */
TEST_F(LuaLease, GrantCountsAsRequestsOfCostOneAtItsTime) {
    uint64_t t = windowStart(kDay) + 7 * kSec;
    auto rules = [](const std::string& v) {
        return std::vector<Rule>{fixed(v, 20, 60 * kSec),
                                 sliding(v, 20, 60 * kSec),
                                 log(v, 20, 60 * kSec),
                                 token(v, 20, 60 * kSec, 20),
                                 leaky(v, 20, 60 * kSec, 19, 19),
                                 gcra(v, 20, 60 * kSec, 19, 19)};
    };
    std::vector<Rule> leased = rules("leased"), counted = rules("counted");
    for (size_t i = 0; i < leased.size(); i++) {
        SCOPED_TRACE(leased[i].algorithm);
        Decision d = asking({leased[i]}, t, 4);
        ASSERT_TRUE(d.allowed) << describe(d);
        ASSERT_EQ(d.grant, 4);
        for (int k = 0; k < 5; k++) {
            ASSERT_TRUE(admits(counted[i], t));
        }
        for (uint64_t later : {t, t + 1500 * kMs, t + 9 * kSec}) {
            Decision a = probe({leased[i]}, later);
            Decision b = probe({counted[i]}, later);
            EXPECT_EQ(describe(a), describe(b)) << "at +" << (later - t);
        }
    }
}

/* What the instance did not spend goes back at the grant's time: the
 * rule is as if only the spent units had been requests. */
TEST_F(LuaLease, UnspentUnitsGoBackAtTheGrantsTime) {
    uint64_t t = windowStart(kDay) + 7 * kSec;
    std::vector<Rule> leased{fixed("r", 20, 60 * kSec),
                             sliding("r", 20, 60 * kSec),
                             log("r", 20, 60 * kSec),
                             token("r", 20, 60 * kSec, 20),
                             leaky("r", 20, 60 * kSec, 19, 19),
                             gcra("r", 20, 60 * kSec, 19, 19)};
    std::vector<Rule> counted{fixed("c", 20, 60 * kSec),
                              sliding("c", 20, 60 * kSec),
                              log("c", 20, 60 * kSec),
                              token("c", 20, 60 * kSec, 20),
                              leaky("c", 20, 60 * kSec, 19, 19),
                              gcra("c", 20, 60 * kSec, 19, 19)};
    for (size_t i = 0; i < leased.size(); i++) {
        SCOPED_TRACE(leased[i].algorithm);
        Rule ask = leased[i];
        ask.cost = 0;
        Decision d = asking({ask}, t, 10);
        ASSERT_EQ(d.grant, 10);
        /* 3 spent, 7 back, later, at t */
        Rule back = leased[i];
        back.cost = 7;
        refund({back}, t);
        for (int k = 0; k < 3; k++) {
            ASSERT_TRUE(admits(counted[i], t));
        }
        for (uint64_t later : {t + 100 * kMs, t + 5 * kSec}) {
            EXPECT_EQ(describe(probe({leased[i]}, later)),
                      describe(probe({counted[i]}, later)))
                << "at +" << (later - t);
        }
    }
}

/* A blocked key value, or a rule that rejects: no grant. */
TEST_F(LuaLease, NoGrantWhenTheRequestIsRejected) {
    Rule f = fixed("10.0.0.4", 10, kDay);
    Rule g = gcra("10.0.0.4", 1, kSec, 0, 0);
    uint64_t t = windowStart(kDay) + kSec;
    ASSERT_TRUE(admits(g, t));
    Decision d = asking({f, g}, t, 5);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.grant, 0);
    EXPECT_EQ(integerCommand({"EXISTS", f.key}), 0);

    Rule b = fixed("10.0.0.5", 10, kDay);
    std::string block = b.key.substr(0, b.key.size() - 17);
    command({"SET", block, "1", "EX", "60"});
    d = asking({b}, t, 5);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.grant, 0);
}

/* Requests that ask and requests that do not, in one call: each its own
 * figures, the grants in the trailer where they belong. */
TEST_F(LuaLease, GrantsInABatchBelongToTheirRequests) {
    Rule a = fixed("a", 100, kDay);
    Rule b = fixed("b", 100, kDay);
    Rule c = sliding("b", 100, kDay);
    uint64_t t = windowStart(kDay) + kSec;
    std::vector<Decision> out;
    decideBatch({{{a}, static_cast<int64_t>(t)},
                 {{b, c}, static_cast<int64_t>(t)},
                 {{a}, static_cast<int64_t>(t)},
                 {{b, c}, static_cast<int64_t>(t)}},
                &out, {0, 20, 30, 0});
    ASSERT_EQ(out.size(), 4u);
    EXPECT_EQ(out[0].grant, 0);
    EXPECT_EQ(out[1].grant, 20);
    EXPECT_EQ(out[2].grant, 30);
    EXPECT_EQ(out[3].grant, 0);
    EXPECT_EQ(out[2].out[0].remaining, 98) << "after the first request";
    EXPECT_EQ(out[3].out[0].remaining, 100 - (1 + 20) - 1);
    EXPECT_EQ(state(a).at("c"), "32");
    EXPECT_EQ(state(b).at("c"), "22");
}

}  // namespace
