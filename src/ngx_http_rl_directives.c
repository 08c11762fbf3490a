/*
 * ngx_http_rl_directives.c: rl_zone and rl_rule, parsed and checked the
 * way limit_req's directives are, errors in nginx's words.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <hiredis/hiredis.h>

#include "ngx_http_rl.h"


#define NGX_HTTP_RL_DEFAULT_TIMEOUT          100
#define NGX_HTTP_RL_DEFAULT_CONNECT_TIMEOUT  1000
#define NGX_HTTP_RL_DEFAULT_PORT             6379
#define NGX_HTTP_RL_DEFAULT_SENTINEL_PORT    26379
#define NGX_HTTP_RL_DEFAULT_SIZE             (10 * 1024 * 1024)


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
} ngx_http_rl_rule_args_t;



/* A row of rl_zone's parameter table (see ngx_http_rl_zone_params). */
typedef struct {
    ngx_str_t                   name;
    char                     *(*set)(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
                                     ngx_str_t *value, ngx_str_t *arg,
                                     void *field);
    ngx_uint_t                  offset;
} ngx_http_rl_zone_param_t;

static char *ngx_http_rl_zone_param(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value);
static char *ngx_http_rl_zone_store(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value, ngx_str_t *arg, void *field);
static char *ngx_http_rl_zone_str(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value, ngx_str_t *arg, void *field);
static char *ngx_http_rl_zone_prefix(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value, ngx_str_t *arg, void *field);
static char *ngx_http_rl_zone_db(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value, ngx_str_t *arg, void *field);
static char *ngx_http_rl_zone_msec(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value, ngx_str_t *arg, void *field);
static char *ngx_http_rl_zone_failure(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value, ngx_str_t *arg, void *field);
static char *ngx_http_rl_zone_size(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value, ngx_str_t *arg, void *field);
static char *ngx_http_rl_zone_tls_on(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value, ngx_str_t *arg, void *field);
static char *ngx_http_rl_zone_on_off(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value, ngx_str_t *arg, void *field);
static char *ngx_http_rl_zone_name(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value, ngx_str_t *arg, void *field);
static char *ngx_http_rl_zone_file(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value, ngx_str_t *arg, void *field);
static char *ngx_http_rl_zone_tls(ngx_conf_t *cf, ngx_http_rl_zone_t *z);
static ngx_int_t ngx_http_rl_tls_server_name(ngx_conf_t *cf,
    ngx_http_rl_zone_t *z);
static char *ngx_http_rl_zone_lease(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value, ngx_str_t *arg, void *field);
static char *ngx_http_rl_zone_redis(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value);
static char *ngx_http_rl_zone_list(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value);
static char *ngx_http_rl_zone_sentinel(ngx_conf_t *cf, ngx_http_rl_zone_t *z);
static ngx_int_t ngx_http_rl_server(ngx_conf_t *cf, ngx_str_t *addr,
    ngx_http_rl_server_t *server, ngx_str_t *value, ngx_int_t port);
static char *ngx_http_rl_zone_embedded(ngx_conf_t *cf, ngx_http_rl_zone_t *z);
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
static ngx_int_t ngx_http_rl_compile(ngx_conf_t *cf, ngx_str_t *value,
    ngx_http_complex_value_t **cv);
static char *ngx_http_rl_rule_spec(ngx_conf_t *cf, ngx_http_rl_rule_t *rule);
static ngx_http_rl_zone_t *ngx_http_rl_find_zone(ngx_conf_t *cf,
    ngx_str_t *name);
static ngx_int_t ngx_http_rl_duplicate(ngx_conf_t *cf, ngx_str_t *value,
    ngx_uint_t first, ngx_uint_t i);



