/*
 * api/fleet.cpp: the fleet's reads (SPEC section 11), one EVAL of
 * lua/fleet.lua on the node of the zone's fleet keys, its answer made
 * here from the instances' records (src/core/fleet_record.hpp):
 *   GET /1/fleet                   the instances, seen, gone, drift
 *   GET /1/fleet/rules             their rules, counters and usage summed
 *   GET /1/fleet/rules/NAME/top    their top keys merged (?trial=1)
 *   GET /1/audit                   the zone's audit, newest first
 * ?zone=Z picks the zone (default: the first with Redis).
 */

#include "api.hpp"

#include <algorithm>
#include <map>
#include <new>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "wait.hpp"
#include "core/fleet_record.hpp"
#include "core/key_text.hpp"
#include "core/top_keys.hpp"
#include "core/usage.hpp"
#include "fleet/fleet.hpp"
#include "fleet/publish.hpp"
#include "shm/live.hpp"
#include "redis/link.hpp"

namespace rl::api {
namespace {

constexpr ngx_msec_t kMinWait = 1000;

std::string_view replyText(const redisReply *r) {
    return r != nullptr && r->type == REDIS_REPLY_STRING && r->str != nullptr
               ? std::string_view(r->str, r->len) : std::string_view();
}

/* A field of a record, unescaped (a copy). */
std::string text(std::string_view field) {
    std::string s(field);
    long n = fleet::unescape(s.data(), s.size());
    s.resize(n < 0 ? 0 : static_cast<size_t>(n));
    return s;
}

int64_t num(std::string_view field) {
    int64_t v = 0;
    return fleet::number(field, &v) ? v : 0;
}

/* A sum of the instances' counters: at most 2^63 - 1, whatever records
 * say (each number is at most 2^53, but any number of records add up). */
int64_t add(int64_t sum, int64_t v) {
    return fleet::saturatingAdd(sum, v);
}

/* An instance as the fleet's keys have it. */
struct Instance {
    std::string id, name, version, nginx;
    int64_t started = 0, workers = 0, intervalMs = 5000;
    int64_t seenMs = 0;         /* ago */
    bool gone = false, up = false, duplicate = false, hasRecord = false;
    std::string_view record;    /* (in the reply: read while it lives) */
    std::vector<size_t> drift;  /* the rules it defines unlike most */
};

/* A rule of the fleet: its first definition seen, its sums. */
struct Definition {
    std::string digest, algorithm, key;
    int64_t limit = 0, windowUs = 0, burst = 0, cost = 0, holdUs = 0;
    bool dry = false, charge = false;
    std::vector<size_t> instances;      /* (their places in the list) */
    /* a calendar rule's (its record's calendar line) */
    bool calendar = false;
    std::string period, tz, anchor;     /* (anchor "": none) */
};

/* (Each instance is met once, each of its rules once: nothing here is
 * compared with every instance, or the worker is held for seconds by a
 * fleet of thousands.) */
struct FleetRule {
    std::string name;
    int64_t requests[NGX_HTTP_RL_OUTCOMES] = {};
    int64_t usage[usage::kBuckets] = {};
    size_t instances = 0;
    std::vector<Definition> defs;
    std::unordered_map<std::string, size_t> defAt;  /* by digest */
    bool hasTrial = false;
    int64_t trialLimit = 0, trialUntilMs = 0, trialPassed = 0,
            trialRejected = 0;
    /* concurrency=auto: its levels' outcomes, summed ("auto" lines) */
    bool adaptive = false;
    int64_t priorities[4][2] = {};
};

/* What a read asked, and got. */
struct Read {
    Request req;
    ngx_http_rl_zone_t *zone;
    const char *failure;
    int64_t nowMs;
    std::vector<Instance> *instances;
    const redisReply *entries;  /* the audit's (copied out below) */
    Json *answer;               /* made from the reply (in the pool);
                                   NULL: no instance has the rule */
};

void identityOf(std::string_view line, Instance *in) {
    fleet::Line l;
    if (!fleet::nextLine(&line, &l) || l.n < 7) {
        return;
    }
    in->name = text(l.fields[1]);
    in->version = text(l.fields[2]);
    in->nginx = text(l.fields[3]);
    in->started = num(l.fields[4]);
    in->workers = num(l.fields[5]);
    int64_t iv = num(l.fields[6]);
    in->intervalMs = iv > 0 ? iv : 5000;
}

/* The instances of the fleet's reply: { now, ids, seen, who, records } */
bool instancesOf(const redisReply *r, Read *rd) {
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 5 ||
        r->element[0]->type != REDIS_REPLY_INTEGER) {
        return false;
    }
    rd->nowMs = r->element[0]->integer;
    const redisReply *ids = r->element[1], *seen = r->element[2],
                     *who = r->element[3], *recs = r->element[4];
    if (ids->type != REDIS_REPLY_ARRAY) {
        return false;
    }
    for (size_t i = 0; i < ids->elements; i++) {
        Instance in;
        in.id = std::string(replyText(ids->element[i]));
        if (seen->type == REDIS_REPLY_ARRAY && i < seen->elements) {
            int64_t at = num(replyText(seen->element[i]));
            in.seenMs = rd->nowMs > at ? rd->nowMs - at : 0;
        }
        if (who->type == REDIS_REPLY_ARRAY && i < who->elements) {
            identityOf(replyText(who->element[i]), &in);
        }
        if (recs->type == REDIS_REPLY_ARRAY && i < recs->elements &&
            recs->element[i]->type == REDIS_REPLY_STRING) {
            in.record = replyText(recs->element[i]);
            in.hasRecord = true;
        }
        in.gone = !in.hasRecord || in.seenMs > 3 * in.intervalMs;
        rd->instances->push_back(std::move(in));
    }
    /* two ids under one name: reported, not merged (an instance is a
     * duplicate when another of its name is not gone) */
    std::unordered_map<std::string_view, size_t> named;
    for (const Instance &in : *rd->instances) {
        named[in.name] += in.gone ? 0 : 1;
    }
    for (Instance &in : *rd->instances) {
        in.duplicate = named[in.name] > (in.gone ? 0 : 1);
    }
    return true;
}

/* The rules of every instance not gone, in the order first met. */
std::vector<FleetRule> rulesOf(std::vector<Instance> &all) {
    std::vector<FleetRule> rules;
    std::unordered_map<std::string, size_t> at;
    for (size_t i = 0; i < all.size(); i++) {
        Instance &in = all[i];
        if (in.gone) {
            continue;
        }
        std::string_view rest = in.record;
        fleet::Line l;
        /* the definition of the line before, if a rule line's (a line
         * of any other kind, a trial's too, leaves none) */
        constexpr size_t kNone = SIZE_MAX;
        size_t lastRule = kNone, lastDef = 0;
        while (fleet::nextLine(&rest, &l)) {
            std::string_view kind = l.fields[0];
            size_t before = lastRule;
            lastRule = kNone;
            if (kind == "zone" && l.n >= 3) {
                in.up = l.fields[2] == "1";
                continue;
            }
            if (kind == "auto" && l.n >= 10 && before != kNone &&
                text(l.fields[1]) == rules[before].name) {
                FleetRule &fr = rules[before];
                fr.adaptive = true;
                for (int k = 0; k < 8; k++) {
                    fr.priorities[k / 2][k % 2] = add(
                        fr.priorities[k / 2][k % 2], num(l.fields[2 + k]));
                }
                lastRule = before;     /* (a calendar line may follow) */
                continue;
            }
            if (kind == "calendar" && l.n >= 5 && before != kNone &&
                text(l.fields[1]) == rules[before].name) {
                Definition &d = rules[before].defs[lastDef];
                d.calendar = true;
                d.period = text(l.fields[2]);
                d.tz = text(l.fields[3]);
                d.anchor = text(l.fields[4]);
                continue;
            }
            bool rule = kind == "rule" && l.n >= 24;
            bool trial = kind == "trial" && l.n >= 7;
            if (!rule && !trial) {
                continue;
            }
            std::string name = text(l.fields[1]);
            auto it = at.find(name);
            if (it == at.end()) {
                it = at.emplace(name, rules.size()).first;
                rules.emplace_back();
                rules.back().name = name;
            }
            FleetRule &fr = rules[it->second];
            if (trial) {
                fr.hasTrial = true;
                fr.trialLimit = num(l.fields[2]);
                fr.trialUntilMs = num(l.fields[3]);
                fr.trialPassed = add(fr.trialPassed, num(l.fields[5]));
                fr.trialRejected = add(fr.trialRejected, num(l.fields[6]));
                continue;
            }
            fr.instances++;
            for (int o = 0; o < NGX_HTTP_RL_OUTCOMES; o++) {
                fr.requests[o] = add(fr.requests[o], num(l.fields[12 + o]));
            }
            for (size_t b = 0; b < usage::kBuckets; b++) {
                fr.usage[b] = add(fr.usage[b], num(l.fields[17 + b]));
            }
            std::string digest(l.fields[2]);
            auto d = fr.defAt.find(digest);
            if (d == fr.defAt.end()) {
                d = fr.defAt.emplace(digest, fr.defs.size()).first;
                Definition def;
                def.digest = digest;
                def.algorithm = text(l.fields[3]);
                def.limit = num(l.fields[4]);
                def.windowUs = num(l.fields[5]);
                def.burst = num(l.fields[6]);
                def.cost = num(l.fields[7]);
                def.dry = l.fields[8] == "1";
                def.holdUs = num(l.fields[9]);
                def.charge = l.fields[10] == "1";
                def.key = text(l.fields[11]);
                fr.defs.push_back(std::move(def));
            }
            fr.defs[d->second].instances.push_back(i);
            lastRule = it->second;
            lastDef = d->second;
        }
    }
    return rules;
}

/* The definition most instances have (the first met on a tie): the
 * others drift from it. (A rule has one at least: see fleetRules.) */
const Definition &usual(const FleetRule &fr) {
    size_t best = 0;
    for (size_t i = 1; i < fr.defs.size(); i++) {
        if (fr.defs[i].instances.size() > fr.defs[best].instances.size()) {
            best = i;
        }
    }
    return fr.defs[best];
}

/* ----------------------------------------------------------------- */
/* answers                                                            */

void seconds(Json &out, int64_t us) {
    out.num(us / 1000000);
    if (us % 1000000 != 0) {
        char frac[8];
        int n = 0;
        int64_t f = us % 1000000;
        frac[n++] = '.';
        for (int64_t d = 100000; f > 0; d /= 10) {
            frac[n++] = static_cast<char>('0' + f / d);
            f %= d;
        }
        out.raw(frac, static_cast<size_t>(n));
    }
}

/* Each instance's drift: the rules (in their order) it defines unlike
 * most instances. */
void driftOf(std::vector<Instance> &all, const std::vector<FleetRule> &rules) {
    for (size_t r = 0; r < rules.size(); r++) {
        const FleetRule &fr = rules[r];
        if (fr.defs.size() < 2) {
            continue;
        }
        const Definition &u = usual(fr);
        for (const Definition &d : fr.defs) {
            if (&d == &u) {
                continue;
            }
            for (size_t i : d.instances) {
                std::vector<size_t> &drift = all[i].drift;
                if (drift.empty() || drift.back() != r) {
                    drift.push_back(r);
                }
            }
        }
    }
}

void instances(Json &out, Read *rd, ngx_http_rl_main_conf_t *rmcf) {
    std::vector<FleetRule> rules = rulesOf(*rd->instances);
    driftOf(*rd->instances, rules);
    out.raw("{\"zone\":").str(viewOf(rd->zone->name))
        .raw(",\"interval\":")
        .num(static_cast<int64_t>(rmcf->fleet_interval / 1000))
        .raw(",\"instances\":[");
    bool first = true;
    for (const Instance &in : *rd->instances) {
        out.raw(first ? "\n{\"name\":" : ",\n{\"name\":").str(in.name)
            .raw(",\"id\":").str(in.id)
            .raw(",\"version\":").str(in.version)
            .raw(",\"nginx\":").str(in.nginx)
            .raw(",\"started\":").num(in.started / 1000)
            .raw(",\"seen\":").num(in.seenMs / 1000)
            .raw(",\"workers\":").num(in.workers)
            .raw(",\"interval\":").num(in.intervalMs / 1000)
            .raw(",\"up\":").boolean(in.up && !in.gone)
            .raw(",\"gone\":").boolean(in.gone)
            .raw(",\"duplicate\":").boolean(in.duplicate)
            .raw(",\"drift\":[");
        for (size_t k = 0; k < in.drift.size(); k++) {
            out.raw(k ? "," : "").str(rules[in.drift[k]].name);
        }
        out.raw("]}");
        first = false;
    }
    out.raw("\n]}\n");
}

/* This instance's entry of a name in the zone, if it has one. */
const ngx_http_rl_name_t *localName(ngx_http_rl_main_conf_t *rmcf,
                                    const ngx_http_rl_zone_t *zone,
                                    std::string_view name) {
    auto *names = static_cast<ngx_http_rl_name_t *>(rmcf->names.elts);
    for (ngx_uint_t i = 0; i < rmcf->names.nelts; i++) {
        if (names[i].first->zone == zone &&
            viewOf(names[i].first->name) == name) {
            return &names[i];
        }
    }
    return nullptr;
}

void fleetRule(Json &out, const FleetRule &fr, Read *rd,
               ngx_http_rl_main_conf_t *rmcf) {
    static const char *const kOutcome[NGX_HTTP_RL_OUTCOMES] = {
        "passed", "rejected", "rejected_dry_run", "delayed", "error"};
    const Definition &d = usual(fr);
    out.raw("{\"name\":").str(fr.name)
        .raw(",\"zone\":").str(viewOf(rd->zone->name))
        .raw(",\"algorithm\":").str(d.algorithm);
    /* the live limit as this instance read it from Redis (the fleet's) */
    const ngx_http_rl_name_t *n = localName(rmcf, rd->zone, fr.name);
    char by[live::kMaxBy], reason[live::kMaxReason];
    live::Setting l = n != nullptr
                          ? live::read(n, live::Kind::Limit, by, reason)
                          : live::Setting();
    /* an auto rule's N is the fleet's, as this instance heard it */
    bool adaptive = fr.adaptive && n != nullptr &&
                    n->first->adaptive != nullptr;
    int64_t configured = adaptive ? adaptiveLimit(rmcf, n->first) : d.limit;
    out.raw(",\"limit\":").num(l.limit >= 0 ? l.limit : configured);
    if (l.limit >= 0) {
        out.raw(",\"configured\":").num(configured)
            .raw(",\"live\":{\"limit\":").num(l.limit).raw(",\"until\":");
        if (l.untilMs > 0) {
            out.num((l.untilMs + 999) / 1000);
        } else {
            out.raw("null");
        }
        out.raw(",\"reason\":").str(l.reason).raw(",\"by\":").str(l.by)
            .raw("}");
    }
    if (d.algorithm == "concurrency") {
        seconds(out.raw(",\"window\":null,\"hold\":"), d.holdUs);
    } else {
        seconds(out.raw(",\"window\":"), d.windowUs);
    }
    if (d.calendar) {
        /* as /1/rules shows a calendar rule */
        out.raw(",\"period\":").str(d.period).raw(",\"tz\":").str(d.tz)
            .raw(",\"anchor\":");
        if (d.anchor.empty()) {
            out.raw("null");
        } else {
            out.str(d.anchor);
        }
    }
    out.raw(",\"key\":").str(d.key).raw(",\"requests\":{");
    for (int o = 0; o < NGX_HTTP_RL_OUTCOMES; o++) {
        out.raw(o ? ",\"" : "\"").raw(kOutcome[o]).raw("\":")
            .num(fr.requests[o]);
    }
    out.raw("},\"usage\":[");
    for (size_t b = 0; b < usage::kBuckets; b++) {
        out.raw(b ? ",{\"le\":" : "{\"le\":");
        if (b + 1 < usage::kBuckets) {
            out.raw(usage::kBoundText[b]);
        } else {
            out.str("+Inf");
        }
        out.raw(",\"count\":").num(fr.usage[b]).raw("}");
    }
    out.raw("]");
    if (adaptive) {
        adaptiveJson(out, rmcf, n->first, fr.priorities);
    }
    out.raw(",\"instances\":").num(static_cast<int64_t>(fr.instances));
    if (fr.hasTrial) {
        out.raw(",\"trial\":{\"limit\":").num(fr.trialLimit)
            .raw(",\"until\":");
        if (fr.trialUntilMs > 0) {
            out.num((fr.trialUntilMs + 999) / 1000);
        } else {
            out.raw("null");
        }
        out.raw(",\"passed\":").num(fr.trialPassed)
            .raw(",\"rejected\":").num(fr.trialRejected).raw("}");
    }
    if (fr.defs.size() > 1) {
        out.raw(",\"drift\":[");
        for (size_t i = 0; i < fr.defs.size(); i++) {
            const Definition &x = fr.defs[i];
            out.raw(i ? ",{\"digest\":" : "{\"digest\":").str(x.digest)
                .raw(",\"limit\":").num(x.limit).raw(",\"window\":");
            seconds(out, x.windowUs);
            if (x.calendar) {
                out.raw(",\"period\":").str(x.period);
            }
            out.raw(",\"algorithm\":").str(x.algorithm)
                .raw(",\"instances\":[");
            for (size_t k = 0; k < x.instances.size(); k++) {
                out.raw(k ? "," : "").str((*rd->instances)[x.instances[k]]
                                              .name);
            }
            out.raw("]}");
        }
        out.raw("]");
    }
    out.raw("}");
}

void fleetRules(Json &out, Read *rd, ngx_http_rl_main_conf_t *rmcf) {
    std::vector<FleetRule> rules = rulesOf(*rd->instances);
    out.raw("[");
    bool first = true;
    for (const FleetRule &fr : rules) {
        /* a trial line with no rule line of its name (a record written
         * by hand): no definition to show */
        if (!fr.defs.empty()) {
            fleetRule(out.raw(first ? "\n" : ",\n"), fr, rd, rmcf);
            first = false;
        }
    }
    out.raw("\n]\n");
}

/* The instances' top keys of a rule merged (their trial's, ?trial=1):
 * rejections summed, most first. */
bool fleetTop(Json &out, Read *rd) {
    struct Key {
        int64_t rejected = 0;
        int64_t instances = 0;
    };
    std::map<std::string, Key> keys;
    std::string_view kind = rd->req.trial ? "ttop" : "top";
    bool known = false;
    bool address = false;   /* key=$binary_remote_addr: shown as one */
    for (const Instance &in : *rd->instances) {
        if (in.gone) {
            continue;
        }
        std::string_view rest = in.record;
        fleet::Line l;
        while (fleet::nextLine(&rest, &l)) {
            if (l.n >= 12 && l.fields[0] == "rule" &&
                text(l.fields[1]) == rd->req.name) {
                known = true;
                address = text(l.fields[11]) == "$binary_remote_addr";
            }
            if (l.n < 4 || l.fields[0] != kind ||
                text(l.fields[1]) != rd->req.name) {
                continue;
            }
            Key &k = keys[text(l.fields[3])];
            k.rejected = add(k.rejected, num(l.fields[2]));
            k.instances++;
        }
    }
    if (!known) {
        return false;
    }
    std::vector<std::pair<std::string, Key>> list(keys.begin(), keys.end());
    std::sort(list.begin(), list.end(), [](const auto &a, const auto &b) {
        return a.second.rejected > b.second.rejected ||
               (a.second.rejected == b.second.rejected && a.first < b.first);
    });
    out.raw("{\"rule\":").str(rd->req.name)
        .raw(",\"zone\":").str(viewOf(rd->zone->name))
        .raw(",\"keys\":[");
    char buf[keyTextMax(top::kValueMax)];
    for (size_t i = 0; i < list.size() && i < rd->req.top; i++) {
        /* the key as its instance showed it, printable again here */
        size_t n = keyText(buf, sizeof(buf) - 3, list[i].first, address);
        out.raw(i ? ",\n{\"key\":" : "\n{\"key\":").str({buf, n})
            .raw(",\"rejected\":").num(list[i].second.rejected)
            .raw(",\"instances\":").num(list[i].second.instances).raw("}");
    }
    out.raw("\n]}\n");
    return true;
}

/* An audit entry: { id, { field, value, ... } } */
void auditEntry(Json &out, const redisReply *e, bool first) {
    if (e->type != REDIS_REPLY_ARRAY || e->elements < 2 ||
        e->element[1]->type != REDIS_REPLY_ARRAY) {
        return;
    }
    std::string_view id = replyText(e->element[0]);
    /* (a stream's id is Redis' to check, and goes to 2^64: one written
     * by hand past 2^53 ms reads as 0) */
    int64_t ms = num(id.substr(0, id.find('-')));
    std::map<std::string_view, std::string_view> f;
    const redisReply *fields = e->element[1];
    for (size_t k = 0; k + 1 < fields->elements; k += 2) {
        f[replyText(fields->element[k])] = replyText(fields->element[k + 1]);
    }
    out.raw(first ? "\n{\"time\":" : ",\n{\"time\":");
    seconds(out, ms * 1000);
    for (const char *name : {"instance", "client", "user", "action", "rule",
                             "key"}) {
        out.raw(",\"").raw(name).raw("\":").str(f[name]);
    }
    /* the detail is a flat JSON object this module wrote; anything else
     * (a stream written by hand) is shown as none */
    std::string detail(f["detail"]);
    json::Object obj;
    const char *why;
    std::string copy = detail;
    out.raw(",\"detail\":");
    if (!detail.empty() &&
        json::parseObject(copy.data(), copy.size(), &obj, &why)) {
        out.raw(detail);
    } else {
        out.raw("{}");
    }
    out.raw("}");
}

void audit(Json &out, Read *rd, const redisReply *entries) {
    out.raw("{\"zone\":").str(viewOf(rd->zone->name))
        .raw(",\"entries\":[");
    for (size_t i = 0; i < entries->elements; i++) {
        auditEntry(out, entries->element[i], i == 0);
    }
    out.raw("\n]}\n");
}

/* ----------------------------------------------------------------- */

void answerOf(Wait *w, const redisReply *reply);

/* (a hiredis callback's: nothing may escape it) */
void replied(Wait *w, ngx_uint_t, const redisReply *reply, Link *) {
    try {
        answerOf(w, reply);
    } catch (...) {
        static_cast<Read *>(w->data)->failure = "out of memory";
    }
}

void answerOf(Wait *w, const redisReply *reply) {
    auto *rd = static_cast<Read *>(w->data);
    if (reply == nullptr) {
        rd->failure = "the connection to Redis was lost";
        return;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        rd->failure = "Redis answered an error";
        ngx_log_error(NGX_LOG_ERR, w->r->connection->log, 0,
                      "rl_api: a read of the fleet failed: %*s", reply->len,
                      reply->str);
        return;
    }
    /* (written in the pool, sent as it is: an answer of megabytes is
     * not copied again) */
    static_assert(std::is_trivially_destructible_v<Json>);
    void *room = ngx_palloc(w->r->pool, sizeof(Json));
    if (room == nullptr) {
        rd->failure = "out of memory";
        return;
    }
    Json &out = *new (room) Json(w->r->pool);
    ngx_http_rl_main_conf_t *rmcf = mainConf(w->r);
    if (rd->req.route == Route::Audit) {
        if (reply->type != REDIS_REPLY_ARRAY) {
            rd->failure = "Redis sent no reply of lua/fleet.lua's";
            return;
        }
        audit(out, rd, reply);
    } else {
        if (!instancesOf(reply, rd)) {
            rd->failure = "Redis sent no reply of lua/fleet.lua's";
            return;
        }
        if (rd->req.route == Route::Fleet) {
            instances(out, rd, rmcf);
        } else if (rd->req.route == Route::FleetRules) {
            fleetRules(out, rd, rmcf);
        } else if (!fleetTop(out, rd)) {
            return;     /* (no instance has the rule: 404 below) */
        }
    }
    rd->answer = &out;
}

ngx_int_t concluded(Wait *w) {
    auto *rd = static_cast<Read *>(w->data);
    ngx_int_t rc;
    if (w->timedOut) {
        rc = sendError(w->r, {503, "StoreUnavailable",
                              "Redis did not answer in time"});
    } else if (rd->failure != nullptr) {
        rc = sendError(w->r, {503, "StoreUnavailable", rd->failure});
    } else if (rd->answer == nullptr) {
        rc = sendError(w->r, {404, "RuleNotFound",
                              "no instance of the fleet has a rule of "
                              "that name in that zone"});
    } else {
        rc = send(w->r, NGX_HTTP_OK, *rd->answer);
    }
    delete rd->instances;
    rd->instances = nullptr;
    return rc;
}

/* The zone a fleet read names (?zone=), or the first with Redis. */
ngx_http_rl_zone_t *zoneOf(ngx_http_rl_main_conf_t *rmcf, const Request &req,
                           Error *err) {
    auto **zones = static_cast<ngx_http_rl_zone_t **>(rmcf->zones.elts);
    for (ngx_uint_t i = 0; i < rmcf->zones.nelts; i++) {
        ngx_http_rl_zone_t *z = zones[i];
        if (req.zone.empty() ? !ngx_http_rl_embedded(z)
                             : viewOf(z->name) == req.zone) {
            if (ngx_http_rl_embedded(z)) {
                *err = {400, "ArgumentInvalid",
                        "an embedded zone has no fleet: its live limits "
                        "and trials are this instance's (/1/rules)"};
                return nullptr;
            }
            return z;
        }
    }
    *err = req.zone.empty()
               ? Error{404, "ZoneNotFound", "no zone with Redis: no fleet"}
               : Error{404, "ZoneNotFound", "no zone of that name"};
    return nullptr;
}

}  // namespace

