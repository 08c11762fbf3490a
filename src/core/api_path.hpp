/* The operator API's paths (SPEC section 8), below its location:
 *
 *   /  /index.html                       the dashboard page
 *   /1                                   the endpoints
 *   /1/zones                             every zone
 *   /1/rules                             every rule (zone, name)
 *   /1/rules/NAME                        one
 *   /1/rules/NAME/top[?n=K]              its top limited keys
 *   /1/rules/NAME/keys/VALUE             a key's state; DELETE: reset
 *   /1/rules/NAME/keys/VALUE/block       POST, DELETE
 *   /1/rules/NAME/keys/VALUE/override    PUT, DELETE
 *   /1/rules/NAME/keys/VALUE/credit      POST: N more units this period
 *   /1/rules/NAME/limit                  PUT, DELETE: its live limit
 *   /1/rules/NAME/trial                  PUT, DELETE: its trial
 *   /1/fleet                             the fleet's instances
 *   /1/fleet/rules                       its rules, summed
 *   /1/fleet/rules/NAME/top[?n=K]        their top keys, merged
 *   /1/audit[?n=K]                       the writes, newest first
 *   /1/rules/NAME/key[/ACTION]?value=VALUE  the same, the value in the
 *                                        query: for values a path
 *                                        segment cannot carry ("." and
 *                                        "..", which clients resolve
 *                                        away even encoded)
 *
 * and `zone=Z` in the query on any rule path, for a name that more than
 * one zone has; `anchor=D` (1 to 28) on a key's paths, the key's billing
 * day for a rule whose anchor= is a variable (SPEC section 12);
 * `key=VALUE` in the query for an empty VALUE in the path (a value with
 * a NUL byte: nginx refuses %00 in a path). Each of these once: one
 * given twice (`?value=a&value=b`) is refused. A value may
 * have any length a request line can carry. Segments are cut at '/'
 * before they are percent-decoded, so a name or a value may hold any
 * byte ("5r%2Fm" is the rule named 5r/m). Pure: no nginx, no
 * allocation. */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace rl::api {

enum class Route : uint8_t {
    Page,
    Endpoints,
    Zones,
    Rules,
    Rule,
    Top,
    Key,
    Block,
    Override,
    Credit,
    Limit,      /* SPEC section 11: live limits, trials, the fleet */
    Trial,
    Fleet,
    FleetRules,
    FleetTop,
    Audit,
};

enum class Method : uint8_t { Get, Head, Post, Put, Delete, Other };

/* An error answer: {"error": {"status", "text", "code"}}. */
struct Error {
    int status;
    const char* code;
    const char* text;
};

inline constexpr size_t kDefaultTop = 10;
inline constexpr size_t kMaxTop = 100;
inline constexpr size_t kDefaultAudit = 50;
inline constexpr size_t kMaxAudit = 1000;
/* The longest rule or zone name (NGX_HTTP_RL_MAX_NAME). */
inline constexpr size_t kMaxName = 120;

struct Request {
    Route route = Route::Page;
    std::string_view name;      /* decoded */
    std::string_view value;     /* decoded: the key value's bytes (an
                                   empty VALUE: the query's key=, for a
                                   value nginx refuses in a path, %00;
                                   the /key paths: its value=) */
    std::string_view zone;      /* ?zone=, decoded; empty: not given */
    size_t top = kDefaultTop;   /* ?n=, at most kMaxTop */
    size_t count = 0;           /* ?n= as the route takes it: top keys
                                   (at most kMaxTop), audit entries (at
                                   most kMaxAudit) */
    bool trial = false;         /* ?trial=1: the trial's top keys */
    int anchor = 0;             /* ?anchor=, 1 to 28; 0: not given */
};

/* Parses `path` (from its first '/', below the location) and `query`
 * (after '?', may be empty), decoding both in place unless `decoded`
 * (nginx decoded them already). False with *err set on an unknown path
 * (404), an invalid percent-encoding, an empty value (400), a bad n= or
 * zone= (400). */
bool parse(char* path, size_t len, char* query, size_t qlen, bool decoded,
           Request* out, Error* err);

/* Whether `m` may be used on `r`, and the Allow header's text. */
bool allows(Route r, Method m);
const char* allowHeader(Route r);

/* A method that changes something in a store (write=on only). */
bool isWrite(Method m);

/* Decodes %XX escapes of s[0..len) in place; returns the new length,
 * or -1 for a '%' not followed by two hex digits. */
long percentDecode(char* s, size_t len);

}  // namespace rl::api
