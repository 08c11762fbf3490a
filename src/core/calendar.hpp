/* Calendar periods (SPEC section 12): the hour, day, week, month or
 * year in a time zone that an instant falls in, as `rate=Nr/h`,
 * `Nr/d` with tz=, and `Nr/w`, `Nr/month`, `Nr/y` count them.
 *
 * A period starts when the zone's clock reaches its first local time
 * (a day: 00:00; a month: the anchor day's 00:00) for good: at the last
 * instant after which the clock never reads earlier. So a day across a
 * daylight-saving change lasts 23 or 25 hours; a local time that a
 * change skips starts its period when the clock jumps past it (the
 * hour 02:00 of a spring-forward night has no length, 03:00's starts at
 * the jump); the hour a fall-back night repeats is one hour of two
 * (from the first 01:00 to the second 02:00). Zones off the whole hour
 * (Asia/Kathmandu, +05:45) count hours from their own :00.
 *
 * Times here are seconds since the epoch (UTC); bounds() gives a rule's
 * record its microseconds. Pure: no nginx, no allocation. */
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "time_zone.hpp"

namespace rl::calendar {

enum class Unit : uint8_t { Hour, Day, Week, Month, Year };

/* A rate's period: "h", "d", "w", "month", "y". */
std::optional<Unit> unitFromName(std::string_view per);
std::string_view unitName(Unit u);

/* A week's first day by its name ("mon" .. "sun"): 0 Monday .. 6
 * Sunday. */
std::optional<int> weekdayFromName(std::string_view name);

/* A month's anchor: its days 1 to 28 (every month has them). */
inline constexpr int kMaxAnchorDay = 28;

/* The nominal length of a unit, in us (a month 30 days, a year 365):
 * the window of a calendar rule's identity and its reply's bounds (no
 * period lasts twice its nominal length). */
uint64_t nominalUs(Unit u);

struct Period {
    int64_t start;
    int64_t end;
};

/* The period holding t (start <= t < end). anchor: a week's first day
 * (0 Monday .. 6 Sunday), a month's first day (1 .. 28); else 0. */
Period periodAt(const tz::TimeZone& zone, Unit unit, int anchor, int64_t t);

/* What a calendar rule's record carries to the script, in us: the
 * period holding `nowUs` (start, end) and the end of the one after it
 * (next). The script picks, on Redis' clock, the period its request
 * falls in (lua/fixed_window.lua, core/algorithm.cpp periodEnd()). */
struct Bounds {
    int64_t start;
    int64_t end;
    int64_t next;
};

Bounds boundsAt(const tz::TimeZone& zone, Unit unit, int anchor,
                int64_t nowUs);

}  // namespace rl::calendar
