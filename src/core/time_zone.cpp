#include "time_zone.hpp"

#include <algorithm>

namespace rl::tz {
namespace {

constexpr int64_t kDay = 86400;
/* Offsets beyond a day and a bit are no zone's (RFC 8536: -2^31 is
 * invalid; real ones are within -12h..+14h). */
constexpr int32_t kMaxOffset = 26 * 3600;
/* A rule's time of day: RFC 8536 (version 3) allows -167h..167h. */
constexpr int32_t kMaxRuleTime = 167 * 3600 + 59 * 60 + 59;

bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isAlpha(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* ------------------------------------------------------------------ */
/* the POSIX TZ string                                                 */

class Reader {
public:
    explicit Reader(std::string_view s) : s_(s) {}

    bool done() const { return i_ == s_.size(); }
    char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
    bool eat(char c) {
        if (peek() == c && !done()) {
            i_++;
            return true;
        }
        return false;
    }

    /* a zone's abbreviation: 3 or more letters, or <...> of letters,
     * digits, '+' and '-' */
    bool name() {
        if (eat('<')) {
            size_t n = 0;
            while (!done() && peek() != '>') {
                char c = peek();
                if (!isAlpha(c) && !isDigit(c) && c != '+' && c != '-') {
                    return false;
                }
                i_++;
                n++;
            }
            return eat('>') && n >= 3;
        }
        size_t n = 0;
        while (isAlpha(peek()) && !done()) {
            i_++;
            n++;
        }
        return n >= 3;
    }

    /* a number of at most `digits` digits */
    bool number(int digits, int32_t* out) {
        int32_t v = 0;
        int n = 0;
        while (isDigit(peek()) && !done() && n < digits) {
            v = v * 10 + (peek() - '0');
            i_++;
            n++;
        }
        *out = v;
        return n > 0;
    }

    /* [+-]hh[:mm[:ss]] in seconds; hours at most maxHours */
    bool time(int32_t maxHours, int32_t* out) {
        int32_t sign = 1;
        if (eat('-')) {
            sign = -1;
        } else {
            (void) eat('+');
        }
        int32_t h = 0, m = 0, s = 0;
        if (!number(3, &h) || h > maxHours) {
            return false;
        }
        if (eat(':')) {
            if (!number(2, &m) || m > 59) {
                return false;
            }
            if (eat(':') && (!number(2, &s) || s > 59)) {
                return false;
            }
        }
        *out = sign * (h * 3600 + m * 60 + s);
        return true;
    }

    /* Jn, n or Mm.w.d, then [/time] */
    bool date(RuleDate* d) {
        int32_t v = 0;
        if (eat('J')) {
            if (!number(3, &v) || v < 1 || v > 365) {
                return false;
            }
            d->kind = RuleDate::Kind::Julian;
            d->day = static_cast<uint16_t>(v);
        } else if (eat('M')) {
            int32_t m = 0, w = 0, wd = 0;
            if (!number(2, &m) || m < 1 || m > 12 || !eat('.') ||
                !number(1, &w) || w < 1 || w > 5 || !eat('.') ||
                !number(1, &wd) || wd > 6) {
                return false;
            }
            d->kind = RuleDate::Kind::MonthWeekDay;
            d->month = static_cast<uint8_t>(m);
            d->week = static_cast<uint8_t>(w);
            d->weekday = static_cast<uint8_t>(wd);
        } else {
            if (!number(3, &v) || v > 365) {
                return false;
            }
            d->kind = RuleDate::Kind::DayOfYear;
            d->day = static_cast<uint16_t>(v);
        }
        d->time = 7200;
        if (eat('/')) {
            return time(167, &d->time);
        }
        return true;
    }

private:
    std::string_view s_;
    size_t i_ = 0;
};

/* The instant a rule's date and time fall on in `year`, whose local
 * time is UTC + offset. */
int64_t ruleInstant(int64_t year, const RuleDate& d, int32_t offset) {
    int64_t days = 0;
    switch (d.kind) {
    case RuleDate::Kind::Julian: {
        /* day 60 is March 1 whatever the year */
        int64_t n = d.day;
        bool leap = daysInMonth(year, 2) == 29;
        days = daysFromCivil(year, 1, 1) + n - 1 + (leap && n >= 60 ? 1 : 0);
        break;
    }
    case RuleDate::Kind::DayOfYear:
        days = daysFromCivil(year, 1, 1) + d.day;
        break;
    case RuleDate::Kind::MonthWeekDay: {
        int64_t first = daysFromCivil(year, d.month, 1);
        /* 1970-01-01 was a Thursday (4, Sunday 0) */
        int64_t wd = (first + 4) % 7;
        wd = wd < 0 ? wd + 7 : wd;
        int64_t day = 1 + (d.weekday - wd + 7) % 7 + 7 * (d.week - 1);
        int dim = daysInMonth(year, d.month);
        while (day > dim) {
            day -= 7;
        }
        days = first + day - 1;
        break;
    }
    }
    return days * kDay + d.time - offset;
}

/* The rule's changes of years y - 1 .. y + 1, in order (6 at most). */
size_t ruleChanges(const PosixRule& r, int64_t year, Change* out) {
    size_t n = 0;
    for (int64_t y = year - 1; y <= year + 1; y++) {
        out[n++] = {ruleInstant(y, r.start, r.standard), r.daylight};
        out[n++] = {ruleInstant(y, r.end, r.daylight), r.standard};
    }
    std::sort(out, out + n, [](const Change& a, const Change& b) {
        return a.at < b.at;
    });
    return n;
}

int64_t yearOf(int64_t t) {
    int64_t y;
    int m, d;
    civilFromDays(floorDiv(t, kDay), &y, &m, &d);
    return y;
}

/* ------------------------------------------------------------------ */
/* the TZif file                                                       */

uint32_t be32(const unsigned char* p) {
    return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 |
           uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

int64_t be64(const unsigned char* p) {
    return static_cast<int64_t>(uint64_t(be32(p)) << 32 | be32(p + 4));
}

struct Header {
    char version;
    uint32_t isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt;
};

constexpr size_t kHeaderBytes = 44;

bool header(std::string_view b, size_t at, Header* h) {
    if (b.size() < at + kHeaderBytes || b.compare(at, 4, "TZif") != 0) {
        return false;
    }
    auto p = reinterpret_cast<const unsigned char*>(b.data() + at);
    h->version = static_cast<char>(p[4]);
    h->isutcnt = be32(p + 20);
    h->isstdcnt = be32(p + 24);
    h->leapcnt = be32(p + 28);
    h->timecnt = be32(p + 32);
    h->typecnt = be32(p + 36);
    h->charcnt = be32(p + 40);
    return true;
}

/* The bytes of a data block of times of `t` bytes, or 0 when the counts
 * are no file's (each bounded by what a file can hold: 4 GB at most). */
uint64_t blockBytes(const Header& h, uint64_t t) {
    return uint64_t(h.timecnt) * t + h.timecnt + uint64_t(h.typecnt) * 6 +
           h.charcnt + uint64_t(h.leapcnt) * (t + 4) + h.isstdcnt +
           h.isutcnt;
}

}  // namespace

/* ------------------------------------------------------------------ */

int64_t daysFromCivil(int64_t y, int m, int d) {
    /* Howard Hinnant's days_from_civil */
    y -= m <= 2 ? 1 : 0;
    int64_t era = floorDiv(y, 400);
    int64_t yoe = y - era * 400;
    int64_t mp = (m + 9) % 12;
    int64_t doy = (153 * mp + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

void civilFromDays(int64_t z, int64_t* year, int* month, int* day) {
    z += 719468;
    int64_t era = floorDiv(z, 146097);
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int64_t d = doy - (153 * mp + 2) / 5 + 1;
    int64_t m = mp < 10 ? mp + 3 : mp - 9;
    *year = yoe + era * 400 + (m <= 2 ? 1 : 0);
    *month = static_cast<int>(m);
    *day = static_cast<int>(d);
}

int daysInMonth(int64_t y, int m) {
    static constexpr int kDays[12] = {31, 28, 31, 30, 31, 30,
                                      31, 31, 30, 31, 30, 31};
    if (m == 2) {
        bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        return leap ? 29 : 28;
    }
    return kDays[m - 1];
}

std::optional<PosixRule> parsePosixTz(std::string_view text) {
    Reader r(text);
    PosixRule rule;
    int32_t v = 0;
    if (!r.name() || !r.time(24, &v)) {
        return std::nullopt;
    }
    rule.standard = -v;     /* POSIX counts west of UTC */
    if (r.done()) {
        return rule;
    }
    if (!r.name()) {
        return std::nullopt;
    }
    rule.hasDaylight = true;
    rule.daylight = rule.standard + 3600;
    if (r.peek() != ',' && !r.done()) {
        if (!r.time(24, &v)) {
            return std::nullopt;
        }
        rule.daylight = -v;
    }
    if (r.done()) {
        /* POSIX leaves the dates to the implementation: the US rules,
         * as glibc and tzcode take them */
        rule.start = {RuleDate::Kind::MonthWeekDay, 0, 3, 2, 0, 7200};
        rule.end = {RuleDate::Kind::MonthWeekDay, 0, 11, 1, 0, 7200};
        return rule;
    }
    if (!r.eat(',') || !r.date(&rule.start) || !r.eat(',') ||
        !r.date(&rule.end) || !r.done()) {
        return std::nullopt;
    }
    if (rule.standard < -kMaxOffset || rule.standard > kMaxOffset ||
        rule.daylight < -kMaxOffset || rule.daylight > kMaxOffset ||
        rule.start.time < -kMaxRuleTime || rule.start.time > kMaxRuleTime ||
        rule.end.time < -kMaxRuleTime || rule.end.time > kMaxRuleTime) {
        return std::nullopt;
    }
    return rule;
}

int32_t ruleOffsetAt(const PosixRule& rule, int64_t t) {
    if (!rule.hasDaylight) {
        return rule.standard;
    }
    Change c[6];
    size_t n = ruleChanges(rule, yearOf(t + rule.standard), c);
    int32_t offset = rule.standard;
    for (size_t i = 0; i < n && c[i].at <= t; i++) {
        offset = c[i].offset;
    }
    return offset;
}

TimeZone TimeZone::utc() {
    return TimeZone();
}

int32_t TimeZone::offsetAt(int64_t t) const {
    auto it = std::upper_bound(
        changes_.begin(), changes_.end(), t,
        [](int64_t v, const Change& c) { return v < c.at; });
    if (it == changes_.end() && rule_) {
        return ruleOffsetAt(*rule_, t);
    }
    return it == changes_.begin() ? initial_ : (it - 1)->offset;
}

size_t TimeZone::changes(int64_t from, int64_t to, Change* out, size_t cap,
                         int32_t* atFrom) const {
    *atFrom = offsetAt(from);
    int32_t last = *atFrom;
    size_t n = 0;
    auto it = std::upper_bound(
        changes_.begin(), changes_.end(), from,
        [](int64_t v, const Change& c) { return v < c.at; });
    for (; it != changes_.end() && it->at <= to && n < cap; ++it) {
        out[n++] = *it;
        last = it->offset;
    }
    if (!rule_ || !rule_->hasDaylight || it != changes_.end()) {
        return n;
    }
    /* past the table: the rule's, after its last change */
    int64_t after = changes_.empty() ? INT64_MIN : changes_.back().at;
    /* (ruleChanges() gives years y - 1 .. y + 1) */
    for (int64_t y = yearOf(from); y - 1 <= yearOf(to) + 1 && n < cap;
         y += 3) {
        Change c[6];
        size_t m = ruleChanges(*rule_, y, c);
        for (size_t i = 0; i < m && n < cap; i++) {
            if (c[i].at > from && c[i].at <= to && c[i].at > after &&
                c[i].offset != last) {
                out[n++] = c[i];
                last = c[i].offset;
                after = c[i].at;
            }
        }
    }
    return n;
}

std::optional<TimeZone> parseTzif(std::string_view b, const char** why) {
    Header h{};
    if (!header(b, 0, &h)) {
        *why = "no TZif file";
        return std::nullopt;
    }
    size_t at = kHeaderBytes;
    size_t timeBytes = 4;
    uint64_t v1 = blockBytes(h, 4);
    if (v1 > b.size() - at) {
        *why = "a TZif file cut short";
        return std::nullopt;
    }
    if (h.version >= '2') {
        /* the 64-bit data after the 32-bit block */
        at += static_cast<size_t>(v1);
        if (!header(b, at, &h)) {
            *why = "a TZif file with no second header";
            return std::nullopt;
        }
        at += kHeaderBytes;
        timeBytes = 8;
    }
    uint64_t bytes = blockBytes(h, timeBytes);
    if (bytes > b.size() - at) {
        *why = "a TZif file cut short";
        return std::nullopt;
    }
    if (h.typecnt == 0 || h.typecnt > 256 || h.timecnt > 100000) {
        *why = "a TZif file with no local time types or too many";
        return std::nullopt;
    }
    if (h.leapcnt > 0) {
        *why = "a TZif file with leap seconds (a right/ zone)";
        return std::nullopt;
    }
    auto p = reinterpret_cast<const unsigned char*>(b.data() + at);
    const unsigned char* idx = p + uint64_t(h.timecnt) * timeBytes;
    const unsigned char* types = idx + h.timecnt;

    auto offsetOf = [&](uint32_t type, int32_t* out) {
        if (type >= h.typecnt) {
            return false;
        }
        auto v = static_cast<int32_t>(be32(types + 6 * type));
        *out = v;
        return v >= -kMaxOffset && v <= kMaxOffset;
    };

    TimeZone z;
    if (!offsetOf(0, &z.initial_)) {
        *why = "a TZif file with an offset of more than a day";
        return std::nullopt;
    }
    int32_t last = z.initial_;
    int64_t prev = INT64_MIN;
    for (uint32_t i = 0; i < h.timecnt; i++) {
        int64_t t = timeBytes == 8
                        ? be64(p + 8 * uint64_t(i))
                        : static_cast<int32_t>(be32(p + 4 * uint64_t(i)));
        int32_t offset;
        if (!offsetOf(idx[i], &offset)) {
            *why = "a TZif file with a bad local time type";
            return std::nullopt;
        }
        if (t <= prev) {
            *why = "a TZif file whose transitions are out of order";
            return std::nullopt;
        }
        prev = t;
        if (offset != last) {
            z.changes_.push_back({t, offset});
            last = offset;
        }
    }
    if (timeBytes == 8) {
        /* the footer: "\n" TZ "\n" */
        std::string_view foot = b.substr(at + static_cast<size_t>(bytes));
        if (foot.size() < 2 || foot[0] != '\n') {
            *why = "a TZif file with no footer";
            return std::nullopt;
        }
        size_t end = foot.find('\n', 1);
        if (end == std::string_view::npos) {
            *why = "a TZif file with no footer";
            return std::nullopt;
        }
        std::string_view text = foot.substr(1, end - 1);
        if (!text.empty()) {
            z.rule_ = parsePosixTz(text);
            if (!z.rule_) {
                *why = "a TZif file whose TZ string this module cannot read";
                return std::nullopt;
            }
        }
    }
    return z;
}

bool validZoneName(std::string_view name) {
    if (name.empty() || name.size() > 255) {
        return false;
    }
    size_t start = 0;
    for (size_t i = 0; i <= name.size(); i++) {
        if (i == name.size() || name[i] == '/') {
            if (i == start || name[start] == '.') {
                return false;   /* "", ".", "..", a hidden file */
            }
            start = i + 1;
            continue;
        }
        char c = name[i];
        if (!isAlpha(c) && !isDigit(c) && c != '_' && c != '-' && c != '+') {
            return false;
        }
    }
    return true;
}

}  // namespace rl::tz
