// savechain.hpp: RAII wrappers over savechain.h, as a C++ engine would write them
// (C++17). Every object handed out by the C ABI is owned by a std::unique_ptr with its
// free function; every failure is thrown as savechain::Error, holding the error's fields.
//
//   savechain::Chain chain("2.3.0", "upgrades");
//   chain.set_game("Starlane Traders");
//   savechain::Report report = chain.upgrade_text(text);
//   std::string_view upgraded = report.text();   // canonical
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "savechain.h"

namespace savechain {

// A failed call: what() is the whole message (file:line:column: at path: message).
class Error : public std::runtime_error {
public:
    // Takes the error's fields, then frees it (`e` may be NULL: the status alone is known).
    // The pointer is owned before anything that may throw.
    Error(savechain_status kind, savechain_error *error)
        : Error(kind, std::unique_ptr<savechain_error, void (*)(savechain_error *)>(error, savechain_error_free)) {}

    Error(savechain_status kind, std::unique_ptr<savechain_error, void (*)(savechain_error *)> owned)
        : std::runtime_error(owned ? owned->text : "savechain failed (no error details)"), kind(kind) {
        if (const savechain_error *e = owned.get()) {
            message = e->message;
            file = e->file ? e->file : "";
            line = e->line;
            column = e->column;
            path = e->path;
            failed_mod = e->failed_mod ? e->failed_mod : "";
            failed_step = e->failed_step ? e->failed_step : "";
            step_line = e->step_line;
            printed.assign(e->printed, e->printed + e->printed_count);
            lua_failure = e->lua_failure;
        }
    }

    // "syntax", "upgrade", ...: savechain_status_name.
    const char *kind_name() const { return savechain_status_name(kind); }

    savechain_status kind;
    std::string message;
    std::string file;  // "" when the error is about no file
    std::uint64_t line = 0, column = 0;  // 0 when not about a place in a text
    std::string path;  // in the document: "data.ship.hull"; "" for the whole
    std::string failed_mod;  // "" when no mod failed
    std::string failed_step;  // the step's file name; "" when the error is about no step
    std::uint64_t step_line = 0;  // the line in that file, when Lua says
    std::vector<std::string> printed;  // what the steps that ran printed, "step: line"
    savechain_lua_failure lua_failure = SAVECHAIN_LUA_NONE;
};

namespace detail {
// Throws the error of a failed call. Its status is taken first, then the error it stored.
inline void check(savechain_status status, savechain_error *e) {
    if (status != SAVECHAIN_OK) throw Error(status, e);
}

template <typename T, void (*Free)(T *)>
struct Deleter {
    void operator()(T *p) const { Free(p); }
};

using TextPtr = std::unique_ptr<char, Deleter<char, savechain_text_free>>;
}  // namespace detail

// `text` in `style` (SAVECHAIN_PRETTY, SAVECHAIN_COMPACT or SAVECHAIN_DECIMAL).
inline std::string format(std::string_view text, std::uint32_t style = SAVECHAIN_PRETTY) {
    char *out = nullptr;
    std::size_t len = 0;
    savechain_error *e = nullptr;
    savechain_status status = savechain_format(text.data(), text.size(), style, &out, &len, &e);
    detail::TextPtr owned(out);
    detail::check(status, e);
    return std::string(owned.get(), len);
}

// A save's version and its meta as compact JSON, read without loading its data.
struct Meta {
    std::uint64_t version = 0;
    std::string json;
};

inline Meta read_meta(std::string_view text) {
    Meta meta;
    char *json = nullptr;
    std::size_t len = 0;
    savechain_error *e = nullptr;
    savechain_status status = savechain_read_meta(text.data(), text.size(), &meta.version, &json, &len, &e);
    detail::TextPtr owned(json);
    detail::check(status, e);
    meta.json.assign(owned.get(), len);
    return meta;
}

// A save file's meta from the head of the file alone (a load menu's read), with its
// compression, size and what the read cost.
struct Head {
    savechain_head facts{};
    std::string json;  // the meta object as compact canonical JSON
};

inline Head read_head(const char *path) {
    Head head;
    char *json = nullptr;
    std::size_t len = 0;
    savechain_error *e = nullptr;
    savechain_status status = savechain_read_head(path, &head.facts, &json, &len, &e);
    detail::TextPtr owned(json);
    detail::check(status, e);
    head.json.assign(owned.get(), len);
    return head;
}

// What an upgrade did; views into it live as long as the Report.
class Report {
public:
    explicit Report(savechain_report *r) : r_(r) {}

