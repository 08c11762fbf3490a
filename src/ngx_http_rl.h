/*
 * ngx_http_rl_module: types shared by the C shim and the C++ parts that
 * meet nginx (redis/link.cpp, request.cpp).
 */

#ifndef NGX_HTTP_RL_H_INCLUDED_
#define NGX_HTTP_RL_H_INCLUDED_

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "rl_core.h"


#define NGX_HTTP_RL_FAILURE_OPEN        0
#define NGX_HTTP_RL_FAILURE_CLOSED      1
#define NGX_HTTP_RL_FAILURE_LOCAL       2   /* the zone's own shm store */

/* $rl_status */
#define NGX_HTTP_RL_STATUS_NONE         0
#define NGX_HTTP_RL_STATUS_PASSED       1
#define NGX_HTTP_RL_STATUS_REJECTED     2
#define NGX_HTTP_RL_STATUS_ERROR        3
#define NGX_HTTP_RL_STATUS_DELAYED      4
#define NGX_HTTP_RL_STATUS_DRY_RUN      5   /* REJECTED_DRY_RUN */

/* rl_api */
#define NGX_HTTP_RL_API_OFF             0
#define NGX_HTTP_RL_API_READ            1
#define NGX_HTTP_RL_API_WRITE           2   /* write=on */

/* rl_headers */
#define NGX_HTTP_RL_HEADERS_OFF         0
#define NGX_HTTP_RL_HEADERS_ON          1
#define NGX_HTTP_RL_HEADERS_DRAFT       2

/* rl_requests_total outcomes, per rule */
#define NGX_HTTP_RL_PASSED              0
#define NGX_HTTP_RL_REJECTED            1
#define NGX_HTTP_RL_REJECTED_DRY_RUN    2
#define NGX_HTTP_RL_DELAYED             3
#define NGX_HTTP_RL_ERROR               4
#define NGX_HTTP_RL_OUTCOMES            5

#define NGX_HTTP_RL_LATENCY_BUCKETS     10
/* rl_usage_ratio: le 0.1 0.25 0.5 0.75 0.9 1 +Inf (src/core/usage.hpp) */
#define NGX_HTTP_RL_USAGE_BUCKETS       7

#define NGX_HTTP_RL_CLIENT_NAME         "ngx_rl"
/* the module's version, as the fleet's records say it (debian/changelog) */
#define NGX_HTTP_RL_VERSION             "0.2.0"

/* a group's script call: its rules' records, then its trials' */
#define ngx_http_rl_records(g)          ((g)->nrules + (g)->ntrials)

/* longest zone or rule name: a label of the metrics (src/http/metrics.cpp),
 * which keep this many bytes of each */
#define NGX_HTTP_RL_MAX_NAME            120
#define NGX_HTTP_RL_MAX_COST            1000000
#define NGX_HTTP_RL_MAX_PREFIX          64
#define NGX_HTTP_RL_MAX_LOG             100000
/* concurrency=: at most this many slots per key (shared memory keeps
 * 16 bytes a slot), hold= from 1 s to a day */
#define NGX_HTTP_RL_MAX_CONCURRENCY     100000
#define NGX_HTTP_RL_DEFAULT_HOLD        60000


typedef struct ngx_http_rl_store_s  ngx_http_rl_store_t;
typedef struct ngx_http_rl_link_s   ngx_http_rl_link_t;
typedef struct ngx_http_rl_call_s   ngx_http_rl_call_t;


/* Counters in the metrics zone: shared by all workers, kept across
 * reloads (the zone is found again by name, entries by label). */
typedef struct {
    ngx_atomic_t                latency[NGX_HTTP_RL_LATENCY_BUCKETS + 1];
    ngx_atomic_t                latency_sum_us;
    ngx_atomic_t                timeouts;
    ngx_atomic_t                reconnects;
    ngx_atomic_t                up;
    ngx_atomic_t                deny_cache_hits;
    ngx_atomic_t                local;      /* decided by failure=local */
    ngx_atomic_t                lease_granted;  /* rl_lease_units_total */
    ngx_atomic_t                lease_spent;
    ngx_atomic_t                lease_returned;
    /* the requests its rules decided, by the outcome they had in it
     * (the operator API's "requests" of a zone) */
    ngx_atomic_t                outcomes[NGX_HTTP_RL_OUTCOMES];
    ngx_atomic_t                evictions;  /* states that still limited
                                               a key, forgotten for room
                                               (the embedded store) */
    ngx_atomic_t                errors;     /* error replies from Redis */
} ngx_http_rl_zone_stats_t;

/* rl_charges_total results, per rule with charge= */
#define NGX_HTTP_RL_CHARGE_SENT         0
#define NGX_HTTP_RL_CHARGE_LOST         1
#define NGX_HTTP_RL_CHARGE_INVALID      2
#define NGX_HTTP_RL_CHARGE_RESULTS      3

typedef struct {
    ngx_atomic_t                outcomes[NGX_HTTP_RL_OUTCOMES];
    ngx_atomic_t                usage[NGX_HTTP_RL_USAGE_BUCKETS];
    ngx_atomic_t                usage_sum;  /* thousandths */
    /* in-flight limits and charges (src/http/inflight.cpp, src/http/charges.cpp) */
    ngx_atomic_t                inflight;   /* rl_inflight: slots held */
    ngx_atomic_t                charges[NGX_HTTP_RL_CHARGE_RESULTS];
    ngx_atomic_t                charge_warned; /* minute of the last warn */
    /* concurrency=auto (SPEC 13): by priority level, passed and
     * rejected (src/http/adaptive.cpp) */
    ngx_atomic_t                priority[4][2];
} ngx_http_rl_rule_stats_t;


