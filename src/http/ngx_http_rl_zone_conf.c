/*
 * ngx_http_rl_zone_conf.c: rl_zone, parsed and checked the way nginx's
 * own directives are, errors in nginx's words: its parameters, a row
 * and a setter each, and the checks of them together (the store, TLS,
 * Sentinel, the embedded store's shared memory).
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

    /* its layout's version (src/shm/store.cpp Shared, Node) */
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

    /* what a zone shares its connections by (src/redis/stores.cpp) */
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


/* A zone by its name: made when first met (rl_rule may name a zone
 * declared later), its defaults set. */

ngx_http_rl_zone_t *
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
