/* Time zones read from the system's zoneinfo (src/core/time_zone.hpp)
 * and the calendar periods in them (src/core/calendar.hpp): offsets
 * against glibc's localtime_r, days of 23 and 25 hours across daylight
 * saving in several zones (one whose change is 30 minutes, zones off
 * the whole hour), leap years, month ends, weeks and anchors. The
 * zones come from /usr/share/zoneinfo (the tzdata package). */

#include "core/calendar.hpp"
#include "core/time_zone.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

namespace {

using rl::calendar::boundsAt;
using rl::calendar::Period;
using rl::calendar::periodAt;
using rl::calendar::Unit;
using rl::tz::parsePosixTz;
using rl::tz::parseTzif;
using rl::tz::TimeZone;

constexpr int64_t kHour = 3600;
constexpr int64_t kDay = 86400;

std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

/* The zone, or a skipped test when tzdata is not installed. */
#define ZONE(var, name)                                                  \
    std::string var##Bytes = readFile("/usr/share/zoneinfo/" name);      \
    if (var##Bytes.empty()) {                                            \
        GTEST_SKIP() << "no /usr/share/zoneinfo/" name " (tzdata)";      \
    }                                                                    \
    const char* var##Why = nullptr;                                      \
    std::optional<TimeZone> var##Opt = parseTzif(var##Bytes, &var##Why); \
    ASSERT_TRUE(var##Opt.has_value()) << name << ": " << var##Why;       \
    const TimeZone& var = *var##Opt

/* UTC seconds of a UTC date and time. */
int64_t utc(int64_t y, int m, int d, int h = 0, int mi = 0, int s = 0) {
    return rl::tz::daysFromCivil(y, m, d) * kDay + h * kHour + mi * 60 + s;
}

/* --------------------------------------------------------------- TZ */

TEST(PosixTz, ReadsTheFootersOfTheZonesTested) {
    auto berlin = parsePosixTz("CET-1CEST,M3.5.0,M10.5.0/3");
    ASSERT_TRUE(berlin);
    EXPECT_EQ(berlin->standard, 3600);
    EXPECT_EQ(berlin->daylight, 7200);
    EXPECT_TRUE(berlin->hasDaylight);
    EXPECT_EQ(berlin->start.month, 3);
    EXPECT_EQ(berlin->start.week, 5);
    EXPECT_EQ(berlin->start.time, 7200);
    EXPECT_EQ(berlin->end.time, 3 * 3600);

    auto howe = parsePosixTz("<+1030>-10:30<+11>-11,M10.1.0,M4.1.0");
    ASSERT_TRUE(howe);
    EXPECT_EQ(howe->standard, 37800);
    EXPECT_EQ(howe->daylight, 39600);

    auto chatham = parsePosixTz("<+1245>-12:45<+1345>,M9.5.0/2:45,"
                                "M4.1.0/3:45");
    ASSERT_TRUE(chatham);
    EXPECT_EQ(chatham->standard, 45900);
    EXPECT_EQ(chatham->daylight, 45900 + 3600);   /* one hour more */
    EXPECT_EQ(chatham->start.time, 2 * 3600 + 45 * 60);

    auto kathmandu = parsePosixTz("<+0545>-5:45");
    ASSERT_TRUE(kathmandu);
    EXPECT_FALSE(kathmandu->hasDaylight);
    EXPECT_EQ(kathmandu->standard, 5 * 3600 + 45 * 60);

    auto stjohns = parsePosixTz("NST3:30NDT,M3.2.0,M11.1.0");
    ASSERT_TRUE(stjohns);
    EXPECT_EQ(stjohns->standard, -12600);
    EXPECT_EQ(stjohns->daylight, -9000);

    /* RFC 8536's extension: a rule time beyond 24 h, and negative */
    auto ext = parsePosixTz("<-03>3<-02>,M3.5.0/-2,M10.5.0/-1");
    ASSERT_TRUE(ext);
    EXPECT_EQ(ext->start.time, -7200);
    auto big = parsePosixTz("EST5EDT,0/0,J365/25");
    ASSERT_TRUE(big);
    EXPECT_EQ(big->end.time, 25 * 3600);
    EXPECT_TRUE(parsePosixTz("UTC0"));
    EXPECT_TRUE(parsePosixTz("EST5EDT"));   /* the US rules by default */
}

TEST(PosixTz, RefusesWhatIsNoTzString) {
    for (const char* bad :
         {"", "C", "CET", "CET-1CEST,M3.5.0", "CET-1CEST,M13.5.0,M10.5.0",
          "CET-1CEST,M3.6.0,M10.5.0", "CET-1CEST,M3.5.7,M10.5.0",
          "CET-1CEST,J0,J365", "CET-1CEST,366,0", "CET-99",
          "<+01-1", "CET-1CEST,M3.5.0/168,M10.5.0", "CET-1:60",
          "CET-1CEST,M3.5.0,M10.5.0,", "CET-1 CEST"}) {
        EXPECT_FALSE(parsePosixTz(bad)) << '"' << bad << '"';
    }
}

/* ------------------------------------------------------------- TZif */

TEST(Tzif, RefusesWhatIsNoZoneFile) {
    const char* why = nullptr;
    EXPECT_FALSE(parseTzif("", &why));
    EXPECT_FALSE(parseTzif("TZif2", &why));
    EXPECT_FALSE(parseTzif(std::string(44, '\0'), &why));
    std::string head = "TZif2" + std::string(39, '\0');
    EXPECT_FALSE(parseTzif(head, &why)) << "no local time type";
    /* counts larger than the file */
    std::string big = head;
    big[35] = 1;    /* timecnt */
    big[39] = 1;    /* typecnt */
    EXPECT_FALSE(parseTzif(big, &why));
    EXPECT_NE(why, nullptr);
}

/* Offsets as glibc reads the same files. */
int32_t glibcOffset(const char* zone, int64_t t) {
    setenv("TZ", zone, 1);
    tzset();
    time_t tt = static_cast<time_t>(t);
    struct tm tm;
    localtime_r(&tt, &tm);
    return static_cast<int32_t>(tm.tm_gmtoff);
}

TEST(Tzif, OffsetsAgreeWithGlibcFrom1970To2100) {
    const char* zones[] = {"Europe/Berlin", "America/New_York",
                           "Australia/Lord_Howe", "Asia/Kathmandu",
                           "America/St_Johns", "Pacific/Chatham",
                           "America/Santiago", "Europe/Dublin",
                           "Africa/Casablanca", "Pacific/Apia", "UTC"};
    std::mt19937_64 rng(33);
    std::uniform_int_distribution<int64_t> when(0, utc(2100, 1, 1));
    for (const char* name : zones) {
        std::string bytes = readFile(std::string("/usr/share/zoneinfo/") +
                                     name);
        if (bytes.empty()) {
            GTEST_SKIP() << "no zoneinfo (tzdata)";
        }
        const char* why = nullptr;
        auto z = parseTzif(bytes, &why);
        ASSERT_TRUE(z) << name << ": " << why;
        std::string tzname = std::string(":") + name;
        for (int i = 0; i < 3000; i++) {
            int64_t t = when(rng);
            ASSERT_EQ(z->offsetAt(t), glibcOffset(tzname.c_str(), t))
                << name << " at " << t;
        }
    }
    unsetenv("TZ");
    tzset();
}

/* A version 1 file (32-bit times, no footer): the first block of a
 * version 2 file with its version byte cleared. */
TEST(Tzif, ReadsVersion1Data) {
    ZONE(berlin, "Europe/Berlin");
    std::string v1 = berlinBytes;
    v1[4] = '\0';
    const char* why = nullptr;
    auto z = parseTzif(v1, &why);
    ASSERT_TRUE(z) << why;
    for (int64_t t = utc(1980, 1, 1); t < utc(2037, 1, 1); t += 7 * kDay) {
        ASSERT_EQ(z->offsetAt(t), berlin.offsetAt(t)) << t;
    }
    /* every byte short of the whole: refused, never read past */
    for (size_t n = 0; n < berlinBytes.size(); n += 7) {
        (void) parseTzif(std::string_view(berlinBytes).substr(0, n), &why);
    }
}

TEST(Tzif, KnownOffsets) {
    ZONE(berlin, "Europe/Berlin");
    EXPECT_EQ(berlin.offsetAt(utc(2025, 1, 15)), 3600);
    EXPECT_EQ(berlin.offsetAt(utc(2025, 7, 15)), 7200);
    EXPECT_EQ(berlin.offsetAt(utc(2060, 7, 15)), 7200) << "past the table";
    EXPECT_EQ(berlin.offsetAt(utc(2025, 3, 30, 0, 59, 59)), 3600);
    EXPECT_EQ(berlin.offsetAt(utc(2025, 3, 30, 1)), 7200);
    EXPECT_EQ(berlin.offsetAt(utc(2025, 10, 26, 0, 59, 59)), 7200);
    EXPECT_EQ(berlin.offsetAt(utc(2025, 10, 26, 1)), 3600);
    ZONE(kathmandu, "Asia/Kathmandu");
    EXPECT_EQ(kathmandu.offsetAt(utc(2025, 6, 1)), 5 * kHour + 45 * 60);
    ZONE(howe, "Australia/Lord_Howe");
    EXPECT_EQ(howe.offsetAt(utc(2025, 7, 1)), 10 * kHour + 30 * 60);
    EXPECT_EQ(howe.offsetAt(utc(2025, 12, 1)), 11 * kHour);
}

/* ---------------------------------------------------------- periods */

void expectPeriod(const TimeZone& z, Unit u, int anchor, int64_t t,
                  int64_t start, int64_t end) {
    Period p = periodAt(z, u, anchor, t);
    EXPECT_EQ(p.start, start) << "start of the period of " << t;
    EXPECT_EQ(p.end, end) << "end of the period of " << t;
}

TEST(Periods, UtcDaysAndHoursAreTheEpochsWindows) {
    TimeZone z = TimeZone::utc();
    for (int64_t t : {int64_t(0), utc(2025, 3, 30, 12, 34, 56),
                      utc(2024, 2, 29, 23, 59, 59)}) {
        expectPeriod(z, Unit::Day, 0, t, t / kDay * kDay,
                     t / kDay * kDay + kDay);
        expectPeriod(z, Unit::Hour, 0, t, t / kHour * kHour,
                     t / kHour * kHour + kHour);
    }
}

TEST(Periods, BerlinDaysOf23And25Hours) {
    ZONE(z, "Europe/Berlin");
    /* spring forward, Sunday 2025-03-30 02:00 CET -> 03:00 CEST */
    int64_t s = utc(2025, 3, 29, 23);
    int64_t e = utc(2025, 3, 30, 22);
    EXPECT_EQ(e - s, 23 * kHour);
    for (int64_t t : {s, s + 1, utc(2025, 3, 30, 0, 59, 59),
                      utc(2025, 3, 30, 1), e - 1}) {
        expectPeriod(z, Unit::Day, 0, t, s, e);
    }
    expectPeriod(z, Unit::Day, 0, s - 1, utc(2025, 3, 28, 23), s);
    expectPeriod(z, Unit::Day, 0, e, e, e + 24 * kHour);
    /* fall back, Sunday 2025-10-26 03:00 CEST -> 02:00 CET */
    s = utc(2025, 10, 25, 22);
    e = utc(2025, 10, 26, 23);
    EXPECT_EQ(e - s, 25 * kHour);
    for (int64_t t : {s, utc(2025, 10, 26, 0, 30), utc(2025, 10, 26, 1, 30),
                      e - 1}) {
        expectPeriod(z, Unit::Day, 0, t, s, e);
    }
}

TEST(Periods, BerlinHoursAcrossTheChanges) {
    ZONE(z, "Europe/Berlin");
    /* spring: 01:00-02:00 CET is an hour; 02:00 never happens; the hour
     * from 03:00 CEST starts at the jump */
    expectPeriod(z, Unit::Hour, 0, utc(2025, 3, 30, 0, 30),
                 utc(2025, 3, 30, 0), utc(2025, 3, 30, 1));
    expectPeriod(z, Unit::Hour, 0, utc(2025, 3, 30, 1),
                 utc(2025, 3, 30, 1), utc(2025, 3, 30, 2));
    /* fall: the clock reads 02:xx twice; the hour 02 lasts until it
     * reads 03:00, two hours after it first read 02:00 */
    expectPeriod(z, Unit::Hour, 0, utc(2025, 10, 26, 0, 10),
                 utc(2025, 10, 26, 0), utc(2025, 10, 26, 2));
    expectPeriod(z, Unit::Hour, 0, utc(2025, 10, 26, 1, 10),
                 utc(2025, 10, 26, 0), utc(2025, 10, 26, 2));
    expectPeriod(z, Unit::Hour, 0, utc(2025, 10, 26, 2),
                 utc(2025, 10, 26, 2), utc(2025, 10, 26, 3));
}

TEST(Periods, NewYorkDaysAcrossBothChanges) {
    ZONE(z, "America/New_York");
    expectPeriod(z, Unit::Day, 0, utc(2025, 3, 9, 12), utc(2025, 3, 9, 5),
                 utc(2025, 3, 10, 4));
    expectPeriod(z, Unit::Day, 0, utc(2025, 11, 2, 12), utc(2025, 11, 2, 4),
                 utc(2025, 11, 3, 5));
}

TEST(Periods, LordHoweHalfHourChange) {
    ZONE(z, "Australia/Lord_Howe");
    /* 2025-10-05 02:00 +10:30 -> 02:30 +11: a day of 23.5 hours */
    int64_t s = utc(2025, 10, 4, 13, 30);
    int64_t e = utc(2025, 10, 5, 13);
    expectPeriod(z, Unit::Day, 0, utc(2025, 10, 5, 2), s, e);
    EXPECT_EQ(e - s, 23 * kHour + 1800);
    /* 2025-04-06 02:00 +11 -> 01:30 +10:30: 24.5 hours */
    s = utc(2025, 4, 5, 13);
    e = utc(2025, 4, 6, 13, 30);
    expectPeriod(z, Unit::Day, 0, utc(2025, 4, 6, 2), s, e);
    EXPECT_EQ(e - s, 24 * kHour + 1800);
    /* the hour 02 of the spring night: from the jump (02:30) to 03:00 */
    int64_t jump = utc(2025, 10, 4, 15, 30);   /* 02:00 +10:30 */
    expectPeriod(z, Unit::Hour, 0, jump, jump, jump + 1800);
}

TEST(Periods, ZonesOffTheWholeHour) {
    ZONE(kat, "Asia/Kathmandu");
    /* +05:45: hours start at :15 UTC, days at 18:15 UTC */
    expectPeriod(kat, Unit::Hour, 0, utc(2025, 6, 1, 10, 20),
                 utc(2025, 6, 1, 10, 15), utc(2025, 6, 1, 11, 15));
    expectPeriod(kat, Unit::Day, 0, utc(2025, 6, 1, 10),
                 utc(2025, 5, 31, 18, 15), utc(2025, 6, 1, 18, 15));
    ZONE(stj, "America/St_Johns");
    /* -03:30 / -02:30: hours at :30 UTC; 2025-03-09 is 23 hours */
    expectPeriod(stj, Unit::Hour, 0, utc(2025, 1, 10, 12, 40),
                 utc(2025, 1, 10, 12, 30), utc(2025, 1, 10, 13, 30));
    expectPeriod(stj, Unit::Day, 0, utc(2025, 3, 9, 12),
                 utc(2025, 3, 9, 3, 30), utc(2025, 3, 10, 2, 30));
    expectPeriod(stj, Unit::Day, 0, utc(2025, 11, 2, 12),
                 utc(2025, 11, 2, 2, 30), utc(2025, 11, 3, 3, 30));
    ZONE(cha, "Pacific/Chatham");
    /* +12:45 / +13:45, 2025-09-28 02:45 -> 03:45: 23 hours */
    expectPeriod(cha, Unit::Day, 0, utc(2025, 9, 28, 0),
                 utc(2025, 9, 27, 11, 15), utc(2025, 9, 28, 10, 15));
    expectPeriod(cha, Unit::Hour, 0, utc(2025, 6, 1, 0, 20),
                 utc(2025, 6, 1, 0, 15), utc(2025, 6, 1, 1, 15));
}

TEST(Periods, MonthsFromTheFirstAndFromAnAnchor) {
    ZONE(z, "Europe/Berlin");
    /* March 2025 starts in CET, ends in CEST: 31 days less an hour */
    expectPeriod(z, Unit::Month, 1, utc(2025, 3, 15),
                 utc(2025, 2, 28, 23), utc(2025, 3, 31, 22));
    /* local midnight on the 1st: a second before is the month before */
    expectPeriod(z, Unit::Month, 1, utc(2025, 3, 31, 21, 59, 59),
                 utc(2025, 2, 28, 23), utc(2025, 3, 31, 22));
    expectPeriod(z, Unit::Month, 1, utc(2025, 3, 31, 22),
                 utc(2025, 3, 31, 22), utc(2025, 4, 30, 22));
    /* February of a leap year */
    expectPeriod(z, Unit::Month, 1, utc(2024, 2, 10),
                 utc(2024, 1, 31, 23), utc(2024, 2, 29, 23));
    /* billing day 15: from the 15th to the 15th */
    expectPeriod(z, Unit::Month, 15, utc(2025, 3, 10),
                 utc(2025, 2, 14, 23), utc(2025, 3, 14, 23));
    expectPeriod(z, Unit::Month, 15, utc(2025, 3, 14, 23),
                 utc(2025, 3, 14, 23), utc(2025, 4, 14, 22));
    /* the 28th, the last anchor every month has: February's */
    expectPeriod(z, Unit::Month, 28, utc(2025, 3, 1),
                 utc(2025, 2, 27, 23), utc(2025, 3, 27, 23));
    expectPeriod(z, Unit::Month, 28, utc(2024, 2, 29),
                 utc(2024, 2, 27, 23), utc(2024, 3, 27, 23));
    /* December to January */
    expectPeriod(z, Unit::Month, 1, utc(2025, 12, 31, 23),
                 utc(2025, 12, 31, 23), utc(2026, 1, 31, 23));
}

TEST(Periods, WeeksFromMondayOrAnAnchor) {
    ZONE(z, "Europe/Berlin");
    /* Wednesday 2025-03-26; Monday the 24th, CET */
    expectPeriod(z, Unit::Week, 0, utc(2025, 3, 26, 12),
                 utc(2025, 3, 23, 23), utc(2025, 3, 30, 22));
    /* a week across the spring change: 167 hours */
    Period p = periodAt(z, Unit::Week, 0, utc(2025, 3, 26));
    EXPECT_EQ(p.end - p.start, 7 * kDay - kHour);
    /* from Sunday (6) */
    expectPeriod(z, Unit::Week, 6, utc(2025, 3, 26, 12),
                 utc(2025, 3, 22, 23), utc(2025, 3, 29, 23));
    /* Monday 00:00 local is the first second */
    expectPeriod(z, Unit::Week, 0, utc(2025, 3, 23, 23),
                 utc(2025, 3, 23, 23), utc(2025, 3, 30, 22));
}

TEST(Periods, Years) {
    ZONE(z, "Europe/Berlin");
    expectPeriod(z, Unit::Year, 0, utc(2024, 6, 1), utc(2023, 12, 31, 23),
                 utc(2024, 12, 31, 23));
    EXPECT_EQ(utc(2024, 12, 31, 23) - utc(2023, 12, 31, 23), 366 * kDay);
    ZONE(chatham, "Pacific/Chatham");
    expectPeriod(chatham, Unit::Year, 0, utc(2025, 6, 1),
                 utc(2024, 12, 31, 10, 15), utc(2025, 12, 31, 10, 15));
}

TEST(Periods, BoundsAreThePeriodAndTheNextsEnd) {
    ZONE(z, "Europe/Berlin");
    auto b = boundsAt(z, Unit::Day, 0, utc(2025, 3, 29, 12) * 1000000 + 5);
    EXPECT_EQ(b.start, utc(2025, 3, 28, 23) * 1000000);
    EXPECT_EQ(b.end, utc(2025, 3, 29, 23) * 1000000);
    EXPECT_EQ(b.next, utc(2025, 3, 30, 22) * 1000000);
}

/* Every zone, unit and anchor at random instants: the period holds the
 * instant, the periods tile time (the one at its end starts there, the
 * one before it ends at its start), it starts at the unit's local time
 * (unless a change skipped it), and lasts about its unit. */
TEST(Periods, TileTimeInEveryZone) {
    const char* zones[] = {"Europe/Berlin", "America/New_York",
                           "Australia/Lord_Howe", "Asia/Kathmandu",
                           "America/St_Johns", "Pacific/Chatham",
                           "America/Santiago", "Pacific/Apia",
                           "Europe/London", "Asia/Tokyo"};
    std::mt19937_64 rng(12);
    std::uniform_int_distribution<int64_t> when(utc(1990, 1, 1),
                                                utc(2100, 1, 1));
    for (const char* name : zones) {
        std::string bytes = readFile(std::string("/usr/share/zoneinfo/") +
                                     name);
        if (bytes.empty()) {
            GTEST_SKIP() << "no zoneinfo (tzdata)";
        }
        const char* why = nullptr;
        auto z = parseTzif(bytes, &why);
        ASSERT_TRUE(z) << name;
        for (int i = 0; i < 400; i++) {
            int64_t t = when(rng);
            Unit u = static_cast<Unit>(i % 5);
            int anchor = u == Unit::Week ? i % 7
                         : u == Unit::Month ? 1 + i % 28 : 0;
            Period p = periodAt(*z, u, anchor, t);
            ASSERT_LE(p.start, t) << name << ' ' << t;
            ASSERT_GT(p.end, t) << name << ' ' << t;
            Period next = periodAt(*z, u, anchor, p.end);
            ASSERT_EQ(next.start, p.end) << name << ' ' << t;
            Period prev = periodAt(*z, u, anchor, p.start - 1);
            ASSERT_EQ(prev.end, p.start) << name << ' ' << t;
            int64_t nominal =
                static_cast<int64_t>(rl::calendar::nominalUs(u) / 1000000);
            ASSERT_LE(p.end - p.start, 2 * nominal + 2 * kHour) << name;
            int64_t local = p.start + z->offsetAt(p.start);
            int64_t before = p.start - 1 + z->offsetAt(p.start - 1);
            if (local - before == 1) {
                /* no change at the start: the unit's local time */
                int64_t sod = ((local % kDay) + kDay) % kDay;
                if (u == Unit::Hour) {
                    ASSERT_EQ(sod % kHour, 0) << name << ' ' << t;
                } else {
                    ASSERT_EQ(sod, 0) << name << ' ' << t;
                }
            }
        }
    }
}

}  // namespace
