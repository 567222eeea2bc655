/*
 * upgrade_saves: what a C engine does with savechain, as a command.
 *
 *   upgrade_saves --steps DIR --writer VERSION [--game NAME] [--mods DIR]
 *                 [--limits INSTRUCTIONS,BYTES,SECONDS] [--keep-going]
 *                 [--out DIR] [--threads N] SAVE...
 *
 * Builds the chain of the Lua steps in --steps (and the mods in --mods), then for each
 * save, on N threads sharing the one chain (2 by default; 0: on the main thread):
 *   - reads its version and meta alone, from the text (savechain_read_meta) and from
 *     the head of the file (savechain_read_head), and checks they agree;
 *   - upgrades its text in memory (savechain_upgrade_text) and prints the report: the
 *     versions, each step that ran and what it printed, each mod;
 *   - checks that the upgraded text is canonical, and that its decimal view reads back
 *     as the same text (savechain_format);
 *   - with --out, upgrades the file into DIR (savechain_upgrade_file, named after the
 *     save's path with '/' as '_') and checks it holds the text upgraded in memory,
 *     stored as the save was (plain, zstd or gzip); without --out, upgrades the file in
 *     place, keeping a backup.
 * A save may be compressed (zstd or gzip): every call takes its bytes as they are.
 * A save that fails prints its error, field by field, and fails alone.
 *
 * Exit status: 0 every save upgraded, 1 some save failed, 2 a usage error, a chain that
 * does not load, or a check that failed.
 *
 * Build (README.md, "From C and C++"):
 *   ./install.sh --prefix "$PWD/target/prefix"
 *   export PKG_CONFIG_PATH="$PWD/target/prefix/lib/pkgconfig"
 *   cc -Wall -O2 c-abi/examples/upgrade_saves.c $(pkg-config --cflags --libs savechain) \
 *      -Wl,-rpath,"$PWD/target/prefix/lib" -lpthread -o target/upgrade_saves
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "savechain.h"

enum { EXIT_ALL_UPGRADED = 0, EXIT_SOME_FAILED = 1, EXIT_TROUBLE = 2 };

struct job {
    const savechain_chain *chain;
    uint32_t flags;
    const char *out_dir;
    char **saves;
    size_t count;
    /* Each save's lines, printed in order once every thread is done. */
    char **printed;
    size_t *printed_len;
    int *outcome;
    size_t next;
    pthread_mutex_t lock;
};

static void print_error(FILE *out, const char *what, const savechain_error *e) {
    if (!e) {
        /* Only when savechain ran out of memory making the error. */
        fprintf(out, "  %s failed, without details\n", what);
        return;
    }
    fprintf(out, "  %s failed [%s]: %s\n", what, savechain_status_name(e->kind), e->text);
    fprintf(out, "    file=%s line=%" PRIu64 " column=%" PRIu64 " path=%s mod=%s step=%s:%" PRIu64 " lua=%d\n",
            e->file ? e->file : "(none)", e->line, e->column, e->path,
            e->failed_mod ? e->failed_mod : "(none)", e->failed_step ? e->failed_step : "(none)",
            e->step_line, (int)e->lua_failure);
    /* What the steps printed before it failed: a step's print is most wanted then. */
    for (size_t i = 0; i < e->printed_count; i++) fprintf(out, "    | %s\n", e->printed[i]);
}

/* The whole file at `path`, NUL-terminated, its length in *len; NULL and errno if not. */
static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        char *bigger = realloc(buf, 2 * cap + 1);
        if (!bigger) { free(buf); buf = NULL; break; }
        buf = bigger;
        cap *= 2;
    }
    int failed = ferror(f);
    fclose(f);
    if (buf && failed) {
        free(buf);
        errno = EIO;
        return NULL;
    }
    if (buf) buf[n] = '\0';
    *len = n;
    return buf;
}

static int same_text(const char *a, size_t a_len, const char *b, size_t b_len) {
    return a_len == b_len && memcmp(a, b, a_len) == 0;
}

