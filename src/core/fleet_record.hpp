/* An instance's record in the fleet (SPEC section 11): what it publishes
 * of a zone every interval, and its identity. Text, a line per item,
 * fields apart by a tab; a text field percent-escaped (bytes below '!',
 * '%', and above '~'), so a name or key value of any byte stays one
 * field:
 *
 *   rl-fleet 1
 *   zone ZONE UP
 *   rule NAME DIGEST ALGORITHM LIMIT WINDOW_US BURST COST DRY HOLD_US
 *        CHARGE KEY PASSED REJECTED DRY_RUN DELAYED ERROR U0 .. U6
 *   calendar NAME PERIOD TZ ANCHOR  (a calendar rule's, after its rule
 *                                    line; ANCHOR as written, or empty)
 *   auto NAME P0 R0 P1 R1 P2 R2 P3 R3  (a concurrency=auto rule's, after
 *                                    its rule line: passed and rejected
 *                                    by priority level)
 *   trial NAME LIMIT UNTIL_MS SINCE_MS PASSED REJECTED
 *   top NAME REJECTED KEY      (its top limited keys, most first)
 *   ttop NAME REJECTED KEY     (its trial's)
 *   cut RULES TOPS             (what was left out to stay in the bound)
 *
 * (COST: a number, or 0 for a variable; U0..U6 the usage histogram's
 * cumulative counts, as /1/rules has them.) The identity, kept apart so
 * that an instance gone is still named: one line,
 *
 *   ID NAME VERSION NGINX STARTED_MS WORKERS INTERVAL_MS
 *
 * Pure: no nginx. Reading takes any bytes (another instance's record,
 * or anything a key held) and never reads past them. */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace rl::fleet {

inline constexpr std::string_view kRecordHead = "rl-fleet 1\n";
/* A record's bound (SPEC: "say 256 KB"): rules and top keys past it are
 * left out, and counted on its cut line. */
inline constexpr size_t kRecordMax = 256 * 1024;
/* Top limited keys a rule's record carries (SPEC: at least 20). */
inline constexpr size_t kTopPerRule = 20;
inline constexpr size_t kMaxFields = 24;

/* The most bytes escape() writes for `len` bytes. */
constexpr size_t escapedMax(size_t len) { return 3 * len; }

/* Writes `text` escaped at out; returns the end. */
char* escape(char* out, std::string_view text);

/* Unescapes in place (a field read), as the API's paths are
 * (api::percentDecode); returns its length, or -1 for a bad escape. */
long unescape(char* text, size_t len);

/* One line of a record, cut into fields (views into the text). */
struct Line {
    std::string_view fields[kMaxFields];
    size_t n = 0;
};

/* The next line of *text (which moves past it), cut at tabs; false at
 * the end. A line of more fields keeps the first kMaxFields. */
bool nextLine(std::string_view* text, Line* out);

/* A whole number field (0 to 2^53), or false. */
bool number(std::string_view field, int64_t* out);

/* a + b, held at the ends of int64_t rather than wrapped: the fleet's
 * sums of counters read from records (each up to 2^53; 1,100 records
 * of it summed past 2^63). */
int64_t saturatingAdd(int64_t a, int64_t b);

/* A short digest of a definition's text: 12 hex digits of its SHA-1. */
void digest(std::string_view text, char out[12]);

}  // namespace rl::fleet
