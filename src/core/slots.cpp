/* concurrency: the requests in flight, as slots held in the log, an
 * (expiry, id) pair each. */
#include "adaptive.hpp"
#include "algorithm_steps.hpp"

namespace rl::steps {

namespace {

struct Slots {
    int64_t* log;
    int64_t used;   /* entries: 2 per slot */
    int64_t cap;    /* the log's entries: 2 capacityOf(), or more
                     * (logSize()) */

    int64_t expiry(int64_t i) const { return log[2 * i]; }
    int64_t slots() const { return used / 2; }
    int64_t find(uint64_t id) const {
        for (int64_t i = 0; i < slots(); i++) {
            if (static_cast<uint64_t>(log[2 * i + 1]) == id) {
                return i;
            }
        }
        return -1;
    }
    /* the last slot takes the place of slot i */
    void remove(int64_t i) {
        used -= 2;
        log[2 * i] = log[used];
        log[2 * i + 1] = log[used + 1];
    }
};

/* The slots a key's log holds: N, or concurrency=auto's max (its burst,
 * SPEC 13), whatever N is now, so that a lower N never forgets a slot
 * held. */
int64_t capacityOf(const Params& p) {
    return std::max(i64(p.limit), i64(p.burst));
}

Slots slotsOf(const Params& p, const State& s, int64_t* log) {
    int64_t cap = logSize(p);
    cap -= cap % 2;
    int64_t used = log != nullptr ? std::clamp<int64_t>(s.a, 0, cap) : 0;
    return {log, used - used % 2, cap};
}

}  // namespace

Check inflightCheck(const Params& p, const State& s, const int64_t* log,
                    int64_t cost, int64_t now) {
    /* a priority level's share of N (concurrency=auto, SPEC 13: the
     * level in delay; 0 for any other in-flight rule): admitted while
     * the slots held are below N x share */
    const int64_t limit = i64(adaptive::capOf(p.limit,
                                              static_cast<int>(p.delay)));
    Slots sl = slotsOf(p, s, const_cast<int64_t*>(log));
    int64_t live = 0;
    for (int64_t i = 0; i < sl.slots(); i++) {
        live += sl.expiry(i) > now ? 1 : 0;
    }
    Check c{};
    c.ok = live + cost <= limit;
    c.left = std::max<int64_t>(limit - live, 0);
    if (!c.ok) {
        c.retryUs = kInflightRetryUs;
        c.resetUs = kInflightRetryUs;
    }
    return c;
}

/* Expired slots go, then the request's is held for a hold. */
void inflightCommit(const Params& p, State& s, int64_t* log, int64_t now) {
    Slots sl = slotsOf(p, s, log);
    for (int64_t i = sl.slots() - 1; i >= 0; i--) {
        if (sl.expiry(i) <= now) {
            sl.remove(i);
        }
    }
    if (log != nullptr && sl.slots() < capacityOf(p) && sl.used < sl.cap) {
        log[sl.used] = now + i64(p.windowUs);
        log[sl.used + 1] = static_cast<int64_t>(p.slotId);
        sl.used += 2;
    }
    s.a = sl.used;
    s.b = 0;
}

void inflightRelease(const Params& p, State& s, int64_t* log) {
    Slots sl = slotsOf(p, s, log);
    int64_t i = sl.find(p.slotId);
    if (i >= 0) {
        sl.remove(i);
        s.a = sl.used;
    }
}

int64_t inflightIdleAt(const Params& p, const State& s, const int64_t* log) {
    Slots sl = slotsOf(p, s, const_cast<int64_t*>(log));
    int64_t at = 0;
    for (int64_t i = 0; i < sl.slots(); i++) {
        at = std::max(at, sl.expiry(i));
    }
    return at;
}

/* The slot's expiry moves to now + W, never sooner than it was (ZADD
 * GT); a slot lost (expired and removed while its request ran) is put
 * back where the ring has room (Redis' set has no bound). */
void inflightRenew(const Params& p, State& s, int64_t* log, int64_t now) {
    Slots sl = slotsOf(p, s, log);
    int64_t i = sl.find(p.slotId);
    int64_t ends = now + i64(p.windowUs);
    if (i >= 0) {
        log[2 * i] = std::max(log[2 * i], ends);
    } else if (log != nullptr && sl.slots() < capacityOf(p) &&
               sl.used < sl.cap) {
        log[sl.used] = ends;
        log[sl.used + 1] = static_cast<int64_t>(p.slotId);
        s.a = sl.used + 2;
        s.b = 0;
    }
}

}  // namespace rl::steps
