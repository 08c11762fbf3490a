#include "key_text.hpp"

#include <arpa/inet.h>

#include <cstring>

#include "outcome.hpp"

namespace rl {

size_t keyText(char* out, size_t cap, std::string_view value, bool address) {
    if (address && (value.size() == 4 || value.size() == 16)) {
        char text[INET6_ADDRSTRLEN];
        if (inet_ntop(value.size() == 4 ? AF_INET : AF_INET6, value.data(),
                      text, sizeof(text)) != nullptr) {
            size_t n = std::strlen(text);
            std::memcpy(out, text, n);
            return n;
        }
    }
    return printable(out, cap, value);
}

bool addressBytes(std::string_view text, unsigned char* out, size_t* len) {
    char buf[INET6_ADDRSTRLEN];
    if (text.empty() || text.size() >= sizeof(buf)) {
        return false;
    }
    std::memcpy(buf, text.data(), text.size());
    buf[text.size()] = '\0';
    if (inet_pton(AF_INET, buf, out) == 1) {
        *len = 4;
        return true;
    }
    unsigned char v6[16];
    if (inet_pton(AF_INET6, buf, v6) != 1) {
        return false;
    }
    static const unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0,
                                              0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(v6, kMapped, 12) == 0) {
        std::memcpy(out, v6 + 12, 4);   /* nginx keeps 4 bytes of those */
        *len = 4;
        return true;
    }
    std::memcpy(out, v6, 16);
    *len = 16;
    return true;
}

}  // namespace rl