/* `text` reformatted in `style`, or NULL (with the error printed). */
static char *format(FILE *out, const char *text, size_t len, uint32_t style, size_t *out_len) {
    char *formatted = NULL;
    savechain_error *e = NULL;
    if (savechain_format(text, len, style, &formatted, out_len, &e) != SAVECHAIN_OK) {
        print_error(out, "format", e);
        savechain_error_free(e);
        return NULL;
    }
    return formatted;
}

/* The checks of an upgraded text: canonical, and its decimal view reads back as itself. */
static int check_text(FILE *out, const char *text, size_t len) {
    size_t pretty_len = 0, decimal_len = 0, back_len = 0;
    char *pretty = format(out, text, len, SAVECHAIN_PRETTY, &pretty_len);
    char *decimal = format(out, text, len, SAVECHAIN_DECIMAL, &decimal_len);
    char *back = decimal ? format(out, decimal, decimal_len, SAVECHAIN_PRETTY, &back_len) : NULL;
    int ok = pretty && back && same_text(pretty, pretty_len, text, len) &&
             same_text(back, back_len, text, len);
    if (!ok) fprintf(out, "  CHECK FAILED: the upgraded text is not canonical, or its decimal view differs\n");
    savechain_text_free(pretty);
    savechain_text_free(decimal);
    savechain_text_free(back);
    return ok;
}

static void print_report(FILE *out, const savechain_report *r) {
    fprintf(out, "  v%" PRIu64 " -> v%" PRIu64 ", %s, %zu steps\n", r->from, r->to,
            r->changed ? "changed" : "unchanged", r->step_count);
    for (size_t i = 0; i < r->step_count; i++) {
        const savechain_step *s = &r->steps[i];
        fprintf(out, "  step %s (%s, v%" PRIu64 " -> v%" PRIu64 ")%s%s\n", s->name, s->kind,
                s->from, s->to, s->mod_name ? " of mod " : "", s->mod_name ? s->mod_name : "");
        for (size_t j = 0; j < s->printed_count; j++) fprintf(out, "    | %s\n", s->printed[j]);
    }
    for (size_t i = 0; i < r->mod_count; i++) {
        const savechain_mod *m = &r->mods[i];
        fprintf(out, "  mod %s: %s", m->name, m->status);
        if (m->has_from) fprintf(out, " from v%" PRIu64, m->from);
        if (m->has_to) fprintf(out, " to v%" PRIu64, m->to);
        if (m->held_because) fprintf(out, " (%s)", m->held_because);
        fputc('\n', out);
        for (size_t j = 0; j < m->printed_count; j++) fprintf(out, "    | %s\n", m->printed[j]);
    }
}

