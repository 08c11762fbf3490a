/* The top limited keys of a rule (SPEC section 8): a space-saving
 * sketch (Metwally et al.) of the key values a rule rejected, over about
 * the last two minutes, in a fixed block of shared memory. Two
 * generations of a minute each: rejections count in the current one, a
 * read merges it with the one before. A generation keeps kSlots keys;
 * a new key takes the place of the least rejected one, with its count
 * plus one (so a key rejected often is never missed; a count may be
 * over by what the key it replaced had).
 *
 * Requests a tracked key is admitted count too (`requests`), found
 * through a filter of the tracked keys' hashes that the allow path reads
 * without a lock: with no rejection in the last two minutes it reads one
 * number; otherwise a bit, and only a hit looks further.
 *
 * Plain data, no nginx: the caller holds the lock that guards it and
 * gives the minute (`epoch`), from a clock every worker shares. */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace rl::top {

inline constexpr size_t kSlots = 128;
/* Bytes of a value kept: a longer one is shown cut (its identity is its
 * hash, its length and these bytes). */
inline constexpr size_t kValueMax = 128;
inline constexpr size_t kFilterBits = 8192;
inline constexpr int64_t kEpochMs = 60000;

struct Slot {
    uint32_t hash;
    uint32_t rejected;
    uint32_t requests;
    uint32_t length;            /* the value's whole length */
    unsigned char value[kValueMax];
};

struct Generation {
    int64_t epoch;
    uint32_t used;
    Slot slots[kSlots];
};

struct Sketch {
    int64_t lastEpoch;          /* of the last rejection, -2: none */
    uint64_t filter[kFilterBits / 64];
    Generation gens[2];
};

/* A key of the list: counts over both generations, the value's first
 * kValueMax bytes. */
struct Entry {
    uint32_t hash;
    uint32_t rejected;
    uint32_t requests;
    uint32_t length;
    unsigned char value[kValueMax];

    std::string_view kept() const {
        return {reinterpret_cast<const char*>(value),
                length < kValueMax ? length : kValueMax};
    }
    bool cut() const { return length > kValueMax; }
};

void init(Sketch* s);

/* The rule rejected a request of this key (hash: of the whole value). */
void reject(Sketch* s, uint32_t hash, std::string_view value, int64_t epoch);

/* Without a lock: whether any key is tracked (a rejection in the last
 * two minutes), then whether this one may be (false: it is not). */
inline bool active(const Sketch* s, int64_t epoch) {
    return static_cast<const volatile int64_t&>(s->lastEpoch) >= epoch - 1;
}

inline bool mayTrack(const Sketch* s, uint32_t hash) {
    uint32_t bit = hash % kFilterBits;
    return (static_cast<const volatile uint64_t&>(s->filter[bit / 64]) >>
            (bit % 64)) & 1;
}

/* The rule admitted a request of this key: counted if it is tracked. */
void admit(Sketch* s, uint32_t hash, std::string_view value, int64_t epoch);

/* The keys of both generations, most rejected first, in out (room for
 * kListMax); returns how many. */
inline constexpr size_t kListMax = 2 * kSlots;
size_t list(const Sketch* s, int64_t epoch, Entry* out);

}  // namespace rl::top
