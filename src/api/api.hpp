/* The operator API and dashboard (SPEC section 8, rl_api): what its
 * files share. api.cpp routes a request and answers from the tables
 * the module has (zones, rules, counters, top keys); api/keys.cpp reads
 * and writes one key value in its rule's store; api/json.cpp writes the
 * answers. */
#pragma once

#include "ngx.hpp"

#include <string_view>

#include "core/api_path.hpp"
#include "core/json.hpp"

namespace rl::api {

inline ngx_http_rl_main_conf_t *mainConf(ngx_http_request_t *r) {
    return static_cast<ngx_http_rl_main_conf_t *>(
        ngx_http_get_module_main_conf(r, ngx_http_rl_module));
}

/* An answer's JSON, in buffers of the request's pool. */
class Json {
public:
    explicit Json(ngx_pool_t *pool) : pool_(pool) {}

    Json &raw(const char *s, size_t n);
    Json &raw(std::string_view s) { return raw(s.data(), s.size()); }
    /* a string, quoted and escaped */
    Json &str(std::string_view s);
    Json &num(int64_t v);
    /* "name": (the caller writes the commas) */
    Json &key(std::string_view name) { return str(name).raw(":", 1); }
    Json &boolean(bool v) { return v ? raw("true", 4) : raw("false", 5); }

    bool failed() const { return failed_; }
    ngx_chain_t *chain() const { return first_; }
    size_t length() const { return length_; }

private:
    u_char *room(size_t n);

    ngx_pool_t *pool_;
    ngx_chain_t *first_ = nullptr;
    ngx_chain_t *last_ = nullptr;
    size_t length_ = 0;
    bool failed_ = false;
};

/* A time in seconds, as few digits as it needs (900, 0.5). */
Json &seconds(Json &out, uint64_t us);

/* A response header (its name and value live as long as the request):
 * false when out of memory. */
bool header(ngx_http_request_t *r, const char *name, const char *value);

/* Sends the answer, returns what a content handler returns. */
ngx_int_t send(ngx_http_request_t *r, ngx_uint_t status, const Json &body);
ngx_int_t sendEmpty(ngx_http_request_t *r, ngx_uint_t status);
ngx_int_t sendError(ngx_http_request_t *r, const Error &e);

/* The rules an operator names with a zone and a name: one entry of
 * /1/rules (rmcf->names). `first` is the one shown (the first written);
 * rules[0..n) each state of that name once (rules of one name in
 * several places with other rates or keys have several: any number). */
struct RuleSet {
    ngx_http_rl_rule_t *first;
    ngx_http_rl_rule_t **rules;
    size_t n;
    bool address;   /* key=$binary_remote_addr: an address in text */
};

/* What a write asks (its body, checked). */
struct Change {
    int64_t ttl = 0;            /* seconds, 0: none given */
    std::string_view reason;    /* a block's, a live limit's */
    int64_t limit = -1;         /* an override's, a live limit's or a
                                   trial's; -1: none given */
    int64_t units = 0;          /* a credit's (SPEC section 12) */
    int anchor = 0;             /* ?anchor=: the key's billing day */
};

/* A key's state (GET), or a write: answers r, now or once its store
 * answered (then NGX_DONE, the request held meanwhile). */
ngx_int_t keyOperation(ngx_http_request_t *r, const RuleSet &set,
                       std::string_view value, Route route, Method method,
                       const Change &change);

/* Writes the key value as the API shows it (keyText: an address, or
 * printable). */
Json &keyValue(Json &out, const RuleSet &set, std::string_view value);

/* api/live.cpp: a write of a rule name's live limit or trial (SPEC
 * section 11: PUT with its change, DELETE), answered now or once Redis
 * took it (then NGX_DONE). */
ngx_int_t liveOperation(ngx_http_request_t *r, const ngx_http_rl_name_t *name,
                        Route route, Method method, const Change &change);

/* A key's write in its zone's audit (SPEC section 11), sent with no one
 * waiting: action, the rule's name, the key as text and as bytes, the
 * detail as a JSON object. Embedded zones have none. */
void auditKeyWrite(ngx_http_request_t *r, ngx_http_rl_zone_t *zone,
                   std::string_view action, std::string_view rule,
                   std::string_view keyText, std::string_view value,
                   std::string_view detail);

/* api/fleet.cpp: the fleet's reads (SPEC section 11: /1/fleet,
 * /1/fleet/rules, /1/fleet/rules/NAME/top, /1/audit), answered once
 * Redis did (NGX_DONE). */
ngx_int_t fleetRead(ngx_http_request_t *r, const Request &req);

/* The answer's JSON in one piece of the pool (empty on failure). */
std::string_view flatten(ngx_pool_t *pool, const Json &j);

/* concurrency=auto (SPEC 13, api/adaptive.cpp): the rule's current N
 * (its busiest key value's; min before any), and its "adaptive" and
 * "priorities" members, the levels' outcomes given ([level][passed,
 * rejected]). */
int64_t adaptiveLimit(ngx_http_rl_main_conf_t *rmcf,
                      const ngx_http_rl_rule_t *rule);
Json &adaptiveJson(Json &out, ngx_http_rl_main_conf_t *rmcf,
                   const ngx_http_rl_rule_t *rule,
                   const int64_t priorities[4][2]);

}  // namespace rl::api
