#include "rate.hpp"

#include <string>

namespace rl {
namespace {

struct Unit {
    std::string_view name;
    uint64_t ms;
};

/* Longest names first so "ms" wins over "m"; the order of a valid
 * duration's units follows the table's rank (largest first). */
constexpr Unit kUnits[] = {
    {"ms", 1},
    {"y", 365ULL * 86400 * 1000},
    {"M", 30ULL * 86400 * 1000},
    {"w", 7ULL * 86400 * 1000},
    {"d", 86400ULL * 1000},
    {"h", 3600ULL * 1000},
    {"m", 60ULL * 1000},
    {"s", 1000},
};

constexpr uint64_t kMaxDurationMs = 10ULL * 365 * 86400 * 1000;

bool isDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

std::optional<uint64_t> parseDurationMs(std::string_view text) {
    if (text.empty()) {
        return std::nullopt;
    }
    uint64_t total = 0;
    uint64_t lastUnit = UINT64_MAX;
    size_t i = 0;
    while (i < text.size()) {
        if (!isDigit(text[i])) {
            return std::nullopt;
        }
        uint64_t value = 0;
        while (i < text.size() && isDigit(text[i])) {
            value = value * 10 + static_cast<uint64_t>(text[i] - '0');
            if (value > kMaxDurationMs) {
                return std::nullopt;
            }
            i++;
        }
        uint64_t unitMs = 1000; /* bare number: seconds, only at the end */
        if (i == text.size()) {
            if (lastUnit <= 1000) {
                return std::nullopt;
            }
        } else {
            bool found = false;
            for (const Unit& u : kUnits) {
                if (text.substr(i, u.name.size()) == u.name) {
                    unitMs = u.ms;
                    i += u.name.size();
                    found = true;
                    break;
                }
            }
            if (!found) {
                return std::nullopt;
            }
        }
        if (unitMs >= lastUnit) {
            return std::nullopt; /* units must decrease: "1h30m" */
        }
        if (value > (kMaxDurationMs - total) / unitMs) {
            return std::nullopt; /* checked before it can wrap */
        }
        lastUnit = unitMs;
        total += value * unitMs;
        if (total > kMaxDurationMs) {
            return std::nullopt;
        }
    }
    return total;
}

std::optional<CalendarRate> parseCalendarRate(std::string_view text) {
    size_t pos = text.find("r/");
    if (pos == 0 || pos == std::string_view::npos) {
        return std::nullopt;
    }
    std::string_view per = text.substr(pos + 2);
    if (per != "h" && per != "d" && per != "w" && per != "month" &&
        per != "y") {
        return std::nullopt;
    }
    uint64_t limit = 0;
    for (size_t i = 0; i < pos; i++) {
        if (!isDigit(text[i])) {
            return std::nullopt;
        }
        limit = limit * 10 + static_cast<uint64_t>(text[i] - '0');
        if (limit > kMaxLimit) {
            return std::nullopt;
        }
    }
    if (limit == 0) {
        return std::nullopt;
    }
    return CalendarRate{limit, pos + 2};
}

std::optional<Rate> parseRate(std::string_view text) {
    size_t pos = text.find("r/");
    if (pos == 0 || pos == std::string_view::npos) {
        return std::nullopt;
    }
    uint64_t limit = 0;
    for (size_t i = 0; i < pos; i++) {
        if (!isDigit(text[i])) {
            return std::nullopt;
        }
        limit = limit * 10 + static_cast<uint64_t>(text[i] - '0');
        if (limit > kMaxLimit) {
            return std::nullopt;
        }
    }
    std::string_view per = text.substr(pos + 2);
    std::optional<uint64_t> ms;
    if (per == "s" || per == "m" || per == "h" || per == "d") {
        ms = parseDurationMs(std::string("1").append(per));
    } else {
        ms = parseDurationMs(per);
    }
    if (limit == 0 || !ms || *ms == 0 || *ms * 1000 > kMaxWindowUs) {
        return std::nullopt;
    }
    return Rate{limit, *ms * 1000};
}

}  // namespace rl
