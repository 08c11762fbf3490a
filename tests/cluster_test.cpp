/* Redis Cluster slots and redirections (src/core/cluster.hpp). The
 * slots are CLUSTER KEYSLOT's answers from a redis-server 7.0. */

#include "core/cluster.hpp"

#include <gtest/gtest.h>

#include <string>

#include "core/state_key.hpp"

namespace {

TEST(KeySlot, AsRedisComputesIt) {
    EXPECT_EQ(rl::keySlot("foo"), 12182);
    EXPECT_EQ(rl::keySlot("bar"), 5061);
    EXPECT_EQ(rl::keySlot("123456789"), 12739);  /* CRC16 0x31C3 */
    EXPECT_EQ(rl::keySlot(""), 0);
    EXPECT_EQ(rl::keySlot("{}"), 15257);
    EXPECT_EQ(rl::keySlot("a{b"), 13340);
}

TEST(KeySlot, HashTag) {
    EXPECT_EQ(rl::keySlot("{user1000}.following"), 3443);
    EXPECT_EQ(rl::keySlot("user1000"), 3443);
    EXPECT_EQ(rl::keySlot("foo{}{bar}"), 8363);     /* empty: whole key */
    EXPECT_EQ(rl::keySlot("foo{{bar}}zap"), 4015);  /* tag "{bar" */
    EXPECT_EQ(rl::keySlot("foo{bar}{zap}"), 5061);  /* first tag only */
    EXPECT_EQ(rl::keySlot("rl:{alice}:0123456789abcdef"), 749);
}

/* Every state key of a value, and its block PREFIX{VALUE}, share the
 * value's slot, whatever the (brace-free) prefix, digested values too. */
TEST(ValueSlot, IsTheSlotOfEveryKeyOfTheValue) {
    std::string longValue(200, 'x');
    std::string binary("a\0{b}\xff", 6);
    for (std::string value : {std::string("alice"), longValue, binary,
                              std::string("~x"), std::string()}) {
        for (const char *prefix : {"rl:", "", "a:much:longer:prefix:"}) {
            char key[64 + 1 + rl::kMaxPlainValue + 2 + rl::kRuleIdLen];
            char *end = rl::writeStateKey(key, prefix, value,
                                          "0123456789abcdef");
            std::string stateKey(key, end);
            std::string block = stateKey.substr(0, stateKey.size() - 17);
            EXPECT_EQ(block.back(), '}');
            EXPECT_EQ(rl::valueSlot(value), rl::keySlot(stateKey));
            EXPECT_EQ(rl::valueSlot(value), rl::keySlot(block));
        }
    }
    EXPECT_EQ(rl::valueSlot("alice"), 749);
}

TEST(Redirect, MovedAndAsk) {
    rl::Redirect r;
    ASSERT_TRUE(rl::parseRedirect("MOVED 3999 127.0.0.1:6381", &r));
    EXPECT_FALSE(r.ask);
    EXPECT_EQ(r.slot, 3999);
    EXPECT_EQ(r.host, "127.0.0.1");
    EXPECT_EQ(r.port, 6381);

    ASSERT_TRUE(rl::parseRedirect("ASK 0 ::1:7000", &r));
    EXPECT_TRUE(r.ask);
    EXPECT_EQ(r.slot, 0);
    EXPECT_EQ(r.host, "::1");
    EXPECT_EQ(r.port, 7000);

    ASSERT_TRUE(rl::parseRedirect("MOVED 16383 :7001", &r));
    EXPECT_EQ(r.slot, 16383);
    EXPECT_EQ(r.host, "");
}

TEST(Redirect, AnythingElseIsNone) {
    rl::Redirect r;
    for (const char *e : {"NOSCRIPT No matching script", "MOVED", "MOVED ",
                          "MOVED 16384 127.0.0.1:1", "MOVED -1 h:1",
                          "MOVED 1 127.0.0.1", "MOVED 1 127.0.0.1:0",
                          "MOVED 1 127.0.0.1:65536", "MOVED 1 h:7x",
                          "moved 1 h:1", "ASK 123456 h:1", "MOVED x h:1",
                          "ASKING", "CLUSTERDOWN The cluster is down",
                          "TRYAGAIN Multiple keys request during rehashing"}) {
        EXPECT_FALSE(rl::parseRedirect(e, &r)) << e;
    }
}

}  // namespace
