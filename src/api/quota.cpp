/*
 * api/quota.cpp: a caller's own quota (SPEC section 14, rl_quota): a
 * content handler that answers the request it serves with the figures
 * of the rules it names, each evaluated with its own key= (and a
 * calendar rule's anchor=) on this request, read as the operator API
 * reads a key (api/keys.cpp): nothing counted, the figures the caller's
 * next request would get. It reads nothing of the request but what the
 * rules' keys read: no parameter, header or path names another key.
 *
 * Each name is each zone's rules of that name (rmcf->names), and each
 * of those is its states (the same name written in several places with
 * other windows or keys): every state whose key is not empty for this
 * request is read, and the one that binds (least left, as the headers
 * choose) is the name's figures in that zone. Embedded zones answer at
 * once, from shared memory (ngx_http_rl_shm_peek); the states of a Redis
 * zone go in one script call of a cost of 0 (api/state_call.hpp) per
 * zone, per slot in a cluster, at the rule's live limit (SPEC section
 * 11), on the worker's link as the API's commands go; the request waits
 * for the replies (api/wait.hpp), a Redis that cannot answer is a 503.
 */

#include "api.hpp"
#include "state_call.hpp"
#include "wait.hpp"

#include <type_traits>

#include "core/algorithm.hpp"
#include "core/cluster.hpp"
#include "core/reply.hpp"
#include "redis/link.hpp"
#include "shm/live.hpp"

