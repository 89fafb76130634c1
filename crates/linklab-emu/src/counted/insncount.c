/* linklab's instruction counter for QEMU 7.2 (TCG plugin API version 1), built by the
 * lwip_side_by_side bench with the host's gcc:
 *     gcc -O2 -shared -fPIC -o libinsncount.so insncount.c -lpthread
 *
 * Every translated block adds its instruction count to one 64-bit counter (an inline add,
 * no callback), so free-running QEMU slows little. The bench reads the counter on demand
 * over a Unix socket (plugin argument sock=PATH): each byte 'c' it writes is answered with
 * one line, the count so far in decimal. A mark is then exact to the instant the bench asked,
 * not interpolated between periodic samples.
 *
 * With prof=PATH the plugin also counts executions per translated block; a 'p' request then
 * writes every block seen so far to PATH.N (N = 0, 1, ... per request) as lines
 * "start_address instructions executions" before answering like 'c'. Two such files bracket a
 * transfer; their difference is where its instructions went (the bench maps the addresses
 * to the ELF's functions).
 *
 * The API's declarations are written here from QEMU 7.2's qemu-plugin.h (version 1), so no
 * QEMU development header is needed. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
typedef struct qemu_info_t qemu_info_t;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*tb_trans_cb)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*udata_cb)(qemu_plugin_id_t id, void *userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, tb_trans_cb cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op,
                                              void *ptr, uint64_t imm);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, udata_cb cb, void *userdata);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* Instructions executed so far (written by the vCPU thread's inline adds). */
static volatile uint64_t executed;

/* Per-block counters for prof=PATH: a block never moves once added (chunks are never
 * freed), so the inline add may point into it. */
struct block {
    uint64_t vaddr;
    uint64_t insns;
    uint64_t execs;
};
#define CHUNK 4096
struct chunk {
    struct block blocks[CHUNK];
    size_t used;
    struct chunk *next;
};
static struct chunk *chunks;
static pthread_mutex_t chunks_lock = PTHREAD_MUTEX_INITIALIZER;
static char *prof_path;
static unsigned prof_files;

static struct block *new_block(void)
{
    pthread_mutex_lock(&chunks_lock);
    if (!chunks || chunks->used == CHUNK) {
        struct chunk *c = calloc(1, sizeof(*c));
        if (!c) {
            pthread_mutex_unlock(&chunks_lock);
            return NULL;
        }
        c->next = chunks;
        chunks = c;
    }
    struct block *b = &chunks->blocks[chunks->used++];
    pthread_mutex_unlock(&chunks_lock);
    return b;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, (void *)&executed, n);
    if (prof_path) {
        struct block *b = new_block();
        if (b) {
            b->vaddr = qemu_plugin_tb_vaddr(tb);
            b->insns = n;
            qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->execs, 1);
        }
    }
}

static void write_profile(void)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s.%u", prof_path, prof_files++);
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    pthread_mutex_lock(&chunks_lock);
    for (struct chunk *c = chunks; c; c = c->next)
        for (size_t i = 0; i < c->used; i++)
            if (c->blocks[i].execs)
                fprintf(f, "%llx %llu %llu\n", (unsigned long long)c->blocks[i].vaddr,
                        (unsigned long long)c->blocks[i].insns,
                        (unsigned long long)c->blocks[i].execs);
    pthread_mutex_unlock(&chunks_lock);
    fclose(f);
}

static int listener = -1;

/* Answers one client at a time, one line per request byte, until QEMU exits. */
static void *serve(void *arg)
{
    (void)arg;
    for (;;) {
        int c = accept(listener, NULL, NULL);
        if (c < 0) {
            if (errno == EINTR)
                continue;
            return NULL;
        }
        char req;
        while (read(c, &req, 1) == 1) {
            if (req == 'p' && prof_path)
                write_profile();
            char line[32];
            int n = snprintf(line, sizeof(line), "%llu\n", (unsigned long long)executed);
            if (write(c, line, (size_t)n) != n)
                break;
        }
        close(c);
    }
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id,
                                                               const qemu_info_t *info,
                                                               int argc, char **argv)
{
    (void)info;
    const char *sock = NULL;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "sock=", 5) == 0)
            sock = argv[i] + 5;
        else if (strncmp(argv[i], "prof=", 5) == 0)
            prof_path = strdup(argv[i] + 5);
    }
    if (!sock) {
        fprintf(stderr, "insncount: needs sock=PATH\n");
        return -1;
    }
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    if (strlen(sock) >= sizeof(addr.sun_path)) {
        fprintf(stderr, "insncount: socket path too long\n");
        return -1;
    }
    strcpy(addr.sun_path, sock);
    unlink(sock);
    listener = socket(AF_UNIX, SOCK_STREAM, 0);
    if (listener < 0 || bind(listener, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
        listen(listener, 1) != 0) {
        fprintf(stderr, "insncount: cannot listen on %s: %s\n", sock, strerror(errno));
        return -1;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, serve, NULL) != 0)
        return -1;
    pthread_detach(t);
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    return 0;
}
