/*
 * savechain: lossless, versioned JSON saves, for C and C++ engines.
 *
 * Installed (./install.sh --prefix DIR; README.md, "Installing"), a program links with
 * `pkg-config --cflags --libs savechain`, or in CMake with find_package(savechain) and the
 * target savechain::savechain (the shared library) or savechain::savechain_static. The
 * shared library's soname is libsavechain.so.<SAVECHAIN_ABI_VERSION>: a program linked
 * against it loads only a library of the same ABI. In a checkout, cargo build --release
 * -p savechain-c makes target/release/libsavechain_c.so and libsavechain_c.a (the static
 * library also needs -lpthread -ldl -lm). README.md, "From C and C++", has a worked
 * example.
 *
 * Versions. SAVECHAIN_VERSION and its parts are the version of the header the program
 * compiles with, savechain_version() that of the library it runs with.
 *
 * Ownership. Every object savechain hands out (a chain, a report, an error, a text) is
 * owned by the caller and freed by the free function of its type: savechain_chain_free,
 * savechain_report_free, savechain_error_free, savechain_text_free. Each accepts NULL.
 * Strings and arrays inside a report or an error belong to it, live until it is freed,
 * and must not be written to; an array whose count is 0 is NULL. A text handed out alone
 * (savechain_format, savechain_read_meta, savechain_read_head) may be changed before it
 * is freed. The strings of savechain_version and savechain_status_name are static.
 * Pointers the caller passes in are only read during the call; savechain keeps none of
 * them.
 *
 * Errors. A call that can fail returns SAVECHAIN_OK or the kind of its failure. Given a
 * non-NULL `savechain_error **error_out`, it stores there NULL on success, or an error
 * (kind, message, file, line, column, path in the document, step, what steps printed) to
 * free with savechain_error_free; NULL on a failure only when memory ran out making it. A NULL pointer where one is required, a string that is not
 * UTF-8, an unknown flag or style: SAVECHAIN_ERROR_ARGUMENT, never a crash. A length
 * longer than the buffer it describes cannot be seen, and is undefined behaviour, as in
 * any C API. No panic crosses the boundary (SAVECHAIN_ERROR_INTERNAL). Out pointers to
 * objects are set to NULL first, so freeing them after a failure is safe; other out
 * values (a length, a version) are written on success only.
 *
 * Threads. All calls may run at once on different threads, on different objects or on
 * the same chain: a chain, once set up, is only read. The calls that set a chain up
 * (savechain_chain_set_game, savechain_chain_add_mods, savechain_chain_set_limits) and
 * savechain_chain_free must not run while another call uses that chain. Reports, errors
 * and texts may be freed on any thread.
 *
 * Global state. None a caller sees: no initialisation, no shutdown; a few read-only
 * caches (the source of savechain's Lua library) are made on first use and kept until the
 * process ends. Lua steps run in Lua states of savechain's own (Lua 5.4, compiled in),
 * one set per upgrade, so nothing one save's steps do reaches another's. The shared
 * library exports only the savechain_* calls; the static one holds Lua's own symbols
 * too, so an engine that links another Lua takes the shared library. Upgrades in place
 * take an advisory lock (flock) on the save while they work on it.
 *
 * Doubles. A save spells each double as a C99 hexfloat, ["d", "0x1.8p+6"], which strtod
 * reads exactly, in the C locale (the locale of every program that does not call
 * setlocale; an engine that does reads with strtod_l or std::from_chars instead).
 * Infinities are "inf" and "-inf", NaNs "nan", "-nan" and, with a payload,
 * "nan:0x<mantissa>" (docs/FORMAT.md, 3): strtod reads those as NaNs without their payload.
 *
 * C99 or later, and C++. Valgrind users: c-abi/valgrind.supp suppresses the one block Rust's
 * standard library keeps for the life of each calling thread.
 *
 * Text. Save text is UTF-8 given as a pointer and a length (no NUL needed); texts handed
 * out are NUL-terminated too, and never contain a NUL byte. A text that is not UTF-8 is a
 * SAVECHAIN_ERROR_SYNTAX with its line and column.
 *
 * Compressed saves. Wherever save text is given (savechain_upgrade_text, savechain_format,
 * savechain_read_meta) or a save file read, its bytes may be that text compressed, zstd or
 * gzip, known by their first bytes (never by a file's name), and decompressed to at most
 * 1 GiB; texts handed out are plain. savechain_store_file_compressed writes a save
 * compressed; savechain_upgrade_file keeps a save's compression unless told otherwise
 * (SAVECHAIN_COMPRESS_*). Damaged compressed bytes, or too many, are
 * SAVECHAIN_ERROR_COMPRESSED, naming the codec and where decoding stopped.
 */