namespace rl::api {
namespace {

/* One state of a named rule, with its key value on this request. */
struct Read {
    ngx_http_rl_rule_t *rule;
    std::string_view value;
    const int64_t *bounds;      /* a calendar rule's period, or NULL */
    int64_t period[3];
    std::string_view spec;      /* at its live limit */
    rl_outcome_t out;
};

/* A zone and name of the answer: its reads [from, from + n). */
struct Entry {
    const ngx_http_rl_name_t *name;
    size_t from;
    size_t n;
};

/* The reads of one Redis zone (in a cluster, of one slot of it): one
 * script call, whose ask is the group's index. */
struct Group {
    ngx_http_rl_zone_t *zone;
    ngx_uint_t slot;
    size_t *reads;
    size_t n;
    bool retried;               /* NOSCRIPT: sent again with the text */
};

struct Quota {
    ngx_http_request_t *r;
    Read *reads;
    size_t nreads;
    Entry *entries;
    size_t nentries;
    Group *groups;
    size_t ngroups;
    const char *failure;        /* NULL, or why Redis could not answer */
};

static_assert(std::is_trivially_destructible<Quota>::value &&
                  std::is_trivially_destructible<Read>::value,
              "a quota's read lives in r->pool");

/* ----------------------------------------------------------------- */
/* the answer                                                         */

/* A read's figures as the headers would say them. */
struct Figures {
    int64_t limit;
    int64_t remaining;
    int64_t reset;      /* seconds */
    int64_t used;
};

Figures figuresOf(const Read &rd) {
    const rl_outcome_t &o = rd.out;
    const ngx_http_rl_rule_t *rule = rd.rule;
    /* a key value's override, else the live limit or nginx.conf's */
    int64_t limit = o.limit > 0
                        ? o.limit
                        : static_cast<int64_t>(live::limitOf(rule));
    int64_t remaining = o.remaining > 0 ? o.remaining : 0;
    auto n = static_cast<uint64_t>(limit);
    Params p{static_cast<Algorithm>(rule->algorithm), n, rule->window_us,
             rule->burst_follows ? n : rule->burst, rule->delay};
    auto held = static_cast<int64_t>(capacity(p)) - remaining;
    return {limit, remaining,
            rl_seconds_ceil(o.retry_ms > 0 ? o.retry_ms : o.reset_ms),
            held > 0 ? held : 0};
}

/* The read of an entry that binds: of its states, the one with least
 * left (with one that would refuse a request, the one that frees
 * last), as the headers choose; NULL when out of memory. */
const Read *bindingOf(const Quota *q, const Entry &e) {
    auto *outs = static_cast<rl_outcome_t *>(
        ngx_palloc(q->r->pool, e.n * sizeof(rl_outcome_t)));
    if (outs == nullptr) {
        return nullptr;
    }
    int allowed = 1;
    for (size_t k = 0; k < e.n; k++) {
        outs[k] = q->reads[e.from + k].out;
        allowed = allowed && outs[k].retry_ms == 0;
    }
    return &q->reads[e.from + rl_binding_rule(outs, e.n, allowed)];
}

/* A period's or a window's length in whole seconds (the draft's w=). */
uint64_t windowSeconds(const Read &rd) {
    if (rd.bounds != nullptr) {
        return static_cast<uint64_t>(rd.bounds[1] - rd.bounds[0] + 999999) /
               1000000;
    }
    return (rd.rule->window_us + 999999) / 1000000;
}

/* RateLimit-Policy: each entry; RateLimit: the one that binds. */
bool draftFields(Quota *q, const Read *const *bound, size_t bind) {
    ngx_http_request_t *r = q->r;
    size_t len = 0;
    for (size_t i = 0; i < q->nentries; i++) {
        len += ngx_http_rl_policy_len(bound[i]->rule);
    }
    auto *p = static_cast<u_char *>(ngx_pnalloc(r->pool, len));
    if (p == nullptr) {
        return false;
    }
    ngx_str_t policy = {0, p};
    for (size_t i = 0; i < q->nentries; i++) {
        if (i > 0) {
            *p++ = ',';
            *p++ = ' ';
        }
        Figures f = figuresOf(*bound[i]);
        p = ngx_http_rl_policy_item(p, bound[i]->rule,
                                    static_cast<uint64_t>(f.limit),
                                    windowSeconds(*bound[i]));
    }
    policy.len = static_cast<size_t>(p - policy.data);
    const Read &b = *bound[bind];
    Figures f = figuresOf(b);
    p = static_cast<u_char *>(
        ngx_pnalloc(r->pool, ngx_http_rl_policy_len(b.rule)));
    if (p == nullptr) {
        return false;
    }
    ngx_str_t limit = {0, p};
    limit.len = static_cast<size_t>(
        ngx_http_rl_limit_item(p, b.rule, f.remaining, f.reset) - p);
    return ngx_http_rl_add_header(r, "RateLimit-Policy", 16, &policy) ==
               NGX_OK &&
           ngx_http_rl_add_header(r, "RateLimit", 9, &limit) == NGX_OK;
}

/* {"rules": [{"name", "zone", "limit", "remaining", "reset", "window"
 * | "period", "tz", "used"}, ...]} and the draft's fields. */
ngx_int_t answer(Quota *q) {
    ngx_http_request_t *r = q->r;
    auto **bound = static_cast<const Read **>(
        ngx_palloc(r->pool, (q->nentries + 1) * sizeof(Read *)));
    auto *outs = static_cast<rl_outcome_t *>(
        ngx_palloc(r->pool, (q->nentries + 1) * sizeof(rl_outcome_t)));
    if (bound == nullptr || outs == nullptr) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    Json out(r->pool);
    out.raw("{\"rules\":[");
    int allowed = 1;
    for (size_t i = 0; i < q->nentries; i++) {
        bound[i] = bindingOf(q, q->entries[i]);
        if (bound[i] == nullptr) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
        const Read &rd = *bound[i];
        Figures f = figuresOf(rd);
        outs[i] = rd.out;
        outs[i].remaining = f.remaining;
        allowed = allowed && rd.out.retry_ms == 0;
        const ngx_http_rl_rule_t *rule = rd.rule;
        out.raw(i ? ",\n{\"name\":" : "\n{\"name\":").str(viewOf(rule->name))
            .raw(",\"zone\":").str(viewOf(rule->zone->name))
            .raw(",\"limit\":").num(f.limit)
            .raw(",\"remaining\":").num(f.remaining)
            .raw(",\"reset\":").num(f.reset);
        if (rule->calendar != nullptr) {
            ngx_str_t unit, tz, anchor;
            ngx_http_rl_calendar_describe(rule, &unit, &tz, &anchor);
            out.raw(",\"period\":").str(viewOf(unit))
                .raw(",\"tz\":").str(viewOf(tz));
        } else if (rule->algorithm == RL_ALGORITHM_CONCURRENCY) {
            out.raw(",\"window\":null");    /* requests in flight */
        } else {
            seconds(out.raw(",\"window\":"), rule->window_us);
        }
        out.raw(",\"used\":").num(f.used).raw("}");
    }
    out.raw(q->nentries > 0 ? "\n]}\n" : "]}\n");
    if (q->nentries > 0 &&
        !draftFields(q, bound, rl_binding_rule(outs, q->nentries, allowed))) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    return send(r, NGX_HTTP_OK, out);
}

ngx_int_t unavailable(ngx_http_request_t *r, const char *why) {
    return sendError(r, {503, "StoreUnavailable", why});
}

/* ----------------------------------------------------------------- */
/* reading                                                            */

/* The answer's entries and their reads: each state of each name whose
 * key is not empty for this request (a calendar rule's period found
 * for its anchor on this request). */
bool collect(Quota *q, const ngx_http_rl_quota_t *conf) {
    ngx_http_request_t *r = q->r;
    size_t most = 0;
    for (ngx_uint_t i = 0; i < conf->nfound; i++) {
        most += conf->found[i]->nstates;
    }
    q->reads = static_cast<Read *>(
        ngx_palloc(r->pool, (most + 1) * sizeof(Read)));
    q->entries = static_cast<Entry *>(
        ngx_palloc(r->pool, (conf->nfound + 1) * sizeof(Entry)));
    if (q->reads == nullptr || q->entries == nullptr) {
        return false;
    }
    for (ngx_uint_t i = 0; i < conf->nfound; i++) {
        const ngx_http_rl_name_t *name = conf->found[i];
        Entry &e = q->entries[q->nentries];
        e = {name, q->nreads, 0};
        for (ngx_uint_t k = 0; k < name->nstates; k++) {
            ngx_http_rl_rule_t *rule = name->states[k];
            ngx_str_t v;
            if (ngx_http_complex_value(r, &rule->key, &v) != NGX_OK) {
                return false;
            }
            if (v.len == 0) {
                continue;   /* the rule does not apply to this caller */
            }
            Read &rd = q->reads[q->nreads++];
            rd = {};
            rd.rule = rule;
            rd.value = viewOf(v);
            rd.spec = viewOf(*live::specOf(rule, false));
            if (rule->calendar != nullptr) {
                ngx_http_rl_calendar_bounds(
                    r, rule, ngx_http_rl_calendar_now(rule->zone), rd.period);
                rd.bounds = rd.period;
            }
        }
        e.n = q->nreads - e.from;
        q->nentries += e.n > 0 ? 1 : 0;
    }
    return true;
}

/* The reads of Redis zones in their groups (a zone's, a slot's of a
 * cluster); an embedded zone's read now. */
bool group(Quota *q) {
    ngx_http_request_t *r = q->r;
    q->groups = static_cast<Group *>(
        ngx_pcalloc(r->pool, (q->nreads + 1) * sizeof(Group)));
    if (q->groups == nullptr) {
        return false;
    }
    for (size_t i = 0; i < q->nreads; i++) {
        Read &rd = q->reads[i];
        ngx_http_rl_zone_t *z = rd.rule->zone;
        if (ngx_http_rl_embedded(z)) {
            ngx_str_t value = {rd.value.size(),
                               reinterpret_cast<u_char *>(
                                   const_cast<char *>(rd.value.data()))};
            ngx_http_rl_shm_peek(z, rd.rule, &value, rd.bounds, &rd.out);
            continue;
        }
        ngx_uint_t slot = z->nseeds > 0 ? valueSlot(rd.value) : 0;
        size_t g = 0;
        while (g < q->ngroups &&
               (q->groups[g].zone != z || q->groups[g].slot != slot)) {
            g++;
        }
        Group &grp = q->groups[g];
        if (g == q->ngroups) {
            q->ngroups++;
            grp.zone = z;
            grp.slot = slot;
            grp.reads = static_cast<size_t *>(
                ngx_palloc(r->pool, q->nreads * sizeof(size_t)));
            if (grp.reads == nullptr) {
                return false;
            }
        }
        grp.reads[grp.n++] = i;
    }
    return true;
}

/* A group's call: the script with a cost of 0 on each of its states. */
Args *callOf(Quota *q, const Group &g, bool eval) {
    ngx_pool_t *pool = q->r->pool;
    size_t n = g.n;
    auto **rules = static_cast<ngx_http_rl_rule_t **>(
        ngx_palloc(pool, n * sizeof(ngx_http_rl_rule_t *)));
    auto *values = static_cast<std::string_view *>(
        ngx_palloc(pool, n * sizeof(std::string_view)));
    auto *specs = static_cast<std::string_view *>(
        ngx_palloc(pool, n * sizeof(std::string_view)));
    auto **bounds = static_cast<const int64_t **>(
        ngx_palloc(pool, n * sizeof(int64_t *)));
    if (rules == nullptr || values == nullptr || specs == nullptr ||
        bounds == nullptr) {
        return nullptr;
    }
    for (size_t k = 0; k < n; k++) {
        const Read &rd = q->reads[g.reads[k]];
        rules[k] = rd.rule;
        values[k] = rd.value;
        specs[k] = rd.spec;
        bounds[k] = rd.bounds;
    }
    return statesCall(pool, g.zone->prefix, {n, rules, values, bounds, specs},
                      eval);
}

bool sendGroup(Quota *q, Wait *w, ngx_uint_t g, Link *link, bool eval) {
    Args *a = callOf(q, q->groups[g], eval);
    return a != nullptr && !a->full &&
           waitSend(w, link, g, a->argc, a->argv, a->len);
}

void replied(Wait *w, ngx_uint_t ask, const redisReply *reply, Link *link) {
    auto *q = static_cast<Quota *>(w->data);
    Group &g = q->groups[ask];
    if (reply == nullptr) {
        q->failure = "the connection to Redis was lost";
        return;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        if (isNoScript(reply) && !g.retried) {
            /* Redis lost the script: once more, with its text */
            g.retried = true;
            if (sendGroup(q, w, ask, link, true)) {
                return;
            }
        }
        q->failure = "Redis answered an error";
        return;
    }
    auto *outs = static_cast<rl_outcome_t *>(
        ngx_palloc(q->r->pool, g.n * sizeof(rl_outcome_t)));
    bool allowed;
    if (outs == nullptr || !readStates(q->r->pool, reply, g.n, outs,
                                       &allowed)) {
        q->failure = "Redis sent no reply of the script's";
        return;
    }
    for (size_t k = 0; k < g.n; k++) {
        q->reads[g.reads[k]].out = outs[k];
    }
}

ngx_int_t conclude(Wait *w) {
    auto *q = static_cast<Quota *>(w->data);
    if (w->timedOut) {
        return unavailable(q->r, "Redis did not answer in time");
    }
    if (q->failure != nullptr) {
        return unavailable(q->r, q->failure);
    }
    return answer(q);
}

ngx_int_t handle(ngx_http_request_t *r) {
    if (!(r->method & (NGX_HTTP_GET | NGX_HTTP_HEAD))) {
        ngx_int_t rc = ngx_http_discard_request_body(r);
        if (rc != NGX_OK) {
            return rc;
        }
        if (!header(r, "Allow", "GET, HEAD")) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
        return sendError(r, {405, "MethodNotAllowed",
                             "a quota is read with GET"});
    }
    ngx_int_t rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }
    auto *lcf = static_cast<ngx_http_rl_loc_conf_t *>(
        ngx_http_get_module_loc_conf(r, ngx_http_rl_module));
    auto *q = static_cast<Quota *>(ngx_pcalloc(r->pool, sizeof(Quota)));
    if (q == nullptr) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    q->r = r;
    if (lcf->quota == nullptr || !collect(q, lcf->quota) || !group(q)) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    if (q->ngroups == 0) {
        return answer(q);
    }
    ngx_http_rl_main_conf_t *rmcf = mainConf(r);
    Wait *w = waitFor(r, q, replied, conclude, q->ngroups);
    if (w == nullptr) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    ngx_msec_t timeout = 0;
    for (size_t g = 0; g < q->ngroups; g++) {
        ngx_http_rl_zone_t *z = q->groups[g].zone;
        ngx_http_rl_store_t *store =
            rmcf->stores != nullptr ? rmcf->stores[z->index] : nullptr;
        auto *link = reinterpret_cast<Link *>(
            store != nullptr ? ngx_http_rl_store_route(store,
                                                       q->groups[g].slot)
                             : nullptr);
        if (link == nullptr || !link->usable()) {
            /* (what went is let go with the request's pool) */
            return unavailable(r, "Redis cannot be reached now");
        }
        if (!sendGroup(q, w, g, link, false)) {
            return unavailable(r, "the command could not be sent to Redis");
        }
        timeout = z->timeout > timeout ? z->timeout : timeout;
    }
    return waitHold(w, timeout);
}

}  // namespace
}  // namespace rl::api

