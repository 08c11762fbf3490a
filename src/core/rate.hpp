/* Rates ("10r/s", "100r/15m") and nginx-style durations ("1h30m"). */
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace rl {

struct Rate {
    uint64_t limit;     /* N requests ... */
    uint64_t windowUs;  /* ... per this many microseconds */
};

inline constexpr uint64_t kMaxLimit = 1000000000;               /* 1e9 */
inline constexpr uint64_t kMaxWindowUs = 366ULL * 86400 * 1000000;

/* nginx time syntax (ngx_parse_time): "500ms", "10s", "1h30m", "2d";
 * a bare number is seconds. Returns milliseconds. */
std::optional<uint64_t> parseDurationMs(std::string_view text);

/* "Nr/s", "Nr/m", "Nr/h", "Nr/d" or "Nr/TIME" with an nginx time. */
std::optional<Rate> parseRate(std::string_view text);

/* A calendar rate (SPEC section 12): N per "h", "d", "w", "month" or
 * "y" (src/core/calendar.hpp), its unit at text[per]. */
struct CalendarRate {
    uint64_t limit;
    size_t per;
};

std::optional<CalendarRate> parseCalendarRate(std::string_view text);

}  // namespace rl
