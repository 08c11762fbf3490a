/*
 * ngx_http_rl_rule_conf.c: rl_rule, parsed and checked the way
 * limit_req's directives are, errors in nginx's words: its parameters,
 * then the rule as a whole (its algorithm's shape, an in-flight limit,
 * a charge, a calendar rate), its identity and its spec.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <hiredis/hiredis.h>

#include "ngx_http_rl.h"


/* What rl_rule read, before it is checked as a whole. */
typedef struct {
    ngx_str_t                   rate;
    ngx_str_t                   algorithm;
    ngx_int_t                   burst;      /* -1: not given */
    ngx_int_t                   delay;      /* -1: not given */
    ngx_uint_t                  nodelay;
    ngx_str_t                   burst_text;
    ngx_str_t                   delay_text;
    ngx_int_t                   concurrency; /* -1: not given */
    ngx_msec_t                  hold;       /* NGX_CONF_UNSET_MSEC */
    /* each parameter as written, when given (empty: not given) */
    ngx_str_t                   rate_text;
    ngx_str_t                   algorithm_text;
    ngx_str_t                   cost_text;
    ngx_str_t                   charge_text;
    ngx_str_t                   concurrency_text;
    ngx_str_t                   hold_text;
    ngx_str_t                   tz_text;    /* calendar rules (SPEC 12) */
    ngx_str_t                   anchor_text;
    ngx_uint_t                  adaptive;   /* concurrency=auto (SPEC 13) */
    ngx_str_t                   adaptive_text[4]; /* min= max= target=
                                                     priority= */
} ngx_http_rl_rule_args_t;




/* concurrency=auto's parameters, as ra->adaptive_text holds them */
static const char  *ngx_http_rl_adaptive_params[4] = {
    "min=", "max=", "target=", "priority="
};


static char *ngx_http_rl_rule_param(ngx_conf_t *cf, ngx_http_rl_rule_t *rule,
    ngx_str_t *value, ngx_http_rl_rule_args_t *ra);
static char *ngx_http_rl_rule_cost(ngx_conf_t *cf, ngx_http_rl_rule_t *rule,
    ngx_str_t *value);
static char *ngx_http_rl_rule_finish(ngx_conf_t *cf, ngx_http_rl_rule_t *rule,
    ngx_http_rl_rule_args_t *ra);
static char *ngx_http_rl_rule_shape(ngx_conf_t *cf, ngx_http_rl_rule_t *rule,
    ngx_http_rl_rule_args_t *ra);
static char *ngx_http_rl_rule_inflight(ngx_conf_t *cf,
    ngx_http_rl_rule_t *rule, ngx_http_rl_rule_args_t *ra);
static char *ngx_http_rl_rule_charge(ngx_conf_t *cf, ngx_http_rl_rule_t *rule,
    ngx_str_t *value);
static char *ngx_http_rl_rule_calendar(ngx_conf_t *cf,
    ngx_http_rl_rule_t *rule, ngx_http_rl_rule_args_t *ra,
    ngx_str_t *identity);
static char *ngx_http_rl_rule_identity(ngx_conf_t *cf,
    ngx_http_rl_rule_t *rule, ngx_str_t *name, uint64_t window_us,
    ngx_str_t *algorithm);
static char *ngx_http_rl_rule_spec(ngx_conf_t *cf, ngx_http_rl_rule_t *rule);


