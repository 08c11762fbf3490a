#include "script.hpp"

#include <cstring>

#include "cluster.hpp"
#include "ngx_http_rl_script.h"
#include "sha1.hpp"

namespace rl {

namespace {

/* The script once, its flags' shebang first: scriptText() is the text
 * after it. */
constexpr char kShebang[] = "#!lua flags=allow-cross-slot-keys\n";
constexpr char kFlagged[] = "#!lua flags=allow-cross-slot-keys\n"
                            NGX_HTTP_RL_SCRIPT;

}  // namespace

std::string_view scriptText() {
    return {kFlagged + sizeof(kShebang) - 1,
            sizeof(kFlagged) - sizeof(kShebang)};
}

std::string_view crossSlotScriptText() {
    return {kFlagged, sizeof(kFlagged) - 1};
}

std::string_view apiScriptText() {
    static constexpr char kText[] = NGX_HTTP_RL_API_SCRIPT;
    return {kText, sizeof(kText) - 1};
}

std::string_view fleetScriptText() {
    static constexpr char kText[] = NGX_HTTP_RL_FLEET_SCRIPT;
    return {kText, sizeof(kText) - 1};
}

std::string_view adaptiveScriptText() {
    static constexpr char kText[] = NGX_HTTP_RL_ADAPTIVE_SCRIPT;
    return {kText, sizeof(kText) - 1};
}

std::string_view adaptiveScriptSha() {
    static const struct Hex {
        char text[40];
        Hex() { toHex(sha1(adaptiveScriptText()), text, 40); }
    } hex;
    return {hex.text, 40};
}

std::string_view scriptSha() {
    /* Computed on first use (configuration time, in the master). */
    static const struct Hex {
        char text[40];
        Hex() { toHex(sha1(scriptText()), text, 40); }
    } hex;
    return {hex.text, 40};
}

std::string_view crossSlotScriptSha() {
    static const struct Hex {
        char text[40];
        Hex() { toHex(sha1(crossSlotScriptText()), text, 40); }
    } hex;
    return {hex.text, 40};
}

unsigned char* putDouble(unsigned char* p, double v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    std::memcpy(p, &v, 8);
    return p + 8;
#else
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    for (int k = 0; k < 8; k++) {
        *p++ = static_cast<unsigned char>(bits >> (8 * k));
    }
    return p;
#endif
}

unsigned char* writeSpec(unsigned char* p, std::string_view algorithm,
                         std::string_view rule, uint64_t limit,
                         uint64_t windowUs, uint64_t burst, uint64_t delay,
                         bool dry, bool burstFollows, bool calendar,
                         bool trial, bool adaptive) {
    p = putDouble(p, static_cast<double>(limit));
    p = putDouble(p, static_cast<double>(windowUs));
    p = putDouble(p, static_cast<double>(burst));
    p = putDouble(p, static_cast<double>(delay));
    p = putDouble(p, (dry ? 1 : 0) + (burstFollows ? 2 : 0) +
                         (calendar ? 4 : 0) + (trial ? 8 : 0) +
                         (adaptive ? 16 : 0));
    p = putDouble(p, static_cast<double>(algorithm.size()));
    std::memcpy(p, algorithm.data(), algorithm.size());
    p += algorithm.size();
    std::memcpy(p, rule.data(), rule.size());
    return p + rule.size();
}

unsigned char* requestHead(unsigned char* p, size_t rules, int64_t t,
                           uint64_t ask) {
    p = putDouble(p, static_cast<double>(rules + 128 * ask));
    return putDouble(p, static_cast<double>(t));
}

unsigned char* ruleRecord(unsigned char* p, size_t key, size_t spec,
                          uint64_t cost) {
    p = putDouble(p, static_cast<double>(key));
    p = putDouble(p, static_cast<double>(spec));
    return putDouble(p, static_cast<double>(cost));
}

size_t probeKey(char* out, std::string_view prefix, int slot) {
    constexpr std::string_view tag = "~probe";
    constexpr std::string_view rule = "}:ffffffffffffffff";
    char* p = out;
    std::memcpy(p, prefix.data(), prefix.size());
    p += prefix.size();
    *p++ = '{';
    char* t = p;
    std::memcpy(p, tag.data(), tag.size());
    p += tag.size();
    if (slot >= 0) {
        /* the first N whose tag is on the slot: 16384 tries on average
         * (a few hundred microseconds, once an incident) */
        for (unsigned n = 0; n < 10000000; n++) {
            char* e = p;
            char digits[10];
            size_t len = 0;
            unsigned v = n;
            do {
                digits[len++] = static_cast<char>('0' + v % 10);
                v /= 10;
            } while (v != 0);
            while (len > 0) {
                *e++ = digits[--len];
            }
            if (keySlot(std::string_view(t, static_cast<size_t>(e - t))) ==
                slot) {
                p = e;
                break;
            }
        }
    }
    std::memcpy(p, rule.data(), rule.size());
    p += rule.size();
    return static_cast<size_t>(p - out);
}

std::string_view probeHead() {
    static const struct Head {
        unsigned char bytes[requestBytes(1)];
        Head() { ruleRecord(requestHead(bytes, 1, 0), 1, 1, 1); }
    } head;
    return {reinterpret_cast<const char*>(head.bytes), sizeof(head.bytes)};
}

std::string_view probeSpec() {
    static const struct Spec {
        unsigned char bytes[specBytes("fixed_window", "probe")];
        Spec() {
            writeSpec(bytes, "fixed_window", "probe", 1000000, 1000000, 0,
                      0, false, false);
        }
    } spec;
    return {reinterpret_cast<const char*>(spec.bytes), sizeof(spec.bytes)};
}

unsigned char* slotRecord(unsigned char* p, size_t key, size_t spec,
                          uint64_t slot) {
    p = putDouble(p, static_cast<double>(key));
    p = putDouble(p, static_cast<double>(spec));
    for (int k = 0; k < 8; k++) {
        *p++ = static_cast<unsigned char>(slot >> (8 * k));
    }
    return p;
}

unsigned char* boundsRecord(unsigned char* p, const int64_t* bounds) {
    for (int i = 0; i < 3; i++) {
        p = putDouble(p, static_cast<double>(bounds[i]));
    }
    return p;
}

unsigned char* placeRecord(unsigned char* p, size_t place) {
    return putDouble(p, static_cast<double>(place));
}

unsigned char* chargeRecord(unsigned char* p, size_t key, size_t spec,
                            int64_t units) {
    p = putDouble(p, static_cast<double>(key));
    p = putDouble(p, static_cast<double>(spec));
    return putDouble(p, static_cast<double>(units));
}

std::string_view callWord(CallKind kind) {
    switch (kind) {
    case CallKind::Refund:
        return "refund";
    case CallKind::Renew:
        return "renew";
    case CallKind::Charge:
        return "charge";
    case CallKind::Credit:
        return "credit";
    default:
        return {};
    }
}

}  // namespace rl
