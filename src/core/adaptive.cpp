/* adaptive.cpp: the law of concurrency=auto (see adaptive.hpp). Every
 * step is one lua/adaptive.lua takes in the same order with the same
 * doubles, so that Redis and the embedded store move N alike. */
#include "adaptive.hpp"

#include <algorithm>
#include <cmath>

namespace rl::adaptive {

size_t bucketOf(int64_t latencyUs) {
    if (latencyUs <= 1) {
        return 0;
    }
    /* the octave, then the sixteenth of it from the 8 bits after the
     * leading one (on every request: no log2), whose thresholds are
     * ceil(256 x (2^(j/16) - 1)) */
    static constexpr uint8_t kSixteenths[15] = {
        12, 24, 36, 49, 62, 76, 91, 107, 123, 139, 157, 175, 194, 214, 235};
    auto x = static_cast<uint64_t>(latencyUs);
    int e = 63 - __builtin_clzll(x);
    uint64_t m = e >= 8 ? (x >> (e - 8)) & 0xff : (x << (8 - e)) & 0xff;
    size_t j = 0;
    while (j < 15 && m >= kSixteenths[j]) {
        j++;
    }
    return std::min(static_cast<size_t>(e) * kBucketsPerOctave + j,
                    kBuckets - 1);
}

double bucketUs(size_t bucket) {
    return std::pow(2.0, (static_cast<double>(bucket) + 0.5) /
                             kBucketsPerOctave);
}

void Samples::merge(const Samples& other) {
    count += other.count;
    overloaded += other.overloaded;
    limited += other.limited;
    for (size_t i = 0; i < kBuckets; i++) {
        hist[i] += other.hist[i];
    }
}

double quantileUs(const Samples& s, double q) {
    int64_t total = 0;
    for (size_t i = 0; i < kBuckets; i++) {
        total += s.hist[i];
    }
    if (total <= 0) {
        return 0;
    }
    double need = std::max(1.0, std::ceil(q * static_cast<double>(total)));
    double seen = 0;
    for (size_t i = 0; i < kBuckets; i++) {
        seen += s.hist[i];
        if (s.hist[i] > 0 && seen >= need) {
            return bucketUs(i);
        }
    }
    return bucketUs(kBuckets - 1);
}

double staleUs(double p90Us, int64_t learnTicks) {
    return static_cast<double>((learnTicks + 1) * kTickUs) +
           std::min(std::max(p90Us, 0.0), static_cast<double>(kIntervalUs));
}

uint64_t limitOf(const Params& p, const State& s) {
    uint64_t n = s.limit > 0 ? s.limit : p.min;
    return std::clamp(n, p.min, std::max(p.min, p.max));
}

State update(const Params& p, const State& s, const Samples& in,
             Reading* read) {
    State t = s;
    double n = static_cast<double>(limitOf(p, s));
    t.limit = static_cast<uint64_t>(n);
    if (in.count <= 0) {
        return t;
    }
    double p50 = quantileUs(in, 0.5);
    double p90 = quantileUs(in, 0.9);
    if (read != nullptr) {
        read->p50Us = p50;
        read->p90Us = p90;
    }
    double b = s.baselineUs > 0 ? s.baselineUs : p90;
    double objective = p.targetUs > 0 ? static_cast<double>(p.targetUs)
                                      : b * kTolerance;
    double next = n;
    bool overload = in.overloaded * 100 > in.count * kOverloadSharePercent;
    if (overload || p90 > objective) {
        /* down: halving on overload; else half the gradient's step to
         * the objective, at least 1 (a queue of one doubles the p90 of
         * an upstream of fixed service times: the full gradient would
         * halve N for it), at most halving */
        next = std::ceil(n / 2);
        if (!overload) {
            next = std::max(next, n - std::max(1.0, std::floor(
                                      n * (1 - objective / p90) / 2 + 0.5)));
        }
        t.growing = false;
        t.streak = 0;
        t.settle = kSettle;
    } else if (s.settle > 0) {
        t.settle = s.settle - 1;    /* (N holds) */
        t.streak = 0;
    } else if (in.limited > 0) {
        /* a queue showing (the p90 past half the tolerance): N is near
         * the capacity, so no more doubling, and the step starts over */
        if (p90 > b * kQueued) {
            t.growing = false;
            t.streak = 0;
        }
        t.streak++;
        /* (a step that doubles every kRestart intervals of growth in
         * a row: a capacity far above N is reached in a few) */
        next = t.growing
                   ? 2 * n
                   : n + std::max(1.0, std::floor(std::sqrt(n) / 2)) *
                             std::pow(2.0, static_cast<double>(
                                               (t.streak - 1) / kRestart));
    } else {
        t.streak = 0;
    }
    double lo = static_cast<double>(p.min);
    double hi = static_cast<double>(std::max(p.min, p.max));
    t.limit = static_cast<uint64_t>(std::clamp(next, lo, hi));
    /* the baseline forgets upwards only from a latency N did not make:
     * the limit not reached, or N at its floor (else each queue N
     * lets in would raise the baseline that lets N queue more) */
    bool ours = in.limited > 0 && n > lo;
    t.baselineUs = p90 < b ? p90 : ours ? b : b + (p90 - b) * kForget;
    return t;
}

uint64_t capOf(uint64_t limit, int priority) {
    int level = priority >= 0 && priority <= 3 ? priority : 3;
    if (level == 0) {
        return limit;
    }
    /* the slots below N x share: ceil(N x share / 100) */
    auto share = static_cast<uint64_t>(kShares[level]);
    return limit > UINT64_MAX / 100 ? limit / 100 * share
                                    : (limit * share + 99) / 100;
}

bool admits(uint64_t limit, int64_t inflight, int priority) {
    return inflight >= 0 &&
           static_cast<uint64_t>(inflight) < capOf(limit, priority);
}

int levelOf(const char* text, size_t len) {
    if (len == 1 && text[0] >= '0' && text[0] <= '3') {
        return text[0] - '0';
    }
    return 3;
}

}  // namespace rl::adaptive
