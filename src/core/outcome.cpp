#include "outcome.hpp"

namespace rl {

size_t bindingRule(const RuleOutcome* o, size_t n, bool allowed) {
    size_t best = 0;
    for (size_t i = 1; i < n; i++) {
        const RuleOutcome& a = o[i];
        const RuleOutcome& b = o[best];
        bool better;
        if (!allowed) {
            better = a.retryMs > b.retryMs;
        } else {
            better = a.remaining < b.remaining ||
                     (a.remaining == b.remaining && a.resetMs > b.resetMs);
        }
        if (better) {
            best = i;
        }
    }
    return best;
}

int64_t secondsCeil(int64_t ms) {
    return ms <= 0 ? 0 : (ms + 999) / 1000;
}

size_t printable(char* out, size_t cap, std::string_view value) {
    static const char kHex[] = "0123456789abcdef";
    size_t n = 0;
    for (unsigned char c : value) {
        bool plain = c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
        size_t need = plain ? 1 : 4;
        if (n + need > cap) {
            out[n++] = '.';
            out[n++] = '.';
            out[n++] = '.';
            return n;
        }
        if (plain) {
            out[n++] = static_cast<char>(c);
        } else {
            out[n++] = '\\';
            out[n++] = 'x';
            out[n++] = kHex[c >> 4];
            out[n++] = kHex[c & 0xf];
        }
    }
    return n;
}

}  // namespace rl
