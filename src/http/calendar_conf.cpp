/*
 * calendar_conf.cpp: calendar rules (SPEC section 12, rate=Nr/month,
 * Nr/d with tz=...). When the configuration is loaded, each time zone a
 * rule names is read from the system's zoneinfo once (nginx -t says
 * which it cannot read, and why) and parsed by the core
 * (src/core/time_zone.hpp); a request's bounds (src/core/calendar.hpp)
 * are then computed from memory, never from a file, and kept per rule
 * and anchor day for as long as their period runs (a worker computes a
 * rule's bounds once a period, not once a request).
 */

#include "ngx.hpp"

#include <new>
#include <type_traits>

#include "clock.hpp"
#include "core/calendar.hpp"
#include "core/time_zone.hpp"

extern "C" {
ngx_uint_t  ngx_http_rl_nginx_clock;
}

namespace {

using rl::calendar::Unit;

constexpr const char kZoneDir[] = "/usr/share/zoneinfo/";
/* The largest zoneinfo file read (the biggest is under 4 KB). */
constexpr size_t kMaxZoneFile = 1 << 20;

/* A zone read for this configuration, in a pool cleanup that destroys
 * it with the cycle's pool. */
struct LoadedZone {
    ngx_str_t name;
    rl::tz::TimeZone zone;
};

/* Bounds kept for as long as their period runs. */
struct Cached {
    int64_t start = 0;
    int64_t end = 0;        /* 0: none */
    int64_t next = 0;
};

/* What a calendar rule keeps (rule->calendar): its zone, unit, anchor
 * and the bounds computed last, per anchor day (a billing day from a
 * variable: 1 to 28; a fixed anchor: [0]). Written by each worker in
 * its own copy of the configuration. */
struct CalendarRule {
    const rl::tz::TimeZone *zone;
    Unit unit;
    int anchor;                         /* fixed: week day or month day */
    ngx_http_complex_value_t *anchorCv; /* anchor=$variable, or NULL */
    ngx_str_t tzName;                   /* as the operator API shows */
    ngx_str_t anchorText;
    ngx_uint_t warnedAt;                /* minute of its last warning */
    Cached cache[rl::calendar::kMaxAnchorDay + 1];
};

static_assert(std::is_trivially_destructible<CalendarRule>::value,
              "a calendar rule lives in the configuration's pool");

void destroyZone(void *data) noexcept {
    static_cast<LoadedZone *>(data)->~LoadedZone();
}

ngx_http_rl_main_conf_t *mainConf(ngx_conf_t *cf) {
    return static_cast<ngx_http_rl_main_conf_t *>(
        ngx_http_conf_get_module_main_conf(cf, ngx_http_rl_module));
}

using rl::viewOf;

/* The zone of that name, read once per configuration; NULL when it
 * cannot be (logged, naming the parameter). */
const rl::tz::TimeZone *loadZone(ngx_conf_t *cf, const ngx_str_t *param,
                                 ngx_str_t name) {
    ngx_http_rl_main_conf_t *rmcf = mainConf(cf);
    auto **seen = static_cast<LoadedZone **>(rmcf->time_zones.elts);
    for (ngx_uint_t i = 0; i < rmcf->time_zones.nelts; i++) {
        if (viewOf(seen[i]->name) == viewOf(name)) {
            return &seen[i]->zone;
        }
    }
    if (!rl::tz::validZoneName(viewOf(name))) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid time zone \"%V\": an IANA name such as "
                           "\"Europe/Berlin\"", param);
        return nullptr;
    }
    std::optional<rl::tz::TimeZone> zone;
    if (viewOf(name) == "UTC") {
        zone = rl::tz::TimeZone::utc();    /* needs no tzdata */
    } else {
        size_t len = sizeof(kZoneDir) - 1 + name.len;
        auto *path = static_cast<u_char *>(ngx_pnalloc(cf->temp_pool,
                                                       len + 1));
        if (path == nullptr) {
            return nullptr;
        }
        ngx_memcpy(ngx_cpymem(path, kZoneDir, sizeof(kZoneDir) - 1),
                   name.data, name.len);
        path[len] = '\0';
        ngx_file_t file;
        ngx_memzero(&file, sizeof(ngx_file_t));
        file.name = {len, path};
        file.log = cf->log;
        file.fd = ngx_open_file(path, NGX_FILE_RDONLY, NGX_FILE_OPEN, 0);
        if (file.fd == NGX_INVALID_FILE) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                               "invalid time zone \"%V\": "
                               ngx_open_file_n " \"%s\" failed", param,
                               path);
            return nullptr;
        }
        ngx_file_info_t fi;
        bool regular = ngx_fd_info(file.fd, &fi) != NGX_FILE_ERROR &&
                       ngx_is_file(&fi);
        auto *buf = static_cast<u_char *>(ngx_pnalloc(cf->temp_pool,
                                                      kMaxZoneFile));
        ssize_t n = buf != nullptr && regular
                        ? ngx_read_file(&file, buf, kMaxZoneFile, 0)
                        : NGX_ERROR;
        if (!regular) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid time zone \"%V\": \"%s\" is no "
                               "zone's file", param, path);
        }
        if (ngx_close_file(file.fd) == NGX_FILE_ERROR) {
            ngx_log_error(NGX_LOG_ALERT, cf->log, ngx_errno,
                          ngx_close_file_n " \"%s\" failed", path);
        }
        if (n == NGX_ERROR) {
            return nullptr;     /* (logged why) */
        }
        const char *why = "unread";
        zone = rl::tz::parseTzif(
            {reinterpret_cast<char *>(buf), static_cast<size_t>(n)}, &why);
        if (!zone) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid time zone \"%V\": \"%s\" is %s",
                               param, path, why);
            return nullptr;
        }
    }
    ngx_pool_cleanup_t *cln = ngx_pool_cleanup_add(cf->pool,
                                                   sizeof(LoadedZone));
    auto **slot = static_cast<LoadedZone **>(
        ngx_array_push(&rmcf->time_zones));
    auto *text = static_cast<u_char *>(ngx_pnalloc(cf->pool, name.len));
    if (cln == nullptr || slot == nullptr || text == nullptr) {
        return nullptr;
    }
    ngx_memcpy(text, name.data, name.len);
    auto *loaded = new (cln->data) LoadedZone{{name.len, text},
                                              std::move(*zone)};
    cln->handler = destroyZone;
    *slot = loaded;
    return &loaded->zone;
}

