/* The top limited keys' sketch (src/core/top_keys.hpp): counts, the
 * space-saving replacement, two generations of a minute, the filter the
 * allow path reads. */

#include "core/top_keys.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace {

using namespace rl::top;

uint32_t hashOf(const std::string& s) {
    uint32_t h = 2166136261u;
    for (unsigned char c : s) {
        h = (h ^ c) * 16777619u;
    }
    return h;
}

struct Fixture {
    std::unique_ptr<Sketch> s = std::make_unique<Sketch>();
    Fixture() { init(s.get()); }

    void reject(const std::string& k, int64_t epoch, int times = 1) {
        for (int i = 0; i < times; i++) {
            rl::top::reject(s.get(), hashOf(k), k, epoch);
        }
    }
    void admit(const std::string& k, int64_t epoch) {
        if (active(s.get(), epoch) && mayTrack(s.get(), hashOf(k))) {
            rl::top::admit(s.get(), hashOf(k), k, epoch);
        }
    }
    std::vector<Entry> list(int64_t epoch) {
        std::vector<Entry> out(kListMax);
        out.resize(rl::top::list(s.get(), epoch, out.data()));
        return out;
    }
};

TEST(TopKeys, CountsAndOrders) {
    Fixture f;
    EXPECT_FALSE(active(f.s.get(), 100));
    f.reject("a", 100, 3);
    f.reject("b", 100, 5);
    f.reject("c", 100, 1);
    f.admit("a", 100);
    f.admit("never", 100);
    auto l = f.list(100);
    ASSERT_EQ(l.size(), 3u);
    EXPECT_EQ(l[0].kept(), "b");
    EXPECT_EQ(l[0].rejected, 5u);
    EXPECT_EQ(l[1].kept(), "a");
    EXPECT_EQ(l[1].rejected, 3u);
    EXPECT_EQ(l[1].requests, 4u);
    EXPECT_EQ(l[2].kept(), "c");
}

TEST(TopKeys, TwoMinutes) {
    Fixture f;
    f.reject("old", 10, 4);
    f.reject("both", 10, 2);
    f.reject("both", 11, 3);
    f.reject("new", 11, 1);
    auto l = f.list(11);
    ASSERT_EQ(l.size(), 3u);
    EXPECT_EQ(l[0].kept(), "both");
    EXPECT_EQ(l[0].rejected, 5u);
    EXPECT_EQ(l[1].kept(), "old");
    /* a minute later the first minute is gone */
    l = f.list(12);
    ASSERT_EQ(l.size(), 2u);
    EXPECT_EQ(l[0].rejected, 3u);
    /* two minutes of nothing: nothing tracked, nothing listed */
    EXPECT_TRUE(active(f.s.get(), 12));
    EXPECT_FALSE(active(f.s.get(), 13));
    EXPECT_TRUE(f.list(13).empty());
    /* a generation reused a minute later starts empty */
    f.reject("x", 13);
    l = f.list(13);
    ASSERT_EQ(l.size(), 1u);
    EXPECT_EQ(l[0].kept(), "x");
}

TEST(TopKeys, TheHeaviestAreNeverMissed) {
    Fixture f;
    /* 1000 keys rejected once each, among them 5 rejected 50 times */
    for (int i = 0; i < 1000; i++) {
        f.reject("k" + std::to_string(i), 7);
        if (i % 200 == 0) {
            f.reject("heavy" + std::to_string(i), 7, 50);
        }
    }
    auto l = f.list(7);
    ASSERT_EQ(l.size(), kSlots);
    for (int i = 0; i < 5; i++) {
        EXPECT_EQ(l[i].kept().substr(0, 5), "heavy") << i;
        EXPECT_GE(l[i].rejected, 50u);
    }
}

TEST(TopKeys, LongAndBinaryKeys) {
    Fixture f;
    std::string longKey(300, 'L');
    std::string other = longKey;
    other[299] = 'M';   /* same kept bytes, another key */
    std::string binary("\0\x01\xff", 3);
    f.reject(longKey, 1, 2);
    f.reject(other, 1, 1);
    f.reject(binary, 1, 3);
    auto l = f.list(1);
    ASSERT_EQ(l.size(), 3u);
    EXPECT_EQ(l[0].kept(), binary);
    EXPECT_FALSE(l[0].cut());
    EXPECT_EQ(l[1].kept(), longKey.substr(0, kValueMax));
    EXPECT_TRUE(l[1].cut());
    EXPECT_EQ(l[1].length, 300u);
    EXPECT_EQ(l[1].rejected, 2u);
}

TEST(TopKeys, TheFilterHoldsEveryTrackedKey) {
    Fixture f;
    for (int i = 0; i < 200; i++) {
        f.reject("f" + std::to_string(i), 5);
    }
    for (int i = 0; i < 200; i++) {
        std::string k = "f" + std::to_string(i);
        EXPECT_TRUE(mayTrack(f.s.get(), hashOf(k))) << k;
    }
    /* the next minute keeps the keys of this one that are listed */
    auto before = f.list(5);
    f.reject("g", 6);
    for (const Entry& e : before) {
        EXPECT_TRUE(mayTrack(f.s.get(), e.hash));
    }
    EXPECT_TRUE(mayTrack(f.s.get(), hashOf("g")));
}

}  // namespace
