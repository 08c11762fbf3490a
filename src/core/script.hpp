/* The Redis script (lua/, embedded at build time) and the arguments of
 * one EVALSHA call deciding the rules of several requests of one zone
 * (lua/rl.lua has the whole contract):
 *
 *   EVALSHA sha 2k key_1..key_k blk_1..blk_k head spec_1..spec_s [refund]
 *
 * or, a Cluster node's call across slots (crossSlotScriptSha(), no key
 * declared, the map of the keys' slots last: a byte a key, 1 where a
 * slot's keys start):
 *
 *   EVALSHA sha 0 key_1..key_k blk_1..blk_k head specs [refund] map
 *
 * - key_i: the call's state keys, each once; blk_i: key_i's block key
 *   PREFIX{VALUE} (state_key.hpp blockKeyLength: its first bytes), where
 *   a manual block or an override of its key value lives. A decision
 *   reads every key and block key of the call with one MGET.
 * - head: little-endian doubles (putDouble), for each request in order
 *   its rule count n and time t (requestHead), then for each of its
 *   rules the 1-based indexes of its key and spec and its cost
 *   (ruleRecord): requestBytes(n) bytes, and kBoundsBytes more for each
 *   calendar rule, whose record its period's bounds follow (boundsRecord).
 *   t <= 0: Redis' TIME plus t (the
 *   request waited -t us in nginx); t > 0: that time, in us (a refund
 *   sends its decision's; tests). A request asking for a lease of k
 *   units (SPEC section 6) sends n + 128 k for n. A concurrency rule
 *   (SPEC section 9) costs 1, and its record carries the request's slot
 *   in place of its cost (slotRecord).
 * - spec_j: a rule's constants, made once at configuration (writeSpec):
 *   limit, window in us, burst, delay, flags (1: a dry run; 2: burst is
 *   the limit's default, and follows a key value's override of the
 *   limit; 4: a calendar rule, SPEC section 12: its records carry their
 *   period's bounds; 8: a trial, SPEC section 11, a dry run too: its
 *   records carry the place of the rule it stands in for, placeRecord;
 *   16: concurrency=auto, SPEC section 13: N is the fleet's, read in
 *   Redis, limit is its min and burst its max), the length of the
 *   algorithm's name, packed like the head,
 *   then the algorithm's name and the rule's (what overrides name; a
 *   length rather than a separator: Redis finds no separator on every
 *   call). Burst is the effective one
 *   (token_bucket: capacity, default N; leaky_bucket, gcra: excess
 *   tolerated, default 0; others 0); delay for leaky_bucket and gcra
 *   (the excess passed at once; nodelay: delay = burst); for a
 *   concurrency rule its priority level (0 to 3, SPEC section 13: a
 *   request of level p is admitted while the slots held are below N
 *   times its share), 0 for others.
 * - "refund" last: give back what each request's decision counted
 *   (another zone rejected it), and release its slots (it ended);
 *   "renew": its slots expire a hold later (it still runs); "charge":
 *   each rule's record counts its cost more, or gives -cost back
 *   (chargeRecord; SPEC section 10); "credit": each rule's usage goes
 *   down by its record's cost (the operator API's credit, SPEC 12).
 *
 * Numbers travel packed and specs once per call: Redis spends about as
 * much on each argument as on a short command, and as much again on
 * parsing a decimal number in Lua. */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace rl {

std::string_view scriptText();

/* 40 lowercase hex digits, computed once. */
std::string_view scriptSha();

/* The same script with the shebang '#!lua flags=allow-cross-slot-keys'
 * (another text, another SHA): on a Redis Cluster node that takes it
 * (Redis 7.0 and later, Valkey), one call may touch keys of several of
 * the node's slots, which lua/rl.lua's calls across slots do (no key
 * declared: Redis refuses declared keys of several slots whatever the
 * flags). A server that knows no shebang refuses the text: its calls
 * stay one slot each, with scriptText(). The flags change nothing else
 * the script does: it writes (no no-writes flag), so a node over its
 * maxmemory refuses the whole call with OOM before it runs (where the
 * script without flags fails at its first write), and it touches only
 * keys it is given. */
std::string_view crossSlotScriptText();
std::string_view crossSlotScriptSha();

/* The operator API's script (lua/api.lua), sent with EVAL. */
std::string_view apiScriptText();

/* The fleet's script (lua/fleet.lua: live limits, trials, the audit,
 * the instances' records), sent with EVAL. */
std::string_view fleetScriptText();

/* concurrency=auto's law for a fleet (lua/adaptive.lua), sent with
 * EVALSHA four times an interval per auto rule and key value (EVAL
 * after Redis said NOSCRIPT). */
std::string_view adaptiveScriptText();
std::string_view adaptiveScriptSha();

inline constexpr size_t kMaxRulesPerCall = 64;

/* 8 bytes, the little-endian IEEE double of v; returns p + 8. */
unsigned char* putDouble(unsigned char* p, double v);

inline constexpr size_t kSpecNumbers = 6;

constexpr size_t specBytes(std::string_view algorithm,
                           std::string_view rule) {
    return 8 * kSpecNumbers + algorithm.size() + rule.size();
}

/* Writes specBytes(algorithm, rule) bytes at p; returns the end. */
unsigned char* writeSpec(unsigned char* p, std::string_view algorithm,
                         std::string_view rule, uint64_t limit,
                         uint64_t windowUs, uint64_t burst, uint64_t delay,
                         bool dry, bool burstFollows, bool calendar = false,
                         bool trial = false, bool adaptive = false);

/* A request of `rules` rules in the head. */
constexpr size_t requestBytes(size_t rules) { return 16 + 24 * rules; }

/* The lease a request asks for: at most kMaxLeaseAsk units (its n
 * stays a whole double). */
inline constexpr uint64_t kMaxLeaseAsk = uint64_t(1) << 40;

unsigned char* requestHead(unsigned char* p, size_t rules, int64_t t,
                           uint64_t ask = 0);

/* key and spec: 1-based indexes into the call's keys and specs */
unsigned char* ruleRecord(unsigned char* p, size_t key, size_t spec,
                          uint64_t cost);

/* The probe of a server that refused calls (OOM, READONLY, NOPERM...,
 * src/core/reply_error.hpp): one request of cost 1 of a fixed_window
 * rule of 10^6 a second named "probe" on a key of its own,
 * PREFIX{~probeN}:ffffffffffffffff (a client's key value never gives a
 * hash tag of '~' and other than 40 hex digits: no client's state). It
 * writes, as every admitted request does (SET ... PX 1000): a server
 * that refuses writes, or the script's command, refuses it too, where a
 * PING would pass. */
inline constexpr size_t kProbeKeyExtra = 32;

/* Writes the probe's key for `prefix` at out (at most prefix.size() +
 * kProbeKeyExtra bytes), N chosen so that it lands on a cluster's
 * `slot` (-1: no cluster, no N); returns its length. */
size_t probeKey(char* out, std::string_view prefix, int slot);

/* Its head (one request at Redis' time, key 1, spec 1, cost 1) and its
 * spec. */
std::string_view probeHead();
std::string_view probeSpec();
/* A concurrency rule's record: its cost is 1, and the 8 bytes of the
 * cost name the request's slot (little-endian: its worker, a counter),
 * the member the rule's key holds for it; slot 0 names none: a cost of
 * 0, a read (ruleRecord(..., 0) writes the same bytes). */
unsigned char* slotRecord(unsigned char* p, size_t key, size_t spec,
                          uint64_t slot);

/* A charge's record: units more in the rule, or -units given back. */
unsigned char* chargeRecord(unsigned char* p, size_t key, size_t spec,
                            int64_t units);

/* A calendar rule's record is followed by its period's bounds (in us,
 * src/core/calendar.hpp Bounds): the start and end of the period
 * holding the time they were made at, and the next period's end. The
 * script picks its request's period with them, on Redis' clock. */
inline constexpr size_t kBoundsBytes = 24;
unsigned char* boundsRecord(unsigned char* p, const int64_t* bounds);

/* A trial's record (spec flag 8, SPEC section 11) is followed by the
 * 1-based index, among its request's records, of the rule whose place
 * it takes. */
inline constexpr size_t kPlaceBytes = 8;
unsigned char* placeRecord(unsigned char* p, size_t place);

/* What the module's own calls end with (a decision ends with a spec). */
enum class CallKind : uint8_t { Decide, Refund, Renew, Charge, Credit };
std::string_view callWord(CallKind kind);

}  // namespace rl
