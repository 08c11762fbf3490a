/* The trailer of a script reply (lua/rl.lua): a record per rule a key
 * value's override decided (its index, its limit) and per request
 * granted a lease (minus 1 + the index of its last rule, the units).
 * validTrailer() says whether bytes are such records; trailerFor() then
 * hands each call of the batch its rules' limits and its grant, call
 * after call. The input gives the batch's calls (their rule counts),
 * then the trailer's bytes.
 *
 * Promises, for a valid trailer: every record is read by exactly one
 * call, as one of its own rules; limits are 0 or a rate's (1 to 1e9);
 * a grant is 0 to 2^53 units; a call says it has overrides when it
 * has one. */
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
    FUZZ_CHECK(records <= 2 * total);   /* an override and a grant each */

    size_t next = 0, from = 0;
    for (size_t c = 0; c < calls; c++) {
        int64_t limits[kMaxRulesPerCall], grant = -1;
        size_t before = next;
        bool any = trailerFor(bytes, len, &next, from, rules[c], limits,
                              &grant);
        FUZZ_CHECK(next >= before && next <= records);
        FUZZ_CHECK(grant >= 0 && grant <= (int64_t{1} << 53));
        bool some = false;
        for (size_t i = 0; i < rules[c]; i++) {
            FUZZ_CHECK(limits[i] >= 0 &&
                       limits[i] <= static_cast<int64_t>(kMaxLimit));
            some = some || limits[i] > 0;
        }
        FUZZ_CHECK(any == some);
        /* each record read names one of this call's rules */
        for (size_t r = before; r < next; r++) {
            auto index = static_cast<int64_t>(doubleAt(bytes, 2 * r));
            int64_t rule = index >= 0 ? index : -index - 1;
            FUZZ_CHECK(rule >= static_cast<int64_t>(from) &&
                       rule < static_cast<int64_t>(from + rules[c]));
        }
        from += rules[c];
    }
    FUZZ_CHECK(next == records);
}

}  // namespace rl::fuzz