char *
ngx_http_rl_rule(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_rl_loc_conf_t *lcf = conf;

    char                     *rv;
    ngx_str_t                *value;
    ngx_uint_t                i;
    ngx_http_rl_rule_t       *rule, *other, **rp;
    ngx_http_rl_rule_args_t   ra;
    ngx_http_rl_main_conf_t  *rmcf;

    if (lcf->rules == NULL) {
        /* sized once: rules never move, the metrics keep pointers */
        lcf->rules = ngx_array_create(cf->pool, RL_MAX_RULES,
                                      sizeof(ngx_http_rl_rule_t));
        if (lcf->rules == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    if (lcf->rules->nelts == RL_MAX_RULES) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "more than %d \"rl_rule\" in one place",
                           RL_MAX_RULES);
        return NGX_CONF_ERROR;
    }

    rule = ngx_array_push(lcf->rules);
    if (rule == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(rule, sizeof(ngx_http_rl_rule_t));
    ngx_memzero(&ra, sizeof(ngx_http_rl_rule_args_t));

    rmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_rl_module);

    rp = ngx_array_push(&rmcf->rules);
    if (rp == NULL) {
        return NGX_CONF_ERROR;
    }

    *rp = rule;
    ngx_str_set(&ra.algorithm, "sliding_window");
    ra.burst = -1;
    ra.delay = -1;
    ra.concurrency = -1;
    ra.hold = NGX_CONF_UNSET_MSEC;
    rule->cost = 1;

    rule->file = cf->conf_file->file.name.data;
    rule->line = cf->conf_file->line;

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {
        if (ngx_http_rl_duplicate(cf, value, 1, i) != NGX_OK) {
            return NGX_CONF_ERROR;
        }

        rv = ngx_http_rl_rule_param(cf, rule, &value[i], &ra);
        if (rv != NGX_CONF_OK) {
            return rv;
        }
    }

    rv = ngx_http_rl_rule_finish(cf, rule, &ra);
    if (rv != NGX_CONF_OK) {
        return rv;
    }

    /* two rules of one place on one state would count each request
     * twice in it */
    other = lcf->rules->elts;

    for (i = 0; i + 1 < lcf->rules->nelts; i++) {
        if (ngx_memcmp(other[i].id, rule->id, RL_RULE_ID_LEN) == 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"rl_rule\" shares its state with the one "
                               "in %s:%ui (same zone, name, algorithm, "
                               "window and key): give one of them another "
                               "\"name=\"", other[i].file, other[i].line);
            return NGX_CONF_ERROR;
        }
    }

    return NGX_CONF_OK;
}


