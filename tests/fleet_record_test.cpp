/* The fleet's records (src/core/fleet_record.hpp): fields escaped so a
 * name or key of any byte stays one field, read back the same; lines
 * cut at tabs, never read past; numbers strict. */

#include "core/fleet_record.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using rl::fleet::Line;

std::string escaped(std::string_view s) {
    std::string out(rl::fleet::escapedMax(s.size()), '\0');
    char* end = rl::fleet::escape(out.data(), s);
    out.resize(static_cast<size_t>(end - out.data()));
    return out;
}

TEST(FleetRecord, EscapeKeepsAFieldOneField) {
    std::string nasty("a\tb\nc %d\x01\xff~", 11);
    std::string e = escaped(nasty);
    EXPECT_EQ(e.find('\t'), std::string::npos);
    EXPECT_EQ(e.find('\n'), std::string::npos);
    EXPECT_EQ(e.find(' '), std::string::npos);
    long n = rl::fleet::unescape(e.data(), e.size());
    ASSERT_GE(n, 0);
    EXPECT_EQ(e.substr(0, static_cast<size_t>(n)), nasty);
    EXPECT_EQ(escaped("plain-key_1.2"), "plain-key_1.2");
}

TEST(FleetRecord, BadEscapesAreRefused) {
    for (std::string s : {"%", "%4", "%zz", "a%g1"}) {
        EXPECT_LT(rl::fleet::unescape(s.data(), s.size()), 0) << s;
    }
}

TEST(FleetRecord, LinesAndFields) {
    std::string_view text = "rl-fleet 1\nzone\tmain\t1\nrule\tper\t\tx\nlast";
    Line l;
    ASSERT_TRUE(rl::fleet::nextLine(&text, &l));
    EXPECT_EQ(l.n, 1u);
    EXPECT_EQ(l.fields[0], "rl-fleet 1");
    ASSERT_TRUE(rl::fleet::nextLine(&text, &l));
    ASSERT_EQ(l.n, 3u);
    EXPECT_EQ(l.fields[1], "main");
    ASSERT_TRUE(rl::fleet::nextLine(&text, &l));
    ASSERT_EQ(l.n, 4u);
    EXPECT_EQ(l.fields[2], "");
    ASSERT_TRUE(rl::fleet::nextLine(&text, &l));
    EXPECT_EQ(l.fields[0], "last");
    EXPECT_FALSE(rl::fleet::nextLine(&text, &l));
}

TEST(FleetRecord, ALineOfManyFieldsKeepsTheFirst) {
    std::string line;
    for (int i = 0; i < 40; i++) {
        line += std::to_string(i) + "\t";
    }
    std::string_view text = line;
    Line l;
    ASSERT_TRUE(rl::fleet::nextLine(&text, &l));
    EXPECT_EQ(l.n, rl::fleet::kMaxFields);
    EXPECT_EQ(l.fields[0], "0");
}

TEST(FleetRecord, Numbers) {
    int64_t v = -1;
    EXPECT_TRUE(rl::fleet::number("0", &v));
    EXPECT_EQ(v, 0);
    EXPECT_TRUE(rl::fleet::number("9007199254740992", &v));
    for (std::string_view bad : {"", "-1", "1.5", "9007199254740993", "1e3",
                                 "12345678901234567", " 1"}) {
        EXPECT_FALSE(rl::fleet::number(bad, &v)) << bad;
    }
}

TEST(FleetRecord, SumsSaturate) {
    using rl::fleet::saturatingAdd;
    constexpr int64_t kMax = INT64_MAX, kMin = INT64_MIN;
    constexpr int64_t kMost = int64_t(1) << 53;  /* a record's largest */
    EXPECT_EQ(saturatingAdd(2, 3), 5);
    EXPECT_EQ(saturatingAdd(kMax - 1, 1), kMax);
    EXPECT_EQ(saturatingAdd(kMax, 1), kMax);
    EXPECT_EQ(saturatingAdd(kMax, kMax), kMax);
    EXPECT_EQ(saturatingAdd(kMin, -1), kMin);
    EXPECT_EQ(saturatingAdd(kMax, kMin), -1);
    int64_t sum = 0;
    for (int i = 0; i < 1100; i++) {
        sum = saturatingAdd(sum, kMost);
    }
    EXPECT_EQ(sum, kMax);    /* (wrapped, it read -8,540,...) */
    sum = 0;
    for (int i = 0; i < 1000; i++) {
        sum = saturatingAdd(sum, kMost);
    }
    EXPECT_EQ(sum, 1000 * kMost);
}

TEST(FleetRecord, DigestsAreShortAndStable) {
    char a[12], b[12], c[12];
    rl::fleet::digest("0 4 60000000", a);
    rl::fleet::digest("0 4 60000000", b);
    rl::fleet::digest("0 9 60000000", c);
    EXPECT_EQ(std::string(a, 12), std::string(b, 12));
    EXPECT_NE(std::string(a, 12), std::string(c, 12));
}

}  // namespace
