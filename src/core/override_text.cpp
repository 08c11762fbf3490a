#include "override_text.hpp"

#include <cstring>

namespace rl {

namespace {

bool space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
           c == '\v';
}

/* The words of text, one after the other. */
struct Words {
    std::string_view text;
    size_t at = 0;

    bool next(std::string_view* w) {
        while (at < text.size() && space(text[at])) {
            at++;
        }
        if (at == text.size()) {
            return false;
        }
        size_t from = at;
        while (at < text.size() && !space(text[at])) {
            at++;
        }
        *w = text.substr(from, at - from);
        return true;
    }
};

/* A word NAME=DIGITS: its name (split at the last '='), or false. */
bool entry(std::string_view w, std::string_view* name,
           std::string_view* digits) {
    size_t eq = w.rfind('=');
    if (eq == std::string_view::npos || eq == 0) {
        return false;
    }
    for (size_t i = eq + 1; i < w.size(); i++) {
        if (w[i] < '0' || w[i] > '9') {
            return false;
        }
    }
    *name = w.substr(0, eq);
    *digits = w.substr(eq + 1);
    return true;
}

/* "limit", in any case */
bool limitWord(std::string_view w) {
    return w.size() == 5 && (w[0] | 0x20) == 'l' && (w[1] | 0x20) == 'i' &&
           (w[2] | 0x20) == 'm' && (w[3] | 0x20) == 'i' &&
           (w[4] | 0x20) == 't';
}

}  // namespace

bool isOverride(std::string_view text) {
    return text.size() > 5 && space(text[5]) && limitWord(text.substr(0, 5));
}

uint64_t overrideLimit(std::string_view text, std::string_view name) {
    Words words{text};
    std::string_view w, n, digits;
    while (words.next(&w)) {
        if (!entry(w, &n, &digits) || n != name) {
            continue;
        }
        if (digits.empty() || digits.size() > 10) {
            return 0;
        }
        uint64_t v = 0;
        for (char c : digits) {
            v = v * 10 + static_cast<uint64_t>(c - '0');
        }
        return v;
    }
    return 0;
}

bool overridden(const Params& rule, uint64_t n, bool burstFollows,
                Params* out) {
    /* (the log and the slots keep an entry each: lua/override.lua) */
    uint64_t most = rule.algorithm == Algorithm::SlidingLog ||
                            rule.algorithm == Algorithm::Concurrency
                        ? 100000
                        : 1000000000;
    if (n < 1 || n > most || n == rule.limit) {
        return false;
    }
    Params p = rule;
    p.limit = n;
    if (burstFollows) {
        p.burst = n;
    }
    if (takesBurst(p.algorithm) && !exactArithmetic(p, p.burst + 1)) {
        return false;
    }
    *out = p;
    return true;
}

size_t overrideWith(char* out, std::string_view text, std::string_view name,
                    uint64_t n) {
    Words words{text};
    std::string_view w, wn, digits;
    char* p = out;
    bool first = true;
    size_t entries = 0;
    while (words.next(&w)) {
        if (first) {
            first = false;
            if (limitWord(w)) {
                std::memcpy(p, w.data(), w.size());   /* as written */
                p += w.size();
                continue;
            }
        }
        if (entry(w, &wn, &digits) && wn == name) {
            continue;
        }
        if (p == out) {
            std::memcpy(p, "limit", 5);
            p += 5;
        }
        *p++ = ' ';
        std::memcpy(p, w.data(), w.size());
        p += w.size();
        entries++;
    }
    if (p == out) {
        std::memcpy(p, "limit", 5);
        p += 5;
    }
    if (n > 0) {
        *p++ = ' ';
        std::memcpy(p, name.data(), name.size());
        p += name.size();
        *p++ = '=';
        char digitsOut[24];
        size_t d = 0;
        do {
            digitsOut[d++] = static_cast<char>('0' + n % 10);
            n /= 10;
        } while (n > 0);
        while (d > 0) {
            *p++ = digitsOut[--d];
        }
        entries++;
    }
    return entries > 0 ? static_cast<size_t>(p - out) : 0;
}

}  // namespace rl