static char *
ngx_http_rl_rule_param(ngx_conf_t *cf, ngx_http_rl_rule_t *rule,
    ngx_str_t *value, ngx_http_rl_rule_args_t *ra)
{
    size_t                     i;
    ngx_str_t                  s;
    ngx_http_complex_value_t  *cv;

    if (ngx_strncmp(value->data, "zone=", 5) == 0) {
        s.data = value->data + 5;
        s.len = value->len - 5;

        rule->zone = ngx_http_rl_find_zone(cf, &s);
        if (rule->zone == NULL) {
            return NGX_CONF_ERROR;
        }

        return NGX_CONF_OK;
    }

    if (ngx_strncmp(value->data, "key=", 4) == 0) {
        s.data = value->data + 4;
        s.len = value->len - 4;

        if (s.len == 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid key \"%V\"", value);
            return NGX_CONF_ERROR;
        }

        cv = &rule->key;

        if (ngx_http_rl_compile(cf, &s, &cv) != NGX_OK) {
            return NGX_CONF_ERROR;
        }

        return NGX_CONF_OK;
    }

    if (ngx_strncmp(value->data, "rate=", 5) == 0) {
        ra->rate_text = *value;
        ra->rate.data = value->data + 5;
        ra->rate.len = value->len - 5;
        return NGX_CONF_OK;
    }

    if (ngx_strncmp(value->data, "tz=", 3) == 0) {
        ra->tz_text = *value;
        return NGX_CONF_OK;
    }

    if (ngx_strncmp(value->data, "anchor=", 7) == 0) {
        ra->anchor_text = *value;
        return NGX_CONF_OK;
    }

    if (ngx_strncmp(value->data, "algorithm=", 10) == 0) {
        ra->algorithm_text = *value;
        ra->algorithm.data = value->data + 10;
        ra->algorithm.len = value->len - 10;
        return NGX_CONF_OK;
    }

    if (ngx_strncmp(value->data, "concurrency=", 12) == 0) {
        ra->concurrency_text = *value;

        if (value->len == 16
            && ngx_strncmp(value->data + 12, "auto", 4) == 0)
        {
            ra->adaptive = 1;
            return NGX_CONF_OK;
        }

        ra->concurrency = ngx_atoi(value->data + 12, value->len - 12);

        if (ra->concurrency < 1
            || ra->concurrency > NGX_HTTP_RL_MAX_CONCURRENCY)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid concurrency \"%V\": a number of "
                               "requests from 1 to %d", value,
                               NGX_HTTP_RL_MAX_CONCURRENCY);
            return NGX_CONF_ERROR;
        }

        return NGX_CONF_OK;
    }

    if (ngx_strncmp(value->data, "hold=", 5) == 0) {
        ra->hold_text = *value;
        s.data = value->data + 5;
        s.len = value->len - 5;
        ra->hold = ngx_parse_time(&s, 0);

        if (ra->hold == (ngx_msec_t) NGX_ERROR || ra->hold < 1000
            || ra->hold > 86400000)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid hold \"%V\": a time from 1s "
                               "to 1d", value);
            return NGX_CONF_ERROR;
        }

        return NGX_CONF_OK;
    }

    for (i = 0; i < 4; i++) {
        if (ngx_strncmp(value->data,
                        (u_char *) ngx_http_rl_adaptive_params[i],
                        ngx_strlen(ngx_http_rl_adaptive_params[i]))
            == 0)
        {
            ra->adaptive_text[i] = *value;
            return NGX_CONF_OK;
        }
    }

    if (ngx_strncmp(value->data, "charge=", 7) == 0) {
        ra->charge_text = *value;
        return ngx_http_rl_rule_charge(cf, rule, value);
    }

    if (ngx_strncmp(value->data, "name=", 5) == 0) {
        rule->name.data = value->data + 5;
        rule->name.len = value->len - 5;

        if (rule->name.len == 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid name \"%V\"", value);
            return NGX_CONF_ERROR;
        }

        /* it goes into headers, metrics labels and logs as it is */
        for (i = 0; i < rule->name.len; i++) {
            if (rule->name.data[i] < 0x20 || rule->name.data[i] > 0x7e) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid name \"%V\": printable ASCII "
                                   "characters only", value);
                return NGX_CONF_ERROR;
            }
        }

        return NGX_CONF_OK;
    }

    if (ngx_strncmp(value->data, "burst=", 6) == 0) {
        ra->burst_text = *value;
        ra->burst = ngx_atoi(value->data + 6, value->len - 6);

        if (ra->burst == NGX_ERROR || ra->burst > 1000000000) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid burst value \"%V\"", value);
            return NGX_CONF_ERROR;
        }

        return NGX_CONF_OK;
    }

    if (ngx_strncmp(value->data, "delay=", 6) == 0) {
        ra->delay_text = *value;
        ra->delay = ngx_atoi(value->data + 6, value->len - 6);

        if (ra->delay == NGX_ERROR || ra->delay > 1000000000) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid delay value \"%V\"", value);
            return NGX_CONF_ERROR;
        }

        return NGX_CONF_OK;
    }

    if (value->len == 7 && ngx_strncmp(value->data, "nodelay", 7) == 0) {
        ra->nodelay = 1;
        return NGX_CONF_OK;
    }

    if (value->len == 7 && ngx_strncmp(value->data, "dry_run", 7) == 0) {
        rule->dry_run = 1;
        return NGX_CONF_OK;
    }

    if (ngx_strncmp(value->data, "cost=", 5) == 0) {
        ra->cost_text = *value;
        return ngx_http_rl_rule_cost(cf, rule, value);
    }

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid parameter \"%V\"", value);
    return NGX_CONF_ERROR;
}


