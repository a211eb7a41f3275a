/* perftest stand-in for machines without HCAs: runs as ib_write_bw or ib_write_lat (by its
 * name), server without an address argument, client with one. Server and client really connect
 * over TCP (perftest's own out-of-band exchange, port -p) and exchange data; the output is
 * perftest's format (linux-rdma/perftest src/perftest_parameters.h RESULT_LINE, RESULT_FMT_G,
 * REPORT_FMT, RESULT_FMT_LAT, REPORT_FMT_LAT).
 *
 * The figures are not measured: healthy ib_write_bw 392 Gb/s (NODEGATE_IB_BW) and ib_write_lat
 * p99 2.1 us, times the fault factors of /etc/nodegate-faults (NODEGATE_FAULTS) that apply:
 * slow_hca <node> <rail> <factor> (rail = the number in the device name, mlx5_<rail>) and
 * bad_path <a> <b> <rail|*> <factor>, for the two ends' nodes (sent over the connection). Nothing
 * in the output depends on the machine's load or the time the exchange took.
 *
 * The server listens on its node's own address (the server address of SSH_CONNECTION, which
 * sshd sets for the session: "client_ip client_port server_ip server_port"), not on every
 * address: the simulated nodes of all fleets on this host share one network namespace, and a
 * listener on INADDR_ANY would take the connections of another fleet's client on the same port
 * (two test runs at once: a healthy HCA paired with a stranger and blamed). Without
 * SSH_CONNECTION (a real node of its own) it listens on every address, as perftest does.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define NAMELEN 64

static void my_node(char *out) {
    const char *e = getenv("NODEGATE_NODE");
    if (e && *e) { snprintf(out, NAMELEN, "%s", e); return; }
    FILE *f = fopen("/etc/nodegate-node", "r");
    if (f) {
        if (fgets(out, NAMELEN, f)) { out[strcspn(out, "\r\n")] = 0; fclose(f); if (*out) return; }
        else fclose(f);
    }
    gethostname(out, NAMELEN);
    out[NAMELEN - 1] = 0;
}

static int rail_of(const char *dev) {
    const char *u = strrchr(dev, '_');
    return u ? atoi(u + 1) : 0;
}

/* the product of the factors that apply to a pair (node a, rail ra) <-> (node b, rail rb) */
static double factor(const char *a, int ra, const char *b, int rb) {
    const char *path = getenv("NODEGATE_FAULTS");
    FILE *f = fopen(path && *path ? path : "/etc/nodegate-faults", "r");
    char line[512], kind[16], x[NAMELEN], y[NAMELEN], r[32];
    double v, out = 1.0;
    int rail;
    if (!f) return 1.0;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "%15s", kind) != 1) continue;
        if (!strcmp(kind, "slow_hca") && sscanf(line, "%*s %63s %d %lf", x, &rail, &v) == 3) {
            if ((!strcmp(x, a) && rail == ra) || (!strcmp(x, b) && rail == rb)) out *= v;
        } else if (!strcmp(kind, "bad_path") && sscanf(line, "%*s %63s %63s %31s %lf", x, y, r, &v) == 4) {
            int want = strcmp(r, "*") ? atoi(r) : -1;
            if (((!strcmp(x, a) && !strcmp(y, b)) || (!strcmp(x, b) && !strcmp(y, a))) && (want < 0 || want == ra))
                out *= v;
        }
    }
    fclose(f);
    return out;
}

