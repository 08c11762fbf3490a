/* Limits that follow the upstream (concurrency=auto, SPEC section 13):
 * the control law that moves an in-flight limit N from what the
 * admitted requests' latencies say, once an interval, as a pure
 * function (samples in, N out), and the latency histogram the samples
 * are summed in (per worker in shared memory, per fleet in Redis).
 *
 * The law (docs/choices.md says why; lua/adaptive.lua runs the same
 * arithmetic in Redis for a fleet, tests/adaptive_lua_test.cpp holds
 * the two alike):
 *
 * - The latency L of an interval is its samples' p90. The baseline B
 *   is the no-load latency: the lowest p90 seen, which forgets upwards
 *   (kForget of the way to the interval's p90) only from a latency N
 *   did not make: the limit not reached, or N at min (a slower but
 *   healthy upstream is learnt there; the queues N lets in are not).
 *   The objective O is B x kTolerance, or target.
 * - More than kOverloadShare of the samples overloaded (a 502, 503,
 *   504 or 429 from the upstream, or a timeout): N halves.
 * - L above O: N steps down by half the gradient's step, N x (1 - O /
 *   L) / 2, at least 1, at most halving. For an upstream of capacity C
 *   that queues what it cannot serve, L is about S x N / C once N
 *   passes C, so the whole step would land on C; but a queue of one
 *   doubles the p90 of fixed service times, and the whole step halved
 *   N for it.
 * - Else, while the limit is reached (a request was refused, or one
 *   took the last slot) N grows, but not for kSettle interval after a
 *   step down (what the new N costs in latency is known at the end of
 *   the first interval of its own samples: staleUs below): it doubles
 *   until the first step down or the first queue showing (L past B x
 *   kQueued), then grows by half the square root of N, at least 1, a
 *   step that doubles every kRestart intervals of growth in a row
 *   while no queue shows (a capacity far larger than N); a queue
 *   showing starts it over.
 * - An interval without samples changes nothing. N stays within [min,
 *   max].
 * - Once N was cut, the samples of the N before are dropped (staleUs),
 *   and the next interval starts after them: a cut is not followed by
 *   another on the N before's latency (kept by the callers:
 *   src/fleet/adaptive.cpp, the Lua).
 *
 * Priorities: a request of level p (0 to 3) is admitted while the
 * fleet's in-flight is below N x share(p) (kShares, in percent). */
#pragma once

#include <cstddef>
#include <cstdint>

namespace rl::adaptive {

/* The latency histogram: bucket i holds latencies from 2^(i/16) us up
 * to the next (a sixteenth of an octave: 4.4% apart), the last one
 * everything above 2^27 us (134 s). */
inline constexpr int kBucketsPerOctave = 16;
inline constexpr size_t kBuckets = 27 * kBucketsPerOctave;

size_t bucketOf(int64_t latencyUs);
/* A bucket's latency: its geometric middle, in us. */
double bucketUs(size_t bucket);

/* The constants of the law (docs/choices.md). */
inline constexpr double kTolerance = 1.25;
inline constexpr double kForget = 0.05;
/* a queue shows: the p90 past half the tolerance */
inline constexpr double kQueued = 1 + (kTolerance - 1) / 2;
inline constexpr int64_t kOverloadSharePercent = 10;
inline constexpr int64_t kRestart = 1;
inline constexpr int64_t kSettle = 1;
inline constexpr int64_t kShares[4] = {100, 90, 75, 50};
inline constexpr uint64_t kDefaultMin = 4;
inline constexpr uint64_t kDefaultMax = 1000;
inline constexpr uint64_t kMaxMax = 100000;
/* the interval, us */
inline constexpr int64_t kIntervalUs = 1000000;
/* samples reach the law a tick at a time (each instance's worker 0
 * sends its own every tick; an embedded zone's are taken each tick) */
inline constexpr int64_t kTickUs = kIntervalUs / 4;

/* After N is cut, the requests admitted at the N before still end, and
 * would make the next interval step again on that N (a cut followed by
 * a cut it did not need): the samples that reach the law within
 * staleUs(p90, learn) of the cut are dropped, and the next interval
 * starts after them. A tick of samples is clean once it began after
 * every worker knew the new N (`learn` ticks: 1 for a fleet, whose
 * instances hear it in the reply to their next tick; 0 in one
 * instance's memory) and the requests admitted before had ended (the
 * p90 of the interval that cut N, at most an interval). Not after
 * growth: the N before's samples are then of a shorter queue, which
 * at worst grows N once more, and the next interval cuts it back;
 * waiting there made following a doubled capacity 3 times slower. */
double staleUs(double p90Us, int64_t learnTicks);

struct Params {
    uint64_t min = kDefaultMin;
    uint64_t max = kDefaultMax;
    int64_t targetUs = 0;   /* a p90 objective; 0: none */
};

/* What N is, and what the law keeps from interval to interval. */
struct State {
    uint64_t limit = 0;     /* N; 0: not started (min) */
    double baselineUs = 0;  /* 0: not learnt yet */
    bool growing = true;    /* doubling (until the first step down) */
    int64_t streak = 0;     /* intervals of growth in a row */
    int64_t settle = 0;     /* intervals left without growth after a
                               step down */
};

/* An interval's samples (a worker's, an instance's, the fleet's). */
struct Samples {
    int64_t count = 0;
    int64_t overloaded = 0;
    int64_t limited = 0;    /* refusals, and admissions of the last slot */
    uint32_t hist[kBuckets] = {};

    void add(int64_t latencyUs, bool overload) {
        hist[bucketOf(latencyUs)]++;
        count++;
        overloaded += overload ? 1 : 0;
    }
    void merge(const Samples& other);
};

/* The latency of quantile q (0 < q <= 1) of the samples, in us (the
 * smallest bucket whose count reaches q of them); 0 without samples. */
double quantileUs(const Samples& s, double q);

/* What an interval's update found, for the operators' view. */
struct Reading {
    double p50Us = 0;
    double p90Us = 0;
};

/* The law: the state after an interval of these samples. */
State update(const Params& p, const State& s, const Samples& in,
             Reading* read = nullptr);

/* N as it starts (min) or is (within [min, max]). */
uint64_t limitOf(const Params& p, const State& s);

/* Whether a request of priority level p (0 to 3; another value counts
 * as 3) is admitted with `inflight` held of N: while inflight is below
 * N x share(p), i.e. below capOf(N, p) slots. */
bool admits(uint64_t limit, int64_t inflight, int priority);
uint64_t capOf(uint64_t limit, int priority);

/* A priority= value's level: 0 to 3, anything else 3. */
int levelOf(const char* text, size_t len);

}  // namespace rl::adaptive
