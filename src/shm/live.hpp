/* Live limits and trials (SPEC section 11): a rule name's limit changed
 * while nginx runs, and a trial of another limit in its place.
 *
 * Both are settings of a zone and rule name. A Redis zone's are the
 * fleet's: written by any instance's operator API into Redis, read by
 * each instance once a second (src/fleet/fleet.cpp); an embedded zone's are
 * this instance's (its operator API writes them here alone). Either way
 * what the request path reads is in shared memory ("rl_live_1": an
 * entry per zone and name, found again by its labels across reloads,
 * as the metrics' are), and each worker keeps in its own memory what it
 * makes of them: the rule's spec at the live limit, a trial's spec and
 * its shadow rule, made again when the entry changes.
 *
 * A live limit N replaces the rule's configured N in every definition
 * of the name (its window, algorithm and key stay; a burst= left to its
 * default follows N); a key value's override still wins over it. N = 0
 * rejects every request of the rule (Retry-After up to a minute: the
 * limit may be lifted). A trial at N decides each request of the rule
 * again, in dry run, in the same script call, on a state of its own:
 * as the rule would at N in its place (src/fleet/trials.hpp). */
#pragma once

#include "ngx.hpp"

#include <string_view>

namespace rl::live {

/* A setting as the API shows it and the fleet writes it. */
struct Setting {
    int64_t limit = -1;         /* -1: none */
    int64_t untilMs = 0;        /* its end, ms of the epoch (Redis'
                                   clock for a fleet's), 0: none */
    int64_t sinceMs = 0;        /* when it was set, likewise */
    std::string_view by;        /* the client address that set it */
    std::string_view reason;
};

inline constexpr size_t kMaxBy = 64;
inline constexpr size_t kMaxReason = 256;

/* A setting's bounds (SPEC section 11), the API's and the fleet's: N
 * from 0 to 1e9; a trial's ttl from a second to a day, a live limit's
 * at most ten years, or none. */
inline constexpr int64_t kMaxLimit = 1000000000;
inline constexpr int64_t kMaxTrialTtlS = 86400;
inline constexpr int64_t kMaxLimitTtlS = 10LL * 366 * 86400;

enum class Kind : uint8_t { Limit = 0, Trial = 1 };

/* The zone's size for the configuration's names. */
size_t tableSize(ngx_http_rl_main_conf_t *rmcf);

/* Each rule's per-worker state, made at configuration (cf->pool); false
 * when out of memory. */
bool prepare(ngx_conf_t *cf, ngx_http_rl_main_conf_t *rmcf);

/* ---------------------------------------------------------------- */
/* the request path                                                  */

/* What a rule's per-worker part (rule->live) starts with: where the
 * table counts its settings (NULL until the zone is made). While it
 * counts none, the request path reads that one number per rule. */
struct Head {
    const volatile ngx_atomic_t *active;
};

inline bool quiet(const ngx_http_rl_rule_t *rule) {
    auto *h = static_cast<const Head *>(rule->live);
    return h == nullptr || h->active == nullptr || *h->active == 0;
}

const ngx_str_t *liveSpecOf(const ngx_http_rl_rule_t *rule, bool dry);
uint64_t liveLimitOf(const ngx_http_rl_rule_t *rule);
uint32_t liveCrc(const ngx_http_rl_rule_t *rule);
ngx_http_rl_rule_t *liveTrialOf(const ngx_http_rl_rule_t *rule);

/* The spec the rule is decided with now: its live limit's, or its own
 * (dry: its dry run's). */
inline const ngx_str_t *specOf(const ngx_http_rl_rule_t *rule, bool dry) {
    if (quiet(rule)) {
        return dry ? &rule->dry_spec : &rule->spec;
    }
    return liveSpecOf(rule, dry);
}

/* The N the rule is decided with now (0 under a live limit of 0). */
inline uint64_t limitOf(const ngx_http_rl_rule_t *rule) {
    return quiet(rule) ? rule->limit : liveLimitOf(rule);
}

/* What the deny cache keys a rejection on besides the state: the rule's
 * configuration and its live limit, so that a changed limit starts
 * afresh. */
inline uint32_t configCrc(const ngx_http_rl_rule_t *rule) {
    return quiet(rule) ? rule->config_crc : liveCrc(rule);
}

/* The trial the rule runs now, if any: its shadow rule (a dry run at
 * the trial's N in the rule's place, on a state of its own, its spec
 * made), else NULL. Never for a concurrency= rule. */
inline ngx_http_rl_rule_t *trialOf(const ngx_http_rl_rule_t *rule) {
    return quiet(rule) ? nullptr : liveTrialOf(rule);
}

/* The shadow's rule, whose trial it runs. */
const ngx_http_rl_rule_t *shadowed(const ngx_http_rl_rule_t *shadow);

/* A trial's decision of a request of that key value: counted (passed
 * or rejected) in the trial's figures, and a rejection in its top
 * keys. */
void trialCount(const ngx_http_rl_rule_t *shadow, bool rejected,
                const ngx_str_t *value);

/* ---------------------------------------------------------------- */
/* the API and the fleet                                             */

/* The setting of a name now (limit -1: none, or ended). */
Setting read(const ngx_http_rl_name_t *name, Kind kind, char *by,
             char *reason);

/* A trial's figures on this instance since it started. */
void trialFigures(const ngx_http_rl_name_t *name, int64_t *passed,
                  int64_t *rejected);

/* Sets (limit >= 0) or clears (limit -1) a setting: endsInMs from now
 * on this host's clock (0: no end); the trial's figures start again
 * when a trial of another start is set. Returns whether anything
 * changed. */
bool write(const ngx_http_rl_name_t *name, Kind kind, const Setting &s,
           int64_t endsInMs);

/* Clears the settings that ended (the fleet's tick, the API's reads):
 * the request path's one number counts only what is set. */
void sweep(ngx_http_rl_main_conf_t *rmcf);

/* The top keys of a name's trial (room for top::kListMax), or 0. */
size_t trialTop(const ngx_http_rl_name_t *name, void *entries);

/* A setting's ttl in ms from its times: 0 for none, -1 for an end
 * that is not after its start. */
int64_t ttlOf(int64_t untilMs, int64_t sinceMs);

/* Whether a live limit or trial of N for ttlMs (0: none) is one the
 * name's rules can take: false with *why (N or the ttl out of bounds, a
 * trial of a concurrency= or calendar rule, a bound one of them cannot
 * compute exactly, no slot at all). The API refuses such a write; the
 * fleet ignores such a setting read from Redis (a rule defined
 * differently elsewhere, a hand-made entry), and a reload one kept in
 * the table (a rule changed since). */
bool settingFits(const ngx_http_rl_name_t *name, Kind kind, int64_t n,
                 int64_t ttlMs, const char **why);

}  // namespace rl::live
