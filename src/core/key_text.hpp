/* A key value as an operator reads and writes it (SPEC section 8): a
 * rule whose key is exactly $binary_remote_addr keeps an address's 4
 * or 16 bytes, which the API shows and takes as the address in text
 * ("203.0.113.7", "2001:db8::1"); any other key value is shown as the
 * error log shows it (printable ASCII, other bytes as \xNN) and taken
 * as the percent-decoded bytes of the path. Pure: no nginx. */
#pragma once

#include <cstddef>
#include <string_view>

namespace rl {

/* The most bytes keyText() writes for a value of `len` bytes. */
constexpr size_t keyTextMax(size_t len) {
    return len * 4 + 3 < 46 ? 46 : len * 4 + 3;
}

/* `value` as text: an address when `address` and it has 4 or 16 bytes,
 * else its printable form, cut after `cap` bytes with "..." (at most
 * cap + 3 bytes; cap >= 46). Returns the length. */
size_t keyText(char* out, size_t cap, std::string_view value, bool address);

/* The key value an operator's text names: for an address rule, the
 * address's 4 bytes (IPv4, and an IPv4-mapped IPv6 address, as nginx's
 * $binary_remote_addr has it) or 16 (IPv6) at out; false when `text`
 * is no address. Other rules take the text as it is (not called). */
bool addressBytes(std::string_view text, unsigned char* out, size_t* len);

}  // namespace rl
