#include "json.hpp"

#include <cstring>

namespace rl::json {

namespace {

const char kHex[] = "0123456789abcdef";

char* escapeByte(char* out, unsigned char c) {
    std::memcpy(out, "\\u00", 4);
    out[4] = kHex[c >> 4];
    out[5] = kHex[c & 15];
    return out + 6;
}

/* The length of the valid UTF-8 sequence at s (at most `left` bytes),
 * 0 if none starts there (overlong forms, surrogates, beyond U+10FFFF
 * are not UTF-8). */
size_t utf8Length(const unsigned char* s, size_t left) {
    unsigned char c = s[0];
    size_t n;
    uint32_t cp;
    if (c < 0x80) {
        return 1;
    } else if ((c & 0xe0) == 0xc0) {
        n = 2;
        cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
        n = 3;
        cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (n > left) {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) {
            return 0;
        }
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    static const uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        return 0;
    }
    return n;
}

char* putUtf8(char* out, uint32_t cp) {
    if (cp < 0x80) {
        *out++ = static_cast<char>(cp);
    } else if (cp < 0x800) {
        *out++ = static_cast<char>(0xc0 | (cp >> 6));
        *out++ = static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        *out++ = static_cast<char>(0xe0 | (cp >> 12));
        *out++ = static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        *out++ = static_cast<char>(0x80 | (cp & 0x3f));
    } else {
        *out++ = static_cast<char>(0xf0 | (cp >> 18));
        *out++ = static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
        *out++ = static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        *out++ = static_cast<char>(0x80 | (cp & 0x3f));
    }
    return out;
}

class Parser {
public:
    Parser(char* text, size_t len) : p_(text), end_(text + len) {}

