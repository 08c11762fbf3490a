/* The operator API's request parsing (src/core/api_path.hpp,
 * src/core/json.hpp): a path and query as a client sends them, and a
 * write's body. Promises: a parsed request names views inside what it
 * was given, a key value of 1 to 4096 bytes where a route has one, a
 * rule name of 1 to 120 bytes, n= from 1 to 100; a refusal is a 400 or
 * a 404 with a code; a body parsed has at most 8 members, and each of
 * its strings, written as JSON again, reads back the same. */
#include "fuzz.hpp"

#include "core/api_path.hpp"
#include "core/json.hpp"

#include <cstring>
#include <string>
#include <string_view>

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
        FUZZ_CHECK(!req.value.empty() && req.value.size() <= api::kMaxValue);
        [[fallthrough]];
    case api::Route::Rule:
    case api::Route::Top:
        FUZZ_CHECK(!req.name.empty() && req.name.size() <= api::kMaxName);
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

}  // namespace

void api(const uint8_t* data, size_t size) {
    Input in(data, size);
    uint8_t mode = in.byte();
    if (mode & 0x80) {
        body(in);
    } else {
        path(in, (mode & 1) != 0);
    }
}

}  // namespace rl::fuzz
