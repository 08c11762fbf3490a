/* The overrides' trailer of a script reply (lua/rl.lua override()): a
 * record per overridden rule, its index and its limit. validTrailer()
 * says whether bytes are such records; trailerLimits() then hands each
 * call of the batch its rules' limits, call after call. The input gives
 * the batch's calls (their rule counts), then the trailer's bytes. */
#include "fuzz.hpp"

#include "core/rate.hpp"
#include "core/reply.hpp"
#include "core/script.hpp"

namespace rl::fuzz {

void trailer(const uint8_t* data, size_t size) {
    Input in(data, size);
    size_t calls = 1 + (in.byte() & 7u);
    size_t rules[8], total = 0;
    for (size_t c = 0; c < calls; c++) {
        rules[c] = 1 + in.byte() % kMaxRulesPerCall;
        total += rules[c];
    }
    size_t len;
    const char* bytes = in.rest(&len);
    if (!validTrailer(bytes, len, total)) {
        return;
    }
    size_t records = len / kTrailerRecordBytes;
    FUZZ_CHECK(records <= total);   /* increasing indexes below total */

    size_t next = 0, from = 0, seen = 0;
    for (size_t c = 0; c < calls; c++) {
        int64_t limits[kMaxRulesPerCall];
        size_t before = next;
        bool any = trailerLimits(bytes, len, &next, from, rules[c], limits);
        FUZZ_CHECK(next >= before && next <= records);
        FUZZ_CHECK(any == (next > before));
        size_t set = 0;
        for (size_t i = 0; i < rules[c]; i++) {
            FUZZ_CHECK(limits[i] >= 0 &&
                       limits[i] <= static_cast<int64_t>(kMaxLimit));
            set += limits[i] > 0;
        }
        /* each record read is one rule's limit, of this call */
        FUZZ_CHECK(set == next - before);
        for (size_t r = before; r < next; r++) {
            auto index = static_cast<size_t>(doubleAt(bytes, 2 * r));
            FUZZ_CHECK(index >= from && index < from + rules[c]);
            FUZZ_CHECK(limits[index - from] ==
                       static_cast<int64_t>(doubleAt(bytes, 2 * r + 1)));
        }
        seen += next - before;
        from += rules[c];
    }
    FUZZ_CHECK(seen == records);
}

}  // namespace rl::fuzz