/* Upgrades one save; returns 0 (upgraded), 1 (the save failed) or 2 (a check failed). */
static int upgrade_one(const struct job *job, const char *path, FILE *out) {
    fprintf(out, "%s\n", path);
    size_t len = 0;
    char *text = read_file(path, &len);
    if (!text) {
        char why[256] = "unknown error";
        strerror_r(errno, why, sizeof why); /* strerror is not for threads */
        fprintf(out, "  read failed: %s\n", why);
        return 1;
    }
    int result = 0;
    savechain_error *e = NULL;
    savechain_report *report = NULL;

    uint64_t version = 0;
    char *meta = NULL;
    size_t meta_len = 0;
    if (savechain_read_meta(text, len, &version, &meta, &meta_len, &e) == SAVECHAIN_OK) {
        fprintf(out, "  version %" PRIu64 ", meta %s\n", version, meta);
    } else {
        print_error(out, "read_meta", e);
        savechain_error_free(e);
        e = NULL;
    }
    /* The same from the head of the file: a game's load menu reads no more. */
    savechain_head head;
    char *head_meta = NULL;
    size_t head_meta_len = 0;
    if (savechain_read_head(path, &head, &head_meta, &head_meta_len, &e) == SAVECHAIN_OK) {
        /* The head alone may read where the whole text does not (damaged data after it). */
        if (meta && (head.version != version || !same_text(head_meta, head_meta_len, meta, meta_len))) {
            fprintf(out, "  CHECK FAILED: the head of the file says another meta than its text\n");
            result = 2;
        }
    } else if (meta) {
        print_error(out, "read_head", e);
        result = 2;
    }
    savechain_error_free(e);
    e = NULL;
    uint32_t codec = head_meta ? head.codec : SAVECHAIN_CODEC_NONE;
    savechain_text_free(head_meta);
    savechain_text_free(meta);

    if (job->out_dir == NULL) {
        /* In place: the original kept as <name>.v<N>.bak before it is replaced. */
        if (savechain_upgrade_file(job->chain, path, NULL, 0, job->flags, &report, &e) != SAVECHAIN_OK) {
            print_error(out, "upgrade", e);
            result = 1;
        } else {
            print_report(out, report);
            fprintf(out, "  written %s, backup %s\n", report->written ? report->written : "(none)",
                    report->backup ? report->backup : "(none)");
        }
        goto done;
    }

    if (savechain_upgrade_text(job->chain, text, len, 0, job->flags, &report, &e) != SAVECHAIN_OK) {
        print_error(out, "upgrade", e);
        result = 1;
        goto done;
    }
    print_report(out, report);
    /* Canonical text, also for a save already current (its content unchanged). */
    if (!check_text(out, report->text, report->text_len)) result = 2;
    /* The file upgraded into the output folder holds that text; a save already current
       is copied there byte for byte, as the game left it. */
    const char *upgraded = report->changed ? report->text : text;
    size_t upgraded_len = report->changed ? report->text_len : len;

    /* The same upgrade through the file: into the output folder, atomically. */
    char target[4096];
    int n = snprintf(target, sizeof target, "%s/", job->out_dir);
    if (n < 0 || (size_t)n + strlen(path) >= sizeof target) {
        fprintf(out, "  the output path is too long\n");
        result = 2;
        goto done;
    }
    for (const char *p = path; *p; p++) target[n++] = *p == '/' ? '_' : *p;
    target[n] = '\0';
    savechain_report *file_report = NULL;
    if (savechain_upgrade_file(job->chain, path, target, 0, job->flags, &file_report, &e) != SAVECHAIN_OK) {
        print_error(out, "upgrade_file", e);
        result = 2;
    } else {
        size_t written_len = 0, plain_len = 0;
        char *written = read_file(target, &written_len);
        /* A compressed output holds the text compressed: its pretty form is the text. */
        char *plain = written && report->changed && codec != SAVECHAIN_CODEC_NONE
                          ? format(out, written, written_len, SAVECHAIN_PRETTY, &plain_len)
                          : NULL;
        int same = plain ? same_text(plain, plain_len, upgraded, upgraded_len)
                         : written && same_text(written, written_len, upgraded, upgraded_len);
        savechain_head written_head;
        if (!same || savechain_read_head(target, &written_head, NULL, NULL, NULL) != SAVECHAIN_OK ||
            written_head.codec != codec) {
            fprintf(out, "  CHECK FAILED: %s differs from the text upgraded in memory\n", target);
            result = 2;
        }
        savechain_text_free(plain);
        free(written);
    }
    savechain_report_free(file_report);

done:
    savechain_error_free(e);
    savechain_report_free(report);
    free(text);
    return result;
}

static void *worker(void *arg) {
    struct job *job = arg;
    for (;;) {
        pthread_mutex_lock(&job->lock);
        size_t i = job->next++;
        pthread_mutex_unlock(&job->lock);
        if (i >= job->count) return NULL;
        FILE *out = open_memstream(&job->printed[i], &job->printed_len[i]);
        if (!out) {
            job->outcome[i] = 2;
            continue;
        }
        job->outcome[i] = upgrade_one(job, job->saves[i], out);
        fclose(out);
    }
}

static int usage(const char *why) {
    fprintf(stderr, "upgrade_saves: %s\n"
            "usage: upgrade_saves --steps DIR --writer VERSION [--game NAME] [--mods DIR]\n"
            "                     [--limits INSTRUCTIONS,BYTES,SECONDS] [--keep-going]\n"
            "                     [--out DIR] [--threads N] SAVE...\n", why);
    return EXIT_TROUBLE;
}

/* Reports a failed chain call; returns nonzero when it failed. */
static int chain_failed(savechain_status status, savechain_error *e) {
    if (status == SAVECHAIN_OK) return 0;
    print_error(stderr, "the chain", e);
    savechain_error_free(e);
    return 1;
}