/* A Redis server: a cluster= seed or a sentinel= node, or a node the
 * cluster told of. */
typedef struct {
    ngx_str_t                   host;       /* numeric, NUL-terminated */
    ngx_int_t                   port;
    ngx_str_t                   addr;       /* host:port, for logs */
    ngx_str_t                   name;       /* the host as written when a
                                               name (looked up again
                                               through a resolver), else
                                               empty */
} ngx_http_rl_server_t;


/* A zone's TLS to Redis (redis/tls.cpp): every node of the zone. */
typedef struct {
    ngx_flag_t                  enabled;    /* "tls" */
    ngx_flag_t                  verify;     /* chain and name checked */
    ngx_str_t                   server_name; /* checked, sent as SNI;
                                               empty: each node's IP */
    ngx_str_t                   ca;         /* files, full names, NUL */
    ngx_str_t                   cert;
    ngx_str_t                   key;
    void                       *ctx;        /* SSL_CTX, made with the
                                               configuration */
} ngx_http_rl_tls_t;


typedef struct {
    ngx_str_t                   name;
    ngx_str_t                   addr;       /* as written, for logs */
    ngx_str_t                   host;       /* numeric or unix path, NUL */
    ngx_int_t                   port;       /* 0: unix socket */
    ngx_str_t                   name_host;  /* redis=: the host as
                                               written when a name */
    ngx_http_rl_server_t       *seeds;      /* cluster=, resolved */
    ngx_uint_t                  nseeds;     /* 0: no cluster */
    ngx_http_rl_server_t       *sentinels;  /* sentinel=, resolved */
    ngx_uint_t                  nsentinels; /* 0: no sentinel */
    ngx_str_t                   master;     /* master= */
    ngx_str_t                   sentinel_username;
    ngx_str_t                   sentinel_password;
    ngx_str_t                   username;
    ngx_str_t                   password;
    ngx_int_t                   db;
    ngx_str_t                   prefix;
    ngx_msec_t                  timeout;
    ngx_msec_t                  connect_timeout;
    ngx_http_rl_tls_t           tls;
    ngx_uint_t                  failure;
    ngx_msec_t                  lease;      /* 0: none (src/shm/lease.cpp) */
    uint32_t                    lease_crc;  /* the zone, across reloads */
    ngx_uint_t                  index;
    ngx_uint_t                  declared;   /* 0: only referenced so far */
    ngx_http_rl_zone_stats_t   *stats;      /* in the metrics zone */
    ngx_shm_zone_t             *shm_zone;   /* the embedded store, or
                                               failure=local's */
    size_t                      size;
    void                       *sh;         /* its shared tree and queue */
    ngx_slab_pool_t            *shpool;
    u_char                     *file;       /* first reference */
    ngx_uint_t                  line;
} ngx_http_rl_zone_t;


typedef struct {
    ngx_http_rl_zone_t         *zone;
    ngx_http_complex_value_t    key;
    ngx_str_t                   name;
    ngx_uint_t                  algorithm;  /* rl::Algorithm; for
                                               concurrency=N (SPEC 9,
                                               src/http/inflight.cpp) limit is
                                               N, window_us the hold= */
    uint64_t                    limit;
    ngx_str_t                   limit_text; /* in decimal, for headers */
    uint64_t                    window_us;
    uint64_t                    burst;      /* effective */
    ngx_uint_t                  burst_follows; /* burst is N's default */
    uint64_t                    delay;      /* effective */
    uint64_t                    cost;       /* when constant */
    ngx_http_complex_value_t   *cost_cv;    /* cost=$variable */
    ngx_http_complex_value_t   *charge_cv;  /* charge=, or NULL
                                               (src/http/charges.cpp) */
    ngx_uint_t                  dry_run;
    uint32_t                    config_crc; /* of the script arguments */
    ngx_http_rl_rule_stats_t   *stats;      /* in the metrics zone */
    void                       *top;        /* its top limited keys, in
                                               the rl_api zone, or NULL */
    char                        id[RL_RULE_ID_LEN];
    void                       *calendar;   /* a calendar rule's zone, unit
                                               and anchor (SPEC 12,
                                               calendar_conf.cpp), or
                                               NULL; window_us is then its
                                               unit's nominal length */
    ngx_str_t                   spec;       /* the script's, enforced */
    ngx_str_t                   dry_spec;   /* the spec of a dry run */
    struct ngx_http_rl_name_s  *named;      /* its zone and name's entry
                                               (rule_names.cpp) */
    void                       *live;       /* what this worker makes of
                                               its name's live limit and
                                               trial (live.cpp) */
    void                       *adaptive;   /* concurrency=auto (SPEC 13,
                                               adaptive_conf.cpp): its
                                               bounds, priority and
                                               specs; NULL otherwise */
    ngx_uint_t                  order;      /* in rmcf->rules */
    u_char                     *file;       /* where it was written */
    ngx_uint_t                  line;
} ngx_http_rl_rule_t;


/* The rules of one zone and name (rule_names.cpp), made once when the
 * configuration is loaded: one series of the metrics, one entry of the
 * operator API, one list of top keys. */
