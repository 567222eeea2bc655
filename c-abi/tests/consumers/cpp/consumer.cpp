// A C++ program as a user builds it against an installed savechain, with CMake:
// find_package(savechain) and the target savechain::savechain (or _static; CMakeLists.txt).
// Usage: consumer FOLDER. It checks the header's version macros against the library,
// writes a one-step Lua chain into FOLDER, upgrades a save with it and prints the result.
#include <savechain.h>

#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

static_assert(SAVECHAIN_VERSION_NUMBER == SAVECHAIN_VERSION_MAJOR * 1000000 +
                                              SAVECHAIN_VERSION_MINOR * 1000 +
                                              SAVECHAIN_VERSION_PATCH,
              "SAVECHAIN_VERSION_NUMBER is major * 1000000 + minor * 1000 + patch");

namespace {
struct ChainFree {
    void operator()(savechain_chain *chain) const { savechain_chain_free(chain); }
};
struct ReportFree {
    void operator()(savechain_report *report) const { savechain_report_free(report); }
};

int failed(const char *what, savechain_status status, savechain_error *error) {
    std::cerr << what << ": " << savechain_status_name(status) << ": "
              << (error && error->message ? error->message : "(no error)") << "\n";
    savechain_error_free(error);
    return 1;
}
} // namespace

int main(int argc, char **argv) {
    if (argc != 2) {
        std::cerr << "usage: consumer FOLDER\n";
        return 2;
    }
    std::cout << "header " << SAVECHAIN_VERSION << ", library " << savechain_version()
              << ", ABI " << SAVECHAIN_ABI_VERSION << "\n";
    if (std::string(savechain_version()) != SAVECHAIN_VERSION) {
        std::cerr << "savechain_version() is not SAVECHAIN_VERSION\n";
        return 1;
    }

    std::ofstream(std::string(argv[1]) + "/0001-coins-to-gold.lua")
        << "return function(data) data.gold = data.coins * 2; data.coins = nil end\n";

    savechain_chain *made = nullptr;
    savechain_error *error = nullptr;
    savechain_status status = savechain_chain_new("1.0.0", argv[1], &made, &error);
    if (status != SAVECHAIN_OK)
        return failed("savechain_chain_new", status, error);
    std::unique_ptr<savechain_chain, ChainFree> chain(made);

    std::string save = R"({"meta": {"version": 1, "writer": "1.0.0"}, "data": {"coins": 21}})";
    savechain_report *upgraded = nullptr;
    status = savechain_upgrade_text(chain.get(), save.data(), save.size(), 0, 0, &upgraded, &error);
    if (status != SAVECHAIN_OK)
        return failed("savechain_upgrade_text", status, error);
    std::unique_ptr<savechain_report, ReportFree> report(upgraded);

    std::string text(report->text, report->text_len);
    std::cout << text;
    if (report->from != 1 || report->to != 2 || text.find("\"gold\": 42") == std::string::npos) {
        std::cerr << "the upgraded save is not the one expected\n";
        return 1;
    }
    return 0;
}
