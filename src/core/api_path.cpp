#include "api_path.hpp"

#include <cstring>
#include <iterator>

namespace rl::api {

namespace {

int hexValue(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

bool fail(Error* err, int status, const char* code, const char* text) {
    *err = {status, code, text};
    return false;
}

bool notFound(Error* err) {
    return fail(err, 404, "PathNotFound", "no such path in the API");
}

/* The segments of the path, cut at '/' (each not decoded yet). */
struct Segments {
    static constexpr size_t kMax = 7;
    char* at[kMax];
    size_t len[kMax];
    size_t n = 0;
    bool tooMany = false;
};

Segments split(char* path, size_t len) {
    Segments s;
    size_t i = 1; /* after the leading '/' */
    while (i <= len) {
        size_t j = i;
        while (j < len && path[j] != '/') {
            j++;
        }
        if (s.n == Segments::kMax) {
            s.tooMany = true;
            break;
        }
        s.at[s.n] = path + i;
        s.len[s.n] = j - i;
        s.n++;
        i = j + 1;
    }
    return s;
}

bool is(const Segments& s, size_t i, const char* word) {
    size_t n = std::strlen(word);
    return s.len[i] == n && std::memcmp(s.at[i], word, n) == 0;
}

/* Decodes segment i (in place, unless nginx did); false on a bad
 * escape. */
bool segment(Segments& s, size_t i, bool decoded, std::string_view* out) {
    long n = decoded ? static_cast<long>(s.len[i])
                     : percentDecode(s.at[i], s.len[i]);
    if (n < 0) {
        return false;
    }
    *out = {s.at[i], static_cast<size_t>(n)};
    return true;
}

/* What the query says of the key value: key= (an empty VALUE in the
 * path) and value= (the /key paths). */
struct QueryValues {
    std::string_view key;
    std::string_view value;
    bool hasValue = false;
};

/* The query's parameters the API reads, each taken once: a second
 * (?value=a&value=b) is refused, not read over the first. */
constexpr std::string_view kParams[] = {"n",     "trial",  "key",
                                        "value", "anchor", "zone"};
constexpr const char* kTwice[] = {
    "n= is given twice", "trial= is given twice", "key= is given twice",
    "value= is given twice", "anchor= is given twice",
    "zone= is given twice"};

bool parseQuery(char* q, size_t len, bool decoded, Request* out,
                QueryValues* values, Error* err) {
    unsigned seen = 0;
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && q[j] != '&') {
            j++;
        }
        char* item = q + i;
        size_t itemLen = j - i;
        i = j + 1;
        char* eq = static_cast<char*>(std::memchr(item, '=', itemLen));
        if (eq == nullptr) {
            continue;
        }
        std::string_view key(item, static_cast<size_t>(eq - item));
        for (size_t k = 0; k < std::size(kParams); k++) {
            if (key == kParams[k] && (seen & (1u << k)) != 0) {
                return fail(err, 400, "ArgumentInvalid", kTwice[k]);
            }
            seen |= key == kParams[k] ? 1u << k : 0;
        }
        char* v = eq + 1;
        size_t vlen = itemLen - key.size() - 1;
        long n = decoded ? static_cast<long>(vlen) : percentDecode(v, vlen);
        if (key == "n") {
            size_t count = 0;
            for (long k = 0; k < n && count <= kMaxAudit; k++) {
                count = v[k] >= '0' && v[k] <= '9'
                            ? count * 10 + static_cast<size_t>(v[k] - '0')
                            : 0;
                if (count == 0) {
                    break;  /* not a digit, or a leading zero */
                }
            }
            if (count == 0) {
                return fail(err, 400, "ArgumentInvalid",
                            "n= takes a whole number from 1 (at most 100 "
                            "keys, 1000 audit entries are listed)");
            }
            out->count = count < kMaxAudit ? count : kMaxAudit;
        } else if (key == "trial") {
            out->trial = n == 1 && v[0] == '1';
        } else if (key == "key" || key == "value") {
            if (n < 0) {
                return fail(err, 400, "KeyInvalid",
                            key == "key" ? "an invalid percent-encoding in "
                                           "key="
                                         : "an invalid percent-encoding in "
                                           "value=");
            }
            std::string_view got(v, static_cast<size_t>(n));
            if (key == "key") {
                values->key = got;
            } else {
                values->value = got;
                values->hasValue = true;
            }
        } else if (key == "anchor") {
            int day = 0;
            for (long k = 0; k < n && day <= 28; k++) {
                day = v[k] >= '0' && v[k] <= '9' ? day * 10 + (v[k] - '0')
                                                 : 99;
            }
            if (n <= 0 || day < 1 || day > 28) {
                return fail(err, 400, "ArgumentInvalid",
                            "anchor= takes a day of the month from 1 to 28");
            }
            out->anchor = day;
        } else if (key == "zone") {
            if (n <= 0 || static_cast<size_t>(n) > kMaxName) {
                return fail(err, 400, "ArgumentInvalid",
                            "zone= takes a zone's name");
            }
            out->zone = {v, static_cast<size_t>(n)};
        }
        /* other arguments (a page's cache buster) are no concern */
    }
    return true;
}

}  // namespace

