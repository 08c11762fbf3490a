/*
 * api.cpp: the operator API and dashboard (SPEC section 8, rl_api), a
 * content handler in the manner of NGINX Plus' api module: JSON over
 * HTTP below the location (src/core/api_path.hpp has the paths), and
 * one page that uses nothing but that JSON. It reads the tables the
 * module keeps anyway (the zones and rules of the configuration, their
 * counters in the metrics zone, the top keys), copying nothing; a key's
 * state and the writes go to its rule's store (api/keys.cpp).
 */

#include "api.hpp"

#include "core/algorithm.hpp"
#include "core/key_text.hpp"
#include "core/usage.hpp"
#include "shm/live.hpp"
#include "ngx_http_rl_page.h"
#include "shm/top_keys.hpp"

namespace rl::api {
namespace {

/* The body of a write: a small JSON object. */
constexpr size_t kMaxBody = 4096;

const char *const kOutcomeNames[NGX_HTTP_RL_OUTCOMES] = {
    "passed", "rejected", "rejected_dry_run", "delayed", "error"};

Method methodOf(const ngx_http_request_t *r) {
    switch (r->method) {
    case NGX_HTTP_GET: return Method::Get;
    case NGX_HTTP_HEAD: return Method::Head;
    case NGX_HTTP_POST: return Method::Post;
    case NGX_HTTP_PUT: return Method::Put;
    case NGX_HTTP_DELETE: return Method::Delete;
    default: return Method::Other;
    }
}

/* An error, the body of a POST or PUT left unread (handle() discards
 * the others' first). */
ngx_int_t refuse(ngx_http_request_t *r, const Error &e) {
    if (r->method & (NGX_HTTP_POST | NGX_HTTP_PUT)) {
        ngx_int_t rc = ngx_http_discard_request_body(r);
        if (rc != NGX_OK) {
            return rc;
        }
    }
    return sendError(r, e);
}

/* {"passed": N, ...} of five counters (NULL: none yet) */
Json &outcomes(Json &out, const ngx_atomic_t *counters) {
    out.raw("{");
    for (int o = 0; o < NGX_HTTP_RL_OUTCOMES; o++) {
        out.raw(o ? "," : "").key(kOutcomeNames[o])
            .num(counters != nullptr ? static_cast<int64_t>(counters[o]) : 0);
    }
    return out.raw("}");
}

const char *storeOf(const ngx_http_rl_zone_t *z) {
    if (ngx_http_rl_embedded(z)) {
        return "embedded";
    }
    return z->nseeds > 0 ? "cluster" : z->nsentinels > 0 ? "sentinel"
                                                          : "redis";
}

/* GET /1/zones: {"ZONE": {...}, ...} */
Json &zones(Json &out, ngx_http_rl_main_conf_t *rmcf) {
    auto **zones = static_cast<ngx_http_rl_zone_t **>(rmcf->zones.elts);
    out.raw("{");
    for (ngx_uint_t i = 0; i < rmcf->zones.nelts; i++) {
        ngx_http_rl_zone_t *z = zones[i];
        const ngx_http_rl_zone_stats_t *s = z->stats;
        out.raw(i ? ",\n" : "\n").key(viewOf(z->name))
            .raw("{\"store\":").str(storeOf(z))
            .raw(",\"up\":").boolean(s == nullptr ? ngx_http_rl_embedded(z)
                                                  : s->up != 0);
        if (z->lease > 0) {
            auto units = [&](const ngx_atomic_t *v) {
                return static_cast<int64_t>(s != nullptr ? *v : 0);
            };
            out.raw(",\"lease\":{\"granted\":")
                .num(units(s ? &s->lease_granted : nullptr))
                .raw(",\"spent\":").num(units(s ? &s->lease_spent : nullptr))
                .raw(",\"returned\":")
                .num(units(s ? &s->lease_returned : nullptr)).raw("}");
        }
        out.raw(",\"requests\":");
        outcomes(out, s != nullptr ? s->outcomes : nullptr);
        if (!ngx_http_rl_embedded(z)) {
            out.raw(",\"errors\":")
                .num(s != nullptr ? static_cast<int64_t>(s->errors) : 0);
        }
        if (z->shm_zone != nullptr) {
            /* the embedded store, or failure=local's */
            size_t used, size;
            ngx_http_rl_shm_usage(z, &used,
                                  &size);
            out.raw(",\"memory\":{\"used\":")
                .num(static_cast<int64_t>(used))
                .raw(",\"size\":").num(static_cast<int64_t>(size))
                .raw("},\"evictions\":")
                .num(s != nullptr ? static_cast<int64_t>(s->evictions) : 0);
        }
        out.raw("}");
    }
    return out.raw("\n}\n");
}

/* {"limit": N, "until": EPOCH|null, ["reason": "...",] "by": "..."}
 * (closed: the trial's figures follow) */
Json &setting(Json &out, const live::Setting &s, bool closed) {
    out.raw("{\"limit\":").num(s.limit).raw(",\"until\":");
    if (s.untilMs > 0) {
        out.num((s.untilMs + 999) / 1000);
    } else {
        out.raw("null");
    }
    if (closed) {
        out.raw(",\"reason\":").str(s.reason);
    }
    out.raw(",\"by\":").str(s.by);
    return closed ? out.raw("}") : out;
}

/* A rule name's live limit and trial, as this instance has them (SPEC
 * section 11): "limit" in force, "configured", "live", "trial"; an auto
 * rule's configured N is the one it learnt (SPEC 13). */
Json &settings(Json &out, ngx_http_rl_main_conf_t *rmcf,
               const ngx_http_rl_name_t *name) {
    const ngx_http_rl_rule_t *rule = name->first;
    char by[live::kMaxBy], reason[live::kMaxReason];
    live::Setting l = live::read(name, live::Kind::Limit, by, reason);
    int64_t configured = rule->adaptive != nullptr
                             ? adaptiveLimit(rmcf, rule)
                             : static_cast<int64_t>(rule->limit);
    out.raw(",\"limit\":").num(l.limit >= 0 ? l.limit : configured);
    if (l.limit >= 0) {
        setting(out.raw(",\"configured\":").num(configured)
                    .raw(",\"live\":"), l, true);
    }
    live::Setting t = live::read(name, live::Kind::Trial, by, reason);
    if (t.limit >= 0) {
        int64_t passed, rejected;
        live::trialFigures(name, &passed, &rejected);
        setting(out.raw(",\"trial\":"), t, false).raw(",\"passed\":")
            .num(passed).raw(",\"rejected\":").num(rejected).raw("}");
    }
    return out;
}

/* One entry of /1/rules: the first rule of its zone and name. */
Json &rule(Json &out, ngx_http_rl_main_conf_t *rmcf,
           const ngx_http_rl_rule_t *rule) {
    size_t len;
    const char *alg = rl_algorithm_name(static_cast<int>(rule->algorithm),
                                        &len);
    const ngx_http_rl_rule_stats_t *s = rule->stats;
    out.raw("{\"name\":").str(viewOf(rule->name))
        .raw(",\"zone\":").str(viewOf(rule->zone->name))
        .raw(",\"algorithm\":").str({alg, len});
    settings(out, rmcf, rule->named);
    if (rule->algorithm == RL_ALGORITHM_CONCURRENCY) {
        /* requests in flight: no window; its slots' hold= */
        seconds(out.raw(",\"window\":null,\"hold\":"), rule->window_us);
    } else {
        seconds(out.raw(",\"window\":"), rule->window_us);
    }
    if (rule->calendar != nullptr) {
        /* a calendar rule (SPEC section 12): "window" is its unit's
         * nominal length; its periods are the zone's */
        ngx_str_t unit, tz, anchor;
        ngx_http_rl_calendar_describe(rule, &unit, &tz, &anchor);
        out.raw(",\"period\":").str(viewOf(unit))
            .raw(",\"tz\":").str(viewOf(tz)).raw(",\"anchor\":");
        if (anchor.len > 0) {
            out.str(viewOf(anchor));
        } else {
            out.raw("null");
        }
    }
    out.raw(",\"key\":").str(viewOf(rule->key.value))
        .raw(",\"requests\":");
    outcomes(out, s != nullptr ? s->outcomes : nullptr).raw(",\"usage\":[");
    int64_t total = 0;
    for (size_t b = 0; b < usage::kBuckets; b++) {
        total += s != nullptr ? static_cast<int64_t>(s->usage[b]) : 0;
        out.raw(b ? ",{\"le\":" : "{\"le\":");
        if (b + 1 < usage::kBuckets) {
            out.raw(usage::kBoundText[b]);
        } else {
            out.str("+Inf");
        }
        out.raw(",\"count\":").num(total).raw("}");
    }
    out.raw("]");
    if (rule->adaptive != nullptr) {
        int64_t levels[4][2] = {};
        for (int l = 0; s != nullptr && l < 4; l++) {
            levels[l][0] = static_cast<int64_t>(s->priority[l][0]);
            levels[l][1] = static_cast<int64_t>(s->priority[l][1]);
        }
        adaptiveJson(out, rmcf, rule, levels);
    }
    return out.raw("}");
}

/* GET /1/rules: every zone and name once, in the order written. */
Json &rules(Json &out, ngx_http_rl_main_conf_t *rmcf) {
    auto *names = static_cast<ngx_http_rl_name_t *>(rmcf->names.elts);
    out.raw("[");
    for (ngx_uint_t i = 0; i < rmcf->names.nelts; i++) {
        rule(out.raw(i ? ",\n" : "\n"), rmcf, names[i].first);
    }
    return out.raw("\n]\n");
}

/* The rules a path names (its name, and zone= if given): false with
 * *err when there are none, or they are in several zones and no zone=
 * says which. */
bool findRules(ngx_http_request_t *r, const Request &req, RuleSet *set,
               Error *err) {
    ngx_http_rl_main_conf_t *rmcf = mainConf(r);
    auto *names = static_cast<ngx_http_rl_name_t *>(rmcf->names.elts);
    const ngx_http_rl_name_t *found = nullptr;
    for (ngx_uint_t i = 0; i < rmcf->names.nelts; i++) {
        const ngx_http_rl_rule_t *first = names[i].first;
        if (viewOf(first->name) != req.name ||
            (!req.zone.empty() && viewOf(first->zone->name) != req.zone)) {
            continue;
        }
        if (found != nullptr) {
            *err = {400, "RuleAmbiguous",
                    "rules of that name are in several zones: say which "
                    "with ?zone="};
            return false;
        }
        found = &names[i];
    }
    if (found == nullptr) {
        *err = {404, "RuleNotFound", req.zone.empty()
                                         ? "no rule of that name"
                                         : "no rule of that name in that zone"};
        return false;
    }
    *set = RuleSet{found->first, found->states, found->nstates,
                   viewOf(found->first->key.value) == "$binary_remote_addr"};
    return true;
}

/* GET /1/rules/NAME/top: the keys this instance rejected most lately
 * (its trial's, ?trial=1). */
ngx_int_t top(ngx_http_request_t *r, const RuleSet &set, size_t k,
              bool trial) {
    auto *entries = static_cast<top::Entry *>(
        ngx_palloc(r->pool, top::kListMax * sizeof(top::Entry)));
    if (entries == nullptr) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    /* ?trial=1: the keys the rule's trial would have rejected */
    size_t n = trial ? live::trialTop(set.first->named, entries)
                     : shm::topKeys(set.first, entries);
    Json out(r->pool);
    out.raw("{\"rule\":").str(viewOf(set.first->name))
        .raw(",\"zone\":").str(viewOf(set.first->zone->name))
        .raw(",\"keys\":[");
    for (size_t i = 0; i < n && i < k; i++) {
        out.raw(i ? ",\n{\"key\":" : "\n{\"key\":");
        keyValue(out, set, entries[i].kept());
        if (entries[i].cut()) {
            out.raw(",\"truncated\":true");
        }
        out.raw(",\"rejected\":").num(entries[i].rejected)
            .raw(",\"requests\":").num(entries[i].requests).raw("}");
    }
    out.raw("\n]}\n");
    return send(r, NGX_HTTP_OK, out);
}

ngx_int_t page(ngx_http_request_t *r) {
    static const char kPage[] = NGX_HTTP_RL_PAGE;
    auto *b = static_cast<ngx_buf_t *>(ngx_calloc_buf(r->pool));
    /* the page loads nothing from elsewhere, and says so; it runs its
     * own script and style and nothing else (their hashes, made with
     * the page: no 'unsafe-inline', which would run any script that
     * found its way in) */
    if (b == nullptr ||
        !header(r, "Content-Security-Policy",
                "default-src 'none'; script-src " NGX_HTTP_RL_PAGE_SCRIPT
                "; style-src " NGX_HTTP_RL_PAGE_STYLE "; connect-src "
                "'self'; img-src data:; base-uri 'none'; form-action "
                "'none'; frame-ancestors 'none'")) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = sizeof(kPage) - 1;
    ngx_str_set(&r->headers_out.content_type, "text/html; charset=utf-8");
    r->headers_out.content_type_len = r->headers_out.content_type.len;
    ngx_int_t rc = ngx_http_send_header(r);
    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }
    b->pos = reinterpret_cast<u_char *>(const_cast<char *>(kPage));
    b->last = b->pos + sizeof(kPage) - 1;
    b->memory = 1;
    b->last_buf = r == r->main ? 1 : 0;
    b->last_in_chain = 1;
    ngx_chain_t out = {b, nullptr};
    return ngx_http_output_filter(r, &out);
}

/* The key value a path names, as its rules keep it: for an address
 * rule, the address's bytes. */
bool keyOf(ngx_http_request_t *r, const RuleSet &set, std::string_view text,
           std::string_view *value, Error *err) {
    if (!set.address) {
        *value = text;
        return true;
    }
    auto *bytes = static_cast<unsigned char *>(ngx_palloc(r->pool, 16));
    size_t len;
    if (bytes == nullptr || !addressBytes(text, bytes, &len)) {
        *err = {400, "KeyInvalid",
                "the rule's key is $binary_remote_addr: the key value is an "
                "IPv4 or IPv6 address"};
        return false;
    }
    *value = {reinterpret_cast<char *>(bytes), len};
    return true;
}

/* A credit (SPEC section 12) lowers a count: a window's or a bucket's.
 * sliding_log keeps the times of the last N requests, concurrency the
 * requests in progress: no count a credit could lower. */
bool creditable(const RuleSet &set, Error *err) {
    for (size_t k = 0; k < set.n; k++) {
        auto a = static_cast<Algorithm>(set.rules[k]->algorithm);
        if (!takesCredit(a)) {
            *err = {400, "CreditRefused",
                    a == Algorithm::Concurrency
                        ? "a concurrency= rule counts the requests in "
                          "progress: no units to credit"
                        : "a sliding_log keeps the times of its last N "
                          "requests: no count a credit can lower"};
            return false;
        }
    }
    return true;
}

/* A write's body, once read: its members as the route asks them. A
 * block: ttl, reason; an override: limit (1 to 1e9), ttl; a live limit:
 * limit (0 to 1e9: 0 rejects every request), ttl, reason; a trial:
 * limit, ttl (required, at most a day). */
bool changeOf(Route route, json::Object &body, Change *c, Error *err) {
    auto bad = [&](const char *text) {
        *err = {400, "BodyInvalid", text};
        return false;
    };
    bool trial = route == Route::Trial;
    bool setting = route == Route::Limit || trial;
    for (size_t i = 0; i < body.n; i++) {
        const json::Member &m = body.members[i];
        bool number = m.kind == json::Member::Kind::Number;
        if (m.name == "ttl") {
            if (m.kind == json::Member::Kind::Null && !trial) {
                continue;
            }
            /* (the fleet holds a setting read from Redis to the same
             * bounds: live::settingFits()) */
            int64_t most = trial ? live::kMaxTrialTtlS
                                 : live::kMaxLimitTtlS;
            if (!number || m.number < 1 || m.number > most) {
                return bad(trial ? "\"ttl\" is a whole number of seconds, "
                                   "from 1 to a day (86400)"
                                 : "\"ttl\" is a whole number of seconds, "
                                   "from 1 to ten years");
            }
            c->ttl = m.number;
        } else if (m.name == "reason" &&
                   (route == Route::Block || route == Route::Limit)) {
            if (m.kind != json::Member::Kind::String || m.text.size() > 256) {
                return bad("\"reason\" is a string of at most 256 bytes");
            }
            for (char ch : m.text) {
                if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) {
                    return bad("\"reason\" holds a control character");
                }
            }
            c->reason = m.text;
        } else if (m.name == "limit" && (route == Route::Override || setting)) {
            int64_t least = setting ? 0 : 1;
            if (!number || m.number < least || m.number > live::kMaxLimit) {
                return bad(setting ? "\"limit\" is a whole number from 0 to "
                                  "1e9"
                                : "\"limit\" is a whole number from 1 to "
                                  "1e9");
            }
            c->limit = m.number;
        } else if (m.name == "units" && route == Route::Credit) {
            if (!number || m.number < 1 || m.number > 1000000000) {
                return bad("\"units\" is a whole number from 1 to 1e9");
            }
            c->units = m.number;
        } else {
            return bad(route == Route::Block
                           ? "a block takes \"ttl\" and \"reason\" only"
                       : route == Route::Limit
                           ? "a live limit takes \"limit\", \"ttl\" and "
                             "\"reason\" only"
                       : trial ? "a trial takes \"limit\" and \"ttl\" only"
                       : route == Route::Credit
                           ? "a credit takes \"units\" only"
                           : "an override takes \"limit\" and \"ttl\" "
                             "only");
        }
    }
    if ((route == Route::Override || setting) && c->limit < 0) {
        return bad(route == Route::Override ? "an override needs \"limit\""
                                            : "a live limit or a trial needs "
                                              "\"limit\"");
    }
    if (trial && c->ttl == 0) {
        return bad("a trial needs \"ttl\" (1 to 86400 seconds): it ends by "
                   "itself");
    }
    if (route == Route::Credit && (c->units == 0 || c->ttl != 0)) {
        return bad("a credit takes \"units\", a whole number from 1 to "
                   "1e9, only");
    }
    return true;
}

