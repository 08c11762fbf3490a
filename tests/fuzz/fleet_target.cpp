/* The fleet's records (src/core/fleet_record.hpp), as an instance reads
 * another's from Redis, where anything may have been written. Promises:
 * each line's fields are views inside the text, at most kMaxFields; a
 * field unescaped never grows and, escaped again, reads back the same;
 * a number is 0 to 2^53. */
#include "fuzz.hpp"

#include "core/fleet_record.hpp"

#include <string>
#include <string_view>

namespace rl::fuzz {

void fleet(const uint8_t* data, size_t size) {
    std::string text(reinterpret_cast<const char*>(data), size);
    std::string_view rest = text;
    fleet::Line l;
    size_t lines = 0;
    while (fleet::nextLine(&rest, &l)) {
        FUZZ_CHECK(++lines <= size + 1);
        FUZZ_CHECK(l.n >= 1 && l.n <= fleet::kMaxFields);
        for (size_t i = 0; i < l.n; i++) {
            std::string_view f = l.fields[i];
            FUZZ_CHECK(f.empty() ||
                       (f.data() >= text.data() &&
                        f.data() + f.size() <= text.data() + text.size()));
            std::string copy(f);
            long n = fleet::unescape(copy.data(), copy.size());
            if (n >= 0) {
                FUZZ_CHECK(static_cast<size_t>(n) <= f.size());
                std::string plain = copy.substr(0, static_cast<size_t>(n));
                std::string again(fleet::escapedMax(plain.size()), '\0');
                char* end = fleet::escape(again.data(), plain);
                again.resize(static_cast<size_t>(end - again.data()));
                long m = fleet::unescape(again.data(), again.size());
                FUZZ_CHECK(m == n &&
                           again.substr(0, static_cast<size_t>(m)) == plain);
            }
            int64_t v;
            if (fleet::number(f, &v)) {
                FUZZ_CHECK(v >= 0 && v <= (int64_t(1) << 53));
            }
        }
    }
}

}  // namespace rl::fuzz