    std::uint64_t from() const { return r_->from; }
    std::uint64_t to() const { return r_->to; }
    bool changed() const { return r_->changed; }
    // upgrade_text: the upgraded save's canonical text (also when nothing changed); empty
    // for a file.
    std::string_view text() const { return r_->text ? std::string_view(r_->text, r_->text_len) : std::string_view(); }
    const char *written() const { return r_->written; }  // NULL when no file was written
    const char *backup() const { return r_->backup; }    // NULL when no backup was kept
    std::vector<const savechain_step *> steps() const {
        std::vector<const savechain_step *> all;
        for (std::size_t i = 0; i < r_->step_count; i++) all.push_back(&r_->steps[i]);
        return all;
    }
    std::vector<const savechain_mod *> mods() const {
        std::vector<const savechain_mod *> all;
        for (std::size_t i = 0; i < r_->mod_count; i++) all.push_back(&r_->mods[i]);
        return all;
    }

private:
    std::unique_ptr<savechain_report, detail::Deleter<savechain_report, savechain_report_free>> r_;
};

// A game's chain of Lua steps. Set it up, then share it: const calls may run on many
// threads at once.
class Chain {
public:
    // `steps_dir` may be NULL (a game with no steps yet).
    Chain(const char *writer, const char *steps_dir) {
        savechain_chain *chain = nullptr;
        savechain_error *e = nullptr;
        savechain_status status = savechain_chain_new(writer, steps_dir, &chain, &e);
        detail::check(status, e);
        chain_.reset(chain);
    }

    void set_game(const char *game) {
        savechain_error *e = nullptr;
        savechain_status status = savechain_chain_set_game(chain_.get(), game, &e);
        detail::check(status, e);
    }

    void add_mods(const char *mods_dir) {
        savechain_error *e = nullptr;
        savechain_status status = savechain_chain_add_mods(chain_.get(), mods_dir, &e);
        detail::check(status, e);
    }

    // 0 keeps a limit as it is.
    void set_limits(std::uint64_t instructions, std::uint64_t memory_bytes, double seconds) {
        savechain_error *e = nullptr;
        savechain_status status = savechain_chain_set_limits(chain_.get(), instructions, memory_bytes, seconds, &e);
        detail::check(status, e);
    }

    std::uint64_t latest() const { return savechain_chain_latest(chain_.get()); }
    std::uint64_t oldest() const { return savechain_chain_oldest(chain_.get()); }

    Report upgrade_text(std::string_view text, std::uint64_t to = 0, std::uint32_t flags = 0) const {
        savechain_report *report = nullptr;
        savechain_error *e = nullptr;
        savechain_status status = savechain_upgrade_text(chain_.get(), text.data(), text.size(), to, flags, &report, &e);
        Report owned(report);
        detail::check(status, e);
        return owned;
    }

    // In place with a backup when `out_path` is NULL; into `out_path` otherwise.
    Report upgrade_file(const char *path, const char *out_path = nullptr, std::uint64_t to = 0,
                        std::uint32_t flags = 0) const {
        savechain_report *report = nullptr;
        savechain_error *e = nullptr;
        savechain_status status = savechain_upgrade_file(chain_.get(), path, out_path, to, flags, &report, &e);
        Report owned(report);
        detail::check(status, e);
        return owned;
    }

    // Stores the game's `data` (JSON) at `path` as a save of this chain: a new save when
    // `meta` is empty, else under `meta`, the meta of the save as loaded and upgraded.
    void store_file(const char *path, std::string_view data, std::string_view meta = {}) const {
        savechain_error *e = nullptr;
        savechain_status status = savechain_store_file(chain_.get(), path, data.data(), data.size(),
                                                       meta.empty() ? nullptr : meta.data(), meta.size(), &e);
        detail::check(status, e);
    }

private:
    std::unique_ptr<savechain_chain, detail::Deleter<savechain_chain, savechain_chain_free>> chain_;
};

}  // namespace savechain