static int xfer(int fd, char *sbuf, char *rbuf, size_t n, int send_first) {
    for (int i = 0; i < 2; i++) {
        int sending = (i == 0) == send_first;
        char *buf = sending ? sbuf : rbuf;
        size_t done = 0;
        while (done < n) {
            ssize_t k = sending ? send(fd, buf + done, n - done, 0) : recv(fd, buf + done, n - done, MSG_WAITALL);
            if (k <= 0) return -1;
            done += (size_t)k;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    int lat = strstr(prog, "lat") != NULL;
    const char *dev = "mlx5_0", *server = NULL;
    int port = 18515, iters = 1000, cuda = -1;
    long size = lat ? 2 : 65536;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(a, "-d") || !strcmp(a, "--ib-dev")) { dev = v; i++; }
        else if (!strcmp(a, "-p") || !strcmp(a, "--port")) { port = atoi(v); i++; }
        else if (!strcmp(a, "-s") || !strcmp(a, "--size")) { size = atol(v); i++; }
        else if (!strcmp(a, "-n") || !strcmp(a, "--iters")) { iters = atoi(v); i++; }
        else if (!strncmp(a, "--use_cuda=", 11)) cuda = atoi(a + 11);
        else if (a[0] != '-') server = a;
    }
    char me[NAMELEN] = {0}, peer[NAMELEN] = {0}, msg[2 * NAMELEN];
    my_node(me);
    printf("---------------------------------------------------------------------------------------\n");
    printf("                    RDMA_Write %s Test\n", lat ? "Latency" : "BW");
    printf(" Dual-port       : OFF\t\tDevice         : %s\n", dev);
    printf(" Number of qps   : 1\t\tTransport type : IB\n Connection type : RC\t\tUsing SRQ      : OFF\n");
    if (cuda >= 0) printf("initializing CUDA\nCUDA device %d: allocating GPU memory (using cuda)\n", cuda);
    printf(" Mtu             : 4096[B]\n Link type       : IB\n Data ex. method : Ethernet\n");
    printf("---------------------------------------------------------------------------------------\n");
    int fd;
    if (!server) {
        int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
        struct sockaddr_in sa = {0};
        setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sa.sin_family = AF_INET;
        sa.sin_port = htons((unsigned short)port);
        sa.sin_addr.s_addr = htonl(INADDR_ANY);
        const char *sc = getenv("SSH_CONNECTION");
        char ip[64];
        struct in_addr own;
        if (sc && sscanf(sc, "%*s %*s %63s", ip) == 1 && inet_pton(AF_INET, ip, &own) == 1) sa.sin_addr = own;
        if (bind(ls, (struct sockaddr *)&sa, sizeof sa) || listen(ls, 1)) {
            fprintf(stderr, " Couldn't listen to %s port %d\n", inet_ntoa(sa.sin_addr), port);
            return 1;
        }
        printf("\n************************************\n* Waiting for client to connect... *\n************************************\n");
        fflush(stdout);
        fd = accept(ls, NULL, NULL);
        close(ls);
    } else {
        struct addrinfo hints = {0}, *res;
        char ps[16];
        hints.ai_family = AF_INET;
        hints.ai_socktype = SOCK_STREAM;
        snprintf(ps, sizeof ps, "%d", port);
        fd = -1;
        for (int tries = 0; tries < 50 && fd < 0; tries++) {
            if (getaddrinfo(server, ps, &hints, &res) == 0) {
                fd = socket(AF_INET, SOCK_STREAM, 0);
                if (connect(fd, res->ai_addr, res->ai_addrlen)) { close(fd); fd = -1; usleep(100000); }
                freeaddrinfo(res);
            }
        }
        if (fd < 0) { fprintf(stderr, "Couldn't connect to %s:%d\n", server, port); return 1; }
    }
    if (fd < 0) return 1;
    /* the exchange: names and rails, then the data */
    snprintf(msg, sizeof msg, "%s %d", me, rail_of(dev));
    char in[2 * NAMELEN] = {0};
    if (xfer(fd, msg, in, sizeof msg, server != NULL) || sscanf(in, "%63s", peer) != 1) { fprintf(stderr, "exchange failed\n"); return 1; }
    size_t n = 1 << 20;
    char *buf = calloc(n, 1), *rbuf = calloc(n, 1);
    for (int i = 0; i < 4; i++)
        if (xfer(fd, buf, rbuf, n, server != NULL)) { fprintf(stderr, "data exchange failed\n"); return 1; }
    close(fd);
    /* the peer's rail is the same HCA index on a rail-aligned pair */
    double f = factor(me, rail_of(dev), peer, rail_of(dev));
    printf(" local address: LID 0x0001 QPN 0x0100 PSN 0x000000\n remote address: LID 0x0002 QPN 0x0100 PSN 0x000000\n");
    printf("---------------------------------------------------------------------------------------\n");
    if (lat) {
        double p99 = 2.1 / (f > 0 ? f : 1e-3), typ = 1.9 / (f > 0 ? f : 1e-3);
        printf(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99%% percentile[usec]   99.9%% percentile[usec] \n");
        printf(" %-7ld %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n",
               size, iters, typ * 0.95, p99 * 2.0, typ, typ * 1.02, 0.05, p99, p99 * 1.5);
    } else {
        double bw = (getenv("NODEGATE_IB_BW") ? atof(getenv("NODEGATE_IB_BW")) : 392.0) * f;
        printf(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n");
        printf(" %-7ld    %d           %-7.2f            %-7.2f\t\t   %-7.6f\n", size, iters, bw * 1.001, bw,
               bw * 1e9 / 8.0 / (double)size / 1e6);
    }
    printf("---------------------------------------------------------------------------------------\n");
    return 0;
}
