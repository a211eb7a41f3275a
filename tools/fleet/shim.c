/* nodegate fleet shim (tools/fleet/rootfs.py): answers a recorded invocation of the tool it is
 * installed as, like the #!/bin/sh shim it replaces where a C compiler exists, in one exec and
 * no child process (the shell shim cost a dash and up to two cat per call: most of a simulated
 * node's probe CPU, which the benchmark's nodes share with the controller).
 *
 * Data: /usr/lib/nodegate-fleet/<tool>/cases (<tool>: the name it was run as)  lines "<n>\t<pattern>"; a pattern ending in '*'
 * matches as a prefix of the arguments joined by spaces ("$*"), else exactly; no match: n=0.
 * Then <n>.hang (ignore TERM/INT and sleep: only KILL ends it), <n>.err to stderr, <n>.out to
 * stdout, exit status from <n>.rc. Before answering, <n>.sleep (a real tool's run time: "N" seconds, or
 * "arg": as many as the last argument says, gpu_burn's duration) sleeps without using CPU.
 * Memory of earlier runs (tools/fleet/perf.py: a node whose figures drift run after run): with
 * <n>.seq holding m, the k-th call (counted in RUNS/<tool>.<n>) answers <n>.out.<min(k, m-1)>. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <errno.h>
#include <time.h>

#ifndef DATA   /* a test compiles it against a directory of its own (-DDATA=...) */
#define DATA "/usr/lib/nodegate-fleet/"
#endif
#ifndef RUNS   /* where a shim with a sequence counts its calls (world-writable, sticky) */
#define RUNS "/var/lib/nodegate-fleet-runs/"
#endif

static void copy(const char *path, int fd) {
    char buf[65536];
    int in = open(path, O_RDONLY);
    if (in < 0) return;
    for (;;) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n <= 0) break;
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(fd, buf + off, (size_t)(n - off));
            if (w <= 0) { close(in); return; }
            off += w;
        }
    }
    close(in);
}

int main(int argc, char **argv) {
    const char *base = strrchr(argv[0], '/');
    base = base ? base + 1 : argv[0];
    /* the tool's name; a renamed shim (tests wrap "nvidia-smi" and exec "nvidia-smi.orig")
     * answers as the name before its last dot when it has no data of its own */
    char tool[256], probe[4096];
    snprintf(tool, sizeof tool, "%s", base);
    snprintf(probe, sizeof probe, DATA "%s", tool);
    if (access(probe, F_OK) != 0) {
        char *dot = strrchr(tool, '.');
        if (dot && dot != tool) *dot = 0;
    }
    size_t len = 1;
    for (int i = 1; i < argc; i++) len += strlen(argv[i]) + 1;
    char *args = calloc(len, 1);
    if (!args) return 2;
    for (int i = 1; i < argc; i++) {
        if (i > 1) strcat(args, " ");
        strcat(args, argv[i]);
    }
    char path[4096], line[8192];
    snprintf(path, sizeof path, DATA "%s/cases", tool);
    int n = 0;
    FILE *f = fopen(path, "r");
    if (f) {
        while (fgets(line, sizeof line, f)) {
            char *tab = strchr(line, '\t');
            if (!tab) continue;
            char *pat = tab + 1;
            size_t pl = strlen(pat);
            if (pl && pat[pl - 1] == '\n') pat[--pl] = 0;
            int hit = (pl && pat[pl - 1] == '*') ? strncmp(args, pat, pl - 1) == 0 : strcmp(args, pat) == 0;
            if (hit) { n = atoi(line); break; }
        }
        fclose(f);
    }
    snprintf(path, sizeof path, DATA "%s/%d.hang", tool, n);
    if (access(path, F_OK) == 0) {
        signal(SIGTERM, SIG_IGN);
        signal(SIGINT, SIG_IGN);
        for (int i = 0; i < 900; i++) sleep(1);
    }
    snprintf(path, sizeof path, DATA "%s/%d.sleep", tool, n);
    f = fopen(path, "r");
    if (f) {
        char word[64] = "";
        if (fscanf(f, "%63s", word) != 1) word[0] = 0;
        fclose(f);
        double s = strcmp(word, "arg") == 0 ? (argc > 1 ? atof(argv[argc - 1]) : 0.0) : atof(word);
        if (s > 0) {
            struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
            while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
        }
    }
    snprintf(path, sizeof path, DATA "%s/%d.err", tool, n);
    copy(path, 2);
    snprintf(path, sizeof path, DATA "%s/%d.seq", tool, n);
    f = fopen(path, "r");
    if (f) {
        int m = 0, k = 0;
        if (fscanf(f, "%d", &m) != 1) m = 0;
        fclose(f);
        char cnt[4096];
        snprintf(cnt, sizeof cnt, RUNS "%s.%d", tool, n);
        FILE *c = fopen(cnt, "r");
        if (c) {
            if (fscanf(c, "%d", &k) != 1) k = 0;
            fclose(c);
        }
        c = fopen(cnt, "w");
        if (c) {
            fprintf(c, "%d\n", k + 1);
            fclose(c);
        }
        if (m > 0) {
            snprintf(path, sizeof path, DATA "%s/%d.out.%d", tool, n, k < m - 1 ? k : m - 1);
            copy(path, 1);
        }
    } else {
        snprintf(path, sizeof path, DATA "%s/%d.out", tool, n);
        copy(path, 1);
    }
    int rc = 0;
    snprintf(path, sizeof path, DATA "%s/%d.rc", tool, n);
    f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%d", &rc) != 1) rc = 0;
        fclose(f);
    }
    return rc;
}
