/* Inside the core, for algorithm.cpp alone: the arithmetic the
 * algorithms share and each family's steps, which algorithm.cpp's
 * check(), commit(), refund() and idleAtUs() dispatch to
 *   windows.cpp  fixed_window, sliding_window, sliding_log
 *   meters.cpp   token_bucket, leaky_bucket, gcra
 *   slots.cpp    concurrency
 * A step takes a valid Params (algorithm.cpp checks), a cost already
 * bounded by costOf() and a time that is not negative. The module uses
 * algorithm.hpp. */
#pragma once

#include "algorithm.hpp"

#include <algorithm>
#include <cstdint>

namespace rl::steps {

inline constexpr int64_t kExactLimit = int64_t(1) << 53;

/* Beyond what the script computes exactly, and far from overflowing:
 * a larger cost counts as this much, a larger product saturates. */
inline constexpr int64_t kMaxFigure = int64_t(1) << 60;

/* b > 0; exact for every int64 a. */
inline int64_t ceilDiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return a % b > 0 ? q + 1 : q;
}

inline int64_t floorDiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return a % b < 0 ? q - 1 : q;
}

inline uint64_t gcd(uint64_t a, uint64_t b) {
    while (b != 0) {
        uint64_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

inline int64_t i64(uint64_t v) {
    return v > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX
                                                : static_cast<int64_t>(v);
}

/* a * b for a, b >= 0, at most kMaxFigure (exact within the bounds
 * exactArithmetic() checks). */
inline int64_t mulSat(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r) || r > kMaxFigure) {
        return kMaxFigure;
    }
    return r;
}

inline int64_t costOf(uint64_t cost) {
    return std::min(i64(cost), kMaxFigure);
}

inline Check rejectAll(int64_t retryUs) {
    return {false, 0, retryUs, retryUs, 0};
}

/* The entries of a sliding_log's or a concurrency rule's log: the
 * caller's (Params::logEntries), else logSlots(). */
inline int64_t logSize(const Params& p) {
    return std::min(p.logEntries != 0 ? i64(p.logEntries)
                                      : i64(logSlots(p)),
                    kMaxFigure);
}

/* windows.cpp */
Check fixedCheck(const Params& p, const State& s, int64_t cost, int64_t now);
void fixedCommit(const Params& p, State& s, int64_t cost, int64_t now);
void fixedRefund(const Params& p, State& s, int64_t cost, int64_t then);
void fixedCredit(const Params& p, State& s, int64_t units, int64_t now);
Check slidingCheck(const Params& p, const State& s, int64_t cost,
                   int64_t now);
void slidingCommit(const Params& p, State& s, int64_t cost, int64_t now);
void slidingRefund(const Params& p, State& s, int64_t cost, int64_t then);
Check logCheck(const Params& p, const State& s, const int64_t* log,
               int64_t cost, int64_t now);
void logCommit(const Params& p, State& s, int64_t* log, int64_t cost,
               int64_t now);
void logRefund(const Params& p, State& s, int64_t* log, int64_t cost,
               int64_t then);
int64_t logIdleAt(const Params& p, const State& s, const int64_t* log);

/* meters.cpp */
Check tokenCheck(const Params& p, const State& s, int64_t cost, int64_t now);
void tokenCommit(const Params& p, State& s, int64_t cost, int64_t now);
void tokenRefund(const Params& p, State& s, int64_t cost);
int64_t tokenIdleAt(const Params& p, const State& s);
Check leakyCheck(const Params& p, const State& s, int64_t cost, int64_t now);
void leakyCommit(const Params& p, State& s, int64_t cost, int64_t now);
void leakyRefund(const Params& p, State& s, int64_t cost);
int64_t leakyIdleAt(const Params& p, const State& s);
Check gcraCheck(const Params& p, const State& s, int64_t cost, int64_t now);
void gcraCommit(const Params& p, State& s, int64_t cost, int64_t now);
void gcraRefund(const Params& p, State& s, int64_t cost, int64_t then);
int64_t gcraIdleAt(const State& s);

/* slots.cpp */
Check inflightCheck(const Params& p, const State& s, const int64_t* log,
                    int64_t cost, int64_t now);
void inflightCommit(const Params& p, State& s, int64_t* log, int64_t now);
void inflightRelease(const Params& p, State& s, int64_t* log);
void inflightRenew(const Params& p, State& s, int64_t* log, int64_t now);
int64_t inflightIdleAt(const Params& p, const State& s, const int64_t* log);

}  // namespace rl::steps