/* rl_zone's parameters: a row and a setter each, as nginx's commands */
static ngx_http_rl_zone_param_t  ngx_http_rl_zone_params[] = {

    { ngx_string("redis="), ngx_http_rl_zone_store, 0 },

    { ngx_string("cluster="), ngx_http_rl_zone_store, 0 },

    { ngx_string("sentinel="), ngx_http_rl_zone_store, 0 },

    { ngx_string("master="), ngx_http_rl_zone_name,
      offsetof(ngx_http_rl_zone_t, master) },

    { ngx_string("sentinel_username="), ngx_http_rl_zone_str,
      offsetof(ngx_http_rl_zone_t, sentinel_username) },

    { ngx_string("sentinel_password="), ngx_http_rl_zone_str,
      offsetof(ngx_http_rl_zone_t, sentinel_password) },

    { ngx_string("username="), ngx_http_rl_zone_str,
      offsetof(ngx_http_rl_zone_t, username) },

    { ngx_string("password="), ngx_http_rl_zone_str,
      offsetof(ngx_http_rl_zone_t, password) },

    { ngx_string("prefix="), ngx_http_rl_zone_prefix,
      offsetof(ngx_http_rl_zone_t, prefix) },

    { ngx_string("db="), ngx_http_rl_zone_db,
      offsetof(ngx_http_rl_zone_t, db) },

    { ngx_string("timeout="), ngx_http_rl_zone_msec,
      offsetof(ngx_http_rl_zone_t, timeout) },

    { ngx_string("connect_timeout="), ngx_http_rl_zone_msec,
      offsetof(ngx_http_rl_zone_t, connect_timeout) },

    { ngx_string("failure="), ngx_http_rl_zone_failure,
      offsetof(ngx_http_rl_zone_t, failure) },

    { ngx_string("size="), ngx_http_rl_zone_size,
      offsetof(ngx_http_rl_zone_t, size) },

    { ngx_string("tls"), ngx_http_rl_zone_tls_on,
      offsetof(ngx_http_rl_zone_t, tls.enabled) },

    { ngx_string("tls_verify="), ngx_http_rl_zone_on_off,
      offsetof(ngx_http_rl_zone_t, tls.verify) },

    { ngx_string("tls_server_name="), ngx_http_rl_zone_name,
      offsetof(ngx_http_rl_zone_t, tls.server_name) },

    { ngx_string("tls_ca="), ngx_http_rl_zone_file,
      offsetof(ngx_http_rl_zone_t, tls.ca) },

    { ngx_string("tls_cert="), ngx_http_rl_zone_file,
      offsetof(ngx_http_rl_zone_t, tls.cert) },

    { ngx_string("tls_key="), ngx_http_rl_zone_file,
      offsetof(ngx_http_rl_zone_t, tls.key) },
    { ngx_string("lease="), ngx_http_rl_zone_lease,
      offsetof(ngx_http_rl_zone_t, lease) },

    { ngx_null_string, NULL, 0 }
};

char *
ngx_http_rl_zone(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    char                *rv;
    ngx_str_t           *value;
    ngx_uint_t           i;
    ngx_http_rl_zone_t  *z;

    value = cf->args->elts;

    if (value[1].len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid zone name \"%V\"", &value[1]);
        return NGX_CONF_ERROR;
    }

    if (value[1].len > NGX_HTTP_RL_MAX_NAME) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid zone name \"%V\": at most %d characters",
                           &value[1], NGX_HTTP_RL_MAX_NAME);
        return NGX_CONF_ERROR;
    }

    z = ngx_http_rl_find_zone(cf, &value[1]);
    if (z == NULL) {
        return NGX_CONF_ERROR;
    }

    if (z->declared) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "duplicate rl_zone \"%V\"", &value[1]);
        return NGX_CONF_ERROR;
    }

    z->declared = 1;

    for (i = 2; i < cf->args->nelts; i++) {
        if (ngx_http_rl_duplicate(cf, value, 2, i) != NGX_OK) {
            return NGX_CONF_ERROR;
        }

        rv = ngx_http_rl_zone_param(cf, z, &value[i]);
        if (rv != NGX_CONF_OK) {
            return rv;
        }
    }

    if (ngx_http_rl_zone_sentinel(cf, z) != NGX_CONF_OK) {
        return NGX_CONF_ERROR;
    }

    if (ngx_http_rl_zone_tls(cf, z) != NGX_CONF_OK) {
        return NGX_CONF_ERROR;
    }

    if (z->addr.len == 0) {
        if (z->lease) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"lease\" needs \"redis\", \"cluster\" or "
                               "\"sentinel\": a zone without them decides "
                               "in this instance already");
            return NGX_CONF_ERROR;
        }

        if (z->failure == NGX_HTTP_RL_FAILURE_LOCAL) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"failure=local\" needs \"redis\": "
                               "a zone without it is local already");
            return NGX_CONF_ERROR;
        }

        return ngx_http_rl_zone_embedded(cf, z);
    }

    if (z->failure == NGX_HTTP_RL_FAILURE_LOCAL) {
        /* the store that decides while Redis cannot */
        if (ngx_http_rl_zone_embedded(cf, z) != NGX_CONF_OK) {
            return NGX_CONF_ERROR;
        }

    } else if (z->size) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"size\" is for a zone without \"redis\" "
                           "or with \"failure=local\"");
        return NGX_CONF_ERROR;
    }

    /* AUTH takes a user only with a password: alone, it would be
     * dropped, and the connection would run as the default user */
    if (z->username.len && z->password.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"username=%V\" needs \"password\"",
                           &z->username);
        return NGX_CONF_ERROR;
    }

    if (z->prefix.data == NULL) {
        ngx_str_set(&z->prefix, "rl:");
    }

    /* a lease is the zone's across reloads while it names the same keys
     * on the same server */
    ngx_crc32_init(z->lease_crc);
    ngx_crc32_update(&z->lease_crc, z->name.data, z->name.len);
    ngx_crc32_update(&z->lease_crc, (u_char *) "", 1);
    ngx_crc32_update(&z->lease_crc, z->prefix.data, z->prefix.len);
    ngx_crc32_update(&z->lease_crc, (u_char *) "", 1);
    ngx_crc32_update(&z->lease_crc, z->addr.data, z->addr.len);
    ngx_crc32_update(&z->lease_crc, (u_char *) "", 1);
    ngx_crc32_update(&z->lease_crc, z->master.data, z->master.len);
    ngx_crc32_update(&z->lease_crc, (u_char *) &z->db, sizeof(z->db));
    ngx_crc32_final(z->lease_crc);

    if (z->nseeds == 0) {
        return NGX_CONF_OK;
    }

    if (z->db != 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"db=%i\": a Redis Cluster has only db 0",
                           z->db);
        return NGX_CONF_ERROR;
    }

    /* the key value is the hash tag: every key of one value, on one
     * slot (a brace in the prefix would make it the tag) */
    if (ngx_strlchr(z->prefix.data, z->prefix.data + z->prefix.len, '{')
        || ngx_strlchr(z->prefix.data, z->prefix.data + z->prefix.len, '}'))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "prefix \"%V\" holds a brace: with \"cluster\" "
                           "the key value is the hash tag", &z->prefix);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/* A zone parameter: the row of ngx_http_rl_zone_params that names it
 * ("word=" takes a value, a bare word is a flag), its setter called with
 * the value after "=" and the field at the row's offset. */

