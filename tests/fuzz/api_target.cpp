/* The operator API's request parsing (src/core/api_path.hpp,
 * src/core/json.hpp): a path and query as a client sends them, and a
 * write's body. Promises: a parsed request names views inside what it
 * was given, a key value of at least a byte where a route has one, a
 * rule name of 1 to 120 bytes, n= from 1 to 100; a refusal is a 400 or
 * a 404 with a code; a body parsed has at most 8 members, and each of
 * its strings, written as JSON again, reads back the same. And a key's
 * state read in every state of a name, of 1 to 512 states (more than a
 * record holds: src/core/state_read.hpp): its head has a record per 64
 * states; a reply of any bytes decodes or is refused, never read past;
 * a reply the script would send decodes to its figures. */
#include "fuzz.hpp"

#include "core/api_path.hpp"
#include "core/json.hpp"
#include "core/state_read.hpp"

#include <hiredis/hiredis.h>

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace rl::fuzz {

namespace {

bool inside(std::string_view v, const std::string& buf) {
    return v.empty() ||
           (v.data() >= buf.data() &&
            v.data() + v.size() <= buf.data() + buf.size());
}

void path(Input& in, bool decoded) {
    size_t len;
    const char* rest = in.rest(&len);
    std::string all(rest, len);
    size_t q = all.find('?');
    std::string p = all.substr(0, q);
    std::string query = q == std::string::npos ? "" : all.substr(q + 1);

    api::Request req;
    api::Error err;
    bool ok = api::parse(p.data(), p.size(), query.data(), query.size(),
                         decoded, &req, &err);
    if (!ok) {
        FUZZ_CHECK(err.status == 400 || err.status == 404);
        FUZZ_CHECK(err.code != nullptr && err.text != nullptr);
        return;
    }
    FUZZ_CHECK(inside(req.name, p) && inside(req.zone, query));
    FUZZ_CHECK(inside(req.value, p) || inside(req.value, query));
    FUZZ_CHECK(req.top >= 1 && req.top <= api::kMaxTop);
    switch (req.route) {
    case api::Route::Key:
    case api::Route::Block:
    case api::Route::Override:
    case api::Route::Credit:
        FUZZ_CHECK(!req.value.empty());
        [[fallthrough]];
    case api::Route::Rule:
    case api::Route::Top:
    case api::Route::Limit:
    case api::Route::Trial:
    case api::Route::FleetTop:
        FUZZ_CHECK(!req.name.empty() && req.name.size() <= api::kMaxName);
        break;
    case api::Route::Audit:
        FUZZ_CHECK(req.count >= 1 && req.count <= api::kMaxAudit);
        FUZZ_CHECK(req.name.empty() && req.value.empty());
        break;
    default:
        FUZZ_CHECK(req.name.empty() && req.value.empty());
    }
}

void body(Input& in) {
    size_t len;
    const char* rest = in.rest(&len);
    std::string text(rest, len);
    json::Object obj;
    const char* why = nullptr;
    if (!json::parseObject(text.data(), text.size(), &obj, &why)) {
        FUZZ_CHECK(why != nullptr);
        return;
    }
    FUZZ_CHECK(obj.n <= json::kMaxMembers);
    for (size_t i = 0; i < obj.n; i++) {
        const json::Member& m = obj.members[i];
        if (m.kind != json::Member::Kind::String) {
            continue;
        }
        std::string again(json::stringMax(m.text.size()) + 8, '\0');
        char* p = again.data();
        std::memcpy(p, "{\"k\":", 5);
        p = json::writeString(p + 5, m.text);
        *p++ = '}';
        again.resize(static_cast<size_t>(p - again.data()));
        json::Object back;
        FUZZ_CHECK(json::parseObject(again.data(), again.size(), &back,
                                     &why));
        FUZZ_CHECK(back.n == 1 && back.members[0].text == m.text);
    }
}

/* A state read of n states: the reply as the script writes it (bit 0
 * of `how`: figures from the input), or the input's bytes as they are. */
void stateRead(Input& in, uint8_t how) {
    size_t n = 1 + (in.byte() | size_t(in.byte()) << 8) % 512;
    std::string head(stateReadHeadBytes(n), '\0');
    auto* h = reinterpret_cast<unsigned char*>(head.data());
    FUZZ_CHECK(stateReadHead(h, n) == h + head.size());
    FUZZ_CHECK(head.size() == stateReadRecords(n) * requestBytes(0) +
                                  24 * n);
    std::string bytes;
    std::vector<double> left(n);
    bool admits = true;
    if (how & 1) {
        unsigned char d[8];
        bytes.append(reinterpret_cast<char*>(d),
                     putDouble(d, 1.7e15) - d);
        for (size_t k = 0; k < n; k++) {
            left[k] = in.byte() % 8;
            double verdict = in.byte() % 4 == 0 ? 1000.0 : 0.0;
            admits = admits && verdict <= 0;
            for (double v : {left[k], 1e6, verdict}) {
                bytes.append(reinterpret_cast<char*>(d), putDouble(d, v) - d);
            }
        }
    } else {
        size_t len;
        const char* rest = in.rest(&len);
        bytes.assign(rest, len);
    }
    redisReply reply{};
    reply.type = REDIS_REPLY_STRING;
    reply.str = bytes.data();
    reply.len = bytes.size();
    std::vector<RuleOutcome> out(n);
    bool allowed = false;
    bool ok = decodeStateRead(&reply, n, out.data(), &allowed);
    if (how & 1) {
        FUZZ_CHECK(ok && allowed == admits);
        for (size_t k = 0; k < n; k++) {
            FUZZ_CHECK(out[k].remaining == static_cast<int64_t>(left[k]) &&
                       out[k].limit == 0);
        }
    }
}

}  // namespace

void api(const uint8_t* data, size_t size) {
    Input in(data, size);
    uint8_t mode = in.byte();
    if ((mode & 0xc0) == 0xc0) {
        stateRead(in, mode);
    } else if (mode & 0x80) {
        body(in);
    } else {
        path(in, (mode & 1) != 0);
    }
}

}  // namespace rl::fuzz