extern "C" {

ngx_int_t ngx_http_rl_quota_conf(ngx_conf_t *cf,
                                 ngx_http_rl_main_conf_t *rmcf) noexcept {
    auto **quotas = static_cast<ngx_http_rl_quota_t **>(rmcf->quotas.elts);
    auto *names = static_cast<ngx_http_rl_name_t *>(rmcf->names.elts);
    ngx_uint_t nnames = rmcf->names.nelts;
    for (ngx_uint_t i = 0; i < rmcf->quotas.nelts; i++) {
        ngx_http_rl_quota_t *q = quotas[i];
        /* (its names are not repeated: each entry is found once) */
        q->found = static_cast<ngx_http_rl_name_t **>(
            ngx_palloc(cf->pool, (nnames + 1) * sizeof(ngx_http_rl_name_t *)));
        if (q->found == nullptr) {
            return NGX_ERROR;
        }
        for (ngx_uint_t k = 0; k < q->nnames; k++) {
            ngx_uint_t before = q->nfound;
            for (ngx_uint_t j = 0; j < nnames; j++) {
                const ngx_str_t &name = names[j].first->name;
                if (name.len == q->names[k].len &&
                    ngx_strncmp(name.data, q->names[k].data, name.len) == 0) {
                    q->found[q->nfound++] = &names[j];
                }
            }
            if (q->nfound == before) {
                ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                              "unknown rule \"%V\" in \"rl_quota\": no "
                              "\"rl_rule\" has that name= in %s:%ui",
                              &q->names[k], q->file, q->line);
                return NGX_ERROR;
            }
        }
    }
    return NGX_OK;
}

ngx_int_t ngx_http_rl_quota_handler(ngx_http_request_t *r) noexcept {
    try {
        return rl::api::handle(r);
    } catch (...) {
        ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                      "rl_quota: unexpected exception");
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
}

}  // extern "C"
