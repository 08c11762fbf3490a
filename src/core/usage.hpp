/* The usage histogram of a rule (SPEC section 8): after each decision
 * it admitted, the fraction of the rule's limit used, (limit -
 * remaining) / limit, in one of these buckets; a request it rejected
 * counts only in the last one (+Inf). Cumulated, count(le = x) /
 * count(+Inf) is the share of its requests a limit of x times N would
 * still have admitted: the dashboard's what-if. (A request another rule
 * rejected counts with what this rule had left, as its headers say; one
 * this rule was not asked about, not at all.) */
#pragma once

#include <cstddef>
#include <cstdint>

namespace rl::usage {

inline constexpr size_t kBuckets = 7;

/* the buckets' upper bounds, in thousandths (the last is +Inf) */
inline constexpr int64_t kBoundMilli[kBuckets - 1] = {100, 250, 500,
                                                      750, 900, 1000};
inline constexpr const char* kBoundText[kBuckets] = {
    "0.1", "0.25", "0.5", "0.75", "0.9", "1", "+Inf"};

/* The bucket of an admitted request: the rule's limit (N, or a key
 * value's override of it), what it left. */
constexpr size_t bucket(int64_t limit, int64_t remaining) {
    if (limit <= 0) {
        return kBuckets - 1;
    }
    int64_t used = limit - remaining;
    size_t b = 0;
    while (b < kBuckets - 1 && used * 1000 > kBoundMilli[b] * limit) {
        b++;
    }
    return b;
}

/* What an admitted request adds to the histogram's sum, in thousandths
 * of the limit (at least 0); a rejected one adds 1000, its limit whole. */
constexpr int64_t usedMilli(int64_t limit, int64_t remaining) {
    if (limit <= 0) {
        return 1000;
    }
    int64_t used = limit - remaining;
    return used <= 0 ? 0 : used * 1000 / limit;
}

}  // namespace rl::usage
