/* nccl-tests stand-in for machines without GPUs: a real MPI program (built with mpicc at test
 * time) that runs as all_reduce_perf or alltoall_perf (by its name), does a real MPI_Allreduce /
 * MPI_Alltoall between its ranks for every size of the sweep, checks the result element by
 * element (the #wrong column), and prints nccl-tests' own output format (NVIDIA/nccl-tests
 * src/common.cu and src/util.cu: the "# Rank" lines, the table, the footer; -J writes the JSON
 * file of util.cu, JSON_FILE_VERSION 3).
 *
 * The bandwidth figures are not measured (there is no GPU or fabric here): each is the healthy
 * figure (NODEGATE_BUSBW, else 380 GB/s all-reduce, 48 per rail split, 330 all-to-all) times the
 * fault factors that apply to the ranks of the communicator, read from a fault file
 * (NODEGATE_FAULTS, else /etc/nodegate-faults), one fault per line:
 *
 *   slow_node <node> <factor>          every job with the node
 *   slow_hca <node> <rail> <factor>    jobs using that rail of the node (local rank = rail)
 *   bad_path <a> <b> <rail|*> <factor> jobs holding both nodes (on that rail)
 *   wrong <node>                       the node's ranks corrupt one element (a real mismatch)
 *   hang <node>                        the node's ranks never enter the collective (a real hang)
 *   dropout <node>                     the node's ranks exit(1) after the first size
 *
 * NODEGATE_SHIM_SECONDS: how long the sweep takes (spread over its sizes; default 0.02 s a size), so a
 * benchmark's jobs last as long as real ones.
 * A rank's node: NODEGATE_NODE, else SLURMD_NODENAME, else /etc/nodegate-node, else hostname.
 * Split: NCCL_TESTS_SPLIT="MOD k" / "AND m" (MPI_Comm_split, as common.cu). -a 3 reports the
 * slowest group (the largest time over all ranks, MPI_MAX).
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <math.h>

#define NAMELEN 64
#define NELEM 4096
#define MAXF 64

struct fault { char kind[16]; char a[NAMELEN]; char b[NAMELEN]; int rail; double factor; };
static struct fault faults[MAXF];
static int nfaults;

static void load_faults(void) {
    const char *path = getenv("NODEGATE_FAULTS");
    FILE *f = fopen(path && *path ? path : "/etc/nodegate-faults", "r");
    char line[512];
    if (!f) return;
    while (nfaults < MAXF && fgets(line, sizeof line, f)) {
        struct fault *x = &faults[nfaults];
        char r[32] = "*";
        memset(x, 0, sizeof *x);
        x->rail = -1;
        x->factor = 1.0;
        if (sscanf(line, "%15s", x->kind) != 1 || x->kind[0] == '#') continue;
        if (!strcmp(x->kind, "slow_node")) { if (sscanf(line, "%*s %63s %lf", x->a, &x->factor) != 2) continue; }
        else if (!strcmp(x->kind, "slow_hca")) { if (sscanf(line, "%*s %63s %d %lf", x->a, &x->rail, &x->factor) != 3) continue; }
        else if (!strcmp(x->kind, "bad_path")) {
            if (sscanf(line, "%*s %63s %63s %31s %lf", x->a, x->b, r, &x->factor) != 4) continue;
            x->rail = strcmp(r, "*") ? atoi(r) : -1;
        } else if (!strcmp(x->kind, "wrong") || !strcmp(x->kind, "hang") || !strcmp(x->kind, "dropout")) {
            if (sscanf(line, "%*s %63s", x->a) != 1) continue;
        } else continue;
        nfaults++;
    }
    fclose(f);
}

static void my_node(char *out) {
    const char *e = getenv("NODEGATE_NODE");
    if (!e || !*e) e = getenv("SLURMD_NODENAME");
    if (e && *e) { snprintf(out, NAMELEN, "%s", e); return; }
    FILE *f = fopen("/etc/nodegate-node", "r");
    if (f) {
        if (fgets(out, NAMELEN, f)) { out[strcspn(out, "\r\n")] = 0; fclose(f); if (*out) return; }
        else fclose(f);
    }
    gethostname(out, NAMELEN);
    out[NAMELEN - 1] = 0;
}

static int has(const char *kind, const char *node) {
    for (int i = 0; i < nfaults; i++)
        if (!strcmp(faults[i].kind, kind) && !strcmp(faults[i].a, node)) return 1;
    return 0;
}

static long long parse_size(const char *s) {
    char *end;
    double v = strtod(s, &end);
    switch (*end) { case 'K': case 'k': v *= 1024; break; case 'M': case 'm': v *= 1 << 20; break;
                    case 'G': case 'g': v *= 1 << 30; break; }
    return (long long)v;
}

int main(int argc, char **argv) {
    const char *prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    int alltoall = strstr(prog, "alltoall") != NULL;
    long long minb = 32 << 20, maxb = 32 << 20;
    int factor = 2, check = 1, average = 1, iters = 20;
    const char *json = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "0";
        if (!strcmp(a, "-b")) { minb = parse_size(v); i++; }
        else if (!strcmp(a, "-e")) { maxb = parse_size(v); i++; }
        else if (!strcmp(a, "-f")) { factor = atoi(v); i++; }
        else if (!strcmp(a, "-c")) { check = atoi(v); i++; }
        else if (!strcmp(a, "-a")) { average = atoi(v); i++; }
        else if (!strcmp(a, "-n")) { iters = atoi(v); i++; }
        else if (!strcmp(a, "-J")) { json = v; i++; }
        else if (!strcmp(a, "-g") || !strcmp(a, "-w") || !strcmp(a, "-m")) i++;
    }
    if (factor < 2) factor = 2;
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    load_faults();
    char me[NAMELEN] = {0};
    my_node(me);
    char *names = calloc((size_t)size, NAMELEN);
    MPI_Allgather(me, NAMELEN, MPI_CHAR, names, NAMELEN, MPI_CHAR, MPI_COMM_WORLD);
    /* local rank: ranks before me on my node (the GPU index, and so the rail) */
    int local = 0;
    for (int r = 0; r < rank; r++) if (!strcmp(names + (size_t)r * NAMELEN, me)) local++;
    int color = 0;
    const char *split = getenv("NCCL_TESTS_SPLIT");
    if (split && *split) {
        int k = 0;
        if (!strncasecmp(split, "MOD", 3) || split[0] == '%') { k = (int)strtol(split + (split[0] == '%' ? 1 : 3), NULL, 0); if (k > 0) color = rank % k; }
        else if (!strncasecmp(split, "AND", 3) || split[0] == '&') { k = (int)strtol(split + (split[0] == '&' ? 1 : 3), NULL, 0); color = rank & k; }
        else if (!strncasecmp(split, "DIV", 3) || split[0] == '/') { k = (int)strtol(split + (split[0] == '/' ? 1 : 3), NULL, 0); if (k > 0) color = rank / k; }
    }
    MPI_Comm comm;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &comm);
    int grank, gsize;
    MPI_Comm_rank(comm, &grank);
    MPI_Comm_size(comm, &gsize);
    /* this group's factor: the faults that apply to its ranks */
    double base = getenv("NODEGATE_BUSBW") ? atof(getenv("NODEGATE_BUSBW")) : (alltoall ? 330.0 : (split && *split ? 48.0 : 380.0));
    int *ranks_of = malloc(sizeof(int) * (size_t)gsize);
    MPI_Allgather(&rank, 1, MPI_INT, ranks_of, 1, MPI_INT, comm);
    double f = 1.0;
    for (int i = 0; i < nfaults; i++) {
        struct fault *x = &faults[i];
        int with_a = 0, with_b = 0, rail_a = 0;
        for (int g = 0; g < gsize; g++) {
            int r = ranks_of[g], lr = 0;
            const char *n = names + (size_t)r * NAMELEN;
            for (int q = 0; q < r; q++) if (!strcmp(names + (size_t)q * NAMELEN, n)) lr++;
            if (!strcmp(n, x->a)) { with_a = 1; if (x->rail < 0 || lr == x->rail) rail_a = 1; }
            if (x->b[0] && !strcmp(n, x->b)) with_b = 1;
        }
        if (!strcmp(x->kind, "slow_node") && with_a) f *= x->factor;
        if (!strcmp(x->kind, "slow_hca") && rail_a) f *= x->factor;
        if (!strcmp(x->kind, "bad_path") && with_a && with_b && rail_a) f *= x->factor;
    }
    int nnodes = 0;
    for (int r = 0; r < size; r++) {
        int seen = 0;
        for (int q = 0; q < r; q++) if (!strcmp(names + (size_t)q * NAMELEN, names + (size_t)r * NAMELEN)) { seen = 1; break; }
        if (!seen) nnodes++;
    }
    FILE *jf = NULL;
    if (rank == 0) {
        printf("# nccl-tests version 2.19.6 nccl-headers=22703 nccl-library=22703\n");
        printf("# Collective test starting: %s\n", prog);
        printf("# nThread 1 nGpus 1 minBytes %lld maxBytes %lld step: %d(factor) warmup iters: 1 iters: %d agg iters: 1 validation: %d graph: 0 unalign: 0\n",
               minb, maxb, factor, iters, check);
        printf("#\n# Using devices\n");
        if (json) {
            jf = fopen(json, "w");
            if (jf) fprintf(jf, "{\"version\": 3, \"start_time\": \"\", \"args\": [\"%s\"], \"env\": [], \"nccl_version\": 22703, "
                            "\"config\": {\"nthreads\": 1, \"ngpus\": 1, \"minimum_bytes\": %lld, \"maximum_bytes\": %lld, "
                            "\"step_factor\": %d, \"warmup_iters\": 1, \"iterations\": %d, \"aggregated_iterations\": 1, "
                            "\"validation\": %d, \"graph\": 0}, \"devices\": [", prog, minb, maxb, factor, iters, check);
        }
    }
    int *colors = malloc(sizeof(int) * (size_t)size);
    MPI_Gather(&color, 1, MPI_INT, colors, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int r = 0; r < size; r++) {
            int lr = 0;
            for (int q = 0; q < r; q++) if (!strcmp(names + (size_t)q * NAMELEN, names + (size_t)r * NAMELEN)) lr++;
            printf("#  Rank %2d Group %2d Pid %6d on %10s device %2d [0000:%02x:00] NVIDIA H100 80GB HBM3\n",
                   r, colors[r], (int)getpid() + r, names + (size_t)r * NAMELEN, lr, 0x18 + lr);
            if (jf) fprintf(jf, "%s{\"rank\": %d, \"group\": %d, \"pid\": %d, \"hostname\": \"%s\", \"device\": %d, "
                            "\"device_hex\": \"0x%02x\", \"device_info\": \"NVIDIA H100 80GB HBM3\"}",
                            r ? ", " : "", r, colors[r], (int)getpid() + r, names + (size_t)r * NAMELEN, lr, 0x18 + lr);
        }
        if (jf) fprintf(jf, "], \"results\": [");
        printf("#\n#                                                              out-of-place                       in-place          \n");
        printf("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n");
        printf("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n");
        fflush(stdout);
    }
    if (has("hang", me)) for (;;) pause();
    float *in = malloc(sizeof(float) * NELEM), *out = malloc(sizeof(float) * NELEM);
    double sumbw = 0;
    int nrows = 0;
    long long wrong_total = 0;
    int first = 1;
    for (long long sz = minb; sz <= maxb; sz *= factor) {
        long long wrong = 0;
        for (int rep = 0; rep < 2; rep++) {   /* out-of-place, in-place */
            int n = alltoall ? NELEM / gsize * gsize : NELEM;
            for (int i = 0; i < n; i++) in[i] = (float)((grank + 1) * ((i % 97) + 1));
            if (has("wrong", me)) in[rep] += 1.0f;
            if (alltoall) MPI_Alltoall(in, n / gsize, MPI_FLOAT, out, n / gsize, MPI_FLOAT, comm);
            else MPI_Allreduce(in, out, n, MPI_FLOAT, MPI_SUM, comm);
            long long w = 0;
            if (check) {
                for (int i = 0; i < n; i++) {
                    double want;
                    if (alltoall) { int src = i / (n / gsize); want = (src + 1) * (((grank * (n / gsize) + i % (n / gsize)) % 97) + 1); }
                    else want = (double)gsize * (gsize + 1) / 2.0 * ((i % 97) + 1);
                    if (fabs(out[i] - want) > 1e-3 * fabs(want)) w++;
                }
            }
            long long tw = 0;
            MPI_Allreduce(&w, &tw, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
            wrong += tw;
        }
        wrong_total += wrong;
        /* the figures: healthy busbw x fault factor; -a 3 reports the slowest group */
        double bw = base * f * (double)sz / ((double)sz + (double)(8 << 20));
        double my_t = (double)sz / (bw * 1e3) * (alltoall ? (double)(gsize - 1) / gsize : 2.0 * (gsize - 1) / gsize);
        double t = my_t;
        MPI_Allreduce(&my_t, &t, 1, MPI_DOUBLE, average == 3 ? MPI_MAX : (average == 2 ? MPI_MIN : MPI_MAX), MPI_COMM_WORLD);
        double algbw = (double)sz / (t * 1e3);
        double busbw = algbw * (alltoall ? (double)(gsize - 1) / gsize : 2.0 * (gsize - 1) / gsize);
        if (rank == 0) {
            long long cnt = sz / 4;
            char w1[16], w2[16];
            if (check) { snprintf(w1, 16, "%6g", (double)(wrong / 2)); snprintf(w2, 16, "%6g", (double)(wrong - wrong / 2)); }
            else { snprintf(w1, 16, "   N/A"); snprintf(w2, 16, "   N/A"); }
            printf("%12lld  %12lld  %8s  %6s  %6s  %7.1f  %6.2f  %6.2f  %s  %7.1f  %6.2f  %6.2f  %s\n", sz, alltoall ? cnt / gsize * gsize : cnt,
                   "float", alltoall ? "none" : "sum", "-1", t, algbw, busbw, w1, t, algbw, busbw, w2);
            fflush(stdout);
            if (jf) fprintf(jf, "%s{\"size\": %lld, \"count\": %lld, \"type\": \"float\", \"redop\": \"%s\", \"root\": \"    -1\", "
                            "\"out_of_place\": {\"time\": %.2f, \"alg_bw\": %.2f, \"bus_bw\": %.2f, \"nwrong\": %s}, "
                            "\"in_place\": {\"time\": %.2f, \"alg_bw\": %.2f, \"bus_bw\": %.2f, \"nwrong\": %s}, "
                            "\"actual_iterations\": %d, \"experiment_name\": \"%s\"}",
                            nrows ? ", " : "", sz, cnt, alltoall ? "none" : "sum", t, algbw, busbw, check ? w1 : "null",
                            t, algbw, busbw, check ? w2 : "null", iters, prog);
        }
        sumbw += busbw;
        nrows++;
        {
            const char *secs = getenv("NODEGATE_SHIM_SECONDS");
            int nsz = 0;
            for (long long q = minb; q <= maxb; q *= factor) nsz++;
            usleep(secs && *secs ? (useconds_t)(atof(secs) * 1e6 / (nsz ? nsz : 1)) : 20000);
        }
        if (first && has("dropout", me)) { fprintf(stderr, "%s: rank %d lost its peer (dropout)\n", me, rank); fflush(stderr); _exit(1); }
        first = 0;
    }
    if (rank == 0) {
        printf("# %-20s : %lld %s\n", "Out of bounds values", wrong_total, wrong_total ? "FAILED" : "OK");
        printf("# %-20s : %g \n", "Avg bus bandwidth", nrows ? sumbw / nrows : 0.0);
        printf("#\n# Collective test concluded: %s\n\n", prog);
        if (jf) {
            fprintf(jf, "], \"out_of_bounds\": {\"count\": %lld, \"okay\": %s}, \"average_bus_bandwidth\": "
                    "{\"bandwidth\": %.4f, \"okay\": \"unchecked\"}, \"end_time\": \"\"}\n",
                    wrong_total, wrong_total ? "false" : "true", nrows ? sumbw / nrows : 0.0);
            fclose(jf);
        }
    }
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return wrong_total ? 1 : 0;
}
