/* Rates ("10r/s", "100r/15m") and nginx durations ("1h30m"). */

#include "core/rate.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace {

using rl::parseDurationMs;
using rl::parseRate;

constexpr uint64_t kSecond = 1000;
constexpr uint64_t kMinute = 60 * kSecond;
constexpr uint64_t kHour = 60 * kMinute;
constexpr uint64_t kDay = 24 * kHour;
constexpr uint64_t kUsPerMs = 1000;

struct DurationCase {
    const char* text;
    uint64_t ms;
};

class DurationValid : public testing::TestWithParam<DurationCase> {};

TEST_P(DurationValid, ParsesToMilliseconds) {
    const DurationCase& c = GetParam();
    std::optional<uint64_t> ms = parseDurationMs(c.text);
    ASSERT_TRUE(ms.has_value()) << '"' << c.text << '"';
    EXPECT_EQ(*ms, c.ms) << '"' << c.text << '"';
}

INSTANTIATE_TEST_SUITE_P(
    Rate, DurationValid,
    testing::Values(DurationCase{"500ms", 500},
                    DurationCase{"1ms", 1},
                    DurationCase{"10s", 10 * kSecond},
                    DurationCase{"1m", kMinute},
                    DurationCase{"1h", kHour},
                    DurationCase{"2d", 2 * kDay},
                    DurationCase{"1w", 7 * kDay},
                    DurationCase{"1M", 30 * kDay},
                    DurationCase{"1y", 365 * kDay},
                    DurationCase{"1h30m", kHour + 30 * kMinute},
                    DurationCase{"1m500ms", kMinute + 500},
                    DurationCase{"1s1ms", kSecond + 1},
                    DurationCase{"1y1M1w1d1h1m1s1ms",
                                 365 * kDay + 30 * kDay + 7 * kDay + kDay +
                                     kHour + kMinute + kSecond + 1},
                    /* a bare number is seconds, also after larger units */
                    DurationCase{"10", 10 * kSecond},
                    DurationCase{"0", 0},
                    DurationCase{"1m30", kMinute + 30 * kSecond},
                    DurationCase{"007s", 7 * kSecond},
                    DurationCase{"90m", 90 * kMinute},
                    DurationCase{"3650d", 3650 * kDay}));

class DurationInvalid : public testing::TestWithParam<const char*> {};

TEST_P(DurationInvalid, IsRejected) {
    std::optional<uint64_t> ms = parseDurationMs(GetParam());
    EXPECT_FALSE(ms.has_value())
        << '"' << GetParam() << "\" parsed as " << ms.value_or(0);
}

INSTANTIATE_TEST_SUITE_P(
    Rate, DurationInvalid,
    testing::Values("", "s", "ms", "h1", "10x", "1S", "1H", "1D", "1.5s",
                    "-1s", "+1s", " 1s", "1s ", "1 s", "1h 30m", "1s1",
                    "1ms1", "1h1h", "30m1h", "1s1m", "1ms1s", "1d1w",
                    "1msms", "1m1M", "99999999999999999999999s"));

/* value * unit must not wrap around 2^64 into a small, plausible
 * duration. 584942418 y is 2^64 ms + 20338448384 ms (235 days),
 * 1169884835 y is 2 * 2^64 ms + 9140896768 ms (106 days),
 * 7116799412 M is 2^64 ms + 2194448384 ms (25 days), 30500568905 w
 * and 213503982335 d are 2^64 ms + 34448384 ms (9.6 hours). */
TEST(Rate, DurationRejectsProductsThatOverflow) {
    for (const char* text :
         {"584942418y", "1169884835y", "7116799412M", "30500568905w",
          "213503982335d"}) {
        std::optional<uint64_t> ms = parseDurationMs(text);
        EXPECT_FALSE(ms.has_value())
            << '"' << text << "\" parsed as " << ms.value_or(0) << " ms";
    }
}

struct RateCase {
    const char* text;
    uint64_t limit;
    uint64_t windowMs;
};

class RateValid : public testing::TestWithParam<RateCase> {};

TEST_P(RateValid, Parses) {
    const RateCase& c = GetParam();
    std::optional<rl::Rate> rate = parseRate(c.text);
    ASSERT_TRUE(rate.has_value()) << '"' << c.text << '"';
    EXPECT_EQ(rate->limit, c.limit) << '"' << c.text << '"';
    EXPECT_EQ(rate->windowUs, c.windowMs * kUsPerMs) << '"' << c.text << '"';
}

INSTANTIATE_TEST_SUITE_P(
    Rate, RateValid,
    testing::Values(RateCase{"10r/s", 10, kSecond},
                    RateCase{"10r/m", 10, kMinute},
                    RateCase{"10r/h", 10, kHour},
                    RateCase{"10r/d", 10, kDay},
                    RateCase{"1r/s", 1, kSecond},
                    RateCase{"100r/15m", 100, 15 * kMinute},
                    RateCase{"5r/10s", 5, 10 * kSecond},
                    RateCase{"3r/500ms", 3, 500},
                    RateCase{"1r/1ms", 1, 1},
                    RateCase{"7r/1h30m", 7, kHour + 30 * kMinute},
                    RateCase{"2r/30", 2, 30 * kSecond},
                    RateCase{"1000000000r/s", 1000000000, kSecond},
                    RateCase{"1r/1y", 1, 365 * kDay},
                    RateCase{"1r/366d", 1, 366 * kDay},
                    RateCase{"1r/8784h", 1, 366 * kDay}));

TEST(Rate, LargestWindowIsTheDocumentedBound) {
    std::optional<rl::Rate> rate = parseRate("1r/366d");
    ASSERT_TRUE(rate.has_value());
    EXPECT_EQ(rate->windowUs, rl::kMaxWindowUs);
    EXPECT_EQ(rl::kMaxLimit, 1000000000u);
}

class RateInvalid : public testing::TestWithParam<const char*> {};

TEST_P(RateInvalid, IsRejected) {
    std::optional<rl::Rate> rate = parseRate(GetParam());
    EXPECT_FALSE(rate.has_value())
        << '"' << GetParam() << "\" parsed as " << rate->limit << " per "
        << rate->windowUs << " us";
}

INSTANTIATE_TEST_SUITE_P(
    Rate, RateInvalid,
    testing::Values("", "10x/s", "10r", "10rs", "10r/", "r/s", "0r/s",
                    "00r/s", "10r/0s", "10r/0", "10r/0ms", "10r/x",
                    "10r/S", "10r/s/s", "10r/r/s", "-1r/s", "+1r/s",
                    " 10r/s", "10r/s ", "10 r/s", "1.5r/s", "1e3r/s",
                    "10R/s", "10r/1h1h",
                    /* limit above 1e9, also when it would overflow */
                    "1000000001r/s", "99999999999999999999999r/s",
                    /* window above 366 days */
                    "1r/367d", "1r/8785h", "1r/1y2d", "1r/2y",
                    "1r/366d1ms",
                    /* a window that only fits after wrapping around */
                    "1r/584942418y", "1r/1169884835y"));

}  // namespace
