#include "script.hpp"

#include "ngx_http_rl_script.h"
#include "sha1.hpp"

namespace rl {

std::string_view scriptText() {
    static constexpr char kText[] = NGX_HTTP_RL_SCRIPT;
    return {kText, sizeof(kText) - 1};
}

std::string_view scriptSha() {
    /* Computed on first use (configuration time, in the master). */
    static const struct Hex {
        char text[40];
        Hex() { toHex(sha1(scriptText()), text, 40); }
    } hex;
    return {hex.text, 40};
}

void fillArgv(const char** argv, size_t* argvlen, std::string_view command,
              std::string_view script, std::string_view count,
              const std::string_view* keys, const RuleArgs* rules,
              size_t n, std::string_view now, bool refund) {
    size_t i = 0;
    auto put = [&](std::string_view s) {
        argv[i] = s.data();
        argvlen[i] = s.size();
        i++;
    };
    put(command);
    put(script);
    put(count);
    for (size_t k = 0; k < n; k++) {
        put(keys[k]);
    }
    put(count);
    put(now.data() != nullptr ? now : std::string_view("", 0));
    for (size_t k = 0; k < n; k++) {
        put(rules[k].spec);
        put(rules[k].cost);
    }
    if (refund) {
        put("refund");
    }
}

}  // namespace rl
