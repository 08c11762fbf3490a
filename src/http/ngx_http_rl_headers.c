/*
 * ngx_http_rl_headers.c: the header filter adding X-RateLimit-*,
 * Retry-After and the draft RateLimit-Policy / RateLimit fields to the
 * response of a request the rules decided, whatever answers it (the
 * location, an error_page, a failed upstream).
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_rl.h"


static ngx_int_t ngx_http_rl_header_filter(ngx_http_request_t *r);
static ngx_int_t ngx_http_rl_draft_headers(ngx_http_request_t *r,
    ngx_http_rl_ctx_t *ctx, int64_t reset);
static uint64_t ngx_http_rl_window_seconds(ngx_http_rl_ctx_t *ctx,
    ngx_uint_t i);
static u_char *ngx_http_rl_sf_string(u_char *p, const ngx_str_t *s);


static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;


void
ngx_http_rl_header_filter_init(void)
{
    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_rl_header_filter;
}


static ngx_int_t
ngx_http_rl_header_filter(ngx_http_request_t *r)
{
    u_char                  *p;
    int64_t                  reset;
    ngx_str_t                remaining, reset_text, limit;
    ngx_http_rl_ctx_t       *ctx;
    ngx_http_rl_rule_t      *rule;
    rl_outcome_t            *o;
    ngx_http_rl_loc_conf_t  *lcf;

    static ngx_str_t         one = ngx_string("1");

    if (r != r->main) {
        return ngx_http_next_header_filter(r);
    }

    ctx = ngx_http_rl_get_ctx(r);

    if (ctx != NULL && ctx->levels != NULL) {
        ngx_http_rl_adaptive_responded(r, ctx);
    }

    if (ctx == NULL || !ctx->finished || ctx->headers_done
        || ctx->binding < 0)
    {
        return ngx_http_next_header_filter(r);
    }

    ctx->headers_done = 1;

    /* the place that decided says which headers, not an error_page's */
    lcf = ctx->lcf;

    if (lcf->headers == NGX_HTTP_RL_HEADERS_OFF) {
        return ngx_http_next_header_filter(r);
    }

    rule = (ngx_http_rl_rule_t *) lcf->rules->elts + ctx->binding;
    o = &ctx->outcomes[ctx->binding];

    reset = ngx_http_rl_reset_seconds(ctx);

    /* the per-request figures in one piece of the pool; the limit was
     * printed at configuration, but for a key value's override */
    p = ngx_pnalloc(r->pool, 3 * NGX_INT64_LEN);
    if (p == NULL) {
        return NGX_ERROR;
    }

    limit = rule->limit_text;

    if (o->limit > 0) {
        limit.data = p;
        p = ngx_http_rl_decimal(p, o->limit);
        limit.len = p - limit.data;
    }

    remaining.data = p;
    p = ngx_http_rl_decimal(p, o->remaining);
    remaining.len = p - remaining.data;

    reset_text.data = p;
    p = ngx_http_rl_decimal(p, reset);
    reset_text.len = p - reset_text.data;

    if (ngx_http_rl_add_header(r, "X-RateLimit-Limit", 17, &limit) != NGX_OK
        || ngx_http_rl_add_header(r, "X-RateLimit-Remaining", 21, &remaining)
           != NGX_OK
        || ngx_http_rl_add_header(r, "X-RateLimit-Reset", 17, &reset_text)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (ctx->status == NGX_HTTP_RL_STATUS_REJECTED
        && ngx_http_rl_add_header(r, "Retry-After", 11,
                                  reset > 0 ? &reset_text : &one)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (lcf->headers == NGX_HTTP_RL_HEADERS_DRAFT
        && ngx_http_rl_draft_headers(r, ctx, reset) != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_next_header_filter(r);
}


/*
 * draft-ietf-httpapi-ratelimit-headers-11 (Lists of Items, each a String
 * and its Parameters):
 *     RateLimit-Policy: "NAME";q=N;w=SECONDS, ...   (every rule applied;
 *                       w whole seconds, a calendar rule's its period's
 *                       length; a concurrency= rule's: "NAME";q=N;
 *                       qu="concurrent-requests", no window)
 *     RateLimit: "NAME";r=AVAILABLE;t=EFFECTIVE_WINDOW  (the binding
 *                       rule: X-RateLimit-Remaining and -Reset; t is no
 *                       earlier than Retry-After, as -11 asks)
 * No pk: a partition key would hand clients the rules' key values.
 */

static ngx_int_t
ngx_http_rl_draft_headers(ngx_http_request_t *r, ngx_http_rl_ctx_t *ctx,
    int64_t reset)
{
    size_t               len;
    u_char              *p;
    uint64_t             q;
    ngx_uint_t           i, n;
    ngx_table_elt_t     *h;
    ngx_http_rl_rule_t  *rules;

    rules = ctx->lcf->rules->elts;
    n = ctx->lcf->rules->nelts;

    len = 0;
    for (i = 0; i < n; i++) {
        len += ngx_http_rl_policy_len(&rules[i]);
    }

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->value.data = ngx_pnalloc(r->pool, len);
    if (h->value.data == NULL) {
        return NGX_ERROR;
    }

    p = h->value.data;

    for (i = 0; i < n; i++) {
        if (ctx->values[i].len == 0) {
            continue; /* an empty key: the rule did not apply */
        }

        if (p != h->value.data) {
            *p++ = ','; *p++ = ' ';
        }

        /* a key value's override of N, where it decided */
        q = (ctx->decided[i] && ctx->outcomes[i].limit > 0)
            ? (uint64_t) ctx->outcomes[i].limit : rules[i].limit;

        p = ngx_http_rl_policy_item(p, &rules[i], q,
                                    ngx_http_rl_window_seconds(ctx, i));
    }

    h->hash = 1;
    ngx_str_set(&h->key, "RateLimit-Policy");
    h->value.len = p - h->value.data;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    i = (ngx_uint_t) ctx->binding;

    h->value.data = ngx_pnalloc(r->pool, ngx_http_rl_policy_len(&rules[i]));
    if (h->value.data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_http_rl_limit_item(h->value.data, &rules[i],
                               ctx->outcomes[i].remaining, reset);

    h->hash = 1;
    ngx_str_set(&h->key, "RateLimit");
    h->value.len = p - h->value.data;

    return NGX_OK;
}


/* Rule i's window in whole seconds (w=: sub-second precision is not
 * supported): a calendar rule's, the length of its period at the
 * request's time (a day of 23 or 25 hours, a month of 28 to 31 days). */

static uint64_t
ngx_http_rl_window_seconds(ngx_http_rl_ctx_t *ctx, ngx_uint_t i)
{
    int64_t               *b;
    ngx_uint_t             g, k;
    ngx_http_rl_rule_t    *rule;
    ngx_http_rl_group_t   *group;

    rule = (ngx_http_rl_rule_t *) ctx->lcf->rules->elts + i;

    for (g = 0; rule->calendar != NULL && g < ctx->ngroups; g++) {
        group = &ctx->groups[g];

        for (k = 0; k < group->nrules; k++) {
            if (group->rules[k] == i && ((group->calendar >> k) & 1)) {
                b = &group->bounds[3 * k];
                return (uint64_t) (b[1] - b[0] + 999999) / 1000000;
            }
        }
    }

    return (rule->window_us + 999999) / 1000000;
}


/* The draft's items of a rule, for this filter and rl_quota
 * (api/quota.cpp): a RateLimit-Policy item at N q and a window of w
 * seconds (a concurrency= rule's: its quota unit, no window), a
 * RateLimit item; the most either takes. */

size_t
ngx_http_rl_policy_len(const ngx_http_rl_rule_t *rule)
{
    return 2 * rule->name.len + 2 * NGX_INT64_LEN
           + sizeof(";qu=\"concurrent-requests\"") + 16;
}


u_char *
ngx_http_rl_policy_item(u_char *p, const ngx_http_rl_rule_t *rule,
    uint64_t q, uint64_t w)
{
    p = ngx_http_rl_sf_string(p, &rule->name);

    if (rule->algorithm == RL_ALGORITHM_CONCURRENCY) {
        return ngx_sprintf(p, ";q=%uL;qu=\"concurrent-requests\"", q);
    }

    return ngx_sprintf(p, ";q=%uL;w=%uL", q, w);
}


u_char *
ngx_http_rl_limit_item(u_char *p, const ngx_http_rl_rule_t *rule,
    int64_t r, int64_t t)
{
    p = ngx_http_rl_sf_string(p, &rule->name);

    return ngx_sprintf(p, ";r=%L;t=%L", r, t);
}


/* A structured-field string: "..." with backslash and quote escaped. */

static u_char *
ngx_http_rl_sf_string(u_char *p, const ngx_str_t *s)
{
    size_t  i;

    *p++ = '"';

    for (i = 0; i < s->len; i++) {
        if (s->data[i] == '"' || s->data[i] == '\\') {
            *p++ = '\\';
        }

        *p++ = s->data[i];
    }

    *p++ = '"';

    return p;
}


ngx_int_t
ngx_http_rl_add_header(ngx_http_request_t *r, const char *name, size_t len,
    ngx_str_t *value)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
    h->key.data = (u_char *) name;
    h->key.len = len;
    h->value = *value;
#if (nginx_version >= 1023000)
    h->next = NULL;     /* (a header's list of its kind, since 1.23) */
#endif

    return NGX_OK;
}