/* anchor=: a week's first day, a month's day or a variable. */
bool anchorOf(ngx_conf_t *cf, CalendarRule *c, const ngx_str_t *param,
              ngx_str_t text) {
    if (text.len == 0) {
        c->anchor = c->unit == Unit::Month ? 1 : 0;
        return true;
    }
    if (c->unit == Unit::Week) {
        std::optional<int> day = rl::calendar::weekdayFromName(viewOf(text));
        if (!day) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid anchor \"%V\": a week starts on "
                               "\"mon\", \"tue\", \"wed\", \"thu\", "
                               "\"fri\", \"sat\" or \"sun\"", param);
            return false;
        }
        c->anchor = *day;
        return true;
    }
    if (c->unit != Unit::Month) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\": \"anchor\" is for "
                           "rates per week (\"r/w\") or month "
                           "(\"r/month\")", param);
        return false;
    }
    c->anchor = 1;
    if (ngx_http_script_variables_count(&text) > 0) {
        return ngx_http_rl_compile(cf, &text, &c->anchorCv) == NGX_OK;
    }
    ngx_int_t day = ngx_atoi(text.data, text.len);
    if (day < 1 || day > rl::calendar::kMaxAnchorDay) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid anchor \"%V\": a day of the month from "
                           "1 to %d (every month has it), or a variable",
                           param, rl::calendar::kMaxAnchorDay);
        return false;
    }
    c->anchor = static_cast<int>(day);
    return true;
}

/* A request's billing day from anchor=$variable: 1 to 28, else the 1st
 * (logged at warn, a minute apart at most per rule in each worker). */
int anchorFor(ngx_http_request_t *r, const ngx_http_rl_rule_t *rule,
              CalendarRule *c) {
    ngx_str_t v = {0, nullptr};
    ngx_int_t day = NGX_ERROR;
    if (ngx_http_complex_value(r, c->anchorCv, &v) == NGX_OK) {
        day = ngx_atoi(v.data, v.len);
    }
    if (day >= 1 && day <= rl::calendar::kMaxAnchorDay) {
        return static_cast<int>(day);
    }
    auto minute = static_cast<ngx_uint_t>(ngx_time() / 60 + 1);
    if (c->warnedAt != minute) {
        c->warnedAt = minute;
        char text[64 + 3];
        size_t len = rl_printable(text, 64, reinterpret_cast<char *>(v.data),
                                  v.len);
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "rl: anchor \"%*s\" of rule \"%V\" is no day of the "
                      "month from 1 to %d: its months start on the 1st "
                      "(the next such line in a minute at the earliest)",
                      len, text, &rule->name, rl::calendar::kMaxAnchorDay);
    }
    return 1;
}