typedef struct ngx_http_rl_name_s {
    ngx_http_rl_rule_t         *first;      /* the first written */
    ngx_http_rl_rule_t        **rules;      /* all, in the order written */
    ngx_uint_t                  nrules;
    ngx_http_rl_rule_t        **states;     /* each state of the name once
                                               (rule->id), its first */
    ngx_uint_t                  nstates;
    void                       *top;        /* its top limited keys */
    void                       *live;       /* its live limit and trial
                                               (live.cpp), in shared
                                               memory */
} ngx_http_rl_name_t;


/* rl_quota NAME...: a caller's own quota (SPEC section 14,
 * api/quota.cpp) */
typedef struct {
    ngx_str_t                  *names;      /* as written */
    ngx_uint_t                  nnames;
    ngx_http_rl_name_t        **found;      /* each name's entry in each
                                               zone, in that order (once
                                               the rules are read) */
    ngx_uint_t                  nfound;
    u_char                     *file;       /* where it was written */
    ngx_uint_t                  line;
} ngx_http_rl_quota_t;


typedef struct {
    ngx_array_t                 zones;      /* ngx_http_rl_zone_t * */
    ngx_array_t                 rules;      /* ngx_http_rl_rule_t *, all */
    ngx_array_t                 names;      /* ngx_http_rl_name_t, each
                                               zone and name once */
    ngx_http_rl_store_t       **stores;     /* per worker, by zone index */
    ngx_shm_zone_t             *metrics;
    ngx_shm_zone_t             *deny;       /* the deny cache */
    ngx_shm_zone_t             *leases;     /* the lease table, if any */
    ngx_shm_zone_t             *top;        /* top limited keys (rl_api) */
    ngx_shm_zone_t             *live;       /* live limits and trials */
    ngx_shm_zone_t             *adaptive;   /* concurrency=auto's table
                                               (shm/adaptive.hpp) */
    void                       *adaptive_worker; /* worker 0's
                                               (fleet/adaptive.cpp) */
    ngx_uint_t                  api;        /* a location has rl_api */
    ngx_array_t                 quotas;     /* ngx_http_rl_quota_t *, each
                                               rl_quota */
    void                       *lease_worker; /* per worker (lease.cpp) */
    void                       *inflight_worker; /* (inflight.cpp) */
    void                       *charge_worker;   /* (charges.cpp) */
    ngx_resolver_t             *resolver;   /* the http block's, if any */
    ngx_msec_t                  resolver_timeout;
    /* rl_fleet (SPEC section 11, fleet.cpp) */
    ngx_flag_t                  fleet;      /* off: 0 */
    ngx_str_t                   fleet_name; /* default: the host name */
    ngx_msec_t                  fleet_interval;
    ngx_shm_zone_t             *fleet_shm;  /* the instance's id, start */
    void                       *fleet_worker;
    ngx_array_t                 time_zones; /* read for calendar rules
                                               (calendar_conf.cpp) */
    ngx_uint_t                  nginx_clock; /* RL_TEST_CLOCK=nginx */
    ngx_uint_t                  flags_refused; /* RL_TEST_SCRIPT_FLAGS=
                                                  refused */
} ngx_http_rl_main_conf_t;


typedef struct {
    ngx_array_t                *rules;      /* ngx_http_rl_rule_t */
    ngx_uint_t                  status_code;
    ngx_uint_t                  headers;    /* NGX_HTTP_RL_HEADERS_* */
    ngx_flag_t                  dry_run;
    ngx_uint_t                  log_level;
    ngx_uint_t                  api;        /* NGX_HTTP_RL_API_* */
    ngx_http_rl_quota_t        *quota;      /* rl_quota, or NULL (not
                                               inherited) */
} ngx_http_rl_loc_conf_t;


/* A trial's record in a group's call (trials.cpp, SPEC section 11):
 * one of the group's rules decided again, in its place, in dry run, at
 * the trial's N on a state of its own. */
typedef struct {
    ngx_http_rl_rule_t         *shadow;     /* live.cpp: the trial's rule */
    ngx_uint_t                  of;         /* its rule's index (in
                                               ctx->outcomes) */
    ngx_uint_t                  place;      /* its rule's record (in
                                               the group's rules) */
    rl_outcome_t                outcome;
    ngx_uint_t                  decided;
} ngx_http_rl_trial_t;


/* The rules of one request that go to one zone (in a cluster, to one
 * slot of it): one script call. */
typedef struct ngx_http_rl_group_s  ngx_http_rl_group_t;

