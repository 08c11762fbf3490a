/* fixed_window, sliding_window and sliding_log: a count in a window,
 * two windows' counts weighed, and a ring of admission times (their
 * state: algorithm.cpp). */
#include "algorithm_steps.hpp"

#include <cmath>

namespace rl::steps {

/* ------------------------------------------------------------------ */
/* fixed_window                                                       */

namespace {

/* The window (a calendar rule: its period's end) the state keeps
 * counting in at now: its own while it runs (the same window, or a later
 * one: the clock went back; a calendar period until it ends, whatever
 * the bounds say), else now's, fresh. */
struct Window {
    int64_t w;
    bool kept;
};

Window fixedWindow(const Params& p, const State& s, int64_t now) {
    if (p.calendar()) {
        return s.a > now ? Window{s.a, true} : Window{periodEnd(p, now), false};
    }
    int64_t w = now / i64(p.windowUs);
    return s.a >= w ? Window{s.a, true} : Window{w, false};
}

}  // namespace

Check fixedCheck(const Params& p, const State& s, int64_t cost, int64_t now) {
    const int64_t limit = i64(p.limit);
    Window win = fixedWindow(p, s, now);
    int64_t used = win.kept ? s.b - s.c : 0;
    Check c{};
    c.ok = used + cost <= limit;
    c.left = std::max<int64_t>(limit - used, 0);
    c.resetUs = p.calendar() ? win.w - now
                             : (win.w + 1) * i64(p.windowUs) - now;
    c.retryUs = c.ok ? 0 : c.resetUs;
    return c;
}

void fixedCommit(const Params& p, State& s, int64_t cost, int64_t now) {
    Window win = fixedWindow(p, s, now);
    if (win.kept) {
        s.b += cost;
    } else {
        s = {win.w, cost, 0};
    }
}

void fixedRefund(const Params& p, State& s, int64_t cost, int64_t then) {
    int64_t w = p.calendar() ? periodEnd(p, then) : then / i64(p.windowUs);
    if (s.a == w) {
        s.b = std::max<int64_t>(s.b - cost, 0);
    }
}

void fixedCredit(const Params& p, State& s, int64_t units, int64_t now) {
    Window win = fixedWindow(p, s, now);
    if (win.kept) {
        s.c += units;
    } else {
        s = {win.w, 0, units};
    }
}

/* ------------------------------------------------------------------ */
/* sliding_window: the doubles below are the Lua script's, operation
 * for operation, so both round alike.                                */

namespace {

struct Sliding {
    int64_t w;        /* window the time falls in */
    int64_t elapsed;  /* since that window began */
    int64_t back;     /* how far the clock went back (0 normally) */
    int64_t cur;
    int64_t prev;
};

Sliding slidingAt(const Params& p, const State& s, int64_t now) {
    const int64_t window = i64(p.windowUs);
    Sliding v{now / window, 0, 0, 0, 0};
    if (s.a > v.w) {
        v.back = s.a * window - now;
        v.w = s.a;
    } else {
        v.elapsed = now - v.w * window;
    }
    if (s.a == v.w) {
        v.cur = s.b;
        v.prev = s.c;
    } else if (s.a == v.w - 1) {
        v.prev = s.b;
    }
    return v;
}

int64_t slidingRetry(double prev, double cur, int64_t elapsed, int64_t window,
                     double limit, double cost) {
    const double wd = static_cast<double>(window);
    if (cost > limit) {
        return 2 * window - elapsed;
    }
    double room = limit - cur - cost;
    if (room >= 0 && prev > 0) {
        double t = wd - room * wd / prev;
        return std::max(static_cast<int64_t>(std::ceil(t)) - elapsed,
                        int64_t(1));
    }
    if (room >= 0) {
        return 1;
    }
    double t = wd - (limit - cost) * wd / cur;
    return window - elapsed +
           std::max(static_cast<int64_t>(std::ceil(t)), int64_t(0));
}

}  // namespace

Check slidingCheck(const Params& p, const State& s, int64_t cost,
                   int64_t now) {
    const int64_t window = i64(p.windowUs);
    Sliding v = slidingAt(p, s, now);
    const double prev = static_cast<double>(v.prev);
    const double cur = static_cast<double>(v.cur);
    const double limit = static_cast<double>(p.limit);
    const double dc = static_cast<double>(cost);
    double est = prev * static_cast<double>(window - v.elapsed) /
                     static_cast<double>(window) +
                 cur;
    Check c{};
    c.ok = est + dc <= limit;
    c.left = std::max(static_cast<int64_t>(std::floor(limit - est)),
                      int64_t(0));
    int64_t after = v.cur;
    if (c.ok) {
        after += cost;
    } else {
        c.retryUs = slidingRetry(prev, cur, v.elapsed, window, limit, dc) +
                    v.back;
    }
    if (after > 0) {
        c.resetUs = 2 * window - v.elapsed + v.back;
    } else if (v.prev > 0) {
        c.resetUs = window - v.elapsed + v.back;
    }
    return c;
}

void slidingCommit(const Params& p, State& s, int64_t cost, int64_t now) {
    Sliding v = slidingAt(p, s, now);
    s.a = v.w;
    s.b = v.cur + cost;
    s.c = v.prev;
}

void slidingRefund(const Params& p, State& s, int64_t cost, int64_t then) {
    int64_t w = then / i64(p.windowUs);
    if (s.a == w) {
        s.b = std::max<int64_t>(s.b - cost, 0);
    } else if (s.a == w + 1) {
        s.c = std::max<int64_t>(s.c - cost, 0);
    }
}

/* ------------------------------------------------------------------ */
/* sliding_log: a ring of admission times, oldest first: N entries,
 * or more under a lower N (Params::logEntries)                       */

namespace {

struct Ring {
    const int64_t* slots;
    int64_t size;   /* its entries: N, or more (logSize()) */
    int64_t count;
    int64_t head;

