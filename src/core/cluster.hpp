/* Redis Cluster, the parts that need no connection: which of the 16384
 * hash slots a key lives on, and what a MOVED or ASK error says. */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace rl {

inline constexpr size_t kClusterSlots = 16384;

/* CRC16 (XMODEM) of the key's hash tag: the bytes between its first '{'
 * and the first '}' after it, when there are any; else of the whole
 * key. Modulo 16384. As Redis' keyHashSlot(). */
uint16_t keySlot(std::string_view key);

/* The slot of every state key of VALUE, and of its block: the slot of
 * the key's hash tag (VALUE, or its digest: src/core/state_key.hpp).
 * The prefix plays no part: a cluster zone's holds no brace. */
uint16_t valueSlot(std::string_view value);

struct Redirect {
    bool ask;               /* ASK (once, after ASKING), else MOVED */
    uint16_t slot;
    std::string_view host;  /* empty: the node that answered */
    int port;
};

/* "MOVED 3999 127.0.0.1:6381" or "ASK 3999 127.0.0.1:6381" (the host
 * is all before the last ':', an IPv6 address too). False for any other
 * text, a slot past 16383 or a port not in 1-65535. */
bool parseRedirect(std::string_view error, Redirect *out);

}  // namespace rl