struct ngx_http_rl_group_s {
    ngx_http_rl_zone_t         *zone;
    ngx_uint_t                  slot;       /* in a cluster, else 0 */
    struct ngx_http_rl_ctx_s   *ctx;
    ngx_http_rl_call_t         *call;       /* in flight, or NULL */
    ngx_http_rl_link_t         *ask;        /* a refund's ASK target */
    ngx_uint_t                 *rules;      /* indexes into ctx->outcomes */
    ngx_uint_t                  nrules;
    ngx_http_rl_trial_t        *trials;     /* trials of its rules, whose
                                               records follow the rules' */
    ngx_uint_t                  ntrials;
    ngx_str_t                  *keys;       /* state keys, per record */
    ngx_str_t                 **specs;      /* rule->spec or dry_spec, or
                                               their live limit's */
    uint64_t                   *costs;
    int64_t                     now_us;     /* when the script decided */
    int64_t                     age_us;     /* waited before its call */
    int64_t                     sent_us;    /* for the latency histogram */
    uint64_t                    lease_ask;  /* units its record asks for a
                                               lease (a lease's own call) */
    uint64_t                    lease_want; /* units to ask once it left */
    int64_t                     lease_grant; /* spent from this grant */
    uint64_t                    held;       /* bit k: rule k is a
                                               concurrency= rule (SPEC 9) */
    uint64_t                    calendar;   /* bit k: rule k is a calendar
                                               rule (SPEC 12), its period's
                                               bounds at bounds[3 k] */
    int64_t                    *bounds;     /* (src/core/calendar.hpp) */
    uint64_t                    slot_id;    /* the request's slot in them */
    void                       *hold;       /* the slots it holds while the
                                               request runs (inflight.cpp) */
    /* a call of the worker's own (ctx NULL, not a lease's) was answered:
     * retry is NGX_HTTP_RL_RETRY_* (src/redis/owned_call.hpp) */
    void                      (*owned_done)(ngx_http_rl_group_t *group,
                                            int retry);
    unsigned                    done:1;
    unsigned                    error:1;
    unsigned                    allowed:1;
    unsigned                    retried:1;
    unsigned                    refund_retried:1;
    unsigned                    skipped:1;  /* another group rejected */
    unsigned                    local:1;    /* decided by failure=local */
    unsigned                    leased:1;   /* spent from a lease */
    unsigned                    redirects:2; /* MOVED or ASK followed */
    unsigned                    lost:1;     /* its decision's reply was
                                               lost with its connection:
                                               the script may have run */
};


typedef struct ngx_http_rl_ctx_s {
    ngx_http_request_t         *r;
    ngx_http_rl_loc_conf_t     *lcf;
    ngx_event_t                 wake;
    ngx_http_rl_group_t        *groups;
    ngx_uint_t                  ngroups;
    ngx_uint_t                  pending;
    ngx_str_t                  *values;     /* key values, per rule */
    uint64_t                   *costs;      /* costs, per rule */
    ngx_msec_t                  delay;      /* shaping (DELAYED) */
    rl_outcome_t               *outcomes;   /* one per rule of lcf */
    u_char                     *decided;    /* rule has an outcome */
    ngx_uint_t                  status;     /* NGX_HTTP_RL_STATUS_* */
    ngx_int_t                   rc;         /* NGX_DECLINED or status */
    ngx_int_t                   binding;    /* rule index, or -1 */
    u_char                     *levels;     /* concurrency=auto: each
                                               rule's priority level */
    int64_t                     admitted_us; /* (adaptive.cpp) when an
                                               auto rule admitted it, */
    int64_t                     responded_us; /* its upstream's header */
    unsigned                    waiting:1;
    unsigned                    delaying:1;
    unsigned                    refunding:1; /* waits for its refunds */
    unsigned                    resumed:1;
    unsigned                    finished:1;
    unsigned                    headers_done:1;
    unsigned                    charged:1;  /* its charges went */
    unsigned                    sampled:1;  /* its auto rules' samples */
} ngx_http_rl_ctx_t;


extern ngx_module_t  ngx_http_rl_module;


/* A zone without redis= keeps its state in shared memory only; a Redis
 * zone has a shm_zone too under failure=local. */
static ngx_inline ngx_uint_t
ngx_http_rl_embedded(const ngx_http_rl_zone_t *zone)
{
    return zone->addr.len == 0;
}


/* Two rules of one zone and name: one entry of the metrics and of the
 * operator API (rl_requests_total's labels, /1/rules). */
static ngx_inline ngx_uint_t
ngx_http_rl_same_name(const ngx_http_rl_rule_t *a,
    const ngx_http_rl_rule_t *b)
{
    return a->zone == b->zone && a->name.len == b->name.len
           && ngx_memcmp(a->name.data, b->name.data, a->name.len) == 0;
}


/* A rule is a dry run by its own flag or by rl_dry_run where it decides. */
static ngx_inline ngx_uint_t
ngx_http_rl_dry_run(const ngx_http_rl_ctx_t *ctx,
    const ngx_http_rl_rule_t *rule)
{
    return rule->dry_run || ctx->lcf->dry_run;
}


/* v in decimal at p, returns the end (at most NGX_INT64_LEN bytes): on
 * every request, where ngx_sprintf("%L") parses its format each time. */
static ngx_inline u_char *
ngx_http_rl_decimal(u_char *p, int64_t v)
{
    u_char    digits[NGX_INT64_LEN];
    u_char   *d;
    uint64_t  u;

    u = v < 0 ? 0 - (uint64_t) v : (uint64_t) v;
    d = digits + sizeof(digits);
    do {
        *--d = (u_char) ('0' + u % 10);
        u /= 10;
    } while (u != 0);

    if (v < 0) {
        *p++ = '-';
    }

    return ngx_cpymem(p, d, digits + sizeof(digits) - d);
}


/* X-RateLimit-Reset and $rl_reset, seconds: a rejected request's binding
 * rule frees capacity after its retry, an admitted one's is whole again
 * after its reset. */
