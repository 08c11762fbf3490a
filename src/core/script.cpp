#include "script.hpp"

#include <cstring>

#include "ngx_http_rl_script.h"
#include "sha1.hpp"

namespace rl {

std::string_view scriptText() {
    static constexpr char kText[] = NGX_HTTP_RL_SCRIPT;
    return {kText, sizeof(kText) - 1};
}

std::string_view apiScriptText() {
    static constexpr char kText[] = NGX_HTTP_RL_API_SCRIPT;
    return {kText, sizeof(kText) - 1};
}

std::string_view scriptSha() {
    /* Computed on first use (configuration time, in the master). */
    static const struct Hex {
        char text[40];
        Hex() { toHex(sha1(scriptText()), text, 40); }
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
                         bool dry, bool burstFollows) {
    p = putDouble(p, static_cast<double>(limit));
    p = putDouble(p, static_cast<double>(windowUs));
    p = putDouble(p, static_cast<double>(burst));
    p = putDouble(p, static_cast<double>(delay));
    p = putDouble(p, (dry ? 1 : 0) + (burstFollows ? 2 : 0));
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

unsigned char* slotRecord(unsigned char* p, size_t key, size_t spec,
                          uint64_t slot) {
    p = putDouble(p, static_cast<double>(key));
    p = putDouble(p, static_cast<double>(spec));
    for (int k = 0; k < 8; k++) {
        *p++ = static_cast<unsigned char>(slot >> (8 * k));
    }
    return p;
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
    default:
        return {};
    }
}

}  // namespace rl
