/* Redis Cluster without a connection (src/core/cluster.cpp): the slot
 * of a key and of a key value, and MOVED/ASK errors. The input's first
 * byte picks a prefix length; the rest is the key value, and the text
 * of an error reply.
 *
 * Promises: a state key of VALUE (src/core/state_key.cpp) lands on
 * valueSlot(VALUE), whatever the prefix (a cluster zone's holds no
 * brace) and the rule; a redirect parsed names a slot below 16384, a
 * port from 1 to 65535 and a host that is part of the text, and reads
 * back the same from the text written again. */
#include "fuzz.hpp"

#include "core/cluster.hpp"
#include "core/state_key.hpp"

#include <string>
#include <string_view>

namespace rl::fuzz {

void cluster(const uint8_t* data, size_t size) {
    Input in(data, size);
    size_t prefixLen = in.byte() % 16u;
    size_t n;
    const char* rest = in.rest(&n);
    std::string_view text(rest, n);

    FUZZ_CHECK(keySlot(text) < kClusterSlots);
    uint16_t slot = valueSlot(text);
    FUZZ_CHECK(slot < kClusterSlots);

    std::string prefix(prefixLen, 'p');
    std::string key(stateKeyLength(prefix.size(), text), '\0');
    char* end = writeStateKey(key.data(), prefix, text, "0123456789abcdef");
    FUZZ_CHECK(end == key.data() + key.size());
    FUZZ_CHECK(keySlot(key) == slot);

    Redirect r;
    if (parseRedirect(text, &r)) {
        FUZZ_CHECK(r.slot < kClusterSlots);
        FUZZ_CHECK(r.port >= 1 && r.port <= 65535);
        FUZZ_CHECK(r.host.empty() ||
                   (r.host.data() >= text.data() &&
                    r.host.data() + r.host.size() <=
                        text.data() + text.size()));
        std::string again = (r.ask ? "ASK " : "MOVED ") +
                            std::to_string(r.slot) + ' ' +
                            std::string(r.host) + ':' +
                            std::to_string(r.port);
        Redirect r2;
        FUZZ_CHECK(parseRedirect(again, &r2));
        FUZZ_CHECK(r2.ask == r.ask && r2.slot == r.slot &&
                   r2.port == r.port && r2.host == r.host);
    }
}

}  // namespace rl::fuzz
