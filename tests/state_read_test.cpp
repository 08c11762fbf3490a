/* A key's state read in every state of a rule name (the operator API,
 * src/core/state_read.hpp): records of at most 64 rules in the head, a
 * reply of any number of states decoded record by record, overrides of
 * states beyond the 64th found in the trailer, and replies that are too
 * short or carry a bad trailer refused. */

#include "core/state_read.hpp"

#include <hiredis/hiredis.h>

#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

namespace {

std::string doubles(std::initializer_list<double> values) {
    std::string s;
    for (double v : values) {
        unsigned char b[8];
        s.append(reinterpret_cast<char*>(b), rl::putDouble(b, v) - b);
    }
    return s;
}

/* The script's reply for n states: each has `left` units left, the
 * state `rejecting` (if any) would reject. */
std::string figures(size_t n, double left, size_t rejecting = SIZE_MAX) {
    std::string s = doubles({1.7e15});
    for (size_t k = 0; k < n; k++) {
        s += doubles({left + static_cast<double>(k % 3), 2e6,
                       k == rejecting ? 5e5 : 0.0});
    }
    return s;
}

redisReply stringReply(const std::string& s) {
    redisReply r;
    std::memset(&r, 0, sizeof(r));
    r.type = REDIS_REPLY_STRING;
    r.str = const_cast<char*>(s.data());
    r.len = s.size();
    return r;
}

TEST(StateRead, HeadHasARecordPer64States) {
    for (size_t n : {1, 63, 64, 65, 70, 128, 200}) {
        std::vector<unsigned char> head(rl::stateReadHeadBytes(n));
        unsigned char* end = rl::stateReadHead(head.data(), n);
        ASSERT_EQ(end, head.data() + head.size()) << n;
        EXPECT_EQ(rl::stateReadRecords(n), (n + 63) / 64) << n;
        /* each record starts with its rule count */
        size_t at = 0, seen = 0;
        while (at < head.size()) {
            double count;
            std::memcpy(&count, head.data() + at, 8);
            ASSERT_GE(count, 1);
            ASSERT_LE(count, 64);
            seen += static_cast<size_t>(count);
            at += rl::requestBytes(static_cast<size_t>(count));
        }
        EXPECT_EQ(seen, n);
    }
}

TEST(StateRead, DecodesEveryStateOfSeventy) {
    std::string s = figures(70, 4, 68);
    redisReply r = stringReply(s);
    std::vector<rl::RuleOutcome> out(70);
    bool allowed = true;
    ASSERT_TRUE(rl::decodeStateRead(&r, 70, out.data(), &allowed));
    EXPECT_FALSE(allowed) << "the 69th state rejects";
    for (size_t k = 0; k < 70; k++) {
        EXPECT_EQ(out[k].remaining, 4 + static_cast<int64_t>(k % 3)) << k;
        EXPECT_EQ(out[k].limit, 0) << k;
    }
    EXPECT_EQ(out[68].retryMs, 500);
    EXPECT_EQ(out[67].retryMs, 0);
}

TEST(StateRead, AllowedWhenNoneRejects) {
    std::string s = figures(130, 1);
    redisReply r = stringReply(s);
    std::vector<rl::RuleOutcome> out(130);
    bool allowed = false;
    ASSERT_TRUE(rl::decodeStateRead(&r, 130, out.data(), &allowed));
    EXPECT_TRUE(allowed);
}

TEST(StateRead, OverridesBeyondTheFirstRecord) {
    /* overrides of state 2 and state 66 (the second record's third) */
    std::string s = figures(70, 4) + doubles({2, 50, 66, 7});
    redisReply r = stringReply(s);
    std::vector<rl::RuleOutcome> out(70);
    bool allowed = false;
    ASSERT_TRUE(rl::decodeStateRead(&r, 70, out.data(), &allowed));
    EXPECT_EQ(out[2].limit, 50);
    EXPECT_EQ(out[66].limit, 7);
    EXPECT_EQ(out[65].limit, 0);
}

TEST(StateRead, RefusesShortRepliesAndBadTrailers) {
    std::vector<rl::RuleOutcome> out(70);
    bool allowed;
    std::string shortOne = figures(64, 4);
    redisReply r = stringReply(shortOne);
    EXPECT_FALSE(rl::decodeStateRead(&r, 70, out.data(), &allowed));
    std::string beyond = figures(70, 4) + doubles({70, 5});
    r = stringReply(beyond);
    EXPECT_FALSE(rl::decodeStateRead(&r, 70, out.data(), &allowed));
    r.type = REDIS_REPLY_ERROR;
    EXPECT_FALSE(rl::decodeStateRead(&r, 70, out.data(), &allowed));
    EXPECT_FALSE(rl::decodeStateRead(nullptr, 70, out.data(), &allowed));
}

}  // namespace
