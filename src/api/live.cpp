/*
 * api/live.cpp: the operator API's writes of a rule name's live limit
 * and trial (SPEC section 11: PUT and DELETE /1/rules/NAME/limit and
 * /1/rules/NAME/trial), and the audit entry every write of the API
 * leaves in its zone's stream.
 *
 * A Redis zone's settings are the fleet's: written with lua/fleet.lua
 * (the setting and its audit entry in one EVAL, on the node of the
 * fleet's hash tag), applied here as soon as Redis took them, and by
 * every other instance within a second (src/fleet/fleet.cpp). An embedded
 * zone's are this instance's alone, applied at once.
 */

#include "api.hpp"

#include "wait.hpp"
#include "core/key_text.hpp"
#include "fleet/fleet.hpp"
#include "shm/live.hpp"
#include "redis/link.hpp"

namespace rl::api {
namespace {

constexpr ngx_msec_t kMinWait = 1000;

int64_t nowMs() {
    ngx_time_t *tp = ngx_timeofday();
    return static_cast<int64_t>(tp->sec) * 1000 + tp->msec;
}

/* A write of a setting, in the request's pool. */
struct LiveWrite {
    const ngx_http_rl_name_t *name;
    live::Kind kind;
    bool set;               /* PUT, else DELETE */
    Change change;
    int64_t redisNowMs;     /* Redis' clock when it took the write */
    bool hadOld;
    const char *failure;
};

const char *kindWord(live::Kind kind, bool set) {
    if (kind == live::Kind::Limit) {
        return set ? "limit" : "unlimit";
    }
    return set ? "trial" : "untrial";
}

/* The write, logged at notice: who, what, and what was there. */
void logLive(ngx_http_request_t *r, const LiveWrite *lw) {
    const ngx_http_rl_rule_t *rule = lw->name->first;
    u_char detail[64];
    u_char *d = detail, *end = detail + sizeof(detail);
    if (lw->set) {
        d = ngx_slprintf(d, end, " to %L", lw->change.limit);
    }
    if (lw->set && lw->change.ttl > 0) {
        d = ngx_slprintf(d, end, " for %L s", lw->change.ttl);
    }
    ngx_log_error(NGX_LOG_NOTICE, r->connection->log, 0,
                  "rl_api: %V %s rule \"%V\" in zone \"%V\"%*s (was: %s)",
                  &r->connection->addr_text,
                  lw->set ? (lw->kind == live::Kind::Limit
                                 ? "set the live limit of"
                                 : "started a trial of")
                          : (lw->kind == live::Kind::Limit
                                 ? "removed the live limit of"
                                 : "ended the trial of"),
                  &rule->name, &rule->zone->name,
                  static_cast<size_t>(d - detail), detail,
                  lw->hadOld ? "a setting" : "nothing");
}

/* This instance applies the write (a Redis zone's at Redis' times). */
void apply(ngx_http_request_t *r, LiveWrite *lw) {
    live::Setting s;
    if (lw->set) {
        int64_t now = lw->redisNowMs;
        s.limit = lw->change.limit;
        s.sinceMs = now;
        s.untilMs = lw->change.ttl > 0 ? now + lw->change.ttl * 1000 : 0;
        s.by = viewOf(r->connection->addr_text);
        s.reason = lw->change.reason;
    }
    (void) live::write(lw->name, lw->kind, s, lw->change.ttl * 1000);
}

ngx_int_t answer(ngx_http_request_t *r, LiveWrite *lw) {
    if (lw->failure != nullptr) {
        return sendError(r, {503, "StoreUnavailable", lw->failure});
    }
    apply(r, lw);
    logLive(r, lw);
    if (!lw->set) {
        return sendEmpty(r, NGX_HTTP_NO_CONTENT);
    }
    const ngx_http_rl_rule_t *rule = lw->name->first;
    Json out(r->pool);
    out.raw("{\"rule\":").str(viewOf(rule->name))
        .raw(",\"zone\":").str(viewOf(rule->zone->name))
        .raw(lw->kind == live::Kind::Limit ? ",\"live\":" : ",\"trial\":")
        .raw("{\"limit\":").num(lw->change.limit).raw(",\"until\":");
    if (lw->change.ttl > 0) {
        out.num((lw->redisNowMs + lw->change.ttl * 1000 + 999) / 1000);
    } else {
        out.raw("null");
    }
    if (lw->kind == live::Kind::Limit) {
        out.raw(",\"reason\":").str(lw->change.reason);
    }
    out.raw(",\"by\":").str(viewOf(r->connection->addr_text))
        .raw("},\"configured\":").num(static_cast<int64_t>(rule->limit))
        .raw("}\n");
    return send(r, NGX_HTTP_OK, out);
}

void written(Wait *w, ngx_uint_t, const redisReply *reply, Link *) {
    auto *lw = static_cast<LiveWrite *>(w->data);
    if (reply == nullptr) {
        lw->failure = "the connection to Redis was lost";
    } else if (reply->type == REDIS_REPLY_ERROR) {
        lw->failure = "Redis answered an error";
        ngx_log_error(NGX_LOG_ERR, w->r->connection->log, 0,
                      "rl_api: a live setting's write failed: %*s",
                      reply->len, reply->str);
    } else if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 2 ||
               reply->element[0]->type != REDIS_REPLY_INTEGER) {
        lw->failure = "Redis sent no reply of lua/fleet.lua's";
    } else {
        lw->redisNowMs = reply->element[0]->integer;
        lw->hadOld = reply->element[1]->type == REDIS_REPLY_STRING;
    }
}

ngx_int_t concluded(Wait *w) {
    auto *lw = static_cast<LiveWrite *>(w->data);
    if (w->timedOut) {
        ngx_log_error(NGX_LOG_WARN, w->r->connection->log, 0,
                      "rl_api: no answer from Redis to a live setting of "
                      "rule \"%V\" in time: it may still be applied",
                      &lw->name->first->name);
        return sendError(w->r, {503, "StoreUnavailable",
                                "Redis did not answer in time: the write "
                                "may still be applied when it does"});
    }
    return answer(w->r, lw);
}

/* The user nginx's auth_basic checked for this request, or none. The
 * Authorization header alone ($remote_user) is whatever the client
 * claims: a name is recorded only where auth_basic is on in the
 * request's location (a realm not "off", a user file) under `satisfy
 * all` (the default), so that the request reached the API only with
 * that user's password. Under `satisfy any` an address let in may claim
 * any name: none is recorded. */
ngx_str_t checkedUser(ngx_http_request_t *r) {
    /* auth_basic's location conf, private to it: the realm first (NULL:
     * none), the user file second (a pointer; an inline complex value,
     * its length first, in older nginx: 0 either way when none was
     * given) */
    struct AuthBasic {
        ngx_http_complex_value_t *realm;
        uintptr_t userFile;
    };
    ngx_str_t none = ngx_null_string, realm;
    if (&ngx_http_auth_basic_module == nullptr) {
        return none;
    }
    auto *ab = static_cast<const AuthBasic *>(
        ngx_http_get_module_loc_conf(r, ngx_http_auth_basic_module));
    auto *clcf = static_cast<ngx_http_core_loc_conf_t *>(
        ngx_http_get_module_loc_conf(r, ngx_http_core_module));
    if (ab == nullptr || ab->realm == nullptr || ab->userFile == 0 ||
        clcf->satisfy != NGX_HTTP_SATISFY_ALL ||
        ngx_http_complex_value(r, ab->realm, &realm) != NGX_OK ||
        (realm.len == 3 && ngx_strncmp(realm.data, "off", 3) == 0) ||
        ngx_http_auth_basic_user(r) != NGX_OK) {
        return none;
    }
    return r->headers_in.user;
}

/* The audit entry's fields (SPEC section 11): who, what, of which rule
 * and key, the detail as a JSON object. */
void auditFields(ngx_http_request_t *r, fleet::Eval *a,
                 std::string_view action,
                 std::string_view rule, std::string_view keyText,
                 const std::string_view *value, std::string_view detail) {
    ngx_http_rl_main_conf_t *rmcf = mainConf(r);
    a->arg("id").arg(fleet::instanceId(rmcf))
        .arg("instance").arg(fleet::instanceName(rmcf))
        .arg("client").arg(r->connection->addr_text)
        .arg("user").arg(checkedUser(r))
        .arg("action").arg(action).arg("rule").arg(rule)
        .arg("key").arg(keyText);
    if (value != nullptr) {
        a->arg("value").arg(*value);
    }
    a->arg("detail").arg(detail);
}

/* {"limit": N, "ttl": S, "reason": "..."} of a setting's write */
std::string_view settingDetail(ngx_pool_t *pool, const LiveWrite *lw) {
    Json out(pool);
    out.raw("{");
    if (lw->set) {
        out.raw("\"limit\":").num(lw->change.limit).raw(",\"ttl\":");
        if (lw->change.ttl > 0) {
            out.num(lw->change.ttl);
        } else {
            out.raw("null");
        }
        if (!lw->change.reason.empty()) {
            out.raw(",\"reason\":").str(lw->change.reason);
        }
    }
    out.raw("}");
    return flatten(pool, out);
}

}  // namespace

