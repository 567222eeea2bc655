// engine: how a C++ engine loads a save through savechain (savechain.hpp over the C ABI).
//
//   engine --steps DIR --writer VERSION [--game NAME] [--mods DIR]
//          [--limits INSTRUCTIONS,BYTES,SECONDS] [--store DIR] SAVE...
//
// For each save: read its version alone (what a load menu shows); upgrade its text in memory
// (a save already current comes back as it is; one newer than the game, or of another game,
// is refused; the file is left as it is: the game stores the save itself, later); then read the
// upgraded text with the engine's own JSON library (nlohmann/json here) and every double
// with strtod from its hexfloat spelling, ["d", "0x1.8p+6"]. As a check, every double is
// compared, bit for bit, with the one the decimal view of the same save spells
// (["d", 96.5]), read by the JSON library as a decimal number. With --store, the game then
// stores each save again, as it would after playing: its data written by the JSON library,
// stored through savechain (savechain_store_file) under the save's meta, into DIR (named
// after the save's path, '/' as '_').
//
// Exit status: 0 every save loaded, 1 some save failed, 2 a usage error or a chain that
// does not load.
//
// Build (README.md, "From C and C++"; Debian: apt-get install nlohmann-json3-dev):
//   ./install.sh --prefix "$PWD/target/prefix"
//   export PKG_CONFIG_PATH="$PWD/target/prefix/lib/pkgconfig"
//   c++ -std=c++17 -Wall -O2 c-abi/examples/engine.cpp $(pkg-config --cflags --libs savechain)
//       -Wl,-rpath,"$PWD/target/prefix/lib" -o target/engine
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "savechain.hpp"

using nlohmann::json;

namespace {

// The doubles of a document in order: ["d", "<hexfloat>"] read with strtod, which reads C99
// hexfloats exactly (in the C locale, this program's: an engine that calls setlocale reads
// with strtod_l or std::from_chars); ["d", 96.5] as the JSON library read it.
void doubles(const json &value, std::vector<double> &out) {
    if (value.is_array() && value.size() == 2 && value[0] == "d") {
        const json &x = value[1];
        if (x.is_string()) {
            const std::string &spelling = x.get_ref<const std::string &>();
            out.push_back(std::strtod(spelling.c_str(), nullptr));
        } else {
            out.push_back(x.get<double>());
        }
        return;
    }
    if (value.is_structured()) {
        for (const json &item : value) doubles(item, out);
    }
}

bool same_double(double a, double b) {
    // NaNs are compared as NaNs: strtod keeps no payload.
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return std::memcmp(&a, &b, sizeof a) == 0;
}

std::string read_file(const char *path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(std::string("cannot open ") + path);
    std::ostringstream all;
    all << in.rdbuf();
    return all.str();
}

// Loads one save as the engine would (and stores it again into `store_dir`, when not
// NULL); returns whether it loaded.
bool load(const savechain::Chain &chain, const char *path, const char *store_dir) {
    std::cout << path << "\n";
    try {
        std::string text = read_file(path);
        std::uint64_t version = savechain::read_meta(text).version;
        std::cout << "  version " << version << "\n";
        savechain::Report report = chain.upgrade_text(text);
        if (report.changed()) {
            std::cout << "  upgraded v" << report.from() << " -> v" << report.to() << " ("
                      << report.steps().size() << " steps)\n";
        }
        for (const savechain_step *step : report.steps()) {
            for (std::size_t i = 0; i < step->printed_count; i++)
                std::cout << "  " << step->name << " printed: " << step->printed[i] << "\n";
        }
        std::string upgraded(report.text());
        json save = json::parse(upgraded);
        std::vector<double> exact, decimal;
        doubles(save["data"], exact);
        doubles(json::parse(savechain::format(upgraded, SAVECHAIN_DECIMAL))["data"], decimal);
        bool same = exact.size() == decimal.size();
        for (std::size_t i = 0; same && i < exact.size(); i++) same = same_double(exact[i], decimal[i]);
        std::cout << "  " << exact.size() << " doubles read with strtod, "
                  << (same ? "each the same as in the decimal view" : "DIFFERENT FROM THE DECIMAL VIEW") << "\n";
        if (store_dir) {
            std::string target = std::string(store_dir) + "/";
            for (const char *p = path; *p; p++) target += *p == '/' ? '_' : *p;
            chain.store_file(target.c_str(), save["data"].dump(), savechain::read_meta(upgraded).json);
            std::cout << "  stored " << target << "\n";
        }
        return same;
    } catch (const savechain::Error &e) {
        std::cout << "  failed [" << e.kind_name() << "]: " << e.what() << "\n"
                  << "    file=" << e.file << " line=" << e.line << " column=" << e.column
                  << " path=" << e.path << " mod=" << e.failed_mod << " step=" << e.failed_step << ":"
                  << e.step_line << " lua=" << e.lua_failure << "\n";
        for (const std::string &line : e.printed) std::cout << "    | " << line << "\n";
    } catch (const std::exception &e) {
        std::cout << "  failed: " << e.what() << "\n";
    }
    return false;
}

int usage(const char *why) {
    std::cerr << "engine: " << why << "\n"
              << "usage: engine --steps DIR --writer VERSION [--game NAME] [--mods DIR]\n"
              << "              [--limits INSTRUCTIONS,BYTES,SECONDS] [--store DIR] SAVE...\n";
    return 2;
}

}  // namespace

int main(int argc, char **argv) {
    const char *steps = nullptr, *writer = nullptr, *game = nullptr, *mods = nullptr, *limits = nullptr,
               *store = nullptr;
    int first = argc;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        bool has_value = i + 1 < argc;
        if (a == "--steps" && has_value) steps = argv[++i];
        else if (a == "--writer" && has_value) writer = argv[++i];
        else if (a == "--game" && has_value) game = argv[++i];
        else if (a == "--mods" && has_value) mods = argv[++i];
        else if (a == "--limits" && has_value) limits = argv[++i];
        else if (a == "--store" && has_value) store = argv[++i];
        else if (a.rfind("--", 0) == 0) return usage("unknown option, or one without its value");
        else { first = i; break; }
    }
    if (!steps || !writer) return usage("--steps and --writer are required");
    if (first >= argc) return usage("no save given");
    try {
        savechain::Chain chain(writer, steps);
        if (game) chain.set_game(game);
        if (mods) chain.add_mods(mods);
        if (limits) {
            unsigned long long instructions = 0, bytes = 0;
            double seconds = 0;
            if (std::sscanf(limits, "%llu,%llu,%lf", &instructions, &bytes, &seconds) != 3)
                return usage("--limits is INSTRUCTIONS,BYTES,SECONDS (0 keeps one)");
            chain.set_limits(instructions, bytes, seconds);
        }
        int loaded = 0;
        for (int i = first; i < argc; i++) loaded += load(chain, argv[i], store);
        std::cout << argc - first << " saves, " << argc - first - loaded << " failed\n";
        return loaded == argc - first ? 0 : 1;
    } catch (const savechain::Error &e) {
        std::cerr << "engine: the chain: " << e.what() << "\n";
        return 2;
    }
}
