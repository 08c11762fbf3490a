/* The clocks of the nginx-side C++: microseconds, from the vDSO. */
#pragma once

#include <cstdint>
#include <ctime>

namespace rl {

/* For durations and expiry shared by workers (one machine's clock). */
inline int64_t monotonicUs() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

/* Wall time: read once, when an embedded zone is made, to align its
 * windows to the epoch (src/shm/store.cpp); its decisions then run on
 * the monotonic clock, which no step of the wall clock moves. */
inline int64_t realtimeUs() {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return int64_t(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

}  // namespace rl