void boundsFor(CalendarRule *c, int anchor, int64_t nowUs, int64_t *out) {
    Cached &k = c->cache[c->anchorCv != nullptr ? anchor : 0];
    if (k.end == 0 || nowUs < k.start || nowUs >= k.end) {
        rl::calendar::Bounds b = rl::calendar::boundsAt(*c->zone, c->unit,
                                                        anchor, nowUs);
        k = {b.start, b.end, b.next};
    }
    out[0] = k.start;
    out[1] = k.end;
    out[2] = k.next;
}

}  // namespace

extern "C" {

char *ngx_http_rl_calendar_conf(ngx_conf_t *cf, ngx_http_rl_rule_t *rule,
                                ngx_str_t *per, ngx_str_t *tz,
                                ngx_str_t *anchor,
                                ngx_str_t *identity) noexcept {
    try {
        std::optional<Unit> unit = rl::calendar::unitFromName(viewOf(*per));
        if (!unit) {
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        static u_char utc[] = "UTC";
        ngx_str_t name = tz->len > 0 ? ngx_str_t{tz->len - 3, tz->data + 3}
                                     : ngx_str_t{3, utc};
        ngx_str_t day = {0, nullptr};
        if (anchor->len == 7) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid anchor \"%V\"", anchor);
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        if (anchor->len > 7) {
            day = {anchor->len - 7, anchor->data + 7};
        }
        auto *c = static_cast<CalendarRule *>(
            ngx_pcalloc(cf->pool, sizeof(CalendarRule)));
        if (c == nullptr) {
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        new (c) CalendarRule{};
        c->unit = *unit;
        if (!anchorOf(cf, c, anchor, day)) {
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        c->zone = loadZone(cf, tz, name);
        if (c->zone == nullptr) {
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        c->tzName = name;
        c->anchorText = day;
        rule->calendar = c;
        rule->window_us = rl::calendar::nominalUs(c->unit);

        /* what its state's id adds to the algorithm's name: the unit,
         * the zone and the anchor (a variable as written) */
        size_t len = sizeof("fixed_window///") + per->len + name.len +
                     day.len + NGX_INT_T_LEN;
        identity->data = static_cast<u_char *>(ngx_pnalloc(cf->pool, len));
        if (identity->data == nullptr) {
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        u_char *end = ngx_snprintf(identity->data, len, "fixed_window/%V/%V/",
                                   per, &name);
        end = c->anchorCv != nullptr
                  ? ngx_snprintf(end, len - (end - identity->data), "%V",
                                 &day)
                  : ngx_snprintf(end, len - (end - identity->data), "%d",
                                 c->anchor);
        identity->len = static_cast<size_t>(end - identity->data);
        return NGX_CONF_OK;
    } catch (...) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "rl: out of memory reading a time zone");
        return static_cast<char *>(NGX_CONF_ERROR);
    }
}

void ngx_http_rl_calendar_bounds(ngx_http_request_t *r,
                                 const ngx_http_rl_rule_t *rule,
                                 int64_t now_us, int64_t *out) noexcept {
    auto *c = static_cast<CalendarRule *>(rule->calendar);
    int anchor = c->anchorCv != nullptr && r != nullptr
                     ? anchorFor(r, rule, c) : c->anchor;
    boundsFor(c, anchor, now_us, out);
}

void ngx_http_rl_calendar_bounds_at(const ngx_http_rl_rule_t *rule,
                                    ngx_int_t anchor, int64_t now_us,
                                    int64_t *out) noexcept {
    auto *c = static_cast<CalendarRule *>(rule->calendar);
    int day = c->anchor;
    if (c->anchorCv != nullptr && anchor >= 1 &&
        anchor <= rl::calendar::kMaxAnchorDay) {
        day = static_cast<int>(anchor);
    }
    boundsFor(c, day, now_us, out);
}

int64_t ngx_http_rl_calendar_now(ngx_http_rl_zone_t *zone) noexcept {
    if (ngx_http_rl_embedded(zone)) {
        return ngx_http_rl_shm_now(zone);
    }
    return rl::realtimeUs();
}

ngx_uint_t ngx_http_rl_calendar_variable(const ngx_http_rl_rule_t *rule)
    noexcept {
    auto *c = static_cast<CalendarRule *>(rule->calendar);
    return c != nullptr && c->anchorCv != nullptr;
}

void ngx_http_rl_calendar_describe(const ngx_http_rl_rule_t *rule,
                                   ngx_str_t *unit, ngx_str_t *tz,
                                   ngx_str_t *anchor) noexcept {
    auto *c = static_cast<CalendarRule *>(rule->calendar);
    std::string_view u = rl::calendar::unitName(c->unit);
    *unit = {u.size(), reinterpret_cast<u_char *>(const_cast<char *>(
                           u.data()))};
    *tz = c->tzName;
    *anchor = c->anchorText;
}

}  // extern "C"