static char *
ngx_http_rl_rule_cost(ngx_conf_t *cf, ngx_http_rl_rule_t *rule,
    ngx_str_t *value)
{
    ngx_int_t   n;
    ngx_str_t   s;

    s.data = value->data + 5;
    s.len = value->len - 5;

    if (ngx_http_script_variables_count(&s) == 0) {
        n = ngx_atoi(s.data, s.len);

        if (n < 1 || n > NGX_HTTP_RL_MAX_COST) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid cost value \"%V\"", value);
            return NGX_CONF_ERROR;
        }

        rule->cost = (uint64_t) n;
        return NGX_CONF_OK;
    }

    if (ngx_http_rl_compile(cf, &s, &rule->cost_cv) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/* charge=VALUE (SPEC section 10): evaluated when the request ends
 * (src/http/charges.cpp) */

static char *
ngx_http_rl_rule_charge(ngx_conf_t *cf, ngx_http_rl_rule_t *rule,
    ngx_str_t *value)
{
    ngx_str_t  s;

    s.data = value->data + 7;
    s.len = value->len - 7;

    if (s.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid charge \"%V\"", value);
        return NGX_CONF_ERROR;
    }

    if (ngx_http_rl_compile(cf, &s, &rule->charge_cv) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static char *
ngx_http_rl_rule_finish(ngx_conf_t *cf, ngx_http_rl_rule_t *rule,
    ngx_http_rl_rule_args_t *ra)
{
    int         alg;
    char       *rv;
    ngx_str_t   calendar;
    ngx_uint_t  i;

    if (rule->zone == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"rl_rule\" must have \"zone\" parameter");
        return NGX_CONF_ERROR;
    }

    if (rule->key.value.data == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"rl_rule\" must have \"key\" parameter");
        return NGX_CONF_ERROR;
    }

    if (!ra->adaptive) {
        for (i = 0; i < 4; i++) {
            if (ra->adaptive_text[i].len) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid parameter \"%V\": it needs "
                                   "\"concurrency=auto\"",
                                   &ra->adaptive_text[i]);
                return NGX_CONF_ERROR;
            }
        }
    }

    if (ra->concurrency > 0 || ra->adaptive) {
        return ngx_http_rl_rule_inflight(cf, rule, ra);
    }

    if (ra->hold_text.len) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\": \"hold\" needs "
                           "\"concurrency\"", &ra->hold_text);
        return NGX_CONF_ERROR;
    }

    if (ra->rate.data == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"rl_rule\" must have \"rate\" or "
                           "\"concurrency\" parameter");
        return NGX_CONF_ERROR;
    }

    ngx_str_null(&calendar);

    rv = ngx_http_rl_rule_calendar(cf, rule, ra, &calendar);
    if (rv != NGX_CONF_OK) {
        return rv;
    }

    if (rule->calendar == NULL
        && rl_parse_rate((char *) ra->rate.data, ra->rate.len, &rule->limit,
                         &rule->window_us)
           != 0)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid rate \"%V\"", &ra->rate);
        return NGX_CONF_ERROR;
    }

    alg = rl_algorithm_from_name((char *) ra->algorithm.data,
                                 ra->algorithm.len);
    if (alg < 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid algorithm \"%V\"", &ra->algorithm);
        return NGX_CONF_ERROR;
    }

    rule->algorithm = (ngx_uint_t) alg;

    /* the log keeps no count a charge could add to */

    if (rule->charge_cv != NULL
        && ngx_strncmp(ra->algorithm.data, "sliding_log", 11) == 0)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\" for algorithm \"%V\"",
                           &ra->charge_text, &ra->algorithm);
        return NGX_CONF_ERROR;
    }

    /* the log holds N times per key, in Redis and in shared memory */

    if (rule->limit > NGX_HTTP_RL_MAX_LOG
        && ngx_strncmp(ra->algorithm.data, "sliding_log", 11) == 0)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "rate \"%V\" is too large for \"sliding_log\" "
                           "(at most %d requests per window)", &ra->rate,
                           NGX_HTTP_RL_MAX_LOG);
        return NGX_CONF_ERROR;
    }

    rv = ngx_http_rl_rule_shape(cf, rule, ra);
    if (rv != NGX_CONF_OK) {
        return rv;
    }

    /* SPEC: the name (default: the rate as written) is part of the
     * state's identity, so rules without name= and of other rates never
     * share state; a rule keeps its usage across a change of N under a
     * name= */
    return ngx_http_rl_rule_identity(cf, rule, &ra->rate, rule->window_us,
                                     rule->calendar ? &calendar : NULL);
}


