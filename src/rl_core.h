/*
 * The C ABI of the pure C++ core (src/core): what the nginx shim calls.
 * No nginx type crosses it; nothing here throws.
 */

#ifndef RL_CORE_H_INCLUDED_
#define RL_CORE_H_INCLUDED_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define RL_NOEXCEPT  noexcept
extern "C" {
#else
#define RL_NOEXCEPT
#endif

#define RL_RULE_ID_LEN      16
#define RL_SHA_LEN          40
#define RL_MAX_RULES        64

typedef struct {
    int64_t   remaining;
    int64_t   reset_ms;
    int64_t   retry_ms;
    int64_t   delay_ms;
    int64_t   retry_us;     /* retry_ms before rounding up */
    int64_t   limit;        /* a key value's override of N; 0: none */
} rl_outcome_t;

typedef enum {
    RL_REPLY_OK = 0,
    RL_REPLY_NOSCRIPT,
    RL_REPLY_ERROR,
    RL_REPLY_MALFORMED
} rl_reply_status_e;

/* "Nr/s", "Nr/m", "Nr/h", "Nr/d", "Nr/TIME": 0 on success. */
int rl_parse_rate(const char *text, size_t len, uint64_t *limit,
    uint64_t *window_us) RL_NOEXCEPT;
/* A calendar rate, "Nr/h", "Nr/d", "Nr/w", "Nr/month" or "Nr/y": 0 on
 * success, *per the offset of its unit in text. */
int rl_parse_calendar_rate(const char *text, size_t len, uint64_t *limit,
    size_t *per) RL_NOEXCEPT;

/* Writes RL_RULE_ID_LEN hex digits naming a rule's state. */
int rl_rule_id(const char *zone, size_t zone_len, const char *name,
    size_t name_len, const char *algorithm, size_t algorithm_len,
    uint64_t window_us, const char *key, size_t key_len, char *out) RL_NOEXCEPT;

/* A state key (src/core/state_key.hpp) at out, returns its end: at most
 * prefix_len + RL_STATE_KEY_MAX bytes. */
#define RL_STATE_KEY_MAX    83

char *rl_state_key_write(char *out, const char *prefix, size_t prefix_len,
    const char *value, size_t len, const char *rule_id) RL_NOEXCEPT;

/* Algorithms: see src/core/algorithm.hpp. -1: unknown name (a rate's:
 * never "concurrency", whose rules say concurrency=N). */
#define RL_ALGORITHM_CONCURRENCY    6
int rl_algorithm_from_name(const char *name, size_t len) RL_NOEXCEPT;
const char *rl_algorithm_name(int algorithm, size_t *len) RL_NOEXCEPT;
int rl_algorithm_takes_burst(int algorithm) RL_NOEXCEPT;
int rl_algorithm_takes_delay(int algorithm) RL_NOEXCEPT;
uint64_t rl_algorithm_default_burst(int algorithm, uint64_t limit)
    RL_NOEXCEPT;
int rl_algorithm_exact(int algorithm, uint64_t limit, uint64_t window_us,
    uint64_t burst, uint64_t delay, uint64_t max_cost) RL_NOEXCEPT;
uint64_t rl_algorithm_capacity(int algorithm, uint64_t limit,
    uint64_t burst) RL_NOEXCEPT;
/* What a rule's reply may ask of a request of this cost, in us: the
 * longest delay (0: none) and the longest retry (src/core/reply.hpp). */
typedef struct {
    int64_t   max_delay_us;
    int64_t   max_retry_us;
} rl_reply_bounds_t;

void rl_reply_bounds(int algorithm, uint64_t limit, uint64_t window_us,
    uint64_t burst, uint64_t delay, uint64_t cost, rl_reply_bounds_t *out)
    RL_NOEXCEPT;

const char *rl_script_text(size_t *len) RL_NOEXCEPT;
const char *rl_script_sha(void) RL_NOEXCEPT;

/* A rule's spec for the script (src/core/script.hpp writeSpec):
 * rl_spec_len(algorithm, name_len) bytes, written by rl_spec_write,
 * which returns the end. dry: 1 a dry run, 2 a trial's (a dry run in
 * its rule's place, SPEC section 11: spec flag 8); burst_follows: burst
 * is the limit's default (a key value's override of the limit changes
 * it too); kind: what the rule is besides (RL_SPEC_*). */
#define RL_SPEC_CALENDAR    1   /* its records carry bounds (SPEC 12) */
#define RL_SPEC_ADAPTIVE    2   /* concurrency=auto (SPEC 13) */
size_t rl_spec_len(int algorithm, size_t name_len) RL_NOEXCEPT;
unsigned char *rl_spec_write(unsigned char *out, int algorithm,
    const char *name, size_t name_len, uint64_t limit, uint64_t window_us,
    uint64_t burst, uint64_t delay, int dry, int burst_follows,
    int kind) RL_NOEXCEPT;

/* Decodes one request's part of an EVALSHA reply (a hiredis
 * redisReply *), its rules of these costs, dry runs or not, within these
 * bounds (NULL: none; src/core/reply.hpp). */
rl_reply_status_e rl_decode_reply(const void *reply, size_t rules,
    const uint64_t *costs, const unsigned char *dry,
    const rl_reply_bounds_t *bounds, int *allowed, rl_outcome_t *out)
    RL_NOEXCEPT;

/* A printable form of a key value for logs: bytes outside 0x20-0x7e,
 * '"' and '\' as \xHH, cut after `cap` bytes of output with "...".
 * Writes at most cap + 3 bytes; returns the length written. */
size_t rl_printable(char *out, size_t cap, const char *value,
    size_t len) RL_NOEXCEPT;

size_t rl_binding_rule(const rl_outcome_t *o, size_t n, int allowed) RL_NOEXCEPT;
int64_t rl_seconds_ceil(int64_t ms) RL_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* RL_CORE_H_INCLUDED_ */