static ngx_inline int64_t
ngx_http_rl_reset_seconds(const ngx_http_rl_ctx_t *ctx)
{
    const rl_outcome_t  *o = &ctx->outcomes[ctx->binding];

    return rl_seconds_ceil(ctx->status == NGX_HTTP_RL_STATUS_REJECTED
                           ? o->retry_ms : o->reset_ms);
}


/* ngx_http_rl_rule_conf.c: a parameter's value with variables (key=,
 * cost=, charge=, anchor=, priority=) compiled into *cv, made first
 * when NULL. */
ngx_int_t ngx_http_rl_compile(ngx_conf_t *cf, ngx_str_t *value,
    ngx_http_complex_value_t **cv) RL_NOEXCEPT;

/* adaptive.cpp: a proxied request's response header is being sent (the
 * end of its latency, for concurrency=auto's samples). */
void ngx_http_rl_adaptive_responded(ngx_http_request_t *r,
    ngx_http_rl_ctx_t *ctx) RL_NOEXCEPT;

/* adaptive_conf.cpp: concurrency=auto (SPEC 13). conf: min=, max=,
 * target= and priority= as written (text[0..3], empty: not given) read
 * into rule->adaptive, rule->limit set to min and rule->burst to max;
 * specs: the specs of each priority level, made once the rule's spec
 * is. */
char *ngx_http_rl_adaptive_conf(ngx_conf_t *cf, ngx_http_rl_rule_t *rule,
    ngx_str_t *text) RL_NOEXCEPT;
char *ngx_http_rl_adaptive_specs(ngx_conf_t *cf, ngx_http_rl_rule_t *rule)
    RL_NOEXCEPT;

/* calendar_conf.cpp: calendar rules (SPEC 12). conf: the rule's rate
 * per `per` ("h", "d", "w", "month", "y"), "tz=ZONE" and "anchor=..."
 * as written (empty: not given): its zone read, its anchor checked;
 * *identity what its state's id adds to its algorithm's name. bounds: a
 * request's, at now_us (its anchor variable evaluated), 3 int64 at out;
 * bounds_at: for an anchor day given (the operator API; 0: the rule's
 * own, or the 1st). now: the clock a zone's bounds are made on. */
char *ngx_http_rl_calendar_conf(ngx_conf_t *cf, ngx_http_rl_rule_t *rule,
    ngx_str_t *per, ngx_str_t *tz, ngx_str_t *anchor, ngx_str_t *identity)
    RL_NOEXCEPT;
void ngx_http_rl_calendar_bounds(ngx_http_request_t *r,
    const ngx_http_rl_rule_t *rule, int64_t now_us, int64_t *out)
    RL_NOEXCEPT;
void ngx_http_rl_calendar_bounds_at(const ngx_http_rl_rule_t *rule,
    ngx_int_t anchor, int64_t now_us, int64_t *out) RL_NOEXCEPT;
int64_t ngx_http_rl_calendar_now(ngx_http_rl_zone_t *zone) RL_NOEXCEPT;
/* whether its anchor is a variable (each key's billing day) */
ngx_uint_t ngx_http_rl_calendar_variable(const ngx_http_rl_rule_t *rule)
    RL_NOEXCEPT;
/* its unit ("hour" ... "year"), zone and anchor as written (empty: the
 * default), for the operator API */
void ngx_http_rl_calendar_describe(const ngx_http_rl_rule_t *rule,
    ngx_str_t *unit, ngx_str_t *tz, ngx_str_t *anchor) RL_NOEXCEPT;
/* RL_TEST_CLOCK=nginx (tests only, docs/testing.md): the script decides
 * at the time nginx sends, not on Redis' clock; set per worker */
extern ngx_uint_t  ngx_http_rl_nginx_clock;
/* RL_TEST_SCRIPT_FLAGS=refused (tests only, docs/testing.md): no server
 * takes the script's flags, a Cluster's calls go one per slot
 * (node_batch.cpp); set per worker */
extern ngx_uint_t  ngx_http_rl_script_flags_refused;

/* rule_names.cpp: rmcf->names, once the rules are read */
ngx_int_t ngx_http_rl_names_init(ngx_conf_t *cf,
    ngx_http_rl_main_conf_t *rmcf) RL_NOEXCEPT;

/* live.cpp: live limits and trials (SPEC section 11): each rule's part,
 * then the shared memory zone's size and init */
ngx_int_t ngx_http_rl_live_prepare(ngx_conf_t *cf,
    ngx_http_rl_main_conf_t *rmcf) RL_NOEXCEPT;
size_t ngx_http_rl_live_size(ngx_http_rl_main_conf_t *rmcf) RL_NOEXCEPT;
ngx_int_t ngx_http_rl_live_init_zone(ngx_shm_zone_t *shm_zone, void *data)
    RL_NOEXCEPT;

/* ngx_http_rl_zone_conf.c: rl_zone; a zone by its name, made when first
 * met (declared later) */
