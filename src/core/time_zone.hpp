/* A time zone's offsets from UTC, as the system's zoneinfo holds them
 * (the tzdata package's TZif files, RFC 8536), read when the
 * configuration is loaded: its transitions (a version 2+ file's 64-bit
 * data, a version 1 file's 32-bit data), merged where only the name or
 * the daylight-saving flag changes, then its POSIX TZ string (the
 * file's footer, "CET-1CEST,M3.5.0,M10.5.0/3") for the times past the
 * last transition. Pure: the nginx side reads the file
 * (src/http/calendar_conf.cpp); nothing here allocates after parsing.
 * Offsets are seconds east of UTC (local = UTC + offset); times are
 * seconds since the epoch, UTC. */
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace rl::tz {

/* A date of a POSIX TZ rule, at a time of day (local: standard time for
 * the start of daylight saving, daylight time for its end). */
struct RuleDate {
    enum class Kind : uint8_t {
        Julian,         /* Jn: day n, 1-365, February 29 never counted */
        DayOfYear,      /* n: day n, 0-365, February 29 counted */
        MonthWeekDay,   /* Mm.w.d: weekday d (0 Sunday) of week w (5:
                           the last) of month m */
    };
    Kind kind = Kind::MonthWeekDay;
    uint16_t day = 0;
    uint8_t month = 0;
    uint8_t week = 0;
    uint8_t weekday = 0;
    int32_t time = 7200;    /* seconds after local midnight, -167h..167h */
};

/* A POSIX TZ string's rule. */
struct PosixRule {
    int32_t standard = 0;   /* offsets east of UTC, seconds */
    int32_t daylight = 0;
    bool hasDaylight = false;
    RuleDate start;         /* daylight saving starts */
    RuleDate end;           /* and ends, each year */
};

/* "CET-1CEST,M3.5.0,M10.5.0/3", "<+0545>-5:45", "NST3:30NDT,M3.2.0,
 * M11.1.0", with RFC 8536's extensions (hours of a rule's time from
 * -167 to 167); nullopt for anything else. */
std::optional<PosixRule> parsePosixTz(std::string_view text);

/* Its offset at t. */
int32_t ruleOffsetAt(const PosixRule& rule, int64_t t);

/* An offset taking effect at a time. */
struct Change {
    int64_t at;
    int32_t offset;
};

class TimeZone {
public:
    /* Coordinated Universal Time, read from no file. */
    static TimeZone utc();

    int32_t offsetAt(int64_t t) const;

    /* The changes of offset after `from` and up to `to` (from < to), in
     * order, at most `cap` (the first ones); *atFrom the offset at
     * from. Returns how many were written. */
    size_t changes(int64_t from, int64_t to, Change* out, size_t cap,
                   int32_t* atFrom) const;

    size_t transitions() const { return changes_.size(); }

private:
    friend std::optional<TimeZone> parseTzif(std::string_view, const char**);

    int32_t initial_ = 0;           /* before the first change */
    std::vector<Change> changes_;   /* ascending, each another offset */
    std::optional<PosixRule> rule_; /* after the last change */
};

/* A zoneinfo file's bytes; nullopt with *why (a constant text) when they
 * are no TZif file, or one this code does not take (leap seconds: a
 * right/ zone). */
std::optional<TimeZone> parseTzif(std::string_view bytes, const char** why);

/* An IANA name a file below the zoneinfo directory may have
 * ("Europe/Berlin", "Etc/GMT+5", "UTC"): letters, digits, '_', '-',
 * '+', '/' between names that do not start with '.'. */
bool validZoneName(std::string_view name);

/* Days since 1970-01-01 of a proleptic Gregorian date (month 1-12, day
 * 1-31), and back. */
int64_t daysFromCivil(int64_t year, int month, int day);
void civilFromDays(int64_t days, int64_t* year, int* month, int* day);
int daysInMonth(int64_t year, int month);

/* a / b rounded down, b > 0 */
constexpr int64_t floorDiv(int64_t a, int64_t b) {
    return a / b - ((a % b) < 0 ? 1 : 0);
}

}  // namespace rl::tz
