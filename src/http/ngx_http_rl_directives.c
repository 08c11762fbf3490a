/*
 * ngx_http_rl_directives.c: what the directives' parsers share (a
 * parameter given twice), and the plain directives: rl_status,
 * the enumerations (rl_headers, rl_log_level), rl_fleet, rl_quota (its
 * names found once every rule is read: api/quota.cpp). rl_zone is in
 * ngx_http_rl_zone_conf.c, rl_rule in ngx_http_rl_rule_conf.c.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_rl.h"


/* A parameter given twice (its name, up to "=", or the whole word):
 * the last would win silently, so it is an error, as in nginx's own
 * directives. */

ngx_int_t
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


/* rl_quota NAME...: a caller's own quota (SPEC section 14): the content
 * handler, and its names, looked up among the rules' once they are all
 * read (ngx_http_rl_quota_conf()) */

char *
ngx_http_rl_quota(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_rl_loc_conf_t *lcf = conf;

    ngx_str_t                 *value;
    ngx_uint_t                 i, k;
    ngx_http_rl_quota_t       *q, **qp;
    ngx_http_rl_main_conf_t   *rmcf;
    ngx_http_core_loc_conf_t  *clcf;

    if (lcf->quota != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {
        if (value[i].len == 0 || value[i].len > NGX_HTTP_RL_MAX_NAME) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid rule name \"%V\": 1 to %d "
                               "characters", &value[i],
                               NGX_HTTP_RL_MAX_NAME);
            return NGX_CONF_ERROR;
        }

        for (k = 1; k < i; k++) {
            if (value[k].len == value[i].len
                && ngx_strncmp(value[k].data, value[i].data, value[i].len)
                   == 0)
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "duplicate rule name \"%V\"",
                                   &value[i]);
                return NGX_CONF_ERROR;
            }
        }
    }

    q = ngx_pcalloc(cf->pool, sizeof(ngx_http_rl_quota_t));
    if (q == NULL) {
        return NGX_CONF_ERROR;
    }

    /* (cf->args is the next directive's soon: the names are copied) */
    q->nnames = cf->args->nelts - 1;
    q->names = ngx_palloc(cf->pool, q->nnames * sizeof(ngx_str_t));
    if (q->names == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memcpy(q->names, &value[1], q->nnames * sizeof(ngx_str_t));
    q->file = cf->conf_file->file.name.data;
    q->line = cf->conf_file->line;

    rmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_rl_module);

    qp = ngx_array_push(&rmcf->quotas);
    if (qp == NULL) {
        return NGX_CONF_ERROR;
    }

    *qp = q;
    lcf->quota = q;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_rl_quota_handler;

    return NGX_CONF_OK;
}