#ifndef SAVECHAIN_H
#define SAVECHAIN_H

/* Made by cbindgen from c-abi/src/ (tests/header.rs checks it): do not edit by hand. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// The version of savechain this header comes with, known when the program compiles:
// SAVECHAIN_VERSION as a string ("0.1.0"), its parts SAVECHAIN_VERSION_MAJOR, _MINOR and
// _PATCH, and SAVECHAIN_VERSION_NUMBER (major * 1000000 + minor * 1000 + patch: 1000 for
// 0.1.0) to compare with #if. savechain_version() is the version of the library the
// program runs with, which may be newer than the header's (a shared library upgraded
// under the program, within the same SAVECHAIN_ABI_VERSION): a program that wants to know
// compares them, strcmp(savechain_version(), SAVECHAIN_VERSION).
#define SAVECHAIN_VERSION "0.1.0"

// Codec: plain text.
#define SAVECHAIN_CODEC_NONE 0

// Codec: a zstd frame (magic bytes 28 B5 2F FD), with its content size and checksum.
#define SAVECHAIN_CODEC_ZSTD 1

// Codec: a gzip member (magic bytes 1F 8B), with no name and a time of 0.
#define SAVECHAIN_CODEC_GZIP 2

// Style: the canonical layout a save is stored in (`meta` first, then every key sorted,
// two-space indent, doubles as `["d", "<hexfloat>"]`).
#define SAVECHAIN_PRETTY 0

// Style: the same document on one line, without spaces.
#define SAVECHAIN_COMPACT 1

// Style: the decimal view for a person editing by hand: each double as its shortest
// decimal, tagged `["d", 0.1]`, reading back as the same bits (docs/FORMAT.md 5.1).
#define SAVECHAIN_DECIMAL 2

// Flag: when a mod's step fails, upgrade the rest of the save and hold that mod's data
// back at its old version, marked in the save (`meta.mods.<name>.held`), instead of
// failing the save. The game's own steps always fail the save.
#define SAVECHAIN_KEEP_GOING 1

// Flag: fail a step that removes a path in the save it did not declare dropped.
#define SAVECHAIN_STRICT 2

// Flag, for `savechain_upgrade_file`: write nothing; the report says which steps would
// run.
#define SAVECHAIN_DRY_RUN 4

// Flag, for `savechain_upgrade_file` with an `out_path`: replace a file found there that
// holds something else than the upgrade writes, keeping it first beside it as
// `<name>.v<N>.bak` (a save at version N) or `<name>.bak`. Without it, such a file is
// refused (`SAVECHAIN_ERROR_USAGE`) and left as it is.
#define SAVECHAIN_REPLACE_OUTPUT 8

// Flag, for `savechain_upgrade_file`: store the save written as plain text. Without any
// `SAVECHAIN_COMPRESS_*` flag, a save keeps the compression it has (a zstd save is
// written zstd, at zstd's default level), and an output takes its source's.
#define SAVECHAIN_COMPRESS_NONE 16

// Flag, for `savechain_upgrade_file`: store the save written as zstd, at its default
// level (3).
#define SAVECHAIN_COMPRESS_ZSTD 32

// Flag, for `savechain_upgrade_file`: store the save written as gzip, at its default
// level (6).
#define SAVECHAIN_COMPRESS_GZIP 64

// The major part of `SAVECHAIN_VERSION` (the string "0.1.0", in the header's first lines).
#define SAVECHAIN_VERSION_MAJOR 0

// The minor part of `SAVECHAIN_VERSION`.
#define SAVECHAIN_VERSION_MINOR 1

// The patch part of `SAVECHAIN_VERSION`.
#define SAVECHAIN_VERSION_PATCH 0

// `SAVECHAIN_VERSION` as one number, major * 1000000 + minor * 1000 + patch, for `#if
// SAVECHAIN_VERSION_NUMBER >= 1000`.
#define SAVECHAIN_VERSION_NUMBER 1000

// The major version of this C ABI: raised whenever a function, struct or enum value of
// this header is removed or changed, never when one is added. It is the number in the
// shared library's soname (`libsavechain.so.0`), so a program linked against one ABI
// never loads a library of another.
#define SAVECHAIN_ABI_VERSION 0

// The revision of the save format (docs/FORMAT.md) this library reads and writes.
#define SAVECHAIN_FORMAT_REVISION 3

// What a call did: `SAVECHAIN_OK`, or the kind of problem that stopped it (the kinds of the
// library's `ErrorKind`, and two of the ABI's own).
typedef enum savechain_status {
  // It worked.
  SAVECHAIN_OK = 0,
  // Reading or writing a file failed.
  SAVECHAIN_ERROR_IO = 1,
  // The text is not strict JSON, or not UTF-8.
  SAVECHAIN_ERROR_SYNTAX = 2,
  // Valid JSON that holds something a save cannot: a malformed tag, an integer out of
  // range, a duplicate key, nesting that is too deep.
  SAVECHAIN_ERROR_VALUE = 3,
  // A save whose envelope is broken: `meta.version` negative or too large, `meta.writer`
  // not a semantic version.
  SAVECHAIN_ERROR_ENVELOPE = 4,
  // JSON that is not a save at all: its top level is not an object whose `meta` is an
  // object holding an integer `version` (a settings file, say).
  SAVECHAIN_ERROR_NOT_A_SAVE = 5,
  // Files that cannot be worked on as asked: `savechain_upgrade_file`'s `out_path`
  // holds something else than the upgrade writes (see `SAVECHAIN_REPLACE_OUTPUT`).
  SAVECHAIN_ERROR_USAGE = 6,
  // Lua failed outside a step's run on a save: savechain's own Lua state could not be
  // made (out of memory).
  SAVECHAIN_ERROR_LUA = 7,
  // The chain is malformed (a gap, a step that does not compile), a save's version is
  // outside it (a save newer than the game), or a step failed on the save: then
  // `lua_failure` says why a Lua step did (an error it raised, a limit it ran out of).
  SAVECHAIN_ERROR_UPGRADE = 8,
  // Another program wrote the file while it was being upgraded: it is left as that
  // program made it, and upgrading again works on its new content.
  SAVECHAIN_ERROR_CHANGED = 9,
  // The call's arguments are wrong: a NULL pointer where one is required, a string that
  // is not UTF-8, an unknown flag or style, a limit out of range.
  SAVECHAIN_ERROR_ARGUMENT = 10,
  // A bug in savechain, caught at the boundary (a panic), or memory that ran out for a
  // text handed out. The library may be used on; a file the call upgraded is left old
  // or whole, as by any failure.
  SAVECHAIN_ERROR_INTERNAL = 11,
  // A recorded shape (the `shapes/` folder beside the steps) is malformed, or a declared
  // step contradicts the shapes of its versions: the chain is not made.
  SAVECHAIN_ERROR_SHAPE = 12,
  // Compressed bytes (zstd or gzip, known by their first bytes) that do not decompress:
  // truncated, corrupt, a failed checksum, bytes after the end; or that decompress to
  // more text than the limit (1 GiB), a decompression bomb. The message names the codec
  // and the compressed byte where decoding stopped.
  SAVECHAIN_ERROR_COMPRESSED = 13,
} savechain_status;

// Why Lua failed, for errors of `SAVECHAIN_ERROR_LUA`, and of `SAVECHAIN_ERROR_UPGRADE`
// that a Lua step caused.
typedef enum savechain_lua_failure {
  // Lua did not fail (or the error says no more).
  SAVECHAIN_LUA_NONE = 0,
  // A script ran more instructions than its limit.
  SAVECHAIN_LUA_INSTRUCTIONS = 1,
  // A script needed more memory than its limit.
  SAVECHAIN_LUA_MEMORY = 2,
  // A script ran longer than its time limit.
  SAVECHAIN_LUA_TIME = 3,
  // A file did not compile.
  SAVECHAIN_LUA_SYNTAX = 4,
  // A script raised an error, or did what the sandbox refuses.
  SAVECHAIN_LUA_RUNTIME = 5,
  // A script left a value a save cannot hold (a function, say).
  SAVECHAIN_LUA_UNSAVEABLE = 6,
} savechain_lua_failure;

// A game's upgrade chain (opaque): its Lua steps, its version, its mods and the limits of
// their steps. Made by `savechain_chain_new`, set up by the `savechain_chain_set_*` and
// `savechain_chain_add_*` calls, freed by `savechain_chain_free`. Once set up it may be
// used by any number of threads at once (it is only read); the calls that set it up
// must not run while any other call uses it.
typedef struct savechain_chain savechain_chain;

// An error, as a caller reads it. Every string is NUL-terminated UTF-8 owned by the error,
// valid until `savechain_error_free`.
typedef struct savechain_error {
  // The kind of problem; never `SAVECHAIN_OK`.
  enum savechain_status kind;
  // The whole error as savechain prints it, for a log or a player:
  // `file:line:column: at data.ship.hull: message`, leaving out what is not known.
  const char *text;
  // What went wrong and what was expected, alone.
  const char *message;
  // The file the error is about, or NULL.
  const char *file;
  // The line in the text, counted from 1; 0 when the error is not about a place in a
  // text.
  uint64_t line;
  // The column in that line, in characters, counted from 1; 0 when not known.
  uint64_t column;
  // The path inside the document (`data.ship.hull`, `data.items[3]`), or "" for the
  // whole document or an error about no part of one.
  const char *path;
  // The mod whose step or data failed, or NULL.
  const char *failed_mod;
  // The step the error is about (its file's name, `0003-hull.lua`), or NULL: it failed
  // on the save, or its file does not compile.
  const char *failed_step;
  // The line of that step's file the failure is at, when Lua says; 0 otherwise.
  uint64_t step_line;
  // What the steps that ran printed before the upgrade failed, the failed step's
  // lines last, each as `step name: line` (`printed_count` of them; NULL when none): a
  // step's `print` is most wanted when it fails.
  const char *const *printed;
  // How many lines `printed` has.
  size_t printed_count;
  // Why Lua failed, or `SAVECHAIN_LUA_NONE`.
  enum savechain_lua_failure lua_failure;
} savechain_error;

// What `savechain_read_head` found besides `meta`: the caller's memory, filled on
// success.
typedef struct savechain_head {
  // The save's `meta.version`.
  uint64_t version;
  // How the file is stored: `SAVECHAIN_CODEC_NONE`, `_ZSTD` or `_GZIP`.
  uint32_t codec;
  // Whether the whole text was read: the save's first member is not `meta` (a save
  // written before format revision 3, with `data` first).
  bool whole;
  // The bytes read from the file (compressed bytes, for a compressed save).
  uint64_t bytes_read;
  // The bytes of text read (decompressed, for a compressed save).
  uint64_t text_read;
  // The file's size in bytes, as stored.
  uint64_t size;
  // Whether the system gave the file's modification time.
  bool has_modified;
  // The file's modification time: seconds since 1970-01-01 UTC (negative before it).
  int64_t modified_seconds;
  // The nanoseconds past `modified_seconds` (0 to 999999999).
  uint32_t modified_nanoseconds;
} savechain_head;

// One step that ran. Strings are NUL-terminated UTF-8 owned by the report.
typedef struct savechain_step {
  // The step's name, its file's (`0003-hull.lua`).
  const char *name;
  // The version it upgraded from.
  uint64_t from;
  // The version it made.
  uint64_t to;
  // `"lua"`, `"rust"` or `"declared"`.
  const char *kind;
  // What the step says it does ("" when it says nothing).
  const char *description;
  // The mod the step is of, or NULL for a step of the game's chain.
  const char *mod_name;
  // The lines the step printed, in order: `printed_count` strings. Savechain shows them
  // nowhere: the caller does, with the save and the step's name.
  const char *const *printed;
  // How many lines `printed` has.
  size_t printed_count;
} savechain_step;

// Where one mod's data stands after the upgrade.
typedef struct savechain_mod {
  // The mod's name, its key in `meta.mods`.
  const char *name;
  // Whether the save recorded a data version of the mod (`from`).
  bool has_from;
  // The data version the save had for it (when `has_from`).
  uint64_t from;
  // Whether the save records one after the upgrade (`to`).
  bool has_to;
  // The data version it has after (when `has_to`).
  uint64_t to;
  // `"upgraded"`, `"current"`, `"not-in-the-save"`, `"not-installed"`, `"held"` or
  // `"waiting"` (the game's upgrade stopped before its latest version).
  const char *status;
  // For a mod held back (`SAVECHAIN_KEEP_GOING`): why; NULL otherwise.
  const char *held_because;
  // For a mod held back because a step failed: what its steps printed, each line as
  // `step name: line` (`printed_count` of them; NULL when none).
  const char *const *printed;
  // How many lines `printed` has.
  size_t printed_count;
} savechain_mod;

// What an upgrade did. Strings are NUL-terminated UTF-8 (`written` and `backup`: the
// paths' bytes); everything is owned by the report, valid until `savechain_report_free`.
typedef struct savechain_report {
  // The save's version (the game's data version) before.
  uint64_t from;
  // Its version after (with `SAVECHAIN_DRY_RUN`: would have).
  uint64_t to;
  // `savechain_upgrade_text`: whether the save's content changed (a step ran, or a
  // mod's mark was made or dropped); when false, `text` holds what the text given held,
  // and is the same bytes when that text was canonical. `savechain_upgrade_file`:
  // whether any step ran (with `SAVECHAIN_DRY_RUN`: would run); `written` says what
  // was written.
  bool changed;
  // `savechain_upgrade_text`: the upgraded save's canonical text (pretty), `text_len`
  // bytes and a NUL, also when nothing changed. NULL for a file.
  const char *text;
  // The length of `text` in bytes, without its NUL.
  size_t text_len;
  // `savechain_upgrade_file`: the file written, or NULL when none was (a save already
  // current, upgraded in place; a dry run; an `out_path` that already held exactly what
  // the upgrade writes).
  const char *written;
  // `savechain_upgrade_file` in place: the backup of the original (`<name>.v<N>.bak`);
  // into `out_path` with `SAVECHAIN_REPLACE_OUTPUT`: the backup of the file that was
  // there; NULL when none was written.
  const char *backup;
  // The steps that ran, the game's then each mod's (with `SAVECHAIN_DRY_RUN`: would
  // run): `step_count` of them.
  const struct savechain_step *steps;
  // How many steps `steps` has.
  size_t step_count;
  // Every mod installed in the chain or recorded in the save: `mod_count` of them.
  const struct savechain_mod *mods;
  // How many mods `mods` has.
  size_t mod_count;
} savechain_report;

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

// The version of savechain this library is, as a NUL-terminated string ("0.1.0"), static:
// the library's own, where `SAVECHAIN_VERSION` is the header's.
const char *savechain_version(void);

// Makes the chain of the game at version `writer` (a semantic version such as "2.3.0",
// written into every save it upgrades) from the Lua steps in the folder `steps_dir`
// (files `NNNN-name.lua`, each upgrading version NNNN to NNNN+1; NULL for a game with no
// steps yet), checked as the library's `Chain::from_lua_dir` checks it: a gap, a clash, a
// misnamed file, a step that does not compile, or a `writer` that is not a semantic
// version is a `SAVECHAIN_ERROR_UPGRADE` (a folder that cannot be read, `_IO`; a recorded
// shape in its `shapes/` folder that is malformed, or a declared step that contradicts the
// shapes, `_SHAPE`); one about
// a step names its file (`file`, the path; `failed_step`, the file's name: the step after
// a gap, the second of two from one version, the misnamed file; and `step_line` where
// Lua gives the line; the error's `line` and `column` are about save text, and stay 0).
// Each step's file is run once here, to get its function, under the default limits
// (`savechain_chain_set_limits` applies to the steps' runs on saves).
//
// On success `*chain_out` is the new chain, which the caller frees with
// `savechain_chain_free`; on failure it is NULL.
//
// # Safety
// `writer` and `steps_dir` are NULL or NUL-terminated strings; `chain_out` points to
// writable memory; `error_out` is NULL or points to writable memory.
enum savechain_status savechain_chain_new(const char *writer,
                                          const char *steps_dir,
                                          struct savechain_chain **chain_out,
                                          struct savechain_error **error_out);

// Names the game the chain's saves belong to: the chain then upgrades only saves whose
// `meta.game` is exactly `game`, and refuses a save that names another game or none. An
// empty name is an error; on failure the chain is as it was.
//
// # Safety
// `chain` is a live chain no other call is using; `game` a NUL-terminated string;
// `error_out` NULL or writable.
enum savechain_status savechain_chain_set_game(struct savechain_chain *chain,
                                               const char *game,
                                               struct savechain_error **error_out);

// Adds the mods of the folder `mods_dir` (one folder per mod, each with its `mod.json`
// and its own Lua steps), put in order after the game's steps as the library's
// `Chain::with_mods_dir` does. A malformed mod, or a mod of a name the chain has, is an
// error naming its file; on failure the chain is as it was.
//
// # Safety
// As `savechain_chain_set_game`.
enum savechain_status savechain_chain_add_mods(struct savechain_chain *chain,
                                               const char *mods_dir,
                                               struct savechain_error **error_out);

// Sets what each Lua step may use, per step run: `instructions` (Lua VM instructions),
// `memory_bytes` (what its Lua state may hold, 1 MiB at least) and `seconds` (processor
// time). 0 keeps a limit as it is; the defaults are 300 million instructions, 1 GiB and
// 30 seconds. A step that goes over a limit fails its save alone. Less memory than 1 MiB,
// and a negative, NaN or infinite `seconds`, are errors, and the chain is then as it was.
//
// # Safety
// `chain` is a live chain no other call is using; `error_out` NULL or writable.
enum savechain_status savechain_chain_set_limits(struct savechain_chain *chain,
                                                 uint64_t instructions,
                                                 uint64_t memory_bytes,
                                                 double seconds,
                                                 struct savechain_error **error_out);

// The chain's latest version: what its saves are upgraded to. 0 when `chain` is NULL.
//
// # Safety
// `chain` is NULL or a live chain.
uint64_t savechain_chain_latest(const struct savechain_chain *chain);

// The oldest version the chain upgrades from (its first step's; 1 for a chain with no
// steps); a save older than it is refused. 0 when `chain` is NULL.
//
// # Safety
// `chain` is NULL or a live chain.
uint64_t savechain_chain_oldest(const struct savechain_chain *chain);

// Frees a chain. NULL is ignored.
//
// # Safety
// `chain` is NULL or a chain from `savechain_chain_new`, not freed before, that no other
// call is using.
void savechain_chain_free(struct savechain_chain *chain);

// A word naming `status`, for logs: "ok", "io", "syntax", "value", "envelope",
// "not-a-save" (as `save-upgrade --report` spells it), "usage", "lua", "upgrade",
// "changed", "argument", "internal", "shape", "compressed"; "unknown" for a value that
// is none of these. The string is static.
const char *savechain_status_name(int status);

// Frees an error a call stored. NULL is ignored.
//
// # Safety
// `error` is NULL or an error a savechain call stored, not freed before.
void savechain_error_free(struct savechain_error *error);

// Reads the `meta` of the save in the file `path` from the head of the file, as the
// library's `head::read` does: for a load menu or a list of saves, which want each
// save's version, game and time without reading its data. The file must be a regular
// file (a FIFO or a device is refused, never waited on). A compressed save (zstd or gzip,
// known by its first bytes, whatever the file's name) is decompressed only as far as it
// is read. A save written with `meta` first (format revision 3's canonical text, which
// every savechain writer writes) costs a read of its head: 4 KiB of text unless
// `meta` is longer; one with `data` first is read whole (`whole`).
//
// On success `*head_out` is filled, and, when `meta_out` is not NULL, `*meta_out` is the
// `meta` object as compact canonical JSON, freed by `savechain_text_free`, with its
// length in `*meta_len_out` (when not NULL). What follows `meta` is not read, so a save
// whose head reads may still fail to load. Errors name the file, and the line and column
// where its head is wrong: a syntax error (`SAVECHAIN_ERROR_SYNTAX`), JSON that is not a
// save (`_NOT_A_SAVE`), a broken `meta` (`_ENVELOPE`), damaged compressed data
// (`_COMPRESSED`), a file that cannot be read (`_IO`).
//
// # Safety
// `path` is a NUL-terminated string; `head_out` points to writable memory; `meta_out`,
// `meta_len_out` and `error_out` are NULL or writable.
enum savechain_status savechain_read_head(const char *path,
                                          struct savechain_head *head_out,
                                          char **meta_out,
                                          size_t *meta_len_out,
                                          struct savechain_error **error_out);

// Stores a save of the chain's game at `path`, as the game writes it: `data` (the
// `data_len` bytes of the game's data as JSON of the format; plain JSON is fine, a
// double typed as a decimal is read as the nearest double) under a `meta` the chain
// makes:
// - `meta` NULL (with a `meta_len` of 0): a new save, at the chain's latest version, written by the chain's
//   `writer`, naming its game, recording each of its mods at its latest version;
// - else the `meta_len` bytes at `meta`, the `meta` object of the save as it was loaded
//   and upgraded (`savechain_read_meta` of the upgraded text), whose other members (the
//   history, the game's own) are kept, with the writer and mods recorded as for a new
//   save. Its version must be the chain's latest: a save's data is only written in the
//   layout of the latest version, and other versions are refused
//   (`SAVECHAIN_ERROR_ARGUMENT`), never stored under a version its data does not have.
//
// The file is written in the canonical layout, atomically (a temporary file, flushed,
// renamed: the file is as it was or whole), and under the lock every savechain writer
// takes: an upgrade of the same file running beside waits for it, or it for the upgrade,
// and the newest save wins. Errors name the file, or the line, column and path in `data`
// or `meta`.
//
// # Safety
// `chain` is a live chain; `path` a NUL-terminated string; `data` points to `data_len`
// readable bytes, `meta` to `meta_len` (each NULL with a length of 0 allowed);
// `error_out` is NULL or writable. A NULL `data` or `meta` with a length that is not 0
// is refused (`SAVECHAIN_ERROR_ARGUMENT`).
enum savechain_status savechain_store_file(const struct savechain_chain *chain,
                                           const char *path,
                                           const char *data,
                                           size_t data_len,
                                           const char *meta,
                                           size_t meta_len,
                                           struct savechain_error **error_out);

// `savechain_store_file`, the file's text stored as `codec` says: `SAVECHAIN_CODEC_NONE`
// (plain, as `savechain_store_file` writes), `SAVECHAIN_CODEC_ZSTD` or
// `SAVECHAIN_CODEC_GZIP`, at `level` (0: the codec's default, zstd 3 and gzip 6;
// otherwise zstd 1 to 22, gzip 1 to 9; NONE takes 0). The same text and level always
// give the same bytes. Every savechain call that reads saves reads the file back
// (`savechain_read_head`, `savechain_upgrade_file`, and the text calls given its bytes),
// whatever it is named; a name ending in `.json.zst` or `.json.gz` is what folder
// searches (`save-upgrade`) look for. A codec or level out of range is a
// `SAVECHAIN_ERROR_ARGUMENT`, and nothing is written.
//
// # Safety
// As `savechain_store_file`.
enum savechain_status savechain_store_file_compressed(const struct savechain_chain *chain,
                                                      const char *path,
                                                      const char *data,
                                                      size_t data_len,
                                                      const char *meta,
                                                      size_t meta_len,
                                                      uint32_t codec,
                                                      int32_t level,
                                                      struct savechain_error **error_out);

// Writes the document whose text is the `text_len` bytes at `text` in `style`
// (`SAVECHAIN_PRETTY`, `SAVECHAIN_COMPACT` or `SAVECHAIN_DECIMAL`), every value kept
// exactly. Any document of the format is accepted, a save or not. The bytes may be the
// text compressed (zstd or gzip, known by their first bytes: a file's bytes as read);
// the text written is plain. Compressed bytes that do not decompress, or decompress to
// more than 1 GiB, are a `SAVECHAIN_ERROR_COMPRESSED`.
//
// On success `*out` is the new text, NUL-terminated, freed by `savechain_text_free`,
// and `*out_len` (when `out_len` is not NULL) its length without the NUL. Text that is
// not the format's JSON is an error with its line, column and document path.
//
// # Safety
// `text` points to `text_len` readable bytes (or is NULL with `text_len` 0); `out` points
// to writable memory; `out_len` and `error_out` are NULL or writable.
enum savechain_status savechain_format(const char *text,
                                       size_t text_len,
                                       uint32_t style,
                                       char **out,
                                       size_t *out_len,
                                       struct savechain_error **error_out);

// Reads the version and `meta` of the save whose text is the `text_len` bytes at `text`
// (or that text compressed, zstd or gzip, as for `savechain_format`), building nothing of
// its data (the whole text is still checked as the format's JSON): to tell whether a
// save in memory needs an upgrade (its version below `savechain_chain_latest`). For a
// save in a file, `savechain_read_head` reads only the head of the file.
//
// On success `*version_out` is `meta.version`, and, when `meta_out` is not NULL,
// `*meta_out` is the `meta` object as compact canonical JSON, freed by
// `savechain_text_free`, with its length in `*meta_len_out` (when not NULL). Text that
// is not a save is an error (`SAVECHAIN_ERROR_NOT_A_SAVE` when it is JSON with no `meta`).
//
// # Safety
// `text` points to `text_len` readable bytes (or is NULL with `text_len` 0);
// `version_out` points to writable memory; `meta_out`, `meta_len_out` and `error_out`
// are NULL or writable.
enum savechain_status savechain_read_meta(const char *text,
                                          size_t text_len,
                                          uint64_t *version_out,
                                          char **meta_out,
                                          size_t *meta_len_out,
                                          struct savechain_error **error_out);

// Frees a text a savechain call stored. NULL is ignored. The caller may have changed the
// text's bytes, not its size (it is freed with C's `free`).
//
// # Safety
// `text` is NULL or a text a savechain call stored, not freed before.
void savechain_text_free(char *text);

// Upgrades the save whose text is the `text_len` bytes at `text` (UTF-8; no NUL needed;
// or that text compressed, zstd or gzip, known by its first bytes, decompressed to at
// most 1 GiB: the report's text is plain) to version `to` (0: the chain's latest; a save at `to` or past it is left as it is),
// in memory, as the library's
// `Upgrader::upgrade_text` does. `flags`: 0, or `SAVECHAIN_KEEP_GOING` and
// `SAVECHAIN_STRICT` or-ed.
//
// On success `*report_out` is the report, with the upgraded save's canonical text (a
// save already current comes back canonical too, its content unchanged), freed by
// `savechain_report_free`. Text that is not a save, a save newer than the chain or of
// another game, and a step that fails are errors with the line, column and document path
// where they apply; the error's file is NULL. Steps run in sandboxes of their own, with
// the chain's limits: nothing one upgrade's steps do reaches another's.
//
// # Safety
// `chain` is a live chain; `text` points to `text_len` readable bytes (or is NULL with
// `text_len` 0); `report_out` points to writable memory; `error_out` is NULL or writable.
enum savechain_status savechain_upgrade_text(const struct savechain_chain *chain,
                                             const char *text,
                                             size_t text_len,
                                             uint64_t to,
                                             uint32_t flags,
                                             struct savechain_report **report_out,
                                             struct savechain_error **error_out);

// Upgrades the save in the file `path` to version `to` (0: the chain's latest), as the
// library's `upgrade_file` does: into the file `out_path` (its folder made; the source
// left as it is; a save already current copied byte for byte), or, when `out_path` is
// NULL, in place, after keeping the original beside it as `<name>.v<N>.bak` (a different
// file of that name is never overwritten). Every write is atomic (a temporary file,
// flushed, renamed): a crash or a failure leaves each file as it was or whole. A save
// already current is not rewritten in place. An `out_path` that is the save itself
// (through a link, say) is an error (`SAVECHAIN_ERROR_IO`): that would replace the
// original without its backup. `flags`: 0, or `SAVECHAIN_KEEP_GOING`, `SAVECHAIN_STRICT`,
// `SAVECHAIN_DRY_RUN` and `SAVECHAIN_REPLACE_OUTPUT` or-ed, and at most one of
// `SAVECHAIN_COMPRESS_NONE`, `_ZSTD` and `_GZIP`; a dry run writes nothing and
// takes no `out_path`; in place, it fails a read-only save with steps to run, as the
// upgrade would.
//
// A compressed save (zstd or gzip, known by its first bytes, whatever the file's name) is
// read as a plain one, and written with the same compression (its backup holds its bytes
// as they were), unless a `SAVECHAIN_COMPRESS_*` flag says how to store it. Compressed
// bytes that do not decompress are a `SAVECHAIN_ERROR_COMPRESSED`, and nothing is written.
//
// A file already at `out_path` is never replaced silently: when it holds exactly what
// the upgrade writes (an earlier call's output), it is left alone and `written` is NULL;
// when it holds anything else (a save a player changed there, a file that is not a
// save), the call fails with `SAVECHAIN_ERROR_USAGE`, naming it, and it is left as it is,
// unless `SAVECHAIN_REPLACE_OUTPUT`: it is then first kept beside it as a backup
// (`backup`), then replaced.
//
// On success `*report_out` is the report (with the paths written), freed by
// `savechain_report_free`. Errors name the file. On any error the save is as it was,
// never replaced and never half-written; what may remain is a backup already made (it
// holds the save as it was read) and the folders of `out_path`. Upgrades of different
// files may run at once on different threads; two upgrades in place of one file at once
// wait for each other (an advisory lock on the save, which every savechain writer takes).
//
// # Safety
// `chain` is a live chain; `path` a NUL-terminated string; `out_path` NULL or one;
// `report_out` writable; `error_out` NULL or writable.
enum savechain_status savechain_upgrade_file(const struct savechain_chain *chain,
                                             const char *path,
                                             const char *out_path,
                                             uint64_t to,
                                             uint32_t flags,
                                             struct savechain_report **report_out,
                                             struct savechain_error **error_out);

// Frees a report. NULL is ignored.
//
// # Safety
// `report` is NULL or a report a savechain call stored, not freed before.
void savechain_report_free(struct savechain_report *report);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* SAVECHAIN_H */
