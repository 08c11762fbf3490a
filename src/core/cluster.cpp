#include "cluster.hpp"

#include <array>

#include "state_key.hpp"

namespace rl {
namespace {

constexpr std::array<uint16_t, 256> crcTable() {
    std::array<uint16_t, 256> t{};
    for (unsigned i = 0; i < 256; i++) {
        unsigned crc = i << 8;
        for (int b = 0; b < 8; b++) {
            crc = (crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1;
        }
        t[i] = static_cast<uint16_t>(crc);
    }
    return t;
}

constexpr std::array<uint16_t, 256> kCrc = crcTable();

uint16_t crc16(std::string_view s) {
    unsigned crc = 0;
    for (unsigned char c : s) {
        crc = ((crc << 8) ^ kCrc[((crc >> 8) ^ c) & 0xff]) & 0xffff;
    }
    return static_cast<uint16_t>(crc);
}

bool digits(std::string_view s, unsigned max, unsigned *out) {
    if (s.empty() || s.size() > 5) {
        return false;
    }
    unsigned v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') {
            return false;
        }
        v = v * 10 + static_cast<unsigned>(c - '0');
    }
    if (v > max) {
        return false;
    }
    *out = v;
    return true;
}

}  // namespace

uint16_t keySlot(std::string_view key) {
    size_t open = key.find('{');
    if (open != std::string_view::npos) {
        size_t close = key.find('}', open + 1);
        if (close != std::string_view::npos && close > open + 1) {
            key = key.substr(open + 1, close - open - 1);
        }
    }
    return static_cast<uint16_t>(crc16(key) & (kClusterSlots - 1));
}

uint16_t valueSlot(std::string_view value) {
    /* a tag is never empty, nor holds a brace (valueNeedsDigest) */
    char tag[kMaxValueTag];
    char *end = writeValueTag(tag, value);
    return static_cast<uint16_t>(
        crc16({tag, static_cast<size_t>(end - tag)}) & (kClusterSlots - 1));
}

bool parseRedirect(std::string_view error, Redirect *out) {
    Redirect r{};
    if (error.substr(0, 6) == "MOVED ") {
        error.remove_prefix(6);
    } else if (error.substr(0, 4) == "ASK ") {
        r.ask = true;
        error.remove_prefix(4);
    } else {
        return false;
    }
    size_t sp = error.find(' ');
    size_t colon = error.rfind(':');
    unsigned slot, port;
    if (sp == std::string_view::npos || colon == std::string_view::npos ||
        colon < sp || !digits(error.substr(0, sp), kClusterSlots - 1, &slot) ||
        !digits(error.substr(colon + 1), 65535, &port) || port == 0)
    {
        return false;
    }
    r.slot = static_cast<uint16_t>(slot);
    r.host = error.substr(sp + 1, colon - sp - 1);
    r.port = static_cast<int>(port);
    *out = r;
    return true;
}

}  // namespace rl
