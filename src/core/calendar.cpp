#include "calendar.hpp"

namespace rl::calendar {
namespace {

using tz::floorDiv;

constexpr int64_t kHour = 3600;
constexpr int64_t kDay = 86400;
/* How far from a local time its instants may be: offsets are within a
 * day and a bit (tz::TimeZone takes none beyond 26 h). */
constexpr int64_t kSpan = 2 * kDay;
/* Changes of offset within 2 kSpan of a time: a few at most. */
constexpr size_t kMaxChanges = 32;
/* Periods a boundary search steps over (a zero-length hour, a day a
 * zone skipped): a few; more means data no zone has. */
constexpr int kMaxSteps = 8;

/* The local time (seconds since the epoch, on the zone's wall clock)
 * that starts the period holding local time `local`. */
int64_t floorLocal(Unit u, int anchor, int64_t local) {
    int64_t days = floorDiv(local, kDay);
    switch (u) {
    case Unit::Hour:
        return floorDiv(local, kHour) * kHour;
    case Unit::Day:
        return days * kDay;
    case Unit::Week: {
        /* 1970-01-01 was a Thursday: Monday 0 */
        int64_t wd = ((days + 3) % 7 + 7) % 7;
        return (days - ((wd - anchor) % 7 + 7) % 7) * kDay;
    }
    case Unit::Month: {
        int64_t y;
        int m, d;
        tz::civilFromDays(days, &y, &m, &d);
        if (d < anchor) {
            m--;
            if (m == 0) {
                m = 12;
                y--;
            }
        }
        return tz::daysFromCivil(y, m, anchor) * kDay;
    }
    case Unit::Year: {
        int64_t y;
        int m, d;
        tz::civilFromDays(days, &y, &m, &d);
        return tz::daysFromCivil(y, 1, 1) * kDay;
    }
    }
    return local;
}

/* The period k periods after the one starting at local time p. */
int64_t step(Unit u, int64_t p, int k) {
    switch (u) {
    case Unit::Hour:
        return p + k * kHour;
    case Unit::Day:
        return p + k * kDay;
    case Unit::Week:
        return p + k * 7 * kDay;
    case Unit::Month:
    case Unit::Year: {
        int64_t y;
        int m, d;
        tz::civilFromDays(floorDiv(p, kDay), &y, &m, &d);
        int64_t months = y * 12 + (m - 1) + (u == Unit::Year ? 12 * k : k);
        return tz::daysFromCivil(floorDiv(months, 12),
                                 static_cast<int>(months - 12 *
                                                  floorDiv(months, 12)) + 1,
                                 d) * kDay;
    }
    }
    return p;
}

/* When the zone's clock reaches local time p for good: the last instant
 * at which it still reads earlier (the end of the stretch of each
 * offset whose local times start below p). */
int64_t boundary(const tz::TimeZone& zone, int64_t p) {
    int64_t from = p - kSpan;
    int64_t to = p + kSpan;
    tz::Change ch[kMaxChanges];
    int32_t offset;
    size_t n = zone.changes(from, to, ch, kMaxChanges, &offset);
    int64_t at = from;
    int64_t best = from;
    for (size_t i = 0; i <= n; i++) {
        int64_t until = i < n ? ch[i].at : to;
        if (at + offset < p) {
            int64_t reach = p - offset;
            int64_t b = reach < until ? reach : until;
            best = b > best ? b : best;
        }
        if (i < n) {
            at = ch[i].at;
            offset = ch[i].offset;
        }
    }
    return best;
}

}  // namespace

std::optional<Unit> unitFromName(std::string_view per) {
    if (per == "h") {
        return Unit::Hour;
    }
    if (per == "d") {
        return Unit::Day;
    }
    if (per == "w") {
        return Unit::Week;
    }
    if (per == "month") {
        return Unit::Month;
    }
    if (per == "y") {
        return Unit::Year;
    }
    return std::nullopt;
}

std::string_view unitName(Unit u) {
    switch (u) {
    case Unit::Hour:
        return "hour";
    case Unit::Day:
        return "day";
    case Unit::Week:
        return "week";
    case Unit::Month:
        return "month";
    case Unit::Year:
        return "year";
    }
    return {};
}

std::optional<int> weekdayFromName(std::string_view name) {
    static constexpr std::string_view kNames[7] = {"mon", "tue", "wed", "thu",
                                                   "fri", "sat", "sun"};
    for (int i = 0; i < 7; i++) {
        if (name == kNames[i]) {
            return i;
        }
    }
    return std::nullopt;
}

uint64_t nominalUs(Unit u) {
    constexpr uint64_t s = 1000000;
    switch (u) {
    case Unit::Hour:
        return kHour * s;
    case Unit::Day:
        return kDay * s;
    case Unit::Week:
        return 7 * kDay * s;
    case Unit::Month:
        return 30 * kDay * s;
    case Unit::Year:
        return 365 * kDay * s;
    }
    return kDay * s;
}

Period periodAt(const tz::TimeZone& zone, Unit unit, int anchor, int64_t t) {
    int64_t p = floorLocal(unit, anchor, t + zone.offsetAt(t));
    int64_t start = boundary(zone, p);
    for (int i = 0; i < kMaxSteps && start > t; i++) {
        p = step(unit, p, -1);
        start = boundary(zone, p);
    }
    int64_t end = boundary(zone, step(unit, p, 1));
    for (int i = 0; i < kMaxSteps && end <= t; i++) {
        p = step(unit, p, 1);
        start = end;
        end = boundary(zone, step(unit, p, 1));
    }
    if (start > t || end <= t) {
        /* no zone's data: a period of the unit's nominal length */
        int64_t len = static_cast<int64_t>(nominalUs(unit) / 1000000);
        start = floorDiv(t, len) * len;
        end = start + len;
    }
    return {start, end};
}

Bounds boundsAt(const tz::TimeZone& zone, Unit unit, int anchor,
                int64_t nowUs) {
    Period cur = periodAt(zone, unit, anchor, floorDiv(nowUs, 1000000));
    Period next = periodAt(zone, unit, anchor, cur.end);
    return {cur.start * 1000000, cur.end * 1000000, next.end * 1000000};
}

}  // namespace rl::calendar
