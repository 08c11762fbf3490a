/* Configuration text (src/core/rate.cpp): rates ("10r/s", "100r/15m")
 * and nginx durations ("1h30m"), as rl_rule's rate= and rl_zone's
 * times reach them. Promises: a rate parsed has 1 <= N <= 1e9 and a
 * window of whole milliseconds up to 366 days; a duration parsed is at
 * most 10 years and reads back the same written in milliseconds; the C
 * ABI (rl_parse_rate) agrees with the C++ one. */
#include "fuzz.hpp"

#include "core/rate.hpp"
#include "rl_core.h"

#include <string>
#include <string_view>

namespace rl::fuzz {

void rate(const uint8_t* data, size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);

    std::optional<Rate> r = parseRate(text);
    uint64_t limit = 0, window = 0;
    int abi = rl_parse_rate(text.data(), text.size(), &limit, &window);
    FUZZ_CHECK((abi == 0) == r.has_value());
    if (r) {
        FUZZ_CHECK(r->limit >= 1 && r->limit <= kMaxLimit);
        FUZZ_CHECK(r->windowUs >= 1000 && r->windowUs <= kMaxWindowUs);
        FUZZ_CHECK(r->windowUs % 1000 == 0);
        FUZZ_CHECK(limit == r->limit && window == r->windowUs);
    }

    std::optional<uint64_t> ms = parseDurationMs(text);
    if (ms) {
        FUZZ_CHECK(*ms <= 10ULL * 365 * 86400 * 1000);
        std::optional<uint64_t> again =
            parseDurationMs(std::to_string(*ms) + "ms");
        FUZZ_CHECK(again && *again == *ms);
    }
}

}  // namespace rl::fuzz
