/* JSON for the operator API (SPEC section 8): strings written as JSON
 * wants them, and the request bodies it takes, flat objects of a few
 * members (`{"ttl": 600, "reason": "abuse"}`), read strictly: anything
 * else is refused, never guessed. No allocation: the caller gives the
 * room, a string never grows when it is decoded. */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace rl::json {

/* The most bytes writeString() writes for `len` bytes of text, quotes
 * included (a control byte is \u00XX: 6 bytes). */
constexpr size_t stringMax(size_t len) { return 6 * len + 2; }

/* `s` as a JSON string, in quotes: '"', '\' and control bytes escaped,
 * valid UTF-8 kept, any other byte as \u00XX (Latin-1: never a
 * document that is not JSON). Returns the end. */
char* writeString(char* out, std::string_view s);

/* A member of a body: its name, and a whole number, a string or null. */
struct Member {
    enum class Kind : uint8_t { Number, String, Null };
    std::string_view name;
    Kind kind;
    int64_t number;         /* Kind::Number: -2^53 < number < 2^53 */
    std::string_view text;  /* Kind::String: decoded, UTF-8 */
};

inline constexpr size_t kMaxMembers = 8;

struct Object {
    Member members[kMaxMembers];
    size_t n = 0;

    const Member* find(std::string_view name) const;
};

/* Parses `body`, which it decodes in place (its strings' escapes), as
 * one object of at most kMaxMembers members, each a whole number, a
 * string or null, names unique, white space around tokens only. False
 * with *why (a fixed text) on anything else: nested values, arrays,
 * fractions or exponents, numbers beyond 2^53, invalid escapes or
 * UTF-8, bytes after the object. */
bool parseObject(char* body, size_t len, Object* out, const char** why);

}  // namespace rl::json
