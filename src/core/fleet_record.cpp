#include "fleet_record.hpp"

#include "api_path.hpp"
#include "sha1.hpp"

namespace rl::fleet {

char* escape(char* out, std::string_view text) {
    static const char kHex[] = "0123456789ABCDEF";
    for (char ch : text) {
        auto c = static_cast<unsigned char>(ch);
        if (c <= ' ' || c == '%' || c > '~') {
            *out++ = '%';
            *out++ = kHex[c >> 4];
            *out++ = kHex[c & 15];
        } else {
            *out++ = ch;
        }
    }
    return out;
}

long unescape(char* text, size_t len) {
    return api::percentDecode(text, len);
}

bool nextLine(std::string_view* text, Line* out) {
    if (text->empty()) {
        return false;
    }
    size_t end = text->find('\n');
    std::string_view line = text->substr(0, end);
    text->remove_prefix(end == std::string_view::npos ? text->size()
                                                      : end + 1);
    out->n = 0;
    while (out->n < kMaxFields) {
        size_t tab = line.find('\t');
        out->fields[out->n++] = line.substr(0, tab);
        if (tab == std::string_view::npos) {
            break;
        }
        line.remove_prefix(tab + 1);
    }
    return true;
}

bool number(std::string_view field, int64_t* out) {
    if (field.empty() || field.size() > 16) {
        return false;
    }
    int64_t v = 0;
    for (char c : field) {
        if (c < '0' || c > '9') {
            return false;
        }
        v = v * 10 + (c - '0');
    }
    if (v > (int64_t(1) << 53)) {
        return false;
    }
    *out = v;
    return true;
}

int64_t saturatingAdd(int64_t a, int64_t b) {
    int64_t sum;
    if (__builtin_add_overflow(a, b, &sum)) {
        return b < 0 ? INT64_MIN : INT64_MAX;
    }
    return sum;
}

void digest(std::string_view text, char out[12]) {
    toHex(sha1(text), out, 12);
}

}  // namespace rl::fleet
