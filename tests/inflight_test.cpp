/* The core's in-flight limit (concurrency=, SPEC section 9) and charges
 * (charge=, SPEC section 10) on a fake clock: slots held until released
 * or expired, renewed, a dead worker's slots expiring within the hold,
 * a slot id held once, a state the embedded store copies for another N;
 * charges counting past the limit (a debt the next requests wait out)
 * and giving back. differential_test.cpp holds the script to the same
 * figures. */

#include "core/algorithm.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "fake_clock.hpp"

namespace {

using namespace rltest::clock;
using rl::Algorithm;
using rl::Check;
using rl::Params;
using rl::State;

/* One concurrency rule's state, and its slots' log. */
struct Inflight {
    Params p;
    State s{};
    std::vector<int64_t> log;

    Inflight(uint64_t limit, int64_t holdUs)
        : p{Algorithm::Concurrency, limit, static_cast<uint64_t>(holdUs), 0,
            0},
          log(rl::logSlots(p)) {}

    Params of(uint64_t slot) const {
        Params q = p;
        q.slotId = slot;
        return q;
    }
    Check check(int64_t now) const {
        return rl::check(p, s, log.data(), 1, now);
    }
    /* the request of this slot asks at now: held if admitted */
    bool take(uint64_t slot, int64_t now) {
        Check c = check(now);
        if (c.ok) {
            rl::commit(of(slot), s, log.data(), 1, now);
        }
        return c.ok;
    }
    void release(uint64_t slot) {
        rl::refund(of(slot), s, log.data(), 1, 0);
    }
    void renew(uint64_t slot, int64_t now) {
        rl::renew(of(slot), s, log.data(), now);
    }
    int64_t held() const { return s.a / 2; }
    int64_t idleAt() const { return rl::idleAtUs(p, s, log.data(), 0); }
};

TEST(Concurrency, NameAndParameters) {
    EXPECT_EQ(rl::algorithmName(Algorithm::Concurrency), "concurrency");
    /* not a rate: algorithm= never names it */
    EXPECT_FALSE(rl::algorithmFromName("concurrency").has_value());
    EXPECT_FALSE(rl::takesBurst(Algorithm::Concurrency));
    EXPECT_FALSE(rl::takesDelay(Algorithm::Concurrency));
    Params p{Algorithm::Concurrency, 4, 60 * kSec, 0, 0};
    EXPECT_EQ(rl::capacity(p), 4u);
    EXPECT_EQ(rl::logSlots(p), 8u);
    EXPECT_EQ(rl::maxDelayUs(p), 0);
    /* its retry, or a manual block's 60 s */
    EXPECT_EQ(rl::maxRetryUs(p, 1), 60 * kSec + kMs);
    EXPECT_TRUE(rl::exactArithmetic(p, 1));
}

TEST(Concurrency, HoldsUntilReleased) {
    Inflight f(2, 60 * kSec);
    Check c = f.check(kT0);
    EXPECT_TRUE(c.ok);
    EXPECT_EQ(c.left, 2);
    EXPECT_EQ(c.resetUs, 0);
    EXPECT_TRUE(f.take(1, kT0));
    EXPECT_TRUE(f.take(2, kT0 + 1));
    c = f.check(kT0 + 2);
    EXPECT_FALSE(c.ok);
    EXPECT_EQ(c.left, 0);
    EXPECT_EQ(c.retryUs, rl::kInflightRetryUs);
    EXPECT_EQ(c.resetUs, rl::kInflightRetryUs);
    /* a rejection holds nothing: a third request is still rejected
     * after its try, and one release lets one in */
    EXPECT_FALSE(f.take(3, kT0 + 3));
    f.release(1);
    EXPECT_EQ(f.held(), 1);
    EXPECT_TRUE(f.take(3, kT0 + 4));
    EXPECT_FALSE(f.take(4, kT0 + 5));
    /* releasing what is not held changes nothing */
    f.release(99);
    f.release(1);
    EXPECT_EQ(f.held(), 2);
    f.release(2);
    f.release(3);
    EXPECT_EQ(f.held(), 0);
    EXPECT_EQ(f.check(kT0 + 6).left, 2);
}

TEST(Concurrency, UnrenewedSlotsExpireWithinTheHold) {
    const int64_t hold = 10 * kSec;
    Inflight f(2, hold);
    EXPECT_TRUE(f.take(1, kT0));        /* a worker that dies */
    EXPECT_TRUE(f.take(2, kT0 + kSec)); /* one that renews */
    EXPECT_EQ(f.idleAt(), kT0 + kSec + hold);
    f.renew(2, kT0 + 4 * kSec);
    f.renew(2, kT0 + 8 * kSec);
    EXPECT_FALSE(f.check(kT0 + hold - 1).ok);   /* slot 1's last us */
    EXPECT_TRUE(f.check(kT0 + hold).ok);        /* gone: not renewed */
    f.renew(2, kT0 + 12 * kSec);
    /* the expired slot goes when the next one is held */
    EXPECT_TRUE(f.take(3, kT0 + 13 * kSec));
    EXPECT_EQ(f.held(), 2);
    EXPECT_FALSE(f.check(kT0 + 13 * kSec).ok);
    /* slot 2, renewed at 12 s, is held until 22 s */
    EXPECT_FALSE(f.check(kT0 + 12 * kSec + hold - 1).ok);
    f.release(3);
    EXPECT_TRUE(f.take(4, kT0 + 12 * kSec + hold));
    EXPECT_EQ(f.held(), 1);
    EXPECT_EQ(f.idleAt(), kT0 + 12 * kSec + 2 * hold);
}

TEST(Concurrency, RenewalNeverShortensAndPutsBackALostSlot) {
    Inflight f(3, 10 * kSec);
    EXPECT_TRUE(f.take(1, kT0 + 5 * kSec));
    f.renew(1, kT0);    /* a renewal from an earlier time: no sooner */
    EXPECT_EQ(f.idleAt(), kT0 + 15 * kSec);
    f.release(1);
    EXPECT_EQ(f.held(), 0);
    /* its request still runs (the module never renews a slot after its
     * release): a slot lost is put back, a hold from the renewal */
    f.renew(1, kT0 + 6 * kSec);
    EXPECT_EQ(f.held(), 1);
    EXPECT_EQ(f.idleAt(), kT0 + 16 * kSec);
    EXPECT_TRUE(f.take(2, kT0 + 7 * kSec));
    EXPECT_TRUE(f.take(3, kT0 + 7 * kSec));
    EXPECT_FALSE(f.check(kT0 + 7 * kSec).ok);
}

TEST(Concurrency, APutBackNeedsRoomInTheRing) {
    /* the embedded store's ring holds N slots: one lost while N others
     * were taken is not put back until one of them goes */
    const int64_t hold = 10 * kSec;
    Inflight f(2, hold);
    EXPECT_TRUE(f.take(1, kT0));
    EXPECT_TRUE(f.take(2, kT0 + hold));     /* slot 1 expired, removed */
    EXPECT_TRUE(f.take(3, kT0 + hold));
    f.renew(1, kT0 + hold + 1);
    EXPECT_EQ(f.held(), 2);
    f.release(3);
    f.renew(1, kT0 + hold + 2);
    EXPECT_EQ(f.held(), 2);
    EXPECT_FALSE(f.check(kT0 + hold + 3).ok);
    EXPECT_EQ(f.idleAt(), kT0 + 2 * hold + 2);
}

TEST(Concurrency, DecideStacksWithARateRule) {
    /* a request either holds a slot and counts in the rate, or neither */
    Inflight f(1, 60 * kSec);
    Params rate{Algorithm::FixedWindow, 2, 60 * kSec, 0, 0};
    State rs{};
    auto decide = [&](uint64_t slot, int64_t now, rl::Figures* out) {
        Params p[2] = {rate, f.of(slot)};
        State* s[2] = {&rs, &f.s};
        int64_t* logs[2] = {nullptr, f.log.data()};
        uint64_t cost[2] = {1, 1};
        return rl::decide(p, s, logs, cost, 2, now, out);
    };
    rl::Figures out[2];
    EXPECT_TRUE(decide(1, kT0, out));
    EXPECT_EQ(out[1].remaining, 0);
    /* nothing left after it: until one more could, a slot's retry */
    EXPECT_EQ(out[1].resetUs, rl::kInflightRetryUs);
    EXPECT_EQ(rs.b, 1);
    EXPECT_FALSE(decide(2, kT0 + 1, out));  /* the slot rejects */
    EXPECT_EQ(rs.b, 1);                     /* the rate took nothing */
    EXPECT_EQ(out[1].retryUs, rl::kInflightRetryUs);
    f.release(1);
    EXPECT_TRUE(decide(3, kT0 + 2, out));
    EXPECT_EQ(rs.b, 2);
    f.release(3);
    EXPECT_FALSE(decide(4, kT0 + 3, out));  /* the rate rejects */
    EXPECT_EQ(f.held(), 0);                 /* no slot taken */
}

TEST(Concurrency, AnotherNKeepsWholeSlots) {
    /* the embedded store copies the newest log entries into a node for
     * another N: entries go in pairs, and b (the head) stays 0 */
    Inflight f(4, 60 * kSec);
    for (uint64_t slot = 1; slot <= 3; slot++) {
        EXPECT_TRUE(f.take(slot, kT0));
    }
    EXPECT_EQ(f.s.a, 6);
    EXPECT_EQ(f.s.b, 0);
    Inflight g(2, 60 * kSec);
    for (size_t i = 0; i < 4; i++) {
        g.log[i] = f.log[2 + i];    /* the newest four entries */
    }
    g.s = {4, 0, 0};
    EXPECT_FALSE(g.check(kT0).ok);
    g.release(2);
    EXPECT_TRUE(g.take(9, kT0));
    g.release(3);
    g.release(9);
    EXPECT_EQ(g.held(), 0);
    /* a state claiming more than the log holds is read within it */
    g.s = {1000, 7, 0};
    EXPECT_LE(g.check(kT0).left, 2);
}

TEST(Concurrency, ALowerNOverALargerLogKeepsEverySlot) {
    /* the embedded store keeps a log of 6 slots under a lower N of 2
     * (Params::logEntries): the 6 held stay counted, and are there
     * when N is 6 again (before, the log was cut to 2: 4 more passed) */
    Inflight f(6, 60 * kSec);
    for (uint64_t slot = 1; slot <= 6; slot++) {
        EXPECT_TRUE(f.take(slot, kT0));
    }
    f.p.limit = 2;
    f.p.logEntries = f.log.size();
    Check c = f.check(kT0 + 1);
    EXPECT_FALSE(c.ok);
    EXPECT_EQ(c.left, 0);
    EXPECT_FALSE(f.take(7, kT0 + 1));
    EXPECT_EQ(f.held(), 6);
    EXPECT_EQ(f.idleAt(), kT0 + 60 * kSec);
    /* released and renewed under the lower N, from the whole log */
    f.release(6);
    f.renew(1, kT0 + kSec);
    EXPECT_EQ(f.held(), 5);
    f.p.limit = 6;
    EXPECT_TRUE(f.take(8, kT0 + 2));
    EXPECT_FALSE(f.take(9, kT0 + 2));
    EXPECT_EQ(f.held(), 6);
}

TEST(Concurrency, NoLogAdmitsNothing) {
    Params p{Algorithm::Concurrency, 3, kSec, 0, 0};
    State s{};
    Check c = rl::check(p, s, nullptr, 1, kT0);
    EXPECT_FALSE(c.ok);
    EXPECT_EQ(c.retryUs, rl::kInflightRetryUs);
    rl::commit(p, s, nullptr, 1, kT0);
    rl::renew(p, s, nullptr, kT0);
    rl::refund(p, s, nullptr, 1, kT0);
    EXPECT_EQ(s.a, 0);
}

/* ------------------------------------------------------------------ */
/* Charges                                                            */

const Algorithm kCharged[] = {Algorithm::FixedWindow,
                              Algorithm::SlidingWindow,
                              Algorithm::TokenBucket,
                              Algorithm::LeakyBucket, Algorithm::Gcra};

/* 10 a 10 s: a bucket of 10, a meter 1 + 9 deep */
Params charged(Algorithm a) {
    uint64_t burst = a == Algorithm::TokenBucket ? 10u
                     : rl::takesBurst(a)        ? 9u
                                                : 0u;
    return {a, 10, 10 * kSec, burst, rl::takesDelay(a) ? burst : 0u};
}

TEST(Charge, CountsPastTheLimitThenTheDebtIsWaitedOut) {
    for (Algorithm a : kCharged) {
        Params p = charged(a);
        State s{};
        /* a request of cost 1, then its charge of 25: 15 beyond the
         * limit */
        ASSERT_TRUE(rl::check(p, s, nullptr, 1, kT0).ok);
        rl::commit(p, s, nullptr, 1, kT0);
        rl::charge(p, s, 24, kT0 + kSec);
        Check c = rl::check(p, s, nullptr, 1, kT0 + kSec);
        EXPECT_FALSE(c.ok) << rl::algorithmName(a);
        EXPECT_EQ(c.left, 0) << rl::algorithmName(a);
        /* a meter drains the 15 beyond, at 1 a second */
        if (rl::takesBurst(a)) {
            EXPECT_EQ(c.retryUs, 15 * kSec) << rl::algorithmName(a);
        }
        EXPECT_GT(rl::idleAtUs(p, s, nullptr, kT0 + kSec), kT0 + kSec)
            << rl::algorithmName(a);
        /* once waited out, a request fits again */
        EXPECT_TRUE(rl::check(p, s, nullptr, 1,
                              kT0 + kSec + c.retryUs).ok)
            << rl::algorithmName(a);
    }
}

TEST(Charge, BelowTheCostGivesBack) {
    for (Algorithm a : kCharged) {
        Params p = charged(a);
        State s{};
        rl::commit(p, s, nullptr, 5, kT0);     /* cost=5 */
        EXPECT_EQ(rl::check(p, s, nullptr, 1, kT0).left, 5)
            << rl::algorithmName(a);
        rl::charge(p, s, -4, kT0);             /* charge=1 */
        EXPECT_EQ(rl::check(p, s, nullptr, 1, kT0).left, 9)
            << rl::algorithmName(a);
        rl::charge(p, s, 0, kT0);
        EXPECT_EQ(rl::check(p, s, nullptr, 1, kT0).left, 9)
            << rl::algorithmName(a);
    }
}

TEST(Charge, NotForTheLogNorSlots) {
    Params log{Algorithm::SlidingLog, 3, kSec, 0, 0};
    State s{};
    rl::charge(log, s, 5, kT0);
    EXPECT_EQ(s.a, 0);
    Params slots{Algorithm::Concurrency, 3, kSec, 0, 0};
    rl::charge(slots, s, 5, kT0);
    EXPECT_EQ(s.a, 0);
}

}  // namespace
