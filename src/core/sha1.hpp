/* SHA-1 (FIPS 180-4): the script's EVALSHA name, rule ids, key digests. */
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace rl {

using Sha1Digest = std::array<uint8_t, 20>;

Sha1Digest sha1(std::string_view data);

/* Lowercase hex of the digest's first `chars` / 2 bytes into out. */
void toHex(const Sha1Digest& d, char* out, size_t chars);

}  // namespace rl
