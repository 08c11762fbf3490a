/* Overrides as text (src/core/override_text.hpp), as lua/override.lua
 * reads them. */

#include "core/override_text.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using rl::Algorithm;
using rl::Params;

std::string with(const std::string& text, const std::string& name,
                 uint64_t n) {
    std::string out(text.size() + name.size() + 32, '\0');
    out.resize(rl::overrideWith(out.data(), text, name, n));
    return out;
}

TEST(OverrideText, Reads) {
    EXPECT_TRUE(rl::isOverride("limit a=1"));
    EXPECT_TRUE(rl::isOverride("LiMiT\ta=1"));
    EXPECT_FALSE(rl::isOverride("limited a=1"));
    EXPECT_FALSE(rl::isOverride("limit"));
    EXPECT_FALSE(rl::isOverride("abuse, ticket 4711"));
    EXPECT_EQ(rl::overrideLimit("limit api=10000 daily=50000", "api"), 10000u);
    EXPECT_EQ(rl::overrideLimit("limit api=10000 daily=50000", "daily"),
              50000u);
    EXPECT_EQ(rl::overrideLimit("limit api=1", "ap"), 0u);
    EXPECT_EQ(rl::overrideLimit("limit 5r/m=7", "5r/m"), 7u);
    EXPECT_EQ(rl::overrideLimit("limit a=b=9", "a=b"), 9u);   /* last '=' */
    EXPECT_EQ(rl::overrideLimit("limit a=1 a=2", "a"), 1u);   /* the first */
    EXPECT_EQ(rl::overrideLimit("limit a= b=3", "a"), 0u);
    EXPECT_EQ(rl::overrideLimit("limit\n a=4\t", "a"), 4u);
}

TEST(OverrideText, Applies) {
    Params win{Algorithm::SlidingWindow, 100, 60000000, 0, 0};
    Params p;
    ASSERT_TRUE(rl::overridden(win, 5, false, &p));
    EXPECT_EQ(p.limit, 5u);
    EXPECT_FALSE(rl::overridden(win, 100, false, &p));   /* its own */
    EXPECT_FALSE(rl::overridden(win, 0, false, &p));
    EXPECT_FALSE(rl::overridden(win, 1000000001, false, &p));
    Params log{Algorithm::SlidingLog, 10, 60000000, 0, 0};
    EXPECT_TRUE(rl::overridden(log, 100000, false, &p));
    EXPECT_FALSE(rl::overridden(log, 100001, false, &p));
    /* concurrency= keeps a slot each, as the log an entry: as the
     * script's overrides (lua/override.lua) */
    Params slots{Algorithm::Concurrency, 4, 60000000, 0, 0};
    slots.slotId = 77;
    ASSERT_TRUE(rl::overridden(slots, 100000, false, &p));
    EXPECT_EQ(p.slotId, 77u);   /* the request's slot stays its own */
    EXPECT_FALSE(rl::overridden(slots, 100001, false, &p));
    Params tb{Algorithm::TokenBucket, 10, 60000000, 10, 0};
    ASSERT_TRUE(rl::overridden(tb, 50, true, &p));
    EXPECT_EQ(p.burst, 50u);   /* the capacity follows N */
    ASSERT_TRUE(rl::overridden(tb, 50, false, &p));
    EXPECT_EQ(p.burst, 10u);
}

TEST(OverrideText, Writes) {
    EXPECT_EQ(with("", "api", 5), "limit api=5");
    EXPECT_EQ(with("limit api=5", "daily", 9), "limit api=5 daily=9");
    EXPECT_EQ(with("LIMIT api=5 daily=9", "api", 7), "LIMIT daily=9 api=7");
    EXPECT_EQ(with("limit api=5 daily=9", "api", 0), "limit daily=9");
    EXPECT_EQ(with("limit api=5", "api", 0), "");
    EXPECT_EQ(with("", "api", 0), "");
}

}  // namespace