/* What a POST or PUT waits for while its body is read: in a pool
 * cleanup of its own (the module's context is the request's decision,
 * the location may have rules), found by its handler. */
struct Pending {
    RuleSet set;
    std::string_view value;
    Route route;
    int anchor;
};

void pendingTag(void *) noexcept {}

Pending *pendingOf(ngx_http_request_t *r) {
    for (ngx_pool_cleanup_t *c = r->pool->cleanup; c; c = c->next) {
        if (c->handler == pendingTag) {
            return static_cast<Pending *>(c->data);
        }
    }
    return nullptr;
}

void bodyRead(ngx_http_request_t *r) noexcept {
    Pending *p = pendingOf(r);
    /* the body, in memory (a small one: nginx keeps it in its buffer) */
    u_char *text = static_cast<u_char *>(ngx_pnalloc(r->pool, kMaxBody));
    size_t len = 0;
    bool fits = text != nullptr && r->request_body != nullptr;
    for (ngx_chain_t *cl = fits ? r->request_body->bufs : nullptr;
         cl != nullptr && fits; cl = cl->next) {
        ngx_buf_t *b = cl->buf;
        size_t n = static_cast<size_t>(b->last - b->pos);
        fits = !b->in_file && len + n <= kMaxBody;
        if (fits) {
            ngx_memcpy(text + len, b->pos, n);
            len += n;
        }
    }
    Error err;
    json::Object body;
    const char *why = nullptr;
    Change change;
    change.anchor = p->anchor;
    ngx_int_t rc;
    if (!fits) {
        rc = sendError(r, {413, "BodyInvalid",
                           "the body is longer than 4096 bytes"});
    } else if (!json::parseObject(reinterpret_cast<char *>(text), len, &body,
                                  &why)) {
        rc = sendError(r, {400, "BodyInvalid", why});
    } else if (!changeOf(p->route, body, &change, &err)) {
        rc = sendError(r, err);
    } else if (p->route == Route::Limit || p->route == Route::Trial) {
        rc = liveOperation(r, p->set.first->named, p->route, methodOf(r),
                           change);
    } else {
        rc = keyOperation(r, p->set, p->value, p->route, methodOf(r),
                          change);
    }
    ngx_http_finalize_request(r, rc);
}

