/* STREAM's copy and triad kernels for phase.bandwidth (loaded by phase/bandwidth/stream_kernel.py).

   numpy's triad needs a temporary for q * c, which memory sees as extra streams; here each
   kernel is one loop, so memory sees exactly the words STREAM counts. Threads work on
   contiguous slices as phase.bandwidth's numpy kernels do (slice i: [n*i/T, n*(i+1)/T)),
   created once per call and released pass by pass through a barrier, so a timed pass holds
   no thread creation. Thread 0 is the caller and takes the time stamps.

   Build: cc -O2 -ftree-vectorize -pthread -shared -fPIC stream_kernel.c -o libphase_stream.so */

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <time.h>

enum { KERNEL_COPY = 0, KERNEL_TRIAD = 1 };

struct shared {
    int kernel;
    double *a, *b, *c;
    size_t n;
    int threads;
    int passes; /* untimed first pass + timed ones */
    double scalar;
    pthread_barrier_t barrier;
    /* The start gate: 0 wait, 1 go, -1 give up (a thread could not be created). */
    pthread_mutex_t lock;
    pthread_cond_t opened;
    int gate;
};

struct worker {
    struct shared *s;
    int index;
    double *times; /* thread 0 only */
};

static void copy(double *restrict dst, const double *restrict src, size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; i++) dst[i] = src[i];
}

static void triad(double *restrict a, const double *restrict b, const double *restrict c,
                  double q, size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; i++) a[i] = b[i] + q * c[i];
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *work(void *arg) {
    struct worker *w = arg;
    struct shared *s = w->s;
    size_t lo = s->n * (size_t)w->index / (size_t)s->threads;
    size_t hi = s->n * (size_t)(w->index + 1) / (size_t)s->threads;
    pthread_mutex_lock(&s->lock);
    while (s->gate == 0) pthread_cond_wait(&s->opened, &s->lock);
    int go = s->gate == 1;
    pthread_mutex_unlock(&s->lock);
    if (!go) return NULL;
    for (int p = 0; p < s->passes; p++) {
        pthread_barrier_wait(&s->barrier);
        double t0 = now();
        if (s->kernel == KERNEL_COPY) copy(s->c, s->a, lo, hi);
        else triad(s->a, s->b, s->c, s->scalar, lo, hi);
        pthread_barrier_wait(&s->barrier); /* the pass ends when the slowest slice does */
        if (w->times != NULL && p > 0) w->times[p - 1] = now() - t0;
    }
    return NULL;
}

/* copy: c = a (b unused); triad: a = b + scalar * c. times: `repeats` seconds per timed
   pass, after one untimed pass. Returns 0, or -1 when a thread could not be started. */
int phase_stream(int kernel, double *a, double *b, double *c, size_t n, int threads,
                 int repeats, double scalar, double *times) {
    if (threads < 1 || repeats < 1 || (kernel != KERNEL_COPY && kernel != KERNEL_TRIAD))
        return -1;
    struct shared s = {.kernel = kernel, .a = a, .b = b, .c = c, .n = n, .threads = threads,
                       .passes = repeats + 1, .scalar = scalar, .gate = 0};
    if (pthread_barrier_init(&s.barrier, NULL, (unsigned)threads) != 0) return -1;
    pthread_mutex_init(&s.lock, NULL);
    pthread_cond_init(&s.opened, NULL);
    pthread_t *ids = calloc((size_t)threads, sizeof *ids);
    struct worker *ws = calloc((size_t)threads, sizeof *ws);
    int rc = (ids == NULL || ws == NULL) ? -1 : 0;
    int started = 1; /* thread 0 is this one */
    for (int i = 0; rc == 0 && i < threads; i++) ws[i] = (struct worker){&s, i, i ? NULL : times};
    for (; rc == 0 && started < threads; started++)
        if (pthread_create(&ids[started], NULL, work, &ws[started]) != 0) rc = -1;
    if (rc != 0 && started > 1) started--; /* the failed one was not started */
    /* Every thread is created before any pass starts, or none runs one: a missing thread
       would leave the others at a barrier that never fills. */
    pthread_mutex_lock(&s.lock);
    s.gate = rc == 0 ? 1 : -1;
    pthread_cond_broadcast(&s.opened);
    pthread_mutex_unlock(&s.lock);
    if (rc == 0) work(&ws[0]);
    for (int i = 1; i < started; i++) pthread_join(ids[i], NULL);
    pthread_barrier_destroy(&s.barrier);
    pthread_cond_destroy(&s.opened);
    pthread_mutex_destroy(&s.lock);
    free(ids);
    free(ws);
    return rc;
}
