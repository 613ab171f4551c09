// C++ frames whose names start with '(' once demangled: functions in an
// anonymous namespace. Build: g++ -O1 -g -fno-omit-frame-pointer anon.cpp -o anon
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {
volatile std::uint64_t sink;

__attribute__((noinline)) std::uint64_t churn(int n) {
    std::uint64_t x = n;
    for (int i = 0; i < n; i++) x = x * 2862933555777941757ULL + 3037000493ULL;
    return x;
}

struct Worker {
    __attribute__((noinline)) std::uint64_t run(int n) { return churn(n) + churn(n / 2); }
};
}  // namespace

int main(int argc, char** argv) {
    double secs = argc > 1 ? std::atof(argv[1]) : 2;
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(secs);
    Worker w;
    while (std::chrono::steady_clock::now() < end) sink += w.run(100000);
    std::printf("%d\n", int(sink & 1));
    return 0;
}