/* POST and PUT: JSON, no longer than kMaxBody, read before the write. */
ngx_int_t readBody(ngx_http_request_t *r, const RuleSet &set,
                   std::string_view value, Route route, int anchor) {
    ngx_table_elt_t *type = r->headers_in.content_type;
    std::string_view t = type != nullptr ? viewOf(type->value) : "";
    size_t end = t.find(';');
    t = t.substr(0, end);
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) {
        t.remove_suffix(1);
    }
    if (t.size() != 16 ||
        ngx_strncasecmp(reinterpret_cast<u_char *>(const_cast<char *>(
                            t.data())),
                        reinterpret_cast<u_char *>(const_cast<char *>(
                            "application/json")), 16) != 0) {
        return refuse(r, {415, "BodyInvalid",
                          "a write's body is application/json"});
    }
    if (r->headers_in.content_length_n > static_cast<off_t>(kMaxBody)) {
        return refuse(r, {413, "BodyInvalid",
                          "the body is longer than 4096 bytes"});
    }
    ngx_pool_cleanup_t *cln = ngx_pool_cleanup_add(r->pool, sizeof(Pending));
    if (cln == nullptr) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    cln->handler = pendingTag;
    *static_cast<Pending *>(cln->data) = {set, value, route, anchor};
    r->request_body_in_single_buf = 1;
    ngx_int_t rc = ngx_http_read_client_request_body(r, bodyRead);
    return rc >= NGX_HTTP_SPECIAL_RESPONSE ? rc : NGX_DONE;
}

