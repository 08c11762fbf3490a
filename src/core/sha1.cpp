#include "sha1.hpp"

#include <cstring>

namespace rl {
namespace {

uint32_t rotl(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

void block(uint32_t h[5], const uint8_t* p) {
    uint32_t w[80];
    for (int i = 0; i < 16; i++) {
        w[i] = (uint32_t(p[4 * i]) << 24) | (uint32_t(p[4 * i + 1]) << 16) |
               (uint32_t(p[4 * i + 2]) << 8) | uint32_t(p[4 * i + 3]);
    }
    for (int i = 16; i < 80; i++) {
        w[i] = rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20) {
            f = (b & c) | (~b & d);
            k = 0x5a827999;
        } else if (i < 40) {
            f = b ^ c ^ d;
            k = 0x6ed9eba1;
        } else if (i < 60) {
            f = (b & c) | (b & d) | (c & d);
            k = 0x8f1bbcdc;
        } else {
            f = b ^ c ^ d;
            k = 0xca62c1d6;
        }
        uint32_t t = rotl(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = rotl(b, 30);
        b = a;
        a = t;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

}  // namespace

Sha1Digest sha1(std::string_view data) {
    uint32_t h[5] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476,
                     0xc3d2e1f0};
    const auto* p = reinterpret_cast<const uint8_t*>(data.data());
    size_t n = data.size();
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        block(h, p + i);
    }
    uint8_t tail[128] = {};
    size_t rest = n - i;
    std::memcpy(tail, p + i, rest);
    tail[rest] = 0x80;
    size_t len = rest + 1 + 8 <= 64 ? 64 : 128;
    uint64_t bits = uint64_t(n) * 8;
    for (int j = 0; j < 8; j++) {
        tail[len - 1 - j] = uint8_t(bits >> (8 * j));
    }
    block(h, tail);
    if (len == 128) {
        block(h, tail + 64);
    }
    Sha1Digest out;
    for (int j = 0; j < 5; j++) {
        out[4 * j] = uint8_t(h[j] >> 24);
        out[4 * j + 1] = uint8_t(h[j] >> 16);
        out[4 * j + 2] = uint8_t(h[j] >> 8);
        out[4 * j + 3] = uint8_t(h[j]);
    }
    return out;
}

void toHex(const Sha1Digest& d, char* out, size_t chars) {
    static const char kHex[] = "0123456789abcdef";
    for (size_t i = 0; i < chars && i / 2 < d.size(); i++) {
        uint8_t b = d[i / 2];
        out[i] = kHex[(i % 2 == 0) ? (b >> 4) : (b & 0xf)];
    }
}

}  // namespace rl