/* A calendar rate (SPEC section 12): "Nr/w", "Nr/month", "Nr/y", and
 * "Nr/h", "Nr/d" with tz= or anchor=; counted as a fixed_window of
 * calendar periods in that zone (calendar_conf.cpp). Other rates take
 * neither tz= nor anchor=. *identity: what the state's id adds. */

static char *
ngx_http_rl_rule_calendar(ngx_conf_t *cf, ngx_http_rl_rule_t *rule,
    ngx_http_rl_rule_args_t *ra, ngx_str_t *identity)
{
    size_t     at;
    ngx_str_t  per;

    static ngx_str_t  fixed = ngx_string("fixed_window");

    if (rl_parse_calendar_rate((char *) ra->rate.data, ra->rate.len,
                               &rule->limit, &at)
        != 0)
    {
        if (ra->tz_text.len || ra->anchor_text.len) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid parameter \"%V\" with rate \"%V\": "
                               "\"%s\" takes a rate per hour, day, week, "
                               "month or year (\"r/h\", \"r/d\", \"r/w\", "
                               "\"r/month\", \"r/y\")",
                               ra->tz_text.len ? &ra->tz_text
                                               : &ra->anchor_text,
                               &ra->rate,
                               ra->tz_text.len ? "tz" : "anchor");
            return NGX_CONF_ERROR;
        }

        return NGX_CONF_OK;
    }

    per.data = ra->rate.data + at;
    per.len = ra->rate.len - at;

    /* "Nr/h" and "Nr/d" alone keep their meaning: windows of an hour or
     * a day from the epoch, any algorithm (docs/choices.md) */

    if ((per.len == 1 && (per.data[0] == 'h' || per.data[0] == 'd'))
        && ra->tz_text.len == 0 && ra->anchor_text.len == 0)
    {
        return NGX_CONF_OK;
    }

    if (ra->algorithm_text.len
        && (ra->algorithm.len != fixed.len
            || ngx_strncmp(ra->algorithm.data, fixed.data, fixed.len) != 0))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid algorithm \"%V\" for rate \"%V\"%s%V: "
                           "calendar periods are counted as a fixed_window "
                           "(leave \"algorithm\" out)",
                           &ra->algorithm, &ra->rate,
                           ra->tz_text.len ? " with " : "", &ra->tz_text);
        return NGX_CONF_ERROR;
    }

    ra->algorithm = fixed;

    return ngx_http_rl_calendar_conf(cf, rule, &per, &ra->tz_text,
                                     &ra->anchor_text, identity);
}


/* concurrency=N [hold=TIME] (SPEC section 9): slots, not a rate; what
 * a rate takes, it does not. Its state is named without the hold, so a
 * change of hold= keeps the slots held. */

static char *
ngx_http_rl_rule_inflight(ngx_conf_t *cf, ngx_http_rl_rule_t *rule,
    ngx_http_rl_rule_args_t *ra)
{
    ngx_uint_t   i;
    ngx_str_t   *rate[8];

    static ngx_str_t  nodelay = ngx_string("nodelay");

    rate[0] = &ra->rate_text;
    rate[1] = &ra->algorithm_text;
    rate[2] = &ra->burst_text;
    rate[3] = ra->nodelay ? &nodelay : &ra->delay_text;
    rate[4] = &ra->cost_text;
    rate[5] = &ra->charge_text;
    rate[6] = &ra->tz_text;
    rate[7] = &ra->anchor_text;

    for (i = 0; i < 8; i++) {
        if (rate[i]->len) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid parameter \"%V\" with \"%V\"",
                               rate[i], &ra->concurrency_text);
            return NGX_CONF_ERROR;
        }
    }

    rule->algorithm = RL_ALGORITHM_CONCURRENCY;
    rule->limit = (uint64_t) ra->concurrency;
    rule->window_us = (uint64_t) (ra->hold != NGX_CONF_UNSET_MSEC
                                  ? ra->hold : NGX_HTTP_RL_DEFAULT_HOLD)
                      * 1000;

    /* concurrency=auto: N is learnt (SPEC 13): limit is its min, burst
     * its max (adaptive_conf.cpp) */
    if (ra->adaptive
        && ngx_http_rl_adaptive_conf(cf, rule, ra->adaptive_text)
           != NGX_CONF_OK)
    {
        return NGX_CONF_ERROR;
    }

    return ngx_http_rl_rule_identity(cf, rule, &ra->concurrency_text, 0,
                                     NULL);
}