    int64_t at(int64_t i) const {
        int64_t k = head + i;
        return slots[k >= size ? k - size : k];
    }

    /* First index in [0, count) whose time is > t (count if none). */
    int64_t firstAfter(int64_t t) const {
        int64_t lo = 0;
        int64_t hi = count;
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (at(mid) > t) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        return lo;
    }
};

Ring ringOf(const Params& p, const State& s, const int64_t* log) {
    int64_t n = logSize(p);
    int64_t count = std::clamp<int64_t>(s.a, 0, n);
    int64_t head = n > 0 ? std::clamp<int64_t>(s.b, 0, n - 1) : 0;
    return {log, n, log != nullptr ? count : 0, head};
}

/* The log's time: now, or its newest entry if the clock went back. */
int64_t logTime(const Ring& r, int64_t now) {
    return r.count > 0 ? std::max(now, r.at(r.count - 1)) : now;
}

}  // namespace

Check logCheck(const Params& p, const State& s, const int64_t* log,
               int64_t cost, int64_t now) {
    const int64_t limit = i64(p.limit);
    const int64_t window = i64(p.windowUs);
    Ring r = ringOf(p, s, log);
    int64_t t = logTime(r, now);
    int64_t first = r.firstAfter(t - window);
    int64_t live = r.count - first;
    Check c{};
    c.ok = live + cost <= limit;
    c.left = std::max<int64_t>(limit - live, 0);
    if (c.ok) {
        if (cost > 0) {
            c.resetUs = t + window - now;
        } else if (live > 0) {
            c.resetUs = r.at(r.count - 1) + window - now;
        }
    } else {
        if (cost > limit) {
            c.retryUs = window;
        } else {
            /* the (live + cost - N)-th oldest entry must expire */
            c.retryUs = r.at(first + live + cost - limit - 1) + window - now;
        }
        c.resetUs = c.retryUs;
    }
    return c;
}

void logCommit(const Params& p, State& s, int64_t* log, int64_t cost,
               int64_t now) {
    Ring r = ringOf(p, s, log);
    if (log == nullptr || r.size <= 0) {
        return;
    }
    int64_t t = logTime(r, now);
    int64_t first = r.firstAfter(t - i64(p.windowUs));
    int64_t head = (r.head + first) % r.size;
    int64_t count = r.count - first;
    for (int64_t i = 0; i < cost && count < r.size; i++, count++) {
        log[(head + count) % r.size] = t;
    }
    s.a = count;
    s.b = head;
}

void logRefund(const Params& p, State& s, int64_t* log, int64_t cost,
               int64_t then) {
    Ring r = ringOf(p, s, log);
    int64_t lo = r.firstAfter(then - 1);
    int64_t hi = r.firstAfter(then);
    int64_t m = std::min(cost, hi - lo);
    if (m <= 0) {
        return;
    }
    /* the entries after the removed ones move down m places */
    for (int64_t i = hi; i < r.count; i++) {
        log[(r.head + i - m) % r.size] = r.at(i);
    }
    s.a = r.count - m;
    s.b = r.head;
}

int64_t logIdleAt(const Params& p, const State& s, const int64_t* log) {
    Ring r = ringOf(p, s, log);
    return r.count > 0 ? r.at(r.count - 1) + i64(p.windowUs) : 0;
}

}  // namespace rl::steps