long percentDecode(char* s, size_t len) {
    size_t w = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] != '%') {
            s[w++] = s[i];
            continue;
        }
        if (i + 2 >= len) {
            return -1;
        }
        int hi = hexValue(s[i + 1]);
        int lo = hexValue(s[i + 2]);
        if (hi < 0 || lo < 0) {
            return -1;
        }
        s[w++] = static_cast<char>(hi << 4 | lo);
        i += 2;
    }
    return static_cast<long>(w);
}

bool parse(char* path, size_t len, char* query, size_t qlen, bool decoded,
           Request* out, Error* err) {
    *out = Request{};
    if (len == 0 || path[0] != '/') {
        return notFound(err);
    }
    QueryValues values;
    if (!parseQuery(query, qlen, decoded, out, &values, err)) {
        return false;
    }
    if (len == 1 || (len == 11 && std::memcmp(path, "/index.html", 11) == 0)) {
        out->route = Route::Page;
        return true;
    }
    Segments s = split(path, len);
    if (s.tooMany || !is(s, 0, "1")) {
        return notFound(err);
    }
    if (s.n == 1 || (s.n == 2 && s.len[1] == 0)) {
        out->route = Route::Endpoints;
        return true;
    }
    if (s.n == 2 && is(s, 1, "zones")) {
        out->route = Route::Zones;
        return true;
    }
    if (s.n == 2 && is(s, 1, "audit")) {
        out->route = Route::Audit;
        out->count = out->count > 0 ? out->count : kDefaultAudit;
        return true;
    }
    /* /1/fleet, /1/fleet/rules[/NAME/top]: the rules' paths below it */
    size_t at = 1;
    bool fleet = is(s, 1, "fleet");
    if (fleet) {
        if (s.n == 2) {
            out->route = Route::Fleet;
            return true;
        }
        at = 2;
    }
    out->count = out->count > 0 ? (out->count < kMaxTop ? out->count
                                                         : kMaxTop)
                                : kDefaultTop;
    out->top = out->count;
    if (!is(s, at, "rules")) {
        return notFound(err);
    }
    if (s.n == at + 1) {
        out->route = fleet ? Route::FleetRules : Route::Rules;
        return true;
    }
    if (!segment(s, at + 1, decoded, &out->name)) {
        return fail(err, 400, "ArgumentInvalid",
                    "an invalid percent-encoding in the rule's name");
    }
    if (out->name.empty() || out->name.size() > kMaxName) {
        return fail(err, 404, "RuleNotFound", "no rule of that name");
    }
    if (fleet) {
        if (s.n == 5 && is(s, 4, "top")) {
            out->route = Route::FleetTop;
            return true;
        }
        return notFound(err);
    }
    if (s.n == 3) {
        out->route = Route::Rule;
        return true;
    }
    if (s.n == 4 && is(s, 3, "top")) {
        out->route = Route::Top;
        return true;
    }
    if (s.n == 4 && is(s, 3, "limit")) {
        out->route = Route::Limit;
        return true;
    }
    if (s.n == 4 && is(s, 3, "trial")) {
        out->route = Route::Trial;
        return true;
    }
    /* the key value: /keys/VALUE[/ACTION], or /key[/ACTION]?value= for a
     * value a path segment cannot carry ("." and "..", which clients
     * resolve away, encoded or not) */
    if (s.n < 4) {
        return notFound(err);
    }
    bool inQuery = is(s, 3, "key");
    if (!inQuery && !is(s, 3, "keys")) {
        return notFound(err);
    }
    size_t action = inQuery ? 4 : 5;
    if (s.n == action) {
        out->route = Route::Key;
    } else if (s.n == action + 1 && is(s, action, "block")) {
        out->route = Route::Block;
    } else if (s.n == action + 1 && is(s, action, "override")) {
        out->route = Route::Override;
    } else if (s.n == action + 1 && is(s, action, "credit")) {
        out->route = Route::Credit;
    } else {
        return notFound(err);
    }
    if (inQuery) {
        if (!values.hasValue) {
            return fail(err, 400, "KeyInvalid",
                        "the key value goes in the query: ?value=");
        }
        out->value = values.value;
    } else if (s.len[4] > 0) {
        if (!segment(s, 4, decoded, &out->value)) {
            return fail(err, 400, "KeyInvalid",
                        "an invalid percent-encoding in the key value");
        }
    } else {
        /* an empty VALUE: the value is key= of the query (nginx refuses
         * a path with %00, which a binary key value may need) */
        out->value = values.key;
    }
    if (out->value.empty()) {
        return fail(err, 400, "KeyInvalid",
                    "an empty key value: a rule never limits one");
    }
    return true;
}

bool allows(Route r, Method m) {
    switch (r) {
    case Route::Key:
        return m == Method::Get || m == Method::Head || m == Method::Delete;
    case Route::Block:
        return m == Method::Post || m == Method::Delete;
    case Route::Override:
    case Route::Limit:
    case Route::Trial:
        return m == Method::Put || m == Method::Delete;
    case Route::Credit:
        return m == Method::Post;
    default:
        return m == Method::Get || m == Method::Head;
    }
}

const char* allowHeader(Route r) {
    switch (r) {
    case Route::Key:
        return "GET, HEAD, DELETE";
    case Route::Block:
        return "POST, DELETE";
    case Route::Override:
    case Route::Limit:
    case Route::Trial:
        return "PUT, DELETE";
    case Route::Credit:
        return "POST";
    default:
        return "GET, HEAD";
    }
}

bool isWrite(Method m) {
    return m == Method::Post || m == Method::Put || m == Method::Delete;
}

}  // namespace rl::api
