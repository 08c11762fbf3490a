/* The adaptive limits' table (concurrency=auto, SPEC section 13): an
 * entry per auto rule and key value, in shared memory ("rl_adaptive_1",
 * made when a rule is auto), that every worker of the instance adds its
 * requests' samples to, and that worker 0 empties once an interval for
 * the law (src/fleet/adaptive.hpp): in Redis for a Redis zone (the
 * fleet's N comes back, with the fleet's latency and in-flight and the
 * history), here for an embedded zone. The operator API and the metrics
 * read it too.
 *
 * An entry is found by the rule's state's id and the key value as is
 * (its state key's digest form past 64 bytes), and keeps its state key
 * without the prefix ("{VALUE}:ID", src/core/state_key.hpp) for Redis;
 * in least recently used order, a full zone forgets the coldest (a
 * Redis zone's N lives on in Redis; an embedded zone's starts again
 * from min). The slab pool's mutex guards it. A request takes it once,
 * as it ends. */
#pragma once

#include "ngx.hpp"

#include <cstdint>

#include "core/adaptive.hpp"
#include "core/algorithm.hpp"

namespace rl::adaptive {

/* What an auto rule keeps (rule->adaptive), made at configuration
 * (src/http/adaptive_conf.cpp); pinned* are each worker's own (its copy
 * of the configuration). */
struct Rule {
    Params params;
    ngx_http_complex_value_t *priority;     /* NULL: every request 0 */
    ngx_str_t text[4];                      /* min= max= target=
                                               priority= as written */
    ngx_str_t specs[2][4];                  /* [dry][level] */
    uint64_t pinnedN;                       /* the live limit the
                                               pinned specs are at */
    ngx_str_t pinned[2][4];
    /* the entry this worker told last, to tell it again without a
     * look-up (its serial says it is still that entry) */
    void *told;
    uint64_t toldSerial;
    size_t toldLen;
    u_char toldValue[64];
};

inline Rule *ruleOf(const ngx_http_rl_rule_t *rule) {
    return static_cast<Rule *>(rule->adaptive);
}

/* A point of the history: an interval's end (s of the epoch), N, the
 * p90 (us) and the in-flight. */
struct Point {
    uint32_t t;
    uint32_t n;
    uint32_t p90Us;
    uint32_t inflight;
};

inline constexpr size_t kHistory = 600;     /* 10 minutes of intervals */

/* An entry's lookup key: the id, then the value (or its state key) */
inline constexpr size_t kMaxKey = RL_RULE_ID_LEN + RL_STATE_KEY_MAX;

/* What the API and the metrics read of an entry. */
struct View {
    char key[RL_STATE_KEY_MAX];     /* "{VALUE}:ID" */
    size_t keyLen;
    uint32_t zone;
    uint64_t limit;
    double p50Us, p90Us, baselineUs;
    int64_t inflight;
    int64_t changedMs;
    int64_t lastMs;                 /* its last request */
    int64_t recent;                 /* samples of its last interval */
    size_t npoints;
    Point points[kHistory];         /* oldest first */
};

/* The zone's size for the configuration's auto rules (0: none). */
size_t tableSize(ngx_http_rl_main_conf_t *rmcf);

/* What a request of the rule and key value tells, as it ends: the N it
 * was decided with, whether it reached the limit (refused, or took the
 * last slot of its level), and if it is a sample (admitted, logged) its
 * latency and whether the upstream was overloaded. */
struct Told {
    uint64_t limit;
    bool reached;
    bool sampled;
    int64_t latencyUs;
    bool overloaded;
};
void tell(ngx_http_rl_main_conf_t *rmcf, const ngx_http_rl_rule_t *rule,
          const ngx_str_t *value, const Told &told);

/* An auto rule i of a request decided in shared memory (an embedded
 * zone, failure=local): its parameters at this instance's N (or the
 * live limit that pins it) and the request's level. */
void embedded(rl::Params *p, const ngx_http_rl_ctx_t *ctx, ngx_uint_t i);
/* The same for a key value and level (a read of its state: level 0) */
void embeddedAt(rl::Params *p, ngx_http_rl_main_conf_t *rmcf,
                const ngx_http_rl_rule_t *rule, const ngx_str_t *value,
                int level);

/* An interval's result for an entry: N, what the law read, the
 * in-flight and the points to add (after the last it has). */
struct Result {
    State state;
    double p50Us, p90Us;
    int64_t inflight;
    int64_t changedMs;
    const Point *points;
    size_t npoints;
};

/* For worker 0's turns: each entry's samples since they were last
 * taken, with its name, zone, the law's state and what it shows now;
 * f(taken, result) says what becomes of them: kLeave (left for a later
 * turn), kTaken (the entry's start again at none: a Redis zone's, sent,
 * apply() follows the reply) or kMoved (taken, and result applied: an
 * embedded zone's law). Under the table's lock. Entries idle for
 * longer than the history are forgotten. */
enum Fate { kLeave = 0, kTaken = 1, kMoved = 2 };
struct Taken {
    char key[kMaxKey];              /* its lookup key */
    size_t keyLen;
    char name[RL_STATE_KEY_MAX];    /* "{VALUE}:ID" */
    size_t nameLen;
    uint32_t zone;
    Samples samples;
    State state;
    double p50Us, p90Us;
    int64_t changedMs;
    uint32_t lastPoint;     /* the newest point's time (s), 0: none */
};
template <typename F> void takeAll(ngx_http_rl_main_conf_t *rmcf, F f);
void takeAllWith(ngx_http_rl_main_conf_t *rmcf,
                 Fate (*f)(Taken *t, Result *r, void *data), void *data);

void apply(ngx_http_rl_main_conf_t *rmcf, const char *key, size_t keyLen,
           const Result &r);

/* The entry of the rule's (by its state's id) busiest key value: the
 * most samples in its last interval, then the latest request; false if
 * none. */
bool busiest(ngx_http_rl_main_conf_t *rmcf, const char *ruleId,
             View *out);

template <typename F>
void takeAll(ngx_http_rl_main_conf_t *rmcf, F f) {
    takeAllWith(rmcf, [](Taken *t, Result *r, void *data) {
        return (*static_cast<F *>(data))(t, r);
    }, &f);
}

}  // namespace rl::adaptive