ngx_int_t fleetRead(ngx_http_request_t *r, const Request &req) {
    ngx_http_rl_main_conf_t *rmcf = mainConf(r);
    Error err;
    ngx_http_rl_zone_t *zone = zoneOf(rmcf, req, &err);
    if (zone == nullptr) {
        return sendError(r, err);
    }
    Link *link = fleet::linkOf(rmcf, zone);
    if (link == nullptr) {
        return sendError(r, {503, "StoreUnavailable",
                             "Redis cannot be reached now"});
    }
    auto *rd = static_cast<Read *>(ngx_pcalloc(r->pool, sizeof(Read)));
    if (rd == nullptr) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    rd->req = req;
    rd->zone = zone;
    /* (freed once answered; a request that goes first leaks nothing:
     * the pool's cleanup below) */
    rd->instances = new std::vector<Instance>();
    ngx_pool_cleanup_t *cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == nullptr) {
        delete rd->instances;
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    cln->handler = [](void *data) noexcept {
        auto *x = static_cast<Read *>(data);
        delete x->instances;
        x->instances = nullptr;
    };
    cln->data = rd;
    ngx_str_t keys[4];
    if (!fleet::keys(r->pool, zone, keys)) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    bool isAudit = req.route == Route::Audit;
    fleet::Eval e(keys, isAudit ? "read" : "fleet");
    if (isAudit) {
        e.num(static_cast<int64_t>(req.count));
    }
    Wait *w = waitFor(r, rd, replied, concluded);
    if (w == nullptr) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    if (!waitSend(w, link, 0, e.argc(), e.argv(), e.len())) {
        return sendError(r, {503, "StoreUnavailable",
                             "the command could not be sent to Redis"});
    }
    return waitHold(w, zone->timeout > kMinWait ? zone->timeout : kMinWait);
}

}  // namespace rl::api
