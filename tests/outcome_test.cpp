/* The binding rule, header seconds and key values for logs. */

#include "core/outcome.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace std::string_literals;

using rl::RuleOutcome;

size_t binding(const std::vector<RuleOutcome>& o, bool allowed) {
    return rl::bindingRule(o.data(), o.size(), allowed);
}

TEST(BindingRule, SingleRule) {
    EXPECT_EQ(binding({{5, 1000, 0, 0}}, true), 0u);
    EXPECT_EQ(binding({{0, 1000, 1000, 0}}, false), 0u);
}

/* Rejected: the rejecting rule that frees capacity last. */
TEST(BindingRule, RejectedPicksTheLongestRetry) {
    EXPECT_EQ(binding({{0, 1000, 1000, 0}, {0, 60000, 60000, 0}}, false), 1u);
    EXPECT_EQ(binding({{0, 60000, 60000, 0}, {0, 1000, 1000, 0}}, false), 0u);
    EXPECT_EQ(binding({{0, 10, 10, 0}, {0, 500, 300, 0}, {0, 20, 20, 0}}, false), 1u);
}

/* A rule that admitted (retry 0) never binds a rejection, even with
 * less remaining or a later reset than the rejecting rule. */
TEST(BindingRule, RejectedIgnoresAdmittingRules) {
    EXPECT_EQ(binding({{0, 90000, 0, 0}, {3, 1000, 1000, 0}}, false), 1u);
    EXPECT_EQ(binding({{3, 1000, 1000, 0}, {0, 90000, 0, 0}}, false), 0u);
    EXPECT_EQ(binding({{9, 5, 0, 0}, {0, 90000, 0, 0}, {1, 2000, 1, 0}}, false), 2u);
}

/* Allowed: the rule with least remaining. */
TEST(BindingRule, AllowedPicksLeastRemaining) {
    EXPECT_EQ(binding({{9, 1000, 0, 0}, {2, 500, 0, 0}, {5, 9000, 0, 0}}, true), 1u);
    EXPECT_EQ(binding({{0, 10, 0, 0}, {2, 500, 0, 0}}, true), 0u);
}

/* ... ties broken by the furthest reset. */
TEST(BindingRule, AllowedTieTakesTheFurthestReset) {
    EXPECT_EQ(binding({{3, 1000, 0, 0}, {3, 60000, 0, 0}, {3, 5000, 0, 0}}, true), 1u);
    EXPECT_EQ(binding({{3, 60000, 0, 0}, {3, 1000, 0, 0}}, true), 0u);
    EXPECT_EQ(binding({{4, 90000, 0, 0}, {3, 1000, 0, 0}, {3, 2000, 0, 0}}, true), 2u);
}

TEST(BindingRule, IndexIsBelowN) {
    std::vector<RuleOutcome> o(64, RuleOutcome{1, 1, 1, 0, 1000});
    EXPECT_LT(binding(o, false), o.size());
    EXPECT_LT(binding(o, true), o.size());
}

/* Rounded up: "Retry-After: 0" would invite a retry that fails. */
TEST(SecondsCeil, RoundsUp) {
    EXPECT_EQ(rl::secondsCeil(0), 0);
    EXPECT_EQ(rl::secondsCeil(1), 1);
    EXPECT_EQ(rl::secondsCeil(999), 1);
    EXPECT_EQ(rl::secondsCeil(1000), 1);
    EXPECT_EQ(rl::secondsCeil(1001), 2);
    EXPECT_EQ(rl::secondsCeil(59999), 60);
    EXPECT_EQ(rl::secondsCeil(60000), 60);
    EXPECT_EQ(rl::secondsCeil(2LL * 366 * 86400 * 1000), 2LL * 366 * 86400);
}

TEST(SecondsCeil, NegativeIsZero) {
    EXPECT_EQ(rl::secondsCeil(-1), 0);
    EXPECT_EQ(rl::secondsCeil(-1000), 0);
}

/* printable() into a buffer with guard bytes past cap + 3. */
std::string printable(std::string_view value, size_t cap) {
    std::string buf(cap + 3 + 8, '#');
    size_t n = rl::printable(buf.data(), cap, value);
    EXPECT_LE(n, cap + 3);
    EXPECT_EQ(buf.substr(cap + 3), std::string(8, '#'))
        << "wrote past cap + 3";
    EXPECT_EQ(buf.substr(n, 1), "#") << "wrote past the returned length";
    buf.resize(n);
    return buf;
}

TEST(Printable, PlainBytesAsIs) {
    EXPECT_EQ(printable("10.0.0.1", 64), "10.0.0.1");
    EXPECT_EQ(printable(" ~az{}'", 64), " ~az{}'");
    EXPECT_EQ(printable("", 64), "");
}

TEST(Printable, OtherBytesAsHex) {
    EXPECT_EQ(printable("a\"b\\c", 64), "a\\x22b\\x5cc");
    EXPECT_EQ(printable("\0\x1f\x7f\x80\xff"s, 64),
              "\\x00\\x1f\\x7f\\x80\\xff");
    EXPECT_EQ(printable("\n\r\t", 64), "\\x0a\\x0d\\x09");
}

TEST(Printable, CutAfterCap) {
    EXPECT_EQ(printable("abcdef", 3), "abc...");
    EXPECT_EQ(printable("abc", 3), "abc");
    EXPECT_EQ(printable("abcd", 3), "abc...");
    EXPECT_EQ(printable("a", 0), "...");
    EXPECT_EQ(printable("", 0), "");
    /* An escape is never split. */
    EXPECT_EQ(printable("ab\x01", 4), "ab...");
    EXPECT_EQ(printable("ab\x01", 6), "ab\\x01");
    EXPECT_EQ(printable(std::string(1000, '\0'), 10), "\\x00\\x00...");
}

}  // namespace