static char *
ngx_http_rl_zone_param(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value)
{
    ngx_str_t                  arg;
    ngx_http_rl_zone_param_t  *p;

    for (p = ngx_http_rl_zone_params; p->name.len; p++) {
        if (p->name.data[p->name.len - 1] == '=') {
            if (value->len < p->name.len
                || ngx_strncmp(value->data, p->name.data, p->name.len) != 0)
            {
                continue;
            }

        } else if (value->len != p->name.len
                   || ngx_strncmp(value->data, p->name.data, p->name.len)
                      != 0)
        {
            continue;
        }

        arg.data = value->data + p->name.len;
        arg.len = value->len - p->name.len;

        return p->set(cf, z, value, &arg, (char *) z + p->offset);
    }

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid parameter \"%V\"", value);
    return NGX_CONF_ERROR;
}


/* redis=, cluster= and sentinel=: one store, given once */

static char *
ngx_http_rl_zone_store(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value, ngx_str_t *arg, void *field)
{
    if (z->addr.data != NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V\": \"redis\", \"cluster\" and "
                           "\"sentinel\" exclude each other", value);
        return NGX_CONF_ERROR;
    }

    if (value->data[0] == 'r') {
        return ngx_http_rl_zone_redis(cf, z, value);
    }

    return ngx_http_rl_zone_list(cf, z, value);
}


static char *
ngx_http_rl_zone_str(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value, ngx_str_t *arg, void *field)
{
    *(ngx_str_t *) field = *arg;
    return NGX_CONF_OK;
}


static char *
ngx_http_rl_zone_prefix(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value, ngx_str_t *arg, void *field)
{
    if (arg->len > NGX_HTTP_RL_MAX_PREFIX) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "prefix \"%V\" is longer than %d bytes", arg,
                           NGX_HTTP_RL_MAX_PREFIX);
        return NGX_CONF_ERROR;
    }

    *(ngx_str_t *) field = *arg;
    return NGX_CONF_OK;
}


static char *
ngx_http_rl_zone_db(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value, ngx_str_t *arg, void *field)
{
    ngx_int_t  n;

    n = ngx_atoi(arg->data, arg->len);

    if (n == NGX_ERROR) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid db \"%V\"", value);
        return NGX_CONF_ERROR;
    }

    *(ngx_int_t *) field = n;
    return NGX_CONF_OK;
}


/* timeout=, connect_timeout=: an nginx time of at least 1ms */