/* The path below the location, as the client sent it (a name or value
 * may hold an encoded '/'), and its query; or as nginx decoded it when
 * the request came here otherwise (a rewrite). */
bool pathOf(ngx_http_request_t *r, ngx_str_t *path, ngx_str_t *query,
            bool *decoded) {
    auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(
        ngx_http_get_module_loc_conf(r, ngx_http_core_module));
    ngx_str_t prefix = clcf->name;
    ngx_str_t raw = r->unparsed_uri;
    u_char *q = static_cast<u_char *>(ngx_strlchr(raw.data,
                                                  raw.data + raw.len, '?'));
    if (q != nullptr) {
        raw.len = static_cast<size_t>(q - raw.data);
    }
    ngx_str_t from = raw;
    *decoded = false;
    if (raw.len < prefix.len ||
        ngx_strncmp(raw.data, prefix.data, prefix.len) != 0) {
        from = r->uri;
        *decoded = true;
        if (from.len < prefix.len ||
            ngx_strncmp(from.data, prefix.data, prefix.len) != 0) {
            prefix.len = 0;   /* (a regex location: the whole path) */
        }
    }
    size_t skip = prefix.len > 0 && prefix.data[prefix.len - 1] == '/'
                      ? prefix.len - 1 : prefix.len;
    path->len = from.len - skip;
    query->len = r->args.len;
    path->data = static_cast<u_char *>(
        ngx_pnalloc(r->pool, path->len + query->len + 1));
    if (path->data == nullptr) {
        return false;
    }
    ngx_memcpy(path->data, from.data + skip, path->len);
    if (path->len == 0) {
        path->data[0] = '/';    /* the location itself: its page */
        path->len = 1;
    }
    query->data = path->data + path->len;
    if (query->len > 0) {
        ngx_memcpy(query->data, r->args.data, query->len);
    }
    return true;
}

