/*
 * ngx_http_rl_module: rate limits kept in Redis, decided on nginx's own
 * event loop. This file is the module: commands, configuration,
 * variables, the PREACCESS handler, the LOG handler (charges, slots
 * released: SPEC sections 9 and 10), worker start and exit. rl_zone and
 * rl_rule are parsed in ngx_http_rl_directives.c, the headers added in
 * ngx_http_rl_headers.c; deciding a request is request.cpp's, the Redis
 * connection redis/link.cpp's.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_rl.h"


#define NGX_HTTP_RL_METRICS_SIZE             (512 * 1024)
/* about 8,000 rejected keys per MB (an entry and its name take a 128-byte
 * slab slot): 16 MB hold 130,000; pages are only used as entries come */
#define NGX_HTTP_RL_DENY_SIZE                (16 * 1024 * 1024)
/* the lease table: an entry per group of a lease= zone seen lately
 * (about 192 bytes), and a lease per hot one (about 512) */
#define NGX_HTTP_RL_LEASE_SIZE               (16 * 1024 * 1024)




static ngx_int_t ngx_http_rl_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_rl_log_handler(ngx_http_request_t *r);
static char *ngx_http_rl_metrics(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_rl_api(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static ngx_int_t ngx_http_rl_status_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_rl_rule_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_rl_figure_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_rl_rejected_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static void *ngx_http_rl_create_main_conf(ngx_conf_t *cf);
static char *ngx_http_rl_init_main_conf(ngx_conf_t *cf, void *conf);
static void *ngx_http_rl_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_rl_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);
static ngx_int_t ngx_http_rl_add_variables(ngx_conf_t *cf);
static ngx_int_t ngx_http_rl_init(ngx_conf_t *cf);
static ngx_int_t ngx_http_rl_init_process(ngx_cycle_t *cycle);
static void ngx_http_rl_exit_process(ngx_cycle_t *cycle);


static ngx_conf_enum_t  ngx_http_rl_headers_modes[] = {
    { ngx_string("off"), NGX_HTTP_RL_HEADERS_OFF },
    { ngx_string("on"), NGX_HTTP_RL_HEADERS_ON },
    { ngx_string("draft"), NGX_HTTP_RL_HEADERS_DRAFT },
    { ngx_null_string, 0 }
};


static ngx_conf_enum_t  ngx_http_rl_log_levels[] = {
    { ngx_string("info"), NGX_LOG_INFO },
    { ngx_string("notice"), NGX_LOG_NOTICE },
    { ngx_string("warn"), NGX_LOG_WARN },
    { ngx_string("error"), NGX_LOG_ERR },
    { ngx_null_string, 0 }
};


static ngx_command_t  ngx_http_rl_commands[] = {

    { ngx_string("rl_zone"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_1MORE,
      ngx_http_rl_zone,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("rl_rule"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_http_rl_rule,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("rl_status"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_rl_status,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_rl_loc_conf_t, status_code),
      NULL },

    { ngx_string("rl_headers"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_rl_enum,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_rl_loc_conf_t, headers),
      &ngx_http_rl_headers_modes },

    { ngx_string("rl_dry_run"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_rl_loc_conf_t, dry_run),
      NULL },

    { ngx_string("rl_log_level"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_rl_enum,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_rl_loc_conf_t, log_level),
      &ngx_http_rl_log_levels },

    { ngx_string("rl_metrics"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_rl_metrics,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("rl_fleet"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_1MORE,
      ngx_http_rl_fleet,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("rl_api"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS|NGX_CONF_TAKE1,
      ngx_http_rl_api,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("rl_quota"),
      NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_http_rl_quota,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_rl_module_ctx = {
    ngx_http_rl_add_variables,             /* preconfiguration */
    ngx_http_rl_init,                      /* postconfiguration */

    ngx_http_rl_create_main_conf,          /* create main configuration */
    ngx_http_rl_init_main_conf,            /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    ngx_http_rl_create_loc_conf,           /* create location configuration */
    ngx_http_rl_merge_loc_conf             /* merge location configuration */
};


ngx_module_t  ngx_http_rl_module = {
    NGX_MODULE_V1,
    &ngx_http_rl_module_ctx,               /* module context */
    ngx_http_rl_commands,                  /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    ngx_http_rl_init_process,              /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    ngx_http_rl_exit_process,              /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static ngx_http_variable_t  ngx_http_rl_vars[] = {

    { ngx_string("rl_status"), NULL, ngx_http_rl_status_variable, 0,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("rl_rule"), NULL, ngx_http_rl_rule_variable, 0,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("rl_limit"), NULL, ngx_http_rl_figure_variable, 0,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("rl_remaining"), NULL, ngx_http_rl_figure_variable, 1,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("rl_reset"), NULL, ngx_http_rl_figure_variable, 2,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("rl_rejected"), NULL, ngx_http_rl_rejected_variable, 0,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

      ngx_http_null_variable
};


static ngx_str_t  ngx_http_rl_status_text[] = {
    ngx_string(""),
    ngx_string("PASSED"),
    ngx_string("REJECTED"),
    ngx_string("ERROR"),
    ngx_string("DELAYED"),
    ngx_string("REJECTED_DRY_RUN")
};


static ngx_int_t
ngx_http_rl_handler(ngx_http_request_t *r)
{
    ngx_http_rl_loc_conf_t  *lcf;

    if (r != r->main) {
        return NGX_DECLINED;
    }

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_rl_module);

    if (lcf->rules == NULL) {
        return NGX_DECLINED;
    }

    return ngx_http_rl_decide(r, lcf);
}


/* The request ends: the charges of its rules with charge=, the slots of
 * its concurrency= rules released (registered only when some rule has
 * either) */

static ngx_int_t
ngx_http_rl_log_handler(ngx_http_request_t *r)
{
    if (r == r->main) {
        ngx_http_rl_request_end(r);
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_rl_status_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_rl_ctx_t  *ctx;
    ngx_str_t          *text;

    ctx = ngx_http_rl_get_ctx(r->main);

    text = &ngx_http_rl_status_text[(ctx && ctx->finished) ? ctx->status
                                                           : 0];

    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;
    v->len = text->len;
    v->data = text->data;

    return NGX_OK;
}


static ngx_int_t
ngx_http_rl_rule_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_rl_ctx_t   *ctx;
    ngx_http_rl_rule_t  *rule;

    ctx = ngx_http_rl_get_ctx(r->main);

    if (ctx == NULL || !ctx->finished || ctx->binding < 0) {
        v->not_found = 1;
        return NGX_OK;
    }

    rule = (ngx_http_rl_rule_t *) ctx->lcf->rules->elts + ctx->binding;

    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;
    v->len = rule->name.len;
    v->data = rule->name.data;

    return NGX_OK;
}


static ngx_int_t
ngx_http_rl_figure_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    int64_t              n;
    ngx_http_rl_ctx_t   *ctx;
    ngx_http_rl_rule_t  *rule;
    rl_outcome_t        *o;

    ctx = ngx_http_rl_get_ctx(r->main);

    if (ctx == NULL || !ctx->finished || ctx->binding < 0) {
        v->not_found = 1;
        return NGX_OK;
    }

    rule = (ngx_http_rl_rule_t *) ctx->lcf->rules->elts + ctx->binding;
    o = &ctx->outcomes[ctx->binding];

    switch (data) {
    case 0:
        if (o->limit > 0) {
            n = o->limit;  /* a key value's override */
            break;
        }

        v->data = rule->limit_text.data;
        v->len = rule->limit_text.len;
        v->valid = 1;
        v->no_cacheable = 1;
        v->not_found = 0;
        return NGX_OK;
    case 1:
        n = o->remaining;
        break;
    default:
        n = ngx_http_rl_reset_seconds(ctx);
    }

    v->data = ngx_pnalloc(r->pool, NGX_INT64_LEN);
    if (v->data == NULL) {
        return NGX_ERROR;
    }

    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;
    v->len = ngx_http_rl_decimal(v->data, n) - v->data;

    return NGX_OK;
}


/* Rule i (of the request's location) rejected it, and is enforced. */

static ngx_inline ngx_uint_t
ngx_http_rl_rejected(ngx_http_rl_ctx_t *ctx, ngx_http_rl_rule_t *rule,
    ngx_uint_t i)
{
    return ctx->decided[i] && ctx->outcomes[i].retry_ms > 0
           && !ngx_http_rl_dry_run(ctx, rule);
}


/* $rl_rejected: every enforced rule that rejected the request, the
 * binding one first, each name once as a quoted string ("daily",
 * "burst"): the members of a JSON array (a problem's
 * "violated-policies") and of a structured-field list alike, names
 * being printable ASCII. Empty when the request was not rejected. */

static ngx_int_t
ngx_http_rl_rejected_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    size_t               len;
    u_char              *p;
    ngx_uint_t           b, i, j, k, n, seen;
    ngx_http_rl_ctx_t   *ctx;
    ngx_http_rl_rule_t  *rules;

    ctx = ngx_http_rl_get_ctx(r->main);

    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;
    v->len = 0;
    v->data = (u_char *) "";

    if (ctx == NULL || !ctx->finished || ctx->binding < 0
        || ctx->status != NGX_HTTP_RL_STATUS_REJECTED)
    {
        return NGX_OK;
    }

    rules = ctx->lcf->rules->elts;
    n = ctx->lcf->rules->nelts;

    len = 0;
    for (i = 0; i < n; i++) {
        len += 2 * rules[i].name.len + 4;
    }

    p = ngx_pnalloc(r->pool, len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    v->data = p;

    /* the binding rule (k = 0), then the others in their order */

    b = (ngx_uint_t) ctx->binding;

    for (k = 0; k <= n; k++) {
        i = (k == 0) ? b : k - 1;

        if ((k > 0 && i == b) || !ngx_http_rl_rejected(ctx, &rules[i], i)) {
            continue;
        }

        /* a name written already: the binding rule's, or an earlier
         * rule's */
        seen = 0;
        for (j = 0; j < n && !seen && i != b; j++) {
            seen = (j == b || j < i)
                   && ngx_http_rl_rejected(ctx, &rules[j], j)
                   && rules[j].name.len == rules[i].name.len
                   && ngx_memcmp(rules[j].name.data, rules[i].name.data,
                                 rules[i].name.len) == 0;
        }

        if (seen) {
            continue;
        }

        if (p != v->data) {
            *p++ = ','; *p++ = ' ';
        }

        *p++ = '"';

        for (j = 0; j < rules[i].name.len; j++) {
            if (rules[i].name.data[j] == '"'
                || rules[i].name.data[j] == '\\')
            {
                *p++ = '\\';
            }

            *p++ = rules[i].name.data[j];
        }

        *p++ = '"';
    }

    v->len = p - v->data;

    return NGX_OK;
}


static void *
ngx_http_rl_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_rl_main_conf_t  *rmcf;

    rmcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_rl_main_conf_t));
    if (rmcf == NULL) {
        return NULL;
    }

    if (ngx_array_init(&rmcf->zones, cf->pool, 4,
                       sizeof(ngx_http_rl_zone_t *))
        != NGX_OK)
    {
        return NULL;
    }

    if (ngx_array_init(&rmcf->rules, cf->pool, 8,
                       sizeof(ngx_http_rl_rule_t *))
        != NGX_OK)
    {
        return NULL;
    }

    if (ngx_array_init(&rmcf->quotas, cf->pool, 1,
                       sizeof(ngx_http_rl_quota_t *))
        != NGX_OK)
    {
        return NULL;
    }

    rmcf->fleet = NGX_CONF_UNSET;
    rmcf->fleet_interval = NGX_CONF_UNSET_MSEC;
    if (ngx_array_init(&rmcf->time_zones, cf->pool, 2, sizeof(void *))
        != NGX_OK)
    {
        return NULL;
    }

    return rmcf;
}


static char *
ngx_http_rl_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_http_rl_main_conf_t *rmcf = conf;

    char                *clock, *flags;
    ngx_uint_t           i;
    ngx_http_rl_zone_t **zones;

    zones = rmcf->zones.elts;

    /* tests only (docs/testing.md): the script decides at nginx's time,
     * which libfaketime moves where it cannot move Redis' */

    clock = getenv("RL_TEST_CLOCK");

    if (clock != NULL && ngx_strcmp(clock, "nginx") == 0) {
        rmcf->nginx_clock = 1;
        ngx_log_error(NGX_LOG_WARN, cf->log, 0,
                      "RL_TEST_CLOCK=nginx: Redis decides at the time "
                      "nginx sends, not on its own clock (a test's "
                      "setting, never for production)");
    }

    /* tests only: a Cluster's calls go one per slot, as on a server
     * that refuses the script's flags (node_batch.cpp) */

    flags = getenv("RL_TEST_SCRIPT_FLAGS");

    if (flags != NULL && ngx_strcmp(flags, "refused") == 0) {
        rmcf->flags_refused = 1;
        ngx_log_error(NGX_LOG_WARN, cf->log, 0,
                      "RL_TEST_SCRIPT_FLAGS=refused: the script's flags "
                      "are refused, a Cluster's calls go one per slot (a "
                      "test's setting, never for production)");
    }

    for (i = 0; i < rmcf->zones.nelts; i++) {
        if (!zones[i]->declared) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "unknown rl_zone \"%V\" in %s:%ui",
                          &zones[i]->name, zones[i]->file, zones[i]->line);
            return NGX_CONF_ERROR;
        }
    }

    /* rl_fleet name=<the host name> interval=5s */
    ngx_conf_init_value(rmcf->fleet, 1);
    ngx_conf_init_msec_value(rmcf->fleet_interval, 5000);

    if (rmcf->fleet_name.len == 0) {
        rmcf->fleet_name = cf->cycle->hostname;
    }

    return NGX_CONF_OK;
}


static void *
ngx_http_rl_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_rl_loc_conf_t  *conf;

    conf = ngx_pcalloc(cf->pool, sizeof(ngx_http_rl_loc_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     conf->rules = NULL;
     *     conf->quota = NULL;
     */

    conf->status_code = NGX_CONF_UNSET_UINT;
    conf->headers = NGX_CONF_UNSET_UINT;
    conf->dry_run = NGX_CONF_UNSET;
    conf->log_level = NGX_CONF_UNSET_UINT;

    return conf;
}


static char *
ngx_http_rl_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_rl_loc_conf_t *prev = parent;
    ngx_http_rl_loc_conf_t *conf = child;

    /* rl_quota counts against nothing but the rules of its own place
     * (SPEC section 14): a server's quota is not spent by asking it */
    if (conf->rules == NULL && conf->quota == NULL) {
        conf->rules = prev->rules;
    }

    /* 0: not set, 429 (503 for a rejection by concurrency=auto, SPEC
     * 13: src/http/adaptive.cpp status()) */
    ngx_conf_merge_uint_value(conf->status_code, prev->status_code, 0);
    ngx_conf_merge_uint_value(conf->headers, prev->headers,
                              NGX_HTTP_RL_HEADERS_ON);
    ngx_conf_merge_value(conf->dry_run, prev->dry_run, 0);
    ngx_conf_merge_uint_value(conf->log_level, prev->log_level,
                              NGX_LOG_ERR);

    return NGX_CONF_OK;
}


static char *
ngx_http_rl_metrics(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_core_loc_conf_t  *clcf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_rl_metrics_handler;

    return NGX_CONF_OK;
}


/* rl_api [write=on|off]: the operator API and dashboard (api.cpp) */

static char *
ngx_http_rl_api(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_rl_loc_conf_t *lcf = conf;

    ngx_str_t                 *value;
    ngx_http_rl_main_conf_t   *rmcf;
    ngx_http_core_loc_conf_t  *clcf;

    if (lcf->api != NGX_HTTP_RL_API_OFF) {
        return "is duplicate";
    }

    lcf->api = NGX_HTTP_RL_API_READ;

    if (cf->args->nelts == 2) {
        value = cf->args->elts;

        if (ngx_strcmp(value[1].data, "write=on") == 0) {
            lcf->api = NGX_HTTP_RL_API_WRITE;

        } else if (ngx_strcmp(value[1].data, "write=off") != 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid parameter \"%V\"", &value[1]);
            return NGX_CONF_ERROR;
        }
    }

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_rl_api_handler;

    rmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_rl_module);
    rmcf->api = 1;

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_rl_add_variables(ngx_conf_t *cf)
{
    ngx_http_variable_t  *var, *v;

    for (v = ngx_http_rl_vars; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = v->get_handler;
        var->data = v->data;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_rl_init(ngx_conf_t *cf)
{
    ngx_str_t                   name = ngx_string("rl_metrics_5");
    /* named with their layout's version (src/shm/deny_cache.cpp Shared,
     * src/http/metrics.cpp Entry and the stats in ngx_http_rl.h,
     * src/shm/lease.hpp; the embedded store's, src/shm/store.cpp, in
     * ngx_http_rl_zone_embedded()): a reload onto a build of another
     * layout makes a new zone */
    ngx_str_t                   deny = ngx_string("rl_deny_cache_3");
    ngx_str_t                   leases = ngx_string("rl_leases_2");
    ngx_str_t                   top = ngx_string("rl_top_2");
    ngx_str_t                   live = ngx_string("rl_live_1");
    ngx_str_t                   adaptive = ngx_string("rl_adaptive_1");
    size_t                      size;
    ngx_uint_t                  i;
    ngx_http_rl_zone_t        **zones;
    ngx_http_handler_pt        *h;
    ngx_http_rl_main_conf_t    *rmcf;
    ngx_http_core_loc_conf_t   *clcf;
    ngx_http_core_main_conf_t  *cmcf;

    rmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_rl_module);
    zones = rmcf->zones.elts;

    if (ngx_http_rl_names_init(cf, rmcf) != NGX_OK
        || ngx_http_rl_quota_conf(cf, rmcf) != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* live limits and trials (SPEC section 11): what the fleet or this
     * instance's API set, read by every worker's requests */
    if (rmcf->rules.nelts) {
        if (ngx_http_rl_live_prepare(cf, rmcf) != NGX_OK) {
            return NGX_ERROR;
        }

        rmcf->live = ngx_shared_memory_add(cf, &live,
                                           ngx_http_rl_live_size(rmcf),
                                           &ngx_http_rl_module);
        if (rmcf->live == NULL) {
            return NGX_ERROR;
        }

        rmcf->live->init = ngx_http_rl_live_init_zone;
        rmcf->live->data = rmcf;
    }

    /* concurrency=auto (SPEC 13): the samples and N of its rules */
    size = ngx_http_rl_adaptive_size(rmcf);

    if (size) {
        rmcf->adaptive = ngx_shared_memory_add(cf, &adaptive, size,
                                               &ngx_http_rl_module);
        if (rmcf->adaptive == NULL) {
            return NGX_ERROR;
        }

        rmcf->adaptive->init = ngx_http_rl_adaptive_init_zone;
        rmcf->adaptive->data = rmcf;
    }

    for (i = 0; i < rmcf->zones.nelts; i++) {
        if (!ngx_http_rl_embedded(zones[i])) {
            rmcf->deny = ngx_shared_memory_add(cf, &deny,
                                               NGX_HTTP_RL_DENY_SIZE,
                                               &ngx_http_rl_module);
            if (rmcf->deny == NULL) {
                return NGX_ERROR;
            }

            rmcf->deny->init = ngx_http_rl_deny_init_zone;
            rmcf->deny->data = rmcf;
            break;
        }
    }

    for (i = 0; i < rmcf->zones.nelts; i++) {
        if (zones[i]->lease) {
            rmcf->leases = ngx_shared_memory_add(cf, &leases,
                                                 NGX_HTTP_RL_LEASE_SIZE,
                                                 &ngx_http_rl_module);
            if (rmcf->leases == NULL) {
                return NGX_ERROR;
            }

            rmcf->leases->init = ngx_http_rl_lease_init_zone;
            rmcf->leases->data = rmcf;
            break;
        }
    }

    if (rmcf->zones.nelts) {
        rmcf->metrics = ngx_shared_memory_add(cf, &name,
                                              NGX_HTTP_RL_METRICS_SIZE,
                                              &ngx_http_rl_module);
        if (rmcf->metrics == NULL) {
            return NGX_ERROR;
        }

        rmcf->metrics->init = ngx_http_rl_metrics_init_zone;
        rmcf->metrics->data = rmcf;
    }

    /* the top limited keys, for the operator API only: without rl_api
     * the allow path does not look for them */
    if (rmcf->api && rmcf->rules.nelts) {
        rmcf->top = ngx_shared_memory_add(cf, &top,
                                          ngx_http_rl_top_size(rmcf),
                                          &ngx_http_rl_module);
        if (rmcf->top == NULL) {
            return NGX_ERROR;
        }

        rmcf->top->init = ngx_http_rl_top_init_zone;
        rmcf->top->data = rmcf;
    }
    ngx_http_rl_shm_check(cf, rmcf);

    /* the fleet (SPEC section 11): this instance's id, kept across
     * reloads, for zones with Redis */
    for (i = 0; rmcf->fleet && i < rmcf->zones.nelts; i++) {
        if (!ngx_http_rl_embedded(zones[i])) {
            if (ngx_http_rl_fleet_conf(cf, rmcf) != NGX_OK) {
                return NGX_ERROR;
            }

            break;
        }
    }

    /* the http block's resolver: names of redis=, cluster= and
     * sentinel= are looked up again through it at each connect (where
     * it has no "resolver", nginx gave it one with no server) */
    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);

    if (clcf->resolver != NULL && clcf->resolver->connections.nelts > 0) {
        rmcf->resolver = clcf->resolver;
        rmcf->resolver_timeout = clcf->resolver_timeout;
    }

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_PREACCESS_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_rl_handler;

    if (ngx_http_rl_after_rules(rmcf)) {
        h = ngx_array_push(&cmcf->phases[NGX_HTTP_LOG_PHASE].handlers);
        if (h == NULL) {
            return NGX_ERROR;
        }

        *h = ngx_http_rl_log_handler;
    }

    ngx_http_rl_header_filter_init();

    return NGX_OK;
}


static ngx_int_t
ngx_http_rl_init_process(ngx_cycle_t *cycle)
{
    ngx_http_rl_main_conf_t  *rmcf;

    if (ngx_process != NGX_PROCESS_WORKER
        && ngx_process != NGX_PROCESS_SINGLE)
    {
        return NGX_OK;
    }

    rmcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_rl_module);

    if (rmcf == NULL || rmcf->zones.nelts == 0) {
        return NGX_OK;
    }

    ngx_http_rl_nginx_clock = rmcf->nginx_clock;
    ngx_http_rl_script_flags_refused = rmcf->flags_refused;

    if (ngx_http_rl_stores_init(cycle, rmcf) != NGX_OK
        || ngx_http_rl_inflight_init(cycle, rmcf) != NGX_OK
        || ngx_http_rl_charges_init(cycle, rmcf) != NGX_OK
        || ngx_http_rl_fleet_init(cycle, rmcf) != NGX_OK
        || ngx_http_rl_adaptive_init(cycle, rmcf) != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_rl_leases_init(cycle, rmcf);
}


static void
ngx_http_rl_exit_process(ngx_cycle_t *cycle)
{
    ngx_http_rl_main_conf_t  *rmcf;

    rmcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_rl_module);

    if (rmcf != NULL) {
        /* what leases hold goes back, charges waiting to go again go,
         * and what requests hold in slots is released, while the links
         * are there */
        ngx_http_rl_leases_exit(rmcf);
        ngx_http_rl_charges_exit(rmcf);
        ngx_http_rl_inflight_exit(rmcf);
        ngx_http_rl_fleet_exit(rmcf);
        ngx_http_rl_adaptive_exit(rmcf);
        ngx_http_rl_stores_free(rmcf);
        ngx_http_rl_fleet_free(rmcf);
        ngx_http_rl_leases_free(rmcf);
        ngx_http_rl_inflight_free(rmcf);
        ngx_http_rl_charges_free(rmcf);
    }
}