static char *
ngx_http_rl_zone_msec(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value, ngx_str_t *arg, void *field)
{
    ngx_int_t  n;

    n = ngx_parse_time(arg, 0);

    if (n == NGX_ERROR || n == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid %*s \"%V\"",
                           arg->data - 1 - value->data, value->data, arg);
        return NGX_CONF_ERROR;
    }

    *(ngx_msec_t *) field = (ngx_msec_t) n;
    return NGX_CONF_OK;
}


static char *
ngx_http_rl_zone_failure(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value, ngx_str_t *arg, void *field)
{
    ngx_uint_t  *np = field;

    if (arg->len == 4 && ngx_strncmp(arg->data, "open", 4) == 0) {
        *np = NGX_HTTP_RL_FAILURE_OPEN;

    } else if (arg->len == 6 && ngx_strncmp(arg->data, "closed", 6) == 0) {
        *np = NGX_HTTP_RL_FAILURE_CLOSED;

    } else if (arg->len == 5 && ngx_strncmp(arg->data, "local", 5) == 0) {
        *np = NGX_HTTP_RL_FAILURE_LOCAL;

    } else {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid failure \"%V\"", arg);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static char *
ngx_http_rl_zone_size(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value, ngx_str_t *arg, void *field)
{
    ngx_int_t  n;

    n = ngx_parse_size(arg);

    if (n == NGX_ERROR || n < (ngx_int_t) (8 * ngx_pagesize)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid size \"%V\"", arg);
        return NGX_CONF_ERROR;
    }

    *(size_t *) field = (size_t) n;
    return NGX_CONF_OK;
}


/* tls: a bare word, refused by a module built without TLS */

static char *
ngx_http_rl_zone_tls_on(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value, ngx_str_t *arg, void *field)
{
#if (NGX_HTTP_RL_TLS)
    *(ngx_flag_t *) field = 1;
    return NGX_CONF_OK;
#else
    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "\"tls\" needs the module built with hiredis 1.x "
                       "and its SSL library (this one was built with "
                       "hiredis %d.%d)", HIREDIS_MAJOR, HIREDIS_MINOR);
    return NGX_CONF_ERROR;
#endif
}


static char *
ngx_http_rl_zone_on_off(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value, ngx_str_t *arg, void *field)
{
    if (arg->len == 2 && ngx_strncmp(arg->data, "on", 2) == 0) {
        *(ngx_flag_t *) field = 1;

    } else if (arg->len == 3 && ngx_strncmp(arg->data, "off", 3) == 0) {
        *(ngx_flag_t *) field = 0;

    } else {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid %*s \"%V\", it must be \"on\" or "
                           "\"off\"", arg->data - 1 - value->data,
                           value->data, arg);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/* lease=TIME: from 1ms to 10s (SPEC section 6) */

#define NGX_HTTP_RL_MAX_LEASE  10000

static char *
ngx_http_rl_zone_lease(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value, ngx_str_t *arg, void *field)
{
    ngx_int_t  n;

    n = ngx_parse_time(arg, 0);

    if (n == NGX_ERROR || n == 0 || n > NGX_HTTP_RL_MAX_LEASE) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid lease \"%V\": from 1ms to 10s", arg);
        return NGX_CONF_ERROR;
    }

    *(ngx_msec_t *) field = (ngx_msec_t) n;
    return NGX_CONF_OK;
}


/* a name OpenSSL reads: not empty, NUL-terminated (the value ends its
 * word, and nginx ends words with a NUL) */

static char *
ngx_http_rl_zone_name(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value, ngx_str_t *arg, void *field)
{
    if (arg->len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid %*s \"\"",
                           arg->data - 1 - value->data, value->data);
        return NGX_CONF_ERROR;
    }

    *(ngx_str_t *) field = *arg;
    return NGX_CONF_OK;
}


/* tls_ca=, tls_cert=, tls_key=: relative to the configuration's
 * directory, as nginx's own ssl_certificate */

