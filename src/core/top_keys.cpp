#include "top_keys.hpp"

#include <algorithm>
#include <cstring>

namespace rl::top {

namespace {

bool same(const Slot& slot, uint32_t hash, std::string_view value) {
    size_t kept = value.size() < kValueMax ? value.size() : kValueMax;
    return slot.hash == hash && slot.length == value.size() &&
           std::memcmp(slot.value, value.data(), kept) == 0;
}

Slot* find(Generation& g, uint32_t hash, std::string_view value) {
    for (uint32_t i = 0; i < g.used; i++) {
        if (same(g.slots[i], hash, value)) {
            return &g.slots[i];
        }
    }
    return nullptr;
}

void mark(Sketch* s, uint32_t hash) {
    uint32_t bit = hash % kFilterBits;
    s->filter[bit / 64] |= uint64_t(1) << (bit % 64);
}

/* The generation of this minute, started if it is not yet: the filter
 * then holds the keys of the minute before only. */
Generation& current(Sketch* s, int64_t epoch) {
    Generation& g = s->gens[epoch & 1];
    if (g.epoch == epoch) {
        return g;
    }
    g.epoch = epoch;
    g.used = 0;
    std::memset(s->filter, 0, sizeof(s->filter));
    const Generation& before = s->gens[(epoch + 1) & 1];
    if (before.epoch == epoch - 1) {
        for (uint32_t i = 0; i < before.used; i++) {
            mark(s, before.slots[i].hash);
        }
    }
    return g;
}

}  // namespace

void init(Sketch* s) {
    std::memset(s, 0, sizeof(Sketch));
    s->lastEpoch = -2;
    s->gens[0].epoch = -2;
    s->gens[1].epoch = -2;
}

void reject(Sketch* s, uint32_t hash, std::string_view value, int64_t epoch) {
    Generation& g = current(s, epoch);
    s->lastEpoch = epoch;
    Slot* slot = find(g, hash, value);
    if (slot != nullptr) {
        slot->rejected++;
        slot->requests++;
        return;
    }
    uint32_t floor = 0;
    if (g.used < kSlots) {
        slot = &g.slots[g.used++];
    } else {
        slot = &g.slots[0];
        for (Slot& o : g.slots) {
            if (o.rejected < slot->rejected) {
                slot = &o;
            }
        }
        floor = slot->rejected;
    }
    slot->hash = hash;
    slot->rejected = floor + 1;
    slot->requests = floor + 1;
    slot->length = static_cast<uint32_t>(value.size());
    std::memcpy(slot->value, value.data(),
                value.size() < kValueMax ? value.size() : kValueMax);
    mark(s, hash);
}

void admit(Sketch* s, uint32_t hash, std::string_view value, int64_t epoch) {
    for (Generation& g : s->gens) {
        if (g.epoch != epoch && g.epoch != epoch - 1) {
            continue;
        }
        Slot* slot = find(g, hash, value);
        if (slot != nullptr) {
            slot->requests++;
            return;
        }
    }
}

size_t list(const Sketch* s, int64_t epoch, Entry* out) {
    size_t n = 0;
    for (int64_t i = 0; i < 2; i++) {
        const Generation& g = s->gens[(epoch - i) & 1];
        if (g.epoch != epoch - i) {
            continue;
        }
        size_t mine = n; /* the minute before adds to this one's keys */
        for (uint32_t j = 0; j < g.used; j++) {
            const Slot& slot = g.slots[j];
            size_t kept = slot.length < kValueMax ? slot.length : kValueMax;
            size_t m = 0;
            while (m < mine &&
                   !(out[m].hash == slot.hash &&
                     out[m].length == slot.length &&
                     std::memcmp(out[m].value, slot.value, kept) == 0)) {
                m++;
            }
            if (m == mine) {
                m = n++;
                out[m].hash = slot.hash;
                out[m].rejected = 0;
                out[m].requests = 0;
                out[m].length = slot.length;
                std::memcpy(out[m].value, slot.value, kept);
            }
            out[m].rejected += slot.rejected;
            out[m].requests += slot.requests;
        }
    }
    std::sort(out, out + n, [](const Entry& a, const Entry& b) {
        return a.rejected != b.rejected ? a.rejected > b.rejected
                                        : a.requests > b.requests;
    });
    return n;
}

}  // namespace rl::top