int main(int argc, char **argv) {
    const char *steps = NULL, *writer = NULL, *game = NULL, *mods = NULL, *limits = NULL;
    struct job job = {0};
    long threads = 2;
    int first_save = argc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if (!strcmp(a, "--keep-going")) job.flags |= SAVECHAIN_KEEP_GOING;
        else if (!strcmp(a, "--steps") && has_value) steps = argv[++i];
        else if (!strcmp(a, "--writer") && has_value) writer = argv[++i];
        else if (!strcmp(a, "--game") && has_value) game = argv[++i];
        else if (!strcmp(a, "--mods") && has_value) mods = argv[++i];
        else if (!strcmp(a, "--limits") && has_value) limits = argv[++i];
        else if (!strcmp(a, "--out") && has_value) job.out_dir = argv[++i];
        else if (!strcmp(a, "--threads") && has_value) threads = strtol(argv[++i], NULL, 10);
        else if (a[0] == '-' && a[1] == '-') return usage("unknown option, or one without its value");
        else { first_save = i; break; }
    }
    if (!steps || !writer) return usage("--steps and --writer are required");
    if (first_save >= argc) return usage("no save given");
    if (threads < 0 || threads > 64) return usage("--threads is 0 (the main thread) to 64");

    savechain_chain *chain = NULL;
    savechain_error *e = NULL;
    /* Each status is taken before `e` is read: the order of a call's arguments is unspecified. */
    savechain_status made = savechain_chain_new(writer, steps, &chain, &e);
    if (chain_failed(made, e)) return EXIT_TROUBLE;
    int trouble = 0;
    if (game) {
        savechain_status set = savechain_chain_set_game(chain, game, &e);
        trouble = chain_failed(set, e);
    }
    if (!trouble && mods) {
        savechain_status added = savechain_chain_add_mods(chain, mods, &e);
        trouble = chain_failed(added, e);
    }
    if (!trouble && limits) {
        unsigned long long instructions = 0, bytes = 0;
        double seconds = 0;
        if (sscanf(limits, "%llu,%llu,%lf", &instructions, &bytes, &seconds) != 3) {
            savechain_chain_free(chain);
            return usage("--limits is INSTRUCTIONS,BYTES,SECONDS (0 keeps one)");
        }
        savechain_status set = savechain_chain_set_limits(chain, instructions, bytes, seconds, &e);
        trouble = chain_failed(set, e);
    }
    if (trouble) {
        savechain_chain_free(chain);
        return EXIT_TROUBLE;
    }
    fprintf(stderr, "savechain %s: chain from v%" PRIu64 " to v%" PRIu64 "\n", savechain_version(),
            savechain_chain_oldest(chain), savechain_chain_latest(chain));

    job.chain = chain;
    job.saves = argv + first_save;
    job.count = (size_t)(argc - first_save);
    job.printed = calloc(job.count, sizeof *job.printed);
    job.printed_len = calloc(job.count, sizeof *job.printed_len);
    job.outcome = calloc(job.count, sizeof *job.outcome);
    pthread_t *ids = calloc((size_t)threads + 1, sizeof *ids);
    if (!job.printed || !job.printed_len || !job.outcome || !ids) return EXIT_TROUBLE;
    pthread_mutex_init(&job.lock, NULL);
    long started = 0;
    while (started < threads && pthread_create(&ids[started], NULL, worker, &job) == 0) started++;
    /* --threads 0, or no thread could start: the main thread does the work. */
    if (started == 0) worker(&job);
    for (long t = 0; t < started; t++) pthread_join(ids[t], NULL);
    pthread_mutex_destroy(&job.lock);

    int status = EXIT_ALL_UPGRADED;
    size_t failed = 0;
    for (size_t i = 0; i < job.count; i++) {
        if (job.printed[i]) fputs(job.printed[i], stdout);
        free(job.printed[i]);
        if (job.outcome[i] == 1) failed++;
        if (job.outcome[i] > status) status = job.outcome[i];
    }
    printf("%zu saves, %zu failed\n", job.count, failed);
    free(job.printed);
    free(job.printed_len);
    free(job.outcome);
    free(ids);
    savechain_chain_free(chain);
    return status;
}