static char *
ngx_http_rl_zone_file(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value, ngx_str_t *arg, void *field)
{
    ngx_str_t  *file = field;

    if (ngx_http_rl_zone_name(cf, z, value, arg, field) != NGX_CONF_OK) {
        return NGX_CONF_ERROR;
    }

    if (ngx_conf_full_name(cf->cycle, file, 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/* tls and its parameters, checked together once all are read; the TLS
 * context is made now, so that nginx -t reads its files */

static char *
ngx_http_rl_zone_tls(ngx_conf_t *cf, ngx_http_rl_zone_t *z)
{
    char               *given;
    ngx_http_rl_tls_t  *tls = &z->tls;

    if (!tls->enabled) {
        given = tls->verify != NGX_CONF_UNSET ? "tls_verify"
                : tls->server_name.len ? "tls_server_name"
                : tls->ca.len ? "tls_ca"
                : tls->cert.len ? "tls_cert"
                : tls->key.len ? "tls_key" : NULL;

        if (given) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"%s\" needs \"tls\"", given);
            return NGX_CONF_ERROR;
        }

        return NGX_CONF_OK;
    }

    if (z->addr.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"tls\" needs \"redis\", \"cluster\" or "
                           "\"sentinel\"");
        return NGX_CONF_ERROR;
    }

    if (z->port == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"tls\" needs a TCP address, not \"%V\"",
                           &z->addr);
        return NGX_CONF_ERROR;
    }

    if ((tls->cert.len == 0) != (tls->key.len == 0)) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%s\" needs \"%s\"",
                           tls->cert.len ? "tls_cert" : "tls_key",
                           tls->cert.len ? "tls_key" : "tls_cert");
        return NGX_CONF_ERROR;
    }

    if (tls->verify == NGX_CONF_UNSET) {
        tls->verify = 1;
    }

    if (tls->server_name.len == 0
        && ngx_http_rl_tls_server_name(cf, z) != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    return ngx_http_rl_tls_conf(cf, z);
}


/* The name a node's certificate is checked against by default: the
 * host of redis= as written; for cluster= and sentinel=, the first node
 * written as a name, else none (each node, the master a sentinel names
 * too, is checked against its own address). */

static ngx_int_t
ngx_http_rl_tls_server_name(ngx_conf_t *cf, ngx_http_rl_zone_t *z)
{
    u_char     *p, *last, *end, *stop;
    ngx_str_t   host;
#if (NGX_HAVE_INET6)
    u_char      a6[16];
#endif

    p = z->addr.data;
    last = p + z->addr.len;

    while (p < last) {
        end = ngx_strlchr(p, last, ',');
        if (end == NULL) {
            end = last;
        }

        host.data = p;

        /* [v6]:port, host:port or host */
        if (*p == '[') {
            stop = ngx_strlchr(p, end, ']');
            host.data = p + 1;

        } else {
            stop = ngx_strlchr(p, end, ':');
        }

        host.len = (stop ? stop : end) - host.data;

        if ((z->nseeds == 0 && z->nsentinels == 0)
            || (ngx_inet_addr(host.data, host.len) == INADDR_NONE
#if (NGX_HAVE_INET6)
                && ngx_inet6_addr(host.data, host.len, a6) != NGX_OK
#endif
            ))
        {
            z->tls.server_name.data = ngx_pnalloc(cf->pool, host.len + 1);
            if (z->tls.server_name.data == NULL) {
                return NGX_ERROR;
            }

            ngx_memcpy(z->tls.server_name.data, host.data, host.len);
            z->tls.server_name.data[host.len] = '\0';
            z->tls.server_name.len = host.len;

            return NGX_OK;
        }

        p = end + 1;
    }

    return NGX_OK;
}


/* Without redis=, or for failure=local: the embedded store, in shared
 * memory. */

static char *
ngx_http_rl_zone_embedded(ngx_conf_t *cf, ngx_http_rl_zone_t *z)
{
    ngx_str_t  name;

    if (z->size == 0) {
        z->size = NGX_HTTP_RL_DEFAULT_SIZE;
    }

    /* its layout's version (src/shm_store.cpp Shared, Node) */
    name.len = sizeof("rl_zone_3:") - 1 + z->name.len;
    name.data = ngx_pnalloc(cf->pool, name.len);
    if (name.data == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_sprintf(name.data, "rl_zone_3:%V", &z->name);

    z->shm_zone = ngx_shared_memory_add(cf, &name, z->size,
                                        &ngx_http_rl_module);
    if (z->shm_zone == NULL) {
        return NGX_CONF_ERROR;
    }

    z->shm_zone->init = ngx_http_rl_shm_init_zone;
    z->shm_zone->data = z;

    return NGX_CONF_OK;
}


static char *
ngx_http_rl_zone_redis(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value)
{
    size_t                 len;
    ngx_http_rl_server_t   server;

    z->addr.data = value->data + 6;
    z->addr.len = value->len - 6;

    if (ngx_strncmp(z->addr.data, "unix:", 5) == 0) {
        len = z->addr.len - 5;

        if (len == 0 || len >= 108) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid unix socket path in \"%V\"", value);
            return NGX_CONF_ERROR;
        }

        z->host.data = ngx_pnalloc(cf->pool, len + 1);
        if (z->host.data == NULL) {
            return NGX_CONF_ERROR;
        }

        ngx_memcpy(z->host.data, z->addr.data + 5, len);
        z->host.data[len] = '\0';
        z->host.len = len;
        z->port = 0;

        return NGX_CONF_OK;
    }

    if (ngx_http_rl_server(cf, &z->addr, &server, value,
                           NGX_HTTP_RL_DEFAULT_PORT)
        != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    z->host = server.host;
    z->port = server.port;
    z->name_host = server.name;

    return NGX_CONF_OK;
}


