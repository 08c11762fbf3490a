/* A zone's rules as the configuration reads them (src/core/time_zone.cpp
 * and calendar.cpp): TZif files from the system's zoneinfo and POSIX TZ
 * strings. The files are trusted configuration input, but a parser of
 * bytes is cheap to hold to its promises: a zone parsed gives offsets
 * within a day and a bit; the period of every unit in it holds the
 * instant asked and is found in bounded time, whatever the data (that
 * periods tile time holds for real zones: tests/calendar_test.cpp).
 *
 * Input: a byte (bit 0: a TZ string, else a TZif file; bits 1-3: the
 * unit; bits 4-7: the anchor), then the bytes. */
#include "fuzz.hpp"

#include "core/calendar.hpp"
#include "core/time_zone.hpp"

#include <string_view>

namespace rl::fuzz {

namespace {

void periods(const tz::TimeZone& z, calendar::Unit unit, int anchor) {
    for (int64_t t : {int64_t(0), int64_t(1700000000), int64_t(2000000000),
                      int64_t(4000000000), int64_t(-2000000000)}) {
        int32_t off = z.offsetAt(t);
        FUZZ_CHECK(off >= -26 * 3600 && off <= 26 * 3600);
        calendar::Period p = calendar::periodAt(z, unit, anchor, t);
        FUZZ_CHECK(p.start <= t && t < p.end);
        calendar::Period next = calendar::periodAt(z, unit, anchor, p.end);
        FUZZ_CHECK(next.start <= p.end && p.end < next.end);
        calendar::Bounds b = calendar::boundsAt(z, unit, anchor, t * 1000000);
        FUZZ_CHECK(b.start <= t * 1000000 && b.start < b.end &&
                   b.end < b.next);
    }
}

}  // namespace

void timeZone(const uint8_t* data, size_t size) {
    Input in(data, size);
    uint8_t how = in.byte();
    size_t n;
    const char* rest = in.rest(&n);
    std::string_view bytes(rest, n);
    auto unit = static_cast<calendar::Unit>((how >> 1) % 5);
    int anchor = unit == calendar::Unit::Week    ? (how >> 4) % 7
                 : unit == calendar::Unit::Month ? 1 + (how >> 4) % 28
                                                 : 0;
    if (how & 1) {
        std::optional<tz::PosixRule> r = tz::parsePosixTz(bytes);
        if (r) {
            FUZZ_CHECK(r->standard >= -26 * 3600 && r->standard <= 26 * 3600);
            for (int64_t t : {int64_t(0), int64_t(1700000000)}) {
                int32_t off = tz::ruleOffsetAt(*r, t);
                FUZZ_CHECK(off == r->standard || off == r->daylight);
            }
        }
        return;
    }
    const char* why = nullptr;
    std::optional<tz::TimeZone> z = tz::parseTzif(bytes, &why);
    FUZZ_CHECK(z.has_value() || why != nullptr);
    if (z) {
        periods(*z, unit, anchor);
    }
}

}  // namespace rl::fuzz