char *ngx_http_rl_zone(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
ngx_http_rl_zone_t *ngx_http_rl_find_zone(ngx_conf_t *cf, ngx_str_t *name);

/* ngx_http_rl_rule_conf.c: rl_rule */
char *ngx_http_rl_rule(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);

/* ngx_http_rl_directives.c: what the parsers share (a parameter of
 * value[first..] given again at value[i]: logged), and the plain
 * directives */
ngx_int_t ngx_http_rl_duplicate(ngx_conf_t *cf, ngx_str_t *value,
    ngx_uint_t first, ngx_uint_t i);
char *ngx_http_rl_status(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *ngx_http_rl_enum(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *ngx_http_rl_fleet(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *ngx_http_rl_quota(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);

/* ngx_http_rl_headers.c */
void ngx_http_rl_header_filter_init(void);
/* a response header NAME (len bytes) with the value (both kept, not
 * copied) */
ngx_int_t ngx_http_rl_add_header(ngx_http_request_t *r, const char *name,
    size_t len, ngx_str_t *value);
/* the draft's items of a rule (also rl_quota's): "NAME";q=Q;w=W of
 * RateLimit-Policy (a concurrency= rule's: its quota unit, no w),
 * "NAME";r=R;t=T of RateLimit; the most bytes either takes, with the
 * ", " before it */
size_t ngx_http_rl_policy_len(const ngx_http_rl_rule_t *rule);
u_char *ngx_http_rl_policy_item(u_char *p, const ngx_http_rl_rule_t *rule,
    uint64_t q, uint64_t w);
u_char *ngx_http_rl_limit_item(u_char *p, const ngx_http_rl_rule_t *rule,
    int64_t r, int64_t t);

/* redis/stores.cpp: per worker, a store per Redis zone (one connection
 * per server, or a cluster's: redis/cluster.cpp), and the link
 * (connection, redis/link.cpp) that serves a slot of it */
ngx_int_t ngx_http_rl_stores_init(ngx_cycle_t *cycle,
    ngx_http_rl_main_conf_t *rmcf) RL_NOEXCEPT;
void ngx_http_rl_stores_free(ngx_http_rl_main_conf_t *rmcf) RL_NOEXCEPT;
/* NULL: no server known for the slot */
ngx_http_rl_link_t *ngx_http_rl_store_route(ngx_http_rl_store_t *store,
    ngx_uint_t slot) RL_NOEXCEPT;
ngx_int_t ngx_http_rl_link_usable(ngx_http_rl_link_t *link) RL_NOEXCEPT;
ngx_http_rl_call_t *ngx_http_rl_link_send(ngx_http_rl_link_t *link,
    ngx_http_rl_group_t *group) RL_NOEXCEPT;
void ngx_http_rl_call_detach(ngx_http_rl_call_t *call) RL_NOEXCEPT;
/* detaches the call, and tells its link it went unanswered */
void ngx_http_rl_call_timed_out(ngx_http_rl_call_t *call) RL_NOEXCEPT;
/* a refund (EVALSHA ... refund); ngx_http_rl_refund_done() when it is
 * answered (retry: NGX_HTTP_RL_RETRY_*), unless the call was detached */
ngx_http_rl_call_t *ngx_http_rl_link_refund(ngx_http_rl_link_t *link,
    ngx_http_rl_group_t *group, ngx_uint_t asking, ngx_uint_t argc,
    const char **argv, const size_t *argvlen) RL_NOEXCEPT;

/* redis/tls.cpp: the zone's TLS context, made now (its files read,
 * their errors named, as nginx -t shows), freed with cf->pool */
char *ngx_http_rl_tls_conf(ngx_conf_t *cf, ngx_http_rl_zone_t *zone)
    RL_NOEXCEPT;

/* shm/store.cpp: the embedded store in shared memory */
ngx_int_t ngx_http_rl_shm_init_zone(ngx_shm_zone_t *shm_zone, void *data)
    RL_NOEXCEPT;
ngx_int_t ngx_http_rl_shm_decide(ngx_http_rl_group_t *group) RL_NOEXCEPT;
/* gives back costs[k] units of each record k (0: none) */
void ngx_http_rl_shm_refund(ngx_http_rl_group_t *group,
    const uint64_t *costs) RL_NOEXCEPT;
/* the operator API: a key's state read without counting, or forgotten */
ngx_int_t ngx_http_rl_shm_peek(ngx_http_rl_zone_t *zone,
    const ngx_http_rl_rule_t *rule, const ngx_str_t *value,
    const int64_t *bounds, rl_outcome_t *out) RL_NOEXCEPT;
/* a credit (the operator API's, SPEC 12): the key may use units more in
 * its current window or period; NGX_ERROR when the zone has no room */
ngx_int_t ngx_http_rl_shm_credit(ngx_http_rl_zone_t *zone,
    const ngx_http_rl_rule_t *rule, const ngx_str_t *value,
    const int64_t *bounds, int64_t units) RL_NOEXCEPT;
/* the zone's clock, us since the epoch (monotonic, aligned to the wall
 * clock when the zone was made) */
int64_t ngx_http_rl_shm_now(ngx_http_rl_zone_t *zone) RL_NOEXCEPT;
ngx_uint_t ngx_http_rl_shm_forget(ngx_http_rl_zone_t *zone,
    const ngx_http_rl_rule_t *rule, const ngx_str_t *value) RL_NOEXCEPT;
/* an embedded (or failure=local) zone's memory: its size and the bytes
 * not free (pages in use), read under its lock; 0 and 0 for none */
void ngx_http_rl_shm_usage(ngx_http_rl_zone_t *zone, size_t *used,
    size_t *size) RL_NOEXCEPT;
/* postconfiguration: warns of a size= that holds fewer than 1000 states
 * of one of its rules */
void ngx_http_rl_shm_check(ngx_conf_t *cf, ngx_http_rl_main_conf_t *rmcf)
    RL_NOEXCEPT;
/* a concurrency rule's slot (key: its state key less the prefix) is
 * released, or renewed (renew), in its node's ring whatever N made it */
void ngx_http_rl_shm_slot(ngx_http_rl_zone_t *zone,
    const ngx_http_rl_rule_t *rule, const ngx_str_t *key, uint64_t slot,
    ngx_uint_t renew) RL_NOEXCEPT;
/* a charge: units more in the rule for the key value (below 0: given
 * back); NGX_ERROR when the zone has no room */
ngx_int_t ngx_http_rl_shm_charge(ngx_http_rl_zone_t *zone,
    const ngx_http_rl_rule_t *rule, const ngx_str_t *value,
    const int64_t *bounds, int64_t units) RL_NOEXCEPT;

/* metrics.cpp: the rl_metrics endpoint and its shared counters */
ngx_int_t ngx_http_rl_metrics_init_zone(ngx_shm_zone_t *shm_zone,
    void *data) RL_NOEXCEPT;
ngx_int_t ngx_http_rl_metrics_handler(ngx_http_request_t *r) RL_NOEXCEPT;
void ngx_http_rl_stats_latency(ngx_http_rl_zone_t *zone, ngx_msec_t ms)
    RL_NOEXCEPT;
/* a rule's decision of a request (its key value): rl_requests_total;
 * for the operator API, rl_usage_ratio (with its figures o, NULL when it
 * was not asked) and the top limited keys */
void ngx_http_rl_stats_rule(const ngx_http_rl_rule_t *rule,
    ngx_uint_t outcome, const rl_outcome_t *o, const ngx_str_t *value)
    RL_NOEXCEPT;

/* top_keys.cpp: each rule's top limited keys (rl_api), all workers */
size_t ngx_http_rl_top_size(ngx_http_rl_main_conf_t *rmcf) RL_NOEXCEPT;
ngx_int_t ngx_http_rl_top_init_zone(ngx_shm_zone_t *shm_zone, void *data)
    RL_NOEXCEPT;
void ngx_http_rl_top_reject(const ngx_http_rl_rule_t *rule,
    const ngx_str_t *value) RL_NOEXCEPT;
void ngx_http_rl_top_admit(const ngx_http_rl_rule_t *rule,
    const ngx_str_t *value) RL_NOEXCEPT;

/* api.cpp: the operator API and dashboard (rl_api) */
ngx_int_t ngx_http_rl_api_handler(ngx_http_request_t *r) RL_NOEXCEPT;

/* quota.cpp: a caller's own quota (rl_quota, SPEC section 14): each
 * rl_quota's names found among the rules' once they are read (nginx -t
 * names one no rule has), and the content handler */
ngx_int_t ngx_http_rl_quota_conf(ngx_conf_t *cf,
    ngx_http_rl_main_conf_t *rmcf) RL_NOEXCEPT;
ngx_int_t ngx_http_rl_quota_handler(ngx_http_request_t *r) RL_NOEXCEPT;

/* deny_cache.cpp: rejections known until they expire, all workers */
ngx_int_t ngx_http_rl_deny_init_zone(ngx_shm_zone_t *shm_zone, void *data)
    RL_NOEXCEPT;
ngx_int_t ngx_http_rl_deny_lookup(ngx_shm_zone_t *zone,
    const ngx_http_rl_rule_t *rule, const ngx_str_t *value,
    rl_outcome_t *out) RL_NOEXCEPT;
/* decided_us: when the request went to Redis, on rl::monotonicUs()'s
 * clock (no later than Redis decided it); the entry lasts its retry
 * from then */
void ngx_http_rl_deny_insert(ngx_shm_zone_t *zone,
    const ngx_http_rl_rule_t *rule, const ngx_str_t *value,
    const rl_outcome_t *o, int64_t decided_us) RL_NOEXCEPT;
/* an operator changed the key (rl_api): its rejection is forgotten */
void ngx_http_rl_deny_forget(ngx_shm_zone_t *zone,
    const ngx_http_rl_rule_t *rule, const ngx_str_t *value) RL_NOEXCEPT;

/* lease.cpp, lease_calls.cpp: leases (SPEC section 6) */
ngx_int_t ngx_http_rl_lease_init_zone(ngx_shm_zone_t *shm_zone, void *data)
    RL_NOEXCEPT;
ngx_int_t ngx_http_rl_leases_init(ngx_cycle_t *cycle,
    ngx_http_rl_main_conf_t *rmcf) RL_NOEXCEPT;
/* gives back what this worker's generation holds, before the links go */
void ngx_http_rl_leases_exit(ngx_http_rl_main_conf_t *rmcf) RL_NOEXCEPT;
/* frees the calls the links let go of, after they went */
void ngx_http_rl_leases_free(ngx_http_rl_main_conf_t *rmcf) RL_NOEXCEPT;
/* ends the leases of a key value (block: its PREFIX{VALUE}), what they
 * hold going back: an operator changed it (rl_api) */
void ngx_http_rl_lease_forget(ngx_http_rl_main_conf_t *rmcf,
    const ngx_str_t *block) RL_NOEXCEPT;
/* redis/stores.cpp: writes what the links have queued, now (worker
 * exit) */
void ngx_http_rl_stores_write(ngx_http_rl_main_conf_t *rmcf) RL_NOEXCEPT;

/* inflight.cpp, charges.cpp: in-flight limits and charges (SPEC 9, 10),
 * per worker; exit releases what the worker's requests hold, before the
 * links go; free frees what the links let go of, after */
ngx_int_t ngx_http_rl_inflight_init(ngx_cycle_t *cycle,
    ngx_http_rl_main_conf_t *rmcf) RL_NOEXCEPT;
void ngx_http_rl_inflight_exit(ngx_http_rl_main_conf_t *rmcf) RL_NOEXCEPT;
void ngx_http_rl_inflight_free(ngx_http_rl_main_conf_t *rmcf) RL_NOEXCEPT;
/* a link's new connection takes calls (behind its handshake, or with
 * the handshake done): the slots of running requests it serves are
 * renewed at once, put back where Redis lost them (a restart, a
 * failover) */
void ngx_http_rl_link_connected(ngx_http_rl_link_t *link) RL_NOEXCEPT;
/* the worker's requests hold slots, or its own calls are out (releases,
 * renewals, charges, a lease's calls): while nginx stops it gracefully
 * (a reload), its links keep connecting */
ngx_uint_t ngx_http_rl_worker_busy(void) RL_NOEXCEPT;
ngx_int_t ngx_http_rl_charges_init(ngx_cycle_t *cycle,
    ngx_http_rl_main_conf_t *rmcf) RL_NOEXCEPT;
void ngx_http_rl_charges_exit(ngx_http_rl_main_conf_t *rmcf) RL_NOEXCEPT;
void ngx_http_rl_charges_free(ngx_http_rl_main_conf_t *rmcf) RL_NOEXCEPT;
/* whether a rule has concurrency= (1), charge= (2), both (3), neither */
ngx_uint_t ngx_http_rl_after_rules(ngx_http_rl_main_conf_t *rmcf)
    RL_NOEXCEPT;

/* fleet.cpp: the fleet (SPEC section 11): the instance's id (its zone,
 * at configuration), then worker 0's turns: live limits, trials and the
 * audit read once a second, the instance's record published */
ngx_int_t ngx_http_rl_fleet_conf(ngx_conf_t *cf,
    ngx_http_rl_main_conf_t *rmcf) RL_NOEXCEPT;
ngx_int_t ngx_http_rl_fleet_init_zone(ngx_shm_zone_t *shm_zone, void *data)
    RL_NOEXCEPT;
ngx_int_t ngx_http_rl_fleet_init(ngx_cycle_t *cycle,
    ngx_http_rl_main_conf_t *rmcf) RL_NOEXCEPT;
void ngx_http_rl_fleet_exit(ngx_http_rl_main_conf_t *rmcf) RL_NOEXCEPT;
void ngx_http_rl_fleet_free(ngx_http_rl_main_conf_t *rmcf) RL_NOEXCEPT;

/* concurrency=auto (SPEC 13): its table's zone (shm/adaptive.cpp: its
 * size, 0 without an auto rule), worker 0's interval
 * (fleet/adaptive.cpp) */
size_t ngx_http_rl_adaptive_size(ngx_http_rl_main_conf_t *rmcf)
    RL_NOEXCEPT;
ngx_int_t ngx_http_rl_adaptive_init_zone(ngx_shm_zone_t *shm_zone,
    void *data) RL_NOEXCEPT;
ngx_int_t ngx_http_rl_adaptive_init(ngx_cycle_t *cycle,
    ngx_http_rl_main_conf_t *rmcf) RL_NOEXCEPT;
void ngx_http_rl_adaptive_exit(ngx_http_rl_main_conf_t *rmcf) RL_NOEXCEPT;

/* request.cpp: deciding a request */
ngx_int_t ngx_http_rl_decide(ngx_http_request_t *r,
    ngx_http_rl_loc_conf_t *lcf) RL_NOEXCEPT;
/* the request ends (its log phase): its charges, its slots released */
void ngx_http_rl_request_end(ngx_http_request_t *r) RL_NOEXCEPT;
/* limits: per rule of the group, a key value's override of its N (0:
 * none), or NULL for none; grant: the units its lease was granted (a
 * lease's own call) */
void ngx_http_rl_group_done(ngx_http_rl_group_t *group, const void *reply,
    int64_t clock_us, const int64_t *limits, int64_t grant) RL_NOEXCEPT;
#define NGX_HTTP_RL_RETRY_NONE      0   /* done: Redis took it */
#define NGX_HTTP_RL_RETRY_EVAL      1   /* Redis lost the script */
#define NGX_HTTP_RL_RETRY_MOVED     2   /* the slot moved: the map knows */
#define NGX_HTTP_RL_RETRY_ASK       3   /* the slot moves: to group->ask */
#define NGX_HTTP_RL_REFUND_FAILED   4   /* done: no reply, or an error */
/* (a call of the worker's own only: src/redis/owned_call.hpp) */
#define NGX_HTTP_RL_RETRY_LATER     5   /* it did not run (TRYAGAIN: its
                                           slot migrates): after a while */
#define NGX_HTTP_RL_REFUND_LOST     6   /* done: no reply (its connection
                                           went, or it could not go): it
                                           may or may not have run */
void ngx_http_rl_refund_done(ngx_http_rl_group_t *group, int retry)
    RL_NOEXCEPT;
ngx_http_rl_ctx_t *ngx_http_rl_get_ctx(ngx_http_request_t *r) RL_NOEXCEPT;


#endif /* NGX_HTTP_RL_H_INCLUDED_ */