/* cluster=ADDR[,ADDR...] (the seeds) and sentinel=ADDR[,ADDR...]: each
 * resolved now */

#define NGX_HTTP_RL_MAX_SEEDS  16

static char *
ngx_http_rl_zone_list(ngx_conf_t *cf, ngx_http_rl_zone_t *z,
    ngx_str_t *value)
{
    u_char                *p, *last, *comma;
    ngx_int_t              port;
    ngx_str_t              addr;
    ngx_uint_t            *n;
    ngx_http_rl_server_t  *servers;

    if (value->data[0] == 'c') {
        z->addr.data = value->data + sizeof("cluster=") - 1;
        n = &z->nseeds;
        port = NGX_HTTP_RL_DEFAULT_PORT;

    } else {
        z->addr.data = value->data + sizeof("sentinel=") - 1;
        n = &z->nsentinels;
        port = NGX_HTTP_RL_DEFAULT_SENTINEL_PORT;
    }

    z->addr.len = value->data + value->len - z->addr.data;

    servers = ngx_pcalloc(cf->pool,
                          NGX_HTTP_RL_MAX_SEEDS * sizeof(ngx_http_rl_server_t));
    if (servers == NULL) {
        return NGX_CONF_ERROR;
    }

    p = z->addr.data;
    last = p + z->addr.len;

    for ( ;; ) {
        comma = ngx_strlchr(p, last, ',');
        addr.data = p;
        addr.len = (comma ? comma : last) - p;

        if (addr.len == 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid address \"\" in \"%V\"", value);
            return NGX_CONF_ERROR;
        }

        if (addr.len >= 5 && ngx_strncmp(addr.data, "unix:", 5) == 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid address \"%V\" in \"%V\": "
                               "a %s is reached over TCP", &addr, value,
                               n == &z->nseeds ? "cluster" : "sentinel");
            return NGX_CONF_ERROR;
        }

        if (*n == NGX_HTTP_RL_MAX_SEEDS) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"%V\": at most %d %s", value,
                               NGX_HTTP_RL_MAX_SEEDS,
                               n == &z->nseeds ? "seed nodes" : "sentinels");
            return NGX_CONF_ERROR;
        }

        if (ngx_http_rl_server(cf, &addr, &servers[*n], value, port)
            != NGX_OK)
        {
            return NGX_CONF_ERROR;
        }

        (*n)++;

        if (comma == NULL) {
            break;
        }

        p = comma + 1;
    }

    if (n == &z->nseeds) {
        z->seeds = servers;

    } else {
        z->sentinels = servers;
    }

    /* what a zone shares its connections by (src/redis_stores.cpp) */
    z->host = servers[0].host;
    z->port = servers[0].port;

    return NGX_CONF_OK;
}


/* sentinel= and its parameters, checked together once all are read */

static char *
ngx_http_rl_zone_sentinel(ngx_conf_t *cf, ngx_http_rl_zone_t *z)
{
    char  *given;

    if (z->nsentinels == 0) {
        given = z->master.len ? "master"
                : z->sentinel_username.data ? "sentinel_username"
                : z->sentinel_password.data ? "sentinel_password" : NULL;

        if (given) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"%s\" needs \"sentinel\"", given);
            return NGX_CONF_ERROR;
        }

        return NGX_CONF_OK;
    }

    if (z->master.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"sentinel=%V\" needs \"master\": the name the "
                           "sentinels monitor the master by", &z->addr);
        return NGX_CONF_ERROR;
    }

    /* as AUTH takes them (see username=) */
    if (z->sentinel_username.len && z->sentinel_password.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"sentinel_username=%V\" needs "
                           "\"sentinel_password\"", &z->sentinel_username);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/* host:port or host, resolved now: hiredis' own connect would block on
 * DNS. The first address of a name is the server's; the name is kept,
 * to be looked up again through the http block's resolver, if any. */