    bool object(Object* out, const char** why);

private:
    void space() {
        while (p_ < end_ &&
               (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) {
            p_++;
        }
    }
    bool eat(char c) {
        space();
        if (p_ < end_ && *p_ == c) {
            p_++;
            return true;
        }
        return false;
    }
    bool string(std::string_view* out);
    bool hex4(uint32_t* v);
    bool number(int64_t* out);
    bool value(Member* m);
    bool fail(const char* why) {
        why_ = why;
        return false;
    }

    char* p_;
    char* end_;
    const char* why_ = "not a JSON object";
};

bool Parser::hex4(uint32_t* v) {
    if (end_ - p_ < 4) {
        return false;
    }
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char c = *p_++;
        uint32_t d;
        if (c >= '0' && c <= '9') {
            d = static_cast<uint32_t>(c - '0');
        } else if (c >= 'a' && c <= 'f') {
            d = static_cast<uint32_t>(c - 'a' + 10);
        } else if (c >= 'A' && c <= 'F') {
            d = static_cast<uint32_t>(c - 'A' + 10);
        } else {
            return false;
        }
        *v = *v << 4 | d;
    }
    return true;
}

/* After the opening quote; decoded where it stands. */
bool Parser::string(std::string_view* out) {
    char* start = p_;
    char* w = p_;
    while (p_ < end_) {
        auto c = static_cast<unsigned char>(*p_);
        if (c == '"') {
            p_++;
            *out = {start, static_cast<size_t>(w - start)};
            return true;
        }
        if (c < 0x20) {
            return fail("a control character in a string");
        }
        if (c != '\\') {
            size_t n = utf8Length(reinterpret_cast<unsigned char*>(p_),
                                  static_cast<size_t>(end_ - p_));
            if (n == 0) {
                return fail("a string that is not UTF-8");
            }
            std::memmove(w, p_, n);
            w += n;
            p_ += n;
            continue;
        }
        if (++p_ == end_) {
            break;
        }
        char e = *p_++;
        switch (e) {
        case '"': *w++ = '"'; break;
        case '\\': *w++ = '\\'; break;
        case '/': *w++ = '/'; break;
        case 'b': *w++ = '\b'; break;
        case 'f': *w++ = '\f'; break;
        case 'n': *w++ = '\n'; break;
        case 'r': *w++ = '\r'; break;
        case 't': *w++ = '\t'; break;
        case 'u': {
            uint32_t cp;
            if (!hex4(&cp)) {
                return fail("an invalid \\u escape");
            }
            if (cp >= 0xdc00 && cp <= 0xdfff) {
                return fail("an invalid \\u escape");
            }
            if (cp >= 0xd800 && cp <= 0xdbff) {
                uint32_t lo;
                if (end_ - p_ < 6 || p_[0] != '\\' || p_[1] != 'u') {
                    return fail("an invalid \\u escape");
                }
                p_ += 2;
                if (!hex4(&lo) || lo < 0xdc00 || lo > 0xdfff) {
                    return fail("an invalid \\u escape");
                }
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            }
            w = putUtf8(w, cp);
            break;
        }
        default:
            return fail("an invalid escape in a string");
        }
    }
    return fail("a string that does not end");
}

bool Parser::number(int64_t* out) {
    bool negative = p_ < end_ && *p_ == '-';
    if (negative) {
        p_++;
    }
    if (p_ == end_ || *p_ < '0' || *p_ > '9') {
        return fail("an invalid number");
    }
    if (*p_ == '0' && end_ - p_ > 1 && p_[1] >= '0' && p_[1] <= '9') {
        return fail("an invalid number");  /* no leading zeros */
    }
    int64_t v = 0;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') {
        v = v * 10 + (*p_++ - '0');
        if (v >= (int64_t(1) << 53)) {
            return fail("a number too large");
        }
    }
    if (p_ < end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E')) {
        return fail("a number that is not whole");
    }
    *out = negative ? -v : v;
    return true;
}

bool Parser::value(Member* m) {
    space();
    if (p_ == end_) {
        return fail("a member without a value");
    }
    if (*p_ == '"') {
        p_++;
        m->kind = Member::Kind::String;
        return string(&m->text);
    }
    if (*p_ == '-' || (*p_ >= '0' && *p_ <= '9')) {
        m->kind = Member::Kind::Number;
        return number(&m->number);
    }
    if (end_ - p_ >= 4 && std::memcmp(p_, "null", 4) == 0) {
        p_ += 4;
        m->kind = Member::Kind::Null;
        return true;
    }
    if (*p_ == '{' || *p_ == '[') {
        return fail("a nested object or an array");
    }
    return fail("a value that is not a whole number, a string or null");
}

bool Parser::object(Object* out, const char** why) {
    out->n = 0;
    bool ok = [&] {
        if (!eat('{')) {
            return fail("not a JSON object");
        }
        if (eat('}')) {
            return true;
        }
        do {
            if (!eat('"')) {
                return fail("a member without a quoted name");
            }
            Member m{};
            if (!string(&m.name)) {
                return false;
            }
            if (!eat(':')) {
                return fail("a member without ':'");
            }
            if (!value(&m)) {
                return false;
            }
            if (out->find(m.name) != nullptr) {
                return fail("a member given twice");
            }
            if (out->n == kMaxMembers) {
                return fail("too many members");
            }
            out->members[out->n++] = m;
        } while (eat(','));
        return eat('}') ? true : fail("an object that does not end");
    }();
    if (ok) {
        space();
        if (p_ != end_) {
            ok = fail("bytes after the object");
        }
    }
    if (!ok) {
        *why = why_;
    }
    return ok;
}

}  // namespace

char* writeString(char* out, std::string_view s) {
    *out++ = '"';
    auto* p = reinterpret_cast<const unsigned char*>(s.data());
    size_t left = s.size();
    while (left > 0) {
        unsigned char c = *p;
        size_t n = 1;
        if (c == '"' || c == '\\') {
            *out++ = '\\';
            *out++ = static_cast<char>(c);
        } else if (c == '\n') {
            out = static_cast<char*>(std::memcpy(out, "\\n", 2)) + 2;
        } else if (c == '\t') {
            out = static_cast<char*>(std::memcpy(out, "\\t", 2)) + 2;
        } else if (c < 0x20 || c == 0x7f) {
            out = escapeByte(out, c);
        } else if (c < 0x80) {
            *out++ = static_cast<char>(c);
        } else if ((n = utf8Length(p, left)) > 0) {
            std::memcpy(out, p, n);
            out += n;
        } else {
            n = 1;
            out = escapeByte(out, c);
        }
        p += n;
        left -= n;
    }
    *out++ = '"';
    return out;
}

const Member* Object::find(std::string_view name) const {
    for (size_t i = 0; i < n; i++) {
        if (members[i].name == name) {
            return &members[i];
        }
    }
    return nullptr;
}

bool parseObject(char* body, size_t len, Object* out, const char** why) {
    return Parser(body, len).object(out, why);
}

}  // namespace rl::json