std::string_view flatten(ngx_pool_t *pool, const Json &j) {
    auto *p = static_cast<u_char *>(ngx_pnalloc(pool, j.length() + 1));
    if (p == nullptr || j.failed()) {
        return {};
    }
    u_char *q = p;
    for (ngx_chain_t *cl = j.chain(); cl != nullptr; cl = cl->next) {
        q = ngx_cpymem(q, cl->buf->pos, cl->buf->last - cl->buf->pos);
    }
    return {reinterpret_cast<char *>(p), static_cast<size_t>(q - p)};
}

ngx_int_t liveOperation(ngx_http_request_t *r, const ngx_http_rl_name_t *name,
                        Route route, Method method, const Change &change) {
    auto *lw = static_cast<LiveWrite *>(ngx_pcalloc(r->pool,
                                                    sizeof(LiveWrite)));
    if (lw == nullptr) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    lw->name = name;
    lw->kind = route == Route::Limit ? live::Kind::Limit : live::Kind::Trial;
    lw->set = method == Method::Put;
    lw->change = change;
    const char *why = nullptr;
    if (lw->set && !live::settingFits(name, lw->kind, change.limit,
                                      change.ttl * 1000, &why)) {
        return sendError(r, {400, "BodyInvalid", why});
    }
    const ngx_http_rl_rule_t *rule = name->first;
    ngx_http_rl_zone_t *zone = rule->zone;
    if (ngx_http_rl_embedded(zone)) {
        /* this instance's alone */
        lw->redisNowMs = nowMs();
        return answer(r, lw);
    }
    ngx_http_rl_main_conf_t *rmcf = mainConf(r);
    Link *link = fleet::linkOf(rmcf, zone);
    ngx_str_t keys[4];
    if (link == nullptr || !fleet::keys(r->pool, zone, keys)) {
        return sendError(r, {503, "StoreUnavailable",
                             "Redis cannot be reached now"});
    }
    fleet::Eval a(keys, lw->set ? "set" : "clear");
    a.arg(lw->kind == live::Kind::Limit ? "live" : "trial").arg(rule->name);
    if (lw->set) {
        a.num(change.limit).num(change.ttl * 1000)
            .arg(r->connection->addr_text).arg(change.reason);
    }
    auditFields(r, &a, kindWord(lw->kind, lw->set), viewOf(rule->name), "",
                nullptr, settingDetail(r->pool, lw));
    Wait *w = waitFor(r, lw, written, concluded);
    if (w == nullptr) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    if (!waitSend(w, link, 0, a.argc(), a.argv(), a.len())) {
        return sendError(r, {503, "StoreUnavailable",
                             "the command could not be sent to Redis"});
    }
    return waitHold(w, zone->timeout > kMinWait ? zone->timeout : kMinWait);
}

void auditKeyWrite(ngx_http_request_t *r, ngx_http_rl_zone_t *zone,
                   std::string_view action, std::string_view rule,
                   std::string_view keyText, std::string_view value,
                   std::string_view detail) {
    ngx_http_rl_main_conf_t *rmcf = mainConf(r);
    Link *link = fleet::linkOf(rmcf, zone);
    ngx_str_t keys[4];
    if (link == nullptr || !fleet::keys(r->pool, zone, keys)) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "rl_api: the write was not recorded in the audit "
                      "of zone \"%V\": Redis cannot be reached now",
                      &zone->name);
        return;
    }
    fleet::Eval a(keys, "audit");
    auditFields(r, &a, action, rule, keyText, &value, detail);
    /* nobody waits for it (hiredis copies the arguments) */
    (void) link->operatorCommand(nullptr, nullptr, a.argc(), a.argv(),
                                 a.len());
}

}  // namespace rl::api