static ngx_int_t
ngx_http_rl_server(ngx_conf_t *cf, ngx_str_t *addr,
    ngx_http_rl_server_t *server, ngx_str_t *value, ngx_int_t port)
{
    ngx_url_t  u;

    ngx_memzero(&u, sizeof(ngx_url_t));
    ngx_str_null(&server->name);

    u.url = *addr;
    u.default_port = (in_port_t) port;

    if (ngx_parse_url(cf->pool, &u) != NGX_OK || u.naddrs == 0) {
        /* the address alone, or one of a list */
        if (addr->data + addr->len == value->data + value->len
            && addr->data[-1] == '=')
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%s in \"%V\"",
                               u.err ? u.err : "host not found", value);
        } else {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%s in \"%V\" of \"%V\"",
                               u.err ? u.err : "host not found", addr, value);
        }
        return NGX_ERROR;
    }

    server->host.data = ngx_pnalloc(cf->pool, NGX_SOCKADDR_STRLEN + 1);
    server->addr.data = ngx_pnalloc(cf->pool, NGX_SOCKADDR_STRLEN);
    if (server->host.data == NULL || server->addr.data == NULL) {
        return NGX_ERROR;
    }

    server->host.len = ngx_sock_ntop(u.addrs[0].sockaddr,
                                     u.addrs[0].socklen, server->host.data,
                                     NGX_SOCKADDR_STRLEN, 0);
    server->host.data[server->host.len] = '\0';
    server->addr.len = ngx_sock_ntop(u.addrs[0].sockaddr,
                                     u.addrs[0].socklen, server->addr.data,
                                     NGX_SOCKADDR_STRLEN, 1);
    server->port = ngx_inet_get_port(u.addrs[0].sockaddr);

    /* "[::1]" and numbers are no names */
    if (u.host.len && u.host.data[0] != '['
        && ngx_inet_addr(u.host.data, u.host.len) == INADDR_NONE)
    {
        server->name.data = ngx_pnalloc(cf->pool, u.host.len + 1);
        if (server->name.data == NULL) {
            return NGX_ERROR;
        }

        ngx_memcpy(server->name.data, u.host.data, u.host.len);
        server->name.data[u.host.len] = '\0';
        server->name.len = u.host.len;
    }

    return NGX_OK;
}


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
 * (src/charges.cpp) */

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

    if (ra->concurrency > 0) {
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
    p = rl_spec_write(p, (int) rule->algorithm, (char *) rule->name.data,
                      rule->name.len, rule->limit, rule->window_us,
                      rule->burst, rule->delay, 0, (int) rule->burst_follows,
                      rule->calendar != NULL);

    rule->dry_spec.data = p;
    rule->dry_spec.len = len;
    (void) rl_spec_write(p, (int) rule->algorithm, (char *) rule->name.data,
                         rule->name.len, rule->limit, rule->window_us,
                         rule->burst, rule->delay, 1,
                         (int) rule->burst_follows, rule->calendar != NULL);

    /* what the deny cache keys on besides the state: a reload that
     * changes any of it starts afresh */

    ngx_memcpy(cost, &rule->cost, sizeof(cost));
    ngx_crc32_init(rule->config_crc);
    ngx_crc32_update(&rule->config_crc, rule->spec.data, rule->spec.len);
    ngx_crc32_update(&rule->config_crc, cost, sizeof(cost));
    ngx_crc32_final(rule->config_crc);

    return NGX_CONF_OK;
}


static ngx_http_rl_zone_t *
ngx_http_rl_find_zone(ngx_conf_t *cf, ngx_str_t *name)
{
    ngx_uint_t                 i;
    ngx_http_rl_zone_t        *z, **zp;
    ngx_http_rl_main_conf_t   *rmcf;

    rmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_rl_module);

    zp = rmcf->zones.elts;

    for (i = 0; i < rmcf->zones.nelts; i++) {
        if (zp[i]->name.len == name->len
            && ngx_strncmp(zp[i]->name.data, name->data, name->len) == 0)
        {
            return zp[i];
        }
    }

    /* a zone may be used before it is declared, as limit_req allows */

    z = ngx_pcalloc(cf->pool, sizeof(ngx_http_rl_zone_t));
    if (z == NULL) {
        return NULL;
    }

    zp = ngx_array_push(&rmcf->zones);
    if (zp == NULL) {
        return NULL;
    }

    *zp = z;

    z->name = *name;
    z->file = cf->conf_file->file.name.data;
    z->line = cf->conf_file->line;
    z->index = rmcf->zones.nelts - 1;
    z->timeout = NGX_HTTP_RL_DEFAULT_TIMEOUT;
    z->connect_timeout = NGX_HTTP_RL_DEFAULT_CONNECT_TIMEOUT;
    z->failure = NGX_HTTP_RL_FAILURE_OPEN;
    z->tls.verify = NGX_CONF_UNSET;

    return z;
}


