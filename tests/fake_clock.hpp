/* The core's tests on a fake clock: microseconds, and a fixed instant to
 * start from. */
#pragma once

#include <cstdint>

namespace rltest::clock {

constexpr int64_t kMs = 1000;
constexpr int64_t kSec = 1000 * kMs;
constexpr int64_t kDay = 86400 * kSec;

/* A fixed instant in 2023, aligned to the day (so to every window used
 * in the tests that divides a day). */
constexpr int64_t kT0 = 1700006400LL * kSec;
static_assert(kT0 % kDay == 0, "kT0 starts a day");

}  // namespace rltest::clock
