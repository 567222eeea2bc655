/* A C program as a user builds it against an installed savechain:
 *   cc -std=c11 consumer.c $(pkg-config --cflags --libs savechain)
 *   cc -std=c11 consumer.c $(pkg-config --static --cflags --libs savechain)  (static)
 * Usage: consumer FOLDER. It checks the header's version macros against the library,
 * writes a one-step Lua chain into FOLDER, upgrades a save with it and prints the result.
 * Exit 0 when all is as expected. */
#include <savechain.h>

#include <stdio.h>
#include <string.h>

#if !defined(SAVECHAIN_VERSION_NUMBER) || SAVECHAIN_VERSION_NUMBER !=                         \
    SAVECHAIN_VERSION_MAJOR * 1000000 + SAVECHAIN_VERSION_MINOR * 1000 + SAVECHAIN_VERSION_PATCH
#error "SAVECHAIN_VERSION_NUMBER is not major * 1000000 + minor * 1000 + patch"
#endif

static int failed(const char *what, enum savechain_status status, struct savechain_error *error) {
    fprintf(stderr, "%s: %s: %s\n", what, savechain_status_name(status),
            error && error->message ? error->message : "(no error)");
    savechain_error_free(error);
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: consumer FOLDER\n");
        return 2;
    }
    printf("header %s (%d), library %s, ABI %d, format revision %d\n", SAVECHAIN_VERSION,
           SAVECHAIN_VERSION_NUMBER, savechain_version(), SAVECHAIN_ABI_VERSION,
           SAVECHAIN_FORMAT_REVISION);
    if (strcmp(savechain_version(), SAVECHAIN_VERSION) != 0) {
        fprintf(stderr, "savechain_version() is %s, SAVECHAIN_VERSION %s\n", savechain_version(),
                SAVECHAIN_VERSION);
        return 1;
    }

    char step[4096];
    snprintf(step, sizeof step, "%s/0001-coins-to-gold.lua", argv[1]);
    FILE *file = fopen(step, "w");
    if (!file) {
        perror(step);
        return 1;
    }
    fputs("return function(data) data.gold = data.coins * 2; data.coins = nil end\n", file);
    fclose(file);

    struct savechain_chain *chain = NULL;
    struct savechain_error *error = NULL;
    enum savechain_status status = savechain_chain_new("1.0.0", argv[1], &chain, &error);
    if (status != SAVECHAIN_OK)
        return failed("savechain_chain_new", status, error);

    const char *save = "{\"meta\": {\"version\": 1, \"writer\": \"1.0.0\"}, \"data\": {\"coins\": 21}}";
    struct savechain_report *report = NULL;
    status = savechain_upgrade_text(chain, save, strlen(save), 0, 0, &report, &error);
    if (status != SAVECHAIN_OK) {
        savechain_chain_free(chain);
        return failed("savechain_upgrade_text", status, error);
    }
    int ok = report->from == 1 && report->to == 2 && report->step_count == 1 &&
             strstr(report->text, "\"gold\": 42") != NULL && strstr(report->text, "coins") == NULL;
    fputs(report->text, stdout);
    savechain_report_free(report);
    savechain_chain_free(chain);
    if (!ok) {
        fprintf(stderr, "the upgraded save is not the one expected\n");
        return 1;
    }
    return 0;
}