/* The rule's name (default: as written, `name`), its state's id (with
 * this window, and the algorithm's name or `algorithm` in its place: a
 * calendar rule's unit, zone and anchor), and its spec. */

static char *
ngx_http_rl_rule_identity(ngx_conf_t *cf, ngx_http_rl_rule_t *rule,
    ngx_str_t *name, uint64_t window_us, ngx_str_t *algorithm)
{
    size_t       len;
    const char  *alg;

    if (rule->name.len == 0) {
        rule->name = *name;
    }

    if (rule->name.len > NGX_HTTP_RL_MAX_NAME) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid name \"%V\": at most %d characters",
                           &rule->name, NGX_HTTP_RL_MAX_NAME);
        return NGX_CONF_ERROR;
    }

    alg = rl_algorithm_name((int) rule->algorithm, &len);

    if (algorithm != NULL) {
        alg = (const char *) algorithm->data;
        len = algorithm->len;
    }

    if (rl_rule_id((char *) rule->zone->name.data, rule->zone->name.len,
                   (char *) rule->name.data, rule->name.len, alg, len,
                   window_us, (char *) rule->key.value.data,
                   rule->key.value.len, rule->id)
        != 0)
    {
        return NGX_CONF_ERROR;
    }

    return ngx_http_rl_rule_spec(cf, rule);
}


/* burst=, delay= and nodelay, as the algorithm takes them. */

static char *
ngx_http_rl_rule_shape(ngx_conf_t *cf, ngx_http_rl_rule_t *rule,
    ngx_http_rl_rule_args_t *ra)
{
    int       alg = (int) rule->algorithm;
    uint64_t  capacity;

    if (ra->burst >= 0 && !rl_algorithm_takes_burst(alg)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\" for algorithm \"%V\"",
                           &ra->burst_text, &ra->algorithm);
        return NGX_CONF_ERROR;
    }

    if ((ra->delay >= 0 || ra->nodelay) && !rl_algorithm_takes_delay(alg)) {
        if (ra->nodelay) {
            ngx_str_set(&ra->delay_text, "nodelay");
        }

        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\" for algorithm \"%V\"",
                           &ra->delay_text, &ra->algorithm);
        return NGX_CONF_ERROR;
    }

    if (ra->delay >= 0 && ra->nodelay) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"delay\" and \"nodelay\" are mutually exclusive");
        return NGX_CONF_ERROR;
    }

    rule->burst = (ra->burst >= 0)
                  ? (uint64_t) ra->burst
                  : rl_algorithm_default_burst(alg, rule->limit);

    /* token_bucket's default, N: a key value's override of N sets it */
    rule->burst_follows = (ra->burst < 0 && rule->burst == rule->limit);

    if (rl_algorithm_takes_burst(alg) && rule->burst == 0
        && !rl_algorithm_takes_delay(alg))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid burst value \"%V\": a bucket of 0 "
                           "admits nothing", &ra->burst_text);
        return NGX_CONF_ERROR;
    }

    /* nodelay (the default): every admitted request passes at once */
    rule->delay = (ra->delay >= 0 && (uint64_t) ra->delay < rule->burst)
                  ? (uint64_t) ra->delay : rule->burst;

    if (!rl_algorithm_takes_delay(alg)) {
        rule->delay = 0;
    }

    /* a constant cost beyond what the rule ever holds would reject every
     * request, with a Retry-After that never comes true */
    capacity = rl_algorithm_capacity(alg, rule->limit, rule->burst);

    if (rule->cost_cv == NULL && rule->cost > capacity) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid cost value \"cost=%uL\": the rule "
                           "holds at most %uL, so no request would ever "
                           "pass", rule->cost, capacity);
        return NGX_CONF_ERROR;
    }

    if (!rl_algorithm_exact(alg, rule->limit, rule->window_us, rule->burst,
                            rule->delay,
                            rule->cost_cv ? rule->burst + 1 : rule->cost))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "rate \"%V\" with burst %uL is too large "
                           "for exact arithmetic", &ra->rate, rule->burst);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/* The script's spec of the rule (src/core/script.hpp), twice: enforced
 * and dry run (which of the two, rl_dry_run decides per request); and
 * its limit in decimal. */