/* A parameter given twice (its name, up to "=", or the whole word):
 * the last would win silently, so it is an error, as in nginx's own
 * directives. */

static ngx_int_t
ngx_http_rl_duplicate(ngx_conf_t *cf, ngx_str_t *value, ngx_uint_t first,
    ngx_uint_t i)
{
    u_char      *eq;
    size_t       len;
    ngx_uint_t   k;

    eq = ngx_strlchr(value[i].data, value[i].data + value[i].len, '=');
    len = eq ? (size_t) (eq - value[i].data) + 1 : value[i].len;

    for (k = first; k < i; k++) {
        if (value[k].len >= len
            && ngx_strncmp(value[k].data, value[i].data, len) == 0
            && (eq != NULL || value[k].len == len))
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "duplicate parameter \"%V\"", &value[i]);
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* A parameter's value with variables (key=, cost=, charge=), compiled
 * into *cv, made first when NULL. */

static ngx_int_t
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


/* rl_status CODE: 400 to 599; nginx -t names the value and the directive
 * (nginx's own bounds check names neither) */

char *
ngx_http_rl_status(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_int_t    n;
    ngx_str_t   *value;
    ngx_uint_t  *np;

    np = (ngx_uint_t *) ((char *) conf + cmd->offset);

    if (*np != NGX_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;
    n = ngx_atoi(value[1].data, value[1].len);

    if (n < 400 || n > 599) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid value \"%V\" in \"%V\" directive, "
                           "it must be a status from 400 to 599",
                           &value[1], &cmd->name);
        return NGX_CONF_ERROR;
    }

    *np = (ngx_uint_t) n;

    return NGX_CONF_OK;
}


/* ngx_conf_set_enum_slot, with an error that names the directive and
 * what it takes: invalid value "yes" in "rl_headers" directive, it must
 * be "off", "on" or "draft" */

char *
ngx_http_rl_enum(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    u_char           *p, *last;
    ngx_str_t        *value;
    ngx_uint_t       *np, i, n;
    ngx_conf_enum_t  *e;
    u_char            names[256];

    np = (ngx_uint_t *) ((char *) conf + cmd->offset);

    if (*np != NGX_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;
    e = cmd->post;

    for (i = 0; e[i].name.len != 0; i++) {
        if (e[i].name.len == value[1].len
            && ngx_strcasecmp(e[i].name.data, value[1].data) == 0)
        {
            *np = e[i].value;
            return NGX_CONF_OK;
        }
    }

    n = i;
    p = names;
    last = names + sizeof(names);

    for (i = 0; i < n; i++) {
        p = ngx_slprintf(p, last, "%s\"%V\"",
                         i == 0 ? "" : (i + 1 == n ? " or " : ", "),
                         &e[i].name);
    }

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid value \"%V\" in \"%V\" directive, "
                       "it must be %*s",
                       &value[1], &cmd->name, (size_t) (p - names), names);

    return NGX_CONF_ERROR;
}


/* rl_fleet [name=NAME] [interval=TIME] | off (SPEC section 11): this
 * instance's name in the fleet and how often it publishes its record;
 * off: no record, no live limits read */

char *
ngx_http_rl_fleet(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_rl_main_conf_t *rmcf = conf;

    ngx_str_t   *value, s;
    ngx_uint_t   i;
    ngx_msec_t   ms;

    if (rmcf->fleet != NGX_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (cf->args->nelts == 2 && ngx_strcmp(value[1].data, "off") == 0) {
        rmcf->fleet = 0;
        return NGX_CONF_OK;
    }

    rmcf->fleet = 1;

    for (i = 1; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "name=", 5) == 0) {
            s.data = value[i].data + 5;
            s.len = value[i].len - 5;

            if (s.len == 0 || s.len > NGX_HTTP_RL_MAX_NAME) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid name \"%V\": 1 to %d "
                                   "characters", &value[i],
                                   NGX_HTTP_RL_MAX_NAME);
                return NGX_CONF_ERROR;
            }

            rmcf->fleet_name = s;
            continue;
        }

        if (ngx_strncmp(value[i].data, "interval=", 9) == 0) {
            s.data = value[i].data + 9;
            s.len = value[i].len - 9;

            ms = ngx_parse_time(&s, 0);

            if (ms == (ngx_msec_t) NGX_ERROR || ms < 1000
                || ms > 3600000)
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid interval \"%V\": a time "
                                   "from 1s to 1h", &value[i]);
                return NGX_CONF_ERROR;
            }

            rmcf->fleet_interval = ms;
            continue;
        }

        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\"", &value[i]);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}