ngx_int_t handle(ngx_http_request_t *r) {
    auto *lcf = static_cast<ngx_http_rl_loc_conf_t *>(
        ngx_http_get_module_loc_conf(r, ngx_http_rl_module));
    Method method = methodOf(r);
    if (method != Method::Post && method != Method::Put) {
        ngx_int_t rc = ngx_http_discard_request_body(r);
        if (rc != NGX_OK) {
            return rc;
        }
    }
    ngx_str_t path, query;
    bool decoded;
    if (!pathOf(r, &path, &query, &decoded)) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    Request req;
    Error err;
    if (!parse(reinterpret_cast<char *>(path.data), path.len,
               reinterpret_cast<char *>(query.data), query.len, decoded, &req,
               &err)) {
        return refuse(r, err);
    }
    if (!allows(req.route, method)) {
        if (!header(r, "Allow", allowHeader(req.route))) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
        return refuse(r, {405, "MethodNotAllowed",
                          "that method is not allowed here"});
    }
    if (isWrite(method) && lcf->api != NGX_HTTP_RL_API_WRITE) {
        return refuse(r, {403, "WriteForbidden",
                          "writes are off here (rl_api write=on allows "
                          "them)"});
    }

    ngx_http_rl_main_conf_t *rmcf = mainConf(r);
    Json out(r->pool);
    RuleSet set;
    switch (req.route) {
    case Route::Page:
        return page(r);
    case Route::Endpoints:
        out.raw("{\"version\":1,\"endpoints\":[\"zones\",\"rules\","
                "\"fleet\",\"audit\"],\"write\":")
            .boolean(lcf->api == NGX_HTTP_RL_API_WRITE).raw("}\n");
        return send(r, NGX_HTTP_OK, out);
    case Route::Zones:
        return send(r, NGX_HTTP_OK, zones(out, rmcf));
    case Route::Rules:
        live::sweep(rmcf);
        return send(r, NGX_HTTP_OK, rules(out, rmcf));
    case Route::Fleet:
    case Route::FleetRules:
    case Route::FleetTop:
    case Route::Audit:
        return fleetRead(r, req);
    default:
        break;
    }
    if (!findRules(r, req, &set, &err)) {
        return refuse(r, err);
    }
    if (req.route == Route::Rule) {
        rule(out, rmcf, set.first).raw("\n");
        return send(r, NGX_HTTP_OK, out);
    }
    if (req.route == Route::Top) {
        return top(r, set, req.top, req.trial);
    }
    if (req.route == Route::Limit || req.route == Route::Trial) {
        return method == Method::Put
                   ? readBody(r, set, {}, req.route, 0)
                   : liveOperation(r, set.first->named, req.route, method,
                                   Change{});
    }
    std::string_view value;
    if (!keyOf(r, set, req.value, &value, &err)) {
        return refuse(r, err);
    }
    if (req.route == Route::Credit && !creditable(set, &err)) {
        return refuse(r, err);
    }
    if (method == Method::Post || method == Method::Put) {
        return readBody(r, set, value, req.route, req.anchor);
    }
    Change change;
    change.anchor = req.anchor;
    return keyOperation(r, set, value, req.route, method, change);
}

}  // namespace
}  // namespace rl::api

extern "C" ngx_int_t ngx_http_rl_api_handler(ngx_http_request_t *r) noexcept {
    try {
        return rl::api::handle(r);
    } catch (...) {
        ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                      "rl_api: unexpected exception");
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
}