static char *
ngx_http_rl_rule_spec(ngx_conf_t *cf, ngx_http_rl_rule_t *rule)
{
    int      kind;
    u_char  *p, cost[8];
    size_t   len;

    len = rl_spec_len((int) rule->algorithm, rule->name.len);

    p = ngx_pnalloc(cf->pool, 2 * len + NGX_INT64_LEN);
    if (p == NULL) {
        return NGX_CONF_ERROR;
    }

    /* X-RateLimit-Limit and $rl_limit, printed once */
    rule->limit_text.data = p;
    p = ngx_http_rl_decimal(p, (int64_t) rule->limit);
    rule->limit_text.len = p - rule->limit_text.data;

    rule->spec.data = p;
    rule->spec.len = len;
    kind = (rule->calendar != NULL ? RL_SPEC_CALENDAR : 0)
           | (rule->adaptive != NULL ? RL_SPEC_ADAPTIVE : 0);

    p = rl_spec_write(p, (int) rule->algorithm, (char *) rule->name.data,
                      rule->name.len, rule->limit, rule->window_us,
                      rule->burst, rule->delay, 0, (int) rule->burst_follows,
                      kind);

    rule->dry_spec.data = p;
    rule->dry_spec.len = len;
    (void) rl_spec_write(p, (int) rule->algorithm, (char *) rule->name.data,
                         rule->name.len, rule->limit, rule->window_us,
                         rule->burst, rule->delay, 1,
                         (int) rule->burst_follows, kind);

    /* what the deny cache keys on besides the state: a reload that
     * changes any of it starts afresh */

    ngx_memcpy(cost, &rule->cost, sizeof(cost));
    ngx_crc32_init(rule->config_crc);
    ngx_crc32_update(&rule->config_crc, rule->spec.data, rule->spec.len);
    ngx_crc32_update(&rule->config_crc, cost, sizeof(cost));
    ngx_crc32_final(rule->config_crc);

    /* concurrency=auto: a spec per priority level besides */
    return rule->adaptive != NULL ? ngx_http_rl_adaptive_specs(cf, rule)
                                  : NGX_CONF_OK;
}


/* A parameter's value with variables (key=, cost=, charge=), compiled
 * into *cv, made first when NULL. */

ngx_int_t
ngx_http_rl_compile(ngx_conf_t *cf, ngx_str_t *value,
    ngx_http_complex_value_t **cv)
{
    ngx_http_compile_complex_value_t  ccv;

    if (*cv == NULL) {
        *cv = ngx_palloc(cf->pool, sizeof(ngx_http_complex_value_t));
        if (*cv == NULL) {
            return NGX_ERROR;
        }
    }

    ngx_memzero(&ccv, sizeof(ngx_http_compile_complex_value_t));

    ccv.cf = cf;
    ccv.value = value;
    ccv.complex_value = *cv;

    return ngx_http_compile_complex_value(&ccv);
}
